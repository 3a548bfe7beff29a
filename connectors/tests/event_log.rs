mod common;

use common::read_all;
use engram_connectors::event_log_check::{check, repair};
use engram_connectors::log_records::Corruption;
use engram_connectors::{EventLog, LogError, RejectLog, Rejection};
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

/// Ten records `event number i, with some words`, each 8 + its length bytes.
fn ten_records(dir: &std::path::Path) -> Vec<String> {
    let records: Vec<String> = (0..10)
        .map(|i| format!("{{\"event\": {i}, \"content\": \"with some words\"}}"))
        .collect();
    EventLog::open(dir).unwrap().append(&records).unwrap();
    records
}

#[test]
fn a_tail_of_zeros_is_a_torn_tail_not_corruption() {
    let dir = tempfile::tempdir().unwrap();
    ten_records(dir.path());
    let path = dir.path().join("events.log");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(&[0u8; 4096]).unwrap();
    drop(f);
    assert_eq!(check(dir.path()).unwrap().corruption, None);
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!((log.end_offset(), log.truncated_bytes()), (10, 4096));
}

#[test]
fn a_corrupt_record_before_good_ones_stops_the_open_and_repair_quarantines_from_it() {
    for damage in ["payload", "length"] {
        let dir = tempfile::tempdir().unwrap();
        let records = ten_records(dir.path());
        let path = dir.path().join("events.log");
        let mut bytes = std::fs::read(&path).unwrap();
        // record 3 starts after three records of 8 + len bytes
        let at: usize = records[..3].iter().map(|r| 8 + r.len()).sum();
        match damage {
            "payload" => bytes[at + 8 + 5] ^= 0x20,
            _ => bytes[at + 2] = 0x7f,
        }
        std::fs::write(&path, &bytes).unwrap();

        let expected = Corruption {
            byte: at as u64,
            offset: 3,
            resumes_at_byte: (at + 8 + records[3].len()) as u64,
            records_after: 6,
        };
        assert_eq!(corruption_on_open(dir.path()), expected, "{damage}");
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "the open changed nothing"
        );
        let report = check(dir.path()).unwrap();
        assert_eq!(report.corruption, Some(expected), "{damage}");
        assert_eq!(
            (report.valid_records, report.bad_bytes),
            (3, (bytes.len() - at) as u64)
        );
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "check changes nothing"
        );

        let repaired = repair(dir.path()).unwrap();
        let kept = std::fs::read(repaired.quarantined_to.as_ref().unwrap()).unwrap();
        assert_eq!(kept, bytes[at..], "the bad bytes and all after them, kept");
        let log = EventLog::open(dir.path()).unwrap();
        assert_eq!(log.end_offset(), 3);
        assert_eq!(log.read(0, 10).unwrap()[2].1, records[2].as_bytes());
        assert_eq!(check(dir.path()).unwrap().bad_bytes, 0);
    }
}

/// The open's error, which must be a corruption of `dir`'s log file.
fn corruption_on_open(dir: &std::path::Path) -> Corruption {
    match EventLog::open(dir) {
        Err(LogError::Corrupt { corruption, path }) => {
            assert_eq!(path, dir.join("events.log"));
            corruption
        }
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("a log with a corrupt record in the middle opened"),
    }
}

#[test]
fn a_corrupt_record_followed_by_good_ones_and_a_torn_tail_is_still_corruption() {
    // a crash during the last append after an earlier record went bad: the torn tail must
    // not hide the good records between them (cutting at the corrupt record would lose them)
    let dir = tempfile::tempdir().unwrap();
    let records = ten_records(dir.path());
    let path = dir.path().join("events.log");
    let mut bytes = std::fs::read(&path).unwrap();
    let at: usize = records[..3].iter().map(|r| 8 + r.len()).sum();
    bytes[at + 8 + 5] ^= 0x20;
    let torn_record = format!("{{\"event\": 10, \"content\": \"{}\"}}", "w".repeat(200));
    bytes.extend_from_slice(&(torn_record.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(torn_record.as_bytes()).to_le_bytes());
    bytes.extend_from_slice(&torn_record.as_bytes()[..50]);
    std::fs::write(&path, &bytes).unwrap();
    let expected = Corruption {
        byte: at as u64,
        offset: 3,
        resumes_at_byte: (at + 8 + records[3].len()) as u64,
        records_after: 6,
    };
    assert_eq!(corruption_on_open(dir.path()), expected);
    assert_eq!(check(dir.path()).unwrap().corruption, Some(expected));
}

#[test]
fn a_long_log_corrupt_near_its_start_is_checked_in_one_pass() {
    // 20,000 records (about 2.6 MB) after a corrupt one: every byte position is a candidate
    // start, and trying each by following its chain to the end was quadratic (hours); the
    // search is linear, so this finishes like the other tests
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<String> = (0..20_000)
        .map(|i| format!("{{\"event\": {i}, \"content\": \"message number {i} with words\"}}"))
        .collect();
    EventLog::open(dir.path())
        .unwrap()
        .append(&records)
        .unwrap();
    let path = dir.path().join("events.log");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8 + 3] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let corruption = corruption_on_open(dir.path());
    assert_eq!((corruption.byte, corruption.offset), (0, 0));
    assert_eq!(corruption.resumes_at_byte, (8 + records[0].len()) as u64);
    assert_eq!(corruption.records_after, 19_999);
}

