//! Export and erase (GDPR): a user's whole subgraph as JSON, and erasure of a user or a tenant
//! from everything engram keeps.
//!
//! An erase is an event: a `control` event (`action: erase`) is appended to the log, so every
//! worker retracts the erased records from the views at one offset, in order with everything
//! else. However the event arrived (`POST /v1/erase`, the admin API, `POST /v1/events`, the
//! Kafka control topic, a replayed file), one task, [`run_erasures`], completes it, and
//! finishes after a restart any erase a crash interrupted. Then, below that offset: the
//! log records of the erased are overwritten in place (their tenant and event id stay, so a
//! redelivery is not stored again), and so are their rows of the Lance events table; their
//! rejected inputs are removed, their Lance episode rows are deleted with every index rebuilt
//! and every old version removed, and (for a tenant) its API
//! keys go. A receipt without content is kept in `DATA_DIR/erasures.jsonl`.

use crate::engine::Engine;
use crate::ingest::LoggedErase;
use engram_schemas::{Event, Redacted};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

/// How long an erase waits for the dataflow to pass its control event.
pub(crate) const VIEWS_WAIT: Duration = Duration::from_secs(120);

/// How long [`Engine::erase`] waits for the erasure task to complete its event.
const ERASE_WAIT: Duration = Duration::from_secs(360);

/// The erasure task's outcomes kept for [`Engine::erase`] to read: the latest this many.
const KEPT_OUTCOMES: usize = 1024;

/// The longest pause before an erasure that failed is tried again.
const MAX_RETRY_PAUSE: Duration = Duration::from_secs(30);

