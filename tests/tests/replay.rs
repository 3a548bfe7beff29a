//! `engram replay`: historical files (JSON lines and Parquet) go into Lance through the same
//! path as live input; bad records are rejected with their position; a run killed with SIGKILL
//! and started again stores everything exactly once.

use arrow::array::{ArrayRef, StringArray, TimestampMicrosecondArray, UInt32Array};
use arrow::record_batch::RecordBatch;
use engram_tests::{engram_bin, interaction, stored_event_ids};
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const USERS: [&str; 3] = ["u0", "u1", "u2"];

fn event(i: usize) -> Value {
    interaction(
        "acme",
        USERS[i % 3],
        &format!("hist-{i:05}"),
        &format!("s{}", i / 10),
        (i % 1440) as u32,
        &format!(
            "history {i}: I planted {} tomatoes near the {} fence",
            i % 13,
            ["north", "south", "east"][i % 3]
        ),
    )
}

fn replay(files: &[&Path], data_dir: &Path, summary: &Path) -> Command {
    let mut cmd = Command::new(engram_bin());
    cmd.arg("replay")
        .args(files)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--no-progress", "--measure-sample", "32", "--json"])
        .arg(summary)
        .env("ENGRAM_LOG", "warn")
        .env(
            "ENGRAM_LOG_DISCARD_AFTER_BYTES",
            engram_tests::SMALL_LOG_FILE,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    cmd
}

fn read_summary(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn killed_replay_resumes_and_stores_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("history.jsonl");
    let n = 600;
    let mut f = std::fs::File::create(&file).unwrap();
    for i in 0..n {
        writeln!(f, "{}", event(i)).unwrap();
        if i == 99 {
            writeln!(f, "{{not json").unwrap(); // line 101
        }
        if i == 299 {
            // line 302: no user
            writeln!(
                f,
                r#"{{"kind":"interaction","event_id":"x","tenant":"acme","ts":"2025-01-01T00:00:00Z","role":"user","content":"hi"}}"#
            )
            .unwrap();
        }
    }
    drop(f);
    let data = dir.path().join("data");
    let summary = dir.path().join("summary.json");
    let expected: BTreeSet<String> = (0..n).map(|i| format!("hist-{i:05}")).collect();

    // Interrupt the first run at a random point after it began to log events, or after its
    // first episodes reached Lance: while it logs, stores, or (rarely) after it finished.
    let mut rng = rand::rngs::StdRng::from_entropy();
    let log = data.join("log").join("events.log");
    let lance_data = data.join("lance").join("episodes.lance").join("data");
    let wait_for_lance = rng.gen_bool(0.5);
    let began = || {
        if wait_for_lance {
            std::fs::read_dir(&lance_data).is_ok_and(|mut d| d.next().is_some())
        } else {
            std::fs::metadata(&log).is_ok_and(|m| m.len() > 0)
        }
    };
    let mut child = replay(&[&file], &data, &summary).spawn().unwrap();
    let started = Instant::now();
    while !began() && started.elapsed() < Duration::from_secs(60) {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(rng.gen_range(0..300)));
    let _ = child.kill(); // SIGKILL
    let _ = child.wait();
    let before: usize = stored_event_ids(&data, "acme", &USERS).len();
    eprintln!("the killed run had stored {before} of {n} episodes");

    let status = replay(&[&file], &data, &summary).status().unwrap();
    assert!(status.success(), "the resumed replay failed: {status}");
    let stored = stored_event_ids(&data, "acme", &USERS);
    let twice: Vec<_> = stored.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "stored more than once: {twice:?}");
    let ids: BTreeSet<String> = stored.into_keys().collect();
    assert_eq!(
        ids, expected,
        "stored events differ from the file's good events"
    );

    let s = read_summary(&summary);
    assert_eq!(s["records"], n + 2, "{s}");
    assert_eq!(
        s["accepted"].as_u64().unwrap() + s["duplicates"].as_u64().unwrap(),
        n as u64,
        "{s}"
    );
    assert_eq!(
        s["episodes_stored"].as_u64().unwrap() as usize,
        n - before,
        "the resumed run stores exactly what the killed one had not: {s}"
    );
    let rejections = s["rejections"].as_array().unwrap();
    let where_why: Vec<(String, String)> = rejections
        .iter()
        .map(|r| {
            (
                r["position"].as_str().unwrap().to_string(),
                r["field"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        where_why,
        vec![
            ("line 101".to_string(), "$".to_string()),
            ("line 302".to_string(), "user".to_string())
        ]
    );
    // the bare embedder is compared with a run that stored something
    if n > before {
        assert!(
            s["bare_embedder_episodes_per_second"].as_f64().unwrap() > 0.0,
            "{s}"
        );
        assert!(s["ratio_to_bare_embedder"].as_f64().unwrap() > 0.0, "{s}");
    } else {
        assert!(s["ratio_to_bare_embedder"].is_null(), "{s}");
    }

    // A third run finds everything in place and writes nothing.
    let status = replay(&[&file], &data, &summary).status().unwrap();
    assert!(status.success());
    let s = read_summary(&summary);
    assert_eq!(s["accepted"], 0, "{s}");
    assert_eq!(s["episodes_stored"], 0, "{s}");
    assert_eq!(
        stored_event_ids(&data, "acme", &USERS).len(),
        n,
        "a repeated replay changed the store"
    );
}

#[test]
fn parquet_with_the_event_columns_replays_like_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let n = 90;
    let events: Vec<Value> = (0..n).map(event).collect();
    let text = |field: &str| -> ArrayRef {
        Arc::new(StringArray::from(
            events
                .iter()
                .map(|e| e[field].as_str().unwrap().to_string())
                .collect::<Vec<_>>(),
        ))
    };
    let ts: Vec<i64> = events
        .iter()
        .map(|e| {
            e["ts"]
                .as_str()
                .unwrap()
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
                .timestamp_micros()
        })
        .collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("event_id", text("event_id")),
        ("tenant", text("tenant")),
        ("user", text("user")),
        (
            "ts",
            Arc::new(TimestampMicrosecondArray::from(ts).with_timezone("UTC")),
        ),
        ("session", text("session")),
        ("kind", text("kind")),
        ("role", text("role")),
        ("content", text("content")),
        (
            "turn",
            Arc::new(UInt32Array::from(
                (0..n as u32).map(|i| i % 10).collect::<Vec<_>>(),
            )),
        ),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let file = dir.path().join("history.parquet");
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&file).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();

    let data = dir.path().join("data");
    let summary = dir.path().join("summary.json");
    let status = replay(&[&file], &data, &summary).status().unwrap();
    assert!(status.success());
    let s = read_summary(&summary);
    assert_eq!(s["accepted"], n, "{s}");
    assert_eq!(s["rejected"], 0, "{s}");
    let stored = stored_event_ids(&data, "acme", &USERS);
    let expected: BTreeSet<String> = (0..n).map(|i| format!("hist-{i:05}")).collect();
    assert_eq!(stored.keys().cloned().collect::<BTreeSet<_>>(), expected);
    assert!(stored.values().all(|c| *c == 1));
}

#[test]
fn an_erase_in_a_replayed_file_is_completed_like_one_sent_live() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let file = dir.path().join("history.jsonl");
    // u1's turns are the only ones about the south fence
    let mut lines: Vec<String> = (0..30).map(|i| event(i).to_string()).collect();
    lines.push(
        serde_json::json!({"kind": "control", "event_id": "erase-u1", "tenant": "acme",
            "user": "u1", "ts": "2025-01-02T00:00:00Z", "action": "erase", "scope": "user"})
        .to_string(),
    );
    std::fs::write(&file, lines.join("\n")).unwrap();
    let summary = dir.path().join("summary.json");
    assert!(replay(&[&file], &data, &summary)
        .status()
        .unwrap()
        .success());
    // the replay may stop before its erasure completes; the next start finishes it
    let server = engram_tests::Server::start(&data);
    let accepted = Instant::now();
    let left = || engram_tests::files_containing(&data, "south fence");
    while !left().is_empty() && accepted.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(left(), Vec::<String>::new());
    let recall = server.recall("acme", "u1", "where did I plant tomatoes", 5);
    assert_eq!(recall["results"], serde_json::json!([]), "{recall}");
    assert!(!engram_tests::files_containing(&data, "north fence").is_empty());
    let receipts = std::fs::read_to_string(data.join("erasures.jsonl")).unwrap();
    assert!(receipts.contains("\"erase-u1\""), "{receipts}");
}
