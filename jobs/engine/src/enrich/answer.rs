//! What the model answered for one batch of turns, read strictly: the summary, the relations
//! and the stated preferences it found, each checked against the turns it was given, and turned
//! into the events the job publishes. What does not pass is rejected with the reason, item by
//! item, like bad input from a client.

use super::sessions::Batch;
use engram_schemas::{Body, Event, Fact, Header, Relation, Role, Summary};
use serde_json::{Map, Value};

/// Most relations and preferences taken from one answer; the rest are rejected.
pub const MAX_ITEMS: usize = 50;
/// Longest subject, relation, object, topic or preference, in characters.
pub const MAX_PART_CHARS: usize = 200;
/// Longest summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 4_000;

/// An item of the answer that was not taken: where (`relations[2].evidence`), why, and the
/// item as the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct RejectedItem {
    pub field: String,
    pub reason: String,
    pub original: String,
}

/// The events one answer yields, and what was rejected from it.
#[derive(Debug, Default)]
pub struct ReadAnswer {
    pub events: Vec<Event>,
    pub rejected: Vec<RejectedItem>,
}

/// The event ids the answer to `batch` publishes: `enrich-<batch key>-summary`, `-r<i>` and
/// `-p<i>` (the i-th relation and preference of the answer). The same turns asked of the same
/// model give the same ids, so a batch asked again after a restart publishes nothing new.
pub fn summary_event_id(batch: &Batch) -> String {
    format!("enrich-{}-summary", batch.key)
}

/// Reads the model's `answer` to `batch`. The whole answer is rejected (field `$`) when it holds
/// no JSON object; otherwise each item is taken or rejected on its own.
pub fn read_answer(batch: &Batch, answer: &str) -> ReadAnswer {
    let mut read = ReadAnswer::default();
    let object = match json_object(answer) {
        Ok(object) => object,
        Err(reason) => {
            read.rejected.push(RejectedItem {
                field: "$".into(),
                reason,
                original: answer.chars().take(4_000).collect(),
            });
            return read;
        }
    };
    match object.get("summary") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if !s.trim().is_empty() => {
            if s.chars().count() > MAX_SUMMARY_CHARS {
                read.reject(
                    "summary",
                    format!("longer than {MAX_SUMMARY_CHARS} characters"),
                    s,
                );
            } else {
                read.events.push(batch.event(
                    summary_event_id(batch),
                    batch.last_ts(),
                    Body::Summary(Summary {
                        content: s.trim().to_string(),
                        covers: batch.sorted_ids(),
                    }),
                ));
            }
        }
        Some(other) => read.reject("summary", "must be a non-empty string".into(), other),
    }
    for (i, item) in items(&mut read, &object, "relations")
        .into_iter()
        .enumerate()
    {
        let field = format!("relations[{i}]");
        match relation(batch, &item) {
            Ok(r) => {
                let ts = batch.latest_ts_of(&r.evidence);
                let id = format!("enrich-{}-r{i}", batch.key);
                read.events.push(batch.event(id, ts, Body::Relation(r)));
            }
            Err((part, reason)) => read.reject(&format!("{field}{part}"), reason, &item),
        }
    }
    for (i, item) in items(&mut read, &object, "preferences")
        .into_iter()
        .enumerate()
    {
        let field = format!("preferences[{i}]");
        match preference(batch, &item) {
            Ok((fact, evidence)) => {
                let ts = batch.latest_ts_of(&evidence);
                let id = format!("enrich-{}-p{i}", batch.key);
                read.events.push(batch.event(id, ts, Body::Fact(fact)));
            }
            Err((part, reason)) => read.reject(&format!("{field}{part}"), reason, &item),
        }
    }
    read
}

impl ReadAnswer {
    fn reject(&mut self, field: &str, reason: String, original: impl ToString) {
        self.rejected.push(RejectedItem {
            field: field.to_string(),
            reason,
            original: original.to_string().chars().take(4_000).collect(),
        });
    }
}

