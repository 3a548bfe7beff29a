//! Red team: cross-user and cross-tenant attempts against the real server (every tenant route:
//! events, recall, memory, prompt, chat, feedback, export, erase), with concurrent
//! writers. Every request goes over HTTP with an API key; the server decides the tenant from
//! the key. The same user names exist in both tenants, so a tenant mix-up would show.

use engram_tests::{interaction, Server};
use serde_json::{json, Value};
use std::time::Duration;

const TENANTS: [&str; 2] = ["acme", "globex"];
const USERS: [&str; 2] = ["u1", "u2"];

/// The marker every one of `(tenant, user)`'s texts carries.
fn marker(tenant: &str, user: &str) -> String {
    format!("from {tenant}/{user}:")
}

fn note(tenant: &str, user: &str, n: u32) -> Value {
    interaction(
        tenant,
        user,
        &format!("{tenant}-{user}-{n}"),
        &format!("s{}", n / 10),
        n,
        &format!(
            "Note {n} {} my codeword is {tenant}{user}word{n}, keep it secret",
            marker(tenant, user)
        ),
    )
}

/// Texts in a recall or memory answer that are not `(tenant, user)`'s own.
fn foreign_texts(answer: &Value, tenant: &str, user: &str) -> Vec<String> {
    let own = marker(tenant, user);
    let mut texts = Vec::new();
    collect_strings(answer, &mut texts);
    texts
        .into_iter()
        .filter(|t| t.contains("from ") && t.contains('/') && t.contains(':'))
        .filter(|t| TENANTS.iter().any(|tn| t.contains(&format!("from {tn}/"))))
        .filter(|t| !t.contains(&own))
        .collect()
}

/// The other users' markers anywhere in `answer` (a prompt is one string holding many
/// memories, so a check per string would miss one of them next to the user's own).
fn foreign_markers(answer: &Value, tenant: &str, user: &str) -> Vec<String> {
    let text = answer.to_string();
    TENANTS
        .iter()
        .flat_map(|t| USERS.iter().map(move |u| (*t, *u)))
        .filter(|&(t, u)| (t, u) != (tenant, user))
        .map(|(t, u)| marker(t, u))
        .filter(|m| text.contains(m.as_str()))
        .collect()
}

fn collect_strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| collect_strings(x, out)),
        _ => {}
    }
}

#[test]
fn requests_without_a_valid_key_are_refused_and_keys_only_open_their_own_tenant() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let acme = server.key_for("acme");
    let globex = server.key_for("globex");
    let event = note("acme", "u1", 1);
    let recall = json!({"tenant": "acme", "user": "u1", "query": "codeword"});

    for path in ["/v1/events", "/v1/recall", "/v1/memory"] {
        let body = if path == "/v1/events" {
            &event
        } else {
            &recall
        };
        let (status, answer) = server.post_as(None, path, body);
        assert_eq!(status, 401, "{path} without a key: {answer}");
        assert_eq!(answer["error"]["field"], "authorization");
        let (status, _) = server.post_as(Some("engram_not-a-key"), path, body);
        assert_eq!(status, 401, "{path} with a made-up key");
        // another tenant's key
        let (status, answer) = server.post_as(Some(&globex), path, body);
        assert!(
            status == 403 || status == 422,
            "{path} with globex's key for acme: {status} {answer}"
        );
    }
    // globex's key wrote nothing for acme: the event above was refused, field `tenant`
    let (status, answer) = server.post_as(Some(&globex), "/v1/events", &json!([event]));
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["rejected"][0]["field"], "tenant");
    assert_eq!(answer["accepted"], 0);

    // a tenant key is not an admin key, and the admin API refuses a wrong one
    for key in [acme.as_str(), "admin-wrong-key-0000000000"] {
        let (status, _) = server.post_as(
            Some(key),
            "/v1/admin/tenants",
            &json!({"tenant": "intruder"}),
        );
        assert_eq!(status, 401);
    }

    // the key's tenant is used when the body names none
    let (status, answer) = server.post_as(Some(&acme), "/v1/events", &json!([event]));
    assert_eq!(status, 200, "{answer}");
    server.wait_caught_up(Duration::from_secs(60));
    let (status, answer) = server.post_as(
        Some(&acme),
        "/v1/recall",
        &json!({"user": "u1", "query": "codeword"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["results"].as_array().unwrap().len(), 1);
    // globex's own u1 has nothing
    let (status, answer) = server.post_as(
        Some(&globex),
        "/v1/recall",
        &json!({"user": "u1", "query": "codeword"}),
    );
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["results"], json!([]));

    // names that try to widen a filter are refused before they reach Lance
    for user in ["u1' OR '1'='1", "u1\" OR true", "*", "u1%", ""] {
        let (status, answer) = server.post_as(
            Some(&acme),
            "/v1/recall",
            &json!({"user": user, "query": "codeword"}),
        );
        assert_eq!(status, 400, "user {user:?}: {answer}");
        assert_eq!(answer["error"]["field"], "user");
    }

    // a revoked key stops working at once; a rotated one works
    let new_key = server.key_for("acme");
    assert_eq!(new_key, acme);
    let key_id = &acme[..15];
    let resp = reqwest::blocking::Client::new()
        .delete(format!(
            "{}/v1/admin/tenants/acme/keys/{key_id}",
            server.base
        ))
        .bearer_auth(&server.admin_key)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 204);
    let (status, _) = server.post_as(Some(&acme), "/v1/recall", &recall);
    assert_eq!(status, 401, "revoked key still accepted");
}

