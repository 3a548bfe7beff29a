//! Freshness: how long after `POST /v1/events` answers an event is recallable, while a
//! background writer posts to other users at a steady rate. Through the real `engram serve`.
//!
//!     freshness [rates…]      (default 20 50 100 200 events/s)
//!
//! For each rate: the writer (4 threads, one event a request, to 50 users) runs for a warm-up
//! second, then a probe posts one event of a user of its own and polls `POST /v1/recall` (its
//! user, its text, k 5) until the event comes back; 60 probes a rate (`ENGRAM_FRESHNESS_PROBES`).
//! Freshness is from the POST's answer to the answer of the first recall that holds the event,
//! so it includes one recall round trip. Printed per rate: p50/p95/p99 freshness, the write
//! rate achieved, the 429s the writer and the probe met (push-back: their events are not
//! stored), the recall p50, and the ingest backlog's peak (from `/metrics`).
//!
//! The server runs with the environment of this process (`ENGRAM_CONFIG`, `ENGRAM_LIMIT_*`…).

use engram_bench::percentile;
use engram_tests::{interaction, Server};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const WRITER_THREADS: usize = 4;
const WRITER_USERS: usize = 50;
/// A probe gives up after this long (its freshness is then counted as this).
const PROBE_LIMIT: Duration = Duration::from_secs(30);

/// What the writer threads did during one rate's run.
#[derive(Default)]
struct WriterCounts {
    stored: AtomicU64,
    refused: AtomicU64,
    failed: AtomicU64,
}

/// One rate's row of the table.
struct Row {
    rate: usize,
    freshness_ms: Vec<f64>,
    achieved: f64,
    writer_429: u64,
    probe_429: u64,
    recall_ms: Vec<f64>,
    backlog_peak: u64,
    gave_up: usize,
}

