//! Accepting events: validate, drop redeliveries of an accepted `event_id`, append the rest to
//! the durable log, and keep every rejected input with its reason.

use engram_connectors::{EventLog, LogError, RejectLog, Rejection};
use engram_schemas::{
    check_event_size, parse_event_value, Body, ControlAction, ControlScope, Event, EventError,
};
use serde::Serialize;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

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

/// One submitted item (`original_len`: its size as submitted) as an event, or why not: the
/// same checks for HTTP bodies and replayed files.
pub fn validate_item(item: &Value, original_len: usize) -> Result<Event, EventError> {
    check_event_size(original_len).and_then(|_| parse_event_value(item, None))
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

/// A JSON body (one event or an array of events) as validated events, each with its input text.
fn parse_body(body: &[u8]) -> (Vec<Result<Event, EventError>>, Vec<String>) {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(items)) => items
            .iter()
            .map(|v| {
                let text = v.to_string();
                (validate_item(v, text.len()), text)
            })
            .unzip(),
        Ok(v) => (
            vec![validate_item(&v, body.len())],
            vec![String::from_utf8_lossy(body).into_owned()],
        ),
        Err(e) => (
            vec![Err(EventError::new("$", format!("not valid JSON: {e}")))],
            vec![String::from_utf8_lossy(body).into_owned()],
        ),
    }
}

pub struct Ingestor {
    log: Arc<EventLog>,
    rejects: Arc<RejectLog>,
    /// `(tenant, event_id)` of every accepted event.
    seen: Mutex<HashSet<(String, String)>>,
    /// Users (and tenants) whose processing is restricted (`control` `restrict` events).
    restricted: Mutex<HashSet<Scope>>,
    /// Their events since, in order (canonical JSON), kept in `held.jsonl` next to the log
    /// until the restriction is lifted, then appended to the log.
    held: Mutex<Vec<(Scope, String)>>,
    held_path: std::path::PathBuf,
    /// The erase events the log held when it was opened (a crash may have interrupted them).
    erases_at_open: Vec<LoggedErase>,
}

/// An erase event as read from the log.
#[derive(Debug, Clone)]
pub struct LoggedErase {
    pub offset: u64,
    pub event_id: String,
    pub tenant: String,
    /// `None` for a whole tenant.
    pub user: Option<String>,
}