#[test]
fn concurrent_writers_and_readers_never_see_another_users_or_tenants_memory() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with(dir.path(), &["--workers", "2"]);
    let pairs: Vec<(&str, &str)> = TENANTS
        .iter()
        .flat_map(|t| USERS.iter().map(move |u| (*t, *u)))
        .collect();
    for (t, _) in &pairs {
        server.key_for(t);
    }
    const NOTES: u32 = 40;
    let mut checked = 0usize;
    let mut leaks = Vec::new();
    std::thread::scope(|scope| {
        // one writer per (tenant, user), in batches of 5
        for &(t, u) in &pairs {
            let server = &server;
            scope.spawn(move || {
                for start in (0..NOTES).step_by(5) {
                    let batch: Vec<_> = (start..start + 5).map(|n| note(t, u, n)).collect();
                    let (status, answer) = server.post("/v1/events", &json!(batch));
                    assert_eq!(status, 200, "{answer}");
                }
            });
        }
        // readers ask, while the writers write, for every user's codewords, naming the others
        let readers: Vec<_> = pairs
            .iter()
            .map(|&(t, u)| {
                let server = &server;
                let pairs = &pairs;
                scope.spawn(move || {
                    let mut found = (0usize, Vec::new());
                    for round in 0..12 {
                        let (ot, ou) = pairs[round % pairs.len()];
                        let query = format!("codeword {ot}{ou}word{round} from {ot}/{ou}");
                        let (status, answer) = server.post(
                            "/v1/recall",
                            &json!({"tenant": t, "user": u, "query": query, "k": 50}),
                        );
                        assert_eq!(status, 200, "{answer}");
                        found.0 += answer["results"].as_array().unwrap().len();
                        found.1.extend(foreign_texts(&answer, t, u));
                        let (status, memory) =
                            server.post("/v1/memory", &json!({"tenant": t, "user": u}));
                        assert_eq!(status, 200, "{memory}");
                        found.1.extend(foreign_texts(&memory, t, u));
                        let (status, prompt) = server.post(
                            "/v1/prompt",
                            &json!({"tenant": t, "user": u, "query": query}),
                        );
                        assert_eq!(status, 200, "{prompt}");
                        found.1.extend(foreign_markers(&prompt, t, u));
                        if round % 4 == 0 {
                            let (status, export) =
                                server.post("/v1/export", &json!({"tenant": t, "user": u}));
                            assert_eq!(status, 200, "{export}");
                            found.1.extend(foreign_markers(&export, t, u));
                        }
                        std::thread::sleep(Duration::from_millis(30));
                    }
                    found
                })
            })
            .collect();
        for r in readers {
            let (n, foreign) = r.join().unwrap();
            checked += n;
            leaks.extend(foreign);
        }
    });
    server.wait_caught_up(Duration::from_secs(120));
    // after the writes: every user sees all of their own notes and nothing else
    for &(t, u) in &pairs {
        for &(ot, ou) in &pairs {
            let query = format!("my codeword is {ot}{ou}word7 {}", marker(ot, ou));
            let answer = server.post(
                "/v1/recall",
                &json!({"tenant": t, "user": u, "query": query, "k": 200}),
            );
            assert_eq!(answer.0, 200, "{}", answer.1);
            let results = answer.1["results"].as_array().unwrap();
            assert_eq!(results.len(), NOTES as usize, "{t}/{u} sees all its notes");
            checked += results.len();
            leaks.extend(foreign_texts(&answer.1, t, u));
        }
        let (_, memory) = server.post("/v1/memory", &json!({"tenant": t, "user": u}));
        assert!(
            !memory["facts"].as_array().unwrap().is_empty(),
            "{t}/{u} has facts: {memory}"
        );
        // the prompt and the export after the writes: the user's own, nobody else's
        let (_, prompt) = server.post(
            "/v1/prompt",
            &json!({"tenant": t, "user": u, "query": "what are my codewords"}),
        );
        assert!(
            prompt["prompt"].as_str().unwrap().contains(&marker(t, u)),
            "{t}/{u}'s prompt holds its own notes: {prompt}"
        );
        leaks.extend(foreign_markers(&prompt, t, u));
        let (_, export) = server.post("/v1/export", &json!({"tenant": t, "user": u}));
        assert_eq!(export["episodes"].as_array().unwrap().len(), NOTES as usize);
        leaks.extend(foreign_markers(&export, t, u));
        leaks.extend(foreign_texts(&memory, t, u));
        let facts = memory["facts"].to_string();
        for &(ot, ou) in &pairs {
            if (ot, ou) != (t, u) {
                assert!(
                    !facts.contains(&format!("{ot}{ou}word")),
                    "{t}/{u}'s facts hold {ot}/{ou}'s codeword: {facts}"
                );
            }
        }
    }
    assert!(checked > 600, "only {checked} results checked");
    assert!(
        leaks.is_empty(),
        "{} leaks: {:?}",
        leaks.len(),
        &leaks[..leaks.len().min(5)]
    );
}

