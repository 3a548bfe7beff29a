//! Stores the episodes the dataflow emits (and the fact assertions and summaries, each in a
//! table of their own): embeds them in batches and appends them to Lance.
//!
//! Two stages on two threads, so the embedder never waits for a Lance commit or an index
//! refresh: the embedding stage turns episodes into rows and stages them, with their passages,
//! facts and summaries, in their stores (recall finds them from then on), the appending stage
//! commits them (in the order they were embedded, which is log order), at most every
//! [`MIN_COMMIT_INTERVAL`]: the event log already holds them durably, and a commit costs the
//! same CPU for one row as for hundreds. Rows at or below the store's watermark
//! (committed before a restart) are skipped before embedding, so a restart re-embeds nothing.
//! A failed step is retried with the same rows until it succeeds or the writer is stopped:
//! accepted input is never dropped here.

use crate::ingest::backlog::Backlog;
use chrono::{TimeZone, Utc};
use engram_connectors::{Embedder, EpisodeRow, EpisodeStore};
use engram_dataflows::EpisodeBatch;
use engram_operators::correction_clusters::UserKey;
use engram_operators::facts::{FactAssertion, FactKey};
use engram_operators::summaries::SummaryNode;
use engram_operators::turn_text::embedding_text;
use engram_operators::{Episode, SessionKey};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most rows taken from the dataflow at once.
const MAX_PENDING: usize = 4096;
/// Rows embedded together and handed on to the appender (small enough that progress is seen
/// every few seconds, large enough that the model runs on full batches sorted by length).
const EMBED_CHUNK: usize = 512;
/// The most rows committed to Lance together.
const MAX_ROWS_PER_COMMIT: usize = 4096;
/// Embedded chunks waiting for the appender before the embedding stage waits. Under a steady
/// trickle a chunk holds a few rows: enough of them that a commit which also compacts or
/// folds an index (hundreds of milliseconds) does not stop the embedder.
const APPEND_QUEUE: usize = 32;
/// Rows staged and not yet committed before the embedding stage waits for the appender: what
/// bounds the queue above by rows (as four chunks and one commit did before staging).
const MAX_STAGED_ROWS: usize = 4 * EMBED_CHUNK + MAX_ROWS_PER_COMMIT;
/// The least time from one commit to the next. Episodes are recallable once staged, before
/// their commit, so a commit is only the durable copy; on two cores, committing every few rows
/// (tens of milliseconds of work each, often more) took the cores the embedder needed.
const MIN_COMMIT_INTERVAL: Duration = Duration::from_millis(250);

/// Where passages (sentences of long episodes, see `passages.rs`) are stored, and for which
/// episodes.
pub struct PassageSink {
    pub store: Arc<EpisodeStore>,
    pub roles: Vec<String>,
    pub max_per_episode: usize,
}

impl PassageSink {
    fn wants(&self, e: &Episode) -> bool {
        self.store.watermark().is_none_or(|w| e.log_offset > w) && self.roles.contains(&e.role)
    }
}

/// The tables beside the episodes that the writer fills: each row is embedded by its content.
#[derive(Clone, Default)]
pub struct SideTables {
    pub facts: Option<Arc<EpisodeStore>>,
    pub summaries: Option<Arc<EpisodeStore>>,
}

/// Rows of one embedded chunk: passages, facts, summaries and episodes (each may be empty).
#[derive(Default)]
struct Embedded {
    passages: Vec<EpisodeRow>,
    facts: Vec<EpisodeRow>,
    summaries: Vec<EpisodeRow>,
    episodes: Vec<EpisodeRow>,
}

/// The role of a summary's row in the summaries table.
pub const SUMMARY_ROLE: &str = "summary";

/// A summary as a row of the summaries table: its node id, event id, text, time and log
/// offset (the table's idempotency key, as for episodes). Its `COVERS` edges stay in the views.
pub fn summary_row((tenant, user): &UserKey, s: &SummaryNode, vector: Vec<f32>) -> EpisodeRow {
    EpisodeRow {
        id: s.id.clone(),
        event_id: s.event_id.clone(),
        tenant: tenant.clone(),
        user: user.clone(),
        session: None,
        role: SUMMARY_ROLE.into(),
        content: s.content.clone(),
        ts: Utc
            .timestamp_micros(s.ts_micros)
            .single()
            .unwrap_or_default(),
        turn: None,
        importance: None,
        log_offset: s.log_offset,
        vector,
    }
}