/// The JSON object in `answer`: the whole answer, or the part from its first `{` to its last
/// `}` (models wrap JSON in code fences and sentences).
fn json_object(answer: &str) -> Result<Map<String, Value>, String> {
    let trimmed = answer.trim();
    let whole = serde_json::from_str::<Value>(trimmed);
    let value = match whole {
        Ok(v) => v,
        Err(e) => {
            let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}')) else {
                return Err(format!("no JSON object in the answer ({e})"));
            };
            if end < start {
                return Err(format!("no JSON object in the answer ({e})"));
            }
            serde_json::from_str::<Value>(&trimmed[start..=end])
                .map_err(|e| format!("the answer's JSON does not parse: {e}"))?
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        other => Err(format!(
            "the answer is JSON but not an object: {}",
            kind_of(&other)
        )),
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The array at `key` (absent: none), at most [`MAX_ITEMS`] of it; the rest, and a value that
/// is not an array, rejected.
fn items(read: &mut ReadAnswer, object: &Map<String, Value>, key: &str) -> Vec<Value> {
    match object.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(list)) => {
            if list.len() > MAX_ITEMS {
                // one reject for the overflow: a runaway answer must not flood the reject log
                let extra = Value::Array(list[MAX_ITEMS..].iter().take(3).cloned().collect());
                read.reject(
                    &format!("{key}[{MAX_ITEMS}..]"),
                    format!(
                        "{} {key} past the {MAX_ITEMS} one answer may give",
                        list.len() - MAX_ITEMS
                    ),
                    extra,
                );
            }
            list.iter().take(MAX_ITEMS).cloned().collect()
        }
        Some(other) => {
            read.reject(key, "must be an array".into(), other);
            Vec::new()
        }
    }
}

type ItemError = (String, String);

/// A required short text of `item`: trimmed, non-empty, at most [`MAX_PART_CHARS`].
fn part(item: &Map<String, Value>, key: &str) -> Result<String, ItemError> {
    match item.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => {
            if s.chars().count() > MAX_PART_CHARS {
                Err((
                    format!(".{key}"),
                    format!("longer than {MAX_PART_CHARS} characters"),
                ))
            } else {
                Ok(s.trim().to_string())
            }
        }
        Some(Value::String(_)) | None | Some(Value::Null) => {
            Err((format!(".{key}"), "missing or empty".into()))
        }
        Some(_) => Err((format!(".{key}"), "must be a string".into())),
    }
}

/// The item's `evidence`: event ids of turns of the batch, at least one, sorted, once each;
/// with `user_only`, of turns the user wrote.
fn evidence(
    batch: &Batch,
    item: &Map<String, Value>,
    user_only: bool,
) -> Result<Vec<String>, ItemError> {
    let field = ".evidence".to_string();
    let Some(Value::Array(ids)) = item.get("evidence") else {
        return Err((
            field,
            "must be an array of the turn ids it was read from".into(),
        ));
    };
    let mut out = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let Some(id) = id.as_str() else {
            return Err((
                format!("{field}[{i}]"),
                "must be a turn id (a string)".into(),
            ));
        };
        let Some(turn) = batch.turn(id) else {
            return Err((
                format!("{field}[{i}]"),
                format!("{id:?} is not one of the turns the model was given"),
            ));
        };
        if user_only && turn.role != Role::User {
            return Err((
                format!("{field}[{i}]"),
                format!("{id:?} is not the user's turn: a preference is what the user said"),
            ));
        }
        out.push(id.to_string());
    }
    if out.is_empty() {
        return Err((field, "names no turn".into()));
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn as_object(item: &Value) -> Result<&Map<String, Value>, ItemError> {
    item.as_object().ok_or_else(|| {
        (
            String::new(),
            format!("must be an object, not {}", kind_of(item)),
        )
    })
}

fn relation(batch: &Batch, item: &Value) -> Result<Relation, ItemError> {
    let item = as_object(item)?;
    let time = match item.get("time") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::String(s)) if s.chars().count() <= 64 => Some(s.trim().to_string()),
        Some(Value::String(_)) => return Err((".time".into(), "longer than 64 characters".into())),
        Some(_) => return Err((".time".into(), "must be a string".into())),
    };
    Ok(Relation {
        subject: part(item, "subject")?,
        relation: part(item, "relation")?,
        object: part(item, "object")?,
        time,
        evidence: evidence(batch, item, false)?,
        confidence: None,
    })
}

/// A preference the user stated, as a fact about the user: attribute `prefers (<topic>)`, so
/// a later preference on the same topic supersedes it.
fn preference(batch: &Batch, item: &Value) -> Result<(Fact, Vec<String>), ItemError> {
    let item = as_object(item)?;
    let topic = part(item, "topic")?.to_lowercase();
    let preference = part(item, "preference")?;
    let evidence = evidence(batch, item, true)?;
    // the earliest turn that says it, by log order (ids do not sort by time)
    let earliest = batch
        .turns
        .iter()
        .find(|t| evidence.contains(&t.event_id))
        .map(|t| t.event_id.clone());
    let fact = Fact {
        subject: "user".into(),
        attribute: format!("prefers ({topic})"),
        value: preference,
        source_event_id: earliest,
        confidence: None,
    };
    Ok((fact, evidence))
}

impl Batch {
    /// An event of the batch's user and session.
    fn event(&self, event_id: String, ts: chrono::DateTime<chrono::Utc>, body: Body) -> Event {
        Event {
            header: Header {
                event_id,
                tenant: self.tenant.clone(),
                user: self.user.clone(),
                ts,
                session: self.session.clone(),
            },
            body,
        }
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
