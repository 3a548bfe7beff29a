//! The Kafka client (SPEC §2): topic names, librdkafka settings per role, a consumer group
//! member's batches, offset commits, the dead-letter queue, and `engram produce`
//! ([`produce_files`]), which sends JSON-lines files to the topics keyed `tenant/user` (for
//! front ends to copy, and for tests). What the consumed batches feed (the engine's ingestor)
//! is the engine's `ingest::kafka`.

use crate::EventTable;
use engram_schemas::{parse_event, EventKind};
use rdkafka::config::ClientConfig;
/// The client types the engine's consumer loop holds.
pub use rdkafka::consumer::StreamConsumer;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::message::{Header, Message, OwnedHeaders};
pub use rdkafka::producer::FutureProducer;
use rdkafka::producer::FutureRecord;
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Messages read before a batch is ingested and committed.
const BATCH_MESSAGES: usize = 512;
/// Messages `engram produce` has in flight before it waits for their acknowledgements (below
/// librdkafka's default queue of 100,000).
const IN_FLIGHT: usize = 10_000;
/// How long a batch waits for more messages once it has one.
const BATCH_WAIT: Duration = Duration::from_millis(20);

#[derive(Debug, Clone, Copy)]
pub enum ClientRole {
    Consumer,
    Producer,
}

/// `kafka.properties` librdkafka reads only in a consumer (its CONFIGURATION.md, role C).
const CONSUMER_ONLY: &[&str] = &[
    "group.id",
    "group.instance.id",
    "group.protocol",
    "group.remote.assignor",
    "partition.assignment.strategy",
    "session.timeout.ms",
    "heartbeat.interval.ms",
    "coordinator.query.interval.ms",
    "max.poll.interval.ms",
    "enable.auto.commit",
    "auto.commit.interval.ms",
    "enable.auto.offset.store",
    "auto.offset.reset",
    "queued.min.messages",
    "queued.max.messages.kbytes",
    "fetch.wait.max.ms",
    "fetch.message.max.bytes",
    "max.partition.fetch.bytes",
    "fetch.max.bytes",
    "fetch.min.bytes",
    "fetch.error.backoff.ms",
    "isolation.level",
    "enable.partition.eof",
    "check.crcs",
];

/// `kafka.properties` librdkafka reads only in a producer (role P).
const PRODUCER_ONLY: &[&str] = &[
    "transactional.id",
    "transaction.timeout.ms",
    "enable.idempotence",
    "enable.gapless.guarantee",
    "queue.buffering.max.messages",
    "queue.buffering.max.kbytes",
    "queue.buffering.max.ms",
    "linger.ms",
    "message.send.max.retries",
    "retries",
    "batch.num.messages",
    "batch.size",
    "compression.codec",
    "compression.type",
    "request.required.acks",
    "acks",
    "request.timeout.ms",
    "message.timeout.ms",
    "delivery.timeout.ms",
    "partitioner",
    "sticky.partitioning.linger.ms",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// `host:port,…`; empty turns the Kafka source off.
    pub brokers: String,
    /// Consumer group: instances in one group share the partitions.
    pub group_id: String,
    /// Topic names are this prefix plus `interactions`, `corrections`, `feedback`, `control`
    /// and `dlq`.
    pub topic_prefix: String,
    /// Passed to librdkafka as they are: security settings (`security.protocol`,
    /// `sasl.mechanism`, `ssl.ca.location`, …) and tuning. The consumers get all but the
    /// producer-only ones, the DLQ producer all but the consumer-only ones.
    pub properties: BTreeMap<String, String>,
    /// Whether control events of a whole tenant (`scope: tenant`: erase, restrict, unrestrict)
    /// are accepted from the control topic. Off: anyone who may produce to the topic could
    /// otherwise erase a tenant; they go to the DLQ instead.
    pub allow_tenant_control: bool,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        KafkaConfig {
            brokers: String::new(),
            group_id: "engram".into(),
            topic_prefix: "engram.".into(),
            properties: BTreeMap::new(),
            allow_tenant_control: false,
        }
    }
}

impl KafkaConfig {
    /// The input topics and the kind of event each carries.
    pub fn input_topics(&self) -> Vec<(String, EventKind)> {
        [
            ("interactions", EventKind::Interaction),
            ("corrections", EventKind::Correction),
            ("feedback", EventKind::Feedback),
            ("control", EventKind::Control),
        ]
        .into_iter()
        .map(|(name, kind)| (format!("{}{name}", self.topic_prefix), kind))
        .collect()
    }

