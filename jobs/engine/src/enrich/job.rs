//! The enrichment job: reads the log from its own offset, gathers finished sessions into
//! batches ([`SessionBatcher`]), asks the model about each (at most `concurrency` at once, with
//! retries and backoff), and publishes what it read ([`read_answer`]) through the ingestor,
//! like any client's events. Never on the ingest path: it only reads the log and appends to it.
//!
//! Resumable: `enrich/state.json` in the data folder holds the offset to read from again (the
//! oldest turn not yet answered for) and, per session, the last offset already answered for,
//! saved after every answer, so that a restart skips no turn and does not ask again about a
//! session answered before the save. Idempotent: the events' ids follow from the batch
//! ([`super::answer`]), and a batch whose summary is already accepted is not asked again. An
//! erase wins: batches of the user are dropped when it is read, nothing is sent for a user
//! erased since, and the ingestor refuses derived events of a user erased after the turns they
//! were read from (an answer that was with the model when the erase came). Bounded: reading
//! stops while [`QUEUE_PER_REQUEST`] batches per request wait for the model.

use super::answer::{read_answer, summary_event_id};
use super::sessions::{Batch, SessionBatcher};
use super::{EnrichConfig, EnrichPrompt, EnrichStats};
use crate::config::Config;
use crate::ingest::Ingestor;
use crate::llm::{ChatClient, LlmError, Sampling};
use engram_connectors::Rejection;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Records read from the log at a time.
const READ_CHUNK: usize = 512;
/// How often the job looks for new records when it has read everything.
const POLL: Duration = Duration::from_millis(500);
/// Most turns read and not yet sent; past it every open session is sent as it is.
const MAX_OPEN_TURNS: usize = 50_000;
/// Batches that may wait for the model, per request it may have at once: reading stops
/// while more wait (a slow or absent model holds the reading back, not memory).
const QUEUE_PER_REQUEST: usize = 4;

/// `Follow` reads new records for as long as the engine runs (`engram serve`); `Backlog` reads
/// the log up to its end when it starts, sends every session (finished or not) and returns
/// (`engram enrich`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Follow,
    Backlog,
}

/// Session key: tenant, user, session.
type SessionKey = (String, String, Option<String>);

fn session_key(batch: &Batch) -> SessionKey {
    (
        batch.tenant.clone(),
        batch.user.clone(),
        batch.session.clone(),
    )
}

/// What `enrich/state.json` holds.
#[derive(Debug, Default, Serialize, Deserialize)]
struct JobState {
    /// Read again from here after a restart.
    read_from: u64,
    /// Per session (`tenant`, `user`, `session`), the offset of the last turn answered for,
    /// where that is at or above `read_from`.
    #[serde(default)]
    sent: Vec<(SessionKey, u64)>,
}

struct Context {
    ingestor: Arc<Ingestor>,
    client: ChatClient,
    prompt: EnrichPrompt,
    config: EnrichConfig,
    model: String,
    stats: Arc<EnrichStats>,
}

/// Why a batch was not answered: the model server did not answer it (it is asked again
/// later).
#[derive(Debug)]
struct NotAnswered(String);

pub struct EnrichJob {
    context: Arc<Context>,
    state_file: PathBuf,
}

impl EnrichJob {
    /// The job `config` asks for, or `None` when `enrich.url` is unset or `enrich.enabled` is
    /// off. The chat server (`llm.url`) is not used unless named here too: enrichment costs
    /// tokens on every session, so it is asked for explicitly.
    pub fn new(
        config: &Config,
        ingestor: Arc<Ingestor>,
        stats: Arc<EnrichStats>,
    ) -> anyhow::Result<Option<Self>> {
        let e = &config.enrich;
        let Some(url) = e.url.clone() else {
            return Ok(None);
        };
        if !e.enabled {
            return Ok(None);
        }
        let model = e.model.clone().unwrap_or_else(|| config.llm.model.clone());
        let client = ChatClient::new(&url, &model, Duration::from_secs(e.timeout_secs))?;
        Ok(Some(EnrichJob {
            context: Arc::new(Context {
                ingestor,
                client,
                prompt: EnrichPrompt::load(e)?,
                config: e.clone(),
                model,
                stats,
            }),
            state_file: config.data_dir.join("enrich").join("state.json"),
        }))
    }

