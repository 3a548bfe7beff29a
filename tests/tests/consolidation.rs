//! Consolidation of corrections as people phrase them, through the real server: paraphrases of
//! one request become one cluster, one pattern and one preference; different or opposite
//! requests never merge; asking for the opposite without a negation word contradicts.

use engram_tests::correction_sets::{load, send_and_score};
use engram_tests::Server;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A correction made `day` days into the last ten (the engine's clock is the wall clock, and a
/// preference taught long ago has decayed).
fn correction(id: &str, day: u32, asks: &str) -> Value {
    let ts = chrono::Utc::now() - chrono::Duration::days(10 - i64::from(day));
    json!({"kind": "correction", "event_id": id, "tenant": "acme", "user": "alice",
           "ts": ts.to_rfc3339(), "target_event_id": format!("m{day}"),
           "original": "Here is a long explanation in four paragraphs about the options.",
           "correction_type": "LENGTH", "expected_behavior": asks})
}

fn memory(server: &Server) -> Value {
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{m}");
    m
}

#[test]
fn the_labelled_set_clusters_by_what_is_asked_and_never_merges_opposites() {
    let set =
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/correction_requests.json")).unwrap();
    assert!(set.len() >= 25 && set.iter().all(|r| r.texts.len() >= 5));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let s = send_and_score(
        &server,
        "acme",
        "labelled",
        "x",
        &set,
        Duration::from_secs(120),
    );
    println!("labelled set: {s:?}");
    assert_eq!(s.opposites_merged, 0, "{s:?}");
    assert!(s.precision >= 0.95, "{s:?}");
    assert!(s.recall >= 0.9, "{s:?}");
}

#[test]
fn five_ways_of_asking_for_the_same_thing_over_five_days_become_one_preference() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        correction("c1", 1, "Too long, keep it to three bullet points."),
        correction("c2", 2, "Please be shorter: three bullets max."),
        correction("c3", 3, "Way too wordy. Three bullet points, please."),
        correction("c4", 4, "cut it down to 3 bullets"),
        correction("c5", 5, "Give me the short version in three bullet points"),
        // another request, and its opposite: neither joins
        correction("c6", 5, "Answer in German from now on."),
        correction("c7", 5, "Don't use bullet points, write prose."),
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let clusters = m["correction_clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 3, "{m}");
    let asked = clusters.iter().find(|c| c["cluster_id"] == "c1").unwrap();
    assert_eq!(
        asked["corrections"],
        json!(["c1", "c2", "c3", "c4", "c5"]),
        "{m}"
    );
    assert_eq!(asked["pattern"]["size"], 5, "{m}");
    let preferences = m["preferences"].as_array().unwrap();
    assert_eq!(preferences.len(), 1, "{m}");
    assert_eq!(preferences[0]["cluster_id"], "c1", "{m}");
    assert_eq!(preferences[0]["state"], "active", "{m}");
}

#[test]
fn asking_for_the_opposite_without_a_negation_contradicts_the_preference() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let casual = [
        "Be more casual.",
        "You sound so stiff, loosen up",
        "talk to me like a friend, less formal",
    ];
    let mut events: Vec<Value> = casual
        .iter()
        .enumerate()
        .map(|(n, text)| correction(&format!("c{}", n + 1), n as u32 + 1, text))
        .collect();
    // more confident than the preference, and no "not" or "don't" in it
    let mut formal = correction(
        "c9",
        9,
        "Please use a professional tone, this is for a client.",
    );
    formal["confidence"] = json!(1.0);
    events.push(formal);
    assert_eq!(server.post("/v1/events", &json!(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let preference = &m["preferences"].as_array().unwrap()[0];
    assert_eq!(preference["cluster_id"], "c1", "{m}");
    let contradiction = &preference["contradiction"];
    assert_eq!(contradiction["by"], json!(["c9"]), "{m}");
    assert_eq!(contradiction["resolution"], "deactivated", "{m}");
}
