//! The consolidation dashboard, end to end: a real `engram serve`, the page in headless
//! Chromium (driven over WebDriver), and a scripted stream of events posted over HTTP while the
//! page is open. The page must show, without a reload, a correction cluster forming and being
//! promoted to a pattern and a preference, a fact superseded, and a skill posterior moving with
//! feedback; a screenshot is saved as a test artifact. A second test checks over the stream
//! itself that one tenant's key never reads another tenant's rows.

use chrono::{Duration as Days, Utc};
use engram_tests::browser::Browser;
use engram_tests::{EventStream, Server};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

fn event(tenant: &str, kind: &str, id: &str, user: &str, hours_ago: i64, body: Value) -> Value {
    let mut e = json!({
        "kind": kind, "event_id": id, "tenant": tenant, "user": user, "session": "s1",
        "ts": (Utc::now() - Days::hours(hours_ago)).to_rfc3339(),
    });
    e.as_object_mut()
        .unwrap()
        .extend(body.as_object().unwrap().clone());
    e
}

fn say(tenant: &str, id: &str, user: &str, hours_ago: i64, content: &str) -> Value {
    let body = json!({"role": "user", "content": content});
    event(tenant, "interaction", id, user, hours_ago, body)
}

fn fact(tenant: &str, id: &str, user: &str, hours_ago: i64, attribute: &str, value: &str) -> Value {
    let body = json!({"subject": user, "attribute": attribute, "value": value});
    event(tenant, "fact", id, user, hours_ago, body)
}

fn brevity_correction(tenant: &str, id: &str, user: &str, hours_ago: i64) -> Value {
    event(
        tenant,
        "correction",
        id,
        user,
        hours_ago,
        json!({
            "target_event_id": "a1", "correction_type": "LENGTH",
            "original": "Well, there are many considerations to weigh here before I answer",
            "corrected": "Berlin.",
            "expected_behavior": "Answer briefly, in one or two sentences.",
        }),
    )
}

fn post_ok(server: &Server, body: Value) {
    let (status, resp) = server.post("/v1/events", &body);
    assert_eq!(status, 200, "{resp}");
    assert_eq!(resp["rejected"], json!([]), "{resp}");
}

fn feedback(server: &Server, tenant: &str, user: &str, message: &str, skill: &str, reward: i8) {
    let (status, resp) = server.post(
        "/v1/feedback",
        &json!({"tenant": tenant, "user": user, "message_id": message, "skill_id": skill,
                "reward": reward,
                "context": {"intent": "question", "sentiment": "neutral", "time_of_day": "morning"}}),
    );
    assert_eq!(status, 200, "{resp}");
}

/// The mean the page shows for `skill` (from the element's `data-mean`), or null.
fn shown_mean(skill: &str) -> String {
    format!(
        "const e = document.querySelector('[data-testid=skill-posterior][data-skill=\"{skill}\"]');\
         return e ? Number(e.dataset.mean) : null;"
    )
}

fn artifact(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("artifacts")
        .join(name)
}

/// Some memory of alice's before the page opens: a conversation and a fact.
fn send_alices_conversation_and_fact(server: &Server) {
    post_ok(
        server,
        json!([
            say(
                "acme",
                "a1",
                "alice",
                80,
                "What is the capital of Germany? A trip with Bob."
            ),
            say(
                "acme",
                "a2",
                "alice",
                79,
                "Berlin, I think. Bob is booking the train."
            ),
            fact("acme", "f1", "alice", 78, "city", "Paris"),
        ]),
    );
    server.wait_caught_up(WAIT);
}

/// Opens the dashboard for alice under `key` and waits until it is live with her episodes;
/// marks the page so that a reload would show.
fn open_the_live_page(server: &Server, key: &str) -> Browser {
    let browser = Browser::start(1400, 1800);
    browser.open(&format!("{}/dashboard#key={key}&user=alice", server.base));
    browser.wait_for(
        "the page to go live",
        "return document.querySelector('#conn')?.textContent.trim() === 'live'",
        WAIT,
    );
    browser.wait_for(
        "alice's episodes in the user list",
        "return (window.__dashboard?.rows_applied ?? 0) > 0 && document.body.innerText.includes('alice')",
        WAIT,
    );
    // anything that reloads the page would drop this
    browser.eval("window.__loaded_once = 'yes'; return true");
    browser
}

