//! Turning untrusted bytes into [`Event`]s, with errors that name the field.

use crate::event::*;
use chrono::{DateTime, Datelike, Utc};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The largest event accepted, in bytes of JSON.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;
/// The longest message content accepted, in bytes.
pub const MAX_CONTENT_BYTES: usize = 64 * 1024;
const MAX_ID_LEN: usize = 128;
const MAX_FREE_TEXT_CHARS: usize = 300;

/// Why an event was rejected. `field` is a JSON path (`ts`, `signals.voice.confidence`), or
/// `$` for the event as a whole.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize)]
#[error("{field}: {reason}")]
pub struct EventError {
    pub field: String,
    pub reason: String,
}

impl EventError {
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        EventError {
            field: field.into(),
            reason: reason.into(),
        }
    }
}

type Res<T> = Result<T, EventError>;

/// Parses one event from JSON bytes.
///
/// `kind_hint` is the kind implied by where the event came from (the Kafka topic); an explicit
/// `kind` field must agree with it. Without either, the kind is inferred from the fields present
/// (`role` → interaction, `action` → control, `target_event_id` → correction,
/// `reward` → feedback, `attribute` → fact). Unknown fields are ignored.
pub fn parse_event(bytes: &[u8], kind_hint: Option<EventKind>) -> Res<Event> {
    check_event_size(bytes.len())?;
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| EventError::new("$", format!("not valid JSON: {e}")))?;
    parse_event_value(&value, kind_hint)
}

/// Refuses an event whose JSON text is longer than [`MAX_EVENT_BYTES`]. [`parse_event`] applies
/// it; callers that parse a batch themselves apply it to each item's text.
pub fn check_event_size(len: usize) -> Res<()> {
    if len > MAX_EVENT_BYTES {
        return Err(EventError::new(
            "$",
            format!("event is {len} bytes, more than the limit of {MAX_EVENT_BYTES}"),
        ));
    }
    Ok(())
}

/// Like [`parse_event`], for an already-parsed JSON value (no size check).
pub fn parse_event_value(value: &Value, kind_hint: Option<EventKind>) -> Res<Event> {
    let obj = value
        .as_object()
        .ok_or_else(|| EventError::new("$", "an event must be a JSON object"))?;
    let kind = event_kind(obj, kind_hint)?;
    let user_optional =
        kind == EventKind::Control && obj.get("scope").and_then(Value::as_str) == Some("tenant");
    let header = Header {
        event_id: id_field(obj, "event_id", MAX_ID_LEN)?,
        tenant: name_field(obj, "tenant")?,
        user: if user_optional {
            match obj.get("user") {
                // "" is how engram writes a tenant-wide control's user: accept it back
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) if s.is_empty() => String::new(),
                Some(_) => name_field(obj, "user")?,
            }
        } else {
            name_field(obj, "user")?
        },
        ts: ts_field(obj, "ts")?,
        session: opt(obj, "session", |v| id_value("session", v, 256))?,
    };
    let body = match kind {
        EventKind::Interaction => Body::Interaction(interaction(obj)?),
        EventKind::Correction => Body::Correction(correction(obj)?),
        EventKind::Feedback => Body::Feedback(feedback(obj)?),
        EventKind::Fact => Body::Fact(fact(obj)?),
        EventKind::Summary => Body::Summary(summary(obj)?),
        EventKind::Relation => Body::Relation(relation(obj)?),
        EventKind::Control => Body::Control(control(obj)?),
    };
    Ok(Event { header, body })
}

fn event_kind(obj: &Map<String, Value>, hint: Option<EventKind>) -> Res<EventKind> {
    let explicit = match obj.get("kind") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(EventKind::parse(s).ok_or_else(|| {
            EventError::new(
                "kind",
                format!("unknown kind {s:?}; expected interaction, correction, feedback, fact, summary, relation or control"),
            )
        })?),
        Some(_) => return Err(EventError::new("kind", "must be a string")),
    };
    match (explicit, hint) {
        (Some(k), Some(h)) if k.topic_kind() != h => Err(EventError::new(
            "kind",
            format!(
                "is {:?} but this input only takes {:?} events",
                k.as_str(),
                h.as_str()
            ),
        )),
        (Some(k), _) | (None, Some(k)) => Ok(k),
        (None, None) => {
            let inferred = [
                ("role", EventKind::Interaction),
                // before `target_event_id`: a forget control names one too
                ("action", EventKind::Control),
                ("target_event_id", EventKind::Correction),
                ("reward", EventKind::Feedback),
                ("attribute", EventKind::Fact),
                ("covers", EventKind::Summary),
                ("relation", EventKind::Relation),
            ]
            .into_iter()
            .find(|(f, _)| obj.contains_key(*f))
            .map(|(_, k)| k);
            inferred.ok_or_else(|| {
                EventError::new(
                    "kind",
                    "missing, and the event's fields do not say which kind it is",
                )
            })
        }
    }
}

