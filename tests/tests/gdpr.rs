//! Export and erase through the real server: an export holds the user's whole subgraph; after
//! an erase nothing of the user is left in any view, in any file under the data folder (the
//! event log, the reject log, every Lance dataset with every retained version and index), nor
//! after a restart, while other users and tenants keep everything. Erasing a tenant also
//! revokes its keys.

use chrono::{Duration as Days, Utc};
use engram_tests::{files_containing, Server};
use serde_json::{json, Value};
use std::time::Duration;

/// A user's events, every text carrying `marker` (lower case: the full-text index keeps
/// lower-cased words).
fn history(tenant: &str, user: &str, marker: &str) -> Vec<Value> {
    let at = |days: i64| (Utc::now() - Days::days(days)).to_rfc3339();
    let mut events = vec![
        json!({"kind": "interaction", "event_id": format!("{user}-1"), "tenant": tenant, "user": user,
               "session": "s1", "ts": at(9), "role": "user",
               "content": format!("I moved to Porto and my locker code is {marker}. Also, my cat is called Tiberius {marker} the Second, and he hates the rain in winter.")}),
        json!({"kind": "interaction", "event_id": format!("{user}-2"), "tenant": tenant, "user": user,
               "session": "s1", "ts": at(9), "role": "assistant",
               "content": format!("Noted: {marker} is your locker code.")}),
        json!({"kind": "fact", "event_id": format!("{user}-3"), "tenant": tenant, "user": user,
               "ts": at(8), "subject": "user", "attribute": "password hint", "value": marker}),
        json!({"kind": "summary", "event_id": format!("{user}-6"), "tenant": tenant, "user": user,
               "ts": at(8), "content": format!("The user keeps a locker, code {marker}, and a cat."),
               "covers": [format!("{user}-1"), format!("{user}-2")]}),
        json!({"kind": "relation", "event_id": format!("{user}-7"), "tenant": tenant, "user": user,
               "ts": at(8), "subject": "Tiberius", "relation": "owned by",
               "object": format!("the holder of locker {marker}"), "evidence": [format!("{user}-1")]}),
        json!({"kind": "feedback", "event_id": format!("{user}-4"), "tenant": tenant, "user": user,
               "ts": at(8), "message_id": format!("{user}-2"), "skill_id": "concise", "reward": 1}),
        // team membership is the user's data too: the team's name goes with them
        json!({"kind": "control", "event_id": format!("{user}-5"), "tenant": tenant, "user": user,
               "ts": at(8), "action": "set_team", "team": format!("team-{marker}")}),
    ];
    for (i, days) in [7, 5, 3].into_iter().enumerate() {
        events.push(json!({"kind": "correction", "event_id": format!("{user}-c{i}"), "tenant": tenant,
            "user": user, "session": "s1", "ts": at(days), "target_event_id": format!("{user}-2"),
            "correction_type": "STYLE", "original": format!("Noted: {marker} is your locker code."),
            "corrected": format!("Got it ({marker})."), "expected_behavior": "Keep confirmations short."}));
    }
    events
}

