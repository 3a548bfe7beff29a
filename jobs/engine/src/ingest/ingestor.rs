//! Accepting events: validate, drop redeliveries of an accepted `event_id`, append the rest to
//! the durable log (the events of restricted users to the Lance `held` table instead), and keep
//! every rejected input with its reason.

use super::user_offsets::UserOffsets;
use engram_connectors::{EventLog, HeldTable, LogError, RejectLog, Rejection, StoreError};
use engram_schemas::{parse_body, Body, ControlAction, ControlScope, Event, EventError};
pub use engram_schemas::{validate_item, MAX_EVENTS_PER_BODY};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error("storing the events of restricted users: {0}")]
    Held(#[from] StoreError),
}

// derived events (the enrichment job's) and the erase guard on them
#[path = "derived_events.rs"]
mod derived_events;

/// What became of a submission.
#[derive(Debug, Default, Serialize)]
pub struct IngestReport {
    /// Events newly appended to the log.
    pub accepted: usize,
    /// Events whose `(tenant, event_id)` was already accepted: nothing was written again.
    pub duplicates: usize,
    pub rejected: Vec<RejectedItem>,
    /// Events of restricted users: kept, not processed until the restriction is lifted.
    #[serde(skip_serializing_if = "is_zero")]
    pub held: usize,
    /// Derived events dropped because their user was erased after the turns they were read
    /// from ([`Ingestor::ingest_derived`]); not filed as rejects, which would keep the
    /// erased user's words.
    #[serde(skip_serializing_if = "is_zero")]
    pub erased: usize,
    /// Log offset of the first accepted event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_offset: Option<u64>,
    /// Offset one past the last accepted event: once the views reach it, they reflect this
    /// submission.
    pub log_end: u64,
}

