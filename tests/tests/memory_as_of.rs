//! `POST /v1/memory` with `as_of`: the graph as it stood at an event time, through HTTP.

use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

fn said(id: &str, ts: &str, text: &str) -> Value {
    json!({"event_id": id, "tenant": "acme", "user": "ana", "session": "s", "ts": ts,
           "role": "user", "content": text})
}

#[test]
fn the_memory_as_of_an_event_time_holds_what_was_known_then() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        said("m1", "2023-01-10T09:00:00Z", "I moved to Leeds last week, the flat is tiny."),
        said("m2", "2023-06-02T09:00:00Z", "Big news: I moved to Porto! The weather is lovely."),
        {"kind": "summary", "event_id": "sum-1", "tenant": "acme", "user": "ana",
         "ts": "2023-06-03T00:00:00Z", "content": "Ana moved from Leeds to Porto.",
         "covers": ["m1", "m2"]},
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    let memory = |as_of: Option<&str>| {
        let mut body = json!({"tenant": "acme", "user": "ana"});
        if let Some(t) = as_of {
            body["as_of"] = json!(t);
        }
        server.post("/v1/memory", &body)
    };
    let lives_in = |m: &Value| -> Vec<(String, bool)> {
        m["facts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|f| f["attribute"] == "lives_in")
            .map(|f| {
                (
                    f["value"].as_str().unwrap().to_string(),
                    f["current"] == true,
                )
            })
            .collect()
    };
    // now: Leeds closed by Porto, the summary, both moves as relations
    let (status, now) = memory(None);
    assert_eq!(status, 200, "{now}");
    assert_eq!(
        lives_in(&now),
        [("Leeds".into(), false), ("Porto".into(), true)],
        "{now}"
    );
    assert_eq!(now["summaries"].as_array().unwrap().len(), 1);
    assert_eq!(now["relations"].as_array().unwrap().len(), 2, "{now}");
    assert!(now.get("as_of").is_none());
    // in March 2023: Leeds, current; no Porto, no summary, one move
    let (status, march) = memory(Some("2023-03-01T00:00:00Z"));
    assert_eq!(status, 200, "{march}");
    assert_eq!(lives_in(&march), [("Leeds".into(), true)], "{march}");
    assert_eq!(march["summaries"], json!([]));
    let objects: Vec<&str> = march["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["object"].as_str().unwrap())
        .collect();
    assert_eq!(objects, ["Leeds"], "{march}");
    assert!(!march["entities"].to_string().contains("porto"), "{march}");
    assert_eq!(march["as_of"], "2023-03-01T00:00:00Z");
    // before anything: empty graph parts
    let (_, before) = memory(Some("2022-12-31T23:59:59Z"));
    assert_eq!(
        (before["facts"].clone(), before["relations"].clone()),
        (json!([]), json!([]))
    );
    // a time that is not RFC 3339 is refused
    let (status, body) = memory(Some("last March"));
    assert_eq!(status, 400, "{body}");
}