/// Waits until `marker` is in every Lance table and the log: the other tables are written
/// beside the episodes, a moment after the views, and not finding the marker after an erase
/// proves nothing unless it was found before.
fn wait_stored_everywhere(data: &std::path::Path, marker: &str) {
    assert!(
        !files_containing(&data.join("lance/episodes.lance/data"), marker).is_empty(),
        "{marker} is stored in Lance (the search can see stored text)"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    for table in ["facts", "summaries", "events", "passages"] {
        let dir = data.join(format!("lance/{table}.lance/data"));
        while !dir.exists() || files_containing(&dir, marker).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "{marker} is never stored in the {table} table"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert!(!files_containing(&data.join("log"), marker).is_empty());
}

/// Sends each user's history, and a rejected input of theirs, kept in the reject log with its
/// text.
fn send_histories_and_a_rejected_input(server: &Server, users: &[(&str, &str, &str)]) {
    for &(tenant, user, marker) in users {
        let (status, body) = server.post("/v1/events", &json!(history(tenant, user, marker)));
        assert_eq!(status, 200, "{body}");
        // a rejected input of the user, kept in the reject log with its text
        let bad = json!({"kind": "interaction", "event_id": format!("{user}-bad"), "tenant": tenant,
            "user": user, "ts": Utc::now().to_rfc3339(), "role": "narrator", "content": marker});
        assert_eq!(server.post("/v1/events", &bad).0, 422);
    }
}

/// The export of acme's alice holds her whole subgraph, and only hers.
fn assert_the_export_holds_alices_subgraph_only(server: &Server) {
    let (status, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{export}");
    assert_eq!(export["episodes"].as_array().unwrap().len(), 2);
    let text = export.to_string();
    assert!(text.contains("zqalicemark"));
    assert!(!text.contains("zqbobmark") && !text.contains("zqglobexmark"));
    assert_eq!(export["corrections"].as_array().unwrap().len(), 3);
    assert!(!export["facts"].as_array().unwrap().is_empty());
    assert_eq!(export["summaries"].as_array().unwrap().len(), 1, "{export}");
    // the one sent, and "I moved to Porto" read at ingest
    assert_eq!(export["relations"].as_array().unwrap().len(), 2, "{export}");
    // MENTIONS: from her episodes to the entities listed, by their ids; "Porto" is one
    let entity_ids: std::collections::BTreeMap<&str, &str> = export["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["id"].as_str().unwrap(), e["name"].as_str().unwrap()))
        .collect();
    let episode_ids: Vec<&Value> = export["episodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["id"])
        .collect();
    let mentions: Vec<&Value> = export["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "MENTIONS")
        .collect();
    assert!(!mentions.is_empty(), "{export}");
    for m in &mentions {
        assert!(episode_ids.contains(&&m["from"]), "{m}");
        assert!(entity_ids.contains_key(m["to"].as_str().unwrap()), "{m}");
    }
    assert!(
        mentions
            .iter()
            .any(|m| entity_ids[m["to"].as_str().unwrap()] == "porto"),
        "{export}"
    );
    assert!(!export["skills"].as_array().unwrap().is_empty());
    assert_eq!(export["team"], "team-zqalicemark");
    assert_eq!(
        export["correction_clusters"][0]["pattern"]["size"], 3,
        "{export}"
    );
}

/// Erases acme's alice; the receipt counts everything of hers.
fn erase_alice_and_check_the_receipt(server: &Server) {
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["episodes_erased"], 2, "{receipt}");
    assert!(
        receipt["passages_erased"].as_u64().unwrap() > 0,
        "{receipt}"
    );
    assert!(receipt["facts_erased"].as_u64().unwrap() > 0, "{receipt}");
    assert_eq!(receipt["summaries_erased"], 1, "{receipt}");
    // every event of hers, the set_team included
    let logged = history("acme", "alice", "zqalicemark").len();
    assert_eq!(receipt["log_records_redacted"], logged, "{receipt}");
    assert_eq!(receipt["rejections_removed"], 1, "{receipt}");
}

/// Nothing of acme's alice is left in any view, recall, prompt or file, and everyone else
/// keeps everything.
fn assert_alice_gone_and_everyone_else_kept(server: &Server) {
    let (_, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    for view in [
        "episodes",
        "facts",
        "entities",
        "co_mentions",
        "skills",
        "correction_clusters",
        "preferences",
        "corrections",
        "summaries",
        "relations",
    ] {
        assert_eq!(export[view], json!([]), "{view} after the erase: {export}");
    }
    assert_eq!(export["style"], Value::Null);
    assert_eq!(
        export["team"],
        Value::Null,
        "her team membership after the erase"
    );
    let recall = server.recall("acme", "alice", "what is my locker code", 10);
    assert_eq!(recall["results"], json!([]));
    assert_eq!(recall["facts"], json!([]));
    assert_eq!(recall["summaries"], json!([]));
    let (_, prompt) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s1", "query": "locker code?"}),
    );
    assert!(!prompt.to_string().contains("zqalicemark"), "{prompt}");
    let files = files_containing(&server.data_dir, "zqalicemark");
    assert!(files.is_empty(), "alice's text is still in {files:?}");
    // everyone else keeps everything
    for (tenant, user, marker) in [
        ("acme", "bob", "zqbobmark"),
        ("globex", "alice", "zqglobexmark"),
    ] {
        let r = server.recall(tenant, user, "what is my locker code", 10);
        assert_eq!(
            r["results"].as_array().unwrap().len(),
            2,
            "{tenant}/{user}: {r}"
        );
        assert!(r.to_string().contains(marker));
        assert!(
            !files_containing(&server.data_dir.join("lance/episodes.lance/data"), marker)
                .is_empty()
        );
    }
    let (_, bob) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "bob"}));
    assert_eq!(bob["corrections"].as_array().unwrap().len(), 3);
}

/// Erasing globex removes its data and its keys; its views hold nothing, read back under a key
/// issued afresh; acme's data stays.
fn assert_erasing_globex_removes_its_data_and_keys(server: &Server) {
    let globex = server.key_for("globex");
    let resp = reqwest::blocking::Client::new()
        .delete(format!("{}/v1/admin/tenants/globex", server.base))
        .bearer_auth(&server.admin_key)
        .timeout(Duration::from_secs(120))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let receipt: Value = resp.json().unwrap();
    assert_eq!(receipt["tenant_keys_removed"], true, "{receipt}");
    assert_eq!(receipt["episodes_erased"], 2, "{receipt}");
    let (status, _) = server.post_as(
        Some(&globex),
        "/v1/recall",
        &json!({"user": "alice", "query": "locker"}),
    );
    assert_eq!(status, 401);
    assert!(files_containing(&server.data_dir, "zqglobexmark").is_empty());
    // the views hold nothing of the tenant either: read back under a key issued afresh
    server.forget_key("globex");
    let (status, memory) = server.post("/v1/memory", &json!({"tenant": "globex", "user": "alice"}));
    assert_eq!(status, 200, "{memory}");
    for view in [
        "facts",
        "entities",
        "co_mentions",
        "skills",
        "corrections",
        "summaries",
        "relations",
    ] {
        assert_eq!(
            memory[view],
            json!([]),
            "{view} after the tenant's erase: {memory}"
        );
    }
    let recall = server.recall("globex", "alice", "what is my locker code", 10);
    assert_eq!(recall["results"], json!([]), "{recall}");
    assert_eq!(recall["facts"], json!([]), "{recall}");
    assert!(!files_containing(
        &server.data_dir.join("lance/episodes.lance/data"),
        "zqbobmark"
    )
    .is_empty());
}

#[test]
fn an_erased_user_leaves_no_trace_and_everyone_else_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(&data, &["--workers", "2"]);
    let users = [
        ("acme", "alice", "zqalicemark"),
        ("acme", "bob", "zqbobmark"),
        ("globex", "alice", "zqglobexmark"),
    ];
    send_histories_and_a_rejected_input(&server, &users);
    server.wait_caught_up(Duration::from_secs(60));
    let data = &server.data_dir;
    for (_, _, marker) in users {
        wait_stored_everywhere(data, marker);
    }

    // the export holds the user's whole subgraph, and only theirs
    assert_the_export_holds_alices_subgraph_only(&server);

    // erase
    erase_alice_and_check_the_receipt(&server);
    assert_alice_gone_and_everyone_else_kept(&server);

    // after a crash and restart (the log replayed) it stays gone, and a redelivery of an
    // erased event is recognised, not stored again
    server.kill9();
    let server = Server::start_with(&dir.path().join("data"), &["--workers", "2"]);
    server.wait_caught_up(Duration::from_secs(60));
    let (status, again) = server.post(
        "/v1/events",
        &json!(history("acme", "alice", "zqalicemark")[..1]),
    );
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["duplicates"], 1, "{again}");
    server.wait_caught_up(Duration::from_secs(60));
    assert_alice_gone_and_everyone_else_kept(&server);

    // erasing a tenant removes its data and its keys
    assert_erasing_globex_removes_its_data_and_keys(&server);
}