/// The role of a fact's row in the facts table.
pub const FACT_ROLE: &str = "fact";

/// What a fact's row holds, to be found by vector and by words: "subject attribute: value",
/// with the attribute's underscores as spaces ("user lives in: Berlin").
pub fn fact_text(subject: &str, attribute: &str, value: &str) -> String {
    format!("{subject} {}: {value}", attribute.replace('_', " "))
}

/// A fact assertion as a row of the facts table: its fact id, its text, its valid-from time
/// and its log offset (the table's idempotency key, as for episodes).
pub fn fact_row(
    (tenant, user, subject, attribute): &FactKey,
    a: &FactAssertion,
    vector: Vec<f32>,
) -> EpisodeRow {
    EpisodeRow {
        id: a.fact_id.clone(),
        event_id: a.fact_id.clone(),
        tenant: tenant.clone(),
        user: user.clone(),
        session: None,
        role: FACT_ROLE.into(),
        content: fact_text(subject, attribute, &a.value),
        ts: Utc
            .timestamp_micros(a.valid_from_micros)
            .single()
            .unwrap_or_default(),
        turn: None,
        importance: None,
        log_offset: a.log_offset,
        vector,
    }
}

pub fn spawn_episode_writer(
    rx: Receiver<EpisodeBatch>,
    store: Arc<EpisodeStore>,
    passages: Option<Arc<PassageSink>>,
    side: SideTables,
    embedder: Arc<Embedder>,
    rt: tokio::runtime::Handle,
    stop: Arc<AtomicBool>,
    backlog: Arc<Backlog>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("episode-embedder".into())
        .spawn(move || {
            let (to_appender, embedded) = std::sync::mpsc::sync_channel(APPEND_QUEUE);
            let appender = {
                let (store, stop, passages) = (store.clone(), stop.clone(), passages.clone());
                let side = side.clone();
                std::thread::Builder::new()
                    .name("episode-appender".into())
                    .spawn(move || {
                        append_stage(embedded, &store, passages.as_deref(), &side, &rt, &stop)
                    })
                    .expect("spawn the episode appender")
            };
            embed_stage(
                rx,
                &store,
                passages.as_deref(),
                &side,
                &embedder,
                &stop,
                to_appender,
                &backlog,
                &appender,
            );
            let _ = appender.join();
        })
        .expect("spawn the episode writer")
}

