//! Kafka and crashes, against a separate `tansu` broker process on a loopback port: a stream
//! is produced while `engram serve` (two consumers in the group, one per worker) consumes it
//! and is killed with SIGKILL at random moments, 20 times over, each time restarted. Afterwards
//! every event is stored exactly once (the Lance events table, and the episodes), and the views
//! equal those of a clean run that consumed the same topics without crashing, and a restart
//! with the embedded log deleted rebuilds the same views from Lance alone. A second test
//! kills the broker itself (SQLite storage) and starts it again after a while: engram waits
//! and then takes up the stream without loss or duplicates.
//!
//! The consumers use dynamic group membership: with a static one (`group.instance.id`), tansu
//! 0.6.0 assigned no partitions within 120 s, even to the first instance of a new group.

use engram_tests::tansu::Tansu;
use engram_tests::{events_in_lance, interaction, stored_event_ids, Server};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USERS: [&str; 4] = ["ana", "ben", "cai", "dee"];
const TRIALS: usize = 20;

/// A configuration file: the brokers, this group and a short session timeout (the broker
/// expires a killed instance's members, and hands their partitions on, after 3 s), which keeps
/// twenty restarts quick.
fn config_file(dir: &Path, brokers: &str, group: &str) -> std::path::PathBuf {
    let path = dir.join(format!("{group}.toml"));
    std::fs::write(
        &path,
        format!(
            "workers = 2\n[kafka]\nbrokers = \"{brokers}\"\ngroup_id = \"{group}\"\n\
             [kafka.properties]\n\
             \"session.timeout.ms\" = \"3000\"\n\"heartbeat.interval.ms\" = \"500\"\n"
        ),
    )
    .unwrap();
    path
}

fn start(data: &Path, config: &Path) -> Server {
    // events are produced before the first start: the tenant must exist by then
    engram_tests::create_tenant(data, "acme");
    Server::start_with(data, &["--config", config.to_str().unwrap()])
}

fn event(i: usize, rng: &mut StdRng) -> Value {
    let user = USERS[rng.gen_range(0..USERS.len())];
    let place = ["Lisbon", "Porto", "Berlin", "Oslo", "Kyoto"][rng.gen_range(0..5)];
    interaction(
        "acme",
        user,
        &format!("e{i:04}"),
        &format!("s{}", i / 25),
        i as u32,
        &format!("I met Jana Novak in {place} and we talked about the new laptop."),
    )
}

fn producer(brokers: &str) -> ThreadedProducer<DefaultProducerContext> {
    ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        .create()
        .unwrap()
}

/// Sends `events` and waits until the broker has them.
fn send(producer: &ThreadedProducer<DefaultProducerContext>, events: &[Value]) {
    enqueue(producer, events);
    producer.flush(Duration::from_secs(30)).unwrap();
}

/// Hands `events` to the producer, which sends them when it can.
fn enqueue(producer: &ThreadedProducer<DefaultProducerContext>, events: &[Value]) {
    for e in events {
        let key = format!(
            "{}/{}",
            e["tenant"].as_str().unwrap(),
            e["user"].as_str().unwrap()
        );
        let payload = e.to_string();
        producer
            .send(
                BaseRecord::to("engram.interactions")
                    .key(&key)
                    .payload(&payload),
            )
            .map_err(|(e, _)| e)
            .unwrap();
    }
}

fn wait_for_log_end(server: &Server, end: usize, within: Duration) {
    server.wait_for_log_end(end as u64, within);
}

/// Each user's memory as the views hold it (without the view offset, which differs by run).
fn memories(server: &Server) -> Vec<Value> {
    USERS
        .iter()
        .map(|user| {
            let (status, mut m) =
                server.post("/v1/memory", &json!({"tenant": "acme", "user": user}));
            assert_eq!(status, 200, "{m}");
            m.as_object_mut().unwrap().remove("views_as_of");
            m.as_object_mut().unwrap().remove("engine_time");
            m
        })
        .collect()
}