fn main() -> anyhow::Result<()> {
    let mut rates = engram_bench::numeric_args();
    if rates.is_empty() {
        rates = vec![20, 50, 100, 200];
    }
    let probes: usize = std::env::var("ENGRAM_FRESHNESS_PROBES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir()?;
    let server = Arc::new(engram_bench::warm_server(dir.path(), "bench")?);
    let mut rows = Vec::new();
    for (round, &rate) in rates.iter().enumerate() {
        rows.push(run_rate(&server, round, rate, probes));
    }
    print_table(&rows, probes);
    Ok(())
}

/// The writer at `rate` and `probes` probes beside it.
fn run_rate(server: &Arc<Server>, round: usize, rate: usize, probes: usize) -> Row {
    let stop = Arc::new(AtomicBool::new(false));
    let counts = Arc::new(WriterCounts::default());
    let started = Instant::now();
    let writers: Vec<_> = (0..WRITER_THREADS)
        .map(|thread| {
            let (server, stop, counts) = (server.clone(), stop.clone(), counts.clone());
            std::thread::spawn(move || write_steadily(&server, round, rate, thread, &stop, &counts))
        })
        .collect();
    std::thread::sleep(Duration::from_secs(1));
    let (mut freshness_ms, mut recall_ms) = (Vec::new(), Vec::new());
    let (mut probe_429, mut backlog_peak, mut gave_up) = (0, 0, 0);
    for i in 0..probes {
        let probe = probe(server, round, i, &mut recall_ms, &mut probe_429);
        gave_up += usize::from(probe >= PROBE_LIMIT);
        freshness_ms.push(probe.as_secs_f64() * 1000.0);
        backlog_peak = backlog_peak.max(server.metric("engram_ingest_backlog_events"));
        // probes a little apart, not in step with the writer
        std::thread::sleep(Duration::from_millis(40 + (i as u64 * 37) % 60));
    }
    stop.store(true, Ordering::Release);
    let elapsed = started.elapsed().as_secs_f64();
    for w in writers {
        let _ = w.join();
    }
    server.wait_caught_up(Duration::from_secs(600));
    Row {
        rate,
        freshness_ms,
        achieved: counts.stored.load(Ordering::Relaxed) as f64 / elapsed,
        writer_429: counts.refused.load(Ordering::Relaxed),
        probe_429,
        recall_ms,
        backlog_peak,
        gave_up,
    }
}

/// One writer thread: `rate / WRITER_THREADS` events a second on a fixed schedule (a late
/// request is followed at once by the next, so the rate holds while the server keeps up).
fn write_steadily(
    server: &Server,
    round: usize,
    rate: usize,
    thread: usize,
    stop: &AtomicBool,
    counts: &WriterCounts,
) {
    let interval = Duration::from_secs_f64(WRITER_THREADS as f64 / rate as f64);
    let mut next = Instant::now();
    let mut n = 0u64;
    while !stop.load(Ordering::Acquire) {
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        }
        next += interval;
        n += 1;
        let user = format!("w{}", (n as usize * WRITER_THREADS + thread) % WRITER_USERS);
        let id = format!("w-{round}-{thread}-{n}");
        let text = format!("writer note {n} from thread {thread}: {}", topic(n));
        let event = interaction("bench", &user, &id, "s", (n % 1440) as u32, &text);
        match server.try_post("/v1/events", &json!([event])) {
            Ok((200, _)) => counts.stored.fetch_add(1, Ordering::Relaxed),
            Ok((429, _)) => counts.refused.fetch_add(1, Ordering::Relaxed),
            _ => counts.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn topic(n: u64) -> &'static str {
    const TOPICS: [&str; 5] = [
        "the dentist appointment",
        "a trip to Lisbon",
        "the quarterly report",
        "the gym membership",
        "a birthday present",
    ];
    TOPICS[(n % TOPICS.len() as u64) as usize]
}

/// Posts one probe event (again after `Retry-After` when refused) and polls recall until it
/// comes back: the time from the POST's answer to that recall's answer.
fn probe(
    server: &Server,
    round: usize,
    i: usize,
    recall_ms: &mut Vec<f64>,
    refused: &mut u64,
) -> Duration {
    let user = format!("probe-{round}-{i}");
    let id = format!("p-{round}-{i}");
    let text = format!("probe {round} {i}: the parcel for {user} waits at locker {i}");
    let event = interaction("bench", &user, &id, "s", 0, &text);
    loop {
        match server.try_post("/v1/events", &json!([event])) {
            Ok((200, _)) => break,
            Ok((429, _)) => {
                *refused += 1;
                std::thread::sleep(Duration::from_millis(200));
            }
            other => panic!("probe event: {other:?}"),
        }
    }
    let posted = Instant::now();
    let request = json!({"tenant": "bench", "user": user, "query": text, "k": 5});
    while posted.elapsed() < PROBE_LIMIT {
        let asked = Instant::now();
        let (status, body) = server.post("/v1/recall", &request);
        recall_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(status, 200, "{body}");
        if holds_event(&body, &id) {
            return posted.elapsed();
        }
    }
    PROBE_LIMIT
}

fn holds_event(recall: &Value, event_id: &str) -> bool {
    recall["results"]
        .as_array()
        .is_some_and(|r| r.iter().any(|hit| hit["event_id"] == event_id))
}

fn print_table(rows: &[Row], probes: usize) {
    println!(
        "freshness: POST /v1/events answered -> event in POST /v1/recall ({probes} probes a rate; includes one recall round trip)"
    );
    println!(
        "{:>6} {:>9} {:>9} {:>9} {:>10} {:>7} {:>7} {:>10} {:>9} {:>8}",
        "rate/s",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "achieved/s",
        "w 429",
        "p 429",
        "recall p50",
        "backlog^",
        "gave up"
    );
    for r in rows {
        let (mut f, mut rec) = (r.freshness_ms.clone(), r.recall_ms.clone());
        println!(
            "{:>6} {:>9.1} {:>9.1} {:>9.1} {:>10.1} {:>7} {:>7} {:>10.1} {:>9} {:>8}",
            r.rate,
            percentile(&mut f, 50.0),
            percentile(&mut f, 95.0),
            percentile(&mut f, 99.0),
            r.achieved,
            r.writer_429,
            r.probe_429,
            percentile(&mut rec, 50.0),
            r.backlog_peak,
            r.gave_up
        );
    }
}