#[derive(Debug, Serialize)]
pub struct RejectedItem {
    /// Position in the submitted array (0 for a single event).
    pub index: usize,
    #[serde(flatten)]
    pub error: EventError,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `(tenant, user)`, or `(tenant, "")` for a whole tenant.
type Scope = (String, String);

fn scope_of(event: &Event, scope: ControlScope) -> Scope {
    let h = &event.header;
    match scope {
        ControlScope::User => (h.tenant.clone(), h.user.clone()),
        ControlScope::Tenant => (h.tenant.clone(), String::new()),
    }
}

fn is_restricted(restricted: &HashSet<Scope>, tenant: &str, user: &str) -> bool {
    restricted.contains(&(tenant.to_string(), user.to_string()))
        || restricted.contains(&(tenant.to_string(), String::new()))
}

/// `event`, unless it is a control event of a whole tenant, which `who` may not send: erasing
/// or restricting a tenant is the operator's (the admin key's) decision.
pub fn refuse_tenant_scope(event: Event, who: &str) -> Result<Event, EventError> {
    match &event.body {
        Body::Control(c) if c.scope == ControlScope::Tenant => Err(EventError::new(
            "scope",
            format!(
                "a tenant-scope control event needs the admin key; {who} may send scope \"user\" only (erase a tenant with DELETE /v1/admin/tenants/{{tenant}}, or send the event to POST /v1/admin/events)"
            ),
        )),
        _ => Ok(event),
    }
}

/// A reason in an answer or the reject log is cut to this many characters: reasons quote the
/// bad value, which may be long.
const MAX_REASON_CHARS: usize = 300;

/// `error` with its reason cut to [`MAX_REASON_CHARS`].
fn bounded(mut error: EventError) -> EventError {
    if error.reason.chars().count() > MAX_REASON_CHARS {
        let cut: String = error.reason.chars().take(MAX_REASON_CHARS).collect();
        error.reason = format!("{cut}… (cut)");
    }
    error
}

pub struct Ingestor {
    log: Arc<EventLog>,
    rejects: Arc<RejectLog>,
    /// `(tenant, event_id)` of every accepted event.
    seen: Mutex<HashSet<(String, String)>>,
    /// Users (and tenants) whose processing is restricted (`control` `restrict` events).
    restricted: Mutex<HashSet<Scope>>,
    /// Their events since, in order (canonical JSON), kept in the Lance `held` table until the
    /// restriction is lifted, then appended to the log.
    held: Mutex<Vec<(Scope, String)>>,
    held_table: HeldTable,
    /// Erase events for the engine's erasure task to complete ([`Ingestor::take_erases`]):
    /// those the log held when it was opened (a crash may have interrupted them; the task
    /// skips those with a receipt), then each one appended, however it arrived.
    erases: Mutex<Vec<LoggedErase>>,
    erase_added: tokio::sync::Notify,
    /// The offset of the latest erase of each `(tenant, user)` (user `""`: the whole tenant),
    /// so that derived events read from turns an erase has since removed are refused
    /// ([`Ingestor::ingest_derived`]). One entry per erased user.
    erased_at: Mutex<HashMap<(String, String), u64>>,
    /// How far ahead of this machine's clock an event's `ts` may be (`None`: any).
    max_future_skew: Option<chrono::Duration>,
    /// The log offsets of each user's data events.
    user_offsets: Arc<UserOffsets>,
    /// Events appended and not yet recallable.
    backlog: Arc<super::backlog::Backlog>,
}

/// An erase event, or a forget event (an erase of one event), as read from the log.
#[derive(Debug, Clone)]
pub struct LoggedErase {
    pub offset: u64,
    pub event_id: String,
    pub tenant: String,
    /// `None` for a whole tenant.
    pub user: Option<String>,
    /// A forget's target: only this event of the user is erased.
    pub target_event_id: Option<String>,
}

impl LoggedErase {
    /// The erase `event` (of `scope`) at offset 0.
    fn of(event: &Event, scope: ControlScope) -> Self {
        LoggedErase {
            offset: 0,
            event_id: event.header.event_id.clone(),
            tenant: event.header.tenant.clone(),
            user: (scope == ControlScope::User).then(|| event.header.user.clone()),
            target_event_id: match &event.body {
                Body::Control(c) => c.target_event_id.clone(),
                _ => None,
            },
        }
    }
}

/// The event id of a held event's canonical JSON.
fn held_event_id(line: &str) -> Option<String> {
    Event::from_canonical_json(line.as_bytes())
        .ok()
        .map(|e| e.header.event_id)
}

/// `event`, unless it is a forget whose target is no event the tenant has sent before it
/// (accepted earlier, or earlier in the same body): field `target_event_id`. Whether the
/// target is the same user's is the forget's to check (another user's event is left alone).
fn check_forget_target(
    event: Event,
    seen: &HashSet<(String, String)>,
    batch: &HashSet<(String, String)>,
) -> Result<Event, EventError> {
    let Body::Control(c) = &event.body else {
        return Ok(event);
    };
    let Some(target) = c.target_event_id.as_ref() else {
        return Ok(event);
    };
    let key = (event.header.tenant.clone(), target.clone());
    if seen.contains(&key) || batch.contains(&key) {
        return Ok(event);
    }
    Err(EventError::new(
        "target_event_id",
        format!(
            "no event {target:?} of tenant {:?} was accepted before this forget",
            event.header.tenant
        ),
    ))
}

impl Ingestor {
    /// Rebuilds the set of accepted event ids from the log and the events held in the Lance
    /// dataset at `held_dir`.
    pub fn open(
        log: Arc<EventLog>,
        rejects: Arc<RejectLog>,
        held_dir: &std::path::Path,
    ) -> Result<Self, IngestError> {
        let mut seen = HashSet::new();
        let mut restricted = HashSet::new();
        let mut erases: Vec<LoggedErase> = Vec::new();
        let user_offsets = Arc::new(UserOffsets::default());
        let end = log.end_offset();
        let mut at = 0;
        while at < end {
            let chunk = log.read(at, 8192)?;
            for (offset, bytes) in &chunk {
                if let Some(r) = engram_schemas::Redacted::from_record(bytes) {
                    // an erased event stays accepted: a redelivery must not bring it back
                    seen.insert((r.tenant, r.event_id));
                    continue;
                }
                match Event::from_canonical_json(bytes) {
                    Ok(e) => {
                        if !e.governs_processing() {
                            user_offsets.add(&e.header.tenant, &e.header.user, *offset);
                        }
                        if let Body::Control(c) = &e.body {
                            match c.action {
                                ControlAction::Restrict => {
                                    restricted.insert(scope_of(&e, c.scope));
                                }
                                ControlAction::Unrestrict => {
                                    restricted.remove(&scope_of(&e, c.scope));
                                }
                                ControlAction::Erase | ControlAction::Forget => {
                                    erases.push(LoggedErase {
                                        offset: *offset,
                                        ..LoggedErase::of(&e, c.scope)
                                    })
                                }
                                ControlAction::SetTeam => {}
                            }
                        }
                        seen.insert((e.header.tenant, e.header.event_id));
                    }
                    Err(err) => tracing::error!(offset, %err, "unreadable record in the event log"),
                }
            }
            at += chunk.len() as u64;
        }
        let (held_table, held_records) = HeldTable::open(held_dir)?;
        let mut held_lines: Vec<String> = held_records
            .into_iter()
            .map(|r| String::from_utf8_lossy(&r).into_owned())
            .collect();
        // before the held table, held events were kept in `held.jsonl` beside the log
        let legacy = log
            .path()
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("held.jsonl");
        let legacy_lines = std::fs::read_to_string(&legacy).ok();
        if let Some(text) = &legacy_lines {
            held_lines.extend(text.lines().map(str::to_string));
        }
        let mut held = Vec::new();
        for line in held_lines {
            if let Ok(e) = Event::from_canonical_json(line.as_bytes()) {
                if seen.insert((e.header.tenant.clone(), e.header.event_id.clone())) {
                    held.push(((e.header.tenant, e.header.user), line));
                }
            }
        }
        let ingestor = Ingestor {
            log,
            rejects,
            seen: Mutex::new(seen),
            restricted: Mutex::new(restricted),
            held: Mutex::new(held),
            held_table,
            erased_at: Mutex::new(
                erases
                    .iter()
                    .filter(|e| e.target_event_id.is_none())
                    .map(|e| {
                        (
                            (e.tenant.clone(), e.user.clone().unwrap_or_default()),
                            e.offset,
                        )
                    })
                    .collect(),
            ),
            erases: Mutex::new(erases),
            erase_added: tokio::sync::Notify::new(),
            max_future_skew: None,
            user_offsets,
            backlog: Arc::new(super::backlog::Backlog::new(end)),
        };
        if legacy_lines.is_some() {
            let held = ingestor
                .held
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            ingestor.write_held(&held)?;
            std::fs::remove_file(&legacy).map_err(|source| LogError::Io {
                path: legacy.clone(),
                source,
            })?;
        }
        // events held for a restriction lifted just before a crash go to the log now
        ingestor.ingest_with("held", None, Vec::new(), &[], true, None)?;
        Ok(ingestor)
    }