fn interaction(obj: &Map<String, Value>) -> Res<Interaction> {
    let role = req_str(obj, "role")?;
    let role = Role::parse(role).ok_or_else(|| {
        EventError::new(
            "role",
            format!("{role:?} is not one of user, assistant, tool"),
        )
    })?;
    let content = text_field(obj, "content", MAX_CONTENT_BYTES)?;
    if content.trim().is_empty() {
        return Err(EventError::new("content", "must not be empty"));
    }
    Ok(Interaction {
        role,
        content,
        turn: opt(obj, "turn", |v| {
            v.as_u64()
                .filter(|n| *n <= u32::MAX as u64)
                .map(|n| n as u32)
                .ok_or_else(|| EventError::new("turn", "must be a non-negative integer"))
        })?,
        importance: opt(obj, "importance", |v| unit_value("importance", v))?,
        skill_id: opt(obj, "skill_id", |v| id_value("skill_id", v, MAX_ID_LEN))?,
        meta: opt(obj, "meta", |v| {
            v.as_object()
                .cloned()
                .ok_or_else(|| EventError::new("meta", "must be an object"))
        })?,
    })
}

fn correction(obj: &Map<String, Value>) -> Res<Correction> {
    let ct = req_str(obj, "correction_type")?;
    let correction_type = CorrectionType::parse(ct).ok_or_else(|| {
        EventError::new(
            "correction_type",
            format!("{ct:?} is not one of CONTENT, STYLE, FORMAT, TONE, LENGTH, OTHER"),
        )
    })?;
    let signals = opt(obj, "signals", |v| {
        let m = v.as_object().ok_or_else(|| {
            EventError::new(
                "signals",
                "must be an object of modality → {confidence, agreement}",
            )
        })?;
        let mut out = BTreeMap::new();
        for (modality, s) in m {
            let path = format!("signals.{modality}");
            let so = s.as_object().ok_or_else(|| {
                EventError::new(&path, "must be an object {confidence, agreement}")
            })?;
            let get = |f: &str| {
                let p = format!("{path}.{f}");
                so.get(f)
                    .ok_or_else(|| EventError::new(&p, "is required"))
                    .and_then(|v| unit_value(&p, v))
            };
            out.insert(
                modality.clone(),
                Signal {
                    confidence: get("confidence")?,
                    agreement: get("agreement")?,
                },
            );
        }
        Ok(out)
    })?;
    Ok(Correction {
        target_event_id: id_field(obj, "target_event_id", MAX_ID_LEN)?,
        original: text_field(obj, "original", MAX_CONTENT_BYTES)?,
        corrected: opt(obj, "corrected", |v| {
            text_value("corrected", v, MAX_CONTENT_BYTES)
        })?,
        correction_type,
        expected_behavior: opt(obj, "expected_behavior", |v| {
            text_value("expected_behavior", v, MAX_CONTENT_BYTES)
        })?,
        context: opt(obj, "context", |v| text_value("context", v, 1024))?,
        domain: opt(obj, "domain", |v| text_value("domain", v, 1024))?,
        confidence: opt(obj, "confidence", |v| unit_value("confidence", v))?,
        signals,
    })
}

fn feedback(obj: &Map<String, Value>) -> Res<Feedback> {
    let reward = obj
        .get("reward")
        .ok_or_else(|| EventError::new("reward", "is required"))?;
    let reward = match reward.as_i64() {
        Some(r @ -1..=1) => r as i8,
        _ => return Err(EventError::new("reward", "must be -1, 0 or 1")),
    };
    let context = opt(obj, "context", |v| {
        let c = v.as_object().ok_or_else(|| {
            EventError::new(
                "context",
                "must be an object {intent, sentiment, time_of_day}",
            )
        })?;
        let field = |f: &str| -> Res<String> {
            match c.get(f) {
                None | Some(Value::Null) => Ok(String::new()),
                Some(v) => text_value(&format!("context.{f}"), v, 256),
            }
        };
        Ok(FeedbackContext {
            intent: field("intent")?,
            sentiment: field("sentiment")?,
            time_of_day: field("time_of_day")?,
        })
    })?
    .unwrap_or_default();
    let free_text = opt(obj, "free_text", |v| {
        let s = text_value("free_text", v, MAX_CONTENT_BYTES)?;
        if s.chars().count() > MAX_FREE_TEXT_CHARS {
            return Err(EventError::new(
                "free_text",
                format!("must be at most {MAX_FREE_TEXT_CHARS} characters"),
            ));
        }
        Ok(s)
    })?;
    Ok(Feedback {
        message_id: id_field(obj, "message_id", MAX_ID_LEN)?,
        skill_id: id_field(obj, "skill_id", MAX_ID_LEN)?,
        reward,
        context,
        reason: opt(obj, "reason", |v| text_value("reason", v, 1024))?,
        free_text,
    })
}

