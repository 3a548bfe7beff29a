use super::*;

fn rejection(original: &str) -> Rejection {
    Rejection {
        source: "http".into(),
        field: "role".into(),
        reason: "bad role".into(),
        original: original.into(),
        rejected_at: "2025-01-01T00:00:00Z".parse().unwrap(),
    }
}

fn event(tenant: &str, user: &str, i: usize) -> String {
    format!(r#"{{"tenant":"{tenant}","user":"{user}","role":"narrator","content":"n{i:04}"}}"#)
}

/// The bytes one stored line of `original` takes.
fn line_bytes(original: &str) -> u64 {
    serde_json::to_string(&RejectRecord::of(&rejection(original)))
        .unwrap()
        .len() as u64
        + 1
}

#[test]
fn a_file_is_rotated_before_it_passes_the_cap_and_only_keep_files_rotations_stay() {
    let dir = tempfile::tempdir().unwrap();
    let line = line_bytes(&event("acme", "alice", 0));
    // three records fit, a fourth would pass the cap
    let limits = RejectLimits {
        max_bytes: 3 * line + line / 2,
        keep_files: 2,
    };
    let log = RejectLog::open_with(dir.path(), limits).unwrap();
    // 13 records: files of 3, the newest 1 in the current file; .1 and .2 kept, the rest gone
    for i in 0..13 {
        log.record(None, &[rejection(&event("acme", "alice", i))])
            .unwrap();
    }
    let files = log.files();
    let names: Vec<String> = files
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["acme.jsonl", "acme.jsonl.1", "acme.jsonl.2"]);
    for (path, bytes) in &files {
        let on_disk = std::fs::metadata(path).unwrap().len();
        assert_eq!(on_disk, *bytes, "{}", path.display());
        assert!(on_disk <= limits.max_bytes, "{}: {on_disk}", path.display());
    }
    let sizes: Vec<u64> = files.iter().map(|(_, b)| b / line).collect();
    assert_eq!(sizes, [1, 3, 3]);
    // the newest seven, oldest first
    let kept: Vec<String> = log
        .read_all()
        .unwrap()
        .iter()
        .map(|r| r.original[r.original.len() - 7..r.original.len() - 2].to_string())
        .collect();
    assert_eq!(
        kept,
        ["n0006", "n0007", "n0008", "n0009", "n0010", "n0011", "n0012"]
    );
    // one batch larger than the cap rotates inside the batch too
    let batch: Vec<Rejection> = (13..20)
        .map(|i| rejection(&event("acme", "alice", i)))
        .collect();
    log.record(None, &batch).unwrap();
    let sizes: Vec<u64> = log.files().iter().map(|(_, b)| b / line).collect();
    assert_eq!(sizes, [2, 3, 3]);
    // reopened with fewer rotations kept: the oldest is deleted
    drop(log);
    let limits = RejectLimits {
        keep_files: 1,
        ..limits
    };
    let log = RejectLog::open_with(dir.path(), limits).unwrap();
    assert_eq!(log.files().len(), 2);
    assert_eq!(log.count(), 5);
}

#[test]
fn a_long_input_is_cut_with_its_length_and_hash_kept() {
    let dir = tempfile::tempdir().unwrap();
    let log = RejectLog::open(dir.path()).unwrap();
    // a 3-byte character straddles the cut
    let long = format!(
        "{}€{}",
        "x".repeat(MAX_ORIGINAL_BYTES - 1),
        "y".repeat(10_000)
    );
    log.record(Some("acme"), &[rejection(&long), rejection("short")])
        .unwrap();
    let all = log.read_all().unwrap();
    assert_eq!(all[0].original, "x".repeat(MAX_ORIGINAL_BYTES - 1));
    assert_eq!(all[0].original_bytes, long.len());
    assert_eq!(all[0].original_bytes, MAX_ORIGINAL_BYTES - 1 + 3 + 10_000);
    assert!(all[0].truncated);
    assert_eq!(
        all[0].original_sha256,
        hex::encode(Sha256::digest(long.as_bytes()))
    );
    assert_eq!(all[1].original, "short");
    assert_eq!(all[1].original_bytes, 5);
    assert!(!all[1].truncated);
    let on_disk = std::fs::metadata(dir.path().join("rejects/tenants/acme.jsonl"))
        .unwrap()
        .len();
    assert!(on_disk < 2 * MAX_ORIGINAL_BYTES as u64, "{on_disk} bytes");
}