    /// The topic an event of `kind` belongs on. Facts and summaries travel with interactions
    /// ([`EventKind::topic_kind`]).
    pub fn topic_for(&self, kind: EventKind) -> String {
        let name = match kind.topic_kind() {
            EventKind::Correction => "corrections",
            EventKind::Feedback => "feedback",
            EventKind::Control => "control",
            _ => "interactions",
        };
        format!("{}{name}", self.topic_prefix)
    }

    pub fn dlq_topic(&self) -> String {
        format!("{}dlq", self.topic_prefix)
    }

    /// Client settings for `role`: the brokers, then `defaults`, then `properties` (which
    /// override both), less the properties only the other role reads (librdkafka warns of
    /// each one it is given and ignores).
    pub fn client(&self, role: ClientRole, defaults: &[(&str, &str)]) -> ClientConfig {
        let other_role_only = match role {
            ClientRole::Consumer => PRODUCER_ONLY,
            ClientRole::Producer => CONSUMER_ONLY,
        };
        let mut c = ClientConfig::new();
        c.set("bootstrap.servers", &self.brokers);
        for (key, value) in defaults {
            c.set(*key, *value);
        }
        for (key, value) in &self.properties {
            if !other_role_only.contains(&key.as_str()) {
                c.set(key, value);
            }
        }
        c
    }

    pub fn producer_config(&self) -> ClientConfig {
        self.client(
            ClientRole::Producer,
            &[
                ("enable.idempotence", "true"),
                ("message.timeout.ms", "30000"),
            ],
        )
    }

    pub fn producer(&self) -> anyhow::Result<FutureProducer> {
        Ok(self.producer_config().create()?)
    }

    /// Member `member` of the consumer group, subscribed to the input topics.
    pub fn consumer(&self, member: usize) -> anyhow::Result<Arc<StreamConsumer>> {
        let client_id = format!("engram-{member}");
        let mut client = self.client(
            ClientRole::Consumer,
            &[
                ("client.id", client_id.as_str()),
                ("group.id", self.group_id.as_str()),
                ("enable.auto.commit", "false"),
                ("auto.offset.reset", "earliest"),
                ("enable.partition.eof", "false"),
                // a crashed instance's partitions move to the others after 10 s, not 45
                ("session.timeout.ms", "10000"),
                ("heartbeat.interval.ms", "2000"),
            ],
        );
        // A static member id names one consumer: each member of this instance gets its own.
        if let Some(id) = self.properties.get("group.instance.id") {
            client.set("group.instance.id", format!("{id}-{member}"));
        }
        let consumer: Arc<StreamConsumer> = Arc::new(client.create()?);
        let mut topics: Vec<String> = self.input_topics().into_iter().map(|(t, _)| t).collect();
        topics.sort();
        let topics: Vec<&str> = topics.iter().map(String::as_str).collect();
        consumer.subscribe(&topics)?;
        Ok(consumer)
    }
}

/// Waits until `events` holds everything below `end`; false if stopped first (the batch is
/// then redelivered after the restart, and recognised).
pub async fn wait_in_lance(events: &EventTable, end: u64, stop: &AtomicBool) -> bool {
    let mut waited = Duration::ZERO;
    while !events.wait_for(end, Duration::from_secs(1)).await {
        if stop.load(Ordering::Acquire) {
            return false;
        }
        waited += Duration::from_secs(1);
        if waited.as_secs() % 30 == 0 {
            tracing::warn!(
                end,
                in_lance = events.end(),
                "Kafka commit waits for the Lance events table"
            );
        }
    }
    true
}

/// One consumed message, copied out of the consumer's buffers.
pub struct Received {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<Vec<u8>>,
    pub payload: Vec<u8>,
}

/// The `(topic, partition)`s the group gives `consumer` now; `None` when that cannot be read
/// (never an empty set in its place: a caller dropping what it holds of unassigned partitions
/// would drop everything).
pub fn assigned(consumer: &StreamConsumer) -> Option<std::collections::BTreeSet<(String, i32)>> {
    let list = consumer
        .assignment()
        .inspect_err(|err| tracing::warn!(%err, "reading the Kafka assignment failed"))
        .ok()?;
    Some(
        list.elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .collect(),
    )
}

