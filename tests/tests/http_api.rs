//! The HTTP API of a real `engram serve`, over a real socket.

use engram_tests::{interaction, Server};
use serde_json::{json, Value};
use std::time::Duration;

fn contents(recall: &Value) -> Vec<String> {
    recall["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn events_in_recall_out_isolated_per_user_and_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    // the server serves its OpenAPI document, and every path in it answers (not 404/405)
    let (status, doc) = server.get("/v1/openapi.json");
    assert_eq!(status, 200, "{doc}");
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, ops) in doc["paths"].as_object().unwrap() {
        let path = path
            .replace("{tenant}", "nobody")
            .replace("{key_id}", "engram_nokey");
        for method in ops.as_object().unwrap().keys() {
            if method == "get" && path.contains("stream") {
                continue; // an event stream stays open
            }
            let resp = reqwest::blocking::Client::new()
                .request(
                    method.to_uppercase().parse().unwrap(),
                    format!("{}{path}", server.base),
                )
                .timeout(Duration::from_secs(30))
                .send()
                .unwrap();
            let status = resp.status().as_u16();
            assert!(status != 404 && status != 405, "{method} {path}: {status}");
        }
    }
    let events = json!([
        interaction(
            "acme",
            "alice",
            "a1",
            "s1",
            1,
            "I just moved to Lisbon for a new job."
        ),
        interaction(
            "acme",
            "alice",
            "a2",
            "s1",
            2,
            "My cat Miso hates the tram noise."
        ),
        interaction(
            "acme",
            "alice",
            "a3",
            "s1",
            3,
            "Please remind me to renew my passport in June."
        ),
        interaction(
            "acme",
            "bob",
            "b1",
            "s9",
            1,
            "I moved to Berlin and my cat is called Tigre."
        ),
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accepted"], 4);
    // another tenant's events go with that tenant's key
    let globex = json!([interaction(
        "globex",
        "alice",
        "g1",
        "s1",
        1,
        "I moved to Tokyo; secret project Falcon starts soon."
    )]);
    let (status, body) = server.post("/v1/events", &globex);
    assert_eq!(status, 200, "{body}");
    let took = server.wait_caught_up(Duration::from_secs(30));
    eprintln!("visible in recall after {took:?}");

    let r = server.recall("acme", "alice", "which city did I move to?", 10);
    let got = contents(&r);
    assert_eq!(got.len(), 3, "{r}");
    assert!(got[0].contains("Lisbon"), "{got:?}");
    for leaked in ["Berlin", "Tigre", "Tokyo", "Falcon"] {
        assert!(
            got.iter().all(|c| !c.contains(leaked)),
            "{leaked} leaked into {got:?}"
        );
    }
    let top = &r["results"][0];
    assert!(
        top["id"].as_str().unwrap().len() == 36,
        "episode ids are UUIDs"
    );
    assert_eq!(top["event_id"], "a1");
    assert!(top["score"].as_f64().unwrap() > 0.0);
    assert!(top["ts"]
        .as_str()
        .unwrap()
        .starts_with("2025-01-01T00:01:00"));
    assert!(top["why"]["vector_rank"].is_u64());
    // NEXT edges from the views: a1 → a2 → a3 in session s1
    let by_event: std::collections::HashMap<String, &Value> = r["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["event_id"].as_str().unwrap().to_string(), h))
        .collect();
    assert_eq!(by_event["a1"]["next_id"], by_event["a2"]["id"]);
    assert_eq!(by_event["a3"]["prev_id"], by_event["a2"]["id"]);
    assert!(by_event["a3"].get("next_id").is_none());

    // full text alone finds an exact term
    let r = server.recall("acme", "alice", "passport", 1);
    assert!(contents(&r)[0].contains("passport"));
    assert!(r["results"][0]["why"]["text_rank"].is_u64());

    let r = server.recall("globex", "alice", "which city did I move to?", 10);
    assert_eq!(
        contents(&r),
        vec!["I moved to Tokyo; secret project Falcon starts soon."]
    );
    let r = server.recall("acme", "carol", "which city did I move to?", 10);
    assert!(contents(&r).is_empty());
}

#[test]
fn bad_events_are_rejected_with_the_field_named_and_kept_while_good_ones_are_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let mut bad_ts = interaction("acme", "alice", "x1", "s1", 1, "hello");
    bad_ts["ts"] = json!("last tuesday");
    let mut no_user = interaction("acme", "alice", "x2", "s1", 1, "hello");
    no_user.as_object_mut().unwrap().remove("user");
    let mut bad_role = interaction("acme", "alice", "x3", "s1", 1, "hello");
    bad_role["role"] = json!("narrator");
    let good = interaction(
        "acme",
        "alice",
        "ok1",
        "s1",
        1,
        "a good event survives its bad neighbours",
    );
    let (status, body) = server.post("/v1/events", &json!([bad_ts, good, no_user, bad_role]));
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["accepted"], 1);
    let rejected = body["rejected"].as_array().unwrap();
    let fields: Vec<(u64, &str)> = rejected
        .iter()
        .map(|r| (r["index"].as_u64().unwrap(), r["field"].as_str().unwrap()))
        .collect();
    assert_eq!(fields, vec![(0, "ts"), (2, "user"), (3, "role")]);
    assert!(rejected[0]["reason"].as_str().unwrap().contains("RFC 3339"));

    let (status, body) = server.post_raw("/v1/events", "{\"event_id\": ");
    assert_eq!(status, 422);
    assert_eq!(body["rejected"][0]["field"], "$");

    // every rejected input is in the reject log, with its original text, filed under the
    // tenant whose key sent it
    let records = engram_tests::reject_records(dir.path());
    let files: Vec<&str> = records.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files,
        [
            "tenants/acme.jsonl",
            "tenants/acme.jsonl",
            "tenants/acme.jsonl",
            "tenants/harness.jsonl"
        ]
    );
    let lines: Vec<Value> = records.into_iter().map(|(_, r)| r).collect();
    assert!(lines[0]["original"]
        .as_str()
        .unwrap()
        .contains("last tuesday"));
    assert_eq!(lines[3]["original"], "{\"event_id\": ");
    let metrics = server.metrics();
    assert!(
        metrics.contains("engram_events_rejected_total 4"),
        "{metrics}"
    );

    // a 2 MB body of a million bad items is refused whole, with a short answer
    let million = format!("[{}0]", "0,".repeat(999_999));
    let (status, body) = server.post_raw("/v1/events", &million);
    assert_eq!(status, 422);
    assert!(
        body.to_string().len() < 1_000,
        "{} bytes",
        body.to_string().len()
    );
    assert_eq!(body["rejected"].as_array().unwrap().len(), 1, "{body}");
    assert_eq!(body["rejected"][0]["field"], "$");
    let reason = body["rejected"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("1000000 events") && reason.contains("at most 10000"),
        "{reason}"
    );
    // reasons quoting a long bad value are cut
    let mut long_role = interaction("acme", "alice", "x4", "s1", 1, "hello");
    long_role["role"] = json!("narrator".repeat(10_000));
    let (status, body) = server.post("/v1/events", &json!([long_role.clone(), long_role]));
    assert_eq!(status, 422);
    for r in body["rejected"].as_array().unwrap() {
        assert_eq!(r["field"], "role");
        assert!(r["reason"].as_str().unwrap().chars().count() <= 310, "{r}");
    }

    server.wait_caught_up(Duration::from_secs(30));
    let r = server.recall("acme", "alice", "good event", 5);
    assert_eq!(r["results"].as_array().unwrap().len(), 1);

    // recall requests are validated too
    let (status, body) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "a'b", "query": "x"}),
    );
    assert_eq!(status, 400);
    assert_eq!(body["error"]["field"], "user");
    let (status, body) = server.post("/v1/recall", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["field"], "query");
}

