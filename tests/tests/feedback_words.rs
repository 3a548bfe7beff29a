//! Feedback in the user's own words, through the real server: a thumbs-down that says what was
//! wrong ("way too long") is also a correction of the answer it rates, so the same complaint
//! said three ways on three days becomes one pattern and one preference, like typed
//! corrections; words that ask for nothing ("meh") only vote.

use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

/// A vote on answer `message` made `day` days into the last ten (a preference taught long ago
/// has decayed), with `words` as its free text.
fn feedback(id: &str, user: &str, day: i64, reward: i8, words: &str) -> Value {
    let ts = chrono::Utc::now() - chrono::Duration::days(10 - day);
    json!({"kind": "feedback", "event_id": id, "tenant": "acme", "user": user,
           "ts": ts.to_rfc3339(), "message_id": format!("{id}.a"), "skill_id": "detailed",
           "reward": reward, "free_text": words})
}

fn memory_of(server: &Server, user: &str) -> Value {
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": user}));
    assert_eq!(status, 200, "{m}");
    m
}

fn cluster_members(m: &Value) -> Vec<Vec<String>> {
    m["correction_clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let ids = c["corrections"].as_array().unwrap().iter();
            ids.map(|id| id.as_str().unwrap().to_string()).collect()
        })
        .collect()
}

#[test]
fn feedback_that_says_what_was_wrong_teaches_like_a_correction_and_plain_votes_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        feedback(
            "f1",
            "alice",
            1,
            -1,
            "Way too long, I only needed the gist."
        ),
        feedback("f2", "alice", 2, -1, "too wordy... keep it short pls"),
        feedback(
            "f3",
            "alice",
            4,
            -1,
            "Much shorter answers please, this was an essay"
        ),
        // asks for nothing recognisable: a vote only
        feedback("f4", "alice", 4, -1, "meh"),
        feedback("g1", "bob", 1, -1, "meh"),
        feedback("g2", "bob", 2, 1, "great, thanks!"),
        feedback("g3", "bob", 4, -1, "that date is wrong"),
    ]);
    let (status, answer) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{answer}");
    server.wait_caught_up(Duration::from_secs(60));

    let alice = memory_of(&server, "alice");
    assert_eq!(
        cluster_members(&alice),
        vec![vec!["f1".to_string(), "f2".into(), "f3".into()]],
        "{alice}"
    );
    let preferences = alice["preferences"].as_array().unwrap();
    assert_eq!(preferences.len(), 1, "{alice}");
    assert_eq!(preferences[0]["cluster_id"], "f1", "{alice}");

    let bob = memory_of(&server, "bob");
    assert_eq!(cluster_members(&bob), Vec::<Vec<String>>::new(), "{bob}");
    assert_eq!(bob["preferences"], json!([]), "{bob}");

    // the preference it learned reaches the next prompt, with the feedback behind it
    let (status, p) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s9",
                "query": "Summarise the release notes."}),
    );
    assert_eq!(status, 200, "{p}");
    let prefs = p["provenance"]["preferences"].as_array().unwrap();
    assert_eq!(prefs.len(), 1, "{p}");
    // worded as the newest of them asks (f3, day 4), as for typed corrections
    let newest = "Much shorter answers please, this was an essay";
    assert_eq!(prefs[0]["instruction"], newest, "{p}");
    let mut behind: Vec<&str> = prefs[0]["corrections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    behind.sort();
    assert_eq!(behind, ["f1", "f2", "f3"], "{p}");
    let system = p["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains(&format!("User preferences indicate:\n- {newest}")),
        "{system}"
    );
}
