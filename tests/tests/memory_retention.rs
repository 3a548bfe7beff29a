//! Memories fade and are archived, through the real server (issue 33): with
//! `retention.stability_days = 10`, a memory of importance i starts with S = 10·(1 + i) days
//! (no importance: 0.5) and is archived once e^(−t/S) < 0.05, i.e. after S·ln 20 days; an answer
//! it went into that was not voted down doubles S and restarts t. A plain recall and a prompt
//! leave archived memories out; `include_archived` and an `as_of` recall still find them, each
//! marked; every result states its retention. An answer to another user naming a memory does
//! not reinforce it. Facts fade and are kept by answers the same way. A restart rebuilds the same states from the log, and an erase takes the
//! archived memories with the rest.

use chrono::{Duration as Days, Utc};
use engram_tests::Server;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// User turn `id` of `alice`, `days` ago, with `importance` when given.
fn turn(id: &str, days: i64, text: &str, importance: Option<f64>) -> Value {
    let mut e = json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": "alice",
        "session": format!("s-{id}"), "ts": (Utc::now() - Days::days(days)).to_rfc3339(),
        "role": "user", "content": text});
    if let Some(i) = importance {
        e["importance"] = json!(i);
    }
    e
}

/// The turns, by event id: (days ago, text, importance).
const TURNS: [(&str, i64, &str, Option<f64>); 6] = [
    // S = 15 days, archived after 44.9: archived
    (
        "old",
        60,
        "I adopted a beagle named Rex from the shelter downtown.",
        None,
    ),
    // S = 15 days: R = e^(−5/15) = 0.717
    (
        "recent",
        5,
        "My sister Nora just moved to Lisbon for a new job.",
        None,
    ),
    // same age, importance 1 (S = 20, archived after 59.9 days): active; importance 0
    // (S = 10, archived after 30.0 days): archived
    (
        "important",
        50,
        "My passport expires in March, I must renew it before the trip.",
        Some(1.0),
    ),
    (
        "trivial",
        50,
        "Had a sandwich for lunch, the bakery near the station was busy.",
        Some(0.0),
    ),
    // importance 0 like "trivial", but recalled into answers 35 days ago: one kept (S = 20
    // from day 35, archived after day 35 − 59.9: active), one voted down (not reinforced)
    (
        "recalled",
        50,
        "The plumber said the boiler in the basement needs a new valve.",
        Some(0.0),
    ),
    (
        "downvoted",
        50,
        "The piano lessons for the kids are on Tuesdays at five.",
        Some(0.0),
    ),
];

/// Recall for `query` with extra request fields; results by event id: (archived, retention).
fn recall(server: &Server, query: &str, extra: Value) -> BTreeMap<String, (bool, f64)> {
    let mut req = json!({"tenant": "acme", "user": "alice", "query": query, "k": 20});
    for (k, v) in extra.as_object().unwrap() {
        req[k] = v.clone();
    }
    let (status, body) = server.post("/v1/recall", &req);
    assert_eq!(status, 200, "{body}");
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        // the answers that recalled two of them are turns too: only the six are checked
        .filter(|r| TURNS.iter().any(|t| r["event_id"] == t.0))
        .map(|r| {
            let why = &r["why"];
            let retention = why["retention"].as_f64().unwrap_or(f64::NAN);
            let archived = why["archived"].as_bool().unwrap_or(false);
            (
                r["event_id"].as_str().unwrap().to_string(),
                (archived, retention),
            )
        })
        .collect()
}

/// Facts of alice, 50 days old (no importance: S = 15 days, archived after 44.9): one named
/// by an answer 35 days ago (S = 30 from then: R = e^(−35/30), active), one never used.
const FACTS: [(&str, &str, &str); 2] = [
    ("fk", "favourite tea", "jasmine"),
    ("fo", "bicycle brand", "Gazelle"),
];

fn fact(id: &str, attribute: &str, value: &str) -> Value {
    json!({"kind": "fact", "event_id": id, "tenant": "acme", "user": "alice",
           "ts": (Utc::now() - Days::days(50)).to_rfc3339(), "subject": "user",
           "attribute": attribute, "value": value})
}

/// The values of the facts a recall for them returns, sorted.
fn recalled_facts(server: &Server, extra: Value) -> Vec<String> {
    let mut req = json!({"tenant": "acme", "user": "alice", "k": 20,
                         "query": "favourite tea jasmine, bicycle brand Gazelle"});
    for (k, v) in extra.as_object().unwrap() {
        req[k] = v.clone();
    }
    let (status, body) = server.post("/v1/recall", &req);
    assert_eq!(status, 200, "{body}");
    // the two facts above (the turns state some too: "My sister Nora …")
    let facts = body["facts"].as_array().unwrap().iter();
    let ours = facts.filter(|f| FACTS.iter().any(|(_, _, value)| f["value"] == *value));
    let mut values: Vec<String> = ours.map(|f| f["value"].as_str().unwrap().into()).collect();
    values.sort();
    values
}

const QUERY: &str = "beagle Rex, Nora in Lisbon, passport, sandwich, boiler valve, piano lessons";

fn ids(found: &BTreeMap<String, (bool, f64)>) -> Vec<&str> {
    found.keys().map(String::as_str).collect()
}

