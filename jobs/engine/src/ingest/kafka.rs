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
use crate::ingest::{refuse_tenant_scope, Ingestor};
use crate::tenants::TenantRegistry;
use engram_connectors::kafka::{commit, next_batch, offsets_after, send_to_dlq, wait_in_lance};
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

/// One member of the consumer group.
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
    } = sink;
    let kinds: BTreeMap<String, EventKind> = config.input_topics().into_iter().collect();
    let consumer = config.consumer(member)?;
    let topics: Vec<&str> = kinds.keys().map(String::as_str).collect();
    let dlq = config.producer()?;
    tracing::info!(member, brokers = %config.brokers, group = %config.group_id, ?topics, "kafka consumer started");
    while !stop.load(Ordering::Acquire) {
        if ingestor.backlog().over_limit() {
            wait_while_backlogged(ingestor.backlog(), &stop).await;
        }
        let batch = next_batch(&consumer).await;
        if batch.is_empty() {
            continue;
        }
        let parsed = batch
            .iter()
            .map(|m| {
                parse_event(&m.payload, kinds.get(&m.topic).copied())
                    .and_then(|event| tenants.known(event))
                    .and_then(|event| match config.allow_tenant_control {
                        true => Ok(event),
                        false => refuse_tenant_scope(event, TENANT_CONTROL_OFF),
                    })
            })
            .collect();
        let originals: Vec<String> = batch
            .iter()
            .map(|m| String::from_utf8_lossy(&m.payload).into_owned())
            .collect();
        let ing = ingestor.clone();
        let report =
            tokio::task::spawn_blocking(move || ing.ingest_parsed("kafka", parsed, &originals))
                .await??;
        let mut all_in_dlq = true;
        for rejected in &report.rejected {
            let m = &batch[rejected.index];
            all_in_dlq &= send_to_dlq(&dlq, &config.dlq_topic(), m, &rejected.error, &stop).await;
        }
        if !all_in_dlq {
            // stopping: without a commit the batch comes again after the restart; its good
            // events are recognised, its bad ones go to the DLQ then
            break;
        }
        // The batch is in the log; commit once it is in the Lance events table too.
        if !wait_in_lance(&events, report.log_end, &stop).await {
            break;
        }
        // Retry the commit for a while (a short broker outage). If it
        // does not succeed (a long outage, the partitions moved to another instance, stopping),
        // the batch is redelivered later and the log recognises its event ids.
        let give_up = Instant::now() + COMMIT_RETRY;
        let offsets = offsets_after(&batch);
        while let Err(err) = commit(&consumer, &offsets).await {
            if stop.load(Ordering::Acquire) || Instant::now() > give_up {
                tracing::warn!(%err, "Kafka offsets not committed; the batch will be redelivered and recognised");
                break;
            }
            tracing::warn!(%err, "committing Kafka offsets failed; retrying");
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        tracing::debug!(
            messages = batch.len(),
            accepted = report.accepted,
            duplicates = report.duplicates,
            rejected = report.rejected.len(),
            "kafka batch committed"
        );
    }
    Ok(())
}