#[allow(clippy::too_many_arguments)]
fn embed_stage(
    rx: Receiver<EpisodeBatch>,
    store: &EpisodeStore,
    passages: Option<&PassageSink>,
    side: &SideTables,
    embedder: &Embedder,
    stop: &AtomicBool,
    to_appender: SyncSender<Embedded>,
    backlog: &Backlog,
    appender: &JoinHandle<()>,
) {
    let mut pending: Vec<(SessionKey, Episode)> = Vec::new();
    // rows of the side tables, not yet embedded (empty vectors), in log order
    let mut pending_facts: Vec<EpisodeRow> = Vec::new();
    let mut pending_summaries: Vec<EpisodeRow> = Vec::new();
    // the views' frontier of the latest batch received, and the last one sent on as recallable
    let (mut received_as_of, mut marked_as_of) = (0u64, 0u64);
    let receive = |b: EpisodeBatch,
                   pending: &mut Vec<(SessionKey, Episode)>,
                   pending_facts: &mut Vec<EpisodeRow>,
                   pending_summaries: &mut Vec<EpisodeRow>,
                   received_as_of: &mut u64| {
        *received_as_of = (*received_as_of).max(b.as_of);
        pending.extend(b.episodes);
        // a row is wanted when its table exists and has not stored its offset (one read of
        // each table's watermark per batch)
        let wanted = |table: &Option<Arc<EpisodeStore>>| {
            let watermark = table.as_ref().map(|t| t.watermark());
            move |offset: u64| watermark.is_some_and(|w| w.is_none_or(|w| offset > w))
        };
        let (fact_wanted, summary_wanted) = (wanted(&side.facts), wanted(&side.summaries));
        pending_facts.extend(
            b.facts
                .iter()
                .filter(|(_, a)| fact_wanted(a.log_offset))
                .map(|(key, a)| fact_row(key, a, Vec::new())),
        );
        pending_summaries.extend(
            b.summaries
                .iter()
                .filter(|(_, s)| summary_wanted(s.log_offset))
                .map(|(user, s)| summary_row(user, s, Vec::new())),
        );
    };
    loop {
        // On stop, what is not yet embedded stays in the log and is stored after the restart.
        if stop.load(Ordering::Acquire) {
            return;
        }
        let waiting = |p: &Vec<(SessionKey, Episode)>, f: &Vec<EpisodeRow>, s: &Vec<EpisodeRow>| {
            p.len() + f.len() + s.len()
        };
        if waiting(&pending, &pending_facts, &pending_summaries) == 0 {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(b) => receive(
                    b,
                    &mut pending,
                    &mut pending_facts,
                    &mut pending_summaries,
                    &mut received_as_of,
                ),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        // Take whatever else is already waiting: batches grow with load.
        while waiting(&pending, &pending_facts, &pending_summaries) < MAX_PENDING {
            match rx.try_recv() {
                Ok(b) => receive(
                    b,
                    &mut pending,
                    &mut pending_facts,
                    &mut pending_summaries,
                    &mut received_as_of,
                ),
                Err(_) => break,
            }
        }
        // Facts and summaries go in chunks of their own, all of one log offset together (a
        // table skips offsets it holds, so one offset's rows must not be split over two
        // commits).
        let as_facts: fn(Vec<EpisodeRow>) -> Embedded = |facts| Embedded {
            facts,
            ..Embedded::default()
        };
        let as_summaries: fn(Vec<EpisodeRow>) -> Embedded = |summaries| Embedded {
            summaries,
            ..Embedded::default()
        };
        for (pending_side, table, what, embedded) in [
            (&mut pending_facts, &side.facts, "embedding facts", as_facts),
            (
                &mut pending_summaries,
                &side.summaries,
                "embedding summaries",
                as_summaries,
            ),
        ] {
            if pending_side.is_empty() {
                continue;
            }
            let Some(rows) = embed_side_chunk(pending_side, embedder, stop, what) else {
                return;
            };
            if let Some(table) = table {
                table.stage(&rows);
            }
            if to_appender.send(embedded(rows)).is_err() {
                return;
            }
        }
        let watermark = store.watermark();
        let stored = |e: &Episode| watermark.is_some_and(|w| e.log_offset <= w);
        pending.retain(|(_, e)| !stored(e) || passages.is_some_and(|p| p.wants(e)));
        let take = pending.len().min(EMBED_CHUNK);
        let chunk: Vec<(SessionKey, Episode)> = pending.drain(..take).collect();
        // once this chunk is staged, every event below the views' frontier and below the
        // oldest row still waiting is recallable (under steady load rows are always waiting:
        // marking only when none is would hold the mark back, and the backlog growing, until
        // the writer catches up completely)
        let mark = recallable_mark(
            received_as_of,
            pending
                .iter()
                .map(|(_, e)| e.log_offset)
                .chain(pending_facts.iter().map(|r| r.log_offset))
                .chain(pending_summaries.iter().map(|r| r.log_offset)),
        );
        let mut rows = Embedded::default();
        if !chunk.is_empty() {
            let Some(embedded) = embed_episodes(&chunk, &stored, passages, embedder, stop) else {
                return;
            };
            rows = embedded;
            while store.staged_row_count() + rows.episodes.len() > MAX_STAGED_ROWS {
                // an appender that ended (stopped, or panicked) frees no more room
                if stop.load(Ordering::Acquire) || appender.is_finished() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            // recall finds them from now on, not only once the commit below has run
            if let Some(p) = passages {
                p.store.stage(&rows.passages);
            }
            store.stage(&rows.episodes);
        }
        if mark > marked_as_of {
            marked_as_of = mark;
            backlog.recallable(mark);
        }
        if !chunk.is_empty() && to_appender.send(rows).is_err() {
            return;
        }
    }
}

/// Below which log offset every event is recallable once the rows embedded so far are staged:
/// the views' frontier of the batches received (`received_as_of`), or the offset of the oldest
/// row received and still waiting (`waiting`) if that is lower.
fn recallable_mark(received_as_of: u64, waiting: impl Iterator<Item = u64>) -> u64 {
    waiting.fold(received_as_of, u64::min)
}

/// The rows of an episode chunk, embedded: its episodes not yet `stored`, and the passages
/// `passages` wants; `None` once the writer is stopped.
fn embed_episodes(
    chunk: &[(SessionKey, Episode)],
    stored: &dyn Fn(&Episode) -> bool,
    passages: Option<&PassageSink>,
    embedder: &Embedder,
    stop: &AtomicBool,
) -> Option<Embedded> {
    let fresh: Vec<&(SessionKey, Episode)> = chunk.iter().filter(|(_, e)| !stored(e)).collect();
    // a turn is embedded by its body: a speaker prefix would dominate a short turn's vector
    // (tenant, text): each text is cached under its own tenant
    let mut texts: Vec<(&str, &str)> = fresh
        .iter()
        .map(|(key, e)| (key.0.as_str(), embedding_text(&e.content)))
        .collect();
    let split = passage_texts(chunk, passages);
    texts.extend(
        split
            .iter()
            .map(|(i, _, t)| (chunk[*i].0 .0.as_str(), t.as_str())),
    );
    let mut vectors = retry(stop, "embedding episodes", texts.len(), || {
        embedder.embed_each(&texts)
    })?;
    let passage_vectors = vectors.split_off(fresh.len());
    let episodes = fresh
        .iter()
        .zip(vectors)
        .map(|((key, e), vector)| episode_row(key, e, vector))
        .collect();
    let passages = split
        .into_iter()
        .zip(passage_vectors)
        .map(|((i, n, text), vector)| {
            let (key, e) = &chunk[i];
            let mut row = episode_row(key, e, vector);
            row.id = format!("{}{PASSAGE_ID_SEPARATOR}{n}", e.id);
            row.content = text;
            row
        })
        .collect();
    let rows = Embedded {
        passages,
        episodes,
        ..Embedded::default()
    };
    Some(rows)
}

/// The passages of the episodes of `chunk` that `passages` wants: `(episode in chunk, passage
/// number, text)`; none without a passage table.
fn passage_texts(
    chunk: &[(SessionKey, Episode)],
    passages: Option<&PassageSink>,
) -> Vec<(usize, usize, String)> {
    let mut split = Vec::new();
    if let Some(p) = passages {
        for (i, (_, e)) in chunk.iter().enumerate() {
            if p.wants(e) {
                let parts = crate::pipeline::passages::passages(
                    embedding_text(&e.content),
                    p.max_per_episode,
                );
                split.extend(parts.into_iter().enumerate().map(|(n, t)| (i, n, t)));
            }
        }
    }
    split
}

/// Embeds the first chunk of `pending` side-table rows (at most [`EMBED_CHUNK`], extended to
/// the end of the last row's log offset) by their content and takes them out of `pending`;
/// `None` once the writer is stopped.
fn embed_side_chunk(
    pending: &mut Vec<EpisodeRow>,
    embedder: &Embedder,
    stop: &AtomicBool,
    what: &str,
) -> Option<Vec<EpisodeRow>> {
    let mut take = pending.len().min(EMBED_CHUNK);
    while take < pending.len() && pending[take].log_offset == pending[take - 1].log_offset {
        take += 1;
    }
    let mut chunk: Vec<EpisodeRow> = pending.drain(..take).collect();
    let texts: Vec<(&str, &str)> = chunk
        .iter()
        .map(|r| (r.tenant.as_str(), r.content.as_str()))
        .collect();
    let vectors = retry(stop, what, texts.len(), || embedder.embed_each(&texts))?;
    for (row, vector) in chunk.iter_mut().zip(vectors) {
        row.vector = vector;
    }
    Some(chunk)
}

/// A passage's id is its episode's id, this separator, and its number in the episode.
pub const PASSAGE_ID_SEPARATOR: &str = "#p";

fn append_stage(
    embedded: Receiver<Embedded>,
    store: &EpisodeStore,
    passages: Option<&PassageSink>,
    side: &SideTables,
    rt: &tokio::runtime::Handle,
    stop: &AtomicBool,
) {
    // Ends when the embedding stage ends (its sender is dropped) and everything it sent is
    // committed. Passages are committed before their episodes; each store skips offsets it
    // already holds, so a crash between the two commits repeats nothing.
    let mut last_commit: Option<Instant> = None;
    while let Ok(mut batch) = embedded.recv() {
        let rows =
            |b: &Embedded| b.episodes.len() + b.passages.len() + b.facts.len() + b.summaries.len();
        // rows gathered until MIN_COMMIT_INTERVAL after the last commit (or MAX_ROWS_PER_COMMIT)
        let due = last_commit.map(|t| t + MIN_COMMIT_INTERVAL);
        while rows(&batch) < MAX_ROWS_PER_COMMIT {
            let wait = due.map_or(Duration::ZERO, |d| {
                d.saturating_duration_since(Instant::now())
            });
            match embedded.recv_timeout(wait) {
                Ok(more) => {
                    batch.episodes.extend(more.episodes);
                    batch.passages.extend(more.passages);
                    batch.facts.extend(more.facts);
                    batch.summaries.extend(more.summaries);
                }
                Err(_) => break,
            }
        }
        last_commit = Some(Instant::now());
        for (table, rows, what) in [
            (&side.facts, &batch.facts, "storing facts"),
            (&side.summaries, &batch.summaries, "storing summaries"),
        ] {
            if let (Some(store), false) = (table, rows.is_empty()) {
                if retry(stop, what, rows.len(), || {
                    rt.block_on(store.append(rows.clone()))
                })
                .is_none()
                {
                    return;
                }
            }
        }
        if let (Some(p), false) = (passages, batch.passages.is_empty()) {
            let rows = &batch.passages;
            if retry(stop, "storing passages", rows.len(), || {
                rt.block_on(p.store.append(rows.clone()))
            })
            .is_none()
            {
                return;
            }
        }
        if !batch.episodes.is_empty() {
            let rows = &batch.episodes;
            match retry(stop, "storing episodes", rows.len(), || {
                rt.block_on(store.append(rows.clone()))
            }) {
                Some(written) => tracing::debug!(rows = written, "episodes stored"),
                None => return,
            }
        }
    }
}

/// Runs `step` until it succeeds (backing off up to 5 s between tries), or returns `None` once
/// the writer is stopped.
fn retry<T, E: std::fmt::Display>(
    stop: &AtomicBool,
    what: &str,
    rows: usize,
    mut step: impl FnMut() -> Result<T, E>,
) -> Option<T> {
    let mut backoff = Duration::from_millis(100);
    loop {
        match step() {
            Ok(v) => return Some(v),
            Err(err) => {
                tracing::error!(%err, rows, "{what} failed; retrying");
                if stop.load(Ordering::Acquire) {
                    return None;
                }
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
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

#[cfg(test)]
mod tests {
    use super::recallable_mark;

    #[test]
    fn rows_still_waiting_hold_the_recallable_mark_below_them_only() {
        // nothing waiting: all below the frontier
        assert_eq!(recallable_mark(500, std::iter::empty()), 500);
        // rows of offsets 420 and 430 still waiting (not in log order): all below 420 was sent
        assert_eq!(recallable_mark(500, [430, 420, 499].into_iter()), 420);
        // a row waiting at the frontier's offset or above does not hold it back
        assert_eq!(recallable_mark(500, [500, 640].into_iter()), 500);
    }
}
