//! Kafka in (SPEC §2): a consumer in a consumer group reads `engram.interactions`,
//! `engram.corrections`, `engram.feedback` and `engram.control`, and hands each batch to the
//! same [`Ingestor`] as the HTTP API. Bad messages go to `engram.dlq` with their original bytes
//! as the payload and the reason in headers.
//!
//! Exactly once into Lance: a batch's offsets are committed only after its events are appended
//! to the log (which syncs them to disk) and committed to the Lance `events` table behind it,
//! and its rejects are acknowledged by the DLQ. A crash before the commit redelivers the batch,
//! and the ingestor, which knows every event id the log holds, stores nothing twice.
//!
//! The Kafka client itself (settings, batches, commits, the DLQ, `engram produce`) is
//! [`engram_connectors::kafka`].

use crate::ingest::backlog::Backlog;
use crate::ingest::kafka_throttle::{commit_positions, KafkaThrottle, Offered};
use crate::ingest::{refuse_tenant_scope, Ingestor};
use crate::tenant_limits::TenantLimits;
use crate::tenants::TenantRegistry;
use engram_connectors::kafka::{
    assigned, commit, next_batch, send_to_dlq, wait_in_lance, FutureProducer, Received,
    StreamConsumer,
};
pub use engram_connectors::kafka::{produce_files, KafkaConfig, ProduceReport};
use engram_connectors::EventTable;
use engram_schemas::{parse_event, EventKind};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a failed offset commit is retried.
const COMMIT_RETRY: Duration = Duration::from_secs(30);

/// What a Kafka source feeds and answers to.
#[derive(Clone)]
pub struct KafkaSink {
    pub ingestor: Arc<Ingestor>,
    /// Offsets are committed once this table holds the events they cover.
    pub events: Arc<EventTable>,
    pub tenants: Arc<TenantRegistry>,
    /// Each tenant's rate limits, shared with HTTP.
    pub limits: Arc<TenantLimits>,
}

