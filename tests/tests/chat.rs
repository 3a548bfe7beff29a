//! Chat and feedback through the real server: a chat round trip goes through a loopback
//! OpenAI-compatible stand-in with the user's memory in its prompt, is stored as events (streamed
//! or not), and takes feedback that moves the skill posterior, the user's style and the marks of
//! the memories it used; bad feedback and a chat without a session are refused.

use chrono::{Duration as Days, Utc};
use engram_tests::{stand_in_llm, Server};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;

fn assert_the_stand_in_got_memory_and_the_query_last(seen: &Mutex<Vec<Value>>, chat: &Value) {
    let request = seen.lock().unwrap()[0].clone();
    let sent = request["messages"].as_array().unwrap();
    assert_eq!(sent[0]["role"], "system");
    assert_eq!(
        sent.last().unwrap()["content"],
        "Where does my sister live?"
    );
    assert!(request.to_string().contains("Lisbon"), "{request}");
    assert!(!chat["provenance"]["memories"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// Feedback on the chat's answer: the user's tally and style move through the dataflow, and
/// every memory the answer was built with is marked.
fn assert_feedback_moves_the_tally_style_and_marks(server: &Server, skill: &str, chat: &Value) {
    let (status, fb) = server.post(
        "/v1/feedback",
        &json!({"tenant": "acme", "user": "alice", "message_id": "x1.a", "skill_id": skill, "reward": 1,
                "context": {"intent": "question", "sentiment": "neutral", "time_of_day": "morning"}}),
    );
    assert_eq!(status, 200, "{fb}");
    server.wait_caught_up(Duration::from_secs(60));
    let (_, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "alice"}));
    let skills = memory["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1, "{memory}");
    assert_eq!(skills[0]["skill_id"], skill);
    assert_eq!(skills[0]["successes"], 1);
    assert!(skills[0]["posterior"]["mean"].as_f64().unwrap() > 0.5);
    assert_eq!(memory["style"]["feedback_count"], 1);
    // MARK: every memory the answer was built with (episodes, and the fact that Mara is her
    // sister) was recalled once, into an answer judged correct, so
    // its trust rose above the initial 0.25 (0.8·0.25 + 0.2·(1 + 1)/(1 + 4) = 0.28)
    let ids = |part: &str| -> Vec<&str> {
        let items = chat["provenance"][part].as_array().unwrap().iter();
        items.map(|m| m["id"].as_str().unwrap()).collect()
    };
    assert!(
        !ids("facts").is_empty(),
        "the prompt drew on a fact: {chat}"
    );
    let used: std::collections::BTreeSet<&str> = ["memories", "facts", "summaries"]
        .into_iter()
        .flat_map(ids)
        .collect();
    let marks = memory["marks"].as_array().unwrap();
    let marked: std::collections::BTreeSet<&str> = marks
        .iter()
        .map(|m| m["episode_id"].as_str().unwrap())
        .collect();
    assert_eq!(marked, used, "{memory}");
    for m in marks {
        assert_eq!(
            (m["recalls"].as_u64(), m["correct"].as_u64()),
            (Some(1), Some(1)),
            "{m}"
        );
        assert!((m["trust"].as_f64().unwrap() - 0.28).abs() < 1e-6, "{m}");
        assert_eq!(m["retained"], true);
    }
}

/// A streamed chat: the prompt first, then the answer in pieces without the thinking, then
/// done; the exchange is stored as for a plain chat.
fn assert_a_streamed_chat_is_stored_like_a_plain_one(server: &Server, seen: &Mutex<Vec<Value>>) {
    let key = server.key_for("acme");
    let mut events = server
        .post_events(
            Some(&key),
            "/v1/chat",
            &json!({"tenant": "acme", "user": "alice", "session": "s9", "stream": true,
                    "query": "And my sister's name?", "exchange_id": "x2"}),
            Duration::from_secs(60),
        )
        .expect("a stream");
    let (name, prompt) = events.next_event().unwrap();
    assert_eq!(name, "prompt");
    assert_eq!(prompt["message_id"], "x2.a");
    assert!(prompt["provenance"]["skill"].is_object(), "{prompt}");
    let mut shown = String::new();
    let mut deltas = 0;
    let done = loop {
        let (name, data) = events.next_event().expect("the stream goes on until done");
        match name.as_str() {
            "delta" => {
                shown.push_str(data["content"].as_str().unwrap());
                deltas += 1;
            }
            "done" => break data,
            other => panic!("{other}: {data}"),
        }
    };
    assert!(deltas > 1, "the answer came in pieces");
    assert_eq!(shown.trim(), "stand-in answer");
    assert_eq!(done["answer"], "stand-in answer");
    assert_eq!(done["stored"]["accepted"], 2, "{done}");
    assert!(events.next_event().is_none(), "the stream ends after done");
    let asked = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(asked["stream"], true);
    server.wait_caught_up(Duration::from_secs(60));
    let (_, next) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s9", "query": "ok"}),
    );
    let msgs = next["messages"].as_array().unwrap();
    assert_eq!(msgs[msgs.len() - 3]["content"], "And my sister's name?");
    assert_eq!(msgs[msgs.len() - 2]["content"], "stand-in answer");
}

/// Bad feedback is refused with the field named; another tenant's key cannot vote here; a chat
/// without a session is refused before the model is asked.
fn assert_bad_feedback_and_a_chat_without_a_session_are_refused(
    server: &Server,
    skill: &str,
    seen: &Mutex<Vec<Value>>,
) {
    let (status, err) = server.post(
        "/v1/feedback",
        &json!({"tenant": "acme", "user": "alice", "message_id": "x1.a", "skill_id": skill, "reward": 5}),
    );
    assert_eq!(status, 400, "{err}");
    assert_eq!(err["error"]["field"], "reward");
    let other = server.key_for("globex");
    let (status, _) = server.post_as(
        Some(&other),
        "/v1/feedback",
        &json!({"tenant": "acme", "user": "alice", "message_id": "x1.a", "skill_id": skill, "reward": -1}),
    );
    assert_eq!(status, 403);
    // a chat without a session is refused before the model is asked
    let asked = seen.lock().unwrap().len();
    let (status, err) = server.post(
        "/v1/chat",
        &json!({"tenant": "acme", "user": "alice", "query": "hi"}),
    );
    assert_eq!(
        (status, err["error"]["field"].as_str()),
        (400, Some("session"))
    );
    assert_eq!(seen.lock().unwrap().len(), asked);
}

#[test]
fn chat_goes_through_the_stand_in_is_stored_and_feedback_moves_the_posterior() {
    let (llm_url, seen) = stand_in_llm(10, Duration::from_secs(300));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_env(dir.path(), &[], &[("ENGRAM_LLM_URL", &llm_url)]);
    let facts = json!([{
        "kind": "interaction", "event_id": "f1", "tenant": "acme", "user": "alice",
        "session": "s0", "ts": (Utc::now() - Days::days(2)).to_rfc3339(),
        "role": "user", "content": "My sister Mara lives in Lisbon.",
    }, {
        "kind": "fact", "event_id": "f2", "tenant": "acme", "user": "alice",
        "ts": (Utc::now() - Days::days(2)).to_rfc3339(),
        "subject": "Mara", "attribute": "relation", "value": "sister",
    }]);
    assert_eq!(server.post("/v1/events", &facts).0, 200);
    server.wait_caught_up(Duration::from_secs(60));

    let (status, chat) = server.post(
        "/v1/chat",
        &json!({"tenant": "acme", "user": "alice", "session": "s9", "query": "Where does my sister live?",
                "exchange_id": "x1", "context": {"intent": "question", "sentiment": "neutral", "time_of_day": "morning"}}),
    );
    assert_eq!(status, 200, "{chat}");
    assert_eq!(chat["answer"], "stand-in answer");
    assert_eq!(chat["message_id"], "x1.a");
    let skill = chat["skill_id"].as_str().unwrap().to_string();
    // the stand-in got the assembled messages: memory in them, the query last
    assert_the_stand_in_got_memory_and_the_query_last(&seen, &chat);

    // the exchange is stored: the next prompt of the session shows it verbatim
    server.wait_caught_up(Duration::from_secs(60));
    let (_, next) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "alice", "session": "s9", "query": "thanks"}),
    );
    let recent = next["provenance"]["recent_turns"].as_array().unwrap();
    assert_eq!(recent.len(), 2, "{next}");
    let msgs = next["messages"].as_array().unwrap();
    assert_eq!(msgs[msgs.len() - 2]["content"], "stand-in answer");

    // feedback on the answer: the user's tally and style move through the dataflow
    assert_feedback_moves_the_tally_style_and_marks(&server, &skill, &chat);

    // streamed: the prompt first, then the answer in pieces without the thinking, then done;
    // the exchange is stored as for a plain chat
    assert_a_streamed_chat_is_stored_like_a_plain_one(&server, &seen);

    // bad feedback is refused with the field named; another tenant's key cannot vote here
    assert_bad_feedback_and_a_chat_without_a_session_are_refused(&server, &skill, &seen);
}
