//! Stores the episodes the dataflow emits: embeds them in batches and appends them to Lance.
//!
//! Rows at or below the store's watermark (already committed before a restart) are skipped
//! before embedding, so a restart re-embeds nothing. A failed write is retried with the same
//! rows until it succeeds or the writer is stopped: accepted input is never dropped here.

use chrono::{TimeZone, Utc};
use engram_connectors::{Embedder, EpisodeRow, EpisodeStore};
use engram_dataflows::EpisodeBatch;
use engram_operators::{Episode, SessionKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most rows embedded and committed together.
const MAX_ROWS_PER_COMMIT: usize = 4096;

pub fn spawn_episode_writer(
    rx: Receiver<EpisodeBatch>,
    store: Arc<EpisodeStore>,
    embedder: Arc<Embedder>,
    rt: tokio::runtime::Handle,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("episode-writer".into())
        .spawn(move || {
            let mut pending: Vec<(SessionKey, Episode)> = Vec::new();
            loop {
                if pending.is_empty() {
                    match rx.recv_timeout(Duration::from_millis(100)) {
                        Ok(b) => pending.extend(b.episodes),
                        Err(RecvTimeoutError::Timeout) => {
                            if stop.load(Ordering::Acquire) {
                                return;
                            }
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
                // Take whatever else is already waiting: batches grow with load.
                while pending.len() < MAX_ROWS_PER_COMMIT {
                    match rx.try_recv() {
                        Ok(b) => pending.extend(b.episodes),
                        Err(_) => break,
                    }
                }
                let watermark = store.watermark();
                pending.retain(|(_, e)| watermark.is_none_or(|w| e.log_offset > w));
                let take = pending.len().min(MAX_ROWS_PER_COMMIT);
                let batch: Vec<(SessionKey, Episode)> = pending.drain(..take).collect();
                if batch.is_empty() {
                    continue;
                }
                let mut backoff = Duration::from_millis(100);
                loop {
                    match write_batch(&batch, &store, &embedder, &rt) {
                        Ok(n) => {
                            tracing::debug!(rows = n, "episodes stored");
                            break;
                        }
                        Err(err) => {
                            tracing::error!(%err, rows = batch.len(), "storing episodes failed; retrying");
                            if stop.load(Ordering::Acquire) {
                                return;
                            }
                            std::thread::sleep(backoff);
                            backoff = (backoff * 2).min(Duration::from_secs(5));
                        }
                    }
                }
            }
        })
        .expect("spawn the episode writer")
}

fn write_batch(
    batch: &[(SessionKey, Episode)],
    store: &EpisodeStore,
    embedder: &Embedder,
    rt: &tokio::runtime::Handle,
) -> anyhow::Result<usize> {
    let texts: Vec<&str> = batch.iter().map(|(_, e)| e.content.as_str()).collect();
    let vectors = embedder.embed(&texts)?;
    let rows = batch
        .iter()
        .zip(vectors)
        .map(|((key, e), vector)| episode_row(key, e, vector))
        .collect();
    Ok(rt.block_on(store.append(rows))?)
}

pub fn episode_row(
    (tenant, user, session): &SessionKey,
    e: &Episode,
    vector: Vec<f32>,
) -> EpisodeRow {
    EpisodeRow {
        id: e.id.clone(),
        event_id: e.event_id.clone(),
        tenant: tenant.clone(),
        user: user.clone(),
        session: (!session.is_empty()).then(|| session.clone()),
        role: e.role.clone(),
        content: e.content.clone(),
        ts: Utc
            .timestamp_micros(e.ts_micros)
            .single()
            .unwrap_or_default(),
        turn: e.turn,
        importance: e.importance_milli.map(|m| m as f32 / 1000.0),
        log_offset: e.log_offset,
        vector,
    }
}
