//! Editing one memory of a user (GDPR Art. 16 and 17 for a single item): forgetting one event
//! with everything derived from it, and rectifying one fact.
//!
//! A forget is an erase of one event: a `control` event (`action: forget`,
//! `target_event_id`) is appended to the log, every worker retracts that event's records from
//! the views at its offset ([`crate::ingest::log_source`]), and the erasure task completes it
//! ([`Engine::complete_forget`]): the event's rows go from every Lance table (old versions
//! included), its record of the events table and of the log is replaced by its redacted
//! stand-in, and a receipt is kept with the erase receipts. A rectification is a `fact` event
//! of the user with the new value: the views supersede the old value with it.

use super::gdpr::{ErasureReceipt, GdprError, VIEWS_WAIT};
use crate::engine::Engine;
use engram_dataflows::InputRecord;
use engram_schemas::{node_id, Body, Event, Redacted};
use serde::Serialize;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// How long a rectification waits for the views to show the new value before answering.
const RECTIFY_VIEWS_WAIT: Duration = Duration::from_secs(30);

/// One event of a user that a memory id names.
#[derive(Debug, Clone, Serialize)]
pub struct FoundMemory {
    /// The event to forget: the memory's own event (an interaction, a correction, a fact
    /// event, a summary, a vote), or the message a fact was learned from.
    pub event_id: String,
    /// Its kind (`interaction`, `correction`, `fact`, …).
    pub kind: &'static str,
    #[serde(skip)]
    pub offset: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum MemoryEditError {
    #[error("user {user:?} has no memory {id:?}")]
    NotFound { user: String, id: String },
    #[error("fact {id:?} is no longer current (superseded by {superseded_by}); rectify the current value")]
    NotCurrent { id: String, superseded_by: String },
    #[error("{value:?} is the fact's current value already")]
    SameValue { value: String },
    #[error("{reason}")]
    Invalid { field: String, reason: String },
    #[error("the rectification at offset {0} is stored, and the views did not show it within {RECTIFY_VIEWS_WAIT:?}")]
    ViewsLate(u64),
    #[error(transparent)]
    Gdpr(#[from] GdprError),
}

/// A fact's new value, as stored.
#[derive(Debug, Clone, Serialize)]
pub struct Rectification {
    /// The new version's fact id.
    pub fact_id: String,
    /// The fact id of the value it supersedes.
    pub supersedes: String,
    pub subject: String,
    pub attribute: String,
    pub value: String,
    /// The `fact` event that carries it (`rectify-…`), written as the user's own statement.
    pub event_id: String,
    pub offset: u64,
}

/// Whether `event` (at log offset `offset`, of the tenant) is the memory `id`: by its event id,
/// its node id (the id of the episode, summary or fact it makes), or the id of a fact it
/// states.
fn names_memory(event: &Event, offset: u64, id: &str) -> bool {
    let h = &event.header;
    if h.event_id == id || node_id(&h.tenant, &h.event_id).to_string() == id {
        return true;
    }
    matches!(event.body, Body::Interaction(_))
        && InputRecord::from_event(event, offset)
            .iter()
            .any(|r| matches!(r, InputRecord::Fact(_, a) if a.fact_id == id))
}

impl Engine {
    /// The event of `(tenant, user)` that the memory `id` names (see [`names_memory`]), read
    /// from the log through the index of the user's offsets (what it reads is proportional to
    /// the user's data, as for an erase). `None` when no event of that user has it: another
    /// user's or tenant's memory is not found either. Control events are no memories.
    pub async fn find_memory(
        &self,
        tenant: &str,
        user: &str,
        id: &str,
    ) -> Result<Option<FoundMemory>, GdprError> {
        let found = self
            .user_events(tenant, user)
            .await?
            .into_iter()
            .find(|(o, event)| {
                !matches!(event.body, Body::Control(_)) && names_memory(event, *o, id)
            })
            .map(|(offset, event)| FoundMemory {
                kind: event.kind().as_str(),
                event_id: event.header.event_id,
                offset,
            });
        Ok(found)
    }

    /// Every event of `(tenant, user)` in the log with its offset, oldest first, read through
    /// the index of the user's offsets (what it reads is proportional to the user's data, as
    /// for an erase); records that do not parse are left out.
    pub(crate) async fn user_events(
        &self,
        tenant: &str,
        user: &str,
    ) -> Result<Vec<(u64, Event)>, GdprError> {
        self.user_events_in(tenant, user, 0..u64::MAX).await
    }

    /// [`Engine::user_events`] at offsets in `within` only: only those records are read.
    pub(crate) async fn user_events_in(
        &self,
        tenant: &str,
        user: &str,
        within: std::ops::Range<u64>,
    ) -> Result<Vec<(u64, Event)>, GdprError> {
        let log = self.ingestor.log().clone();
        let index = self.ingestor.user_offsets().clone();
        let (tenant, user) = (tenant.to_string(), user.to_string());
        let events = tokio::task::spawn_blocking(move || {
            let end = within.end.min(log.end_offset());
            let offsets = index.user_offsets_in(&tenant, &user, within.start..end);
            let records = index.read(&log, &offsets)?;
            Ok::<_, engram_connectors::LogError>(
                records
                    .into_iter()
                    // a span read may bring records between the offsets asked for
                    .filter(|(o, _)| offsets.binary_search(o).is_ok())
                    .filter_map(|(o, bytes)| Some((o, Event::from_canonical_json(&bytes).ok()?)))
                    .filter(|(_, e)| e.header.tenant == tenant && e.header.user == user)
                    .collect(),
            )
        })
        .await
        .expect("user events task")?;
        Ok(events)
    }

    /// Forgets the event `target_event_id` of `(tenant, user)` everywhere, as an erase does
    /// for all of a user's events, and answers with the receipt once done.
    pub async fn forget(
        &self,
        tenant: &str,
        user: &str,
        target_event_id: &str,
    ) -> Result<ErasureReceipt, GdprError> {
        let event = json!({
            "kind": "control", "event_id": format!("forget-{}", uuid::Uuid::new_v4()),
            "tenant": tenant, "user": user, "ts": chrono::Utc::now(), "action": "forget",
            "scope": "user", "target_event_id": target_event_id,
        });
        let report = self.ingest_one("forget", &event).await?;
        let offset = match (report.first_offset, report.rejected.first()) {
            (Some(o), None) => o,
            (_, Some(r)) => return Err(GdprError::Rejected(r.error.to_string())),
            (None, None) => return Err(GdprError::Rejected("not appended".into())),
        };
        self.erasure_outcome(offset).await
    }

    async fn ingest_one(
        &self,
        source: &'static str,
        event: &Value,
    ) -> Result<crate::ingest::IngestReport, GdprError> {
        let ingestor = self.ingestor.clone();
        let bytes = serde_json::to_vec(event).expect("JSON");
        Ok(
            tokio::task::spawn_blocking(move || ingestor.ingest_body(source, &bytes))
                .await
                .expect("ingest task")?,
        )
    }

    /// Everything of a forget after its control event (at `offset`) is in the log; idempotent
    /// (run again after a crash, it finds what is left). The target's rows go from the Lance
    /// tables first, then its events-table record, then its log record (the last step: while
    /// the record is readable, a rerun finds the target again).
    pub(crate) async fn complete_forget(
        &self,
        event_id: &str,
        tenant: &str,
        user: &str,
        target: &str,
        offset: u64,
    ) -> Result<ErasureReceipt, GdprError> {
        let started = Instant::now();
        tracing::info!(tenant, user, offset, target, "forgetting");
        if !self.wait_views_past(offset, VIEWS_WAIT).await {
            return Err(GdprError::ViewsLate(offset));
        }
        let mut receipt = ErasureReceipt {
            erase_event_id: event_id.to_string(),
            offset,
            tenant: tenant.to_string(),
            user: Some(user.to_string()),
            target_event_id: Some(target.to_string()),
            ..Default::default()
        };
        let log = self.ingestor.log().clone();
        let index = self.ingestor.user_offsets().clone();
        let (t, u, id) = (tenant.to_string(), user.to_string(), target.to_string());
        // the target, and what was derived from it: summaries that cover it, relations it is
        // evidence for, facts learned from it (an enrichment job's, or a client's)
        let found = tokio::task::spawn_blocking(move || {
            let offsets = index.offsets(&t, Some(&u), offset);
            let records = index.read(&log, &offsets)?;
            let mut target_at = None;
            let mut derived = Vec::new();
            for (o, bytes) in records {
                let Ok(e) = Event::from_canonical_json(&bytes) else {
                    continue;
                };
                if e.header.tenant != t || e.header.user != u || e.governs_processing() {
                    continue;
                }
                if e.header.event_id == id {
                    target_at = Some(o);
                } else if crate::ingest::derived_from(&e, &id) {
                    derived.push(o);
                }
            }
            Ok::<_, engram_connectors::LogError>(target_at.map(|at| (at, derived)))
        })
        .await
        .expect("find task")?;
        if let Some((at, derived)) = found {
            let all: Vec<u64> = std::iter::once(at).chain(derived).collect();
            for &at in &all {
                receipt.episodes_erased += self.store.forget(tenant, user, at).await?;
                if let Some(p) = &self.recall.passages {
                    receipt.passages_erased += p.forget(tenant, user, at).await?;
                }
                if let Some(f) = &self.recall.facts {
                    receipt.facts_erased += f.forget(tenant, user, at).await?;
                }
                if let Some(s) = &self.recall.summaries {
                    receipt.summaries_erased += s.forget(tenant, user, at).await?;
                }
            }
            // the events table holds the target once it has everything below the forget
            if !self.events.wait_for(offset + 1, VIEWS_WAIT).await {
                return Err(GdprError::EventsLate(offset));
            }
            for &at in &all {
                receipt.events_redacted += self.events.forget(tenant, user, at).await?;
            }
            let log = self.ingestor.log().clone();
            receipt.log_records_redacted = tokio::task::spawn_blocking(move || {
                // below the base the events table is the record, redacted just now
                let in_file: Vec<u64> = all
                    .into_iter()
                    .filter(|o| *o >= log.base_offset())
                    .collect();
                if in_file.is_empty() {
                    return Ok(0);
                }
                log.redact(&in_file, |old| {
                    let e = Event::from_canonical_json(old).expect("read just now");
                    Redacted::new(&e.header.tenant, &e.header.event_id)
                        .to_json()
                        .into_bytes()
                })
            })
            .await
            .expect("redact task")?;
        }
        // the forgotten text may be cached under this tenant
        self.recall.embedder.forget_tenant(tenant);
        self.recall.speakers.forget(tenant, Some(user));
        self.recall.analysed.forget(tenant, Some(user));
        receipt.completed_at = chrono::Utc::now();
        receipt.took_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.write_receipt(&receipt)?;
        tracing::info!(?receipt, "forgotten");
        Ok(receipt)
    }

    /// Rectifies the fact `fact_id` of `(tenant, user)`: a `fact` event of the user with the
    /// same subject and attribute and `value` supersedes it (the user is its source). Only the
    /// current value can be rectified. Answers once the views show the new value.
    pub async fn rectify_fact(
        &self,
        tenant: &str,
        user: &str,
        fact_id: &str,
        value: &str,
    ) -> Result<Rectification, MemoryEditError> {
        let memory = crate::read_model::memory_json(&self.views.read(), tenant, user);
        let not_found = || MemoryEditError::NotFound {
            user: user.to_string(),
            id: fact_id.to_string(),
        };
        let fact = memory["facts"]
            .as_array()
            .and_then(|facts| facts.iter().find(|f| f["id"] == fact_id))
            .ok_or_else(not_found)?;
        if fact["current"] != json!(true) {
            return Err(MemoryEditError::NotCurrent {
                id: fact_id.to_string(),
                superseded_by: fact["superseded_by"].as_str().unwrap_or("").to_string(),
            });
        }
        if fact["value"].as_str() == Some(value.trim()) {
            return Err(MemoryEditError::SameValue {
                value: value.to_string(),
            });
        }
        let text = |k: &str| fact[k].as_str().unwrap_or_default().to_string();
        let (subject, attribute) = (text("subject"), text("attribute"));
        // later than the old value, so that it supersedes it even if that one is dated ahead
        let old_from = chrono::DateTime::parse_from_rfc3339(&text("valid_from"))
            .map(|t| t.with_timezone(&chrono::Utc))
            .unwrap_or_default();
        let ts = chrono::Utc::now().max(old_from + chrono::Duration::milliseconds(1));
        let event_id = format!("rectify-{}", uuid::Uuid::new_v4());
        let event = json!({
            "kind": "fact", "event_id": event_id, "tenant": tenant, "user": user, "ts": ts,
            "subject": subject, "attribute": attribute, "value": value, "confidence": 1.0,
        });
        let report = self.ingest_one("rectify", &event).await?;
        if let Some(r) = report.rejected.first() {
            return Err(MemoryEditError::Invalid {
                field: r.error.field.clone(),
                reason: r.error.reason.clone(),
            });
        }
        let offset = report
            .first_offset
            .ok_or_else(|| GdprError::Rejected("not appended".into()))?;
        if !self.wait_views_past(offset, RECTIFY_VIEWS_WAIT).await {
            return Err(MemoryEditError::ViewsLate(offset));
        }
        Ok(Rectification {
            fact_id: node_id(tenant, &event_id).to_string(),
            supersedes: fact_id.to_string(),
            subject,
            attribute,
            value: value.trim().to_string(),
            event_id,
            offset,
        })
    }
}
