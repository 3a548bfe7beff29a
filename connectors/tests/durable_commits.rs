//! Every commit of engram's Lance datasets is durable when it returns, data before manifest
//! (connectors/src/durable_commits.rs), seen through the power-loss journal. A file of its own:
//! the journal is named by an environment variable, set once for this process.

use engram_connectors::durable_commits::SYNC_JOURNAL_ENV;
use engram_connectors::{EventTable, HeldTable};
use serde_json::json;
use std::path::{Path, PathBuf};

fn event(n: usize) -> Vec<u8> {
    json!({"event_id": format!("e{n}"), "tenant": "t1", "user": "a",
           "ts": "2025-03-01T10:00:00Z", "kind": "interaction", "role": "user",
           "content": format!("message {n} about the garden")})
    .to_string()
    .into_bytes()
}

/// Every regular file under `dir`, the version hint left out (Lance lists versions without it).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if !path.ends_with("_versions/latest_version_hint.json") {
                out.push(path);
            }
        }
    }
    out
}

fn journal_lines(journal: &Path) -> Vec<String> {
    std::fs::read_to_string(journal)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn commits_are_journaled_durable_data_before_their_manifest() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal");
    // the only test of this process: no other thread reads the environment meanwhile
    std::env::set_var(SYNC_JOURNAL_ENV, &journal);
    let events = dir.path().join("events.lance");
    let held = dir.path().join("held.lance");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let table = EventTable::open(&events).await.unwrap();
        table.append(0, &[event(0), event(1)]).await.unwrap();
        table.append(2, &[event(2)]).await.unwrap();
    });
    let (held_table, _) = HeldTable::open(&held).unwrap();
    held_table.replace(&[event(7)]).unwrap();
    held_table.replace(&[event(8), event(9)]).unwrap();

    let lines = journal_lines(&journal);
    for dataset in [&events, &held] {
        let present = files_under(dataset);
        assert!(present.len() >= 3, "{present:?}");
        for f in &present {
            assert!(
                lines.iter().any(|l| Path::new(l) == f),
                "{} is on disk but was never made durable; journal: {lines:#?}",
                f.display()
            );
        }
    }
    // each manifest is journaled after a data file of its commit, never before all of them
    let manifests: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i].contains("/_versions/") && lines[i].starts_with(&*events.to_string_lossy())
        })
        .collect();
    assert_eq!(manifests.len(), 2, "one manifest per append: {lines:#?}");
    let data: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            lines[i].contains("/data/") && lines[i].starts_with(&*events.to_string_lossy())
        })
        .collect();
    assert_eq!(data.len(), 2, "one data file per append: {lines:#?}");
    assert!(data[0] < manifests[0] && manifests[0] < data[1] && data[1] < manifests[1]);
}