    /// Rejects (field `ts`) every event dated more than `skew` after this machine's clock: a
    /// future-dated event would rank as the newest memory for ever and, with `clock = events`,
    /// move every tenant's engine time.
    pub fn with_max_future_skew(mut self, skew: std::time::Duration) -> Self {
        self.max_future_skew = chrono::Duration::from_std(skew).ok();
        self
    }

    /// `event`, unless it is dated beyond the allowed skew.
    fn check_not_future(&self, event: Event) -> Result<Event, EventError> {
        let Some(skew) = self.max_future_skew else {
            return Ok(event);
        };
        let latest = chrono::Utc::now() + skew;
        if event.header.ts <= latest {
            return Ok(event);
        }
        Err(EventError::new(
            "ts",
            format!(
                "{} is in the future: at most {} s after this server's clock ({}) is accepted (log.max_future_skew_s)",
                event.header.ts.to_rfc3339(),
                skew.num_seconds(),
                (latest - skew).to_rfc3339()
            ),
        ))
    }

    /// The erase events not taken yet, in log order: at the first call those the log held when
    /// it was opened, then those appended since the last call.
    pub fn take_erases(&self) -> Vec<LoggedErase> {
        std::mem::take(&mut *self.erases.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Resolves once an erase event is waiting to be taken ([`Ingestor::take_erases`]).
    pub async fn erase_waiting(&self) {
        let notified = self.erase_added.notified();
        if self
            .erases
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
        {
            notified.await;
        }
    }

    /// The events of `(tenant, user)` held for a restriction, in order (canonical JSON).
    pub fn held_events(&self, tenant: &str, user: &str) -> Vec<String> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.iter()
            .filter(|((t, u), _)| t == tenant && u == user)
            .map(|(_, line)| line.clone())
            .collect()
    }

    /// Whether processing of `(tenant, user)` is restricted.
    pub fn is_restricted(&self, tenant: &str, user: &str) -> bool {
        is_restricted(
            &self.restricted.lock().unwrap_or_else(|p| p.into_inner()),
            tenant,
            user,
        )
    }

    fn write_held(&self, held: &[(Scope, String)]) -> Result<(), StoreError> {
        let records: Vec<Vec<u8>> = held.iter().map(|(_, l)| l.as_bytes().to_vec()).collect();
        self.held_table.replace(&records)
    }

    pub fn log(&self) -> &Arc<EventLog> {
        &self.log
    }

    pub fn rejects(&self) -> &Arc<RejectLog> {
        &self.rejects
    }

    /// Where each `(tenant, user)`'s data events are in the log.
    /// Events appended and not yet recallable (the episode writer counts them down).
    pub fn backlog(&self) -> &Arc<super::backlog::Backlog> {
        &self.backlog
    }

    pub fn user_offsets(&self) -> &Arc<UserOffsets> {
        &self.user_offsets
    }

    /// Ingests a JSON body: one event or an array of events.
    pub fn ingest_body(&self, source: &str, body: &[u8]) -> Result<IngestReport, IngestError> {
        let (parsed, originals) = parse_body(body);
        self.ingest_parsed(source, parsed, &originals)
    }

    /// Like [`Ingestor::ingest_body`] for a caller whose API key belongs to `tenant`: an event
    /// of any other tenant, and a control event of the whole tenant, is rejected (field
    /// `tenant` or `scope`), the others are ingested.
    pub fn ingest_body_as(
        &self,
        source: &str,
        body: &[u8],
        tenant: &str,
    ) -> Result<IngestReport, IngestError> {
        self.ingest_body_by(source, body, Some(tenant), |e| {
            if e.header.tenant != tenant {
                return Err(EventError::new(
                    "tenant",
                    format!(
                        "the API key belongs to tenant {tenant:?}; it cannot write events of tenant {:?}",
                        e.header.tenant
                    ),
                ));
            }
            refuse_tenant_scope(e, "a tenant's API key")
        })
    }

    /// Like [`Ingestor::ingest_body`], each valid event passed through `check` first (its
    /// error rejects the event).
    pub fn ingest_body_checked(
        &self,
        source: &str,
        body: &[u8],
        check: impl Fn(Event) -> Result<Event, EventError>,
    ) -> Result<IngestReport, IngestError> {
        self.ingest_body_by(source, body, None, check)
    }

    /// [`Ingestor::ingest_body_checked`] for a body sent with the key of `submitter` (when
    /// given): its rejects are filed under that tenant (see [`RejectLog`]).
    fn ingest_body_by(
        &self,
        source: &str,
        body: &[u8],
        submitter: Option<&str>,
        check: impl Fn(Event) -> Result<Event, EventError>,
    ) -> Result<IngestReport, IngestError> {
        let (parsed, originals) = parse_body(body);
        let parsed = parsed.into_iter().map(|p| p.and_then(&check)).collect();
        self.ingest_with(source, submitter, parsed, &originals, false, None)
    }

    /// Ingests already-parsed events; `originals[i]` is the input text of `parsed[i]`.
    pub fn ingest_parsed(
        &self,
        source: &str,
        parsed: Vec<Result<Event, EventError>>,
        originals: &[String],
    ) -> Result<IngestReport, IngestError> {
        self.ingest_with(source, None, parsed, originals, false, None)
    }

    /// [`Ingestor::ingest_parsed`]; with `release_lifted`, held events whose restriction was
    /// lifted (a crash came between the lift and rewriting the held table) go to the log first.
    /// Rejects are filed under `submitter` when given (the tenant whose key sent them).
    fn ingest_with(
        &self,
        source: &str,
        submitter: Option<&str>,
        parsed: Vec<Result<Event, EventError>>,
        originals: &[String],
        release_lifted: bool,
        derived_from: Option<u64>,
    ) -> Result<IngestReport, IngestError> {
        let mut report = IngestReport::default();
        let mut rejections = Vec::new();
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let mut batch_keys = HashSet::new();
        let mut records = Vec::new();
        let mut restricted = self.restricted.lock().unwrap_or_else(|p| p.into_inner());
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let mut held_changed = false;
        // held events whose restriction is lifted go to the log
        let release = |held: &mut Vec<(Scope, String)>,
                       restricted: &HashSet<Scope>,
                       records: &mut Vec<(String, Option<Scope>)>| {
            let mut released = 0;
            held.retain(|((t, u), line)| {
                let free = !is_restricted(restricted, t, u);
                if free {
                    records.push((line.clone(), Some((t.clone(), u.clone()))));
                    released += 1;
                }
                !free
            });
            released
        };
        // erase events among `records`: (index in records, the erase without its offset)
        let mut erases: Vec<(usize, LoggedErase)> = Vec::new();
        let mut released = if release_lifted {
            release(&mut held, &restricted, &mut records)
        } else {
            0
        };
        for (index, p) in parsed.into_iter().enumerate() {
            let checked = p
                .and_then(|e| self.check_not_future(e))
                .and_then(|e| check_forget_target(e, &seen, &batch_keys));
            if matches!(&checked, Ok(e) if self.erased_since(e, derived_from)) {
                report.erased += 1;
                continue;
            }
            match checked {
                Ok(event) => {
                    let key = (event.header.tenant.clone(), event.header.event_id.clone());
                    if seen.contains(&key) || !batch_keys.insert(key) {
                        report.duplicates += 1;
                        continue;
                    }
                    let (tenant, user) = (&event.header.tenant, &event.header.user);
                    match &event.body {
                        Body::Control(c) if c.governs_processing() => {
                            if matches!(c.action, ControlAction::Erase | ControlAction::Forget) {
                                erases.push((records.len(), LoggedErase::of(&event, c.scope)));
                            }
                            records.push((event.to_json(), None));
                            match c.action {
                                ControlAction::Restrict => {
                                    restricted.insert(scope_of(&event, c.scope));
                                }
                                ControlAction::Unrestrict => {
                                    restricted.remove(&scope_of(&event, c.scope));
                                    released += release(&mut held, &restricted, &mut records);
                                }
                                ControlAction::Erase => {
                                    // held events of the erased are dropped unseen
                                    let before = held.len();
                                    held.retain(|((t, u), _)| {
                                        !(t == tenant
                                            && (c.scope == ControlScope::Tenant || u == user))
                                    });
                                    held_changed |= held.len() != before;
                                }
                                ControlAction::Forget => {
                                    // a held target is dropped unseen
                                    let target = c.target_event_id.as_deref();
                                    let before = held.len();
                                    held.retain(|((t, u), line)| {
                                        !(t == tenant
                                            && u == user
                                            && held_event_id(line).as_deref() == target)
                                    });
                                    held_changed |= held.len() != before;
                                }
                                ControlAction::SetTeam => unreachable!("a data event"),
                            }
                        }
                        _ if is_restricted(&restricted, tenant, user) => {
                            held.push(((tenant.clone(), user.clone()), event.to_json()));
                            held_changed = true;
                            report.held += 1;
                        }
                        _ => records.push((event.to_json(), Some((tenant.clone(), user.clone())))),
                    }
                }
                Err(error) => {
                    let error = bounded(error);
                    tracing::warn!(source, index, field = %error.field, reason = %error.reason, "event rejected");
                    rejections.push(Rejection {
                        source: source.to_string(),
                        field: error.field.clone(),
                        reason: error.reason.clone(),
                        original: originals.get(index).cloned().unwrap_or_default(),
                        rejected_at: chrono::Utc::now(),
                    });
                    report.rejected.push(RejectedItem { index, error });
                }
            }
        }
        self.rejects.record(submitter, &rejections)?;
        // The log first: a crash before the held table is rewritten leaves released events in
        // both, and the next start drops the held copies as duplicates.
        if !records.is_empty() {
            // noted first: a worker that reads a control event after them finds them
            let next = self.log.end_offset();
            for (i, (_, owner)) in records.iter().enumerate() {
                if let Some((t, u)) = owner {
                    self.user_offsets.add(t, u, next + i as u64);
                }
            }
            let lines: Vec<&str> = records.iter().map(|(line, _)| line.as_str()).collect();
            let first = self.log.append(&lines)?;
            self.backlog.accepted(first, first + lines.len() as u64);
            // released events were accepted (and counted) when they were held
            report.accepted = records.len() - released;
            report.first_offset = Some(first);
            if !erases.is_empty() {
                let mut erased_at = self.erased_at.lock().unwrap_or_else(|p| p.into_inner());
                for (i, erase) in &erases {
                    if erase.target_event_id.is_none() {
                        let who = (erase.tenant.clone(), erase.user.clone().unwrap_or_default());
                        erased_at.insert(who, first + *i as u64);
                    }
                }
                drop(erased_at);
                self.erases
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(erases.into_iter().map(|(i, erase)| LoggedErase {
                        offset: first + i as u64,
                        ..erase
                    }));
                self.erase_added.notify_one();
            }
        }
        if held_changed || released > 0 {
            self.write_held(&held)?;
        }
        seen.extend(batch_keys);
        report.log_end = self.log.end_offset();
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_tests::files_containing;
    use serde_json::{json, Value};

    #[test]
    fn an_event_dated_beyond_the_skew_is_rejected_and_one_within_it_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path()).unwrap());
        let rejects = Arc::new(RejectLog::open(dir.path()).unwrap());
        let ingestor = Ingestor::open(log.clone(), rejects, &dir.path().join("held.lance"))
            .unwrap()
            .with_max_future_skew(std::time::Duration::from_secs(300));
        let at = |id: &str, seconds_ahead: i64| {
            let ts = chrono::Utc::now() + chrono::Duration::seconds(seconds_ahead);
            json!({"event_id": id, "tenant": "t", "user": "u", "ts": ts.to_rfc3339(),
                   "role": "user", "content": "We meet next Saturday."})
        };
        let body = json!([
            at("past", -86_400),
            at("in-a-minute", 60),
            at("next-year", 365 * 86_400),
            at("in-an-hour", 3_600)
        ]);
        let report = ingestor
            .ingest_body("http", body.to_string().as_bytes())
            .unwrap();
        assert_eq!(report.accepted, 2);
        let rejected: Vec<(usize, &str)> = report
            .rejected
            .iter()
            .map(|r| (r.index, r.error.field.as_str()))
            .collect();
        assert_eq!(rejected, [(2, "ts"), (3, "ts")]);
        assert!(report.rejected[0].error.reason.contains("in the future"));
        assert_eq!(log.end_offset(), 2);
        // without a skew any date is accepted
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path()).unwrap());
        let rejects = Arc::new(RejectLog::open(dir.path()).unwrap());
        let open = Ingestor::open(log, rejects, &dir.path().join("held.lance")).unwrap();
        let report = open
            .ingest_body("http", body.to_string().as_bytes())
            .unwrap();
        assert_eq!((report.accepted, report.rejected.len()), (4, 0));
    }

    #[test]
    fn an_oversized_event_inside_an_array_is_rejected_and_its_neighbour_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path()).unwrap());
        let rejects = Arc::new(RejectLog::open(dir.path()).unwrap());
        let ingestor =
            Ingestor::open(log.clone(), rejects, &dir.path().join("held.lance")).unwrap();
        let event = |id: &str, content: String| {
            json!({"event_id": id, "tenant": "t", "user": "u", "ts": "2025-01-01T00:00:00Z",
                   "role": "user", "content": content})
        };
        // under the content limit, over the event limit once four such fields are combined
        let big = "x".repeat(60 * 1024);
        let mut huge = event("big", big.clone());
        huge["meta"] = json!({"a": big, "b": big, "c": big, "d": big});
        let body = serde_json::to_vec(&json!([event("ok", "hello".into()), huge])).unwrap();
        let report = ingestor.ingest_body("test", &body).unwrap();
        assert_eq!(report.accepted, 1);
        assert_eq!(report.rejected.len(), 1);
        assert_eq!(report.rejected[0].index, 1);
        assert_eq!(report.rejected[0].error.field, "$");
        assert!(report.rejected[0].error.reason.contains("limit"));
        assert_eq!(log.end_offset(), 1);
    }

    #[test]
    fn events_of_a_restricted_user_wait_in_lance_across_restarts_and_an_erase_leaves_none() {
        let dir = tempfile::tempdir().unwrap();
        let held_dir = dir.path().join("held.lance");
        let open = || {
            let log = Arc::new(EventLog::open(dir.path()).unwrap());
            let rejects = Arc::new(RejectLog::open(dir.path()).unwrap());
            Ingestor::open(log, rejects, &held_dir).unwrap()
        };
        let event = |id: &str, user: &str| {
            json!({"event_id": id, "tenant": "t", "user": user, "ts": "2025-01-01T00:00:00Z",
                   "role": "user", "content": format!("secret {id}")})
        };
        let control = |id: &str, action: &str| {
            json!({"event_id": id, "tenant": "t", "user": "u", "ts": "2025-01-01T00:00:00Z",
                   "kind": "control", "action": action, "scope": "user"})
        };
        let ingest = |ingestor: &Ingestor, items: Vec<Value>| {
            ingestor
                .ingest_body("test", &serde_json::to_vec(&json!(items)).unwrap())
                .unwrap()
        };
        let log_ids = |ingestor: &Ingestor| -> Vec<String> {
            let log = ingestor.log();
            log.read(0, 100)
                .unwrap()
                .into_iter()
                .map(|(_, b)| Event::from_canonical_json(&b).unwrap().header.event_id)
                .collect()
        };
        {
            let ingestor = open();
            let report = ingest(
                &ingestor,
                vec![
                    control("r1", "restrict"),
                    event("a", "u"),
                    event("b", "u"),
                    event("x", "other"),
                ],
            );
            // accepted counts what went to the log
            assert_eq!((report.accepted, report.held), (2, 2));
            assert_eq!(log_ids(&ingestor), ["r1", "x"]);
            assert!(!files_containing(&held_dir, "secret a").is_empty());
        }
        {
            // reopened: still held, in order, and a redelivery is recognised
            let ingestor = open();
            assert!(ingestor.is_restricted("t", "u"));
            assert_eq!(ingestor.held_events("t", "u").len(), 2);
            assert!(ingestor.held_events("t", "u")[0].contains("secret a"));
            assert_eq!(ingest(&ingestor, vec![event("b", "u")]).duplicates, 1);
            // lifted: the held events follow the lift in the log, and leave the held table
            ingest(&ingestor, vec![control("l1", "unrestrict")]);
            assert_eq!(log_ids(&ingestor), ["r1", "x", "l1", "a", "b"]);
            assert!(ingestor.held_events("t", "u").is_empty());
            assert!(files_containing(&held_dir, "secret a").is_empty());
            // restricted again, then erased: the held event goes with no trace
            ingest(&ingestor, vec![control("r2", "restrict"), event("c", "u")]);
            assert!(!files_containing(&held_dir, "secret c").is_empty());
            ingest(&ingestor, vec![control("e1", "erase")]);
            assert!(files_containing(&held_dir, "secret c").is_empty());
        }
        let ingestor = open();
        assert!(ingestor.held_events("t", "u").is_empty());
        assert_eq!(log_ids(&ingestor), ["r1", "x", "l1", "a", "b", "r2", "e1"]);
    }
}
