//! The embedded log as the dataflow's input: each worker reads the log and keeps the events of
//! the users hashed to it, so a user's events are handled, in order, by one worker.
//!
//! Corrections are embedded here, on their way in: clustering compares them by embedding, and
//! the dataflow itself does no I/O and runs no model. They are few next to messages, so one
//! batched call per read chunk costs little.

use super::user_offsets::UserOffsets;
use engram_connectors::{Embedder, EventLog};
use engram_dataflows::input::CorrectionConfidence;
use engram_dataflows::{clustered_text, InputRecord, InputSource};
use engram_schemas::{Body, ControlAction, ControlScope, Event, Redacted};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Records read per poll: bounds memory and keeps the views publishing while catching up.
const READ_CHUNK: usize = 512;

/// Input the pipeline could not use, counted (and logged) for `/v1/status` and `/metrics`.
#[derive(Debug, Default)]
pub struct PipelineFailures {
    /// Corrections whose embedding failed: they are not clustered.
    pub corrections_not_embedded: AtomicU64,
    /// Records of the event log that could not be read: they are skipped.
    pub unreadable_records: AtomicU64,
}

pub struct LogSource {
    log: Arc<EventLog>,
    /// Embeds corrections; without one, corrections are not clustered.
    embedder: Option<Arc<Embedder>>,
    cursor: u64,
    worker: usize,
    peers: usize,
    /// The correction records sent, per `(tenant, user)`: an erase retracts them exactly as
    /// they were sent (embedding the text again need not give the same bits).
    sent_corrections: HashMap<(String, String), Vec<(u64, InputRecord)>>,
    /// Offset of the last erase applied, per `(tenant, user)` and per `(tenant, "")` for a
    /// whole tenant: what was before it has been retracted already.
    erased_at: HashMap<(String, String), u64>,
    /// The scopes restricted by the control events read so far: `(tenant, user)`, or
    /// `(tenant, "")` for a whole tenant. Their users' records are out of the dataflow.
    restricted: HashSet<(String, String)>,
    /// Log offsets of the events forgotten (`forget` control events) on this worker: retracted
    /// once, never sent again (a restriction lifted later re-sends the user's other records).
    forgotten: HashSet<u64>,
    failures: Arc<PipelineFailures>,
    /// Where each user's events are: control events re-read only those (without it, the
    /// whole log below them).
    user_offsets: Option<Arc<UserOffsets>>,
    /// How corrections' raw signals fuse into their confidence, and the floor below which
    /// one is held for clarification (`fusion.*`).
    fusion: CorrectionConfidence,
}

impl LogSource {
    pub fn new(
        log: Arc<EventLog>,
        embedder: Option<Arc<Embedder>>,
        worker: usize,
        peers: usize,
    ) -> Self {
        LogSource {
            log,
            embedder,
            cursor: 0,
            worker,
            peers,
            sent_corrections: HashMap::new(),
            erased_at: HashMap::new(),
            restricted: HashSet::new(),
            forgotten: HashSet::new(),
            failures: Arc::default(),
            user_offsets: None,
            fusion: CorrectionConfidence::default(),
        }
    }

    /// Fuses corrections' raw signals, and holds unsure ones, as `fusion` says (the defaults
    /// otherwise).
    pub fn with_fusion(mut self, fusion: CorrectionConfidence) -> Self {
        self.fusion = fusion;
        self
    }

    /// Counts what this source cannot use in `failures` (shared by the workers' sources).
    pub fn with_failures(mut self, failures: Arc<PipelineFailures>) -> Self {
        self.failures = failures;
        self
    }

    /// Re-reads, for control events, only the records `index` names (see [`UserOffsets`]).
    pub fn with_user_offsets(mut self, index: Arc<UserOffsets>) -> Self {
        self.user_offsets = Some(index);
        self
    }
}

/// The worker that owns a `tenant/user` key.
pub fn worker_for(key: &str, peers: usize) -> usize {
    crc32fast::hash(key.as_bytes()) as usize % peers.max(1)
}