#[test]
fn a_redelivered_event_id_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let e = interaction("acme", "alice", "dup-1", "s1", 1, "only once please");
    let (s1, b1) = server.post("/v1/events", &e);
    let (s2, b2) = server.post("/v1/events", &json!([e.clone(), e]));
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(b1["accepted"], 1);
    assert_eq!(b2["accepted"], 0);
    assert_eq!(b2["duplicates"], 2);
    server.wait_caught_up(Duration::from_secs(30));
    assert_eq!(server.status()["episodes"], 1);
    let r = server.recall("acme", "alice", "only once", 10);
    assert_eq!(r["results"].as_array().unwrap().len(), 1);
}

#[test]
fn facts_supersede_and_entities_accumulate_per_user() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        interaction("acme", "alice", "f1", "s1", 1, "I moved to Lisbon with my sister Jana."),
        interaction("acme", "alice", "f2", "s2", 300, "Big news: I moved to Porto last week."),
        interaction("acme", "bob", "f3", "s1", 5, "I moved to Berlin."),
        {"kind": "fact", "event_id": "f4", "tenant": "acme", "user": "alice", "ts": "2025-01-01T06:00:00Z",
         "subject": "user", "attribute": "Favorite Color", "value": "green"},
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(30));
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{m}");
    let facts = m["facts"].as_array().unwrap();
    let lives: Vec<&Value> = facts
        .iter()
        .filter(|f| f["attribute"] == "lives_in")
        .collect();
    assert_eq!(lives.len(), 2, "{m}");
    let lisbon = lives
        .iter()
        .find(|f| f["value"] == "Lisbon")
        .expect("Lisbon version");
    let porto = lives
        .iter()
        .find(|f| f["value"] == "Porto")
        .expect("Porto version");
    assert_eq!(lisbon["current"], false);
    assert_eq!(
        lisbon["valid_to"], porto["valid_from"],
        "the old value ends where the new begins"
    );
    assert_eq!(lisbon["superseded_by"], porto["id"]);
    assert_eq!(porto["current"], true);
    assert!(porto["valid_to"].is_null());
    let color = facts
        .iter()
        .find(|f| f["attribute"] == "favorite_color")
        .expect("explicit fact event");
    assert_eq!(color["value"], "green");
    assert!(
        facts.iter().all(|f| f["value"] != "Berlin"),
        "bob's fact leaked: {m}"
    );
    let names: Vec<&str> = m["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"lisbon") && names.contains(&"porto"),
        "{names:?}"
    );
    assert!(!names.contains(&"berlin"));

    // recall searches the facts table by meaning: the current value first, the one it
    // superseded after it, and as of a time before the move, the old value as current
    let facts_for =
        |body: Value| -> Vec<Value> { body["facts"].as_array().cloned().unwrap_or_default() };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let found = loop {
        // the facts table is written beside the episodes, a moment after the views
        let found = facts_for(server.recall("acme", "alice", "which city is my home now?", 5));
        if found.len() >= 4 || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    // both homes, the colour, and who Jana is ("with my sister Jana")
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found
            .iter()
            .any(|f| f["attribute"] == "sister:jana" && f["value"] == "Jana"),
        "{found:?}"
    );
    assert_eq!(found[0]["value"], "Porto", "{found:?}");
    assert_eq!(found[0]["current"], true);
    assert_eq!(found[0]["fact_id"], porto["id"]);
    assert!(
        found[0]["why"]["vector_rank"].as_u64().is_some(),
        "{found:?}"
    );
    let old = found
        .iter()
        .find(|f| f["value"] == "Lisbon")
        .expect("Lisbon");
    assert_eq!(old["current"], false);
    assert_eq!(old["superseded_by"], porto["id"]);
    assert!(
        found.iter().all(|f| f["value"] != "Berlin"),
        "bob's fact: {found:?}"
    );
    let before_move = chrono::DateTime::parse_from_rfc3339(porto["valid_from"].as_str().unwrap())
        .unwrap()
        - chrono::Duration::seconds(1);
    let (status, then) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "alice", "query": "which city is my home?",
                "as_of": before_move.to_rfc3339()}),
    );
    assert_eq!(status, 200, "{then}");
    let then = facts_for(then);
    assert!(then.iter().all(|f| f["value"] != "Porto"), "{then:?}");
    let lisbon_then = then
        .iter()
        .find(|f| f["value"] == "Lisbon")
        .expect("Lisbon then");
    assert_eq!(lisbon_then["current"], true, "{then:?}");
}

