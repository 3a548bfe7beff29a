//! Answers explained after the fact: the provenance of every answer engram built (`/v1/chat`,
//! the OpenAI-compatible route) is stored in the answer's own interaction event
//! (`meta.provenance`, `meta.explanation`), so it lives exactly as long as the answer does:
//! kept in the log and the events table, gone with an erase of the user or a forget of the
//! message.

use super::gdpr::GdprError;
use crate::engine::Engine;
use engram_schemas::{Body, Event, Role};
use serde::Serialize;
use serde_json::Value;

/// An answer engram built, as stored.
#[derive(Debug, Clone, Serialize)]
pub struct StoredAnswer {
    pub message_id: String,
    pub session: Option<String>,
    pub ts: chrono::DateTime<chrono::Utc>,
    pub skill_id: Option<String>,
    /// The prompt's provenance when the answer was built
    /// (as `prompt::stored_provenance` keeps it).
    pub provenance: Value,
    /// One sentence on why it was built that way (`prompt::explain`).
    pub explanation: String,
}

/// The answer in `event` when it is the assistant message `message_id` of `(tenant, user)`
/// and carries a stored provenance.
fn answer_of(event: Event, tenant: &str, user: &str, message_id: &str) -> Option<StoredAnswer> {
    let h = event.header;
    if h.tenant != tenant || h.user != user || h.event_id != message_id {
        return None;
    }
    let Body::Interaction(i) = event.body else {
        return None;
    };
    if i.role != Role::Assistant {
        return None;
    }
    let mut meta = i.meta?;
    let provenance = meta.remove("provenance").filter(Value::is_object)?;
    let explanation = meta
        .remove("explanation")
        .and_then(|e| e.as_str().map(str::to_string))?;
    Some(StoredAnswer {
        message_id: h.event_id,
        session: h.session,
        ts: h.ts,
        skill_id: i.skill_id,
        provenance,
        explanation,
    })
}

impl Engine {
    /// The stored provenance of the answer `message_id` that engram built for `(tenant,
    /// user)`, read from its one record in the log. `None` when the user has no such answer:
    /// another user's or tenant's message, a message engram did not build, or one erased or
    /// forgotten.
    ///
    /// Its episode row in Lance (by its node id, through the user index) gives the record's
    /// offset; an answer not in Lance yet can only be among the user's records after the
    /// episode store's watermark, so no lookup reads the user's whole history.
    pub async fn answer_provenance(
        &self,
        tenant: &str,
        user: &str,
        message_id: &str,
    ) -> Result<Option<StoredAnswer>, GdprError> {
        // the watermark first: the store publishes rows before raising it, so a row at or
        // below it is in the snapshot searched after
        let stored_up_to = self.store.watermark();
        let id = engram_schemas::node_id(tenant, message_id).to_string();
        let rows = self.store.episodes_by_id(tenant, user, &[id]).await?;
        let within = match rows.iter().map(|r| r.log_offset).max() {
            Some(at) => at..at + 1,
            None => stored_up_to.map_or(0, |w| w + 1)..u64::MAX,
        };
        // the newest record of that id: a redacted stand-in (after a forget) is no answer
        let newest = self
            .user_events_in(tenant, user, within)
            .await?
            .into_iter()
            .rev()
            .find(|(_, event)| event.header.event_id == message_id);
        let found = newest.and_then(|(_, event)| answer_of(event, tenant, user, message_id));
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(v: Value) -> Event {
        serde_json::from_value(v).unwrap()
    }

    fn answer(meta: Value) -> Value {
        json!({"kind": "interaction", "event_id": "x.a", "tenant": "t", "user": "u",
               "session": "s", "ts": "2026-10-15T09:30:00Z", "role": "assistant",
               "content": "Sure.", "skill_id": "concise", "meta": meta})
    }

    #[test]
    fn an_answer_with_stored_provenance_is_found_by_its_id_for_its_user_only() {
        let meta = json!({"provenance": {"preferences": []}, "explanation": "Answered."});
        let found = answer_of(event(answer(meta.clone())), "t", "u", "x.a").unwrap();
        assert_eq!(found.session.as_deref(), Some("s"));
        assert_eq!(found.skill_id.as_deref(), Some("concise"));
        assert_eq!(found.provenance, json!({"preferences": []}));
        assert_eq!(found.explanation, "Answered.");
        assert!(answer_of(event(answer(meta.clone())), "t", "v", "x.a").is_none());
        assert!(answer_of(event(answer(meta.clone())), "t2", "u", "x.a").is_none());
        assert!(answer_of(event(answer(meta)), "t", "u", "x.q").is_none());
    }

    #[test]
    fn a_message_without_provenance_or_from_the_user_is_no_answer() {
        assert!(answer_of(event(answer(json!({"prompt_tokens": 3}))), "t", "u", "x.a").is_none());
        let mut from_user = answer(json!({"provenance": {}, "explanation": "Answered."}));
        from_user["role"] = json!("user");
        assert!(answer_of(event(from_user), "t", "u", "x.a").is_none());
    }
}