/// Two corrections form a cluster, not yet a pattern; the third, a day after the first,
/// promotes it and activates its preference.
fn assert_three_corrections_promote_a_cluster(server: &Server, browser: &Browser) {
    // two corrections: a cluster forms, not yet a pattern (n < 3)
    post_ok(
        server,
        json!([
            brevity_correction("acme", "c1", "alice", 72),
            brevity_correction("acme", "c2", "alice", 48),
        ]),
    );
    browser.wait_for(
        "a cluster of two, not promoted",
        "const c = document.querySelector('[data-testid=cluster][data-cluster=c1]');\
         return c && c.dataset.promoted === 'false' && c.textContent.includes('2')",
        WAIT,
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('[data-testid=promotion]').length"),
        json!(0),
        "no promotion before the third correction"
    );
    // the third, a day after the first: n = 3, span ≥ 1 day, coherent → promoted
    post_ok(
        server,
        json!([brevity_correction("acme", "c3", "alice", 24)]),
    );
    browser.wait_for(
        "the promotion in the log",
        "return document.querySelector('[data-testid=promotion][data-cluster=c1]') !== null",
        WAIT,
    );
    browser.wait_for(
        "the cluster marked promoted and its preference active",
        "const c = document.querySelector('[data-testid=cluster][data-cluster=c1]');\
         const p = document.querySelector('[data-testid=preference][data-cluster=c1]');\
         return c && c.dataset.promoted === 'true' && p && p.dataset.state === 'active'",
        WAIT,
    );
}

/// Feedback moves the posterior the page shows for the skill it is for: one vote, then five
/// more.
fn assert_feedback_moves_the_shown_posterior(server: &Server, browser: &Browser) {
    feedback(server, "acme", "alice", "m1", "concise", 1);
    let first = browser
        .wait_for(
            "the concise skill's posterior",
            &shown_mean("concise"),
            WAIT,
        )
        .as_f64()
        .unwrap();
    // Beta(1, 1) + one success: mean 2/3
    assert!((first - 2.0 / 3.0).abs() < 1e-3, "{first}");
    for (i, reward) in [1, 1, 1, -1, 1].into_iter().enumerate() {
        feedback(
            server,
            "acme",
            "alice",
            &format!("m{}", i + 2),
            "concise",
            reward,
        );
    }
    let moved = browser
        .wait_for(
            "the posterior after five more votes",
            &format!(
                "const e = document.querySelector('[data-testid=skill-posterior][data-skill=\"concise\"]');\
                 return e && Number(e.dataset.alpha) === 6 && Number(e.dataset.beta) === 2 ? Number(e.dataset.mean) : null;"
            ),
            WAIT,
        )
        .as_f64()
        .unwrap();
    // Beta(1 + 5, 1 + 1): mean 6/8
    assert!((moved - 0.75).abs() < 1e-3, "{moved}");
}

#[test]
fn the_page_shows_a_promotion_and_a_moving_posterior_live() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let key = server.key_for("acme");
    // some memory before the page opens: a conversation and a fact
    send_alices_conversation_and_fact(&server);

    let browser = open_the_live_page(&server, &key);

    // a fact superseded: Paris → Berlin
    post_ok(
        &server,
        json!([fact("acme", "f2", "alice", 50, "city", "Berlin")]),
    );
    browser.wait_for(
        "the superseded fact",
        "const r = document.querySelector('[data-testid=superseded-fact]');\
         return r && r.textContent.includes('Paris') && r.textContent.includes('Berlin')",
        WAIT,
    );

    assert_three_corrections_promote_a_cluster(&server, &browser);

    // feedback moves the posterior of the skill it is for
    assert_feedback_moves_the_shown_posterior(&server, &browser);

    // all of it arrived through the stream: one snapshot, no reload
    assert_eq!(browser.eval("return window.__loaded_once"), json!("yes"));
    let counters = browser.eval("return window.__dashboard");
    assert_eq!(counters["snapshots"], json!(1), "{counters}");
    assert!(counters["changes"].as_u64().unwrap() >= 4, "{counters}");
    let errors = browser.eval(
        "return [...document.querySelectorAll('.error, [data-testid=error]')].map(e => e.textContent)",
    );
    assert_eq!(errors, json!([]), "the page shows errors");

    // the health panel has had its first report
    browser.wait_for(
        "a health report",
        "return window.__dashboard.health >= 1",
        WAIT,
    );
    let shot = artifact("dashboard-live.png");
    browser.screenshot(&shot);
    let bytes = std::fs::read(&shot).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000,
        "{}",
        shot.display()
    );
    eprintln!("dashboard screenshot: {}", shot.display());
}