fn fact(obj: &Map<String, Value>) -> Res<Fact> {
    Ok(Fact {
        subject: text_field(obj, "subject", 1024)?,
        attribute: text_field(obj, "attribute", 1024)?,
        value: text_field(obj, "value", MAX_CONTENT_BYTES)?,
        source_event_id: opt(obj, "source_event_id", |v| {
            id_value("source_event_id", v, MAX_ID_LEN)
        })?,
        confidence: opt(obj, "confidence", |v| unit_value("confidence", v))?,
    })
}

/// The most episodes one summary may cover.
pub const MAX_SUMMARY_COVERS: usize = 10_000;

fn summary(obj: &Map<String, Value>) -> Res<Summary> {
    let content = text_field(obj, "content", MAX_CONTENT_BYTES)?;
    if content.trim().is_empty() {
        return Err(EventError::new("content", "must not be empty"));
    }
    let covers = event_ids(obj, "covers", MAX_SUMMARY_COVERS, "it summarises")?;
    Ok(Summary { content, covers })
}

/// The most episodes one relation may name as its evidence.
pub const MAX_RELATION_EVIDENCE: usize = 100;

fn relation(obj: &Map<String, Value>) -> Res<Relation> {
    let part = |field: &str| {
        let text = text_field(obj, field, 1024)?;
        if text.trim().is_empty() {
            return Err(EventError::new(field, "must not be empty"));
        }
        Ok(text)
    };
    Ok(Relation {
        subject: part("subject")?,
        relation: part("relation")?,
        object: part("object")?,
        time: opt(obj, "time", |v| text_value("time", v, 256))?,
        evidence: event_ids(obj, "evidence", MAX_RELATION_EVIDENCE, "it was read from")?,
        confidence: opt(obj, "confidence", |v| unit_value("confidence", v))?,
    })
}

/// The optional array of event ids at `field` (at most `max`), sorted, once each.
fn event_ids(obj: &Map<String, Value>, field: &str, max: usize, what: &str) -> Res<Vec<String>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(ids)) if ids.len() > max => Err(EventError::new(
            field,
            format!("names {} events, more than the limit of {max}", ids.len()),
        )),
        Some(Value::Array(ids)) => {
            let mut ids = ids
                .iter()
                .enumerate()
                .map(|(i, v)| id_value(&format!("{field}[{i}]"), v, MAX_ID_LEN))
                .collect::<Res<Vec<String>>>()?;
            ids.sort_unstable();
            ids.dedup();
            Ok(ids)
        }
        Some(_) => Err(EventError::new(
            field,
            format!("must be an array of the event ids {what}"),
        )),
    }
}

fn control(obj: &Map<String, Value>) -> Res<Control> {
    let action = match req_str(obj, "action")? {
        "erase" => ControlAction::Erase,
        "restrict" => ControlAction::Restrict,
        "unrestrict" => ControlAction::Unrestrict,
        "set_team" => ControlAction::SetTeam,
        "forget" => ControlAction::Forget,
        other => {
            return Err(EventError::new(
                "action",
                format!("{other:?} is not one of erase, restrict, unrestrict, set_team, forget"),
            ))
        }
    };
    let scope = match obj.get("scope").and_then(Value::as_str) {
        None => ControlScope::User,
        Some("user") => ControlScope::User,
        Some("tenant") => ControlScope::Tenant,
        Some(other) => {
            return Err(EventError::new(
                "scope",
                format!("{other:?} is not one of user, tenant"),
            ))
        }
    };
    let team = match obj.get("team") {
        None | Some(Value::Null) => None,
        Some(Value::String(team)) if action == ControlAction::SetTeam => {
            validate_name(team).map_err(|reason| EventError::new("team", reason))?;
            Some(team.clone())
        }
        Some(Value::String(_)) => {
            return Err(EventError::new(
                "team",
                "only a set_team control names a team",
            ))
        }
        Some(_) => return Err(EventError::new("team", "must be a string")),
    };
    if action == ControlAction::SetTeam && scope == ControlScope::Tenant {
        return Err(EventError::new(
            "scope",
            "set_team puts one user in a team: its scope is user",
        ));
    }
    let target_event_id = match (action, obj.get("target_event_id")) {
        (ControlAction::Forget, _) => Some(id_field(obj, "target_event_id", MAX_ID_LEN)?),
        (_, None | Some(Value::Null)) => None,
        (_, Some(_)) => {
            return Err(EventError::new(
                "target_event_id",
                "only a forget control names a target event",
            ))
        }
    };
    if action == ControlAction::Forget && scope == ControlScope::Tenant {
        return Err(EventError::new(
            "scope",
            "forget removes one event of one user: its scope is user",
        ));
    }
    Ok(Control {
        action,
        scope,
        team,
        target_event_id,
    })
}

