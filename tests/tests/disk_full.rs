//! A full disk answers 503 with Retry-After, and loses and duplicates nothing once space
//! returns. The data folder is a small tmpfs (3 MB) (mounting one needs root: without it the test says
//! so and checks nothing), filled by a client until the log cannot store a batch; then the
//! filesystem grows, the client sends everything again (at-least-once), and each event is
//! stored exactly once.

use engram_tests::{interaction, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn event(i: u64) -> Value {
    interaction(
        "acme",
        &format!("u{}", i % 3),
        &format!("ev-{i:05}"),
        &format!("s{}", i / 40),
        (i % 1440) as u32,
        // long, so that a few hundred events fill the small disk (each is embedded after)
        &format!(
            "message {i}: the garden plan for plot {} and the {} seedlings. {}",
            i % 29,
            i % 11,
            "Water the beds at dawn, mulch the paths, stake the beans. ".repeat(20)
        ),
    )
}

/// A tmpfs mounted at a folder, unmounted on drop.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(at: &Path, size: &str) -> Option<SmallDisk> {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| SmallDisk(at.to_path_buf()))
    }

    fn grow(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success(), "remounting the tmpfs larger");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_answers_503_and_loses_and_duplicates_nothing_after_space_returns() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let Some(disk) = SmallDisk::mount(&data, "3m") else {
        eprintln!("SKIPPED: mounting a tmpfs needs root here; nothing was checked");
        return;
    };
    let server = Server::start(&data);
    let key = server.key_for("acme");
    let http = reqwest::blocking::Client::new();
    let (mut sent, mut full) = (0u64, None);
    // bounded: 3 MB hold far fewer than 1,000 batches of 20 events
    for _ in 0..1_000 {
        let batch: Vec<Value> = (sent..sent + 20).map(event).collect();
        let resp = http
            .post(format!("{}/v1/events", server.base))
            .bearer_auth(&key)
            .json(&json!(batch))
            .send()
            .unwrap();
        sent += 20;
        match resp.status().as_u16() {
            200 => continue,
            503 => {
                full = Some(resp);
                break;
            }
            other => panic!("{other}: {}", resp.text().unwrap()),
        }
    }
    let full = full.expect("the disk never filled");
    assert_eq!(
        full.headers()["retry-after"],
        "1",
        "a 503 says when to retry"
    );
    let body: Value = full.json().unwrap();
    assert!(
        body["error"]["reason"]
            .as_str()
            .unwrap()
            .contains("No space left"),
        "{body}"
    );
    // reads go on while the disk is full
    assert!(server.recall("acme", "u1", "garden plan", 3)["results"].is_array());

    disk.grow("256m");
    let all: Vec<Value> = (0..sent).map(event).collect();
    for body in all.chunks(500) {
        let (status, answer) = server.post("/v1/events", &json!(body));
        assert_eq!(status, 200, "{answer}");
    }
    server.wait_caught_up(Duration::from_secs(300));
    assert_eq!(
        server.status()["log_end"].as_u64(),
        Some(sent),
        "the log holds each event once"
    );
    drop(server);
    let stored = engram_tests::stored_event_ids(&data, "acme", &["u0", "u1", "u2"]);
    let lost: Vec<String> = (0..sent)
        .map(|i| format!("ev-{i:05}"))
        .filter(|id| !stored.contains_key(id))
        .collect();
    let duplicated: Vec<_> = stored.iter().filter(|(_, n)| **n > 1).collect();
    eprintln!(
        "disk full after {sent} events; after it grew: {} stored, {} lost, {} duplicated",
        stored.len(),
        lost.len(),
        duplicated.len()
    );
    assert!(lost.is_empty(), "lost: {lost:?}");
    assert!(duplicated.is_empty(), "duplicated: {duplicated:?}");
    drop(disk);
}
