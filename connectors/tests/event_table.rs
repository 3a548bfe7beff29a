mod common;

use common::{any_file_contains, read_all};
use engram_connectors::EventTable;
use engram_schemas::Redacted;
use serde_json::json;

/// An event's canonical JSON: `n` is its number, `user` its owner.
fn event(n: usize, user: &str) -> Vec<u8> {
    json!({"event_id": format!("e{n}"), "tenant": "t1", "user": user,
           "ts": "2025-03-01T10:00:00Z", "kind": "interaction", "role": "user",
           "content": format!("secret-{user}-{n} about the garden")})
    .to_string()
    .into_bytes()
}

fn erase_event(n: usize, user: &str) -> Vec<u8> {
    json!({"event_id": format!("e{n}"), "tenant": "t1", "user": user,
           "ts": "2025-03-01T10:00:00Z", "kind": "control", "action": "erase", "scope": "user"})
    .to_string()
    .into_bytes()
}

#[tokio::test]
async fn appends_are_idempotent_by_offset_and_survive_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.lance");
    let records: Vec<Vec<u8>> = (0..30).map(|n| event(n, "a")).collect();
    {
        let table = EventTable::open(&path).await.unwrap();
        assert_eq!(table.end(), 0);
        assert_eq!(table.append(0, &records[..10]).await.unwrap(), 10);
        // the same batch again (a crash before the Kafka commit): nothing written
        assert_eq!(table.append(0, &records[..10]).await.unwrap(), 0);
        // overlapping: only the new part
        assert_eq!(table.append(5, &records[5..20]).await.unwrap(), 10);
        assert_eq!(table.end(), 20);
        // a gap is refused
        let err = table.append(25, &records[25..]).await.unwrap_err();
        assert!(err.to_string().contains("gap"), "{err}");
        assert_eq!(table.row_count().await.unwrap(), 20);
    }
    let table = EventTable::open(&path).await.unwrap();
    assert_eq!(table.end(), 20);
    let read = table.read(0, 100).await.unwrap();
    let want: Vec<(u64, Vec<u8>)> = records[..20]
        .iter()
        .enumerate()
        .map(|(o, r)| (o as u64, r.clone()))
        .collect();
    assert_eq!(read, want);
    assert_eq!(table.read(3, 7).await.unwrap(), want[3..7].to_vec());
}

#[tokio::test]
async fn many_small_appends_are_compacted_and_read_back_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let table = EventTable::open(&dir.path().join("events.lance"))
        .await
        .unwrap();
    let records: Vec<Vec<u8>> = (0..200).map(|n| event(n, "a")).collect();
    // 100 commits of two records: enough fragments for a compaction
    for (i, pair) in records.chunks(2).enumerate() {
        table.append(2 * i as u64, pair).await.unwrap();
    }
    assert_eq!(table.end(), 200);
    let read = table.read(0, 200).await.unwrap();
    assert_eq!(read.len(), 200);
    for (o, (offset, bytes)) in read.iter().enumerate() {
        assert_eq!(*offset, o as u64);
        assert_eq!(bytes, &records[o]);
    }
}

#[tokio::test]
async fn an_erase_redacts_the_users_records_below_it_and_leaves_no_file_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.lance");
    let table = EventTable::open(&path).await.unwrap();
    let mut records = Vec::new();
    for n in 0..40 {
        records.push(event(n, if n % 3 == 0 { "gone" } else { "kept" }));
    }
    records.push(erase_event(40, "gone"));
    records.push(event(41, "gone")); // after the erase: stays
    for (i, chunk) in records.chunks(7).enumerate() {
        table.append(7 * i as u64, chunk).await.unwrap();
    }
    assert!(any_file_contains(&path, b"secret-gone-3 "));
    let erased = table.erase("t1", Some("gone"), 40).await.unwrap();
    assert_eq!(erased, 14); // n = 0, 3, …, 39

    let read = table.read(0, table.end()).await.unwrap();
    assert_eq!(read.len(), records.len(), "every offset still has a record");
    for (offset, bytes) in &read {
        let o = *offset as usize;
        if o < 40 && o % 3 == 0 {
            let r = Redacted::from_record(bytes).expect("redacted");
            assert_eq!((r.tenant.as_str(), r.event_id), ("t1", format!("e{o}")));
        } else {
            assert_eq!(bytes, &records[o], "offset {o} untouched");
        }
    }
    for n in (0..40).step_by(3) {
        let needle = format!("secret-gone-{n} ");
        assert!(
            !any_file_contains(&path, needle.as_bytes()),
            "{needle} is still on disk"
        );
    }
    // positive controls: the other user's records and the later one are still on disk
    assert!(any_file_contains(&path, b"secret-kept-4 "));
    assert!(any_file_contains(&path, b"secret-gone-41 "));
    // again (after a crash): nothing left to do, nothing changes
    assert_eq!(table.erase("t1", Some("gone"), 40).await.unwrap(), 0);
    assert_eq!(table.read(0, table.end()).await.unwrap(), read);
    // reopened, the end is unchanged and a redelivery of an erased record is not stored
    drop(table);
    let table = EventTable::open(&path).await.unwrap();
    assert_eq!(table.end(), records.len() as u64);
    assert_eq!(table.append(3, &records[3..4]).await.unwrap(), 0);
}