impl LogSource {
    /// The records of `corrections`, embedded in one call. Without an embedder, or when it
    /// fails (logged), none: a correction that cannot be embedded cannot be clustered.
    fn embedded_corrections(&self, corrections: &[(u64, Event)]) -> Vec<(u64, InputRecord)> {
        let (Some(embedder), false) = (&self.embedder, corrections.is_empty()) else {
            return Vec::new();
        };
        let texts: Vec<(&str, &str)> = corrections
            .iter()
            .map(|(_, event)| {
                let text = clustered_text(event).unwrap_or_default();
                (event.header.tenant.as_str(), text)
            })
            .collect();
        match embedder.embed_each(&texts) {
            Ok(vectors) => corrections
                .iter()
                .zip(vectors)
                .filter_map(|((offset, event), vector)| {
                    InputRecord::correction_with(event, &vector, &self.fusion).map(|r| (*offset, r))
                })
                .collect(),
            Err(err) => {
                tracing::error!(%err, count = corrections.len(), "embedding corrections failed; they are not clustered");
                self.failures
                    .corrections_not_embedded
                    .fetch_add(corrections.len() as u64, Ordering::Relaxed);
                Vec::new()
            }
        }
    }
}

impl LogSource {
    /// Embeds the corrections gathered so far and adds their records to `records`, keeping a
    /// copy for a later erase.
    fn flush_corrections(
        &mut self,
        corrections: &mut Vec<(u64, Event)>,
        records: &mut Vec<(u64, InputRecord, isize)>,
    ) {
        for (offset, record) in self.embedded_corrections(corrections) {
            if let InputRecord::Correction((tenant, user), _) = &record {
                self.sent_corrections
                    .entry((tenant.clone(), user.clone()))
                    .or_default()
                    .push((offset, record.clone()));
            }
            records.push((offset, record, 1));
        }
        corrections.clear();
    }

    /// Whether `(tenant, user)` is withdrawn from the views: its user or its whole tenant is
    /// restricted by the control events read so far.
    fn withdrawn(&self, tenant: &str, user: &str) -> bool {
        withdrawn(&self.restricted, tenant, user)
    }

    /// The offset of the last erase that covered `(tenant, user)`: what was before it has been
    /// retracted already.
    fn erased_since(&self, tenant: &str, user: &str) -> Option<u64> {
        let a = self.erased_at.get(&(tenant.to_string(), user.to_string()));
        let b = self.erased_at.get(&(tenant.to_string(), String::new()));
        a.max(b).copied()
    }

    /// The records this worker sent for the tenant's events (of `user` only, when given) before
    /// `at` that no erase has retracted, of the users `include` accepts, each with `diff`:
    /// read again from the log and derived as when they were sent, corrections exactly as they
    /// were sent (embedding the text again need not give the same bits). Also the correction
    /// events among them that were never sent (they arrived while their user was withdrawn):
    /// they need embedding first.
    fn scope_records(
        &self,
        tenant: &str,
        user: Option<&str>,
        at: u64,
        include: impl Fn(&str) -> bool,
        diff: isize,
    ) -> (Vec<(u64, InputRecord, isize)>, Vec<(u64, Event)>) {
        let mut out = Vec::new();
        let mut unsent_corrections = Vec::new();
        self.for_each_record_before(tenant, user, at, |o, bytes| {
            let Ok(event) = Event::from_canonical_json(bytes) else {
                return;
            };
            let h = &event.header;
            if h.tenant != tenant
                || user.is_some_and(|u| u != h.user)
                || event.governs_processing()
                || worker_for(&event.key(), self.peers) != self.worker
                || self.erased_since(tenant, &h.user).is_some_and(|s| o <= s)
                || self.forgotten.contains(&o)
                || !include(&h.user)
            {
                return;
            }
            out.extend(
                InputRecord::from_event_with(&event, o, &self.fusion)
                    .into_iter()
                    .map(|r| (at, r, diff)),
            );
            let sent = |u: &str| {
                self.sent_corrections
                    .get(&(tenant.to_string(), u.to_string()))
                    .is_some_and(|sent| sent.iter().any(|(s, _)| *s == o))
            };
            if clustered_text(&event).is_some() && !sent(&h.user) {
                unsent_corrections.push((o, event));
            }
        });
        for ((t, u), sent) in &self.sent_corrections {
            if t != tenant || user.is_some_and(|x| x != u) || !include(u) {
                continue;
            }
            // an erase or a forget removed what it covered from `sent_corrections`
            out.extend(
                sent.iter()
                    .filter(|(o, _)| *o < at)
                    .map(|(_, record)| (at, record.clone(), diff)),
            );
        }
        (out, unsent_corrections)
    }