#[test]
fn a_reflections_summary_is_recalled_with_what_it_covers_and_enters_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let summary = |user: &str, id: &str, content: &str, covers: Value| {
        json!({"kind": "summary", "event_id": id, "tenant": "acme", "user": user,
               "ts": "2025-01-02T08:00:00Z", "content": content, "covers": covers})
    };
    let events = json!([
        interaction(
            "acme",
            "alice",
            "a1",
            "s1",
            1,
            "Can you compare flights from Lisbon to Oslo?"
        ),
        interaction(
            "acme",
            "alice",
            "a2",
            "s1",
            2,
            "The cheapest one leaves on Friday morning."
        ),
        interaction(
            "acme",
            "alice",
            "a3",
            "s2",
            9,
            "What should I cook tonight?"
        ),
        summary(
            "alice",
            "sum-trip",
            "Alice is planning a trip to Norway in spring and compared airfares.",
            json!(["a1", "a2"])
        ),
        summary(
            "bob",
            "sum-bob",
            "Bob is planning a trip to Norway for a ski holiday.",
            json!([])
        ),
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["accepted"], 5, "{body}");
    server.wait_caught_up(Duration::from_secs(30));

    // the views hold the summary and its COVERS edges to the episodes it names
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{m}");
    let summaries = m["summaries"].as_array().unwrap();
    assert_eq!(summaries.len(), 1, "bob's summary is not alice's: {m}");
    let covers = summaries[0]["covers"].as_array().unwrap();
    assert_eq!(covers.len(), 2, "{m}");
    let recalled = server.recall("acme", "alice", "flights Lisbon Oslo", 3);
    let episode_id = |event_id: &str| {
        recalled["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["event_id"] == event_id)
            .map(|h| h["id"].clone())
            .unwrap_or_else(|| panic!("{event_id} not recalled: {recalled}"))
    };
    assert!(covers.contains(&episode_id("a1")) && covers.contains(&episode_id("a2")));
    let edges: Vec<&Value> = m["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "COVERS")
        .collect();
    assert_eq!(edges.len(), 2, "{m}");
    assert!(edges.iter().all(|e| e["from"] == summaries[0]["id"]));

    // recall finds it by meaning (no word of the query is in it), and never bob's
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let found = loop {
        // the summaries table is written beside the episodes, a moment after the views
        let r = server.recall("acme", "alice", "vacation to Scandinavia", 3);
        let found = r["summaries"].as_array().cloned().unwrap_or_default();
        if !found.is_empty() || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["event_id"], "sum-trip");
    assert_eq!(found[0]["covers"].as_array().unwrap().len(), 2);
    assert!(
        found[0]["why"]["vector_rank"].as_u64().is_some(),
        "{found:?}"
    );
    let bob = server.recall("acme", "bob", "vacation to Scandinavia", 3);
    let bob_found = bob["summaries"].as_array().unwrap();
    assert!(
        bob_found.iter().all(|s| s["event_id"] == "sum-bob"),
        "{bob}"
    );

    // the prompt's memory part shows it, and its provenance names it
    let (status, p) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s3",
                "query": "Any tips for my vacation to Scandinavia?", "seed": 1}),
    );
    assert_eq!(status, 200, "{p}");
    assert!(
        p["prompt"]
            .as_str()
            .unwrap()
            .contains("Alice is planning a trip to Norway in spring"),
        "{p}"
    );
    let used = p["provenance"]["summaries"].as_array().unwrap();
    assert_eq!(used.len(), 1, "{p}");
    assert_eq!(used[0]["event_id"], "sum-trip");
    assert_eq!(used[0]["covers"], 2);
    assert!(!p["prompt"].as_str().unwrap().contains("ski holiday"));
}

