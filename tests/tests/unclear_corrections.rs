//! Corrections too unsure to learn from, through the real server: a correction whose fused
//! multimodal confidence (or stated confidence) is below the clarification floor is noted but
//! never clustered, makes no pattern, does not act in its session, is listed in `/v1/memory`'s
//! `needs_clarification`, and the next prompt of its session asks the user what they meant;
//! the same corrections with confident signals are learned as usual. The modality weights of the
//! fusion and the floor are the operator's (`[fusion]`): video weighed up, a video-only correction
//! is learned; the floor raised to 0.3, corrections stated at 0.28 are held.

use chrono::{Duration as Days, Utc};
use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

/// `user`'s correction `id`, `days` ago in session `s1`, with raw `signals` to fuse.
fn correction(id: &str, user: &str, days: i64, text: &str, signals: Value) -> Value {
    json!({"kind": "correction", "event_id": id, "tenant": "acme", "user": user,
           "session": "s1", "ts": (Utc::now() - Days::days(days)).to_rfc3339(),
           "target_event_id": format!("{id}-answer"), "original": "A long answer in five paragraphs.",
           "correction_type": "LENGTH", "expected_behavior": text, "signals": signals})
}

/// The confidence `/v1/memory` shows for correction `id`.
fn confidence_of(memory: &Value, id: &str) -> f64 {
    let corrections = memory["corrections"].as_array().unwrap();
    let c = corrections
        .iter()
        .find(|c| c["id"] == id)
        .expect("the correction");
    c["confidence"].as_f64().unwrap()
}

fn clustered(memory: &Value, ids: &[&str]) -> Vec<String> {
    memory["correction_clusters"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["corrections"].as_array().unwrap().iter())
        .filter_map(|id| id.as_str())
        .filter(|id| ids.contains(id))
        .map(str::to_string)
        .collect()
}

#[test]
fn unsure_corrections_are_asked_about_instead_of_learned() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    // voice 0.4 × agreement 0.5 × weight 0.5 = 0.1: below the floor of 0.25
    let faint = json!({"voice": {"confidence": 0.4, "agreement": 0.5}});
    // voice and screen, both 0.9 × 0.9: 0.5 · 0.81 + 0.3 · 0.81 = 0.648
    let clear = json!({"voice": {"confidence": 0.9, "agreement": 0.9},
                       "screen": {"confidence": 0.9, "agreement": 0.9}});
    let texts = [
        "Keep it short.",
        "Shorter answers, please.",
        "Too long, keep it brief.",
    ];
    let mut events = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let days = 3 - i as i64;
        events.push(correction(
            &format!("a{i}"),
            "alice",
            days,
            text,
            faint.clone(),
        ));
        events.push(correction(
            &format!("b{i}"),
            "bob",
            days,
            text,
            clear.clone(),
        ));
    }
    let (status, stored) = server.post("/v1/events", &Value::Array(events));
    assert_eq!(status, 200, "{stored}");
    server.wait_caught_up(Duration::from_secs(60));
    let memory = |user: &str| {
        server
            .post("/v1/memory", &json!({"tenant": "acme", "user": user}))
            .1
    };

    // alice's are noted, held, and in no cluster
    let alice = memory("alice");
    assert_eq!(
        alice["needs_clarification"],
        json!(["a0", "a1", "a2"]),
        "{alice}"
    );
    assert_eq!(alice["corrections"].as_array().unwrap().len(), 3);
    assert!(clustered(&alice, &["a0", "a1", "a2"]).is_empty(), "{alice}");
    assert!(
        alice["preferences"].as_array().unwrap().is_empty(),
        "{alice}"
    );
    // bob's, the same words said with confidence, are learned: one cluster of all three
    let bob = memory("bob");
    assert_eq!(bob["needs_clarification"], json!([]), "{bob}");
    let mut learned = clustered(&bob, &["b0", "b1", "b2"]);
    learned.sort();
    assert_eq!(learned, ["b0", "b1", "b2"], "{bob}");

    // alice's next prompt in that session asks instead of obeying
    let prompt = |user: &str, session: &str| {
        let (status, p) = server.post(
            "/v1/prompt",
            &json!({"tenant": "acme", "user": user, "session": session, "query": "Tell me about Lisbon."}),
        );
        assert_eq!(status, 200, "{p}");
        p
    };
    let p = prompt("alice", "s1");
    let system = p["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("it was unclear"), "{system}");
    assert!(system.contains("\"Too long, keep it brief.\""), "{system}");
    assert!(!system.contains("follow these from now on"), "{system}");
    assert_eq!(
        p["provenance"]["unclear_corrections"],
        json!(["a0", "a1", "a2"])
    );
    assert_eq!(p["provenance"]["session_corrections"], json!([]));
    assert_eq!(p["provenance"]["few_shot"], json!([]), "{p}");
    // in another session nothing of it
    let elsewhere = prompt("alice", "s2");
    assert!(!elsewhere["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("unclear"));
    assert_eq!(elsewhere["provenance"]["unclear_corrections"], json!([]));
    // bob's act: as instructions of the session or as a preference
    let p = prompt("bob", "s1");
    let system = p["messages"][0]["content"].as_str().unwrap();
    assert!(!system.contains("unclear"), "{system}");
    assert!(
        system.contains("brief") || system.contains("short"),
        "{system}"
    );
}

#[test]
fn the_operators_modality_weights_decide_what_is_learned() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engram.toml");
    std::fs::write(&config, "[fusion]\nvideo = 0.5\nclarify_below = 0.3\n").unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let video = json!({"video": {"confidence": 0.9, "agreement": 0.9}});
    let mut events: Vec<Value> = (0..3)
        .map(|i| {
            correction(
                &format!("v{i}"),
                "carol",
                3 - i,
                "Keep it short.",
                video.clone(),
            )
        })
        .collect();
    // dave states 0.28 for each: above the default floor of 0.25, below this operator's 0.3
    for i in 0..3 {
        let mut c = correction(&format!("d{i}"), "dave", 3 - i, "Keep it short.", json!({}));
        c.as_object_mut().unwrap().remove("signals");
        c["confidence"] = json!(0.28);
        events.push(c);
    }
    assert_eq!(server.post("/v1/events", &Value::Array(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let (_, carol) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "carol"}));
    // 0.5 · 0.9 · 0.9 = 0.405: learned, all three in one cluster
    assert!(
        (confidence_of(&carol, "v0") - 0.405).abs() < 1e-3,
        "{carol}"
    );
    assert_eq!(carol["needs_clarification"], json!([]), "{carol}");
    let mut learned = clustered(&carol, &["v0", "v1", "v2"]);
    learned.sort();
    assert_eq!(learned, ["v0", "v1", "v2"], "{carol}");
    let (_, dave) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "dave"}));
    assert_eq!(
        dave["needs_clarification"],
        json!(["d0", "d1", "d2"]),
        "{dave}"
    );
    assert!(clustered(&dave, &["d0", "d1", "d2"]).is_empty(), "{dave}");
    // a floor that is not a number between 0 and 1 is refused at start, naming the key
    std::fs::write(&config, "[fusion]\nclarify_below = 1.5\n").unwrap();
    let out = std::process::Command::new(engram_tests::engram_bin())
        .args(["--config", config.to_str().unwrap(), "config"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("fusion.clarify_below"), "{said}");
}