    /// Runs until `stop` turns true (in `Follow` mode) or the backlog is done.
    pub async fn run(
        self,
        mode: Mode,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) -> anyhow::Result<()> {
        let ctx = self.context.clone();
        let log = ctx.ingestor.log().clone();
        let state = read_state(&self.state_file)?;
        let log_end = log.end_offset();
        if state.read_from > log_end {
            tracing::warn!(
                read_from = state.read_from,
                log_end,
                "the enrichment state is ahead of the log (a restored log?): reading from its end"
            );
        }
        let mut pos = state.read_from.min(log_end);
        let mut sent: HashMap<SessionKey, u64> = state.sent.into_iter().collect();
        let mut batcher = SessionBatcher::new(&ctx.model, ctx.config.max_turns_per_request);
        let backlog_end = log.end_offset();
        let idle = Duration::from_secs(ctx.config.session_idle_secs);
        // batches to ask about, each with when it may be asked and how often it failed
        let mut queue: VecDeque<(Batch, Instant, u32)> = VecDeque::new();
        let mut in_flight = tokio::task::JoinSet::new();
        // task id → (session, first offset)
        let mut flying: BTreeMap<u64, (SessionKey, u64)> = BTreeMap::new();
        let mut next_task = 0u64;
        let mut last_saved = (u64::MAX, Instant::now());
        tracing::info!(model = %ctx.model, from = pos, ?mode, "enrichment job started");
        loop {
            if *stop.borrow() {
                break;
            }
            let end = if mode == Mode::Backlog {
                backlog_end
            } else {
                log.end_offset()
            };
            let mut read_any = false;
            let room = QUEUE_PER_REQUEST * ctx.config.concurrency.max(1);
            if pos < end && queue.len() + in_flight.len() < room {
                let reader = log.clone();
                let from = pos;
                let want = READ_CHUNK.min((end - pos) as usize);
                let records =
                    tokio::task::spawn_blocking(move || reader.read(from, want)).await??;
                let now = Instant::now();
                for (offset, bytes) in records {
                    pos = offset + 1;
                    read_any = true;
                    if engram_schemas::Redacted::from_record(&bytes).is_some() {
                        continue;
                    }
                    let Ok(event) = engram_schemas::Event::from_canonical_json(&bytes) else {
                        continue;
                    };
                    let key = (
                        event.header.tenant.clone(),
                        event.header.user.clone(),
                        event.header.session.clone(),
                    );
                    let is_turn = matches!(event.body, engram_schemas::Body::Interaction(_));
                    if is_turn && sent.get(&key).is_some_and(|last| offset <= *last) {
                        batcher.note_session(&event); // answered for before a restart
                        continue;
                    }
                    forget_in_queue(&mut queue, &mut sent, &event);
                    for batch in batcher.read(offset, &event, now) {
                        queue.push_back((batch, now, 0));
                    }
                }
            }
            let now = Instant::now();
            for batch in batcher.finish_idle(now, idle) {
                queue.push_back((batch, now, 0));
            }
            if batcher.open_turns() > MAX_OPEN_TURNS || (mode == Mode::Backlog && pos >= end) {
                for batch in batcher.finish_all() {
                    queue.push_back((batch, now, 0));
                }
            }
            // ask: in queue order, one batch of a session at a time (so a session's answers
            // come back in order), at most `concurrency`
            let mut waiting: HashSet<SessionKey> =
                flying.values().map(|(k, _)| k.clone()).collect();
            let mut index = 0;
            while in_flight.len() < ctx.config.concurrency.max(1) && index < queue.len() {
                let key = session_key(&queue[index].0);
                if queue[index].1 > now || waiting.contains(&key) {
                    waiting.insert(key);
                    index += 1;
                    continue;
                }
                let (batch, _, failures) = queue.remove(index).expect("index is in the queue");
                flying.insert(next_task, (key.clone(), batch.first_offset()));
                waiting.insert(key);
                let ctx = ctx.clone();
                let id = next_task;
                next_task += 1;
                in_flight.spawn(async move {
                    let outcome = enrich_batch(&ctx, &batch).await;
                    (id, batch, failures, outcome)
                });
            }
            ctx.stats.read_offset.store(pos, Ordering::Relaxed);
            ctx.stats
                .pending_batches
                .store((queue.len() + in_flight.len()) as u64, Ordering::Relaxed);
            if mode == Mode::Backlog && pos >= end && queue.is_empty() && in_flight.is_empty() {
                save_state(&self.state_file, pos, &sent)?;
                break;
            }
            // wait for an answer, new records or the stop
            let pause = if read_any { Duration::ZERO } else { POLL };
            let mut answered = false;
            tokio::select! {
                Some(done) = in_flight.join_next(), if !in_flight.is_empty() => {
                    let (id, batch, failures, outcome) = done?;
                    flying.remove(&id);
                    answered = true;
                    match outcome {
                        Ok(()) => {
                            let last = batch.turns.iter().map(|t| t.offset).max().unwrap_or(0);
                            sent.insert(session_key(&batch), last);
                        }
                        Err(NotAnswered(reason)) => {
                            let wait = ctx.config.retry_after_secs.max(1)
                                .saturating_mul(1 << failures.min(7)).min(3_600);
                            tracing::warn!(tenant = %batch.tenant, user = %batch.user, %reason,
                                retry_in_secs = wait, "enrichment batch not answered; asked again later");
                            let at = Instant::now() + Duration::from_secs(wait);
                            queue.push_front((batch, at, failures + 1));
                        }
                    }
                }
                _ = tokio::time::sleep(pause) => {}
                changed = stop.changed() => {
                    if changed.is_err() {
                        break; // the engine is gone
                    }
                }
            }
            // the state: read again from the oldest turn not answered for
            let read_from = [
                Some(pos),
                batcher.oldest_open_offset(),
                queue.iter().map(|(b, _, _)| b.first_offset()).min(),
                flying.values().map(|(_, o)| *o).min(),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(pos);
            sent.retain(|_, last| *last >= read_from);
            // at once after an answer (so a restart does not ask again), else at most once a
            // second as reading moves on
            let due = last_saved.1.elapsed() >= Duration::from_secs(1);
            if answered || (read_from != last_saved.0 && due) {
                let (file, entries) = (self.state_file.clone(), sent.clone());
                tokio::task::spawn_blocking(move || save_state(&file, read_from, &entries))
                    .await??;
                last_saved = (read_from, Instant::now());
            }
        }
        tracing::info!(read_to = pos, "enrichment job stopped");
        Ok(())
    }
}

/// Applies an erase or forget read from the log to batches waiting in `queue` (those still open
/// are the batcher's): an erased user's batches are dropped, and what the job remembers of
/// their sessions; a forgotten turn leaves its batch (a batch left empty is dropped).
fn forget_in_queue(
    queue: &mut VecDeque<(Batch, Instant, u32)>,
    sent: &mut HashMap<SessionKey, u64>,
    event: &engram_schemas::Event,
) {
    use engram_schemas::{Body, ControlAction, ControlScope};
    let Body::Control(c) = &event.body else {
        return;
    };
    let (tenant, user) = (&event.header.tenant, &event.header.user);
    let whole_tenant = c.scope == ControlScope::Tenant;
    let concerns = |t: &String, u: &String| t == tenant && (whole_tenant || u == user);
    match c.action {
        ControlAction::Erase => {
            queue.retain(|(b, _, _)| !concerns(&b.tenant, &b.user));
            sent.retain(|(t, u, _), _| !concerns(t, u));
        }
        ControlAction::Forget => {
            let target = c.target_event_id.as_deref();
            for (batch, _, _) in queue.iter_mut() {
                if concerns(&batch.tenant, &batch.user)
                    && batch
                        .turns
                        .iter()
                        .any(|t| Some(t.event_id.as_str()) == target)
                {
                    let turns = batch
                        .turns
                        .iter()
                        .filter(|t| Some(t.event_id.as_str()) != target);
                    *batch = batch.with_turns(turns.cloned().collect());
                }
            }
            queue.retain(|(b, _, _)| !b.turns.is_empty());
        }
        _ => {}
    }
}

/// Asks the model about `batch` and publishes what it read. `Err` only when the server did not
/// answer (after the retries) or the user's processing is restricted; an answer that cannot be
/// read, or a request the server refuses (a 4xx other than 408 and 429), is rejected and counts
/// as done. Nothing is sent for a user erased since the turns were read.
async fn enrich_batch(ctx: &Context, batch: &Batch) -> Result<(), NotAnswered> {
    let stats = &ctx.stats;
    let (tenant, user, first) = (&batch.tenant, &batch.user, batch.first_offset());
    if ctx.ingestor.erased_after(tenant, user, first) {
        return Ok(()); // erased since: their words go nowhere
    }
    if ctx.ingestor.is_restricted(tenant, user) {
        // processing is frozen for them: not even a model reads their words meanwhile
        return Err(NotAnswered("the user's processing is restricted".into()));
    }
    let (ingestor, summary_id) = (ctx.ingestor.clone(), summary_event_id(batch));
    let owner = tenant.clone();
    let done_before =
        tokio::task::spawn_blocking(move || ingestor.has_accepted(&owner, &summary_id))
            .await
            .unwrap_or(false);
    if done_before {
        return Ok(()); // answered before a restart
    }
    let messages = ctx.prompt.messages(batch);
    let sampling = Sampling {
        response_format: ctx.config.constrain_output.then(|| {
            serde_json::json!({"type": "json_schema",
                "json_schema": {"name": "engram_enrichment", "schema": ctx.prompt.schema}})
        }),
        ..Sampling::greedy(ctx.config.max_tokens)
    };
    let mut rejected = Vec::new();
    let mut attempt = 0;
    let completion = loop {
        stats.requests.fetch_add(1, Ordering::Relaxed);
        match ctx.client.complete_with(&messages, &sampling).await {
            Ok(c) => break Some(c),
            Err(LlmError::Answer { reason, .. }) => {
                // the server answered, with something that is not a chat completion
                stats.failed_requests.fetch_add(1, Ordering::Relaxed);
                rejected.push(whole(format!("the model server's answer: {reason}")));
                break None;
            }
            Err(LlmError::Status { status, body, .. })
                if (400..500).contains(&status) && status != 408 && status != 429 =>
            {
                // refused (too long for its context, a schema it does not take, an unknown
                // model): asking again would not help
                stats.failed_requests.fetch_add(1, Ordering::Relaxed);
                let why = format!("the model server refused the request: HTTP {status}: {body}");
                rejected.push(whole(why));
                break None;
            }
            Err(e) => {
                stats.failed_requests.fetch_add(1, Ordering::Relaxed);
                if attempt >= ctx.config.retries {
                    return Err(NotAnswered(e.to_string()));
                }
                tokio::time::sleep(Duration::from_secs(1 << attempt.min(6))).await;
                attempt += 1;
            }
        }
    };
    let mut events = Vec::new();
    if let Some(completion) = completion {
        count_usage(ctx, &completion);
        let read = read_answer(batch, &completion.content);
        events = read.events;
        rejected.extend(read.rejected);
    }
    let (ingestor, model, batch) = (ctx.ingestor.clone(), ctx.model.clone(), batch.clone());
    let published = tokio::task::spawn_blocking(move || {
        let report = ingestor.ingest_derived("enrich", events, first)?;
        // what the model got wrong is kept for the operator, unless the user is gone
        let erased = ingestor.erased_after(&batch.tenant, &batch.user, first);
        if report.erased == 0 && !erased {
            for item in &rejected {
                file_reject(ingestor.rejects(), &model, &batch, item);
            }
        }
        Ok::<_, crate::ingest::IngestError>((report.accepted, rejected.len()))
    })
    .await
    .map_err(|e| NotAnswered(format!("publishing failed: {e}")))?;
    match published {
        Ok((accepted, rejected)) => {
            stats
                .events_published
                .fetch_add(accepted as u64, Ordering::Relaxed);
            stats
                .rejected_items
                .fetch_add(rejected as u64, Ordering::Relaxed);
            stats.batches.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        // the log could not be written: ask again later rather than lose the answer's place
        Err(e) => Err(NotAnswered(format!("publishing failed: {e}"))),
    }
}

/// A rejection of the whole answer.
fn whole(reason: String) -> super::answer::RejectedItem {
    super::answer::RejectedItem {
        field: "$".into(),
        reason,
        original: String::new(),
    }
}

fn count_usage(ctx: &Context, completion: &crate::llm::Completion) {
    let stats = &ctx.stats;
    stats
        .prompt_tokens
        .fetch_add(completion.prompt_tokens, Ordering::Relaxed);
    stats
        .completion_tokens
        .fetch_add(completion.completion_tokens, Ordering::Relaxed);
    let cost = completion.prompt_tokens as f64 * ctx.config.prompt_usd_per_mtok
        + completion.completion_tokens as f64 * ctx.config.completion_usd_per_mtok;
    stats
        .cost_micro_usd
        .fetch_add(cost.round() as u64, Ordering::Relaxed);
}

/// Files what the model got wrong in the reject log, under the batch's tenant and user (so
/// an erase of the user removes it too).
fn file_reject(
    rejects: &engram_connectors::RejectLog,
    model: &str,
    batch: &Batch,
    item: &super::answer::RejectedItem,
) {
    tracing::warn!(tenant = %batch.tenant, user = %batch.user, field = %item.field,
        reason = %item.reason, "enrichment answer rejected");
    let original = serde_json::json!({
        "tenant": batch.tenant, "user": batch.user, "session": batch.session,
        "model": model, "batch": batch.key, "answer": item.original,
    });
    let rejection = Rejection {
        source: "enrich".into(),
        field: item.field.clone(),
        reason: item.reason.clone(),
        original: original.to_string(),
        rejected_at: chrono::Utc::now(),
    };
    if let Err(e) = rejects.record(Some(&batch.tenant), &[rejection]) {
        tracing::error!(error = %e, "the reject log could not be written");
    }
}

fn read_state(path: &PathBuf) -> anyhow::Result<JobState> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| anyhow::anyhow!("{}: not an enrichment state: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(JobState::default()),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", path.display())),
    }
}

