//! Pipeline health, sampled once a second for the dashboards that follow it (the `health`
//! events of `GET /v1/dashboard/stream`).

use super::Engine;
use crate::read_model::micros_to_rfc3339;
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Starts the once-a-second pipeline health sampler of `engine` (it ends with the engine or
/// when the server closes). A sample reads Lance only while some page follows it.
pub fn spawn_health_sampler(engine: &Arc<Engine>) {
    let weak = Arc::downgrade(engine);
    let mut closing = engine.closing();
    tokio::spawn(async move {
        let mut sampler = HealthSampler::default();
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = closing.changed() => return,
            }
            let Some(engine) = weak.upgrade() else { return };
            let followed = engine.health.receiver_count() > 0;
            let sample = sampler.sample(&engine, followed).await;
            if let Some(sample) = sample {
                engine.health.send_replace(Some(Arc::new(sample)));
            }
        }
    });
}

/// Keeps what the health figures are computed from: the log end over the last minutes.
#[derive(Default)]
struct HealthSampler {
    /// `(when, log end)`, oldest first, at most [`HEALTH_HISTORY`] long.
    history: VecDeque<(Instant, u64)>,
}

/// Samples kept for the lag in seconds: ten minutes at one a second.
const HEALTH_HISTORY: usize = 600;

impl HealthSampler {
    /// Records the log end now; returns the health event body when `followed`.
    async fn sample(&mut self, engine: &Engine, followed: bool) -> Option<Value> {
        let progress = engine.progress();
        let now = Instant::now();
        let rate = self.history.back().map(|(at, end)| {
            let secs = now.duration_since(*at).as_secs_f64().max(1e-3);
            progress.log_end.saturating_sub(*end) as f64 / secs
        });
        self.history.push_back((now, progress.log_end));
        if self.history.len() > HEALTH_HISTORY {
            self.history.pop_front();
        }
        if !followed {
            return None;
        }
        // The oldest event not yet in the views was appended before the first sample that saw
        // the log end past it: the views have lagged at least since then.
        let lag_seconds = if progress.views_as_of >= progress.log_end {
            0.0
        } else {
            self.history
                .iter()
                .find(|(_, end)| *end > progress.views_as_of)
                .map_or(0.0, |(at, _)| now.duration_since(*at).as_secs_f64())
        };
        let (indexes, unindexed_rows) = engine.store.index_status().await.unwrap_or_default();
        let passages = engine.recall.passages.as_ref().map(|p| p.row_count());
        let engine_time_secs = engine.views.read().engine_time_secs;
        Some(json!({
            "at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "log_end": progress.log_end, "views_as_of": progress.views_as_of,
            "lag_events": progress.log_end.saturating_sub(progress.views_as_of),
            "lag_seconds": lag_seconds, "events_per_sec": rate.unwrap_or(0.0),
            "rejected": engine.ingestor.rejects().count(),
            "episodes": progress.episodes, "pending_episodes": progress.pending_episodes,
            "passages": passages, "unindexed_rows": unindexed_rows,
            "indexes": indexes.into_iter()
                .map(|(name, rows)| json!({"name": name, "indexed_rows": rows}))
                .collect::<Vec<_>>(),
            "lance_watermark": progress.lance_watermark,
            "engine_time": micros_to_rfc3339(engine_time_secs as i64 * 1_000_000),
            "engine_time_secs": engine_time_secs,
        }))
    }
}