#[test]
fn a_relation_shows_in_the_memory_with_its_evidence_and_one_without_a_subject_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let said =
        |id: &str, minute: u32, text: &str| interaction("acme", "alice", id, "s1", minute, text);
    let relation = |user: &str, id: &str, subject: &str, evidence: Value| {
        json!({"kind": "relation", "event_id": id, "tenant": "acme", "user": user,
               "ts": "2025-01-02T08:00:00Z", "subject": subject, "relation": "attended",
               "object": "LGBTQ support group", "time": "2023-05-07", "evidence": evidence})
    };
    let events = json!([
        said("a1", 1, "I went to a support group yesterday."),
        said("a2", 2, "It was the LGBTQ one, on May 7."),
        relation("alice", "rel-1", "Caroline", json!(["a2", "a1"])),
        relation("bob", "rel-bob", "Bob", json!([])),
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!((status, &body["accepted"]), (200, &json!(4)), "{body}");
    server.wait_caught_up(Duration::from_secs(30));

    // the views hold the relation, and an EVIDENCE_FOR edge from each episode it names
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{m}");
    let relations = m["relations"].as_array().unwrap();
    let ids: Vec<&str> = relations
        .iter()
        .map(|r| r["event_id"].as_str().unwrap())
        .collect();
    // bob's relation is not alice's; hers are the one sent and the one read at ingest from
    // "I went to a support group yesterday."
    assert_eq!(ids, ["a1#rel0", "rel-1"], "{m}");
    assert_eq!(
        (
            &relations[0]["relation"],
            &relations[0]["object"],
            &relations[0]["time"]
        ),
        (
            &json!("went to"),
            &json!("support group"),
            &json!("2024-12-31")
        ),
        "{m}"
    );
    let mut r = relations[1].clone();
    let evidence = r.as_object_mut().unwrap().remove("evidence").unwrap();
    let id = r.as_object_mut().unwrap().remove("id").unwrap();
    assert_eq!(
        r,
        json!({"event_id": "rel-1", "ts": "2025-01-02T08:00:00Z", "subject": "Caroline",
               "relation": "attended", "object": "LGBTQ support group", "time": "2023-05-07",
               "confidence": null}),
        "{m}"
    );
    // its evidence is alice's two episodes, each EVIDENCE_FOR it
    let sorted = |ids: &mut dyn Iterator<Item = &Value>| {
        let mut ids: Vec<String> = ids.map(|id| id.as_str().unwrap().into()).collect();
        ids.sort();
        ids
    };
    let (_, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    let stored = export["episodes"].as_array().unwrap();
    let episodes = sorted(&mut stored.iter().map(|e| &e["id"]));
    assert_eq!(episodes.len(), 2, "{export}");
    assert_eq!(sorted(&mut evidence.as_array().unwrap().iter()), episodes);
    let all_edges = m["edges"].as_array().unwrap();
    let edges: Vec<&Value> = all_edges.iter().filter(|e| e["to"] == id).collect();
    assert!(edges.iter().all(|e| e["type"] == "EVIDENCE_FOR"), "{m}");
    assert_eq!(
        sorted(&mut edges.iter().map(|e| &e["from"])),
        episodes,
        "{m}"
    );

    // one with an empty subject is rejected, naming the field
    let empty_subject = relation("alice", "rel-2", " ", json!(["a1"]));
    let (status, body) = server.post("/v1/events", &json!([empty_subject]));
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["rejected"][0]["field"], "subject", "{body}");
}

#[test]
fn a_remark_made_in_passing_inside_a_long_turn_is_recalled_through_its_passage() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let long_turn = "I'm looking for some new barbecue sauce recipes to try out this summer. \
        I've been experimenting with making my own sauce from scratch, mostly tomato based \
        with a lot of brown sugar and vinegar, and I want something smokier and less sweet. \
        Could you suggest a few variations with different spices and maybe some tips on \
        balancing heat and acidity? By the way, my daughter Lina starts violin lessons on \
        Tuesday.";
    let mut events = vec![interaction("acme", "carol", "c0", "s1", 1, long_turn)];
    let filler = [
        "What is a good stretching routine after running?",
        "Can you explain how index funds work?",
        "Suggest a name for a small bakery.",
        "How do I descale a kettle?",
    ];
    for (i, f) in filler.iter().enumerate() {
        events.push(interaction(
            "acme",
            "carol",
            &format!("c{}", i + 1),
            "s2",
            2 + i as u32,
            f,
        ));
    }
    let (code, _) = server.post("/v1/events", &Value::Array(events));
    assert_eq!(code, 200);
    server.wait_caught_up(Duration::from_secs(60));

    let r = server.recall(
        "acme",
        "carol",
        "When does my daughter start her music lessons?",
        3,
    );
    let top = &r["results"][0];
    assert_eq!(top["event_id"], "c0", "{r}");
    assert_eq!(
        top["content"], long_turn,
        "the whole episode comes back, not only the passage"
    );
    assert_eq!(
        top["why"]["passage"], "By the way, my daughter Lina starts violin lessons on Tuesday.",
        "{r}"
    );
    assert_eq!(top["why"]["span_rank"], 1);
    // passages of one user never answer another user's recall
    let other = server.recall(
        "acme",
        "dave",
        "When does my daughter start her music lessons?",
        3,
    );
    assert!(other["results"].as_array().unwrap().is_empty(), "{other}");
}

