//! Sustained throughput from Kafka to the views, and on to Lance with embeddings, in one run.
//!
//!     cargo run -p engram-bench --bin kafka_throughput -- [events] [users]
//!
//! Starts librdkafka's mock cluster (the Kafka protocol over loopback, in this process), or
//! with `ENGRAM_BENCH_BROKERS=HOST:PORT` uses that broker (e.g. a fresh `tansu` process with
//! engram's topics created), sends `events` synthetic messages (default 20,000) keyed
//! `tenant/user` to `engram.interactions`,
//! then starts the engine with its Kafka source and measures, from the moment it starts
//! consuming:
//! - Kafka → views: until the event log holds every event and the views are as of its end
//!   (validation, log append and sync, the memory dataflow; no embedding);
//! - Kafka → the Lance events table: until `events.lance` holds every event (the point after
//!   which offsets are committed);
//! - Kafka → Lance: until every episode is embedded and committed to Lance as well.
//!
//! The engine's configuration is the default one, or the file `ENGRAM_CONFIG` names.

use engram_bench::{numeric_args, sentence};
use engram_engine::ingest::kafka::{run_kafka_source, KafkaConfig};
use engram_engine::{Config, Engine};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rdkafka::config::ClientConfig;
use rdkafka::mocking::MockCluster;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = numeric_args();
    let events = args.first().copied().unwrap_or(20_000);
    let users = args.get(1).copied().unwrap_or(100);

    let topics = KafkaConfig::default();
    // the mock cluster lives as long as `_mock`; an external broker needs none
    let (brokers, _mock, broker_name) = match std::env::var("ENGRAM_BENCH_BROKERS") {
        Ok(brokers) => (brokers.clone(), None, format!("the broker at {brokers}")),
        Err(_) => {
            let mock = MockCluster::new(1)?;
            for (topic, _kind) in topics.input_topics() {
                mock.create_topic(&topic, 4, 1)?;
            }
            mock.create_topic(&topics.dlq_topic(), 4, 1)?;
            (
                mock.bootstrap_servers(),
                Some(mock),
                "the mock cluster".to_string(),
            )
        }
    };
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", &brokers)
        .set("queue.buffering.max.messages", "1000000")
        .create()?;
    let mut rng = StdRng::seed_from_u64(7);
    let start_ts = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
    for i in 0..events {
        let user = format!("user{}", rng.gen_range(0..users));
        let event = serde_json::json!({
            "kind": "interaction", "event_id": format!("k{i}"), "tenant": "bench",
            "user": user, "session": format!("s{}", i / (25 * users)),
            "ts": (start_ts + chrono::Duration::seconds(i as i64)).to_rfc3339(),
            "role": if i % 2 == 0 { "user" } else { "assistant" },
            "content": sentence(&mut rng),
        });
        let (key, payload) = (format!("bench/{user}"), event.to_string());
        producer
            .send(
                BaseRecord::to("engram.interactions")
                    .key(&key)
                    .payload(&payload),
            )
            .map_err(|(e, _)| e)?;
    }
    producer.flush(Duration::from_secs(60))?;
    println!("sent {events} events for {users} users to {broker_name}");

    let dir = tempfile::tempdir()?;
    // ENGRAM_CONFIG (e.g. an `[embedder]` table with another model) as `engram serve` reads it
    let config_file = std::env::var_os("ENGRAM_CONFIG").map(std::path::PathBuf::from);
    let mut config = Config::load(config_file.as_deref())?;
    config.data_dir = dir.path().to_path_buf();
    config.demo = false;
    config.kafka = KafkaConfig {
        brokers,
        ..KafkaConfig::default()
    };
    let engine = Engine::start(config.clone()).await?;
    let stop = Arc::new(AtomicBool::new(false));
    if !engine.tenants.contains("bench") {
        engine.tenants.create("bench")?;
    }
    let source = tokio::spawn(run_kafka_source(
        config.kafka.clone(),
        engine.kafka_sink(),
        config.workers,
        stop.clone(),
    ));
    // the clock starts with the first event logged (group join and start-up excluded)
    while engine.progress().log_end == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let started = Instant::now();
    loop {
        let p = engine.progress();
        if p.log_end as usize >= events && p.views_as_of >= p.log_end {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let to_views = started.elapsed().as_secs_f64();
    while (engine.events.end() as usize) < events {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let to_events_table = started.elapsed().as_secs_f64();
    loop {
        let p = engine.progress();
        if p.caught_up() && p.episodes >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let to_lance = started.elapsed().as_secs_f64();
    stop.store(true, std::sync::atomic::Ordering::Release);
    source.await??;
    engine.stop().await?;
    println!(
        "Kafka → views: {events} events in {to_views:.2} s = {:.0} events/s (no embedding)",
        events as f64 / to_views
    );
    println!(
        "Kafka → Lance events table (offsets committable): {to_events_table:.2} s = {:.0} events/s",
        events as f64 / to_events_table
    );
    println!(
        "Kafka → views → Lance with embeddings: {to_lance:.2} s = {:.0} events/s",
        events as f64 / to_lance
    );
    Ok(())
}