impl Ingestor {
    /// Rebuilds the set of accepted event ids from the log.
    pub fn open(log: Arc<EventLog>, rejects: Arc<RejectLog>) -> Result<Self, LogError> {
        let mut seen = HashSet::new();
        let mut restricted = HashSet::new();
        let mut erases_at_open = Vec::new();
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
                        if let Body::Control(c) = &e.body {
                            match c.action {
                                ControlAction::Restrict => {
                                    restricted.insert(scope_of(&e, c.scope));
                                }
                                ControlAction::Unrestrict => {
                                    restricted.remove(&scope_of(&e, c.scope));
                                }
                                ControlAction::Erase => erases_at_open.push(LoggedErase {
                                    offset: *offset,
                                    event_id: e.header.event_id.clone(),
                                    tenant: e.header.tenant.clone(),
                                    user: (c.scope == ControlScope::User)
                                        .then(|| e.header.user.clone()),
                                }),
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
        let held_path = log
            .path()
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join("held.jsonl");
        let mut held = Vec::new();
        if let Ok(text) = std::fs::read_to_string(&held_path) {
            for line in text.lines() {
                if let Ok(e) = Event::from_canonical_json(line.as_bytes()) {
                    seen.insert((e.header.tenant.clone(), e.header.event_id.clone()));
                    let scope = (e.header.tenant.clone(), e.header.user.clone());
                    held.push((scope, line.to_string()));
                }
            }
        }
        let ingestor = Ingestor {
            log,
            rejects,
            seen: Mutex::new(seen),
            restricted: Mutex::new(restricted),
            held: Mutex::new(held),
            held_path,
            erases_at_open,
        };
        // events held for a restriction lifted just before a crash go to the log now
        ingestor.ingest_with("held", Vec::new(), &[], true)?;
        Ok(ingestor)
    }

    /// The erase events the log held when it was opened, in log order.
    pub fn erases_at_open(&self) -> &[LoggedErase] {
        &self.erases_at_open
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

    fn write_held(&self, held: &[(Scope, String)]) -> Result<(), LogError> {
        let io = |source| LogError::Io {
            path: self.held_path.clone(),
            source,
        };
        let tmp = self.held_path.with_extension("jsonl.tmp");
        let mut text = String::new();
        for (_, line) in held {
            text.push_str(line);
            text.push('\n');
        }
        let mut f = std::fs::File::create(&tmp).map_err(io)?;
        std::io::Write::write_all(&mut f, text.as_bytes())
            .and_then(|_| f.sync_all())
            .map_err(io)?;
        std::fs::rename(&tmp, &self.held_path).map_err(io)
    }

    pub fn log(&self) -> &Arc<EventLog> {
        &self.log
    }

    pub fn rejects(&self) -> &Arc<RejectLog> {
        &self.rejects
    }

    /// Ingests a JSON body: one event or an array of events.
    pub fn ingest_body(&self, source: &str, body: &[u8]) -> Result<IngestReport, LogError> {
        let (parsed, originals) = parse_body(body);
        self.ingest_parsed(source, parsed, &originals)
    }

    /// Like [`Ingestor::ingest_body`] for a caller whose API key belongs to `tenant`: an event
    /// of any other tenant is rejected (field `tenant`), the others are ingested.
    pub fn ingest_body_as(
        &self,
        source: &str,
        body: &[u8],
        tenant: &str,
    ) -> Result<IngestReport, LogError> {
        let (parsed, originals) = parse_body(body);
        let parsed = parsed
            .into_iter()
            .map(|p| match p {
                Ok(e) if e.header.tenant != tenant => Err(EventError::new(
                    "tenant",
                    format!(
                        "the API key belongs to tenant {tenant:?}; it cannot write events of tenant {:?}",
                        e.header.tenant
                    ),
                )),
                other => other,
            })
            .collect();
        self.ingest_parsed(source, parsed, &originals)
    }

    /// Ingests already-parsed events; `originals[i]` is the input text of `parsed[i]`.
    pub fn ingest_parsed(
        &self,
        source: &str,
        parsed: Vec<Result<Event, EventError>>,
        originals: &[String],
    ) -> Result<IngestReport, LogError> {
        self.ingest_with(source, parsed, originals, false)
    }

    /// [`Ingestor::ingest_parsed`]; with `release_lifted`, held events whose restriction was
    /// lifted (a crash came between the lift and rewriting the held file) go to the log first.
    fn ingest_with(
        &self,
        source: &str,
        parsed: Vec<Result<Event, EventError>>,
        originals: &[String],
        release_lifted: bool,
    ) -> Result<IngestReport, LogError> {
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
                       records: &mut Vec<String>| {
            let mut released = 0;
            held.retain(|((t, u), line)| {
                let free = !is_restricted(restricted, t, u);
                if free {
                    records.push(line.clone());
                    released += 1;
                }
                !free
            });
            released
        };
        let mut released = if release_lifted {
            release(&mut held, &restricted, &mut records)
        } else {
            0
        };
        for (index, p) in parsed.into_iter().enumerate() {
            match p {
                Ok(event) => {
                    let key = (event.header.tenant.clone(), event.header.event_id.clone());
                    if seen.contains(&key) || !batch_keys.insert(key) {
                        report.duplicates += 1;
                        continue;
                    }
                    let (tenant, user) = (&event.header.tenant, &event.header.user);
                    match &event.body {
                        Body::Control(c) if c.governs_processing() => {
                            records.push(event.to_json());
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
                                ControlAction::SetTeam => unreachable!("a data event"),
                            }
                        }
                        _ if is_restricted(&restricted, tenant, user) => {
                            held.push(((tenant.clone(), user.clone()), event.to_json()));
                            held_changed = true;
                            report.held += 1;
                        }
                        _ => records.push(event.to_json()),
                    }
                }
                Err(error) => {
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
        self.rejects.record(&rejections)?;
        // The log first: a crash before the held file is rewritten leaves released events in
        // both, and the next start drops the held copies as duplicates.
        if !records.is_empty() {
            let first = self.log.append(&records)?;
            // released events were accepted (and counted) when they were held
            report.accepted = records.len() - released;
            report.first_offset = Some(first);
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
    use serde_json::json;

    #[test]
    fn an_oversized_event_inside_an_array_is_rejected_and_its_neighbour_kept() {
        let dir = tempfile::tempdir().unwrap();
        let log = Arc::new(EventLog::open(dir.path()).unwrap());
        let rejects = Arc::new(RejectLog::open(dir.path()).unwrap());
        let ingestor = Ingestor::open(log.clone(), rejects).unwrap();
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
}