/// Up to [`BATCH_MESSAGES`] messages: waits up to a second for the first, then
/// [`BATCH_WAIT`] for more. Errors (a broker away) are logged and end the batch.
pub async fn next_batch(consumer: &StreamConsumer) -> Vec<Received> {
    let mut batch = Vec::new();
    let mut deadline = Instant::now() + Duration::from_secs(1);
    while batch.len() < BATCH_MESSAGES {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, consumer.recv()).await {
            Err(_) => break,
            Ok(Err(err)) => {
                tracing::warn!(%err, "kafka receive failed; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
                break;
            }
            Ok(Ok(m)) => {
                if batch.is_empty() {
                    deadline = Instant::now() + BATCH_WAIT;
                }
                batch.push(Received {
                    topic: m.topic().to_string(),
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().map(<[u8]>::to_vec),
                    payload: m.payload().map(<[u8]>::to_vec).unwrap_or_default(),
                });
            }
        }
    }
    batch
}

/// Sends a rejected message to the DLQ: its original bytes and key, with the reason, the field
/// and where it came from in headers. Retries until the DLQ acknowledges it (true) or `stop`
/// is set (false: the caller must not commit the batch), so a rejected message is never
/// committed before it is kept.
pub async fn send_to_dlq(
    producer: &FutureProducer,
    topic: &str,
    m: &Received,
    error: &engram_schemas::EventError,
    stop: &AtomicBool,
) -> bool {
    let partition = m.partition.to_string();
    let offset = m.offset.to_string();
    loop {
        let headers = OwnedHeaders::new()
            .insert(Header {
                key: "engram.reason",
                value: Some(error.reason.as_str()),
            })
            .insert(Header {
                key: "engram.field",
                value: Some(error.field.as_str()),
            })
            .insert(Header {
                key: "engram.source.topic",
                value: Some(m.topic.as_str()),
            })
            .insert(Header {
                key: "engram.source.partition",
                value: Some(partition.as_str()),
            })
            .insert(Header {
                key: "engram.source.offset",
                value: Some(offset.as_str()),
            });
        let mut record = FutureRecord::to(topic)
            .payload(m.payload.as_slice())
            .headers(headers);
        if let Some(key) = &m.key {
            record = record.key(key.as_slice());
        }
        match producer.send(record, Duration::from_secs(10)).await {
            Ok(_) => return true,
            Err((err, _)) if !stop.load(Ordering::Acquire) => {
                tracing::warn!(%err, topic, "DLQ write failed; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err((err, _)) => {
                tracing::error!(%err, topic, "DLQ write failed while stopping; the message will be redelivered");
                return false;
            }
        }
    }
}

/// Per (topic, partition), the offset after the batch's last message there.
pub fn offsets_after(batch: &[Received]) -> Vec<(String, i32, i64)> {
    let mut next: BTreeMap<(&str, i32), i64> = BTreeMap::new();
    for m in batch {
        let e = next.entry((m.topic.as_str(), m.partition)).or_insert(0);
        *e = (*e).max(m.offset + 1);
    }
    next.into_iter()
        .map(|((topic, partition), offset)| (topic.to_string(), partition, offset))
        .collect()
}

/// Commits `offsets` synchronously on a blocking thread: during a broker outage a sync commit
/// waits for the broker for many seconds, and on a runtime worker it would stall the HTTP
/// server (two such waits fill both workers of a 2-core machine).
pub async fn commit(
    consumer: &Arc<StreamConsumer>,
    offsets: &[(String, i32, i64)],
) -> anyhow::Result<()> {
    let mut list = TopicPartitionList::new();
    for (topic, partition, offset) in offsets {
        list.add_partition_offset(topic, *partition, Offset::Offset(*offset))?;
    }
    let consumer = consumer.clone();
    tokio::task::spawn_blocking(move || consumer.commit(&list, CommitMode::Sync)).await??;
    Ok(())
}

/// What [`produce_files`] sent.
#[derive(Debug, Default, Serialize)]
pub struct ProduceReport {
    pub sent: usize,
    /// Lines that are not valid events, sent anyway (to `fallback_topic`, or the interactions
    /// topic) so that engram rejects them to the DLQ with the reason.
    pub invalid: usize,
}

/// Sends every non-empty line of `files` as one message: to the topic of its kind, keyed
/// `tenant/user` so a user's events stay in order in one partition. Lines that are not valid
/// events go to `fallback_topic` (default: the interactions topic), keyed by whatever
/// `tenant`/`user` they carry.
pub async fn produce_files(
    config: &KafkaConfig,
    files: &[PathBuf],
    fallback_topic: Option<&str>,
) -> anyhow::Result<ProduceReport> {
    let producer = config.producer()?;
    let fallback = fallback_topic
        .map(str::to_string)
        .unwrap_or_else(|| config.topic_for(EventKind::Interaction));
    let mut report = ProduceReport::default();
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
        let mut pending = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let (topic, key) = match parse_event(line.as_bytes(), None) {
                Ok(event) => (config.topic_for(event.kind()), event.key()),
                Err(_) => {
                    report.invalid += 1;
                    (fallback.clone(), loose_key(line))
                }
            };
            let record = FutureRecord::to(&topic).key(&key).payload(line);
            pending.push(producer.send_result(record).map_err(|(e, _)| e)?);
            report.sent += 1;
            if pending.len() >= IN_FLIGHT {
                for delivery in pending.drain(..) {
                    delivery
                        .await?
                        .map_err(|(e, _)| anyhow::anyhow!("delivery to Kafka failed: {e}"))?;
                }
            }
        }
        for delivery in pending {
            delivery
                .await?
                .map_err(|(e, _)| anyhow::anyhow!("delivery to Kafka failed: {e}"))?;
        }
    }
    Ok(report)
}

