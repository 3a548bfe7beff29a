//! The reject log through the real server: rejected inputs are kept per tenant (those no
//! tenant can be attributed to in `_unknown`), each file capped and rotated, each input cut
//! with its length and hash kept; an erase removes a user's rejected inputs from every rotated
//! file; an erase of a user with no data reads nothing.

use chrono::Utc;
use engram_tests::{files_containing, reject_records, Server};
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// `log.reject_max_bytes` of the test server.
const CAP: u64 = 32 * 1024;

fn bad_event(tenant: &str, user: &str, id: String, marker: &str) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": tenant, "user": user,
           "ts": Utc::now().to_rfc3339(), "role": "narrator",
           "content": format!("{marker} {}", "x".repeat(900))})
}

fn good_event(tenant: &str, user: &str, id: String) -> Value {
    json!({"kind": "interaction", "event_id": id, "tenant": tenant, "user": user,
           "ts": Utc::now().to_rfc3339(), "role": "user", "session": "s",
           "content": format!("An ordinary message number {id}.")})
}

/// The reject files under `data`, relative to `log/rejects`, with their sizes.
fn reject_files(data: &Path) -> Vec<(String, u64)> {
    let root = data.join("log/rejects");
    let mut out = Vec::new();
    for dir in [root.clone(), root.join("tenants")] {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            if e.file_type().unwrap().is_file() {
                let rel = e.path().strip_prefix(&root).unwrap().display().to_string();
                out.push((rel, e.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input");
    std::fs::write(&path, bytes).unwrap();
    let out = std::process::Command::new("sha256sum")
        .arg(&path)
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_string()
}

/// Posts 40 bodies of 25 bad events of acme (alice and bob in turn), 3 of globex, a malformed
/// 100 KB body naming acme's alice (sent with the key of the harness's tenant) and, with the admin key, an event of a tenant that does not
/// exist; returns the malformed body and how many inputs were rejected.
fn post_bad_input(server: &Server) -> (String, u64) {
    for b in 0..40 {
        let body: Vec<Value> = (0..25)
            .map(|i| {
                let user = ["alice", "bob"][i % 2];
                bad_event(
                    "acme",
                    user,
                    format!("{user}-{b}-{i}"),
                    &format!("zq{user}b{b}"),
                )
            })
            .collect();
        let (status, answer) = server.post("/v1/events", &json!(body));
        assert_eq!(status, 422, "{answer}");
        assert_eq!(answer["rejected"].as_array().unwrap().len(), 25);
    }
    for i in 0..3 {
        let bad = bad_event("globex", "gina", format!("g{i}"), "zqglobex");
        assert_eq!(server.post("/v1/events", &bad).0, 422);
    }
    let malformed = format!(
        "{{\"tenant\": \"acme\", \"user\": \"alice\", \"content\": \"zqlong {}",
        "y".repeat(100_000)
    );
    assert_eq!(server.post_raw("/v1/events", &malformed).0, 422);
    let admin = Some(server.admin_key.as_str());
    let mut stray = good_event("nosuch", "nobody", "n1".into());
    stray["content"] = json!("zqstray");
    let (status, answer) = server.post_as(admin, "/v1/admin/events", &stray);
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["rejected"][0]["field"], "tenant", "{answer}");
    (malformed, 40 * 25 + 3 + 1 + 1)
}

/// Each tenant's files are its own, under the cap, rotated twice at most; the oldest rejects
/// are gone, the newest kept; the long input is cut with its length and hash.
fn assert_files_per_tenant_capped_and_rotated(data: &Path, malformed: &str) {
    let files = reject_files(data);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "_unknown.jsonl",
            "tenants/acme.jsonl",
            "tenants/acme.jsonl.1",
            "tenants/acme.jsonl.2",
            "tenants/globex.jsonl",
            "tenants/harness.jsonl"
        ],
        "{files:?}"
    );
    for (name, bytes) in &files {
        assert!(*bytes <= CAP, "{name}: {bytes} bytes");
    }
    let records = reject_records(data);
    let of = |file: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|(f, _)| f.starts_with(file))
            .map(|(_, r)| r)
            .collect()
    };
    let acme = of("tenants/acme.jsonl");
    assert!(acme.len() < 200, "{} acme rejects kept", acme.len());
    let text = serde_json::to_string(&acme).unwrap();
    assert!(text.contains("zqaliceb39") && !text.contains("zqaliceb0 "));
    assert!(!text.contains("zqglobex") && !text.contains("zqstray"));
    assert_eq!(of("tenants/globex.jsonl").len(), 3);
    let stray = of("_unknown.jsonl");
    assert_eq!(stray.len(), 1);
    assert!(stray[0]["original"].as_str().unwrap().contains("zqstray"));
    // not JSON, so the harness sent it with the key of its own tenant
    let long = of("tenants/harness.jsonl");
    let long = long
        .iter()
        .find(|r| r["original"].as_str().unwrap().contains("zqlong"))
        .expect("the malformed body is kept");
    assert_eq!(long["users"], json!(["alice"]), "named in its text");
    assert_eq!(long["original"].as_str().unwrap().len(), 4096);
    assert_eq!(long["original_bytes"], malformed.len());
    assert_eq!(long["original_sha256"], sha256_hex(malformed.as_bytes()));
    assert_eq!(long["truncated"], true);
}

