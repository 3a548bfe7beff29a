//! How many updates a second the dashboard page sustains, in one run: the real `engram serve`
//! (`$ENGRAM_BIN`, the release build for figures), the page in headless Chromium, and events
//! posted over HTTP at rising rates, all for the user the page shows: facts (a new value
//! supersedes the last, each an upserted fact row), feedback (each vote re-sends the ten skill
//! rows of its context bucket with their densities) and corrections (cluster and preference
//! rows). Needs Debian's chromium and chromedriver (scripts/setup installs them).
//!
//!     dashboard_rate [--no-page] [seconds_per_step] [events_per_second ...]
//!
//! `--no-page` runs the same steps with no page open: what the engine alone reflects, to tell
//! the page's limits from the engine's.
//!
//! For every step it prints the rate offered, the rate the server accepted and its views
//! reflected, and what the page applied: `changes` events, rows and rendered frames a second,
//! and how long after the step's last event the page showed the views' timestamp of the end of
//! the step (catch-up). The page keeps up with a rate while its catch-up stays near zero.

use engram_tests::browser::Browser;
use engram_tests::Server;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

fn main() -> anyhow::Result<()> {
    let no_page = std::env::args().any(|a| a == "--no-page");
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter(|a| a != "--no-page")
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let seconds = args.first().copied().unwrap_or(10);
    let rates: Vec<u64> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![25, 50, 100, 200, 400, 800]
    };
    let dir = tempfile::tempdir()?;
    let server = Server::start(dir.path());
    let key = server.key_for("bench");
    // something to show before the page opens
    let (status, body) = server.post("/v1/events", &json!([event("f0", fact(0), 0)]));
    anyhow::ensure!(status == 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    let browser = (!no_page).then(|| {
        let browser = Browser::start(1400, 1800);
        browser.open(&format!("{}/dashboard#key={key}&user=u0", server.base));
        browser.wait_for(
            "the page to go live",
            "return document.querySelector('#conn')?.textContent.trim() === 'live'",
            Duration::from_secs(60),
        );
        browser
    });
    println!(
        "{:>8} {:>9} {:>9} {:>10} {:>9} {:>9} {:>10}",
        "offered", "accepted", "in views", "changes/s", "rows/s", "frames/s", "catch-up"
    );
    let mut next_id = 1u64;
    for rate in rates {
        let page_before = counters(browser.as_ref());
        let log_before = server.status()["log_end"].as_u64().unwrap_or(0);
        let views_before = server.status()["views_as_of"].as_u64().unwrap_or(0);
        let start = Instant::now();
        // ten posts a second, each a tenth of the rate
        let per_post = (rate / 10).max(1);
        let mut tick = 0u64;
        while start.elapsed() < Duration::from_secs(seconds) {
            let batch: Vec<Value> = (0..per_post)
                .map(|_| {
                    next_id += 1;
                    let id = next_id;
                    match id % 10 {
                        0 => event(&format!("c{id}"), correction(id), id),
                        1..=3 => event(&format!("v{id}"), vote(id), id),
                        _ => event(&format!("f{id}"), fact(id), id),
                    }
                })
                .collect();
            let (status, body) = server.post("/v1/events", &Value::Array(batch));
            anyhow::ensure!(status == 200, "{body}");
            tick += 1;
            let due = Duration::from_millis(100 * tick);
            if let Some(wait) = due.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        let elapsed = start.elapsed().as_secs_f64();
        let status = server.status();
        let log_end = status["log_end"].as_u64().unwrap_or(0);
        let views = status["views_as_of"].as_u64().unwrap_or(0);
        let page_during = counters(browser.as_ref());
        // catch-up: until the page (or, with no page, the views) shows the views' timestamp of
        // everything posted
        let posted_end = log_end;
        let waited = Instant::now();
        let caught_up = loop {
            let shown = match &browser {
                Some(b) => counters(Some(b))["views_as_of"].as_u64().unwrap_or(0),
                None => server.status()["views_as_of"].as_u64().unwrap_or(0),
            };
            if shown >= posted_end {
                break Some(waited.elapsed());
            }
            if waited.elapsed() > Duration::from_secs(60) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let per_sec = |name: &str| {
            (page_during[name].as_f64().unwrap_or(0.0) - page_before[name].as_f64().unwrap_or(0.0))
                / elapsed
        };
        println!(
            "{:>8} {:>9.0} {:>9.0} {:>10.1} {:>9.0} {:>9.1} {:>10}",
            rate,
            (log_end - log_before) as f64 / elapsed,
            (views.saturating_sub(views_before)) as f64 / elapsed,
            per_sec("changes"),
            per_sec("rows_applied"),
            per_sec("renders"),
            caught_up.map_or("> 60 s".to_string(), |d| format!(
                "{:.2} s",
                d.as_secs_f64()
            )),
        );
    }
    if let Some(browser) = browser {
        let shot = std::env::temp_dir().join("engram-dashboard-rate.png");
        browser.screenshot(&shot);
        println!("screenshot of the page after the run: {}", shot.display());
    }
    Ok(())
}

/// The page's counters (all zero with no page).
fn counters(browser: Option<&Browser>) -> Value {
    browser.map_or(Value::Null, |b| b.eval("return window.__dashboard"))
}

/// An event of user `u0` of tenant `bench`, `id` seconds after a fixed start (so corrections
/// span days: each id is an hour).
fn event(event_id: &str, body: Value, id: u64) -> Value {
    let ts = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z").unwrap()
        + chrono::Duration::hours(id as i64);
    let mut e = json!({"event_id": event_id, "tenant": "bench", "user": "u0", "session": "s",
        "ts": ts.to_rfc3339()});
    e.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    e
}

fn fact(id: u64) -> Value {
    json!({"kind": "fact", "subject": "u0", "attribute": format!("attribute {}", id % 20),
        "value": format!("value {id}")})
}

fn vote(id: u64) -> Value {
    const SKILLS: [&str; 4] = ["concise", "detailed", "technical", "casual"];
    json!({"kind": "feedback", "message_id": format!("m{id}"), "skill_id": SKILLS[(id % 4) as usize],
        "reward": if id % 3 == 0 { -1 } else { 1 },
        "context": {"intent": "question", "sentiment": "neutral", "time_of_day": "morning"}})
}

fn correction(id: u64) -> Value {
    const ASKS: [&str; 3] = [
        "Answer briefly, in one or two sentences.",
        "Use bullet points for lists of steps.",
        "Never use exclamation marks.",
    ];
    json!({"kind": "correction", "target_event_id": format!("a{id}"), "correction_type": "STYLE",
        "original": "Well, let me explain at some length!", "expected_behavior": ASKS[(id % 3) as usize]})
}
