//! The enrichment job against a stand-in model server that reads the turns it is sent and
//! answers as a model would (and, where a test asks, with malformed JSON, errors, or not at all
//! until told): what it publishes reaches `/v1/memory` once, a kill -9 loses and repeats
//! nothing, an erase removes what was derived, and one that comes while the model is reading
//! the turns wins.

use engram_tests::model_server::StandInModel;
use engram_tests::{files_containing, reject_records, Server};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TENANT: &str = "acme";

/// What a careful model would answer about these turns: a summary naming the first speaker,
/// a relation per user turn that says where someone went or what they adopted, and the
/// preference a turn states. A turn saying "GARBLE" gets an answer that is not JSON.
fn answer_like_a_model(request: &Value) -> (u16, String) {
    let turns = StandInModel::turns_of(request);
    if turns.iter().any(|(_, _, text)| text.contains("GARBLE")) {
        return (
            200,
            "Sure! Here is the JSON you asked for: {\"summary\": \"oops".into(),
        );
    }
    if turns.iter().any(|(_, _, text)| text.contains("ENDLESS")) {
        return (
            400,
            "This model's maximum context length is 8192 tokens".into(),
        );
    }
    let first = turns
        .first()
        .map(|(_, s, t)| format!("{s}: {t}"))
        .unwrap_or_default();
    let mut relations = Vec::new();
    let mut preferences = Vec::new();
    for (id, speaker, text) in &turns {
        if let Some(place) = text.split(" went to ").nth(1) {
            let place: String = place.split([',', '.']).next().unwrap_or("").to_string();
            relations.push(
                json!({"subject": speaker, "relation": "went to", "object": place,
                                  "time": "2023-05-06", "evidence": [id]}),
            );
        }
        if let Some(pet) = text.split(" adopted ").nth(1) {
            let pet: String = pet.split([',', '.']).next().unwrap_or("").to_string();
            relations.push(
                json!({"subject": speaker, "relation": "adopted", "object": pet,
                                  "evidence": [id, "not-a-turn-of-this-batch"]}),
            );
            relations.push(
                json!({"subject": speaker, "relation": "adopted", "object": pet,
                                  "evidence": [id]}),
            );
        }
        if text.contains("keep your answers short") {
            preferences.push(
                json!({"topic": "answer length", "preference": "short answers",
                                    "evidence": [id]}),
            );
        }
    }
    let answer = json!({
        "summary": format!("{} turns, beginning with {first}", turns.len()),
        "relations": relations,
        "preferences": preferences,
    });
    (200, format!("```json\n{answer}\n```"))
}

fn config_file(dir: &std::path::Path, model_url: &str) -> std::path::PathBuf {
    let path = dir.join("engram.toml");
    std::fs::write(
        &path,
        format!(
            "[enrich]\nurl = \"{model_url}\"\nmodel = \"stand-in\"\nsession_idle_secs = 1\n\
             retries = 1\nretry_after_secs = 1\nconcurrency = 2\nconstrain_output = true\n\
             prompt_usd_per_mtok = 1000.0\n"
        ),
    )
    .unwrap();
    path
}

fn turn(id: &str, user: &str, session: &str, day: u32, role: &str, text: &str) -> Value {
    json!({"event_id": id, "tenant": TENANT, "user": user, "session": session,
           "ts": format!("2023-05-{day:02}T13:56:00Z"), "role": role, "content": text,
           "meta": {"speaker": if role == "user" { user } else { "assistant" }}})
}

fn memory(server: &Server, user: &str) -> Value {
    let (status, body) = server.post("/v1/memory", &json!({"tenant": TENANT, "user": user}));
    assert_eq!(status, 200, "{body}");
    body
}

