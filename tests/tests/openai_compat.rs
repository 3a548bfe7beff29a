//! The OpenAI-compatible endpoint through the official `openai` Python client
//! (tests/python/openai_client.py) against the real server, chats answered by the loopback
//! stand-in model server: the model list, a completion and a streamed one in OpenAI's shapes
//! with engram's memory in what the model got, the exchanges stored, and refusals raised as
//! the client's own exception classes.

use chrono::{Duration as Days, Utc};
use engram_tests::{python_clients_dir, run_python_client, stand_in_llm, Server};
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::Duration;

/// The client script's whole run, bounded (it takes a few seconds on an idle machine).
const CLIENT_DEADLINE: Duration = Duration::from_secs(180);
/// The model engram is configured with by default (`llm.model`).
const MODEL: &str = "Qwen/Qwen3-8B";

/// Runs the client script against `base` with `key`: its JSON report (stdout); its
/// transcript goes to the test's standard error.
fn run_openai_client(base: &str, key: &str) -> Value {
    let base = format!("{base}/v1");
    let out = run_python_client("openai_client.py", &[&base, key], CLIENT_DEADLINE);
    serde_json::from_str(out.trim()).expect("the script's report is JSON")
}

/// A plain completion: OpenAI's shape, the stand-in's answer without its thinking, engram's
/// ids and provenance beside; the stand-in got engram's system part with the client's
/// instruction, the memory, the client's sampling, and the query last.
fn assert_the_completion_has_openai_shape_and_the_model_got_memory(
    completion: &Value,
    seen: &Mutex<Vec<Value>>,
) {
    assert_eq!(completion["object"], "chat.completion");
    assert_eq!(completion["id"], "chatcmpl-ox1");
    assert_eq!(completion["model"], MODEL);
    let choice = &completion["choices"][0];
    assert_eq!(choice["message"]["role"], "assistant");
    assert_eq!(choice["message"]["content"], "stand-in answer");
    assert_eq!(choice["finish_reason"], "stop");
    let usage = &completion["usage"];
    let (prompt, answer) = (
        usage["prompt_tokens"].as_u64(),
        usage["completion_tokens"].as_u64(),
    );
    assert!(prompt.unwrap() > 20 && answer.unwrap() >= 2, "{usage}");
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(prompt.unwrap() + answer.unwrap())
    );
    let engram = &completion["engram"];
    assert_eq!(engram["message_id"], "ox1.a");
    assert_eq!(engram["query_event_id"], "ox1.q");
    assert_eq!(
        (engram["user"].as_str(), engram["session"].as_str()),
        (Some("alice"), Some("oai1"))
    );
    assert_eq!(engram["stored"]["accepted"], 2, "{engram}");
    assert!(
        !engram["provenance"]["memories"]
            .as_array()
            .unwrap()
            .is_empty(),
        "{engram}"
    );

    let asked = seen.lock().unwrap()[0].clone();
    assert_eq!(asked["model"], MODEL);
    assert_eq!(
        (asked["temperature"].as_f64(), asked["max_tokens"].as_u64()),
        (Some(0.2), Some(64))
    );
    assert_eq!(asked["stream"], false);
    let sent = asked["messages"].as_array().unwrap();
    assert_eq!(sent[0]["role"], "system");
    let system = sent[0]["content"].as_str().unwrap();
    assert!(system.ends_with("\n\nAnswer in one sentence."), "{system}");
    assert_eq!(sent.iter().filter(|m| m["role"] == "system").count(), 1);
    assert!(
        asked.to_string().contains("Mara lives in Lisbon"),
        "{asked}"
    );
    let last = sent.last().unwrap();
    assert_eq!(
        (last["role"].as_str(), last["content"].as_str()),
        (Some("user"), Some("Where does my sister live?"))
    );
}

/// A streamed completion: chunks in OpenAI's shape, the answer in several pieces, the role
/// first, `stop` last, then the usage; engram's ids first and what was stored last. The
/// stand-in got the client's earlier turns before the query, and engram's memory.
fn assert_the_stream_yields_chunks_of_the_same_answer(chunks: &[Value], seen: &Mutex<Vec<Value>>) {
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk"),
        "{chunks:?}"
    );
    let id = &chunks[0]["id"];
    assert!(id.as_str().unwrap().starts_with("chatcmpl-") && chunks.iter().all(|c| &c["id"] == id));
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(chunks[0]["engram"]["user"], "alice");
    assert_eq!(chunks[0]["engram"]["session"], "oai2");
    let message_id = chunks[0]["engram"]["message_id"].as_str().unwrap();
    let pieces: Vec<&str> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .filter(|p| !p.is_empty())
        .collect();
    assert!(pieces.len() > 1, "the answer came in pieces: {pieces:?}");
    assert_eq!(pieces.concat(), "stand-in answer");
    let (usage, last) = (&chunks[chunks.len() - 1], &chunks[chunks.len() - 2]);
    assert_eq!(last["choices"][0]["finish_reason"], "stop");
    assert_eq!(last["engram"]["message_id"], message_id);
    assert_eq!(last["engram"]["stored"]["accepted"], 2, "{last}");
    assert_eq!(usage["choices"], json!([]));
    assert!(
        usage["usage"]["total_tokens"].as_u64().unwrap() > 20,
        "{usage}"
    );

    let asked = seen.lock().unwrap().last().unwrap().clone();
    assert_eq!(asked["stream"], true);
    let sent = asked["messages"].as_array().unwrap();
    let tail: Vec<(&str, &str)> = sent[sent.len() - 3..]
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(
        tail,
        [
            ("user", "Where does my sister live?"),
            ("assistant", "stand-in answer"),
            ("user", "And what is her name?")
        ]
    );
    assert!(
        asked.to_string().contains("Mara lives in Lisbon"),
        "{asked}"
    );
}