#[test]
fn a_header_naming_an_impossible_base_offset_is_corruption_not_an_overflow() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.log");
    let record = b"{\"event\": 1}";
    let mut bytes = b"ENGRAMLG".to_vec();
    bytes.extend_from_slice(&u64::MAX.to_le_bytes());
    bytes.extend_from_slice(&(record.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(record).to_le_bytes());
    bytes.extend_from_slice(record);
    std::fs::write(&path, &bytes).unwrap();
    let corruption = corruption_on_open(dir.path());
    assert_eq!((corruption.byte, corruption.offset), (0, 0));
    assert_eq!(
        (corruption.resumes_at_byte, corruption.records_after),
        (16, 1)
    );
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
        log.record(None, &[r.clone(), r.clone()]).unwrap();
        assert_eq!(log.count(), 2);
    }
    let log = RejectLog::open(dir.path()).unwrap();
    assert_eq!(log.count(), 2);
    let all = log.read_all().unwrap();
    assert_eq!(all[0].field, "ts");
    assert_eq!(all[1].original, r.original);
}

/// An archive that holds a copy of every record appended, as the events table does.
#[derive(Default)]
struct Mirror(std::sync::Mutex<Vec<Vec<u8>>>);

impl engram_connectors::event_log::ArchivedRecords for Mirror {
    fn read(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, String> {
        let all = self.0.lock().unwrap();
        if to as usize > all.len() {
            return Err(format!("holds {} records", all.len()));
        }
        Ok((from..to).map(|o| (o, all[o as usize].clone())).collect())
    }
}

/// A mirror that holds `records` already.
fn mirror_of<R: AsRef<[u8]>>(records: &[R]) -> std::sync::Arc<Mirror> {
    let mirror = Mirror::default();
    mirror
        .0
        .lock()
        .unwrap()
        .extend(records.iter().map(|r| r.as_ref().to_vec()));
    std::sync::Arc::new(mirror)
}

#[test]
fn records_below_a_discarded_prefix_are_read_from_the_archive_and_the_base_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<String> = (0..10).map(|i| format!("record {i}")).collect();
    let mirror = mirror_of(&records);
    {
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&records).unwrap();
        let full = log.file_bytes();
        assert!(
            log.discard_below(6).is_err(),
            "no archive: the prefix may not go"
        );
        assert!(log.set_archive(mirror.clone()));
        assert_eq!(log.discard_below(6).unwrap(), 6);
        assert_eq!(log.discard_below(4).unwrap(), 0, "already gone");
        assert_eq!((log.base_offset(), log.end_offset()), (6, 10));
        assert!(log.file_bytes() < full);
        // a read that starts below the base stops at it
        assert_eq!(log.read(4, 100).unwrap().len(), 2);
        let expected: Vec<(u64, Vec<u8>)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (i as u64, r.as_bytes().to_vec()))
            .collect();
        assert_eq!(read_all(&log, 3), expected);
        assert_eq!(log.append(&["record 10"]).unwrap(), 10);
    }
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!((log.base_offset(), log.end_offset()), (6, 11));
    let err = log.read(0, 1).unwrap_err().to_string();
    assert!(err.contains("archive"), "a clear error: {err}");
    assert_eq!(log.read(6, 1).unwrap(), vec![(6, b"record 6".to_vec())]);
    assert_eq!(log.read(10, 5).unwrap(), vec![(10, b"record 10".to_vec())]);
}

#[test]
fn a_log_behind_its_archive_continues_at_the_archive_end() {
    let dir = tempfile::tempdir().unwrap();
    let mirror = mirror_of(&(0..20u8).map(|i| vec![b'a' + i]).collect::<Vec<_>>());
    let log = EventLog::open(dir.path()).unwrap();
    log.append(&["a", "b", "c"]).unwrap();
    log.set_archive(mirror);
    assert_eq!(log.discard_below(20).unwrap(), 3);
    assert_eq!((log.base_offset(), log.end_offset()), (20, 20));
    assert!(log.wait_for(19, Duration::from_millis(1)));
    assert_eq!(log.append(&["u"]).unwrap(), 20);
    assert_eq!(read_all(&log, 7).len(), 21);
}

