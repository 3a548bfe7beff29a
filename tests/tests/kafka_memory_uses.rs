//! Memory retention's promises through Kafka (issue 33), as `tests/memory_retention.rs` checks
//! them over HTTP: events produced to the topics of a `tansu` broker on loopback, consumed by a
//! real `engram serve` with `retention.stability_days = 10`. An answer to alice naming her old
//! memory keeps it; bob's answer naming her other old memory (its id known to him) counts for
//! nothing, and that memory is archived; an erase on the control topic takes her archived
//! memories with the rest, however recall is asked.

use chrono::{Duration as Days, Utc};
use engram_tests::tansu::Tansu;
use engram_tests::Server;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};

fn produce(brokers: &str, dir: &Path, name: &str, events: &[Value]) {
    let file = dir.join(name);
    let lines: Vec<String> = events.iter().map(Value::to_string).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    engram_tests::produce_file(brokers, &file);
}

/// An interaction of `user` in acme, `days` ago.
fn message(id: &str, user: &str, days: i64, role: &str, content: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": user,
           "session": format!("s-{id}"), "ts": (Utc::now() - Days::days(days)).to_rfc3339(),
           "role": role, "content": content})
}

/// Waits until the log holds `end` events and the views and Lance have caught up with them.
fn wait_for(server: &Server, end: u64) {
    server.wait_for_log_end(end, Duration::from_secs(60));
    server.wait_caught_up(Duration::from_secs(60));
}

const QUERY: &str = "the boiler valve and the piano lessons";

/// alice's turns a recall finds, by event id: whether each is archived.
fn found(server: &Server, extra: Value) -> Vec<(String, bool)> {
    let mut req = json!({"tenant": "acme", "user": "alice", "query": QUERY, "k": 20});
    for (k, v) in extra.as_object().unwrap() {
        req[k] = v.clone();
    }
    let (status, body) = server.post("/v1/recall", &req);
    assert_eq!(status, 200, "{body}");
    let mut found: Vec<(String, bool)> = body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["event_id"] == "boiler" || r["event_id"] == "piano")
        .map(|r| {
            let archived = r["why"]["archived"].as_bool().unwrap_or(false);
            (r["event_id"].as_str().unwrap().to_string(), archived)
        })
        .collect();
    found.sort();
    found
}

#[test]
fn kafka_answers_keep_only_their_own_users_memories_and_an_erase_takes_archived_ones() {
    let broker = Tansu::start(2);
    let brokers = broker.brokers.clone();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let config = dir.path().join("engram.toml");
    std::fs::write(&config, "demo = false\n[retention]\nstability_days = 10\n").unwrap();
    engram_tests::create_tenant(&data, "acme");
    let env = [("ENGRAM_KAFKA_BROKERS", brokers.as_str())];
    let server = Server::start_with_env(&data, &["--config", config.to_str().unwrap()], &env);

    // importance 0, 50 days old: S = 10 days, archived after 30 days unless an answer to
    // alice within that time (35 days ago: S = 20 from then) keeps it
    let mut turns = [
        message(
            "boiler",
            "alice",
            50,
            "user",
            "The plumber said the boiler in the basement needs a new valve.",
        ),
        message(
            "piano",
            "alice",
            50,
            "user",
            "The piano lessons for the kids are on Tuesdays at five.",
        ),
    ];
    for t in &mut turns {
        t["importance"] = json!(0.0);
    }
    produce(&brokers, dir.path(), "turns.jsonl", &turns);
    wait_for(&server, 2);
    let id = |event: &str| engram_schemas::node_id("acme", event).to_string();
    let mut for_alice = message("a1", "alice", 35, "assistant", "Here is what I remember.");
    for_alice["meta"] = json!({"memories": [id("boiler")]});
    // bob knows the id of alice's "piano" memory: his answer names it, to no effect
    let mut for_bob = message("b1", "bob", 35, "assistant", "Here is what I remember.");
    for_bob["meta"] = json!({"memories": [id("piano")]});
    produce(&brokers, dir.path(), "answers.jsonl", &[for_alice, for_bob]);
    wait_for(&server, 4);

    let plain = found(&server, json!({}));
    assert_eq!(plain, [("boiler".to_string(), false)], "{plain:?}");
    let all = found(&server, json!({"include_archived": true}));
    let want = [("boiler".to_string(), false), ("piano".to_string(), true)];
    assert_eq!(all, want, "{all:?}");

    // an erase on the control topic: the archived memory goes with the rest
    let erase = json!({"kind": "control", "event_id": "e1", "tenant": "acme", "user": "alice",
                       "ts": Utc::now().to_rfc3339(), "action": "erase", "scope": "user"});
    produce(&brokers, dir.path(), "erase.jsonl", &[erase]);
    wait_for(&server, 5);
    let accepted = Instant::now();
    let left = || {
        let mut left = Vec::new();
        for extra in [
            json!({"include_archived": true}),
            json!({"as_of": Utc::now().to_rfc3339()}),
        ] {
            left.extend(found(&server, extra));
        }
        left.extend(
            engram_tests::files_containing(&data, "piano lessons")
                .into_iter()
                .map(|f| (f, true)),
        );
        left
    };
    while !left().is_empty() && accepted.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(left(), Vec::<(String, bool)>::new(), "10 s after the erase");
    server.interrupt();
}