#[test]
fn domain_wide_memories_are_shared_only_inside_their_tenant_and_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let shared = |tenant: &str, marker: &str| {
        interaction(
            tenant,
            "_domain",
            &format!("{tenant}-d1"),
            "kb",
            1,
            &format!("Company policy {marker}: refunds are possible within 30 days."),
        )
    };
    // a fact and a summary written for the tenant's domain, too
    let shared_fact = |tenant: &str, marker: &str| {
        json!({"kind": "fact", "event_id": format!("{tenant}-d2"), "tenant": tenant,
               "user": "_domain", "ts": "2025-01-01T00:02:00Z", "subject": "refund policy",
               "attribute": "window", "value": format!("30 days {marker}fact")})
    };
    let shared_summary = |tenant: &str, marker: &str| {
        json!({"kind": "summary", "event_id": format!("{tenant}-d3"), "tenant": tenant,
               "user": "_domain", "ts": "2025-01-01T00:03:00Z",
               "content": format!("Refund policy summary {marker}summary: refunds within 30 days."),
               "covers": [format!("{tenant}-d1")]})
    };
    for (tenant, marker) in [("acme", "zqacmepolicy"), ("globex", "zqglobexpolicy")] {
        let events = json!([
            shared(tenant, marker),
            shared_fact(tenant, marker),
            shared_summary(tenant, marker)
        ]);
        assert_eq!(server.post("/v1/events", &events).0, 200);
        assert_eq!(
            server.post("/v1/events", &json!([note(tenant, "u1", 1)])).0,
            200
        );
    }
    server.wait_caught_up(Duration::from_secs(60));
    let ask = |tenant: &str, include: bool| {
        let (status, body) = server.post(
            "/v1/recall",
            &json!({"tenant": tenant, "user": "u1", "query": "what is the refund policy",
                    "k": 10, "include_domain": include}),
        );
        assert_eq!(status, 200, "{body}");
        body
    };
    let acme = ask("acme", true);
    let text = acme.to_string();
    assert!(text.contains("zqacmepolicy"), "{acme}");
    assert!(
        !text.contains("zqglobexpolicy"),
        "another tenant's domain memory: {acme}"
    );
    let shared_hits: Vec<&Value> = acme["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["domain"] == true)
        .collect();
    assert_eq!(shared_hits.len(), 1);
    // the domain's fact and summary come too, marked, and only the tenant's own
    let facts: Vec<&Value> = acme["facts"].as_array().unwrap().iter().collect();
    assert!(
        facts
            .iter()
            .any(|f| f["domain"] == true && f["value"] == "30 days zqacmepolicyfact"),
        "{acme}"
    );
    let summaries = acme["summaries"].as_array().unwrap();
    assert!(
        summaries.iter().any(|h| h["domain"] == true
            && h["content"]
                .as_str()
                .unwrap()
                .contains("zqacmepolicysummary")),
        "{acme}"
    );
    // not asked for: not there; and a user's own memories are never shared as domain ones
    assert!(!ask("acme", false).to_string().contains("zqacmepolicy"));
    let globex = ask("globex", true).to_string();
    assert!(globex.contains("zqglobexpolicy") && !globex.contains("zqacmepolicy"));
    assert!(!globex.contains(&marker("acme", "u1")));
    // prompts include them, marked
    let (_, prompt) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": "u1", "query": "what is the refund policy"}),
    );
    let text = prompt["prompt"].as_str().unwrap();
    for shared in [
        "shared knowledge, user: Company policy zqacmepolicy",
        "shared knowledge: refund policy window: 30 days zqacmepolicyfact",
        "shared knowledge: Refund policy summary zqacmepolicysummary",
    ] {
        assert!(text.contains(shared), "{shared}: {prompt}");
    }
    assert!(!text.contains("zqglobex"), "{prompt}");
}