// --- field helpers -------------------------------------------------------------------------

fn opt<T>(
    obj: &Map<String, Value>,
    field: &str,
    f: impl FnOnce(&Value) -> Res<T>,
) -> Res<Option<T>> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => f(v).map(Some),
    }
}

fn req_str<'a>(obj: &'a Map<String, Value>, field: &str) -> Res<&'a str> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(EventError::new(field, "is required")),
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(EventError::new(field, "must be a string")),
    }
}

fn text_field(obj: &Map<String, Value>, field: &str, max: usize) -> Res<String> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(EventError::new(field, "is required")),
        Some(v) => text_value(field, v, max),
    }
}

fn text_value(field: &str, v: &Value, max: usize) -> Res<String> {
    let s = v
        .as_str()
        .ok_or_else(|| EventError::new(field, "must be a string"))?;
    if s.len() > max {
        return Err(EventError::new(
            field,
            format!("is {} bytes, more than the limit of {max}", s.len()),
        ));
    }
    Ok(s.to_string())
}

fn id_field(obj: &Map<String, Value>, field: &str, max: usize) -> Res<String> {
    match obj.get(field) {
        None | Some(Value::Null) => Err(EventError::new(field, "is required")),
        Some(v) => id_value(field, v, max),
    }
}

/// Identifiers: printable, no quotes, backslashes or control characters, 1..=max bytes.
fn id_value(field: &str, v: &Value, max: usize) -> Res<String> {
    let s = match v {
        Value::String(s) => s.clone(),
        // Numeric ids are common in front ends; keep them as their decimal text.
        Value::Number(n) if n.is_u64() || n.is_i64() => n.to_string(),
        _ => return Err(EventError::new(field, "must be a string")),
    };
    if s.is_empty() || s.len() > max {
        return Err(EventError::new(
            field,
            format!("must be 1 to {max} bytes long"),
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| c.is_control() || matches!(c, '"' | '\'' | '\\' | '`'))
    {
        return Err(EventError::new(field, format!("must not contain {c:?}")));
    }
    Ok(s)
}

/// Tenant and user names: `[A-Za-z0-9_.:@+-]`, 1..=128 bytes, since they key partitions,
/// folders and filters.
fn name_field(obj: &Map<String, Value>, field: &str) -> Res<String> {
    let s = req_str(obj, field)?;
    validate_name(s).map_err(|reason| EventError::new(field, reason))?;
    Ok(s.to_string())
}

/// Checks a tenant or user name; the error says why it is not one.
pub fn validate_name(s: &str) -> Result<(), String> {
    if s.is_empty() || s.len() > MAX_ID_LEN {
        return Err(format!("must be 1 to {MAX_ID_LEN} bytes long"));
    }
    if let Some(c) = s
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '@' | '+' | '-')))
    {
        return Err(format!(
            "must contain only letters, digits and _ . : @ + - (found {c:?})"
        ));
    }
    Ok(())
}

fn ts_field(obj: &Map<String, Value>, field: &str) -> Res<DateTime<Utc>> {
    let s = req_str(obj, field)?;
    let t = DateTime::parse_from_rfc3339(s)
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| EventError::new(field, format!("{s:?} is not an RFC 3339 timestamp: {e}")))?;
    // an offset can carry a time past year 9999 (or before 0000) in UTC, which RFC 3339, and so
    // the canonical JSON that engram writes, cannot express
    if !(0..=9999).contains(&t.year()) {
        return Err(EventError::new(
            field,
            format!("{s:?} is outside the years 0000 to 9999 in UTC"),
        ));
    }
    Ok(t)
}

fn unit_value(field: &str, v: &Value) -> Res<f32> {
    match v.as_f64() {
        Some(x) if (0.0..=1.0).contains(&x) => Ok(x as f32),
        Some(x) => Err(EventError::new(field, format!("{x} is outside 0..=1"))),
        None => Err(EventError::new(field, "must be a number in 0..=1")),
    }
}
