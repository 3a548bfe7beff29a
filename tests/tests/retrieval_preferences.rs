//! Retrieval preferences learned from feedback, through the real server (issue 33; seed 000
//! §4.3): answers built with a user's list-shaped notes were voted up, answers built with their
//! prose notes voted down. `/v1/memory` shows what was learned per trait, and the user's next
//! recall multiplies each turn by its traits' boosts (1 + 0.3·(up − down)/(up + down + 2)), so
//! the list now ranks above the prose note saying the same; another user with the same notes
//! and no feedback is ranked as before, with no boost. A user whose answers built with old
//! notes were voted up, and with fresh ones down, finds the old note first.

use chrono::{Duration as Days, Utc};
use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

const PROSE: &str = "For the Lisbon trip I have to bring my passport, the phone charger and \
                     warm socks.";
const LIST: &str = "Lisbon trip, to bring:\n- passport\n- phone charger\n- warm socks";

fn note(user: &str, id: &str, text: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": user,
           "session": "notes", "ts": (Utc::now() - Days::days(3)).to_rfc3339(),
           "role": "user", "content": text})
}

/// `user`'s recall for the trip: (event id, learned boost) in ranking order.
fn ranked(server: &Server, user: &str) -> Vec<(String, Option<f64>)> {
    let (status, body) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": user, "query": "What do I need to bring to Lisbon?"}),
    );
    assert_eq!(status, 200, "{body}");
    body["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let event = r["event_id"].as_str().unwrap();
            let kind = event.strip_prefix(&format!("{user}-"))?;
            (kind == "prose" || kind == "list").then_some((r, kind.to_string()))
        })
        .map(|(r, id)| (id, r["why"]["learned"].as_f64()))
        .collect()
}

/// Eight answers to `user` two days ago, each a minute apart, alternately built with the memory
/// `[up, down]` names and voted accordingly: four up, four down.
fn voted_answers(user: &str, [up, down]: [String; 2]) -> Vec<Value> {
    let mut events = Vec::new();
    for i in 0..8 {
        let (used, reward) = if i % 2 == 0 { (&up, 1) } else { (&down, -1) };
        let at = Utc::now() - Days::days(2) + Days::minutes(i);
        events.push(
            json!({"kind": "interaction", "event_id": format!("{user}-a{i}"), "tenant": "acme",
            "user": user, "session": "chat", "ts": at.to_rfc3339(), "role": "assistant",
            "content": "Here is what you noted.", "meta": {"memories": [used]}}),
        );
        events.push(
            json!({"kind": "feedback", "event_id": format!("{user}-f{i}"), "tenant": "acme",
            "user": user, "ts": (at + Days::seconds(30)).to_rfc3339(),
            "message_id": format!("{user}-a{i}"), "skill_id": "concise", "reward": reward}),
        );
    }
    events
}

