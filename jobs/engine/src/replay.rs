//! `engram replay FILE…`: historical event files (JSON lines or Parquet, SPEC §2 fields) go
//! through the same path as live input (validation → event log → dataflow → embedder → Lance).
//!
//! Resumable: the event log dedupes by `(tenant, event_id)` and Lance skips offsets it has
//! committed, so running the same replay again after an interruption stores what is missing and
//! nothing twice. Reading pauses while too much is in flight, so memory stays bounded and the run
//! is paced by the embedder. At the end the bare embedder is timed on a sample of the same texts,
//! so the replay's rate can be compared with it in one run.

use crate::engine::Engine;
use crate::ingest::validate_item;
use anyhow::Context;
use engram_connectors::{EventFile, FileRecord};
use engram_schemas::EventError;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct ReplayOptions {
    pub files: Vec<PathBuf>,
    /// Records validated and appended to the log together.
    pub chunk: usize,
    /// Events in flight (logged, not yet reflected in the views and in Lance) before reading
    /// pauses.
    pub max_in_flight: u64,
    /// Texts the bare embedder is timed on at the end (0: skip the measurement).
    pub measure_sample: usize,
    /// Draw progress bars (on a terminal; otherwise a log line every 10 s).
    pub progress: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            files: Vec::new(),
            chunk: 2048,
            max_in_flight: 20_000,
            measure_sample: 512,
            progress: true,
        }
    }
}

/// A rejected record: which file, where, and why.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayRejection {
    pub file: String,
    pub position: String,
    pub field: String,
    pub reason: String,
}

#[derive(Debug, Default, Serialize)]
pub struct ReplaySummary {
    pub files: usize,
    pub records: u64,
    /// Events newly appended to the log by this run.
    pub accepted: usize,
    /// Events already accepted before (an earlier, interrupted run; or repeated ids).
    pub duplicates: usize,
    pub rejected: usize,
    /// The first rejections (all of them are in the reject log).
    pub rejections: Vec<ReplayRejection>,
    /// Episodes committed to Lance by this run (including those of an interrupted earlier run
    /// that were logged but not yet stored).
    pub episodes_stored: usize,
    /// Texts that went through the model (each distinct text once, repeats come from the cache).
    pub texts_embedded: u64,
    pub seconds: f64,
    pub episodes_per_second: f64,
    /// The bare embedder on a sample of the replayed episodes (each episode's text and, where
    /// the writer makes them, its passages), same process, same settings: episodes per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bare_embedder_episodes_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sample_episodes: Option<usize>,
    /// `episodes_per_second / bare_embedder_episodes_per_second`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ratio_to_bare_embedder: Option<f64>,
}

/// How far the engine is behind the log.
struct Backlog {
    log_end: u64,
    /// Everything below this offset is in the views and, for episodes, in Lance.
    done: u64,
}

fn backlog(engine: &Engine) -> Backlog {
    let p = engine.progress();
    let done = if p.pending_episodes == 0 {
        p.views_as_of
    } else {
        p.lance_watermark.map_or(0, |w| w + 1).min(p.views_as_of)
    };
    Backlog {
        log_end: p.log_end,
        done,
    }
}