#[test]
fn kill_9_at_random_points_loses_and_duplicates_nothing() {
    let tansu = Tansu::start(2);
    let brokers = tansu.brokers.clone();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("crashing");
    let config = config_file(dir.path(), &brokers, "crashing");
    let mut rng = StdRng::seed_from_u64(9);
    // the stream: one event every 100 ms for as long as the trials last
    let done = Arc::new(AtomicBool::new(false));
    let stream = {
        let (done, brokers) = (done.clone(), brokers.clone());
        std::thread::spawn(move || {
            let producer = producer(&brokers);
            let mut rng = StdRng::seed_from_u64(10);
            let mut events = Vec::new();
            while !done.load(Ordering::Acquire) {
                let e = event(events.len(), &mut rng);
                send(&producer, std::slice::from_ref(&e));
                events.push(e);
                std::thread::sleep(Duration::from_millis(100));
            }
            events
        })
    };
    // how many events the log held when each kill came
    let mut at_kill: Vec<u64> = Vec::new();
    // restarts that found part of the log only in the Lance events table
    let mut from_lance = 0;
    for _ in 0..TRIALS {
        from_lance += usize::from(engram_tests::log_file_base(&data) > 0);
        let server = start(&data, &config);
        let before = at_kill.last().copied().unwrap_or(0);
        // wait until this instance is consuming, then kill it at a random moment as it goes on
        let start_wait = Instant::now();
        while server.status()["log_end"].as_u64().unwrap() == before
            && start_wait.elapsed() < Duration::from_secs(60)
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(rng.gen_range(0..400)));
        at_kill.push(server.status()["log_end"].as_u64().unwrap());
        server.kill9();
    }
    done.store(true, Ordering::Release);
    let events = stream.join().unwrap();
    eprintln!(
        "{} events; log end at each kill: {at_kill:?}; {from_lance} of {TRIALS} starts read the log's prefix from Lance",
        events.len()
    );
    assert!(
        from_lance > 0,
        "no restart read the log's prefix from Lance"
    );
    let progressed = at_kill.windows(2).filter(|w| w[1] > w[0]).count();
    assert_eq!(
        progressed,
        TRIALS - 1,
        "every instance consumed before it was killed: {at_kill:?}"
    );
    let server = start(&data, &config);
    wait_for_log_end(&server, events.len(), Duration::from_secs(120));
    server.wait_caught_up(Duration::from_secs(120));
    // nothing beyond: no duplicate reaches the log later
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(server.status()["log_end"], events.len() as u64);
    let crashed = memories(&server);
    let stored = stored_event_ids(&data, "acme", &USERS);
    wait_for_events_in_lance(&server, events.len(), Duration::from_secs(60));
    server.interrupt();
    assert_each_once_in_events_table(&data, events.len());
    assert_eq!(stored.len(), events.len(), "every event stored in Lance");
    assert!(
        stored.values().all(|n| *n == 1),
        "an event stored twice: {:?}",
        stored.iter().filter(|(_, n)| **n > 1).collect::<Vec<_>>()
    );

    // a clean run over the same topics, in another group and folder
    let clean_config = config_file(dir.path(), &brokers, "clean");
    let clean = start(&dir.path().join("clean"), &clean_config);
    wait_for_log_end(&clean, events.len(), Duration::from_secs(120));
    clean.wait_caught_up(Duration::from_secs(120));
    assert_eq!(memories(&clean), crashed, "views differ from a clean run");
    clean.interrupt();

    // Lance alone is enough: without the embedded log (the write-ahead buffer), a restart
    // reads every event from the Lance events table, rebuilds every view, and goes on from
    // the committed offsets without taking anything twice
    std::fs::remove_dir_all(data.join("log")).unwrap();
    let rebuilt = start(&data, &config);
    wait_for_log_end(&rebuilt, events.len(), Duration::from_secs(60));
    rebuilt.wait_caught_up(Duration::from_secs(120));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(rebuilt.status()["log_end"], events.len() as u64);
    assert_eq!(
        memories(&rebuilt),
        crashed,
        "views rebuilt from Lance differ"
    );
}

/// Asserts that the Lance events table in `data` holds `events` events, each once.
fn assert_each_once_in_events_table(data: &Path, events: usize) {
    let in_lance = events_in_lance(data);
    assert_eq!(in_lance.len(), events, "every event in the events table");
    assert!(
        in_lance.values().all(|n| *n == 1),
        "an event twice in the events table"
    );
}

/// Waits until the Lance events table holds every event below `end`.
fn wait_for_events_in_lance(server: &Server, end: usize, within: Duration) {
    let start = Instant::now();
    while server.status()["events_in_lance"] != end as u64 {
        assert!(
            start.elapsed() < within,
            "the events table never reached {end}: {}",
            server.status()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_broker_outage_is_waited_out_without_loss() {
    let mut tansu = Tansu::start_persistent(2);
    let brokers = tansu.brokers.clone();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = config_file(dir.path(), &brokers, "outage");
    let server = start(&data, &config);
    let mut rng = StdRng::seed_from_u64(4);
    let events: Vec<Value> = (0..60).map(|i| event(i, &mut rng)).collect();
    let producer = producer(&brokers);
    send(&producer, &events[..30]);
    wait_for_log_end(&server, 30, Duration::from_secs(60));

    tansu.stop();
    // produced while the broker is down: the producer holds them until it is back
    enqueue(&producer, &events[30..45]);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(
        server.status()["log_end"],
        30,
        "still serving from what it has"
    );
    let (code, recalled) = server.post(
        "/v1/memory",
        &json!({"tenant": "acme", "user": events[0]["user"]}),
    );
    assert_eq!(code, 200, "the views answer during the outage: {recalled}");

    tansu.restart();
    producer.flush(Duration::from_secs(60)).unwrap();
    send(&producer, &events[45..]);
    wait_for_log_end(&server, events.len(), Duration::from_secs(90));
    server.wait_caught_up(Duration::from_secs(60));
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(server.status()["log_end"], events.len() as u64);
    server.interrupt();
    assert_each_once_in_events_table(&data, events.len());
}