#[tokio::test]
async fn a_log_reads_its_discarded_prefix_from_the_table_across_blocks_and_after_an_erase() {
    use engram_connectors::table_archive::BLOCK;
    use engram_connectors::{EventLog, TableArchive};
    let dir = tempfile::tempdir().unwrap();
    let n = 2 * BLOCK as usize + 100;
    let users = ["keep", "gone"];
    let mut records: Vec<Vec<u8>> = (0..n).map(|i| event(i, users[i % 2])).collect();
    records.push(erase_event(n, "gone"));
    let table = std::sync::Arc::new(EventTable::open(&dir.path().join("events")).await.unwrap());
    let log = std::sync::Arc::new(EventLog::open(&dir.path().join("log")).unwrap());
    log.append(&records).unwrap();
    table.append(0, &records).await.unwrap();
    log.set_archive(std::sync::Arc::new(
        TableArchive::new(table.clone()).unwrap(),
    ));
    let full = log.file_bytes();
    // keep the last 50 in the file
    let base = records.len() as u64 - 50;
    assert_eq!(log.discard_below(base).unwrap(), base);
    assert!(log.file_bytes() * 100 < full);
    let expected: Vec<(u64, Vec<u8>)> = records
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, r)| (i as u64, r))
        .collect();
    // from this async task, and from a plain thread, in chunks that straddle the blocks
    assert_eq!(read_all(&log, 1000), expected);
    let from_thread = {
        let log = log.clone();
        std::thread::spawn(move || read_all(&log, 333))
            .join()
            .unwrap()
    };
    assert_eq!(from_thread, expected);

    // an erase in the table shows through the log, also for blocks read before it
    let secret = format!("secret-gone-{}", BLOCK + 1);
    assert!(String::from_utf8_lossy(&log.read(BLOCK + 1, 1).unwrap()[0].1).contains(&secret));
    table.erase("t1", Some("gone"), n as u64).await.unwrap();
    // (the file's own records are the log's to redact, as an erase does next)
    let after = read_all(&log, 4096);
    assert_eq!(after.len(), records.len());
    for (o, bytes) in &after {
        let user = users[*o as usize % 2];
        if *o < base && user == "gone" {
            assert!(
                Redacted::from_record(bytes).is_some(),
                "offset {o} is not redacted"
            );
        } else {
            assert_eq!(bytes, &records[*o as usize], "offset {o} changed");
        }
    }
}

/// A crash (or a power loss) during the very first commit can leave `_versions` without a
/// manifest: the tables open as not created yet, and the first write creates them.
#[tokio::test]
async fn a_versions_folder_without_a_manifest_opens_as_a_table_to_create() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.lance");
    std::fs::create_dir_all(path.join("_versions")).unwrap();
    std::fs::create_dir_all(path.join("data")).unwrap();
    std::fs::write(path.join("data/left-by-the-crash.lance"), b"partial").unwrap();
    let table = EventTable::open(&path).await.unwrap();
    assert_eq!(table.end(), 0);
    assert_eq!(table.append(0, &[event(0, "a")]).await.unwrap(), 1);
    drop(table);
    let table = EventTable::open(&path).await.unwrap();
    assert_eq!(table.read(0, table.end()).await.unwrap().len(), 1);

    let held = dir.path().join("held.lance");
    std::fs::create_dir_all(held.join("_versions")).unwrap();
    let (table, records) = engram_connectors::HeldTable::open(&held).unwrap();
    assert!(records.is_empty());
    table.replace(&[event(1, "a")]).unwrap();
    let (_, records) = engram_connectors::HeldTable::open(&held).unwrap();
    assert_eq!(records, vec![event(1, "a")]);
}