#[test]
fn many_bad_events_leave_per_tenant_reject_files_under_the_cap_and_an_erase_clears_them() {
    let dir = tempfile::tempdir().unwrap();
    let env = [
        ("ENGRAM_REJECT_MAX_BYTES", "32768"),
        ("ENGRAM_REJECT_KEEP_FILES", "2"),
    ];
    let server = Server::start_with_env(dir.path(), &[], &env);
    let (malformed, rejected) = post_bad_input(&server);
    assert_files_per_tenant_capped_and_rotated(dir.path(), &malformed);
    assert_eq!(server.status()["rejected"], rejected);
    erase_and_check_the_reject_files(&server);
    // the files stay as they are across a restart
    let data = dir.path().to_path_buf();
    drop(server);
    let server = Server::start_with_env(&data, &[], &env);
    assert!(files_containing(&data.join("log/rejects"), "zqalice").is_empty());
    assert!(!files_containing(&data.join("log/rejects"), "zqbob").is_empty());
    assert!(reject_files(&data).iter().all(|(_, b)| *b <= CAP));
    drop(server);
}

/// An erase of someone no reject names reads no reject file; alice's erase removes hers from
/// every rotated file (the malformed body, which names her without being an event, too) and
/// leaves bob's.
fn erase_and_check_the_reject_files(server: &Server) {
    let data = &server.data_dir;
    let read_before = server.status()["control_bytes_read"]["rejects"].clone();
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "carol"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["rejections_removed"], 0, "{receipt}");
    assert_eq!(
        server.status()["control_bytes_read"]["rejects"],
        read_before
    );
    let alices = reject_records(data)
        .iter()
        .filter(|(_, r)| r["original"].as_str().unwrap().contains("\"alice\""))
        .count();
    assert!(alices > 0);
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["rejections_removed"], alices, "{receipt}");
    assert!(files_containing(&data.join("log/rejects"), "zqalice").is_empty());
    assert!(files_containing(&data.join("log/rejects"), "zqlong").is_empty());
    assert!(!files_containing(&data.join("log/rejects"), "zqbob").is_empty());
}

/// Posts `n` good events of `(tenant, user)` in one body.
fn send_good(server: &Server, tenant: &str, user: &str, n: usize) {
    let body: Vec<Value> = (0..n)
        .map(|i| good_event(tenant, user, format!("{user}-ok-{i}")))
        .collect();
    let (status, answer) = server.post("/v1/events", &json!(body));
    assert_eq!(status, 200, "{answer}");
}

#[test]
fn an_erase_reads_only_the_log_records_of_the_erased_and_none_for_a_stranger() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    send_good(&server, "acme", "alice", 5);
    for _ in 0..4 {
        send_good(&server, "acme", "bob", 100);
    }
    server.wait_caught_up(Duration::from_secs(120));
    let log_read = || {
        server.status()["control_bytes_read"]["log"]
            .as_u64()
            .unwrap()
    };
    let before = log_read();
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "carol"}));
    assert_eq!(status, 200, "{receipt}");
    assert_eq!(receipt["log_records_redacted"], 0, "{receipt}");
    assert_eq!(log_read(), before, "an erase of a stranger reads no record");
    let (status, receipt) = server.post("/v1/erase", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(status, 200, "{receipt}");
    let read = log_read() - before;
    // alice's five records, by the erasure task and the one worker: a small part of the log
    let log_bytes: u64 = server.status()["log_end"].as_u64().unwrap() * 150;
    assert!(read > 0, "alice's records were read");
    assert!(
        read * 10 < log_bytes,
        "{read} bytes read of about {log_bytes}"
    );
    let (_, export) = server.post("/v1/export", &json!({"tenant": "acme", "user": "alice"}));
    assert_eq!(export["episodes"], json!([]), "{export}");
}