#[test]
fn redaction_changes_the_records_the_file_holds_and_leaves_archived_ones_to_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let records = ["zero", "one secret", "two", "three", "four secret"];
    let mirror = mirror_of(&records);
    let log = EventLog::open(dir.path()).unwrap();
    log.append(&records).unwrap();
    log.set_archive(mirror);
    log.discard_below(3).unwrap();
    assert_eq!(log.redact(&[1, 4], |_| b"gone".to_vec()).unwrap(), 1);
    drop(log);
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!(log.read(3, 5).unwrap()[1].1, b"gone       ".to_vec());
    assert_eq!(log.read(3, 1).unwrap()[0].1, b"three".to_vec());
}

#[test]
fn a_discard_cut_short_before_its_rename_leaves_the_log_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    {
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&["first", "second"]).unwrap();
    }
    // the crash: the replacement file was half written
    std::fs::write(dir.path().join("events.compact"), b"ENGRAMLG\x01").unwrap();
    let log = EventLog::open(dir.path()).unwrap();
    assert_eq!((log.base_offset(), log.end_offset()), (0, 2));
    assert!(!dir.path().join("events.compact").exists());
    assert_eq!(log.read(1, 1).unwrap()[0].1, b"second".to_vec());
}

#[test]
fn appends_discards_reads_and_reopens_in_any_order_keep_one_sequence_of_offsets() {
    use rand::{Rng, SeedableRng};
    for seed in 0..20u64 {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let dir = tempfile::tempdir().unwrap();
        let mirror = std::sync::Arc::new(Mirror::default());
        let mut log = EventLog::open(dir.path()).unwrap();
        log.set_archive(mirror.clone());
        let mut expected: Vec<(u64, Vec<u8>)> = Vec::new();
        for step in 0..60 {
            match rng.gen_range(0..10) {
                0..=4 => {
                    let batch: Vec<Vec<u8>> = (0..rng.gen_range(1..6))
                        .map(|i| format!("s{seed} step {step} #{i}").into_bytes())
                        .collect();
                    let first = log.append(&batch).unwrap();
                    assert_eq!(first, expected.len() as u64);
                    mirror.0.lock().unwrap().extend(batch.iter().cloned());
                    expected.extend(
                        batch
                            .into_iter()
                            .enumerate()
                            .map(|(i, b)| (first + i as u64, b)),
                    );
                }
                5..=7 => {
                    // the archive holds everything; discard up to any point of it
                    let (before, to) =
                        (log.base_offset(), rng.gen_range(0..=expected.len() as u64));
                    log.discard_below(to).unwrap();
                    assert_eq!(log.base_offset(), before.max(to));
                }
                8 => {
                    drop(log);
                    log = EventLog::open(dir.path()).unwrap();
                    log.set_archive(mirror.clone());
                }
                _ => {
                    let from = rng.gen_range(0..=expected.len());
                    let got = log.read(from as u64, rng.gen_range(1..8)).unwrap();
                    assert_eq!(got[..], expected[from..from + got.len()]);
                }
            }
            assert_eq!(log.end_offset(), expected.len() as u64);
            assert_eq!(
                read_all(&log, rng.gen_range(1..9)),
                expected,
                "seed {seed} step {step}"
            );
        }
    }
}

#[test]
fn appends_go_on_while_a_concurrent_thread_discards() {
    let dir = tempfile::tempdir().unwrap();
    let mirror = std::sync::Arc::new(Mirror::default());
    let log = std::sync::Arc::new(EventLog::open(dir.path()).unwrap());
    log.set_archive(mirror.clone());
    let appender = {
        let (log, mirror) = (log.clone(), mirror.clone());
        std::thread::spawn(move || {
            for i in 0..400u32 {
                let record = format!("r{i}");
                // the archive first, as the events table is ahead of any discard
                mirror.0.lock().unwrap().push(record.clone().into_bytes());
                assert_eq!(log.append(&[record]).unwrap(), i as u64);
            }
        })
    };
    while !appender.is_finished() {
        let end = log.end_offset();
        log.discard_below(end / 2).unwrap();
        let got = read_all(&log, 16);
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, (o, b))| *o == i as u64 && *b == format!("r{i}").into_bytes()));
    }
    appender.join().unwrap();
    assert_eq!(read_all(&log, 50).len(), 400);
}
