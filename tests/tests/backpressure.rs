//! Push-back under overload, against a real `engram serve` with a tiny backlog limit
//! (`limits.max_backlog_events`): a flood of writes meets `429` with `Retry-After` once the
//! events accepted and not yet recallable reach the limit, the backlog shows in `/metrics`
//! and `/v1/status` and drains to 0, and every accepted event is stored exactly once while no
//! refused one is. The other routes that write events (feedback, chat completions, a fact's
//! rectification, MCP's feedback tool) are pushed back alike while the flood runs.

use engram_tests::{events_in_lance, interaction, stored_event_ids, Server};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LIMIT: u64 = 20;
const THREADS: usize = 4;
const EVENTS_PER_REQUEST: usize = 8;

/// What the flood's requests were answered, by event id.
#[derive(Default)]
struct Outcomes {
    accepted: BTreeSet<String>,
    refused: BTreeSet<String>,
    /// `(Retry-After, error reason)` of each `429`.
    refusals: Vec<(Option<String>, String)>,
}

/// One writer of the flood: requests of [`EVENTS_PER_REQUEST`] events of its own user until
/// `enough` is set or it has sent 2,000 (a bound: the test sets `enough` long before).
fn flood(server: &Server, key: &str, thread: usize, enough: &AtomicBool, out: &Mutex<Outcomes>) {
    let http = reqwest::blocking::Client::new();
    let user = format!("u{thread}");
    for request in 0..2_000 {
        if enough.load(Ordering::Acquire) {
            return;
        }
        let events: Vec<Value> = (0..EVENTS_PER_REQUEST)
            .map(|i| {
                let id = format!("t{thread}-r{request}-e{i}");
                let text = format!("flood note {request} {i} about the garden and the car");
                interaction("acme", &user, &id, "s", (request % 1440) as u32, &text)
            })
            .collect();
        let ids = events
            .iter()
            .map(|e| e["event_id"].as_str().unwrap().to_string());
        let resp = http
            .post(format!("{}/v1/events", server.base))
            .bearer_auth(key)
            .json(&events)
            .timeout(Duration::from_secs(60))
            .send()
            .expect("request");
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        let body: Value = resp.json().unwrap_or(Value::Null);
        let mut out = out.lock().unwrap();
        match status {
            200 => out.accepted.extend(ids),
            429 => {
                out.refused.extend(ids);
                let reason = body["error"]["reason"].as_str().unwrap_or("").to_string();
                out.refusals.push((retry_after, reason));
            }
            other => panic!("unexpected answer {other}: {body}"),
        }
    }
}