#[test]
fn kinds_of_memory_behind_good_answers_rise_in_recall() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let notes: Vec<Value> = ["carol", "dave"]
        .iter()
        .flat_map(|u| {
            let id = |kind: &str| format!("{u}-{kind}");
            [note(u, &id("prose"), PROSE), note(u, &id("list"), LIST)]
        })
        .collect();
    assert_eq!(server.post("/v1/events", &Value::Array(notes)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let (status, found) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "carol", "query": "Lisbon trip passport", "k": 5}),
    );
    assert_eq!(status, 200, "{found}");
    let id_of = |event: &str| {
        let hits = found["results"].as_array().unwrap();
        let event = format!("carol-{event}");
        let hit = hits.iter().find(|h| h["event_id"] == event).unwrap();
        hit["id"].as_str().unwrap().to_string()
    };
    // four answers built with the list, voted up; four with the prose note, voted down
    let events = voted_answers("carol", [id_of("list"), id_of("prose")]);
    assert_eq!(server.post("/v1/events", &Value::Array(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));

    let (status, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "carol"}));
    assert_eq!(status, 200, "{memory}");
    let learned: Vec<(String, u64, u64)> = memory["retrieval_preferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let name = p["trait"].as_str().unwrap().to_string();
            (name, p["up"].as_u64().unwrap(), p["down"].as_u64().unwrap())
        })
        .collect();
    let expected = [
        ("content:list", 4, 0),
        ("content:prose", 0, 4),
        ("own", 4, 4),
        // every answer came a day after the notes
        ("recent", 4, 4),
        ("user", 4, 4),
    ];
    let mut sorted = learned.clone();
    sorted.sort();
    let expected: Vec<(String, u64, u64)> = expected
        .iter()
        .map(|(t, u, d)| (t.to_string(), *u, *d))
        .collect();
    assert_eq!(sorted, expected, "{learned:?}");

    // lists: 1 + 0.3·4/6 = 1.2; prose: 0.8; the user's and own traits are even (× 1)
    let carol = ranked(&server, "carol");
    assert_eq!(carol.len(), 2, "{carol:?}");
    assert_eq!(carol[0].0, "list", "{carol:?}");
    let boost = |id: &str| carol.iter().find(|(e, _)| e == id).unwrap().1.unwrap();
    assert!((boost("list") - 1.2).abs() < 1e-9, "{carol:?}");
    assert!((boost("prose") - 0.8).abs() < 1e-9, "{carol:?}");
    // dave taught nothing: no boost on either
    let dave = ranked(&server, "dave");
    assert_eq!(dave.len(), 2, "{dave:?}");
    assert!(dave.iter().all(|(_, b)| b.is_none()), "{dave:?}");
}

/// erin's answers two days ago built with a note then 38 days old were voted up, those built
/// with a note then a day old voted down: older memories rise (× 1.2), recent ones sink (× 0.8),
/// though both notes say the same.
#[test]
fn the_age_of_the_memories_behind_good_answers_is_learned() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let at = |days: i64| (Utc::now() - Days::days(days)).to_rfc3339();
    let mut old = note("erin", "erin-old", PROSE);
    old["ts"] = json!(at(40));
    // the same words (both prose), so only their age sets them apart
    let mut fresh = note("erin", "erin-fresh", &PROSE.replace("For the", "For my"));
    fresh["ts"] = json!(at(3));
    assert_eq!(server.post("/v1/events", &json!([old, fresh])).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let ids = |server: &Server| -> Vec<(String, String, Option<f64>)> {
        let (status, body) = server.post(
            "/v1/recall",
            &json!({"tenant": "acme", "user": "erin", "query": "What do I need to bring to Lisbon?"}),
        );
        assert_eq!(status, 200, "{body}");
        let hits = body["results"].as_array().unwrap().iter();
        hits.filter(|h| h["event_id"] == "erin-old" || h["event_id"] == "erin-fresh")
            .map(|h| {
                let event = h["event_id"].as_str().unwrap().to_string();
                (
                    event,
                    h["id"].as_str().unwrap().to_string(),
                    h["why"]["learned"].as_f64(),
                )
            })
            .collect()
    };
    let before = ids(&server);
    assert_eq!(before.len(), 2, "{before:?}");
    let id_of = |event: &str| before.iter().find(|h| h.0 == event).unwrap().1.clone();
    let events = voted_answers("erin", [id_of("erin-old"), id_of("erin-fresh")]);
    assert_eq!(server.post("/v1/events", &Value::Array(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let (_, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "erin"}));
    let tally = |name: &str| {
        let prefs = memory["retrieval_preferences"].as_array().unwrap();
        let p = prefs.iter().find(|p| p["trait"] == name).expect(name);
        (p["up"].as_u64().unwrap(), p["down"].as_u64().unwrap())
    };
    assert_eq!(
        (tally("older"), tally("recent")),
        ((4, 0), (0, 4)),
        "{memory}"
    );
    // now (the engine's wall-clock time) the old note is 40 days old (older: 1 + 0.3·4/6), the
    // fresh one 3 (recent: 0.8); content and origin are even
    let after = ids(&server);
    assert_eq!(after[0].0, "erin-old", "{after:?}");
    let boost = |event: &str| after.iter().find(|h| h.0 == event).unwrap().2.unwrap();
    assert!((boost("erin-old") - 1.2).abs() < 1e-9, "{after:?}");
    assert!((boost("erin-fresh") - 0.8).abs() < 1e-9, "{after:?}");
}
