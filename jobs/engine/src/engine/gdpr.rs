//! Export and erase (GDPR): a user's whole subgraph as JSON, and erasure of a user or a tenant
//! from everything engram keeps.
//!
//! An erase is an event: a `control` event (`action: erase`) is appended to the log, so every
//! worker retracts the erased records from the views at one offset, in order with everything
//! else, and a crash at any point is finished after the restart. Then, below that offset: the
//! log records of the erased are overwritten in place (their tenant and event id stay, so a
//! redelivery is not stored again), and so are their rows of the Lance events table; their
//! rejected inputs are removed, their Lance episode rows are deleted with every index rebuilt
//! and every old version removed, and (for a tenant) its API
//! keys go. A receipt without content is kept in `DATA_DIR/erasures.jsonl`.

use crate::engine::Engine;
use engram_schemas::{Event, Redacted};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// How long an erase waits for the dataflow to pass its control event.
const VIEWS_WAIT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub enum GdprError {
    #[error("{0}")]
    Log(#[from] engram_connectors::LogError),
    #[error(transparent)]
    Store(#[from] engram_connectors::StoreError),
    #[error(transparent)]
    Ingest(#[from] crate::ingest::IngestError),
    #[error("the erase event was not accepted: {0}")]
    Rejected(String),
    #[error("the views did not pass the erase at offset {0} within {VIEWS_WAIT:?}")]
    ViewsLate(u64),
    #[error("the Lance events table did not reach the erase at offset {0} within {VIEWS_WAIT:?}")]
    EventsLate(u64),
    #[error("erasure receipts {path}: {reason}")]
    Receipts { path: String, reason: String },
}

/// What an erase removed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ErasureReceipt {
    pub erase_event_id: String,
    /// Log offset of the erase event: everything of the erased before it is gone.
    pub offset: u64,
    pub tenant: String,
    /// Absent for a whole tenant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    pub log_records_redacted: usize,
    /// Records of the Lance events table replaced by their redacted stand-ins.
    #[serde(default)]
    pub events_redacted: usize,
    pub rejections_removed: usize,
    pub episodes_erased: usize,
    pub passages_erased: usize,
    /// Rows of the Lance facts table.
    #[serde(default)]
    pub facts_erased: usize,
    /// Rows of the Lance summaries table.
    #[serde(default)]
    pub summaries_erased: usize,
    pub tenant_keys_removed: bool,
    pub completed_at: chrono::DateTime<chrono::Utc>,
    pub took_ms: f64,
}

fn matches(tenant: &str, user: Option<&str>, t: &str, u: &str) -> bool {
    t == tenant && user.is_none_or(|x| x == u)
}

impl Engine {
    fn receipts_path(&self) -> std::path::PathBuf {
        self.config.data_dir.join("erasures.jsonl")
    }

    /// Offsets of the erase events whose erasure has completed.
    fn completed_erasures(&self) -> Result<HashSet<u64>, GdprError> {
        match std::fs::read_to_string(self.receipts_path()) {
            Ok(text) => Ok(text
                .lines()
                .filter_map(|l| serde_json::from_str::<ErasureReceipt>(l).ok())
                .map(|r| r.offset)
                .collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(HashSet::new()),
            Err(e) => Err(GdprError::Receipts {
                path: self.receipts_path().display().to_string(),
                reason: e.to_string(),
            }),
        }
    }

    /// Erases a user (or, with `user: None`, a whole tenant) from the views, the log, the
    /// reject log, Lance (old versions included) and, for a tenant, the key registry.
    pub async fn erase(
        &self,
        tenant: &str,
        user: Option<&str>,
    ) -> Result<ErasureReceipt, GdprError> {
        let event_id = format!("erase-{}", uuid::Uuid::new_v4());
        let mut event = json!({
            "kind": "control", "event_id": event_id, "tenant": tenant,
            "ts": chrono::Utc::now(), "action": "erase",
            "scope": if user.is_some() { "user" } else { "tenant" },
        });
        if let Some(u) = user {
            event["user"] = json!(u);
        }
        let ingestor = self.ingestor.clone();
        let bytes = serde_json::to_vec(&event).expect("JSON");
        let report = tokio::task::spawn_blocking(move || ingestor.ingest_body("erase", &bytes))
            .await
            .expect("ingest task")?;
        let offset = match (report.first_offset, report.rejected.first()) {
            (Some(o), None) => o,
            (_, Some(r)) => return Err(GdprError::Rejected(r.error.to_string())),
            (None, None) => return Err(GdprError::Rejected("not appended".into())),
        };
        self.complete_erasure(&event_id, tenant, user, offset).await
    }

    /// Everything of an erase after its control event is in the log (idempotent: run again
    /// after a crash).
    pub async fn complete_erasure(
        &self,
        event_id: &str,
        tenant: &str,
        user: Option<&str>,
        offset: u64,
    ) -> Result<ErasureReceipt, GdprError> {
        let started = Instant::now();
        tracing::info!(tenant, user, offset, "erasing");
        // The views retract at the erase's offset; wait until they are past it.
        let deadline = Instant::now() + VIEWS_WAIT;
        while self.views.read().as_of <= offset {
            if Instant::now() > deadline {
                return Err(GdprError::ViewsLate(offset));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // Lance first: the store drops late rows of the erased from then on.
        let episodes_erased = self.store.erase(tenant, user, offset).await?;
        // The events table, once it holds everything below the erase (so no record of the
        // erased reaches it afterwards).
        if !self.events.wait_for(offset + 1, VIEWS_WAIT).await {
            return Err(GdprError::EventsLate(offset));
        }
        let events_redacted = self.events.erase(tenant, user, offset).await?;
        let passages_erased = match &self.recall.passages {
            Some(p) => p.erase(tenant, user, offset).await?,
            None => 0,
        };
        let facts_erased = match &self.recall.facts {
            Some(f) => f.erase(tenant, user, offset).await?,
            None => 0,
        };
        let summaries_erased = match &self.recall.summaries {
            Some(s) => s.erase(tenant, user, offset).await?,
            None => 0,
        };
        // The log: every record of the erased below the erase event.
        let log = self.ingestor.log().clone();
        let (t, u) = (tenant.to_string(), user.map(str::to_string));
        let log_records_redacted = tokio::task::spawn_blocking(move || {
            let mut offsets = Vec::new();
            let mut at = 0;
            while at < offset {
                let chunk = log.read(at, 4096.min((offset - at) as usize))?;
                at += chunk.len() as u64;
                for (o, bytes) in chunk {
                    if let Ok(e) = Event::from_canonical_json(&bytes) {
                        if matches(&t, u.as_deref(), &e.header.tenant, &e.header.user)
                            && !e.governs_processing()
                        {
                            offsets.push(o);
                        }
                    }
                }
            }
            log.redact(&offsets, |old| {
                let e = Event::from_canonical_json(old).expect("read just now");
                Redacted::new(&e.header.tenant, &e.header.event_id)
                    .to_json()
                    .into_bytes()
            })
        })
        .await
        .expect("redact task")?;
        let rejections_removed = self.ingestor.rejects().purge(|r| {
            serde_json::from_str::<Value>(&r.original)
                .ok()
                .and_then(|v| {
                    let t = v.get("tenant")?.as_str()?.to_string();
                    let u = v
                        .get("user")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    Some(matches(tenant, user, &t, &u))
                })
                .unwrap_or(false)
        })?;
        let tenant_keys_removed = user.is_none() && self.tenants.remove(tenant).is_ok();
        self.recall.embedder.clear_cache();
        self.recall.speakers.forget(tenant, user);
        let receipt = ErasureReceipt {
            erase_event_id: event_id.to_string(),
            offset,
            tenant: tenant.to_string(),
            user: user.map(str::to_string),
            log_records_redacted,
            events_redacted,
            rejections_removed,
            episodes_erased,
            passages_erased,
            facts_erased,
            summaries_erased,
            tenant_keys_removed,
            completed_at: chrono::Utc::now(),
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        let line = format!("{}\n", serde_json::to_string(&receipt).expect("JSON"));
        let path = self.receipts_path();
        let write = || -> std::io::Result<()> {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?;
            f.write_all(line.as_bytes())?;
            f.sync_data()
        };
        write().map_err(|e| GdprError::Receipts {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        tracing::info!(?receipt, "erased");
        Ok(receipt)
    }

    /// Finishes erasures a crash interrupted: every erase event in the log without a receipt.
    pub async fn resume_erasures(&self) -> Result<usize, GdprError> {
        let done = self.completed_erasures()?;
        // the log was read once at start-up; its erase events were noted then
        let pending: Vec<_> = self
            .ingestor
            .erases_at_open()
            .iter()
            .filter(|e| !done.contains(&e.offset))
            .cloned()
            .collect();
        for e in &pending {
            self.complete_erasure(&e.event_id, &e.tenant, e.user.as_deref(), e.offset)
                .await?;
        }
        Ok(pending.len())
    }

    /// Every event of `(tenant, user)` the log holds (erased ones are redacted there), then
    /// those held for a restriction, in order.
    fn stored_events(&self, tenant: &str, user: &str) -> Result<Vec<Value>, GdprError> {
        let log = self.ingestor.log();
        let mut events = Vec::new();
        let mut offset = 0;
        while offset < log.end_offset() {
            let chunk = log.read(offset, 4096)?;
            if chunk.is_empty() {
                break;
            }
            offset += chunk.len() as u64;
            for (_, bytes) in chunk {
                if let Ok(event) = Event::from_canonical_json(&bytes) {
                    if event.header.tenant == tenant && event.header.user == user {
                        events.push(serde_json::to_value(&event).expect("events serialize"));
                    }
                }
            }
        }
        for line in self.ingestor.held_events(tenant, user) {
            if let Ok(event) = serde_json::from_str::<Value>(&line) {
                events.push(event);
            }
        }
        Ok(events)
    }

    /// A user's whole subgraph: every episode (with its `NEXT` neighbour) and the user's part
    /// of every view.
    pub async fn export_user(&self, tenant: &str, user: &str) -> Result<Value, GdprError> {
        let episodes = self.store.user_episodes(tenant, user).await?;
        let views = self.views.read();
        let episodes: Vec<Value> = episodes
            .iter()
            .map(|e| {
                json!({
                    "id": e.id, "event_id": e.event_id, "session": e.session, "role": e.role,
                    "content": e.content, "ts": e.ts, "turn": e.turn, "importance": e.importance,
                    "next_id": views.next_id(&e.id),
                })
            })
            .collect();
        let mut out = crate::read_model::memory_json(&views, tenant, user);
        drop(views);
        out["episodes"] = Value::Array(episodes);
        if self.ingestor.is_restricted(tenant, user) {
            // processing is frozen, so the views hold nothing of the user: the export gives
            // the events themselves instead, stored and held
            out["restricted"] = json!(true);
            out["events"] = Value::Array(self.stored_events(tenant, user)?);
        }
        out["exported_at"] = json!(chrono::Utc::now());
        Ok(out)
    }
}