/// What the erasure task made of each erase event, by its log offset: the receipt, or the
/// last attempt's error (the task tries again).
pub type ErasureOutcomes = BTreeMap<u64, Result<ErasureReceipt, String>>;

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
    #[error("the erase at offset {offset} failed and will be tried again: {reason}")]
    Failed { offset: u64, reason: String },
    #[error("the erase at offset {0} is accepted and not complete after {ERASE_WAIT:?}; it will be completed")]
    Pending(u64),
    #[error("engram is stopping; the erase at offset {0} will be completed after the restart")]
    Stopping(u64),
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
    /// For a forget (an erase of one event): the event forgotten. Then every count is of that
    /// event's records and rows only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_event_id: Option<String>,
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
        self.erasure_outcome(offset).await
    }

    /// The receipt of the erase (or forget) event at `offset` once the erasure task has
    /// completed it, or its error.
    pub(crate) async fn erasure_outcome(&self, offset: u64) -> Result<ErasureReceipt, GdprError> {
        let mut outcomes = self.erasures.subscribe();
        let waited =
            tokio::time::timeout(ERASE_WAIT, outcomes.wait_for(|o| o.contains_key(&offset))).await;
        match waited {
            Ok(Ok(outcomes)) => outcomes[&offset]
                .clone()
                .map_err(|reason| GdprError::Failed { offset, reason }),
            Ok(Err(_)) => Err(GdprError::Stopping(offset)),
            Err(_) => Err(GdprError::Pending(offset)),
        }
    }

    fn note_erasure_outcome(&self, offset: u64, outcome: Result<ErasureReceipt, String>) {
        self.erasures.send_modify(|outcomes| {
            outcomes.insert(offset, outcome);
            while outcomes.len() > KEPT_OUTCOMES {
                outcomes.pop_first();
            }
        });
    }

    /// Everything of an erase after its control event is in the log (idempotent: run again
    /// after a crash).
    async fn complete_erasure(
        &self,
        event_id: &str,
        tenant: &str,
        user: Option<&str>,
        offset: u64,
    ) -> Result<ErasureReceipt, GdprError> {
        let started = Instant::now();
        tracing::info!(tenant, user, offset, "erasing");
        // The views retract at the erase's offset; wait until they are past it.
        if !self.wait_views_past(offset, VIEWS_WAIT).await {
            return Err(GdprError::ViewsLate(offset));
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
        // The log: every record of the erased below the erase event, found through the index of
        // each user's offsets (no record of someone with no data is read).
        let log = self.ingestor.log().clone();
        let index = self.ingestor.user_offsets().clone();
        let (t, u) = (tenant.to_string(), user.map(str::to_string));
        let log_records_redacted = tokio::task::spawn_blocking(move || {
            let mut offsets = Vec::new();
            let candidates = index.offsets(&t, u.as_deref(), offset);
            // the file's records only: the events table redacts those below the base itself
            let in_file: Vec<u64> = candidates
                .into_iter()
                .filter(|o| *o >= log.base_offset())
                .collect();
            for (o, bytes) in index.read(&log, &in_file)? {
                if let Ok(e) = Event::from_canonical_json(&bytes) {
                    if matches(&t, u.as_deref(), &e.header.tenant, &e.header.user)
                        && !e.governs_processing()
                    {
                        offsets.push(o);
                    }
                }
            }
            let redacted = log.redact(&offsets, |old| {
                let e = Event::from_canonical_json(old).expect("read just now");
                Redacted::new(&e.header.tenant, &e.header.event_id)
                    .to_json()
                    .into_bytes()
            })?;
            // their records are redacted: nothing below the erase is read for them again
            index.forget(&t, u.as_deref(), offset);
            Ok::<_, engram_connectors::LogError>(redacted)
        })
        .await
        .expect("redact task")?;
        let rejections_removed = self.ingestor.rejects().erase(tenant, user)?;
        let tenant_keys_removed = user.is_none() && self.tenants.remove(tenant).is_ok();
        // the erased texts were cached under this tenant only
        self.recall.embedder.forget_tenant(tenant);
        self.recall.speakers.forget(tenant, user);
        self.recall.analysed.forget(tenant, user);
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
            target_event_id: None,
            tenant_keys_removed,
            completed_at: chrono::Utc::now(),
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        };
        self.write_receipt(&receipt)?;
        tracing::info!(?receipt, "erased");
        Ok(receipt)
    }

    /// Whether the views passed log offset `offset` (the control event there is applied)
    /// within `timeout`.
    pub(crate) async fn wait_views_past(&self, offset: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.views.read().as_of <= offset {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    /// Appends `receipt` to `DATA_DIR/erasures.jsonl`, synced: the erasure it records is not
    /// done again after a restart.
    pub(crate) fn write_receipt(&self, receipt: &ErasureReceipt) -> Result<(), GdprError> {
        let line = format!("{}\n", serde_json::to_string(receipt).expect("JSON"));
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
        })
    }

    /// Every event of `(tenant, user)` the log holds (erased ones are redacted there), then
    /// those held for a restriction, in order.
    fn stored_events(&self, tenant: &str, user: &str) -> Result<Vec<Value>, GdprError> {
        let log = self.ingestor.log();
        let index = self.ingestor.user_offsets();
        let mut events = Vec::new();
        let offsets = index.offsets(tenant, Some(user), log.end_offset());
        for (_, bytes) in index.read(log, &offsets)? {
            if let Ok(event) = Event::from_canonical_json(&bytes) {
                if event.header.tenant == tenant && event.header.user == user {
                    events.push(serde_json::to_value(&event).expect("events serialize"));
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
        // MENTIONS: each episode to the entities the views hold that its content names (as the
        // entity view reads them: every role's episodes)
        let known = views.users.get(&(tenant.to_string(), user.to_string()));
        let mut mentions = Vec::new();
        for e in &episodes {
            let Some(known) = known else { break };
            let content = e["content"].as_str().unwrap_or_default();
            for (name, _) in engram_operators::entities::extract_entities(content) {
                if known.entities.contains_key(name.as_str()) {
                    let to = crate::read_model::entity_id(tenant, &name);
                    mentions.push(json!({"type": "MENTIONS", "from": e["id"], "to": to}));
                }
            }
        }
        drop(views);
        if let Some(edges) = out["edges"].as_array_mut() {
            edges.extend(mentions);
        }
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

/// Completes, one at a time and in log order, every erase event (and forget event, an erase
/// of one event: [`Engine::complete_forget`]) the log holds without a receipt, then every erase event appended later however it arrived; an erasure that fails
/// is tried again after a pause (1 s, doubling up to 30 s) while the others go on. Runs until
/// the engine stops or is dropped.
pub(crate) async fn run_erasures(engine: Weak<Engine>) {
    // erasures already complete: some of those the log held at start-up
    let done = match engine.upgrade().map(|e| e.completed_erasures()) {
        Some(Ok(done)) => done,
        Some(Err(err)) => {
            tracing::error!(%err, "reading the erasure receipts; interrupted erasures are not resumed");
            return;
        }
        None => return,
    };
    let mut pending: VecDeque<LoggedErase> = VecDeque::new();
    let mut pause = Duration::from_secs(1);
    loop {
        let Some(e) = engine.upgrade() else { return };
        if e.stop.load(Ordering::Acquire) {
            return;
        }
        let taken = e.ingestor.take_erases();
        pending.extend(taken.into_iter().filter(|x| !done.contains(&x.offset)));
        let Some(next) = pending.pop_front() else {
            let ingestor = e.ingestor.clone();
            drop(e);
            tokio::select! {
                _ = ingestor.erase_waiting() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            continue;
        };
        let user = next.user.as_deref();
        let completed = match (&next.target_event_id, user) {
            (Some(target), Some(user)) => {
                e.complete_forget(&next.event_id, &next.tenant, user, target, next.offset)
                    .await
            }
            _ => {
                e.complete_erasure(&next.event_id, &next.tenant, user, next.offset)
                    .await
            }
        };
        match completed {
            Ok(receipt) => {
                e.note_erasure_outcome(next.offset, Ok(receipt));
                pause = Duration::from_secs(1);
            }
            Err(err) => {
                tracing::error!(%err, offset = next.offset, tenant = %next.tenant, user, "erasure failed; it will be tried again");
                e.note_erasure_outcome(next.offset, Err(err.to_string()));
                pending.push_back(next);
                drop(e);
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(MAX_RETRY_PAUSE);
            }
        }
    }
}