/// Writes the state durably: a new file, synced, renamed over the old one.
fn save_state(
    path: &PathBuf,
    read_from: u64,
    sent: &HashMap<SessionKey, u64>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let dir = path.parent().expect("the state file is in a folder");
    std::fs::create_dir_all(dir)?;
    let mut sent: Vec<(SessionKey, u64)> = sent.iter().map(|(k, v)| (k.clone(), *v)).collect();
    sent.sort();
    let state = JobState { read_from, sent };
    let tmp = path.with_extension("json.tmp");
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(&serde_json::to_vec(&state)?)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::enrich::sessions::SessionBatcher;
    use serde_json::json;

    fn event(value: serde_json::Value) -> engram_schemas::Event {
        engram_schemas::parse_event_value(&value, None).unwrap()
    }

    fn turn(id: &str, user: &str) -> engram_schemas::Event {
        event(
            json!({"event_id": id, "tenant": "t", "user": user, "session": "s",
                     "ts": "2023-05-08T13:56:00Z", "role": "user",
                     "content": "I told my sister about the divorce."}),
        )
    }

    #[test]
    fn an_erase_drops_waiting_batches_and_a_forget_one_turn_of_them() {
        let now = Instant::now();
        let mut batcher = SessionBatcher::new("m", 40);
        for (i, (id, user)) in [("a1", "ann"), ("a2", "ann"), ("b1", "bob")]
            .iter()
            .enumerate()
        {
            batcher.read(i as u64, &turn(id, user), now);
        }
        let mut queue: VecDeque<(Batch, Instant, u32)> = batcher
            .finish_all()
            .into_iter()
            .map(|b| (b, now, 0))
            .collect();
        let ann_key = queue[0].0.key.clone();
        let mut sent: HashMap<SessionKey, u64> = HashMap::new();
        sent.insert(("t".into(), "bob".into(), Some("s0".into())), 9);
        let forget = event(json!({"event_id": "f", "tenant": "t", "user": "ann",
            "ts": "2023-05-09T00:00:00Z", "kind": "control", "action": "forget",
            "target_event_id": "a1"}));
        forget_in_queue(&mut queue, &mut sent, &forget);
        let ids: Vec<Vec<&str>> = queue
            .iter()
            .map(|(b, _, _)| b.turns.iter().map(|t| t.event_id.as_str()).collect())
            .collect();
        assert_eq!(ids, [vec!["a2"], vec!["b1"]]);
        assert_ne!(
            queue[0].0.key, ann_key,
            "a batch without the turn is another batch"
        );
        let erase = event(json!({"event_id": "e", "tenant": "t", "user": "bob",
            "ts": "2023-05-09T00:00:00Z", "kind": "control", "action": "erase"}));
        forget_in_queue(&mut queue, &mut sent, &erase);
        assert_eq!(queue.len(), 1);
        assert_eq!(queue[0].0.user, "ann");
        assert!(sent.is_empty(), "what the job remembers of bob goes too");
    }
}