#[test]
fn a_flood_over_the_backlog_limit_is_pushed_back_and_every_accepted_event_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let limit = LIMIT.to_string();
    let env = [
        ("ENGRAM_LIMIT_MAX_BACKLOG_EVENTS", limit.as_str()),
        // the per-tenant rates are not what this test is about
        ("ENGRAM_LIMIT_REQUESTS_PER_S", "0"),
        ("ENGRAM_LIMIT_EVENTS_PER_S", "0"),
        ("ENGRAM_LIMIT_BYTES_PER_S", "0"),
    ];
    let server = Arc::new(Server::start_with_env(dir.path(), &[], &env));
    let key = server.key_for("acme");
    assert_eq!(server.metric("engram_ingest_backlog_limit"), LIMIT);

    let enough = Arc::new(AtomicBool::new(false));
    let outcomes = Arc::new(Mutex::new(Outcomes::default()));
    let peak = Arc::new(Mutex::new(0u64));
    let watcher = {
        let (server, enough, peak) = (server.clone(), enough.clone(), peak.clone());
        std::thread::spawn(move || {
            while !enough.load(Ordering::Acquire) {
                let now = server.metric("engram_ingest_backlog_events");
                let mut peak = peak.lock().unwrap();
                *peak = (*peak).max(now);
                drop(peak);
                std::thread::sleep(Duration::from_millis(5));
            }
        })
    };
    let writers: Vec<_> = (0..THREADS)
        .map(|thread| {
            let (server, key, enough, outcomes) = (
                server.clone(),
                key.clone(),
                enough.clone(),
                outcomes.clone(),
            );
            std::thread::spawn(move || flood(&server, &key, thread, &enough, &outcomes))
        })
        .collect();
    // flood until a few refusals were seen (bounded by the writers' request count)
    let bound = Instant::now() + Duration::from_secs(300);
    while outcomes.lock().unwrap().refusals.len() < 10
        && writers.iter().any(|w| !w.is_finished())
        && Instant::now() < bound
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let other_routes = other_writes_pushed_back(&server, &key, &writers);
    enough.store(true, Ordering::Release);
    for w in writers {
        w.join().unwrap();
    }
    watcher.join().unwrap();
    let out = std::mem::take(&mut *outcomes.lock().unwrap());

    // pushed back: 429 with Retry-After and a reason naming the backlog, on every route that
    // writes events, not only POST /v1/events
    for (route, refused) in &other_routes {
        assert!(refused, "{route} was never pushed back while the flood ran");
    }
    assert!(!out.refusals.is_empty(), "no 429 in the flood");
    assert!(!out.accepted.is_empty(), "nothing accepted");
    for (retry_after, reason) in &out.refusals {
        let secs: u64 = retry_after
            .as_deref()
            .expect("a Retry-After header")
            .parse()
            .expect("whole seconds");
        assert!((1..=30).contains(&secs), "Retry-After {secs}");
        assert!(reason.contains("not yet recallable"), "{reason}");
    }
    assert!(
        *peak.lock().unwrap() > 0,
        "the backlog never showed in /metrics"
    );
    assert!(
        server.metric("engram_ingest_refused_total") >= out.refusals.len() as u64,
        "{}",
        server.metrics()
    );

    // the backlog drains to 0 (bounded wait) and /v1/status says so
    let drained = Instant::now() + Duration::from_secs(300);
    while server.metric("engram_ingest_backlog_events") > 0 {
        assert!(Instant::now() < drained, "{}", server.status());
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = server.status();
    assert_eq!(status["backlog"]["events"], 0, "{status}");
    assert_eq!(status["backlog"]["limit"], LIMIT, "{status}");
    assert_eq!(status["backlog"]["over_limit"], false, "{status}");
    // writes are served again
    let (code, body) = server.post(
        "/v1/events",
        &json!([interaction(
            "acme",
            "u0",
            "after",
            "s",
            0,
            "after the flood"
        )]),
    );
    assert_eq!(code, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(120));
    let server = Arc::into_inner(server).expect("the only handle");
    assert!(server.interrupt().success());

    // every accepted event stored exactly once, in the events table and as an episode; no
    // refused one anywhere
    let users: Vec<String> = (0..THREADS).map(|t| format!("u{t}")).collect();
    let users: Vec<&str> = users.iter().map(String::as_str).collect();
    for (what, stored) in [
        ("events table", events_in_lance(dir.path())),
        ("episodes", stored_event_ids(dir.path(), "acme", &users)),
    ] {
        for id in &out.accepted {
            assert_eq!(stored.get(id), Some(&1), "{id} in the {what}");
        }
        for id in &out.refused {
            assert_eq!(stored.get(id), None, "refused {id} in the {what}");
        }
    }
}

/// While the flood keeps the backlog at its limit: each other route that writes events,
/// sent again (at most for 60 s, while the writers run) until it is answered `429` with
/// `Retry-After` and the backlog's reason (MCP: a tool error with that reason). Returns each
/// route and whether it was.
fn other_writes_pushed_back(
    server: &Server,
    key: &str,
    writers: &[std::thread::JoinHandle<()>],
) -> Vec<(&'static str, bool)> {
    let http = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let url = |path: &str| format!("{}{}", server.base, path);
    let mcp_session = {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                       "clientInfo": {"name": "backpressure", "version": "0"}}});
        let resp = http
            .post(url("/mcp"))
            .bearer_auth(key)
            .header("accept", "application/json, text/event-stream")
            .json(&init)
            .send()
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_string()
    };
    let feedback = json!({"user": "u0", "message_id": "m1", "skill_id": "concise", "reward": 1});
    let routes: [(&'static str, reqwest::Method, &str, Value); 4] = [
        (
            "POST /v1/feedback",
            reqwest::Method::POST,
            "/v1/feedback",
            feedback.clone(),
        ),
        (
            "POST /v1/chat/completions",
            reqwest::Method::POST,
            "/v1/chat/completions",
            json!({"model": "m", "user": "u0", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "PATCH /v1/memories/{id}",
            reqwest::Method::PATCH,
            "/v1/memories/no-such-fact",
            json!({"user": "u0", "value": "Lisbon"}),
        ),
        (
            "MCP tools/call feedback",
            reqwest::Method::POST,
            "/mcp",
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": "feedback", "arguments": feedback}}),
        ),
    ];
    routes
        .into_iter()
        .map(|(route, method, path, body)| {
            let bound = Instant::now() + Duration::from_secs(60);
            let mut refused = false;
            while !refused && Instant::now() < bound && writers.iter().any(|w| !w.is_finished()) {
                let resp = http
                    .request(method.clone(), url(path))
                    .bearer_auth(key)
                    .header("mcp-session-id", &mcp_session)
                    .header("accept", "application/json, text/event-stream")
                    .json(&body)
                    .send()
                    .unwrap();
                let status = resp.status().as_u16();
                let retry_after = resp.headers().contains_key("retry-after");
                let text = resp.text().unwrap_or_default();
                refused = text.contains("not yet recallable")
                    && if path == "/mcp" {
                        status == 200 && text.contains("\"isError\":true")
                    } else {
                        status == 429 && retry_after
                    };
                if !refused {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            (route, refused)
        })
        .collect()
}
