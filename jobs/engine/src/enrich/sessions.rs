//! The turns the enrichment job reads from the log, gathered per session into batches for the
//! model. A session's turns are sent once the session is finished: its user started another
//! session, nothing was added to it for `session_idle` (wall time since its last turn was
//! read), or it reached the most turns one request carries (the rest follow in a batch of their
//! own). Pure bookkeeping: no I/O, unit-tested.

use chrono::{DateTime, Utc};
use engram_schemas::{Body, ControlAction, ControlScope, Event, Role};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// Longest turn text sent to the model, in characters (the rest is cut).
pub const MAX_TURN_CHARS: usize = 2_000;

/// Most turns in one batch: a relation may name at most this many turns as its evidence
/// (`engram_schemas::MAX_RELATION_EVIDENCE`).
pub const MAX_BATCH_TURNS: usize = engram_schemas::MAX_RELATION_EVIDENCE;

/// One turn as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub offset: u64,
    pub event_id: String,
    pub ts: DateTime<Utc>,
    pub role: Role,
    /// Who spoke, where the event names them (`meta.speaker`).
    pub speaker: Option<String>,
    pub content: String,
}

/// Turns of one session of one user, in log order, asked of the model in one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Batch {
    pub tenant: String,
    pub user: String,
    pub session: Option<String>,
    pub turns: Vec<Turn>,
    /// Names the batch in the ids of what it yields: a hash of the model, the tenant, the user
    /// and the turns' event ids.
    pub key: String,
    model: String,
}

impl Batch {
    pub fn new(
        model: &str,
        tenant: String,
        user: String,
        session: Option<String>,
        turns: Vec<Turn>,
    ) -> Self {
        let mut hash = Sha256::new();
        for part in [model, tenant.as_str(), user.as_str()] {
            hash.update(part.as_bytes());
            hash.update([0]);
        }
        for turn in &turns {
            hash.update(turn.event_id.as_bytes());
            hash.update([0]);
        }
        let key = hex::encode(&hash.finalize()[..12]);
        Batch {
            tenant,
            user,
            session,
            turns,
            key,
            model: model.to_string(),
        }
    }

    /// The batch of the same user and session with `turns` instead (a new key).
    pub fn with_turns(&self, turns: Vec<Turn>) -> Batch {
        let model = &self.model;
        Batch::new(
            model,
            self.tenant.clone(),
            self.user.clone(),
            self.session.clone(),
            turns,
        )
    }

    pub fn turn(&self, event_id: &str) -> Option<&Turn> {
        self.turns.iter().find(|t| t.event_id == event_id)
    }

    /// The turns' event ids, sorted.
    pub fn sorted_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.turns.iter().map(|t| t.event_id.clone()).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    pub fn first_offset(&self) -> u64 {
        self.turns.iter().map(|t| t.offset).min().unwrap_or(0)
    }

    /// The latest time of any turn.
    pub fn last_ts(&self) -> DateTime<Utc> {
        self.turns.iter().map(|t| t.ts).max().unwrap_or_default()
    }

    /// The latest time of the turns named (of all turns when none of them is the batch's).
    pub fn latest_ts_of(&self, ids: &[String]) -> DateTime<Utc> {
        self.turns
            .iter()
            .filter(|t| ids.contains(&t.event_id))
            .map(|t| t.ts)
            .max()
            .unwrap_or_else(|| self.last_ts())
    }
}

type SessionKey = (String, String, Option<String>);

struct OpenSession {
    turns: Vec<Turn>,
    last_read: Instant,
}

/// Gathers turns into batches; see the module doc.
pub struct SessionBatcher {
    model: String,
    max_turns: usize,
    open: BTreeMap<SessionKey, OpenSession>,
    /// Each user's session of their latest turn.
    current: HashMap<(String, String), Option<String>>,
}

impl SessionBatcher {
    /// Batches for `model` of at most `max_turns` turns (1 to [`MAX_BATCH_TURNS`]).
    pub fn new(model: &str, max_turns: usize) -> Self {
        SessionBatcher {
            model: model.to_string(),
            max_turns: max_turns.clamp(1, MAX_BATCH_TURNS),
            open: BTreeMap::new(),
            current: HashMap::new(),
        }
    }

