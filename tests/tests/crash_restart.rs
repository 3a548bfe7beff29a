//! Stopping engram (Ctrl-C or kill -9) and starting it again loses nothing and duplicates
//! nothing: the embedded log and the Lance events table behind it are the durable record (the
//! log file keeps only what the table does not hold yet), Lance writes are idempotent by log
//! offset.

use engram_tests::{numbered_event as event, Server};
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn stored_event_ids(data_dir: &std::path::Path) -> BTreeMap<String, usize> {
    engram_tests::stored_event_ids(data_dir, "acme", &["u0", "u1", "u2"])
}

#[test]
fn ctrl_c_then_restart_keeps_everything_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let batch: Vec<Value> = (0..50).map(event).collect();
    assert_eq!(server.post("/v1/events", &json!(batch)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let before = server.recall("acme", "u1", "topic 4", 5);
    assert!(server.interrupt().success(), "clean exit on Ctrl-C");

    let server = Server::start(dir.path());
    server.wait_caught_up(Duration::from_secs(60));
    let s = server.status();
    assert_eq!(s["log_end"], 50);
    assert_eq!(s["episodes"], 50, "{s}");
    let after = server.recall("acme", "u1", "topic 4", 5);
    // The same episodes with the same session links. (BM25 statistics may shift slightly while
    // recent rows are not yet folded into the full-text index, so scores are not compared.)
    let recalled = |r: &Value| {
        let mut v: Vec<(String, String, String)> = r["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| {
                (
                    h["event_id"].to_string(),
                    h["prev_id"].to_string(),
                    h["next_id"].to_string(),
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        recalled(&before),
        recalled(&after),
        "same answers after the restart"
    );
    assert_eq!(
        before["results"][0]["event_id"],
        after["results"][0]["event_id"]
    );
    drop(server);
    let stored = stored_event_ids(dir.path());
    assert_eq!(stored.len(), 50);
    assert!(stored.values().all(|&n| n == 1));
}

/// Sends events 0..`next` again, in bodies of 5,000 (the API takes at most 10,000), as a client
/// that obeys push-back: after a restart the whole unstored log is backlog, and past 10,000
/// events engram answers 429 until the writer has caught up (retried each second, 3 minutes
/// at most).
fn resend_all(server: &Server, next: u64) {
    let resend: Vec<Value> = (0..next).map(event).collect();
    for body in resend.chunks(5_000) {
        let (mut status, mut answer) = (0, Value::Null);
        for _ in 0..180 {
            (status, answer) = server.post("/v1/events", &json!(body));
            if status != 429 {
                break;
            }
            std::thread::sleep(Duration::from_secs(1));
        }
        assert_eq!(status, 200, "{answer}");
    }
}

#[test]
fn kill_9_at_random_points_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trials = std::env::var("ENGRAM_CRASH_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6);
    let mut rng = rand::rngs::StdRng::seed_from_u64(42);
    let mut next = 0u64;
    let mut acknowledged: BTreeSet<String> = BTreeSet::new();
    // restarts that found part of the log only in the Lance events table
    let mut from_lance = 0;
    for trial in 0..trials {
        from_lance += usize::from(engram_tests::log_file_base(dir.path()) > 0);
        let server = Arc::new(Server::start(dir.path()));
        // the client re-sends what it sent before without an answer (at-least-once delivery)
        resend_all(&server, next);
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(Mutex::new(Vec::<String>::new()));
        let sent = Arc::new(Mutex::new(next));
        let client = {
            let (server, stop, acked, sent) =
                (server.clone(), stop.clone(), acked.clone(), sent.clone());
            std::thread::spawn(move || {
                let mut i = *sent.lock().unwrap();
                while !stop.load(Ordering::Relaxed) && i < 100_000 {
                    let batch: Vec<Value> = (i..i + 7).map(event).collect();
                    *sent.lock().unwrap() = i + 7;
                    match server.try_post("/v1/events", &json!(batch)) {
                        Ok((200, _)) => acked
                            .lock()
                            .unwrap()
                            .extend((i..i + 7).map(|j| format!("ev-{j:05}"))),
                        _ => return, // the server died mid-request: unacknowledged
                    }
                    i += 7;
                }
            })
        };
        std::thread::sleep(Duration::from_millis(rng.gen_range(50..1500)));
        // SIGKILL while the client is mid-stream: some request is usually in flight
        server.kill9_now();
        stop.store(true, Ordering::Relaxed);
        client.join().unwrap();
        drop(server);
        acknowledged.extend(acked.lock().unwrap().iter().cloned());
        next = *sent.lock().unwrap();
        eprintln!(
            "trial {trial}: {} events sent, {} acknowledged so far",
            next,
            acknowledged.len()
        );
    }
    // a final clean run delivers the rest and catches up
    from_lance += usize::from(engram_tests::log_file_base(dir.path()) > 0);
    assert!(
        from_lance > 0,
        "no restart read its log's prefix back from Lance"
    );
    let server = Server::start(dir.path());
    resend_all(&server, next);
    server.wait_caught_up(Duration::from_secs(120));
    assert_eq!(
        server.status()["log_end"].as_u64(),
        Some(next),
        "the log holds each event once"
    );
    drop(server);
    let stored = stored_event_ids(dir.path());
    let duplicated: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).collect();
    let lost: Vec<_> = (0..next)
        .map(|i| format!("ev-{i:05}"))
        .filter(|id| !stored.contains_key(id))
        .collect();
    eprintln!(
        "{trials} kill -9 trials ({from_lance} restarts read the log's prefix from Lance): {next} events, {} stored, {} lost, {} duplicated",
        stored.len(),
        lost.len(),
        duplicated.len()
    );
    assert!(duplicated.is_empty(), "duplicated: {duplicated:?}");
    assert!(lost.is_empty(), "lost: {lost:?}");
    assert!(acknowledged.iter().all(|id| stored.contains_key(id)));
}

/// Byte positions of the records of a log file (`[len u32][crc u32][payload]`, after a
/// 16-byte header when the file starts past offset 0), read here independently of engram.
fn record_positions(bytes: &[u8]) -> Vec<usize> {
    let mut at = if bytes.starts_with(b"ENGRAMLG") {
        16
    } else {
        0
    };
    let mut positions = Vec::new();
    while at + 8 <= bytes.len() {
        positions.push(at);
        at += 8 + u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    }
    positions
}

#[test]
fn a_corrupt_record_in_the_middle_of_the_log_stops_the_start_until_repaired_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let events: Vec<Value> = (0..12).map(event).collect();
    assert_eq!(server.post("/v1/events", &json!(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    // the events table holds every event before the stop (a clean stop waits for it)
    assert!(server.interrupt().success());
    assert_eq!(stored_event_ids(&data).len(), 12);

    // one flipped byte inside the record at offset 4
    let log = data.join("log/events.log");
    let mut bytes = std::fs::read(&log).unwrap();
    let positions = record_positions(&bytes);
    assert_eq!(positions.len(), 12, "the file holds every record");
    bytes[positions[4] + 20] ^= 0x01;
    std::fs::write(&log, &bytes).unwrap();

    let engram = |args: &[&str]| {
        std::process::Command::new(engram_tests::engram_bin())
            .args(args)
            .arg("--data-dir")
            .arg(&data)
            .env("ENGRAM_LOG", "warn")
            .output()
            .unwrap()
    };
    // serve refuses, naming the file and the offset; nothing was cut off
    let out = engram(&["serve", "--http-addr", "127.0.0.1:0", "--no-demo"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("events.log") && stderr.contains("(offset 4) is corrupt"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), bytes);

    // check says what a repair sets aside, and exits 1
    let out = engram(&["log", "check"]);
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["corruption"]["offset"], 4, "{report}");
    assert_eq!(report["corruption"]["records_after"], 7, "{report}");
    let out = engram(&["log", "repair"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let quarantined = std::fs::read(report["quarantined_to"].as_str().unwrap()).unwrap();
    assert_eq!(quarantined, bytes[positions[4]..]);

    // it starts, and the events cut from the file come back from the Lance events table
    let server = Server::start(&data);
    server.wait_caught_up(Duration::from_secs(60));
    assert_eq!(server.status()["log_end"], 12);
    let r = server.recall("acme", "u2", "message 11: note about topic 11", 3);
    assert!(r.to_string().contains("message 11:"), "{r}");
    let stored = stored_event_ids(&data);
    assert_eq!(stored.len(), 12, "{stored:?}");
    assert!(stored.values().all(|n| *n == 1), "{stored:?}");
}