fn summaries(server: &Server, user: &str) -> Vec<String> {
    memory(server, user)["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["content"].as_str().unwrap().to_string())
        .collect()
}

/// Polls `check` every 200 ms for `within`.
fn eventually(within: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let started = Instant::now();
    while !check() {
        assert!(started.elapsed() < within, "not within {within:?}: {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn what_the_model_reads_is_published_once_survives_a_kill_and_goes_with_an_erase() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // melanie's session is refused (503) until `melanie_served` is set
    let melanie_served = Arc::new(AtomicBool::new(false));
    let served = melanie_served.clone();
    let model = StandInModel::serve(200, Duration::from_secs(600), move |request| {
        let turns = StandInModel::turns_of(request);
        if turns.iter().any(|(_, s, _)| s == "melanie") && !served.load(Ordering::SeqCst) {
            return (503, "loading the model".into());
        }
        answer_like_a_model(request)
    });
    let config = config_file(dir.path(), &model.url);
    let args = ["--config", config.to_str().unwrap()];
    let server = Server::start_with(&data, &args);
    let caroline = [
        turn(
            "c1",
            "caroline",
            "s1",
            8,
            "user",
            "I went to a LGBTQ support group last Saturday, it was so powerful.",
        ),
        turn(
            "c2",
            "caroline",
            "s1",
            8,
            "assistant",
            "That sounds wonderful. What stayed with you?",
        ),
        turn(
            "c3",
            "caroline",
            "s1",
            8,
            "user",
            "The stories. Also please keep your answers short, I read them on my phone.",
        ),
        // her next session finishes the first one at once
        turn(
            "c4",
            "caroline",
            "s2",
            20,
            "user",
            "We adopted a puppy named Oscar, he chews everything.",
        ),
        turn(
            "c5",
            "caroline",
            "s2",
            20,
            "user",
            "GARBLE my keyboard is broken",
        ),
    ];
    let melanie = [turn(
        "m1",
        "melanie",
        "s1",
        9,
        "user",
        "I went to the pottery workshop in Dover, loved it.",
    )];
    let (status, body) = server.post(
        "/v1/events",
        &json!(caroline.iter().chain(&melanie).collect::<Vec<_>>()),
    );
    assert_eq!(status, 200, "{body}");

    eventually(
        Duration::from_secs(60),
        "caroline's first session summarised",
        || summaries(&server, "caroline").len() == 1,
    );
    let m = memory(&server, "caroline");
    assert_eq!(m["summaries"][0]["content"], "3 turns, beginning with caroline: I went to a LGBTQ support group last Saturday, it was so powerful.");
    assert_eq!(m["summaries"][0]["covers"].as_array().unwrap().len(), 3);
    let prefers: Vec<&Value> = m["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["attribute"] == "prefers_answer_length")
        .collect();
    assert_eq!(prefers.len(), 1, "{}", m["facts"]);
    assert_eq!(prefers[0]["value"], "short answers");
    // the second session's answer is not JSON: rejected with the reason, filed under the tenant
    eventually(
        Duration::from_secs(30),
        "the garbled answer rejected",
        || {
            reject_records(&data)
                .iter()
                .any(|(_, r)| r["source"] == "enrich")
        },
    );
    let rejects: Vec<Value> = reject_records(&data)
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| r["source"] == "enrich")
        .collect();
    assert_eq!(rejects.len(), 1, "{rejects:?}");
    assert_eq!(rejects[0]["field"], "$");
    assert!(
        rejects[0]["reason"].as_str().unwrap().contains("JSON"),
        "{}",
        rejects[0]
    );
    assert!(rejects[0]["original"]
        .as_str()
        .unwrap()
        .contains("\"user\":\"caroline\""));
    assert!(summaries(&server, "melanie").is_empty());
    let metrics = server.metrics();
    assert!(
        server.metric("engram_enrich_request_failures_total") >= 1,
        "{metrics}"
    );
    assert_eq!(server.metric("engram_enrich_events_total"), 3, "{metrics}");
    assert_eq!(server.metric("engram_enrich_running"), 1, "{metrics}");
    assert!(
        server.metric("engram_enrich_prompt_tokens_total") >= 200,
        "{metrics}"
    );

    // killed while melanie's batch waits for the model: nothing lost, nothing asked twice.
    // Once the job has noted that caroline's sessions are answered, it reads again from
    // melanie's turn (offset 5) after a restart.
    let state = data.join("enrich").join("state.json");
    eventually(Duration::from_secs(10), "the job's state saved", || {
        std::fs::read(&state)
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|s| s["read_from"] == 5)
    });
    let asked_before = model.requests.lock().unwrap().len();
    let caroline_requests = |requests: &[Value]| {
        requests
            .iter()
            .filter(|r| {
                StandInModel::turns_of(r)
                    .iter()
                    .any(|(_, s, _)| s == "caroline")
            })
            .count()
    };
    let caroline_asked = caroline_requests(&model.requests.lock().unwrap());
    assert_eq!(caroline_asked, 2, "one request per session");
    server.kill9();
    melanie_served.store(true, Ordering::SeqCst);
    let server = Server::start_with(&data, &args);
    eventually(
        Duration::from_secs(60),
        "melanie's session summarised after the restart",
        || summaries(&server, "melanie").len() == 1,
    );
    std::thread::sleep(Duration::from_secs(3)); // past the idle time: anything re-sent would show
    let requests = model.requests.lock().unwrap().clone();
    assert_eq!(
        caroline_requests(&requests),
        caroline_asked,
        "caroline's sessions asked again"
    );
    assert!(requests.len() > asked_before);
    assert_eq!(summaries(&server, "caroline").len(), 1);
    let m = memory(&server, "melanie");
    assert_eq!(
        m["summaries"][0]["content"],
        "1 turns, beginning with melanie: I went to the pottery workshop in Dover, loved it."
    );
    // the request carried the shipped prompt and schema
    let first = &requests[0];
    assert_eq!(first["model"], "stand-in");
    assert_eq!(first["response_format"]["type"], "json_schema");
    assert!(first["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("\"relations\""));

    // erased: the derived summary and preference go with caroline's turns
    let (status, body) = server.post("/v1/erase", &json!({"tenant": TENANT, "user": "caroline"}));
    assert_eq!(status, 200, "{body}");
    let m = memory(&server, "caroline");
    assert_eq!(m["summaries"], json!([]));
    assert_eq!(m["facts"], json!([]));
    eventually(
        Duration::from_secs(20),
        "the summary's text gone from the data folder",
        || files_containing(&data, "beginning with caroline").is_empty(),
    );
    assert_eq!(summaries(&server, "melanie").len(), 1);
}

#[test]
fn an_erase_that_comes_while_the_model_reads_the_turns_wins() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // the model holds its answer until the test has erased the user
    let release = Arc::new(AtomicBool::new(false));
    let asked = Arc::new(AtomicUsize::new(0));
    let (hold, count) = (release.clone(), asked.clone());
    let model = StandInModel::serve(20, Duration::from_secs(300), move |request| {
        count.fetch_add(1, Ordering::SeqCst);
        let started = Instant::now();
        while !hold.load(Ordering::SeqCst) && started.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(50));
        }
        answer_like_a_model(request)
    });
    let config = config_file(dir.path(), &model.url);
    let server = Server::start_with(&data, &["--config", config.to_str().unwrap()]);
    let turns = [
        turn(
            "d1",
            "dana",
            "s1",
            8,
            "user",
            "I went to my therapist in Leeds, she helps a lot.",
        ),
        turn(
            "d2",
            "dana",
            "s1",
            8,
            "user",
            "Please keep your answers short.",
        ),
    ];
    let (status, body) = server.post("/v1/events", &json!(turns));
    assert_eq!(status, 200, "{body}");
    eventually(Duration::from_secs(30), "the model asked", || {
        asked.load(Ordering::SeqCst) == 1
    });
    let (status, body) = server.post("/v1/erase", &json!({"tenant": TENANT, "user": "dana"}));
    assert_eq!(status, 200, "{body}");
    release.store(true, Ordering::SeqCst);
    eventually(Duration::from_secs(30), "the answer dropped", || {
        server.metric("engram_enrich_batches_total") >= 1
    });
    std::thread::sleep(Duration::from_secs(1));
    let m = memory(&server, "dana");
    assert_eq!(m["summaries"], json!([]));
    assert_eq!(m["facts"], json!([]));
    assert_eq!(server.metric("engram_enrich_events_total"), 0);
    assert!(files_containing(&data, "therapist in Leeds").is_empty());
}