pub async fn run(engine: Arc<Engine>, opts: ReplayOptions) -> anyhow::Result<ReplaySummary> {
    anyhow::ensure!(!opts.files.is_empty(), "no files to replay");
    let mut files = Vec::new();
    for path in &opts.files {
        files.push(EventFile::open(path)?);
    }
    let total_records: u64 = files.iter().map(|f| f.records()).sum();
    let started = Instant::now();
    // From the store's opening, not from now: the writer may already have stored what an
    // interrupted run had logged, and that counts as this run's.
    let rows_before = engine.episodes_at_open;
    let texts_before = engine.recall.embedder.model_texts();
    let base = backlog(&engine).done;

    let bars = MultiProgress::with_draw_target(if opts.progress {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    let read_bar = bars.add(ProgressBar::new(total_records));
    read_bar.set_style(
        ProgressStyle::with_template("read   {bar:40} {pos}/{len} records {per_sec}")
            .expect("valid template"),
    );
    let stored_bar = bars.add(ProgressBar::new(0));
    stored_bar.set_style(
        ProgressStyle::with_template(
            "stored {bar:40} {pos}/{len} events {per_sec} ETA {eta} ({elapsed})",
        )
        .expect("valid template"),
    );
    let show_lines = opts.progress && bars.is_hidden();
    let mut last_line = Instant::now();
    let mut report_progress = |read: u64, b: &Backlog| {
        read_bar.set_position(read);
        stored_bar.set_length(b.log_end.saturating_sub(base));
        stored_bar.set_position(b.done.saturating_sub(base));
        if show_lines && last_line.elapsed() >= Duration::from_secs(10) {
            last_line = Instant::now();
            let secs = started.elapsed().as_secs_f64();
            let done = b.done.saturating_sub(base);
            let left = b.log_end.saturating_sub(b.done) + total_records.saturating_sub(read);
            let rate = done as f64 / secs.max(1e-9);
            tracing::info!(
                read,
                total_records,
                stored = done,
                rate = format!("{rate:.0}/s"),
                eta_s = if rate > 0.0 {
                    left as f64 / rate
                } else {
                    f64::NAN
                },
                "replay progress"
            );
        }
    };

    let mut summary = ReplaySummary {
        files: files.len(),
        ..Default::default()
    };
    let mut sample = Reservoir::new(opts.measure_sample);
    for file in &mut files {
        let name = file.path().display().to_string();
        let source = format!("replay:{name}");
        loop {
            // Pace reading by what the dataflow and the embedder have finished.
            loop {
                let b = backlog(&engine);
                report_progress(summary.records, &b);
                if b.log_end.saturating_sub(b.done) < opts.max_in_flight {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            let chunk = file.next_chunk(opts.chunk.max(1))?;
            if chunk.is_empty() {
                break;
            }
            summary.records += chunk.len() as u64;
            let (parsed, originals) = validate_chunk(&chunk, &mut sample);
            let report = engine
                .ingestor
                .ingest_parsed(&source, parsed, &originals)
                .with_context(|| format!("appending {name} to the event log"))?;
            summary.accepted += report.accepted;
            summary.duplicates += report.duplicates;
            summary.rejected += report.rejected.len();
            for r in report.rejected {
                if summary.rejections.len() < 20 {
                    summary.rejections.push(ReplayRejection {
                        file: name.clone(),
                        position: chunk[r.index].position.clone(),
                        field: r.error.field.clone(),
                        reason: r.error.reason.clone(),
                    });
                }
            }
        }
    }
    loop {
        let b = backlog(&engine);
        report_progress(summary.records, &b);
        if b.done >= b.log_end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    read_bar.finish();
    stored_bar.finish();
    summary.seconds = started.elapsed().as_secs_f64();
    summary.episodes_stored = engine.store.row_count().saturating_sub(rows_before);
    summary.texts_embedded = engine.recall.embedder.model_texts() - texts_before;
    summary.episodes_per_second = summary.episodes_stored as f64 / summary.seconds.max(1e-9);

    let sampled = sample.into_items();
    if !sampled.is_empty() && summary.episodes_stored > 0 {
        let embedder = engine.recall.embedder.clone();
        let n = sampled.len();
        // The same work per episode as the writer does: the text, and its passages if it gets
        // them.
        let p = &engine.config.passages;
        let mut texts = Vec::new();
        for (role, content) in sampled {
            if p.enabled && p.roles.contains(&role) {
                texts.extend(crate::pipeline::passages::passages(
                    &content,
                    p.max_per_episode,
                ));
            }
            texts.push(content);
        }
        let seconds = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let t = Instant::now();
            embedder
                .embed_uncached(&refs)
                .map(|_| t.elapsed().as_secs_f64())
        })
        .await??;
        let bare = n as f64 / seconds.max(1e-9);
        summary.sample_episodes = Some(n);
        summary.bare_embedder_episodes_per_second = Some(bare);
        summary.ratio_to_bare_embedder = Some(summary.episodes_per_second / bare);
    }
    Ok(summary)
}

/// Validates records exactly as live input is validated; the interaction texts feed the
/// embedder sample.
fn validate_chunk(
    chunk: &[FileRecord],
    sample: &mut Reservoir,
) -> (Vec<Result<engram_schemas::Event, EventError>>, Vec<String>) {
    chunk
        .iter()
        .map(|r| {
            let parsed = match &r.value {
                Err(reason) => Err(EventError::new("$", reason.clone())),
                Ok(v) => validate_item(v, r.original.len()),
            };
            if let Ok(engram_schemas::Event {
                body: engram_schemas::Body::Interaction(i),
                ..
            }) = &parsed
            {
                sample.offer(i.role.as_str(), &i.content);
            }
            (parsed, r.original.clone())
        })
        .unzip()
}

/// A uniform sample of the (role, text) pairs seen (reservoir sampling with a fixed seed, so a replay's
/// sample is the same every time).
struct Reservoir {
    capacity: usize,
    seen: u64,
    items: Vec<(String, String)>,
    state: u64,
}

impl Reservoir {
    fn new(capacity: usize) -> Self {
        Reservoir {
            capacity,
            seen: 0,
            items: Vec::with_capacity(capacity),
            state: 0x9E37_79B9_7F4A_7C15,
        }
    }

    fn offer(&mut self, role: &str, text: &str) {
        if self.capacity == 0 {
            return;
        }
        self.seen += 1;
        if self.items.len() < self.capacity {
            self.items.push((role.to_string(), text.to_string()));
            return;
        }
        // xorshift64*: a fixed, dependency-free stream of draws
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let draw = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D) % self.seen;
        if (draw as usize) < self.capacity {
            self.items[draw as usize] = (role.to_string(), text.to_string());
        }
    }

    fn into_items(self) -> Vec<(String, String)> {
        self.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservoir_keeps_at_most_capacity_and_all_when_fewer() {
        let mut r = Reservoir::new(3);
        r.offer("user", "a");
        r.offer("user", "b");
        let texts: Vec<String> = r.into_items().into_iter().map(|(_, t)| t).collect();
        assert_eq!(texts, vec!["a", "b"]);
        let mut r = Reservoir::new(10);
        for i in 0..1000 {
            r.offer("user", &i.to_string());
        }
        let items = r.into_items();
        assert_eq!(items.len(), 10);
        // a uniform sample of 0..1000 is very unlikely to sit entirely in the first 10 offers
        assert!(items.iter().any(|(_, s)| s.parse::<u32>().unwrap() >= 10));
    }
}
