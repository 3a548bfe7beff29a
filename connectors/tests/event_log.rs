use engram_connectors::{EventLog, RejectLog, Rejection};
use std::io::Write;
use std::time::Duration;

#[test]
fn appended_records_are_read_back_in_order_after_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = EventLog::open(dir.path()).unwrap();
        assert_eq!(log.append(&["a", "bb"]).unwrap(), 0);
        assert_eq!(log.append(&["ccc"]).unwrap(), 2);
        assert_eq!(log.end_offset(), 3);
        let got = log.read(1, 10).unwrap();
        assert_eq!(got, vec![(1, b"bb".to_vec()), (2, b"ccc".to_vec())]);
    }
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!(log.end_offset(), 3);
    assert_eq!(log.truncated_bytes(), 0);
    let all: Vec<Vec<u8>> = log
        .read(0, 100)
        .unwrap()
        .into_iter()
        .map(|(_, b)| b)
        .collect();
    assert_eq!(all, vec![b"a".to_vec(), b"bb".to_vec(), b"ccc".to_vec()]);
    assert!(log.read(4, 1).is_err(), "reading past the end is an error");
    assert!(log.read(3, 1).unwrap().is_empty());
}

#[test]
fn a_torn_or_corrupt_tail_is_cut_off_and_later_appends_follow_the_good_records() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&["first", "second"]).unwrap();
    }
    let path = dir.path().join("events.log");
    let good_len = std::fs::metadata(&path).unwrap().len();
    // a crash in the middle of writing a third record: header and half the payload
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(&100u32.to_le_bytes()).unwrap();
    f.write_all(&0u32.to_le_bytes()).unwrap();
    f.write_all(b"half").unwrap();
    drop(f);
    {
        let log = EventLog::open(dir.path()).unwrap();
        assert_eq!(log.end_offset(), 2);
        assert_eq!(log.truncated_bytes(), 12);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), good_len);
        assert_eq!(log.append(&["third"]).unwrap(), 2);
    }
    // flip a byte of the last record: its checksum no longer matches
    let mut bytes = std::fs::read(&path).unwrap();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!(log.end_offset(), 2);
    assert_eq!(log.read(0, 5).unwrap()[1].1, b"second".to_vec());
}

#[test]
fn wait_for_wakes_on_append() {
    let dir = tempfile::tempdir().unwrap();
    let log = std::sync::Arc::new(EventLog::open(dir.path()).unwrap());
    assert!(!log.wait_for(0, Duration::from_millis(10)));
    let writer = {
        let log = log.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            log.append(&["x"]).unwrap();
        })
    };
    assert!(log.wait_for(0, Duration::from_secs(10)));
    writer.join().unwrap();
}

#[test]
fn rejections_are_kept_with_reason_and_original_and_counted_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let r = Rejection {
        source: "http".into(),
        field: "ts".into(),
        reason: "not a timestamp".into(),
        original: "{\"ts\": \"yesterday\"}".into(),
        rejected_at: chrono::Utc::now(),
    };
    {
        let log = RejectLog::open(dir.path()).unwrap();
        log.record(&[r.clone(), r.clone()]).unwrap();
        assert_eq!(log.count(), 2);
    }
    let log = RejectLog::open(dir.path()).unwrap();
    assert_eq!(log.count(), 2);
    let all = log.read_all().unwrap();
    assert_eq!(all[0].field, "ts");
    assert_eq!(all[1].original, r.original);
}