fn control(id: &str, action: &str) -> Value {
    json!({"kind": "control", "event_id": id, "tenant": "acme", "user": "alice",
           "ts": Utc::now().to_rfc3339(), "action": action, "scope": "user"})
}

fn note(id: &str, content: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": "alice",
           "session": "s1", "ts": Utc::now().to_rfc3339(), "role": "user", "content": content})
}

#[test]
fn a_restricted_user_is_kept_but_not_used_until_the_restriction_is_lifted() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let episodes = |server: &Server| {
        let (status, export) =
            server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
        assert_eq!(status, 200, "{export}");
        export["episodes"].as_array().unwrap().len()
    };
    // alice's and bob's votes on one skill make the tenant's population prior bob sees
    let vote = |id: &str, user: &str| {
        json!({"kind": "feedback", "event_id": id, "tenant": "acme", "user": user,
               "ts": Utc::now().to_rfc3339(), "message_id": format!("{user}-m"),
               "skill_id": "concise", "reward": 1})
    };
    let population_bob_sees = |server: &Server| {
        let (status, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "bob"}));
        assert_eq!(status, 200, "{memory}");
        memory["skills"][0]["population"]["successes"].clone()
    };
    for event in [
        note("n1", "I live in Porto."),
        vote("va", "alice"),
        vote("vb", "bob"),
    ] {
        assert_eq!(server.post("/v1/events", &event).0, 200);
    }
    server.wait_caught_up(Duration::from_secs(60));
    assert_eq!(
        server.recall("acme", "alice", "where do I live", 5)["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(population_bob_sees(&server), 2);

    assert_eq!(server.post("/v1/events", &control("r1", "restrict")).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    // processing is frozen: alice's vote no longer counts in what others are served
    assert_eq!(population_bob_sees(&server), 1);
    let locked = |server: &Server| {
        for (path, body) in [
            (
                "/v1/recall",
                json!({"tenant": "acme", "user": "alice", "query": "where"}),
            ),
            ("/v1/memory", json!({"tenant": "acme", "user": "alice"})),
            (
                "/v1/prompt",
                json!({"tenant": "acme", "user": "alice", "query": "where"}),
            ),
        ] {
            let (status, answer) = server.post(path, &body);
            assert_eq!(status, 423, "{path}: {answer}");
        }
    };
    locked(&server);
    // new events are kept, not processed
    let (status, report) =
        server.post("/v1/events", &note("n2", "Now I live in Oslo, zqheldmark."));
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        (report["held"].as_u64(), report["accepted"].as_u64()),
        (Some(1), Some(0)),
        "{report}"
    );
    // a redelivery while held is a duplicate
    let (_, again) = server.post("/v1/events", &note("n2", "Now I live in Oslo, zqheldmark."));
    assert_eq!(again["duplicates"], 1, "{again}");
    server.wait_caught_up(Duration::from_secs(60));
    assert_eq!(episodes(&server), 1);
    // the export still gives all of alice's data: the views hold none of it now, so the
    // events themselves, stored and held
    let (_, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(export["restricted"], true, "{export}");
    let events = export["events"].to_string();
    for text in ["Porto", "zqheldmark", "alice-m"] {
        assert!(events.contains(text), "{text}: {events}");
    }
    // others are not affected
    let bob = json!({"kind": "interaction", "event_id": "b1", "tenant": "acme", "user": "bob",
                     "ts": Utc::now().to_rfc3339(), "role": "user", "content": "hi"});
    assert_eq!(server.post("/v1/events", &bob).1["accepted"], 1);

    // the restriction and the held event survive a crash
    server.kill9();
    let server = Server::start(&data);
    server.wait_caught_up(Duration::from_secs(60));
    locked(&server);
    assert_eq!(episodes(&server), 1);
    assert_eq!(population_bob_sees(&server), 1);

    // lifted: the held event is processed, the memory is used again
    assert_eq!(
        server.post("/v1/events", &control("u1", "unrestrict")).0,
        200
    );
    server.wait_caught_up(Duration::from_secs(60));
    assert_eq!(episodes(&server), 2);
    let r = server.recall("acme", "alice", "where do I live now", 5);
    assert!(r.to_string().contains("zqheldmark"), "{r}");
    assert!(r.to_string().contains("Porto"), "{r}");
    assert_eq!(population_bob_sees(&server), 2);
    let (_, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    assert!(export.get("restricted").is_none(), "{export}");
}

/// What is left of `(tenant, user)` (`marker` in their texts) through each route that reads
/// memory, and in the data folder: empty once the erase is complete.
fn traces(server: &Server, tenant: &str, user: &str, marker: &str) -> Vec<String> {
    let mut left = files_containing(&server.data_dir, marker);
    let recall = server.recall(tenant, user, "what is my locker code", 10);
    if recall.to_string().contains(marker) {
        left.push(format!("recall: {recall}"));
    }
    let (_, export) = server.post("/v1/export", &json!({"tenant": tenant, "user": user}));
    if export.to_string().contains(marker) {
        left.push(format!("export: {export}"));
    }
    left
}

fn receipts(data: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(data.join("erasures.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn an_erase_sent_as_an_event_is_as_complete_as_post_erase_and_only_the_admin_erases_a_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    let (alice, bob) = ("zqevalicemark", "zqevbobmark");
    for (user, marker) in [("alice", alice), ("bob", bob)] {
        let (status, body) = server.post("/v1/events", &json!(history("acme", user, marker)));
        assert_eq!(status, 200, "{body}");
    }
    server.wait_caught_up(Duration::from_secs(60));
    for marker in [alice, bob] {
        wait_stored_everywhere(&server.data_dir, marker);
    }

    // a tenant's key may not erase (or restrict) its whole tenant, alone or inside an array
    let erase_tenant = |id: &str| {
        json!({"kind": "control", "event_id": id, "tenant": "acme", "user": "alice",
               "ts": Utc::now().to_rfc3339(), "action": "erase", "scope": "tenant"})
    };
    let mut restrict_tenant = erase_tenant("t-r");
    restrict_tenant["action"] = json!("restrict");
    for body in [
        erase_tenant("t-e1"),
        json!([note("n-ok", "I like ferries."), erase_tenant("t-e2")]),
        restrict_tenant,
    ] {
        let (status, report) = server.post("/v1/events", &body);
        assert_eq!(status, 422, "{report}");
        let rejected = report["rejected"].as_array().unwrap();
        assert_eq!(rejected.len(), 1, "{report}");
        assert_eq!(rejected[0]["field"], "scope", "{report}");
    }
    server.wait_caught_up(Duration::from_secs(60));
    assert_eq!(
        server
            .post(
                "/v1/recall",
                &json!({"tenant": "acme", "user": "bob", "query": "x"})
            )
            .0,
        200,
        "a refused restrict must not lock the tenant"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(receipts(&server.data_dir).is_empty());
    assert!(!files_containing(&server.data_dir, alice).is_empty());

    // an erase event through /v1/events: everything is gone within 10 s of acceptance, with a
    // receipt, as after POST /v1/erase
    let event = json!({"kind": "control", "event_id": "erase-alice", "tenant": "acme",
        "user": "alice", "ts": Utc::now().to_rfc3339(), "action": "erase", "scope": "user"});
    let (status, report) = server.post("/v1/events", &event);
    assert_eq!(
        (status, report["accepted"].as_u64()),
        (200, Some(1)),
        "{report}"
    );
    let accepted = std::time::Instant::now();
    let mut left = traces(&server, "acme", "alice", alice);
    while !left.is_empty() && accepted.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(200));
        left = traces(&server, "acme", "alice", alice);
    }
    assert!(left.is_empty(), "10 s after the erase event: {left:?}");
    let done = receipts(&server.data_dir);
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(done[0]["erase_event_id"], "erase-alice");
    // her history, and the note accepted beside a refused event
    assert_eq!(done[0]["episodes_erased"], 3, "{done:?}");
    assert_eq!(
        done[0]["log_records_redacted"],
        history("acme", "alice", alice).len() + 1,
        "{done:?}"
    );
    assert!(
        traces(&server, "acme", "bob", bob).len() > 0,
        "bob keeps his data"
    );

    // the admin key may: a tenant's erase sent as an event to /v1/admin/events
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/v1/admin/events", server.base))
        .bearer_auth(&server.admin_key)
        .json(&erase_tenant("t-admin"))
        .timeout(Duration::from_secs(30))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let accepted = std::time::Instant::now();
    while !files_containing(&server.data_dir, bob).is_empty()
        && accepted.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(files_containing(&server.data_dir, bob).is_empty());
    let done = receipts(&server.data_dir);
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(done[1]["tenant_keys_removed"], true, "{done:?}");
}
