//! The event log's record decoder (connectors/src/log_records.rs, included by path): a scan of
//! any bytes never reads past them and yields only records whose length and crc32 hold, chained
//! from the start; a corrupt stretch it reports is followed by valid records to the end.
//!
//! Input whose first byte is odd is a recipe instead: payloads written as a well-formed log
//! file (with or without a base-offset header), then one byte flipped or the file cut, so that
//! scans of files with valid checksums are exercised too: every record before the damage is read
//! and the scan stops where the damaged record starts.
#![no_main]

#[allow(dead_code)]
#[path = "../../connectors/src/log_records.rs"]
mod log_records;

use libfuzzer_sys::fuzz_target;
use log_records::{corruption_in, scan_bytes, FILE_HEADER, HEADER, MAGIC, MAX_RECORD_BYTES};

fn u32_at(data: &[u8], at: usize) -> usize {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize
}

/// The record at `at`, if it is a valid one: its end.
fn record_end(data: &[u8], at: usize) -> Option<usize> {
    if at + HEADER > data.len() {
        return None;
    }
    let len = u32_at(data, at);
    let end = at + HEADER + len;
    let ok = len > 0
        && len <= MAX_RECORD_BYTES
        && end <= data.len()
        && crc32fast::hash(&data[at + HEADER..end]) == u32_at(data, at + 4) as u32;
    ok.then_some(end)
}

/// Checks what a scan of `data` must satisfy; returns the record positions.
fn check_scan(data: &[u8]) -> Vec<u64> {
    let (base, positions, valid_len) = scan_bytes(data);
    let has_header = data.len() >= FILE_HEADER as usize && data[..8] == MAGIC[..];
    let mut at = if has_header { FILE_HEADER as usize } else { 0 };
    assert_eq!(
        base,
        if has_header {
            u64::from_le_bytes(data[8..16].try_into().unwrap())
        } else {
            0
        }
    );
    for &p in &positions {
        assert_eq!(p as usize, at, "records are chained from the start");
        at = record_end(data, at).expect("a record the scan yields is valid");
    }
    assert_eq!(valid_len as usize, at);
    assert!(valid_len as usize <= data.len());
    assert_eq!(
        record_end(data, at),
        None,
        "the scan stops only at an invalid record"
    );
    if let Some(c) = corruption_in(data, base, positions.len(), valid_len) {
        assert_eq!(c.byte, valid_len);
        assert_eq!(c.offset, base.wrapping_add(positions.len() as u64));
        let mut at = c.resumes_at_byte as usize;
        assert!(at > valid_len as usize);
        for _ in 0..c.records_after {
            at = record_end(data, at).expect("the records after a corruption are valid");
        }
        assert_eq!(at, data.len(), "they run to the end of the file");
    }
    positions
}

/// A log file of `payloads` (with a header naming `base` when given) and its record starts.
fn write_file(payloads: &[&[u8]], base: Option<u64>) -> (Vec<u8>, Vec<usize>) {
    let mut file = Vec::new();
    if let Some(base) = base {
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&base.to_le_bytes());
    }
    let mut starts = Vec::new();
    for p in payloads {
        starts.push(file.len());
        file.extend_from_slice(&(p.len() as u32).to_le_bytes());
        file.extend_from_slice(&crc32fast::hash(p).to_le_bytes());
        file.extend_from_slice(p);
    }
    (file, starts)
}

/// `[flags][damage: 2 bytes][payloads separated by 0xff]`.
fn recipe(data: &[u8]) {
    let Some((&[flags, d0, d1], rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let payloads: Vec<&[u8]> = rest
        .split(|&b| b == 0xff)
        .filter(|p| !p.is_empty())
        .collect();
    let base = (flags & 2 != 0).then(|| u64::from(d1) << 8 | u64::from(d0));
    let (mut file, starts) = write_file(&payloads, base);
    assert_eq!(
        check_scan(&file),
        starts.iter().map(|&s| s as u64).collect::<Vec<_>>()
    );
    if file.is_empty() {
        return;
    }
    let at = (usize::from(d1) << 8 | usize::from(d0)) % file.len();
    let data_from = if base.is_some() {
        FILE_HEADER as usize
    } else {
        0
    };
    if at < data_from {
        return;
    }
    // the record holding byte `at`
    let hit = starts.iter().rposition(|&s| s <= at).unwrap();
    if flags & 4 != 0 {
        file.truncate(at);
    } else {
        file[at] ^= flags | 1;
    }
    // every record before the damaged one is read, and the scan stops where it starts
    let before: Vec<u64> = starts[..hit].iter().map(|&s| s as u64).collect();
    assert_eq!(check_scan(&file), before);
}

fuzz_target!(|data: &[u8]| {
    if data.first().is_some_and(|f| f & 1 == 1) {
        recipe(data);
    } else {
        check_scan(data);
    }
});