    /// Calls `f` with each record below `at` that may be an event of the tenant (of `user` only,
    /// when given): those the index names when the source has one, else every record. A failed
    /// read is retried until it succeeds (the views cannot go on without these records).
    fn for_each_record_before(
        &self,
        tenant: &str,
        user: Option<&str>,
        at: u64,
        mut f: impl FnMut(u64, &[u8]),
    ) {
        let retry = |err: &engram_connectors::LogError| {
            tracing::error!(%err, "reading the event log for an erase or restriction failed; retrying");
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        if let Some(index) = &self.user_offsets {
            let offsets = index.offsets(tenant, user, at);
            loop {
                match index.read(&self.log, &offsets) {
                    Ok(records) => return records.iter().for_each(|(o, b)| f(*o, b)),
                    Err(err) => retry(&err),
                }
            }
        }
        let mut offset = 0;
        while offset < at {
            match self
                .log
                .read(offset, READ_CHUNK.min((at - offset) as usize))
            {
                Ok(chunk) => {
                    offset += chunk.len() as u64;
                    chunk.iter().for_each(|(o, b)| f(*o, b));
                }
                Err(err) => retry(&err),
            }
        }
    }

    /// The retractions an erase at `at` makes on this worker: every record sent for the
    /// tenant's events (of `user` only, when given) that no earlier erase retracted, except
    /// those of withdrawn users (a restriction retracted them already).
    fn erase(
        &mut self,
        tenant: &str,
        user: Option<&str>,
        at: u64,
    ) -> Vec<(u64, InputRecord, isize)> {
        let (out, _) = self.scope_records(tenant, user, at, |u| !self.withdrawn(tenant, u), -1);
        for ((t, u), sent) in self.sent_corrections.iter_mut() {
            if t == tenant && user.is_none_or(|x| x == u) {
                sent.retain(|(o, _)| *o >= at);
            }
        }
        self.erased_at
            .insert((tenant.to_string(), user.unwrap_or("").to_string()), at);
        out
    }

    /// The retractions a `forget` at `at` of `target` (an event id of `(tenant, user)`) makes
    /// on this worker: the records sent for that event, and for the user's earlier events
    /// derived from it ([`super::derived_from`]: summaries covering it, relations it is evidence
    /// for, facts learned from it), exactly as sent. Nothing when the
    /// target is not an earlier event of that user, is another worker's, or was retracted
    /// already (forgotten, erased, or withdrawn by a restriction: then it is only noted, so
    /// that lifting the restriction does not send it again).
    fn forget(
        &mut self,
        tenant: &str,
        user: &str,
        target: &str,
        at: u64,
    ) -> Vec<(u64, InputRecord, isize)> {
        let mut found = None;
        let mut derived = Vec::new();
        self.for_each_record_before(tenant, Some(user), at, |o, bytes| {
            if let Ok(event) = Event::from_canonical_json(bytes) {
                let h = &event.header;
                if h.tenant != tenant || h.user != user || event.governs_processing() {
                    return;
                }
                if h.event_id == target {
                    found.get_or_insert((o, event));
                } else if super::derived_from(&event, target) {
                    derived.push((o, event));
                }
            }
        });
        let Some((o, event)) = found else {
            return Vec::new();
        };
        if worker_for(&event.key(), self.peers) != self.worker {
            return Vec::new();
        }
        // the target, then what was derived from it (summaries, relations, facts)
        let mut out = Vec::new();
        for (o, event) in std::iter::once((o, event)).chain(derived) {
            if !self.forgotten.insert(o) {
                continue;
            }
            let sent_correction = self
                .sent_corrections
                .get_mut(&(tenant.to_string(), user.to_string()))
                .and_then(|sent| {
                    let i = sent.iter().position(|(s, _)| *s == o)?;
                    Some(sent.remove(i).1)
                });
            let gone = self.withdrawn(tenant, user)
                || self.erased_since(tenant, user).is_some_and(|s| o <= s);
            if gone {
                continue;
            }
            out.extend(
                InputRecord::from_event_with(&event, o, &self.fusion)
                    .into_iter()
                    .chain(sent_correction)
                    .map(|r| (at, r, -1)),
            );
        }
        out
    }

    /// What a `restrict` or `unrestrict` of the tenant (of `user` only, when given) at `at`
    /// changes on this worker: a user it withdraws has every record sent for them retracted
    /// (processing stops: their memory no longer feeds team or organisation preferences,
    /// population priors or anything else); a user it gives back has them sent again (and the
    /// corrections that were never sent, embedded), as if never withdrawn.
    fn restrict(
        &mut self,
        tenant: &str,
        user: Option<&str>,
        restrict: bool,
        at: u64,
    ) -> Vec<(u64, InputRecord, isize)> {
        let before = self.restricted.clone();
        let scope = (tenant.to_string(), user.unwrap_or("").to_string());
        if restrict {
            self.restricted.insert(scope);
        } else {
            self.restricted.remove(&scope);
        }
        let changed = |u: &str| withdrawn(&before, tenant, u) != self.withdrawn(tenant, u);
        let diff = if restrict { -1 } else { 1 };
        let (mut out, mut unsent) = self.scope_records(tenant, user, at, changed, diff);
        if !restrict {
            self.flush_corrections(&mut unsent, &mut out);
        }
        out
    }
}

/// Whether `restricted` covers `(tenant, user)`, by the user or the whole tenant.
fn withdrawn(restricted: &HashSet<(String, String)>, tenant: &str, user: &str) -> bool {
    restricted.contains(&(tenant.to_string(), user.to_string()))
        || restricted.contains(&(tenant.to_string(), String::new()))
}

impl InputSource for LogSource {
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord, isize)>, u64)> {
        if self.log.end_offset() <= self.cursor {
            return None;
        }
        let chunk = match self.log.read(self.cursor, READ_CHUNK) {
            Ok(c) => c,
            Err(err) => {
                tracing::error!(%err, cursor = self.cursor, "reading the event log failed; will retry");
                return None;
            }
        };
        let mut records = Vec::new();
        let mut corrections = Vec::new();
        for (offset, bytes) in &chunk {
            if Redacted::from_record(bytes).is_some() {
                continue;
            }
            match Event::from_canonical_json(bytes) {
                Ok(event) => {
                    if let Body::Control(c) = &event.body {
                        if c.governs_processing() {
                            // what came before the control must be in before it is retracted
                            self.flush_corrections(&mut corrections, &mut records);
                            let (tenant, user) = (&event.header.tenant, &event.header.user);
                            let user = (c.scope == ControlScope::User).then_some(user.as_str());
                            records.extend(match c.action {
                                ControlAction::Erase => self.erase(tenant, user, *offset),
                                ControlAction::Restrict => {
                                    self.restrict(tenant, user, true, *offset)
                                }
                                ControlAction::Unrestrict => {
                                    self.restrict(tenant, user, false, *offset)
                                }
                                ControlAction::Forget => match &c.target_event_id {
                                    Some(target) => {
                                        self.forget(tenant, &event.header.user, target, *offset)
                                    }
                                    None => Vec::new(),
                                },
                                ControlAction::SetTeam => unreachable!("a data event"),
                            });
                            continue;
                        }
                    }
                    if worker_for(&event.key(), self.peers) != self.worker
                        || self.withdrawn(&event.header.tenant, &event.header.user)
                    {
                        // a withdrawn user's events are sent when the restriction is lifted
                        continue;
                    }
                    records.extend(
                        InputRecord::from_event_with(&event, *offset, &self.fusion)
                            .into_iter()
                            .map(|r| (*offset, r, 1)),
                    );
                    if clustered_text(&event).is_some() {
                        corrections.push((*offset, event));
                    }
                }
                Err(err) => {
                    tracing::error!(offset, %err, "unreadable record in the event log; skipped");
                    self.failures
                        .unreadable_records
                        .fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        self.flush_corrections(&mut corrections, &mut records);
        self.cursor += chunk.len() as u64;
        Some((records, self.cursor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde_json::json;
    use std::collections::BTreeMap;

    /// A random log: interactions, facts, feedback and corrections of three users in two
    /// tenants, with erases, restrictions and their lifting, of a user or a whole tenant, and
    /// forgets of one earlier event (of any user) among them (also events of restricted users: the source must not rely on the ingestor
    /// holding them back).
    fn random_log(seed: u64) -> Vec<serde_json::Value> {
        let mut rng = StdRng::seed_from_u64(seed);
        let users = [("t1", "a"), ("t1", "b"), ("t2", "a")];
        (0..120)
            .map(|i| {
                let (tenant, user) = users[rng.gen_range(0..users.len())];
                let ts = format!("2025-01-01T00:{:02}:{:02}Z", i / 60, i % 60);
                let header = json!({"event_id": format!("e{i}"), "tenant": tenant, "user": user,
                                    "ts": ts, "session": "s"});
                let body = match rng.gen_range(0..12) {
                    0 => json!({"kind": "control", "action": "erase", "scope": "user"}),
                    5 if i > 0 && rng.gen_bool(0.5) => {
                        // often another user's event, or a control: those are left alone
                        let target = format!("e{}", rng.gen_range(0..i));
                        json!({"kind": "control", "action": "forget", "target_event_id": target})
                    }
                    1 if rng.gen_bool(0.3) => {
                        json!({"kind": "control", "action": "erase", "scope": "tenant"})
                    }
                    10 | 11 => {
                        let action = ["restrict", "unrestrict"][rng.gen_range(0..2)];
                        let scope = ["user", "user", "tenant"][rng.gen_range(0..3)];
                        json!({"kind": "control", "action": action, "scope": scope})
                    }
                    2 => json!({"kind": "fact", "subject": "user", "attribute": "city",
                                "value": format!("c{i}")}),
                    3 => json!({"kind": "feedback", "message_id": format!("m{}", i % 4),
                                "skill_id": "concise", "reward": 1}),
                    4 => json!({"kind": "correction", "target_event_id": "x", "original": "o",
                                "corrected": format!("fix {i}"), "correction_type": "STYLE"}),
                    _ => json!({"kind": "interaction", "role": "user",
                                "content": format!("I moved to Town{i}. My dog is Rex{i}.")}),
                };
                let mut e = header;
                e.as_object_mut()
                    .unwrap()
                    .extend(body.as_object().unwrap().clone());
                e
            })
            .collect()
    }

    #[test]
    fn the_dataflow_gets_every_record_not_erased_of_the_users_not_restricted() {
        for seed in 0..30 {
            check_random_log(seed, false);
            check_random_log(seed, true);
        }
    }

    /// The dataflow's input from [`random_log`]`(seed)` is the definition's, with control
    /// events re-reading the whole log or (`indexed`) only what a [`UserOffsets`] names.
    fn check_random_log(seed: u64, indexed: bool) {
        {
            let dir = tempfile::tempdir().unwrap();
            let log = Arc::new(EventLog::open(dir.path()).unwrap());
            let events: Vec<Event> = random_log(seed)
                .iter()
                .map(|v| engram_schemas::parse_event_value(v, None).unwrap())
                .collect();
            let lines: Vec<String> = events.iter().map(Event::to_json).collect();
            // appended in pieces, so erases meet records sent in earlier polls
            for piece in lines.chunks(17) {
                log.append(piece).unwrap();
            }
            let index = Arc::new(UserOffsets::default());
            for (o, e) in events.iter().enumerate() {
                if !e.governs_processing() {
                    index.add(&e.header.tenant, &e.header.user, o as u64);
                }
            }
            let mut got: BTreeMap<String, isize> = BTreeMap::new();
            for worker in 0..2 {
                let mut source = LogSource::new(log.clone(), None, worker, 2);
                if indexed {
                    source = source.with_user_offsets(index.clone());
                }
                while let Some((records, _)) = source.poll() {
                    for (_, record, diff) in records {
                        let count = got.entry(format!("{record:?}")).or_default();
                        *count += diff;
                        // nothing is retracted that was not sent, nothing sent twice
                        assert!(
                            (0..=1).contains(count),
                            "seed {seed}: {record:?} at {count}"
                        );
                    }
                }
            }
            got.retain(|_, d| *d != 0);
            // the definition: every record of every event that no later erase covers, of the
            // users no restriction covers once the whole log is read
            let mut restricted = HashSet::new();
            for e in &events {
                if let Body::Control(c) = &e.body {
                    let user = match c.scope {
                        ControlScope::User => e.header.user.clone(),
                        ControlScope::Tenant => String::new(),
                    };
                    match c.action {
                        ControlAction::Restrict => {
                            restricted.insert((e.header.tenant.clone(), user))
                        }
                        ControlAction::Unrestrict => {
                            restricted.remove(&(e.header.tenant.clone(), user))
                        }
                        _ => false,
                    };
                }
            }
            let mut want: BTreeMap<String, isize> = BTreeMap::new();
            for (o, e) in events.iter().enumerate() {
                if withdrawn(&restricted, &e.header.tenant, &e.header.user) {
                    continue;
                }
                let erased = events[o + 1..].iter().any(|later| match &later.body {
                    Body::Control(c) if c.action == ControlAction::Erase => {
                        later.header.tenant == e.header.tenant
                            && (c.scope == ControlScope::Tenant
                                || later.header.user == e.header.user)
                    }
                    Body::Control(c) if c.action == ControlAction::Forget => {
                        later.header.tenant == e.header.tenant
                            && later.header.user == e.header.user
                            && c.target_event_id.as_ref().is_some_and(|t| {
                                t == &e.header.event_id || crate::ingest::derived_from(e, t)
                            })
                    }
                    _ => false,
                });
                if !erased {
                    for r in InputRecord::from_event(e, o as u64) {
                        *want.entry(format!("{r:?}")).or_default() += 1;
                    }
                }
            }
            assert_eq!(got, want, "seed {seed}, indexed {indexed}");
        }
    }
}
