//! Tenants see only their own figures and leave an audit trail: `/v1/status` and `/metrics` by
//! key (none: health only; a tenant's key: its own counts; the admin key: everything), the
//! embedder's text cache per tenant, and the audit log of reads, exports and erasures, read
//! by the tenant's key and the admin's, kept across a restart.

use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

fn say(tenant: &str, user: &str, id: &str, content: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": tenant, "user": user,
           "session": "s1", "ts": chrono::Utc::now().to_rfc3339(), "role": "user",
           "content": content})
}

/// acme has two users with one message each, globex one user with three.
fn send_both_tenants(server: &Server) {
    let acme = json!([
        say("acme", "alice", "a1", "My locker code is 4471."),
        say("acme", "bob", "b1", "I play the cello on Sundays."),
    ]);
    let globex = json!([
        say("globex", "carol", "c1", "I grow tomatoes."),
        say("globex", "carol", "c2", "My dog is called Rex."),
        say("globex", "carol", "c3", "I live in Lyon."),
    ]);
    for body in [acme, globex] {
        let (status, answer) = server.post("/v1/events", &body);
        assert_eq!(status, 200, "{answer}");
    }
    server.wait_caught_up(Duration::from_secs(60));
}

fn status_as(server: &Server, key: Option<&str>) -> (u16, Value) {
    let (code, body) = server.get_as(key, "/v1/status");
    (code, serde_json::from_str(&body).unwrap_or(Value::Null))
}