/// The same user name in both tenants; globex's words are distinctive.
fn send_alice_of_both_tenants(server: &Server) {
    post_ok(
        server,
        json!([say(
            "acme",
            "a1",
            "alice",
            5,
            "Remind me to water the ferns."
        )]),
    );
    post_ok(
        server,
        json!([
            say(
                "globex",
                "g1",
                "alice",
                5,
                "Quarterly zeppelin budget review with Zanzibar."
            ),
            fact("globex", "gf1", "alice", 5, "employer", "GlobexSecretCo"),
            say(
                "globex",
                "g2",
                "mallory",
                5,
                "Mallory's own zeppelin notes."
            ),
            brevity_correction("globex", "gc1", "alice", 5),
        ]),
    );
    server.wait_caught_up(WAIT);
}

/// The status a dashboard stream under `key` is refused with, or `None` when it opens.
fn stream_refusal(server: &Server, key: Option<&str>, limit: Duration) -> Option<u16> {
    server
        .events(key, "/v1/dashboard/stream", limit)
        .err()
        .map(|(status, _)| status)
}

/// The snapshot of acme's stream lists acme's users only.
fn assert_the_snapshot_is_acmes_only(stream: &mut EventStream) {
    let (name, snapshot) = stream.next_event().unwrap();
    assert_eq!(name, "snapshot");
    assert_eq!(snapshot["tenant"], "acme");
    let users: Vec<&str> = snapshot["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["table"] == "user")
        .map(|r| r["key"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["alice"], "acme's users only: {snapshot}");
}

/// Globex writes five times, then acme writes once.
fn send_globex_writes_then_one_of_acme(server: &Server) {
    for i in 0..5 {
        post_ok(
            server,
            json!([
                fact(
                    "globex",
                    &format!("gf{}", i + 2),
                    "alice",
                    4,
                    "employer",
                    &format!("GlobexSecretCo{i}")
                ),
                brevity_correction("globex", &format!("gc{}", i + 2), "alice", 30 * i + 30),
            ]),
        );
    }
    post_ok(
        server,
        json!([fact("acme", "af1", "alice", 1, "plant", "ferns")]),
    );
}

/// Acme's own change arrives on its stream, and nothing of globex's has.
fn assert_acmes_change_arrives_and_nothing_of_globex(stream: &mut EventStream) {
    let (_, change) = stream
        .until(WAIT, |name, data| {
            name == "changes" && data.to_string().contains("ferns")
        })
        .expect("acme's own change arrives");
    assert!(change["upserts"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["table"] == "fact"));
    // the globex events were accepted before acme's, so every batch with them has passed
    for secret in [
        "GlobexSecretCo",
        "zeppelin",
        "Zanzibar",
        "mallory",
        "gc1",
        "globex",
    ] {
        assert!(
            !stream.raw.contains(secret),
            "acme's stream carries globex's {secret:?}"
        );
    }
}

/// A second key of acme, once revoked, is refused at once, and a stream it opened ends within
/// seconds.
fn assert_a_revoked_key_is_refused_and_its_stream_ends(server: &Server, limit: Duration) {
    let (status, body) = server.post_as(
        Some(&server.admin_key),
        "/v1/admin/tenants/acme/keys",
        &json!({}),
    );
    assert_eq!(status, 201, "{body}");
    let second = body["api_key"].as_str().unwrap().to_string();
    let mut open = server
        .events(Some(&second), "/v1/dashboard/stream", limit)
        .unwrap();
    assert_eq!(open.next_event().unwrap().0, "snapshot");
    let resp = reqwest::blocking::Client::new()
        .delete(format!(
            "{}/v1/admin/tenants/acme/keys/{second}",
            server.base
        ))
        .bearer_auth(&server.admin_key)
        .send()
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.status());
    assert_eq!(stream_refusal(server, Some(&second), limit), Some(401));
    let started = std::time::Instant::now();
    while open.next_event().is_some() {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the revoked key's stream goes on"
        );
    }
}