#[test]
fn every_tenant_route_refuses_another_tenants_key_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let acme = server.key_for("acme");
    let globex = server.key_for("globex");
    let notes: Vec<Value> = (0..5).map(|n| note("acme", "u1", n)).collect();
    let (status, answer) = server.post_as(Some(&acme), "/v1/events", &json!(notes));
    assert_eq!(status, 200, "{answer}");
    server.wait_caught_up(Duration::from_secs(60));
    let acme_u1_intact = || {
        let (status, answer) = server.post_as(
            Some(&acme),
            "/v1/recall",
            &json!({"user": "u1", "query": "codeword secret", "k": 20}),
        );
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["results"].as_array().unwrap().len(), 5, "{answer}");
        let (_, memory) = server.post_as(Some(&acme), "/v1/memory", &json!({"user": "u1"}));
        assert!(!memory["facts"].as_array().unwrap().is_empty(), "{memory}");
    };
    acme_u1_intact();

    // every route that takes a tenant's data, aimed at acme/u1 with globex's key or none
    let at_acme = |extra: Value| {
        let mut body = json!({"tenant": "acme", "user": "u1"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let attempts = [
        ("/v1/recall", at_acme(json!({"query": "codeword"}))),
        ("/v1/memory", at_acme(json!({}))),
        (
            "/v1/prompt",
            at_acme(json!({"query": "what is my codeword"})),
        ),
        ("/v1/chat", at_acme(json!({"query": "what is my codeword"}))),
        (
            "/v1/feedback",
            at_acme(json!({"message_id": "acme-u1-1", "skill_id": "concise", "reward": -1})),
        ),
        ("/v1/export", at_acme(json!({}))),
        ("/v1/erase", at_acme(json!({}))),
        ("/v1/events", note("acme", "u1", 99)),
    ];
    for (path, body) in &attempts {
        let (status, answer) = server.post_as(None, path, body);
        assert_eq!(status, 401, "{path} without a key: {answer}");
        let (status, answer) = server.post_as(Some(&globex), path, body);
        assert!(
            status == 403 || (*path == "/v1/events" && status == 422),
            "{path} with globex's key for acme: {status} {answer}"
        );
        assert!(
            !answer.to_string().contains("acmeu1word"),
            "{path} answered with acme's data: {answer}"
        );
    }
    // the same names under globex's key are globex's own (empty) user: nothing of acme's
    let (status, export) = server.post_as(Some(&globex), "/v1/export", &json!({"user": "u1"}));
    assert_eq!(status, 200, "{export}");
    assert_eq!(export["episodes"], json!([]), "{export}");
    assert!(
        foreign_texts(&export, "globex", "u1").is_empty(),
        "{export}"
    );
    let (status, prompt) = server.post_as(
        Some(&globex),
        "/v1/prompt",
        &json!({"user": "u1", "query": "what is my codeword"}),
    );
    assert_eq!(status, 200, "{prompt}");
    assert!(!prompt.to_string().contains("acmeu1word"), "{prompt}");
    let (status, receipt) = server.post_as(Some(&globex), "/v1/erase", &json!({"user": "u1"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["tenant"], "globex", "{receipt}");
    // a tenant key cannot erase a tenant through the admin API
    let resp = reqwest::blocking::Client::new()
        .delete(format!("{}/v1/admin/tenants/acme", server.base))
        .bearer_auth(&globex)
        .send()
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);

    server.wait_caught_up(Duration::from_secs(60));
    acme_u1_intact();
}
