//! Several timely workers store every episode: each worker reads the log at its own pace, so
//! the records it publishes are not in log order across workers; the episode writer must still
//! receive and store each one (a 1-minute soak with two workers once left 9 of 3,000 episodes
//! in the views and never in Lance, and the server never caught up).

use engram_tests::{interaction, Server};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const TENANT: &str = "acme";
const CLIENTS: usize = 4;
const REQUESTS_PER_CLIENT: usize = 25;
const EVENTS_PER_REQUEST: usize = 10;
const USERS: usize = 50;

#[test]
fn three_workers_store_every_episode_of_concurrent_writers() {
    let dir = tempfile::tempdir().unwrap();
    let server = Arc::new(Server::start_with(dir.path(), &["--workers", "3"]));
    let writers: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let server = server.clone();
            std::thread::spawn(move || {
                for request in 0..REQUESTS_PER_CLIENT {
                    let events: Vec<Value> = (0..EVENTS_PER_REQUEST)
                        .map(|i| {
                            let seq = (request * EVENTS_PER_REQUEST + i) * CLIENTS + client;
                            let user = format!("user{}", seq % USERS);
                            let text = format!(
                                "note {seq}: my sister moved to Porto and the cat hates the new flat"
                            );
                            interaction(
                                TENANT,
                                &user,
                                &format!("e-{seq}"),
                                "s1",
                                (seq % 1440) as u32,
                                &text,
                            )
                        })
                        .collect();
                    let (status, body) = server.post("/v1/events", &json!(events));
                    assert_eq!(status, 200, "{body}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let total = CLIENTS * REQUESTS_PER_CLIENT * EVENTS_PER_REQUEST;
    // panics if some episode stays in the views and never reaches Lance
    server.wait_caught_up(Duration::from_secs(60));
    let status = server.status();
    assert_eq!(status["episodes"].as_u64(), Some(total as u64), "{status}");
    assert_eq!(status["pending_episodes"].as_u64(), Some(0), "{status}");
}