#[test]
fn engram_enrich_reads_a_backlog_once_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // the turns are stored by a server with no model server configured
    let server = Server::start(&data);
    let turns = [
        turn(
            "e1",
            "erin",
            "s1",
            3,
            "user",
            "I went to the climbing gym in Sheffield, first time.",
        ),
        turn("e2", "erin", "s1", 3, "assistant", "How did it go?"),
        turn(
            "e3",
            "erin",
            "s2",
            4,
            "user",
            "We adopted a cat called Miso, she is tiny.",
        ),
        turn(
            "e4",
            "erin",
            "s3",
            5,
            "user",
            "ENDLESS notes pasted from my thesis",
        ),
    ];
    let (status, body) = server.post("/v1/events", &json!(turns));
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    assert!(server.interrupt().success());
    let model = StandInModel::serve(10, Duration::from_secs(300), answer_like_a_model);
    let enrich = |expect_requests: usize| {
        let out = std::process::Command::new(engram_tests::engram_bin())
            .args(["enrich", "--data-dir"])
            .arg(&data)
            .args(["--url", &model.url, "--model", "stand-in"])
            .env("ENGRAM_LOG", "warn")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        // the report is the last line (warnings are logged before it)
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let last = stdout.lines().last().unwrap_or_default();
        let report: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {stdout}"));
        assert_eq!(
            model.requests.lock().unwrap().len(),
            expect_requests,
            "{report}"
        );
        report
    };
    // every session, the last unfinished, is sent: 2 summaries, 2 relations (the adopted one
    // named a turn it was not given once: rejected); the third the server refuses (400): it is
    // rejected with the server's reason, not asked again
    let report = enrich(3);
    assert_eq!(report["batches_total"], 3.0, "{report}");
    assert_eq!(report["events_total"], 4.0, "{report}");
    assert_eq!(report["rejected_items_total"], 2.0, "{report}");
    let refused: Vec<Value> = reject_records(&data)
        .into_iter()
        .map(|(_, r)| r)
        .filter(|r| r["reason"].as_str().unwrap_or("").contains("HTTP 400"))
        .collect();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0]["reason"]
        .as_str()
        .unwrap()
        .contains("maximum context length"));
    // run again: nothing new to read, nothing asked
    let report = enrich(3);
    assert_eq!(report["requests_total"], 0.0, "{report}");
    let server = Server::start(&data);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server, "erin");
    assert_eq!(m["summaries"].as_array().unwrap().len(), 2, "{m}");
    // the model's relations, beside those read at ingest from "I went to …" (`e1#rel0`)
    let (derived, read_at_ingest): (Vec<&Value>, Vec<&Value>) = m["relations"]
        .as_array()
        .unwrap()
        .iter()
        .partition(|r| r["event_id"].as_str().unwrap().starts_with("enrich-"));
    let ingest_ids: Vec<&str> = read_at_ingest
        .iter()
        .map(|r| r["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(ingest_ids, ["e1#rel0", "e3#rel0"], "{m}");
    let relations: Vec<(&str, &str)> = derived
        .iter()
        .map(|r| {
            (
                r["relation"].as_str().unwrap(),
                r["object"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(relations.len(), 2, "{m}");
    assert!(
        relations.contains(&("went to", "the climbing gym in Sheffield")),
        "{relations:?}"
    );
    assert!(
        relations.contains(&("adopted", "a cat called Miso")),
        "{relations:?}"
    );
}

#[test]
fn a_forgotten_turn_takes_what_was_derived_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let derived = |id: &str, body: Value| {
        let mut event = json!({"event_id": id, "tenant": TENANT, "user": "fay",
                               "ts": "2023-05-08T14:00:00Z", "session": "s1"});
        event
            .as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        event
    };
    let events = json!([
        turn(
            "f1",
            "fay",
            "s1",
            8,
            "user",
            "I went to the zqclinicmark clinic yesterday about my back."
        ),
        turn(
            "f2",
            "fay",
            "s1",
            8,
            "user",
            "Anyway, the garden is full of tomatoes now."
        ),
        derived(
            "sum-1",
            json!({"kind": "summary", "content": "Fay saw the zqsummarymark doctor; tomatoes.", "covers": ["f1", "f2"]})
        ),
        derived(
            "sum-2",
            json!({"kind": "summary", "content": "Fay grows tomatoes.", "covers": ["f2"]})
        ),
        derived(
            "rel-1",
            json!({"kind": "relation", "subject": "Fay", "relation": "visited", "object": "zqrelationmark clinic", "evidence": ["f1"]})
        ),
        derived(
            "fact-1",
            json!({"kind": "fact", "subject": "user", "attribute": "health", "value": "zqfactmark back pain", "source_event_id": "f1"})
        ),
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server, "fay");
    assert_eq!(m["summaries"].as_array().unwrap().len(), 2, "{m}");
    assert_eq!(
        m["relations"].as_array().unwrap().len(),
        2,
        "read at ingest and sent: {m}"
    );
    let (status, body) = server.post(
        "/v1/events",
        &json!({"kind": "control", "event_id": "forget-f1", "tenant": TENANT, "user": "fay",
                "ts": "2023-05-09T00:00:00Z", "action": "forget", "target_event_id": "f1"}),
    );
    assert_eq!(status, 200, "{body}");
    eventually(
        Duration::from_secs(20),
        "what f1 said gone from the data folder",
        || {
            [
                "zqclinicmark",
                "zqsummarymark",
                "zqrelationmark",
                "zqfactmark",
            ]
            .iter()
            .all(|marker| files_containing(&data, marker).is_empty())
        },
    );
    let m = memory(&server, "fay");
    let summaries: Vec<&str> = m["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(summaries, ["sum-2"], "{m}");
    assert_eq!(m["relations"], json!([]), "{m}");
    assert!(!m["facts"].to_string().contains("zqfactmark"), "{m}");
    // a restart reads the same
    assert!(server.interrupt().success());
    let server = Server::start(&data);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server, "fay");
    assert_eq!(m["summaries"].as_array().unwrap().len(), 1, "{m}");
    assert_eq!(m["relations"], json!([]), "{m}");
}