/// Both exchanges are stored in their sessions: the next prompt of each shows the query and
/// the answer as its last turns, and recall finds the streamed query.
fn assert_the_exchanges_are_stored(server: &Server, stream_message_id: &str) {
    server.wait_caught_up(Duration::from_secs(60));
    for (session, query) in [
        ("oai1", "Where does my sister live?"),
        ("oai2", "And what is her name?"),
    ] {
        let (status, next) = server.post(
            "/v1/prompt",
            &json!({"tenant": "acme", "user": "alice", "session": session, "query": "thanks"}),
        );
        assert_eq!(status, 200, "{next}");
        let msgs = next["messages"].as_array().unwrap();
        assert_eq!(msgs[msgs.len() - 3]["content"], query, "{session}: {next}");
        assert_eq!(
            msgs[msgs.len() - 2]["content"],
            "stand-in answer",
            "{session}"
        );
    }
    let recalled = server.recall("acme", "alice", "what is her name", 10);
    let query_event = stream_message_id.replace(".a", ".q");
    assert!(
        recalled.to_string().contains(&query_event),
        "{query_event}: {recalled}"
    );
}

/// Refusals as the client's own exceptions, in OpenAI's error shape, before the model is
/// asked: no user (400), a model engram does not serve (404), a wrong key (401).
fn assert_refusals_raise_the_client_exceptions(report: &Value) {
    let expected = [
        (
            "no_user",
            "BadRequestError",
            400,
            json!("missing_user"),
            json!("user"),
        ),
        (
            "wrong_model",
            "NotFoundError",
            404,
            json!("model_not_found"),
            json!("model"),
        ),
        (
            "wrong_key",
            "AuthenticationError",
            401,
            json!("invalid_api_key"),
            json!("authorization"),
        ),
        (
            "wrong_key_models",
            "AuthenticationError",
            401,
            json!("invalid_api_key"),
            json!("authorization"),
        ),
    ];
    for (step, class, status, code, param) in expected {
        let r = &report[step];
        assert_eq!(
            (
                r["class"].as_str(),
                r["status"].as_u64(),
                &r["code"],
                &r["param"]
            ),
            (Some(class), Some(status), &code, &param),
            "{step}: {r}"
        );
        assert!(!r["message"].as_str().unwrap().is_empty(), "{step}: {r}");
    }
    assert_eq!(report["no_user"]["type"], "invalid_request_error");
    assert_eq!(report["wrong_key"]["type"], "authentication_error");
}

#[test]
fn the_openai_client_chats_with_memory_streams_and_gets_openai_errors() {
    let clients = python_clients_dir();
    assert!(
        clients.join("openai").exists(),
        "the openai package is not in {}: run `bash scripts/setup --tests`",
        clients.display()
    );
    let (llm_url, seen) = stand_in_llm(10, CLIENT_DEADLINE + Duration::from_secs(120));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_env(dir.path(), &[], &[("ENGRAM_LLM_URL", &llm_url)]);
    let fact = json!([{
        "kind": "interaction", "event_id": "f1", "tenant": "acme", "user": "alice",
        "session": "s0", "ts": (Utc::now() - Days::days(2)).to_rfc3339(),
        "role": "user", "content": "My sister Mara lives in Lisbon.",
    }]);
    assert_eq!(server.post("/v1/events", &fact).0, 200);
    server.wait_caught_up(Duration::from_secs(60));

    let report = run_openai_client(&server.base, &server.key_for("acme"));
    assert_eq!(report["models"], json!([MODEL]));
    assert_the_completion_has_openai_shape_and_the_model_got_memory(&report["completion"], &seen);
    let chunks = report["chunks"].as_array().unwrap();
    assert_the_stream_yields_chunks_of_the_same_answer(chunks, &seen);
    // the two completions, and nothing for the refused requests
    assert_eq!(seen.lock().unwrap().len(), 2);
    assert_refusals_raise_the_client_exceptions(&report);
    let message_id = chunks[0]["engram"]["message_id"].as_str().unwrap();
    assert_the_exchanges_are_stored(&server, message_id);
}