/// What every recall must say, on the first start and after a restart.
fn check_states(server: &Server) {
    let plain = recall(server, QUERY, json!({}));
    assert_eq!(
        ids(&plain),
        vec!["important", "recalled", "recent"],
        "a plain recall leaves the archived memories out: {plain:?}"
    );
    let all = recall(server, QUERY, json!({"include_archived": true}));
    let expected_archived = BTreeMap::from([
        ("downvoted", true),
        ("important", false),
        ("old", true),
        ("recalled", false),
        ("recent", false),
        ("trivial", true),
    ]);
    let archived: BTreeMap<&str, bool> = all.iter().map(|(id, (a, _))| (id.as_str(), *a)).collect();
    assert_eq!(archived, expected_archived, "{all:?}");
    // R = e^(−t/S), t in days (the test takes seconds: 1e-3 is ample)
    let expected_retention = [
        ("old", (-60.0f64 / 15.0).exp()),
        ("recent", (-5.0f64 / 15.0).exp()),
        ("important", (-50.0f64 / 20.0).exp()),
        ("trivial", (-5.0f64).exp()),
        ("recalled", (-35.0f64 / 20.0).exp()),
        ("downvoted", (-5.0f64).exp()),
    ];
    for (id, r) in expected_retention {
        let got = all[id].1;
        assert!(
            (got - r).abs() < 1e-3,
            "{id}: retention {got}, expected {r}"
        );
    }
    // looking back (as of now) finds them all too
    let now = Utc::now().to_rfc3339();
    let as_of = recall(server, QUERY, json!({"as_of": now}));
    assert_eq!(ids(&as_of), ids(&all));
    // a fact fades like an episode, and an answer it went into keeps it
    assert_eq!(recalled_facts(server, json!({})), ["jasmine"]);
    let all_facts = recalled_facts(server, json!({"include_archived": true}));
    assert_eq!(all_facts, ["Gazelle", "jasmine"]);
    // the prompt draws only on memories that are not archived
    let (status, prompt) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "query": QUERY}),
    );
    assert_eq!(status, 200, "{prompt}");
    let text = prompt.to_string();
    let shown: Vec<&str> = TURNS
        .iter()
        .filter(|(_, _, content, _)| text.contains(&content[..24]))
        .map(|(id, ..)| *id)
        .collect();
    assert!(!shown.is_empty(), "the prompt shows no memory: {prompt}");
    assert!(
        shown.iter().all(|id| !expected_archived[id]),
        "the prompt shows an archived memory: {shown:?}"
    );
}

#[test]
fn memories_fade_are_archived_and_are_still_found_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engram.toml");
    std::fs::write(&config, "demo = false\n[retention]\nstability_days = 10\n").unwrap();
    let data = dir.path().join("data");
    let args = ["--config", config.to_str().unwrap()];
    let server = Server::start_with(&data, &args);
    let events: Vec<Value> = TURNS
        .iter()
        .map(|(id, days, text, importance)| turn(id, *days, text, *importance))
        .chain(
            FACTS
                .iter()
                .map(|(id, attribute, value)| fact(id, attribute, value)),
        )
        .collect();
    let (status, body) = server.post("/v1/events", &Value::Array(events));
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    // the episodes' ids, for the answers that name them
    let (status, found) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "alice", "query": QUERY, "k": 20,
                "include_archived": true}),
    );
    assert_eq!(status, 200, "{found}");
    let id_of = |event: &str| {
        let hits = found["results"].as_array().unwrap();
        let hit = hits.iter().find(|h| h["event_id"] == event).unwrap();
        hit["id"].as_str().unwrap().to_string()
    };
    let at = (Utc::now() - Days::days(35)).to_rfc3339();
    let answer = |id: &str, used: &str| {
        json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": "alice",
               "session": "s-answers", "ts": at, "role": "assistant",
               "content": "Here is what I remember.", "meta": {"memories": [id_of(used)]}})
    };
    let later = (Utc::now() - Days::days(34)).to_rfc3339();
    // bob's answer names alice's "trivial": not his memory, so it does not keep it
    let mut for_bob = answer("b1", "trivial");
    for_bob["user"] = json!("bob");
    // an answer built with the "jasmine" fact
    let mut with_fact = answer("a3", "recalled");
    let (status, facts) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "alice", "query": "favourite tea jasmine",
                "include_archived": true}),
    );
    assert_eq!(status, 200, "{facts}");
    let facts = facts["facts"].as_array().unwrap();
    let kept = facts.iter().find(|f| f["value"] == "jasmine").unwrap();
    with_fact["meta"]["memories"] = json!([kept["fact_id"]]);
    let events = json!([
        with_fact,
        answer("a1", "recalled"),
        answer("a2", "downvoted"),
        for_bob,
        {"kind": "feedback", "event_id": "f2", "tenant": "acme", "user": "alice", "ts": later,
         "message_id": "a2", "skill_id": "concise", "reward": -1},
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    check_states(&server);
    server.interrupt();

    // a restart rebuilds the traces and the archive from the log
    let server = Server::start_with(&data, &args);
    server.wait_caught_up(Duration::from_secs(60));
    check_states(&server);

    // an erase takes archived memories too: nothing is found, however asked
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{receipt}");
    // her six turns, archived or not, and the three answers given to her
    assert_eq!(receipt["episodes_erased"], 9, "{receipt}");
    server.wait_caught_up(Duration::from_secs(60));
    for extra in [
        json!({"include_archived": true}),
        json!({"as_of": Utc::now().to_rfc3339()}),
    ] {
        let found = recall(&server, QUERY, extra.clone());
        assert!(found.is_empty(), "{extra}: {found:?}");
        assert!(recalled_facts(&server, extra.clone()).is_empty(), "{extra}");
    }
}