#[test]
fn a_tenants_key_reads_only_its_own_stream() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let acme = server.key_for("acme");
    let globex = server.key_for("globex");
    // the same user name in both tenants; globex's words are distinctive
    send_alice_of_both_tenants(&server);

    // no key, a wrong key: refused
    let limit = Duration::from_secs(30);
    assert_eq!(stream_refusal(&server, None, limit), Some(401));
    assert_eq!(
        stream_refusal(&server, Some("engram_0000"), limit),
        Some(401)
    );
    // a user name that is not a name
    let (status, body) = server
        .events(
            Some(&acme),
            "/v1/dashboard/stream?user=a%27%20OR%201=1",
            limit,
        )
        .err()
        .unwrap();
    assert_eq!(
        (status, body["error"]["field"].as_str()),
        (400, Some("user"))
    );

    let mut stream = server
        .events(Some(&acme), "/v1/dashboard/stream?user=alice", limit)
        .unwrap();
    assert_the_snapshot_is_acmes_only(&mut stream);

    // globex keeps writing while acme's page follows; then acme writes once
    send_globex_writes_then_one_of_acme(&server);
    assert_acmes_change_arrives_and_nothing_of_globex(&mut stream);

    // globex's own key does see globex's alice (the stream is the key's tenant's, no other)
    let mut theirs = server
        .events(Some(&globex), "/v1/dashboard/stream?user=alice", limit)
        .unwrap();
    let (_, snapshot) = theirs.next_event().unwrap();
    assert_eq!(snapshot["tenant"], "globex");
    assert!(snapshot.to_string().contains("GlobexSecretCo"));
    assert!(!snapshot.to_string().contains("ferns"));

    // a revoked key is refused at once, and a stream it opened ends within seconds
    assert_a_revoked_key_is_refused_and_its_stream_ends(&server, limit);
}

#[test]
fn a_promoted_cluster_that_is_renamed_is_not_promoted_again() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let key = server.key_for("acme");
    let mut stream = server
        .events(
            Some(&key),
            "/v1/dashboard/stream?user=alice",
            Duration::from_secs(60),
        )
        .unwrap();
    assert_eq!(stream.next_event().unwrap().0, "snapshot");
    post_ok(
        &server,
        json!([
            brevity_correction("acme", "c5", "alice", 72),
            brevity_correction("acme", "c6", "alice", 48),
            brevity_correction("acme", "c7", "alice", 24),
        ]),
    );
    let (_, promoted) = stream
        .until(WAIT, |name, d| {
            name == "changes" && !d["promotions"].as_array().unwrap().is_empty()
        })
        .expect("the promotion");
    assert_eq!(promoted["promotions"][0]["cluster_id"], "c5");
    assert_eq!(promoted["promotions"][0]["size"], 3);
    // c1 sorts before c5: the cluster is renamed c1 and grows to four; no new promotion
    post_ok(
        &server,
        json!([brevity_correction("acme", "c1", "alice", 12)]),
    );
    let (_, renamed) = stream
        .until(WAIT, |name, d| {
            name == "changes"
                && d["upserts"].as_array().unwrap().iter().any(|r| {
                    r["table"] == "cluster" && r["key"] == "c1" && r["value"]["promoted"] == true
                })
        })
        .expect("the renamed cluster");
    assert_eq!(renamed["promotions"], json!([]), "{renamed}");
    let deleted: Vec<&Value> = renamed["deletes"].as_array().unwrap().iter().collect();
    assert!(
        deleted
            .iter()
            .any(|d| d["table"] == "cluster" && d["key"] == "c5"),
        "{renamed}"
    );
    let row = renamed["upserts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["table"] == "cluster" && r["key"] == "c1")
        .unwrap();
    assert_eq!(row["value"]["size"], 4);
}

fn set_team(tenant: &str, id: &str, user: &str, team: &str) -> Value {
    event(
        tenant,
        "control",
        id,
        user,
        100,
        json!({"action": "set_team", "team": team}),
    )
}