fn assert_status_is_scoped_by_key(server: &Server) {
    let (code, public) = status_as(server, None);
    assert_eq!(code, 200);
    assert_eq!(public["view"], "public");
    assert_eq!(public["up"], true);
    for hidden in ["log_end", "episodes", "rejected", "tenants", "views_as_of"] {
        assert!(
            public.get(hidden).is_none(),
            "{hidden} shown without a key: {public}"
        );
    }
    let (_, acme) = status_as(server, Some(&server.key_for("acme")));
    assert_eq!(acme["view"], "tenant");
    assert_eq!(acme["tenant"], "acme");
    assert_eq!(
        (acme["users"].as_u64(), acme["episodes"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(acme["episodes_stored"], 2);
    assert_eq!(acme["pending_episodes"], 0);
    for hidden in [
        "log_end",
        "views_as_of",
        "events_in_lance",
        "rejected",
        "tenants",
    ] {
        assert!(
            acme.get(hidden).is_none(),
            "{hidden} shown to a tenant: {acme}"
        );
    }
    let (_, globex) = status_as(server, Some(&server.key_for("globex")));
    assert_eq!(
        (globex["users"].as_u64(), globex["episodes"].as_u64()),
        (Some(1), Some(3))
    );
    let operator = server.status();
    assert_eq!(operator["view"], "operator");
    assert_eq!(operator["log_end"], 5);
    assert_eq!(operator["episodes"], 5);
    assert_eq!(operator["tenants"]["acme"]["episodes"], 2);
    assert_eq!(operator["tenants"]["globex"]["episodes"], 3);
    let (code, _) = status_as(server, Some("engram_not-a-key"));
    assert_eq!(
        code, 401,
        "a wrong key is refused, not shown the public view"
    );
    assert_eq!(server.get("/healthz"), (200, "ok".to_string()));
}

fn assert_metrics_are_scoped_by_key(server: &Server) {
    let (code, public) = server.get("/metrics");
    assert_eq!(code, 200);
    assert!(public.contains("engram_up 1"), "{public}");
    assert!(!public.contains("engram_log_end_offset"), "{public}");
    assert!(!public.contains("engram_tenant_"), "{public}");
    let (_, acme) = server.get_as(Some(&server.key_for("acme")), "/metrics");
    assert!(
        acme.contains("engram_tenant_episodes{tenant=\"acme\"} 2"),
        "{acme}"
    );
    assert!(!acme.contains("globex"), "{acme}");
    assert!(!acme.contains("engram_log_end_offset"), "{acme}");
    let operator = server.metrics();
    assert!(operator.contains("engram_log_end_offset 5"), "{operator}");
    assert!(
        operator.contains("engram_tenant_episodes{tenant=\"globex\"} 3"),
        "{operator}"
    );
    let (code, _) = server.get_as(Some("engram_not-a-key"), "/metrics");
    assert_eq!(code, 401);
}

fn cache_hits(server: &Server) -> u64 {
    let metrics = server.metrics();
    let line = metrics
        .lines()
        .find(|l| l.starts_with("engram_embedding_cache_hits_total "))
        .unwrap_or_else(|| panic!("no cache hit counter in {metrics}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The same query asked by acme twice hits acme's cache; asked by globex it does not.
fn assert_a_query_cached_by_acme_is_not_a_hit_for_globex(server: &Server) {
    let query = "what instrument do I play on weekends";
    server.recall("acme", "bob", query, 3);
    let before = cache_hits(server);
    server.recall("acme", "bob", query, 3);
    let after_acme = cache_hits(server);
    assert!(after_acme > before, "acme's repeated query is a cache hit");
    server.recall("globex", "carol", query, 3);
    assert_eq!(
        cache_hits(server),
        after_acme,
        "globex must not hit acme's entry"
    );
}

#[test]
fn status_and_metrics_show_each_key_only_what_it_may_see_and_the_text_cache_is_per_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    send_both_tenants(&server);
    assert_status_is_scoped_by_key(&server);
    assert_metrics_are_scoped_by_key(&server);
    assert_a_query_cached_by_acme_is_not_a_hit_for_globex(&server);
}

fn audit(server: &Server, key: &str, path: &str) -> Vec<Value> {
    let (code, body) = server.get_as(Some(key), path);
    assert_eq!(code, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    body["records"].as_array().unwrap().clone()
}

/// The one record of `action` in `records`, checked to name the key, the user and the route.
fn assert_one_record(records: &[Value], action: &str, key_id: &str, user: &str, route: &str) {
    let found: Vec<&Value> = records.iter().filter(|r| r["action"] == action).collect();
    assert_eq!(found.len(), 1, "one {action} record in {records:?}");
    let r = found[0];
    assert_eq!(r["key_id"], key_id, "{r}");
    assert_eq!(r["user"], user, "{r}");
    assert_eq!(r["route"], route, "{r}");
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(r["tenant"], "acme", "{r}");
}

fn assert_acme_audit(records: &[Value], key_id: &str) {
    assert_one_record(records, "recall", key_id, "alice", "POST /v1/recall");
    assert_one_record(records, "export", key_id, "alice", "POST /v1/export");
    assert_one_record(records, "erase", key_id, "alice", "POST /v1/erase");
    let text = serde_json::to_string(records).unwrap();
    assert!(
        !text.contains("4471") && !text.contains("locker"),
        "content in the audit: {text}"
    );
}

#[test]
fn reads_exports_and_erasures_leave_audit_records_only_their_tenant_and_the_admin_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    send_both_tenants(&server);
    let acme_key = server.key_for("acme");
    // a key's id is its first 15 characters ("engram_" and 8 more)
    let key_id: String = acme_key.chars().take(15).collect();
    let alice = json!({"tenant": "acme", "user": "alice"});
    server.recall("acme", "alice", "what is my locker code", 3);
    let (code, export) = server.post_as(Some(&acme_key), "/v1/export", &alice);
    assert_eq!(code, 200, "{export}");
    let (code, receipt) = server.post_as(Some(&acme_key), "/v1/erase", &alice);
    assert_eq!(code, 200, "{receipt}");

    let own = audit(&server, &acme_key, "/v1/audit");
    assert_eq!(own.len(), 3, "{own:?}");
    assert_acme_audit(&own, &key_id);
    assert!(
        !serde_json::to_string(&own).unwrap().contains(&acme_key),
        "the secret"
    );
    // globex's key reads globex's log: nothing of acme's
    let globex = audit(&server, &server.key_for("globex"), "/v1/audit");
    assert!(globex.is_empty(), "{globex:?}");
    let (code, _) = server.get_as(
        Some(&server.key_for("globex")),
        "/v1/admin/tenants/acme/audit",
    );
    assert_eq!(code, 401, "a tenant key cannot use the admin route");
    let (code, _) = server.get("/v1/audit");
    assert_eq!(code, 401);
    // paging: since the first record, the two after it
    let page = audit(&server, &acme_key, "/v1/audit?since=1&limit=5");
    assert_eq!(
        page.iter()
            .map(|r| r["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [2, 3]
    );
    let (code, _) = server.get_as(Some(&acme_key), "/v1/audit?limit=100000");
    assert_eq!(code, 400, "the page size is bounded");

    server.kill9();
    let server = Server::start(&data);
    let admin = server.admin_key.clone();
    let kept = audit(&server, &admin, "/v1/admin/tenants/acme/audit");
    assert_eq!(kept.len(), 3, "the records survive a restart: {kept:?}");
    assert_acme_audit(&kept, &key_id);
}

/// What acme's alice gets back for one question: each result's and each fact's full-text score
/// and rank, by id.
fn text_scores(server: &Server) -> Vec<(String, Value)> {
    let body = json!({"tenant": "acme", "user": "alice",
                      "query": "Where is my lemon garden in Lisbon?", "k": 10});
    let (status, recall) = server.post("/v1/recall", &body);
    assert_eq!(status, 200, "{recall}");
    let mut scores: Vec<(String, Value)> = ["results", "facts"]
        .iter()
        .flat_map(|part| recall[*part].as_array().unwrap().clone())
        .map(|r| {
            let id = r.get("id").or(r.get("fact_id")).unwrap().to_string();
            let why = &r["why"];
            (id, json!([why["text_bm25"], why["text_rank"]]))
        })
        .collect();
    scores.sort_by(|a, b| a.0.cmp(&b.0));
    scores
}

/// Full-text scores depend on the asking user's rows alone (Lance's own are computed over every
/// tenant's rows, so a score would tell one tenant about another's words). With
/// `recall.scored_turns = 2`, alice's turns are found through Lance's full-text index, as a large
/// user's are, and her facts always are. globex then writes 60 turns and 20 facts with her words:
/// every score alice gets back is what it was.
#[test]
fn full_text_scores_do_not_depend_on_other_tenants_rows() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("engram.toml");
    // Lance's full-text index takes in new rows after 10 of them, so it holds globex's below
    std::fs::write(
        &config,
        "[recall]\nscored_turns = 2\n[index]\nreindex_after_rows = 10\n",
    )
    .unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let fact = |tenant: &str, user: &str, id: &str, value: &str| {
        json!({"kind": "fact", "event_id": id, "tenant": tenant, "user": user,
               "ts": chrono::Utc::now().to_rfc3339(), "subject": "user",
               "attribute": "garden", "value": value})
    };
    let alice = json!([
        say("acme", "alice", "a1", "I moved to Lisbon last spring."),
        say(
            "acme",
            "alice",
            "a2",
            "My garden in Lisbon has two lemon trees."
        ),
        say(
            "acme",
            "alice",
            "a3",
            "The lemon trees need water every evening."
        ),
        fact("acme", "alice", "a4", "a lemon garden in Lisbon"),
    ]);
    assert_eq!(server.post("/v1/events", &alice).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    // her three turns and her fact, once the fact is searchable too
    let start = std::time::Instant::now();
    let before = loop {
        let scores = text_scores(&server);
        if scores.iter().filter(|(_, s)| s[0].is_number()).count() >= 4 {
            break scores;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "alice's turns and fact should have text scores: {scores:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };

    let globex: Vec<Value> = (0..60)
        .map(|i| {
            say(
                "globex",
                &format!("g{}", i % 3),
                &format!("g{i}"),
                &format!("Lemon garden note {i}: Lisbon lemons, garden lemons."),
            )
        })
        .chain((0..20).map(|i| {
            fact(
                "globex",
                "g0",
                &format!("gf{i}"),
                &format!("lemon garden {i}"),
            )
        }))
        .collect();
    assert_eq!(server.post("/v1/events", &json!(globex)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    // the rows are published before the index folds them in: wait until it holds globex's
    let indexed = || {
        server.status()["indexes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == "content_fts")
            .map_or(0, |i| i["indexed_rows"].as_u64().unwrap())
    };
    let start = std::time::Instant::now();
    while indexed() < 63 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{}",
            server.status()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        text_scores(&server),
        before,
        "globex's rows changed alice's scores"
    );
    server.interrupt();
}
