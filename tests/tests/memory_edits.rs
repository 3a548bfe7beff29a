//! One memory deleted or one fact rectified through the real server (GDPR Art. 16 and 17 for a
//! single item): a deleted episode, fact or correction is gone from the views, recall, prompts,
//! the export and every file under the data folder (the log, the events table, every Lance
//! table with its old versions), also after a `kill -9` and restart, while the user's other
//! memories and other users keep everything; a `forget` control event on `POST /v1/events`
//! does the same; ids of another user or tenant, unknown or malformed ones get clear errors; a
//! rectified fact is superseded by the user's new value, after a restart too. Both are in the
//! audit log.

use chrono::{Duration as Days, Utc};
use engram_tests::{files_containing, Server};
use serde_json::{json, Value};
use std::time::{Duration, Instant};

/// A memory edit: `DELETE` (with `?user=` in `path`) or `PATCH` with `body`, with `key`.
fn edit(server: &Server, key: &str, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();
    let url = format!("{}{}", server.base, path);
    let req = match method {
        "DELETE" => client.delete(url),
        _ => client.patch(url),
    };
    let req = match body {
        Some(b) => req.json(&b),
        None => req,
    };
    let resp = req.bearer_auth(key).send().unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().unwrap_or(Value::Null))
}

fn at(days: i64) -> String {
    (Utc::now() - Days::days(days)).to_rfc3339()
}

fn message(id: &str, user: &str, content: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": user,
           "session": "s1", "ts": at(3), "role": "user", "content": content})
}

/// Alice's memories, each with its own marker (lower case: the full-text index keeps lower-cased
/// words), and Bob's.
fn histories() -> Vec<Value> {
    vec![
        message("m1", "alice", "My locker code is zqforgetmark, and I keep my bicycle helmet there on weekdays. The office is far from the station, so I cycle."),
        message("m2", "alice", "I love hiking in the zqkeepmark mountains near the lake, especially in autumn when the trees turn red and the paths are quiet."),
        json!({"kind": "fact", "event_id": "f1", "tenant": "acme", "user": "alice", "ts": at(3),
               "subject": "user", "attribute": "favourite colour", "value": "zqfactmark"}),
        json!({"kind": "correction", "event_id": "c1", "tenant": "acme", "user": "alice",
               "session": "s1", "ts": at(2), "target_event_id": "m2", "correction_type": "STYLE",
               "original": "Long answer zqcorrmark.", "corrected": "Short.",
               "expected_behavior": "Keep answers short."}),
        message("m3", "alice", "My parking spot is zqcontrolmark, on the second floor of the garage. It is behind the building, next to the lifts."),
        message("b1", "bob", "My locker code is zqbobmark, and I keep my bicycle helmet there on weekdays. The office is far from the station, so I cycle."),
    ]
}