    /// Reads the event at `offset` (read at `now`); returns the batches it finishes. User and
    /// assistant turns are gathered; an erase drops what is open of those it erases, a forget
    /// the turn it names; everything else is passed over.
    pub fn read(&mut self, offset: u64, event: &Event, now: Instant) -> Vec<Batch> {
        let (tenant, user) = (&event.header.tenant, &event.header.user);
        match &event.body {
            Body::Interaction(i) if i.role != Role::Tool && !i.content.trim().is_empty() => {
                let mut done = Vec::new();
                let session = event.header.session.clone();
                let who = (tenant.clone(), user.clone());
                if let Some(previous) = self.current.insert(who, session.clone()) {
                    if previous != session {
                        done.extend(self.finish(&(tenant.clone(), user.clone(), previous)));
                    }
                }
                let key = (tenant.clone(), user.clone(), session);
                let open = self.open.entry(key.clone()).or_insert(OpenSession {
                    turns: Vec::new(),
                    last_read: now,
                });
                open.turns.push(Turn {
                    offset,
                    event_id: event.header.event_id.clone(),
                    ts: event.header.ts,
                    role: i.role,
                    speaker: i
                        .meta
                        .as_ref()
                        .and_then(|m| m.get("speaker"))
                        .and_then(|s| s.as_str())
                        .map(str::to_string),
                    content: i.content.chars().take(MAX_TURN_CHARS).collect(),
                });
                open.last_read = now;
                if open.turns.len() >= self.max_turns {
                    done.extend(self.finish(&key));
                }
                done
            }
            Body::Control(c) => {
                match c.action {
                    ControlAction::Erase => {
                        let whole_tenant = c.scope == ControlScope::Tenant;
                        self.open
                            .retain(|(t, u, _), _| !(t == tenant && (whole_tenant || u == user)));
                        self.current
                            .retain(|(t, u), _| !(t == tenant && (whole_tenant || u == user)));
                    }
                    ControlAction::Forget => {
                        let target = c.target_event_id.as_deref();
                        for ((t, u, _), open) in self.open.iter_mut() {
                            if t == tenant && u == user {
                                open.turns
                                    .retain(|turn| Some(turn.event_id.as_str()) != target);
                            }
                        }
                        self.open.retain(|_, open| !open.turns.is_empty());
                    }
                    _ => {}
                }
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Notes the session of a turn read but not gathered (answered for before a restart), so
    /// that the user's next session still finishes the one before.
    pub fn note_session(&mut self, event: &Event) {
        let who = (event.header.tenant.clone(), event.header.user.clone());
        self.current.insert(who, event.header.session.clone());
    }

    /// The batches of sessions nothing was added to for `idle` before `now`.
    pub fn finish_idle(&mut self, now: Instant, idle: Duration) -> Vec<Batch> {
        let idle_keys: Vec<SessionKey> = self
            .open
            .iter()
            .filter(|(_, s)| now.saturating_duration_since(s.last_read) >= idle)
            .map(|(k, _)| k.clone())
            .collect();
        idle_keys.iter().filter_map(|k| self.finish(k)).collect()
    }

    /// The batches of every open session.
    pub fn finish_all(&mut self) -> Vec<Batch> {
        let keys: Vec<SessionKey> = self.open.keys().cloned().collect();
        keys.iter().filter_map(|k| self.finish(k)).collect()
    }

    /// The lowest log offset of a turn not yet in a batch.
    pub fn oldest_open_offset(&self) -> Option<u64> {
        self.open
            .values()
            .filter_map(|s| s.turns.first().map(|t| t.offset))
            .min()
    }

    /// Turns not yet in a batch.
    pub fn open_turns(&self) -> usize {
        self.open.values().map(|s| s.turns.len()).sum()
    }

    fn finish(&mut self, key: &SessionKey) -> Option<Batch> {
        let open = self.open.remove(key)?;
        let (tenant, user, session) = key.clone();
        Some(Batch::new(&self.model, tenant, user, session, open.turns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(id: &str, user: &str, session: &str, role: &str, content: &str) -> Event {
        engram_schemas::parse_event_value(
            &json!({"event_id": id, "tenant": "t", "user": user, "session": session,
                    "ts": "2023-05-08T13:56:00Z", "role": role, "content": content,
                    "meta": {"speaker": "Caroline"}}),
            None,
        )
        .unwrap()
    }

    fn erase(user: &str) -> Event {
        engram_schemas::parse_event_value(
            &json!({"event_id": format!("erase-{user}"), "tenant": "t", "user": user,
                    "ts": "2023-05-09T00:00:00Z", "kind": "control", "action": "erase"}),
            None,
        )
        .unwrap()
    }

    fn ids(batch: &Batch) -> Vec<&str> {
        batch.turns.iter().map(|t| t.event_id.as_str()).collect()
    }

    #[test]
    fn a_session_is_sent_when_its_user_starts_another_or_it_goes_quiet() {
        let start = Instant::now();
        let mut b = SessionBatcher::new("m", 40);
        let later = |s| start + Duration::from_secs(s);
        assert!(b
            .read(
                0,
                &event(
                    "a1",
                    "ann",
                    "s1",
                    "user",
                    "I went to the LGBTQ support group yesterday."
                ),
                later(0)
            )
            .is_empty());
        assert!(b
            .read(
                1,
                &event("a2", "ann", "s1", "assistant", "How was it?"),
                later(1)
            )
            .is_empty());
        assert!(b
            .read(
                2,
                &event("b1", "bob", "s1", "user", "We adopted a dog last Saturday."),
                later(2)
            )
            .is_empty());
        assert_eq!(b.oldest_open_offset(), Some(0));
        // ann's next session finishes her first one; bob's is untouched
        let done = b.read(
            3,
            &event("a3", "ann", "s2", "user", "Back from the trip."),
            later(3),
        );
        assert_eq!(done.len(), 1);
        assert_eq!(
            (done[0].user.as_str(), ids(&done[0])),
            ("ann", vec!["a1", "a2"])
        );
        assert_eq!(done[0].turns[0].speaker.as_deref(), Some("Caroline"));
        assert_eq!(b.oldest_open_offset(), Some(2));
        // quiet for 60 s: bob's session (last read at 2 s) at 62 s, ann's second at 63 s
        assert!(b.finish_idle(later(61), Duration::from_secs(60)).is_empty());
        let idle = b.finish_idle(later(62), Duration::from_secs(60));
        assert_eq!(idle.iter().map(ids).collect::<Vec<_>>(), [vec!["b1"]]);
        let rest = b.finish_all();
        assert_eq!(rest.iter().map(ids).collect::<Vec<_>>(), [vec!["a3"]]);
        assert_eq!(b.oldest_open_offset(), None);
    }

    #[test]
    fn a_long_session_goes_in_batches_of_the_most_turns_a_request_carries() {
        let now = Instant::now();
        let mut b = SessionBatcher::new("m", 2);
        let texts = [
            "We moved to Austin.",
            "Nice!",
            "My sister Jo visits in June.",
            "Great.",
        ];
        let mut done = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let role = if i % 2 == 0 { "user" } else { "assistant" };
            done.extend(b.read(
                i as u64,
                &event(&format!("e{i}"), "ann", "s", role, text),
                now,
            ));
        }
        assert_eq!(
            done.iter().map(ids).collect::<Vec<_>>(),
            [vec!["e0", "e1"], vec!["e2", "e3"]]
        );
        assert_ne!(done[0].key, done[1].key);
    }

    #[test]
    fn an_erase_drops_what_is_open_of_the_user_and_a_forget_one_turn() {
        let now = Instant::now();
        let mut b = SessionBatcher::new("m", 40);
        b.read(
            0,
            &event("a1", "ann", "s", "user", "My therapist is Dr Lee."),
            now,
        );
        b.read(
            1,
            &event("a2", "ann", "s", "user", "I see her on Tuesdays."),
            now,
        );
        b.read(2, &event("b1", "bob", "s", "user", "I play chess."), now);
        let forget = engram_schemas::parse_event_value(
            &json!({"event_id": "f", "tenant": "t", "user": "ann", "ts": "2023-05-09T00:00:00Z",
                    "kind": "control", "action": "forget", "target_event_id": "a1"}),
            None,
        )
        .unwrap();
        b.read(3, &forget, now);
        b.read(4, &erase("bob"), now);
        let rest = b.finish_all();
        assert_eq!(rest.iter().map(ids).collect::<Vec<_>>(), [vec!["a2"]]);
        b.read(5, &event("a3", "ann", "s", "user", "Hello again"), now);
        b.read(6, &erase("ann"), now);
        assert!(b.finish_all().is_empty());
    }

    #[test]
    fn the_batch_key_follows_the_model_and_the_turns() {
        let now = Instant::now();
        let batch_of = |model: &str, ids: &[&str]| {
            let mut b = SessionBatcher::new(model, 40);
            for (i, id) in ids.iter().enumerate() {
                b.read(
                    i as u64,
                    &event(id, "ann", "s", "user", "I run on Sundays."),
                    now,
                );
            }
            b.finish_all().remove(0).key
        };
        assert_eq!(batch_of("m", &["a", "b"]), batch_of("m", &["a", "b"]));
        assert_ne!(batch_of("m", &["a", "b"]), batch_of("other", &["a", "b"]));
        assert_ne!(batch_of("m", &["a", "b"]), batch_of("m", &["a", "c"]));
        assert_eq!(batch_of("m", &["a"]).len(), 24);
    }
}