#[test]
fn rejects_are_filed_by_submitter_else_a_known_named_tenant_else_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let log = RejectLog::open(dir.path()).unwrap();
    log.set_known_tenants(Box::new(|t| t == "acme" || t == "globex"));
    // a key's rejects go to its tenant's file whatever they name
    log.record(Some("globex"), &[rejection(&event("acme", "alice", 0))])
        .unwrap();
    log.record(
        None,
        &[
            rejection(&event("acme", "alice", 1)),
            rejection(&event("nosuch", "alice", 2)),
            rejection(&event("bad/name", "alice", 3)),
            rejection("not json at all"),
        ],
    )
    .unwrap();
    let mut names: Vec<(String, u64)> = log
        .files()
        .iter()
        .map(|(p, b)| {
            let name = p.strip_prefix(log.dir()).unwrap().display().to_string();
            (name, *b)
        })
        .collect();
    names.sort();
    let files: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        files,
        [
            "_unknown.jsonl",
            "tenants/acme.jsonl",
            "tenants/globex.jsonl"
        ]
    );
    assert_eq!(log.count(), 5);
    let unknown = log.read_file(&log.dir().join("_unknown.jsonl")).unwrap();
    assert_eq!(unknown.len(), 3);
}

#[test]
fn an_erase_removes_the_users_rejects_from_every_rotated_file_and_reads_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let line = line_bytes(&event("acme", "alice", 0));
    let limits = RejectLimits {
        max_bytes: 2 * line + line / 2,
        keep_files: 3,
    };
    let log = RejectLog::open_with(dir.path(), limits).unwrap();
    log.set_known_tenants(Box::new(|t| t == "acme" || t == "globex"));
    for i in 0..6 {
        let user = ["alice", "bob"][i % 2];
        log.record(Some("acme"), &[rejection(&event("acme", user, i))])
            .unwrap();
    }
    // no tenant named, filed under acme by its key: alice's by the user it names
    log.record(
        Some("acme"),
        &[rejection(r#"{"user":"alice","content":"no tenant"}"#)],
    )
    .unwrap();
    // not JSON, but naming her
    log.record(Some("acme"), &[rejection(r#"{"user": "alice", "ts": "#)])
        .unwrap();
    // globex's alice is someone else
    log.record(Some("globex"), &[rejection(&event("globex", "alice", 9))])
        .unwrap();
    assert_eq!(log.count(), 9);
    // nobody's: nothing read
    assert_eq!(log.erase("acme", Some("carol")).unwrap(), 0);
    assert_eq!(log.erase("initech", None).unwrap(), 0);
    assert_eq!(log.erase_bytes_read(), 0);
    assert_eq!(log.erase("acme", Some("alice")).unwrap(), 5);
    assert!(log.erase_bytes_read() > 0);
    let left: Vec<RejectRecord> = log.read_all().unwrap();
    assert_eq!(left.len(), 4);
    assert!(left
        .iter()
        .all(|r| !r.original.contains("alice") || r.tenants == ["globex"]));
    // reopened, the index is rebuilt: a second erase finds nothing and reads nothing
    drop(log);
    let log = RejectLog::open_with(dir.path(), limits).unwrap();
    assert_eq!(log.count(), 4);
    assert_eq!(log.erase("acme", Some("alice")).unwrap(), 0);
    assert_eq!(log.erase_bytes_read(), 0);
    // a tenant erase takes its files whole
    assert_eq!(log.erase("acme", None).unwrap(), 3);
    assert!(!log.dir().join("tenants/acme.jsonl").exists());
    assert_eq!(log.files().len(), 1);
    assert_eq!(log.count(), 1);
}

#[test]
fn the_single_file_of_older_versions_moves_into_per_tenant_files() {
    let dir = tempfile::tempdir().unwrap();
    let old = |original: &str| {
        serde_json::json!({"source": "http", "field": "role", "reason": "bad",
            "original": original, "rejected_at": "2025-01-01T00:00:00Z"})
        .to_string()
    };
    std::fs::write(
        dir.path().join("rejects.jsonl"),
        format!(
            "{}\n{}\n",
            old(&event("acme", "alice", 0)),
            old("{\"event_id\": ")
        ),
    )
    .unwrap();
    let log = RejectLog::open(dir.path()).unwrap();
    assert!(!dir.path().join("rejects.jsonl").exists());
    assert_eq!(log.count(), 2);
    assert_eq!(log.files().len(), 2);
    assert_eq!(log.erase("acme", Some("alice")).unwrap(), 1);
    drop(log);
    assert_eq!(RejectLog::open(dir.path()).unwrap().count(), 1);
}