/// Waits until `marker` is in the files of every Lance table in `tables`: not finding it after a
/// deletion proves nothing unless it was there before.
fn wait_stored(data: &std::path::Path, marker: &str, tables: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    for table in tables {
        let dir = data.join(format!("lance/{table}.lance/data"));
        while !dir.exists() || files_containing(&dir, marker).is_empty() {
            assert!(
                Instant::now() < deadline,
                "{marker} is never stored in {table}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Nothing of the deleted memories is in alice's views, recall, prompt, export or any file;
/// her kept memory and bob's are.
fn assert_deleted_gone_and_the_rest_kept(server: &Server) {
    let (status, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{export}");
    let text = export.to_string();
    for marker in ["zqforgetmark", "zqfactmark", "zqcorrmark", "zqcontrolmark"] {
        assert!(!text.contains(marker), "{marker} in the export: {export}");
        let files = files_containing(&server.data_dir, marker);
        assert!(files.is_empty(), "{marker} is still in {files:?}");
    }
    let episodes: Vec<&Value> = export["episodes"].as_array().unwrap().iter().collect();
    assert_eq!(episodes.len(), 1, "{export}");
    assert_eq!(episodes[0]["event_id"], "m2");
    assert_eq!(export["corrections"], json!([]), "{export}");
    assert!(text.contains("zqkeepmark"));
    let recall = server.recall("acme", "alice", "what is my locker code", 10);
    assert!(!recall.to_string().contains("zqforgetmark"), "{recall}");
    assert_eq!(recall["results"].as_array().unwrap().len(), 1, "{recall}");
    let (status, prompt) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s1", "query": "locker code?"}),
    );
    assert_eq!(status, 200, "{prompt}");
    assert!(!prompt.to_string().contains("zqforgetmark"), "{prompt}");
    assert!(prompt.to_string().contains("zqkeepmark"), "{prompt}");
    let bob = server.recall("acme", "bob", "what is my locker code", 10);
    assert!(bob.to_string().contains("zqbobmark"), "{bob}");
    assert!(!files_containing(
        &server.data_dir.join("lance/episodes.lance/data"),
        "zqbobmark"
    )
    .is_empty());
}

/// Ids that are not alice's memories, and malformed requests: clear errors, nothing removed.
fn assert_hostile_ids_refused(server: &Server, acme: &str, globex: &str) {
    for (key, path, status, field) in [
        (acme, "/v1/memories/b1?user=alice", 404, "id"),
        (acme, "/v1/memories/m1?user=bob", 404, "id"),
        (globex, "/v1/memories/m1?user=alice", 404, "id"),
        (acme, "/v1/memories/nothing-here?user=alice", 404, "id"),
        (acme, "/v1/memories/m1", 400, "user"),
        (acme, "/v1/memories/m1?user=al%20ice", 400, "user"),
        (acme, "/v1/memories/m%01?user=alice", 400, "id"),
    ] {
        let (got, body) = edit(server, key, "DELETE", path, None);
        assert_eq!(got, status, "{path}: {body}");
        assert_eq!(body["error"]["field"], field, "{path}: {body}");
    }
    let long = format!("/v1/memories/{}?user=alice", "x".repeat(300));
    assert_eq!(edit(server, acme, "DELETE", &long, None).0, 400);
    // a forget event naming no event of the tenant is refused, naming the field
    let (status, body) = server.post(
        "/v1/events",
        &json!({"kind": "control", "event_id": "fx", "tenant": "acme", "user": "alice",
                "ts": at(0), "action": "forget", "target_event_id": "never-sent"}),
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["rejected"][0]["field"], "target_event_id", "{body}");
    // nothing was removed
    assert!(!files_containing(&server.data_dir, "zqforgetmark").is_empty());
}

/// Deletes alice's message m1 (by event id), fact f1 (by fact id) and correction c1, each
/// answered with its receipt; then m3 by a `forget` control event.
fn delete_alices_memories(server: &Server, acme: &str) {
    let (status, receipt) = edit(server, acme, "DELETE", "/v1/memories/m1?user=alice", None);
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["memory"]["event_id"], "m1", "{receipt}");
    assert_eq!(receipt["memory"]["kind"], "interaction", "{receipt}");
    assert_eq!(receipt["target_event_id"], "m1", "{receipt}");
    assert_eq!(receipt["episodes_erased"], 1, "{receipt}");
    assert!(
        receipt["passages_erased"].as_u64().unwrap() > 0,
        "{receipt}"
    );
    assert_eq!(receipt["events_redacted"], 1, "{receipt}");

    let (_, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    let fact_id = memory["facts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["value"] == "zqfactmark")
        .unwrap_or_else(|| panic!("the fact in {memory}"))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, receipt) = edit(
        server,
        acme,
        "DELETE",
        &format!("/v1/memories/{fact_id}?user=alice"),
        None,
    );
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["memory"]["kind"], "fact", "{receipt}");
    assert_eq!(receipt["facts_erased"], 1, "{receipt}");

    let (status, receipt) = edit(server, acme, "DELETE", "/v1/memories/c1?user=alice", None);
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["memory"]["kind"], "correction", "{receipt}");
    // deleted already: no such memory any more
    let (status, body) = edit(server, acme, "DELETE", "/v1/memories/m1?user=alice", None);
    assert_eq!(status, 404, "{body}");

    let (status, body) = server.post(
        "/v1/events",
        &json!({"kind": "control", "event_id": "forget-m3", "tenant": "acme", "user": "alice",
                "ts": at(0), "action": "forget", "target_event_id": "m3"}),
    );
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !files_containing(&server.data_dir, "zqcontrolmark").is_empty() {
        assert!(
            Instant::now() < deadline,
            "the forget event did not complete"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The tenant's audit records of `action` for alice, as `(status, route)`.
fn audited(server: &Server, key: &str, action: &str) -> Vec<(u64, String)> {
    let (status, text) = server.get_as(Some(key), "/v1/audit?limit=1000");
    assert_eq!(status, 200, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    body["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == action && r["user"] == "alice")
        .map(|r| {
            (
                r["status"].as_u64().unwrap(),
                r["route"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_deleted_memory_is_gone_everywhere_and_stays_gone_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(&data, &["--workers", "2"]);
    let (status, body) = server.post("/v1/events", &json!(histories()));
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    wait_stored(&data, "zqforgetmark", &["episodes", "passages", "events"]);
    wait_stored(&data, "zqfactmark", &["facts", "events"]);
    wait_stored(&data, "zqcontrolmark", &["episodes", "events"]);
    let (acme, globex) = (server.key_for("acme"), server.key_for("globex"));

    assert_hostile_ids_refused(&server, &acme, &globex);
    delete_alices_memories(&server, &acme);
    server.wait_caught_up(Duration::from_secs(60));
    assert_deleted_gone_and_the_rest_kept(&server);
    let forgets = audited(&server, &acme, "forget");
    assert!(
        forgets.iter().filter(|(s, _)| *s == 200).count() >= 4,
        "{forgets:?}"
    );
    assert!(forgets.iter().any(|(s, _)| *s == 404), "{forgets:?}");

    // after a crash and restart (the views rebuilt from the log and the events table) they
    // stay gone, and a redelivery of a deleted event is recognised, not stored again
    server.kill9();
    let server = Server::start_with(&data, &["--workers", "2"]);
    server.wait_caught_up(Duration::from_secs(60));
    let (status, again) = server.post("/v1/events", &json!([histories()[0]]));
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicates"], 1, "{again}");
    server.wait_caught_up(Duration::from_secs(60));
    assert_deleted_gone_and_the_rest_kept(&server);
}

/// Alice's facts about `attribute`: `(id, value, current, superseded_by)`.
fn facts_of(server: &Server, attribute: &str) -> Vec<(String, String, bool, Value)> {
    let (status, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{memory}");
    memory["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["attribute"] == attribute)
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["value"].as_str().unwrap().to_string(),
                f["current"] == true,
                f["superseded_by"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_rectified_fact_is_superseded_by_the_users_value_also_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let fact = json!({"kind": "fact", "event_id": "city-1", "tenant": "acme", "user": "alice",
                      "ts": at(2), "subject": "user", "attribute": "home city", "value": "Lisbon"});
    assert_eq!(server.post("/v1/events", &fact).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let acme = server.key_for("acme");
    let before = facts_of(&server, "home_city");
    assert_eq!(before.len(), 1, "{before:?}");
    let old_id = before[0].0.clone();
    let path = format!("/v1/memories/{old_id}");

    // another user's, unknown, the same value, no value
    for (body, status, field) in [
        (json!({"user": "bob", "value": "Porto"}), 404, "id"),
        (json!({"user": "alice", "value": "Lisbon"}), 422, "value"),
        (json!({"user": "alice"}), 400, "value"),
    ] {
        let (got, answer) = edit(&server, &acme, "PATCH", &path, Some(body));
        assert_eq!(got, status, "{answer}");
        assert_eq!(answer["error"]["field"], field, "{answer}");
    }
    let (got, answer) = edit(
        &server,
        &acme,
        "PATCH",
        "/v1/memories/no-such-fact",
        Some(json!({"user": "alice", "value": "Porto"})),
    );
    assert_eq!(got, 404, "{answer}");

    let (status, done) = edit(
        &server,
        &acme,
        "PATCH",
        &path,
        Some(json!({"user": "alice", "value": "Porto"})),
    );
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["supersedes"], old_id.as_str());
    let new_id = done["fact_id"].as_str().unwrap().to_string();
    let check = |server: &Server| {
        let facts = facts_of(server, "home_city");
        let old = facts.iter().find(|f| f.0 == old_id).expect("the old value");
        assert_eq!(
            (old.1.as_str(), old.2, &old.3),
            ("Lisbon", false, &json!(new_id)),
            "{facts:?}"
        );
        let new = facts.iter().find(|f| f.0 == new_id).expect("the new value");
        assert_eq!((new.1.as_str(), new.2), ("Porto", true), "{facts:?}");
    };
    check(&server);
    // the old value is no longer current: rectify the current one
    let (got, answer) = edit(
        &server,
        &acme,
        "PATCH",
        &path,
        Some(json!({"user": "alice", "value": "Faro"})),
    );
    assert_eq!(got, 409, "{answer}");
    let rectified = audited(&server, &acme, "rectify");
    assert!(rectified.iter().any(|(s, _)| *s == 200), "{rectified:?}");

    server.kill9();
    let server = Server::start(&data);
    server.wait_caught_up(Duration::from_secs(60));
    check(&server);
}