#[test]
fn similar_corrections_over_days_become_a_pattern_and_votes_move_a_posterior() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let correction = |id: &str, user: &str, day: u32, asks: &str| {
        json!({"kind": "correction", "event_id": id, "tenant": "acme", "user": user,
               "ts": format!("2025-03-{day:02}T09:00:00Z"), "target_event_id": "m0",
               "original": "Here is a long paragraph about the options.",
               "correction_type": "FORMAT", "expected_behavior": asks})
    };
    let vote = |id: &str, user: &str, message: &str, reward: i8| {
        json!({"kind": "feedback", "event_id": id, "tenant": "acme", "user": user,
               "ts": "2025-03-05T10:00:00Z", "message_id": message, "skill_id": "concise",
               "reward": reward,
               "context": {"intent": "plan", "sentiment": "neutral", "time_of_day": "morning"}})
    };
    let events = json!([
        correction("c1", "alice", 1, "Answer with bullet points."),
        correction("c2", "alice", 2, "Please answer with bullet points."),
        correction("c3", "alice", 4, "Answer with bullet points, please."),
        correction("c4", "alice", 4, "Always quote prices in euros."),
        // the same request by another user is never clustered with alice's
        correction("c5", "bob", 3, "Answer with bullet points."),
        vote("v1", "alice", "m1", 1),
        vote("v2", "alice", "m2", 1),
        vote("v3", "alice", "m3", -1),
        // alice changes her mind about m3: only the latest vote on an answer counts
        vote("v4", "alice", "m3", 1),
        vote("v5", "bob", "m9", -1),
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(30));
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{m}");
    let clusters = m["correction_clusters"].as_array().unwrap();
    let bullets = clusters
        .iter()
        .find(|c| c["cluster_id"] == "c1")
        .unwrap_or_else(|| panic!("no cluster c1: {m}"));
    assert_eq!(bullets["corrections"], json!(["c1", "c2", "c3"]), "{m}");
    let pattern = &bullets["pattern"];
    assert_eq!(pattern["size"], 3, "{m}");
    assert!(pattern["coherence"].as_f64().unwrap() > 0.8, "{m}");
    assert!(pattern["span_days"].as_f64().unwrap() >= 1.0, "{m}");
    let euros = clusters
        .iter()
        .find(|c| c["corrections"] == json!(["c4"]))
        .unwrap_or_else(|| panic!("c4 should be alone: {m}"));
    assert!(euros["pattern"].is_null());
    assert!(
        !m.to_string().contains("\"c5\""),
        "bob's correction leaked: {m}"
    );

    let skills = m["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1, "{m}");
    let concise = &skills[0];
    assert_eq!(
        (&concise["successes"], &concise["failures"]),
        (&json!(3), &json!(0)),
        "{m}"
    );
    // bob's failure is alice's population prior: Beta(1 + 1·1/3, 1 + 1·2/3), then + 3 successes
    assert_eq!(
        concise["population"],
        json!({"successes": 3, "failures": 1})
    );
    let alpha = concise["posterior"]["alpha"].as_f64().unwrap();
    let beta = concise["posterior"]["beta"].as_f64().unwrap();
    assert!((alpha - (4.0 + 1.0 / 3.0)).abs() < 1e-9, "{m}");
    assert!((beta - (1.0 + 2.0 / 3.0)).abs() < 1e-9, "{m}");
    let ci = concise["posterior"]["ci95"].as_array().unwrap();
    let mean = concise["posterior"]["mean"].as_f64().unwrap();
    assert!(ci[0].as_f64().unwrap() < mean && mean < ci[1].as_f64().unwrap());
}

#[test]
fn a_preference_decays_and_is_archived_as_event_time_passes() {
    preference_lifecycle("1");
}

#[test]
fn a_preference_decays_and_is_archived_as_event_time_passes_two_workers() {
    preference_lifecycle("2");
}

fn preference_lifecycle(workers: &str) {
    let dir = tempfile::tempdir().unwrap();
    // engine time follows the events, so the test decides when time passes
    let server = Server::start_with(dir.path(), &["--clock", "events", "--workers", workers]);
    let correction = |id: &str, day: u32| {
        json!({"kind": "correction", "event_id": id, "tenant": "acme", "user": "alice",
               "ts": format!("2025-03-{day:02}T09:00:00Z"), "target_event_id": "m0",
               "original": "Here is a long paragraph.", "correction_type": "FORMAT",
               "expected_behavior": "Answer with bullet points.", "confidence": 1.0})
    };
    // an unrelated message: moves engine time to `ts` and nothing else
    let pass_time_to = |id: &str, ts: &str| {
        let tick = interaction_at("acme", "alice", id, ts, "ok, thanks");
        assert_eq!(server.post("/v1/events", &tick).0, 200);
    };
    let preference = |server: &Server| {
        let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
        assert_eq!(status, 200, "{m}");
        let p = m["preferences"].as_array().unwrap();
        assert_eq!(p.len(), 1, "{m}");
        p[0].clone()
    };
    let events = json!([
        correction("c1", 1),
        correction("c2", 2),
        correction("c3", 3)
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(30));
    // confidence 1: S₀ = 28 days, two reinforcements: S = 112 days from March 3
    let p = wait_for_state(&server, &preference, "active");
    assert_eq!(p["stability_days"], 112.0, "{p}");
    assert_eq!(p["activations"], 3);
    assert_eq!(p["last_activation"], "2025-03-03T09:00:00Z");
    // inactive after 112·ln(1/0.3) = 134.8 days (mid July), archived after 112·ln 20 = 335.5 days
    assert_eq!(p["next_transition"]["to"], "inactive", "{p}");
    assert!(
        p["next_transition"]["at"]
            .as_str()
            .unwrap()
            .starts_with("2025-07-16"),
        "{p}"
    );
    // nothing but time passes: an unrelated message dated August
    pass_time_to("t1", "2025-08-01T00:00:00Z");
    let p = wait_for_state(&server, &preference, "inactive");
    assert!(p["retention"].as_f64().unwrap() < 0.3, "{p}");
    assert_eq!(p["next_transition"]["to"], "archived", "{p}");
    pass_time_to("t2", "2026-03-01T00:00:00Z");
    let p = wait_for_state(&server, &preference, "archived");
    assert!(p["next_transition"].is_null(), "{p}");
}

/// Reads the preference until it is in `state` (the views follow the clock within a few
/// milliseconds), at most ten seconds.
fn wait_for_state(server: &Server, read: &dyn Fn(&Server) -> Value, state: &str) -> Value {
    let start = std::time::Instant::now();
    loop {
        let p = read(server);
        if p["state"] == state || start.elapsed() > Duration::from_secs(10) {
            assert_eq!(p["state"], state, "{p}");
            return p;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interaction_at(tenant: &str, user: &str, id: &str, ts: &str, content: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": tenant, "user": user, "ts": ts,
           "session": "s1", "role": "user", "content": content})
}

#[test]
fn graph_expansion_brings_in_what_the_query_entities_are_connected_to() {
    let dir = tempfile::tempdir().unwrap();
    // off by default: five neighbours per query entity, paths of two edges
    let config = dir.path().join("engram.toml");
    std::fs::write(&config, "[recall.graph]\nneighbours = 5\ndepth = 2\n").unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let notes = [
        "My friend Mara moved to Lisbon last spring.",
        "Lisbon has the best pastries at Manteigaria, right by the tram stop.",
        "I need to renew the car insurance before the end of the month.",
        "The dentist appointment is on a Tuesday morning.",
        "My sister wants a blue bicycle for her birthday.",
        "The printer at work keeps jamming on double-sided pages.",
        "We planted tomatoes and basil on the balcony this weekend.",
        "The quarterly report is due to finance next Friday.",
        "My running shoes are worn out after the half marathon.",
        "The neighbours are renovating their kitchen all week.",
    ];
    let events: Vec<Value> = notes
        .iter()
        .enumerate()
        .map(|(i, text)| interaction("acme", "u1", &format!("g{i}"), "s1", i as u32, text))
        .collect();
    assert_eq!(server.post("/v1/events", &json!(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    // the query names Mara only; Lisbon is her neighbour in the co-mention graph
    let answer = server.recall("acme", "u1", "Where should I eat when I visit Mara?", 5);
    let results = answer["results"].as_array().unwrap();
    let pastries = results
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains("Manteigaria"))
        .unwrap_or_else(|| panic!("the Lisbon note is not recalled: {answer}"));
    let via = pastries["why"]["graph_via"].to_string();
    assert!(
        via.contains("lisbon") && via.contains("co-mentioned with mara"),
        "{answer}"
    );
    assert!(pastries["why"]["graph_rank"].is_u64(), "{answer}");
    // notes that share no entity with the query are not brought in by the graph
    for r in results {
        if r["content"].as_str().unwrap().contains("dentist") {
            assert!(r["why"]["graph_rank"].is_null(), "{r}");
        }
    }
    // rows written after the full-text index was built are found the same way at once
    let later = interaction(
        "acme",
        "u1",
        "g-late",
        "s1",
        30,
        "Lisbon trams get crowded in the summer afternoons.",
    );
    assert_eq!(server.post("/v1/events", &json!([later])).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let answer = server.recall("acme", "u1", "Where should I eat when I visit Mara?", 10);
    let trams = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["content"].as_str().unwrap().contains("trams"))
        .unwrap_or_else(|| panic!("the later Lisbon note is not recalled: {answer}"));
    assert!(trams["why"]["graph_rank"].is_u64(), "{answer}");
}