/// Consumes the input topics into the ingestor until `stop` is set, with `members` consumers in
/// the group (one per timely worker): the group shares the partitions out among them, and among
/// the members of other engram instances, and moves them on a rebalance. Waits out broker
/// outages (librdkafka reconnects; nothing is committed meanwhile).
pub async fn run_kafka_source(
    config: KafkaConfig,
    sink: KafkaSink,
    members: usize,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let mut tasks = tokio::task::JoinSet::new();
    for member in 0..members.max(1) {
        let (config, sink, stop) = (config.clone(), sink.clone(), stop.clone());
        tasks.spawn(async move { consume(member, config, sink, stop).await });
    }
    // in the order they end: a member that fails stops the others at once (awaited in spawn
    // order, a failed member went unreported while an earlier one kept running)
    let mut first_error = None;
    while let Some(ended) = tasks.join_next().await {
        if let Err(err) = ended.map_err(anyhow::Error::from).and_then(|r| r) {
            tracing::error!(%err, "a Kafka consumer stopped");
            stop.store(true, Ordering::Release);
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Takes no message until the backlog falls to its resume mark (or `stop`): the messages
/// stay on the broker, and librdkafka's read-ahead is bounded by its own queue limits
/// (`queued.max.messages.kbytes`). The wait lasts as long as the pipeline takes to drain half
/// the limit (seconds), far below the group's `max.poll.interval.ms`, and librdkafka keeps the
/// membership alive with its own heartbeats.
///
/// Not librdkafka's pause/resume of the assigned partitions: against the test broker a resumed
/// partition delivered nothing more (148 of 1,100 events held back until a restart), even
/// with a seek to the application's position after the resume.
async fn wait_while_backlogged(backlog: &Backlog, stop: &AtomicBool) {
    backlog.kafka_pauses.fetch_add(1, Ordering::Relaxed);
    backlog.kafka_paused.fetch_add(1, Ordering::Relaxed);
    tracing::info!(
        backlog = backlog.events(),
        limit = backlog.limit(),
        "kafka consumption paused: engram is behind"
    );
    while backlog.over_limit() && !stop.load(Ordering::Acquire) {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    backlog.kafka_paused.fetch_sub(1, Ordering::Relaxed);
    tracing::info!(backlog = backlog.events(), "kafka consumption resumed");
}

/// Who is refused a tenant-scope control event from the topic.
const TENANT_CONTROL_OFF: &str =
    "the Kafka control topic (unless kafka.allow_tenant_control is set)";

/// Messages, and payload bytes, a consumer holds back for their tenants' limits before it takes
/// no more from the broker ([`KafkaThrottle::full`]).
const MAX_WAITING_MESSAGES: usize = 10_000;
const MAX_WAITING_BYTES: u64 = 64 << 20;

/// One member of the consumer group: takes batches, holds back the messages of tenants over
/// their limits ([`kafka_throttle`](super::kafka_throttle)), ingests the rest, and, once what it
/// ingested is in Lance, commits each partition none of whose messages are held.
async fn consume(
    member: usize,
    config: KafkaConfig,
    sink: KafkaSink,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<()> {
    let KafkaSink {
        ingestor,
        events,
        tenants,
        limits,
    } = sink;
    let kinds: BTreeMap<String, EventKind> = config.input_topics().into_iter().collect();
    let consumer = config.consumer(member)?;
    let topics: Vec<&str> = kinds.keys().map(String::as_str).collect();
    let dlq = config.producer()?;
    tracing::info!(member, brokers = %config.brokers, group = %config.group_id, ?topics, "kafka consumer started");
    let backlog = ingestor.backlog().clone();
    let mut throttle: KafkaThrottle<(Received, Parsed)> = KafkaThrottle::default();
    let mut gauge = WaitingGauge {
        backlog: &backlog,
        reported: BTreeMap::new(),
    };
    // per (topic, partition): the offset after the last message taken, and the last committed
    let mut consumed: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let mut committed: BTreeMap<(String, i32), i64> = BTreeMap::new();
    while !stop.load(Ordering::Acquire) {
        if backlog.over_limit() {
            wait_while_backlogged(&backlog, &stop).await;
        }
        let batch = if throttle.full(MAX_WAITING_MESSAGES, MAX_WAITING_BYTES) {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Vec::new()
        } else {
            next_batch(&consumer).await
        };
        if batch.is_empty() && throttle.waiting() == 0 {
            continue;
        }
        if throttle.waiting() > 0 {
            // a rebalance moved partitions away: their waiting messages are the new owner's now
            // (read again from the last commit, which none of them passed), and so is committing
            if let Some(mine) = assigned(&consumer) {
                if throttle.keep_partitions(&mine) > 0 {
                    consumed.retain(|tp, _| mine.contains(tp));
                    committed.retain(|tp, _| mine.contains(tp));
                }
            }
        }
        for m in &batch {
            let end = consumed.entry((m.topic.clone(), m.partition)).or_insert(0);
            *end = (*end).max(m.offset + 1);
        }
        let offered = batch
            .into_iter()
            .map(|m| {
                let parsed = parse_event(&m.payload, kinds.get(&m.topic).copied())
                    .and_then(|event| tenants.known(event))
                    .and_then(|event| match config.allow_tenant_control {
                        true => Ok(event),
                        false => refuse_tenant_scope(event, TENANT_CONTROL_OFF),
                    });
                Offered {
                    tenant: parsed.as_ref().ok().map(|e| e.header.tenant.clone()),
                    bytes: m.payload.len() as u64,
                    topic: m.topic.clone(),
                    partition: m.partition,
                    message: (m, parsed),
                }
            })
            .collect();
        let held_before = throttle.throttled;
        let passing = throttle.pass(offered, &limits, Instant::now());
        backlog
            .kafka_throttled
            .fetch_add(throttle.throttled - held_before, Ordering::Relaxed);
        gauge.set(throttle.waiting_by_tenant());
        if !passing.is_empty()
            && !ingest_passing(&ingestor, &events, &dlq, &config, passing, &stop).await?
        {
            // stopping: without a commit the messages come again after the restart; the good
            // ones are recognised, the bad ones go to the DLQ then
            break;
        }
        let offsets = commit_positions(&consumed, throttle.waiting_by_partition(), &committed);
        tracing::debug!(
            ?offsets,
            ?consumed,
            waiting = throttle.waiting(),
            "kafka commit positions"
        );
        if !offsets.is_empty() && commit_with_retry(&consumer, &offsets, &stop).await {
            committed.extend(offsets.into_iter().map(|(t, p, o)| ((t, p), o)));
        }
    }
    Ok(())
}

/// A message as parsed and checked for the ingestor.
type Parsed = Result<engram_schemas::Event, engram_schemas::EventError>;

/// This member's share of the backlog's waiting messages by tenant, taken back when it ends
/// (however it ends).
struct WaitingGauge<'a> {
    backlog: &'a Backlog,
    reported: BTreeMap<String, u64>,
}

impl WaitingGauge<'_> {
    /// Replaces this member's share with `waiting` (messages by tenant).
    fn set(&mut self, waiting: BTreeMap<String, u64>) {
        let mut by_tenant = self
            .backlog
            .kafka_waiting_by_tenant
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        for (tenant, n) in &waiting {
            *by_tenant.entry(tenant.clone()).or_default() += n;
        }
        for (tenant, n) in &self.reported {
            if let Some(count) = by_tenant.get_mut(tenant) {
                *count = count.saturating_sub(*n);
                if *count == 0 {
                    by_tenant.remove(tenant);
                }
            }
        }
        self.reported = waiting;
    }
}

impl Drop for WaitingGauge<'_> {
    fn drop(&mut self) {
        self.set(BTreeMap::new());
    }
}

/// Ingests `passing`, sends its rejects to the DLQ and waits until the Lance events table holds
/// what it accepted. `false`: stopping first (nothing may be committed).
async fn ingest_passing(
    ingestor: &Arc<Ingestor>,
    events: &EventTable,
    dlq: &FutureProducer,
    config: &KafkaConfig,
    passing: Vec<(Received, Parsed)>,
    stop: &AtomicBool,
) -> anyhow::Result<bool> {
    let (received, parsed): (Vec<Received>, Vec<Parsed>) = passing.into_iter().unzip();
    let originals: Vec<String> = received
        .iter()
        .map(|m| String::from_utf8_lossy(&m.payload).into_owned())
        .collect();
    let ing = ingestor.clone();
    let report =
        tokio::task::spawn_blocking(move || ing.ingest_parsed("kafka", parsed, &originals))
            .await??;
    for rejected in &report.rejected {
        let m = &received[rejected.index];
        if !send_to_dlq(dlq, &config.dlq_topic(), m, &rejected.error, stop).await {
            return Ok(false);
        }
    }
    // in the log; committed once in the Lance events table too
    if !wait_in_lance(events, report.log_end, stop).await {
        return Ok(false);
    }
    tracing::debug!(
        messages = received.len(),
        accepted = report.accepted,
        duplicates = report.duplicates,
        rejected = report.rejected.len(),
        "kafka messages ingested"
    );
    Ok(true)
}

/// Commits `offsets`, retrying for a while (a short broker outage). `false` when it did not
/// succeed (a long outage, the partitions moved to another instance, stopping): what it covers
/// is delivered again later and the log recognises its event ids.
async fn commit_with_retry(
    consumer: &Arc<StreamConsumer>,
    offsets: &[(String, i32, i64)],
    stop: &AtomicBool,
) -> bool {
    let give_up = Instant::now() + COMMIT_RETRY;
    loop {
        match commit(consumer, offsets).await {
            Ok(()) => return true,
            Err(err) if stop.load(Ordering::Acquire) || Instant::now() > give_up => {
                tracing::warn!(%err, "Kafka offsets not committed; the messages will be redelivered and recognised");
                return false;
            }
            Err(err) => {
                tracing::warn!(%err, "committing Kafka offsets failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}