/// `tenant/user` of a line that is not a valid event, as far as it has them.
fn loose_key(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).unwrap_or_default();
    let field = |name: &str| value.get(name).and_then(|v| v.as_str()).unwrap_or("");
    format!("{}/{}", field("tenant"), field("user"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_produced_to_a_topic_whose_consumer_accepts_it() {
        let config = KafkaConfig {
            topic_prefix: "x.".into(),
            ..KafkaConfig::default()
        };
        let consumed: BTreeMap<String, EventKind> = config.input_topics().into_iter().collect();
        for kind in EventKind::ALL {
            let topic = config.topic_for(kind);
            let hint = consumed.get(&topic).copied();
            assert!(
                hint.is_some(),
                "{kind:?} goes to {topic}, which is not consumed"
            );
            let event = serde_json::json!({
                "kind": kind.as_str(), "event_id": "e1", "tenant": "t", "user": "u",
                "ts": "2025-01-01T00:00:00Z", "role": "user", "content": "hi",
                "target_event_id": "e0", "original": "a", "correction_type": "STYLE",
                "message_id": "m", "skill_id": "concise", "reward": 1,
                "subject": "user", "attribute": "city", "value": "Porto",
                "covers": ["e0"], "action": "forget", "relation": "met", "object": "Jo",
            });
            let parsed = parse_event(event.to_string().as_bytes(), hint);
            assert_eq!(
                parsed.map(|e| e.kind()).ok(),
                Some(kind),
                "{kind:?} on {topic}"
            );
        }
        assert_eq!(config.topic_for(EventKind::Summary), "x.interactions");
    }

    #[test]
    fn each_client_gets_the_properties_of_its_role_and_the_shared_ones() {
        let config = KafkaConfig {
            brokers: "127.0.0.1:9092".into(),
            properties: [
                ("group.instance.id", "engram-a"),
                ("session.timeout.ms", "6000"),
                ("linger.ms", "5"),
                ("security.protocol", "SASL_SSL"),
                ("message.timeout.ms", "1000"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
            ..KafkaConfig::default()
        };
        let producer = config.producer_config();
        assert_eq!(producer.get("group.instance.id"), None);
        assert_eq!(producer.get("session.timeout.ms"), None);
        assert_eq!(producer.get("linger.ms"), Some("5"));
        assert_eq!(producer.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(
            producer.get("message.timeout.ms"),
            Some("1000"),
            "properties override the defaults"
        );
        let consumer = config.client(ClientRole::Consumer, &[("session.timeout.ms", "10000")]);
        assert_eq!(consumer.get("session.timeout.ms"), Some("6000"));
        assert_eq!(consumer.get("group.instance.id"), Some("engram-a"));
        assert_eq!(consumer.get("linger.ms"), None);
        assert_eq!(consumer.get("message.timeout.ms"), None);
        assert_eq!(consumer.get("security.protocol"), Some("SASL_SSL"));
        assert_eq!(consumer.get("bootstrap.servers"), Some("127.0.0.1:9092"));
    }
}