/// Three corrections of `user` asking for brevity, a day apart: a pattern of their own.
fn brevity_pattern(tenant: &str, user: &str) -> Vec<Value> {
    [72, 48, 24]
        .into_iter()
        .map(|h| brevity_correction(tenant, &format!("{user}-c{h}"), user, h))
        .collect()
}

#[test]
fn team_and_organisation_promotions_show_live_and_reach_a_new_members_prompt() {
    let dir = tempfile::tempdir().unwrap();
    // two users make a team preference, two teams an organisation one
    let config = dir.path().join("engram.toml");
    std::fs::write(
        &config,
        "[hierarchy]\nteam_min_users = 2\norg_min_teams = 2\n",
    )
    .unwrap();
    let data = dir.path().join("data");
    let server = Server::start_with(&data, &["--config", config.to_str().unwrap()]);
    let key = server.key_for("acme");
    let mut teams = vec![
        set_team("acme", "t1", "ann", "support"),
        set_team("acme", "t2", "ben", "support"),
        set_team("acme", "t3", "dana", "support"),
        set_team("acme", "t4", "eve", "sales"),
        set_team("acme", "t5", "fay", "sales"),
        set_team("acme", "t6", "gus", "ops"),
    ];
    teams.push(say(
        "acme",
        "d1",
        "dana",
        2,
        "Hello, I just joined the support team.",
    ));
    post_ok(&server, Value::Array(teams));
    server.wait_caught_up(WAIT);

    let browser = Browser::start(1400, 1600);
    browser.open(&format!("{}/dashboard#key={key}&user=dana", server.base));
    browser.wait_for(
        "the page to go live",
        "return document.querySelector('#conn')?.textContent.trim() === 'live'",
        WAIT,
    );
    // ann and ben of support hold brevity: support holds it
    let mut corrections = brevity_pattern("acme", "ann");
    corrections.extend(brevity_pattern("acme", "ben"));
    post_ok(&server, Value::Array(corrections));
    browser.wait_for(
        "the team preference and its promotion",
        "return document.querySelector('[data-testid=team-preference][data-level=team][data-team=support]') !== null \
         && document.querySelector('[data-testid=group-promotion][data-level=team]') !== null",
        WAIT,
    );
    assert_eq!(
        browser.eval("return document.querySelectorAll('[data-testid=team-preference][data-level=org]').length"),
        json!(0),
        "one team is not the organisation"
    );
    // eve and fay of sales too: two teams hold it, so the organisation does
    let mut corrections = brevity_pattern("acme", "eve");
    corrections.extend(brevity_pattern("acme", "fay"));
    post_ok(&server, Value::Array(corrections));
    browser.wait_for(
        "the organisation preference and its promotion",
        "return document.querySelector('[data-testid=team-preference][data-level=org]') !== null \
         && document.querySelector('[data-testid=group-promotion][data-level=org]') !== null",
        WAIT,
    );
    let shot = artifact("dashboard-team-promotions.png");
    browser.screenshot(&shot);
    eprintln!("dashboard screenshot: {}", shot.display());

    // dana made no correction: she inherits her team's preference, worded by what it asks
    // for, not by her teammates' answers
    let prompt = |user: &str| {
        let (status, body) = server.post(
            "/v1/prompt",
            &json!({"tenant": "acme", "user": user, "session": "s9",
                    "query": "What is the capital of France?"}),
        );
        assert_eq!(status, 200, "{body}");
        body
    };
    let dana = prompt("dana");
    let system = dana["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Answer briefly, in one or two sentences."),
        "{system}"
    );
    assert!(system.contains("your team's"), "{system}");
    assert!(!dana["prompt"]
        .as_str()
        .unwrap()
        .contains("many considerations"));
    let used = &dana["provenance"]["preferences"];
    assert_eq!(used.as_array().unwrap().len(), 1, "{used}");
    assert_eq!(used[0]["level"], "team");
    assert_eq!(used[0]["corrections"], json!([]));
    // gus of ops inherits the organisation's
    let gus = prompt("gus");
    assert_eq!(gus["provenance"]["preferences"][0]["level"], "org", "{gus}");
    // ann holds it herself: her own preference, not the team's on top
    let ann = prompt("ann");
    let levels: Vec<&Value> = ann["provenance"]["preferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["level"])
        .collect();
    assert_eq!(levels, [&json!("user")], "{ann}");
}
