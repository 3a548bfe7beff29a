//! Every answer engram builds can be explained later by its message id, through the real
//! server: `/v1/chat` returns a one-sentence explanation with the provenance, and
//! `GET /v1/messages/{id}/provenance` gives back exactly that provenance and sentence, also
//! after a `kill -9` and restart; it is audited; another user's or tenant's answer, a user's
//! own message, a malformed id or user get clear errors; a forgotten answer and an erased
//! user's answers are gone.

use chrono::{Duration as Days, Utc};
use engram_tests::{stand_in_llm, Server};
use serde_json::{json, Value};
use std::time::Duration;

fn provenance_of(server: &Server, key: &str, id: &str, user: &str) -> (u16, Value) {
    let (status, text) = server.get_as(
        Some(key),
        &format!("/v1/messages/{id}/provenance?user={user}"),
    );
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

fn chat(server: &Server, exchange: &str, query: &str) -> Value {
    let (status, chat) = server.post(
        "/v1/chat",
        &json!({"tenant": "acme", "user": "alice", "session": "s9", "query": query,
                "exchange_id": exchange}),
    );
    assert_eq!(status, 200, "{chat}");
    chat
}

/// The stored answer is the chat's: same provenance, same sentence, its session and skill.
fn assert_stored_as_answered(stored: &Value, chat: &Value) {
    assert_eq!(stored["message_id"], chat["message_id"]);
    assert_eq!(stored["session"], "s9");
    assert_eq!(stored["skill_id"], chat["skill_id"]);
    assert_eq!(stored["provenance"], chat["provenance"]);
    assert_eq!(stored["explanation"], chat["explanation"]);
}

fn assert_refused_with_clear_errors(server: &Server, acme: &str) {
    // another user's answer, the user's own message, an unknown id: 404 naming the id
    for (id, user) in [("x1.a", "bob"), ("x1.q", "alice"), ("nope.a", "alice")] {
        let (status, err) = provenance_of(server, acme, id, user);
        assert_eq!(
            (status, err["error"]["field"].as_str()),
            (404, Some("id")),
            "{id} {user}: {err}"
        );
    }
    // another tenant's key finds nothing of acme's
    let globex = server.key_for("globex");
    assert_eq!(provenance_of(server, &globex, "x1.a", "alice").0, 404);
    // no user, an invalid user, an over-long id: 400 naming the field
    let (status, text) = server.get_as(Some(acme), "/v1/messages/x1.a/provenance");
    assert_eq!(status, 400, "{text}");
    let (status, err) = provenance_of(server, acme, "x1.a", "al%0Aice");
    assert_eq!(
        (status, err["error"]["field"].as_str()),
        (400, Some("user")),
        "{err}"
    );
    let long = "x".repeat(300);
    let (status, err) = provenance_of(server, acme, &long, "alice");
    assert_eq!(
        (status, err["error"]["field"].as_str()),
        (400, Some("id")),
        "{err}"
    );
    // no key: 401
    assert_eq!(server.get("/v1/messages/x1.a/provenance?user=alice").0, 401);
}

#[test]
fn answers_are_explained_by_message_id_until_they_are_forgotten_or_erased() {
    let (llm_url, _seen) = stand_in_llm(10, Duration::from_secs(300));
    let dir = tempfile::tempdir().unwrap();
    let env = [("ENGRAM_LLM_URL", llm_url.as_str())];
    let server = Server::start_with_env(dir.path(), &[], &env);
    let stated_at = Utc::now() - Days::days(1);
    let history = json!([
        {"kind": "interaction", "event_id": "m1", "tenant": "acme", "user": "alice",
         "session": "s0", "ts": (Utc::now() - Days::days(2)).to_rfc3339(), "role": "user",
         "content": "My sister Mara lives in Lisbon."},
        {"kind": "interaction", "event_id": "m2", "tenant": "acme", "user": "alice",
         "session": "s0", "ts": stated_at.to_rfc3339(), "role": "user",
         "content": "Please keep answers short, I read them on my phone."},
    ]);
    assert_eq!(server.post("/v1/events", &history).0, 200);
    server.wait_caught_up(Duration::from_secs(60));

    // the chat says why in one sentence: the preference alice stated, and when
    let first = chat(&server, "x1", "Where does my sister live?");
    let explanation = first["explanation"].as_str().unwrap();
    let day = stated_at.format("%-d %b %Y").to_string();
    assert!(
        explanation.starts_with("Answered with the \""),
        "{explanation}"
    );
    assert!(
        explanation.contains(&format!("(you said so on {day})")),
        "{explanation}"
    );
    let preferences = first["provenance"]["preferences"].as_array().unwrap();
    assert_eq!(preferences.len(), 1, "{first}");
    assert_eq!(preferences[0]["stated_in"], "m2");
    assert!(preferences[0]["since"].is_string(), "{first}");

    // …and the same comes back by the answer's id, audited
    let acme = server.key_for("acme");
    let (status, stored) = provenance_of(&server, &acme, "x1.a", "alice");
    assert_eq!(status, 200, "{stored}");
    assert_stored_as_answered(&stored, &first);
    let (_, audit) = server.get_as(Some(&acme), "/v1/audit?limit=1000");
    let audit: Value = serde_json::from_str(&audit).unwrap();
    assert!(
        audit["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["action"] == "provenance" && r["user"] == "alice" && r["status"] == 200),
        "{audit}"
    );
    assert_refused_with_clear_errors(&server, &acme);

    // kept across a kill -9 and restart
    let second = chat(&server, "x2", "What do you know about Mara?");
    server.kill9();
    let server = Server::start_with_env(dir.path(), &[], &env);
    let acme = server.key_for("acme");
    for answer in [&first, &second] {
        let id = answer["message_id"].as_str().unwrap();
        let (status, stored) = provenance_of(&server, &acme, id, "alice");
        assert_eq!(status, 200, "{id}: {stored}");
        assert_stored_as_answered(&stored, answer);
    }
    assert_a_lookup_reads_one_record_not_the_history(&server, &acme);

    // a forgotten answer is no longer explained; the other one is, until alice is erased
    let client = reqwest::blocking::Client::new();
    let forgot = client
        .delete(format!("{}/v1/memories/x1.a?user=alice", server.base))
        .bearer_auth(&acme)
        .timeout(Duration::from_secs(120))
        .send()
        .unwrap();
    assert_eq!(forgot.status().as_u16(), 200);
    assert_eq!(provenance_of(&server, &acme, "x1.a", "alice").0, 404);
    assert_eq!(provenance_of(&server, &acme, "x2.a", "alice").0, 200);
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(provenance_of(&server, &acme, "x2.a", "alice").0, 404);
}

/// With 64 KB more of alice's history, looking an answer up by its id reads its own record
/// (a few KB), not the history (`control_bytes_read.log` counts what user lookups read).
fn assert_a_lookup_reads_one_record_not_the_history(server: &Server, key: &str) {
    let filler =
        "I walked along the river this morning and counted the boats going by. ".repeat(28);
    let history: Vec<Value> = (0..32)
        .map(|i| {
            json!({"kind": "interaction", "event_id": format!("h{i}"), "tenant": "acme",
                   "user": "alice", "session": "s-history", "role": "user", "content": filler,
                   "ts": (Utc::now() - Days::days(40) + Days::minutes(i)).to_rfc3339()})
        })
        .collect();
    assert_eq!(server.post("/v1/events", &Value::Array(history)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let read = || {
        server.status()["control_bytes_read"]["log"]
            .as_u64()
            .unwrap()
    };
    let before = read();
    let (status, stored) = provenance_of(server, key, "x2.a", "alice");
    assert_eq!(status, 200, "{stored}");
    let bytes = read() - before;
    assert!(bytes > 0 && bytes < 16_000, "one lookup read {bytes} bytes");
}

/// The operator's defaults (`prompt.global_preferences`) reach every tenant's users, and give
/// way where a user's own preference speaks to the same aspect.
#[test]
fn global_defaults_apply_to_everyone_until_a_user_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engram.toml");
    std::fs::write(
        &config,
        "[prompt]\nglobal_preferences = [\"Keep answers short.\", \"Use metric units.\"]\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(&data, &["--config", config.to_str().unwrap()]);
    let stated = json!([{"kind": "interaction", "event_id": "d1", "tenant": "globex", "user": "dave",
        "session": "s0", "ts": (Utc::now() - Days::days(1)).to_rfc3339(), "role": "user",
        "content": "I prefer long, detailed answers."}]);
    assert_eq!(server.post("/v1/events", &stated).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let preferences = |tenant: &str, user: &str| -> (Vec<(String, String)>, String) {
        let (status, prompt) = server.post(
            "/v1/prompt",
            &json!({"tenant": tenant, "user": user, "query": "How far is Lyon from Paris?"}),
        );
        assert_eq!(status, 200, "{prompt}");
        let listed = prompt["provenance"]["preferences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["level"].as_str().unwrap().to_string(),
                    p["instruction"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        (
            listed,
            prompt["messages"][0]["content"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    };
    // a new user of another tenant: both defaults, marked as such in the system message
    let (mut carol, system) = preferences("acme", "carol");
    let global = |line: &str| ("global".to_string(), line.to_string());
    carol.sort(); // listed most relevant to the query first
    assert_eq!(
        carol,
        [global("Keep answers short."), global("Use metric units.")]
    );
    assert!(
        system.contains("Keep answers short. (confidence: 1.00; a default for everyone)"),
        "{system}"
    );
    // dave asked for detail: the length default gives way, the units default stays
    let (dave, system) = preferences("globex", "dave");
    assert!(dave.contains(&global("Use metric units.")), "{dave:?}");
    assert!(!dave.contains(&global("Keep answers short.")), "{dave:?}");
    assert!(dave.iter().any(|(level, _)| level == "user"), "{dave:?}");
    assert!(!system.contains("Keep answers short."), "{system}");
}

/// Answers follow the user's mechanical preferences before they are shown and stored: emoji
/// gone, a list turned into sentences, miles given in kilometres too; through `/v1/chat` and
/// the OpenAI-compatible route, listed in the provenance that is kept.
#[test]
fn relayed_answers_follow_the_preferences_a_rule_can_follow() {
    let answer = "Sure! 🎉 Here it is:\n- take the 5 miles trail\n- bring water 💧\n\nHave fun 😀";
    let (llm_url, _seen) =
        engram_tests::stand_in_llm_answering(10, Duration::from_secs(300), answer);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_env(dir.path(), &[], &[("ENGRAM_LLM_URL", &llm_url)]);
    let stated = [
        "Please stop using emoji from now on.",
        "I prefer metric units.",
        "Don't use bullet points from now on, write in full sentences.",
    ];
    let events: Vec<Value> = stated
        .iter()
        .enumerate()
        .map(|(i, text)| {
            json!({"kind": "interaction", "event_id": format!("p{i}"), "tenant": "acme",
                   "user": "alice", "session": "s0", "role": "user", "content": text,
                   "ts": (Utc::now() - Days::days(3 - i as i64)).to_rfc3339()})
        })
        .collect();
    assert_eq!(server.post("/v1/events", &Value::Array(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let (_, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(
        memory["stated_preferences"].as_array().unwrap().len(),
        3,
        "{memory}"
    );

    let want = "Sure! Here it is:\nTake the 5 miles (8 km) trail. Bring water.\n\nHave fun";
    let chat = chat(&server, "x1", "Which trail should I take?");
    assert_eq!(chat["answer"], want, "{chat}");
    let mut kinds: Vec<&str> = chat["provenance"]["transforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap())
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        ["metric_units", "no_emoji", "prose_not_bullets"],
        "{chat}"
    );
    // what is stored is what the user saw, and the transforms are kept with the provenance
    let acme = server.key_for("acme");
    let (status, stored) = provenance_of(&server, &acme, "x1.a", "alice");
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        stored["provenance"]["transforms"],
        chat["provenance"]["transforms"]
    );
    server.wait_caught_up(Duration::from_secs(60));
    let (_, next) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s9", "query": "thanks"}),
    );
    assert!(next["prompt"].as_str().unwrap().contains(want), "{next}");

    // the OpenAI-compatible route relays the same
    let (_, models) = server.get_as(Some(&acme), "/v1/models");
    let models: Value = serde_json::from_str(&models).unwrap();
    let model = models["data"][0]["id"].as_str().unwrap().to_string();
    let resp = reqwest::blocking::Client::new()
        .post(format!("{}/v1/chat/completions", server.base))
        .bearer_auth(&acme)
        .timeout(Duration::from_secs(120))
        .json(&json!({"model": model, "user": "alice",
                      "messages": [{"role": "user", "content": "And the trail after that?"}]}))
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let completion: Value = resp.json().unwrap();
    assert_eq!(
        completion["choices"][0]["message"]["content"], want,
        "{completion}"
    );
    assert_streamed_answers_follow_them_too(&server, want, &kinds, &model);
}

/// Streamed through `/v1/chat` and the OpenAI-compatible route, the answer is transformed a
/// paragraph at a time: what the pieces show, joined, is the transformed answer, which is what
/// is stored, with the transforms listed at the end and kept with the provenance.
fn assert_streamed_answers_follow_them_too(
    server: &Server,
    want: &str,
    kinds: &[&str],
    model: &str,
) {
    let acme = server.key_for("acme");
    let listed = |transforms: &Value| -> Vec<String> {
        let mut k: Vec<String> = transforms
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["kind"].as_str().unwrap().to_string())
            .collect();
        k.sort();
        k
    };
    let mut events = server
        .post_events(
            Some(&acme),
            "/v1/chat",
            &json!({"tenant": "acme", "user": "alice", "session": "s9", "stream": true,
                    "query": "And the way back?", "exchange_id": "x2"}),
            Duration::from_secs(60),
        )
        .expect("a stream");
    let (mut shown, mut pieces) = (String::new(), 0);
    let done = loop {
        let (name, data) = events.next_event().expect("the stream goes on until done");
        match name.as_str() {
            "prompt" => {}
            "delta" => {
                shown.push_str(data["content"].as_str().unwrap());
                pieces += 1;
            }
            "done" => break data,
            other => panic!("{other}: {data}"),
        }
    };
    assert_eq!(shown.trim(), want);
    assert!(
        pieces >= 2,
        "shown a paragraph at a time, not held to the end: {pieces}"
    );
    assert_eq!(done["answer"], want, "{done}");
    assert_eq!(listed(&done["transforms"]), kinds, "{done}");
    // at once, before Lance may have the answer: found among the user's newest records
    let (status, stored) = provenance_of(server, &acme, "x2.a", "alice");
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        listed(&stored["provenance"]["transforms"]),
        kinds,
        "{stored}"
    );

    let mut events = server
        .post_events(
            Some(&acme),
            "/v1/chat/completions",
            &json!({"model": model, "user": "alice", "stream": true,
                    "messages": [{"role": "user", "content": "And after that?"}]}),
            Duration::from_secs(60),
        )
        .expect("a stream");
    let mut shown = String::new();
    let last = loop {
        // the last chunk, with `finish_reason`, comes before `[DONE]` (not JSON: not read)
        let (_, chunk) = events.next_event().expect("chunks until the last");
        let choice = &chunk["choices"][0];
        shown.push_str(choice["delta"]["content"].as_str().unwrap_or(""));
        if choice["finish_reason"] == "stop" {
            break chunk;
        }
    };
    assert_eq!(shown.trim(), want);
    assert_eq!(listed(&last["engram"]["transforms"]), kinds, "{last}");
    server.wait_caught_up(Duration::from_secs(60));
    let message = last["engram"]["message_id"].as_str().unwrap();
    let (status, stored) = provenance_of(server, &acme, message, "alice");
    assert_eq!(status, 200, "{stored}");
    assert_eq!(
        listed(&stored["provenance"]["transforms"]),
        kinds,
        "{stored}"
    );
}
