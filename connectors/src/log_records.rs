//! The event log file's format: an optional header naming the base offset, then records
//! `[len: u32 LE][crc32: u32 LE][payload]`; and how a scan tells a torn tail (a crash during a
//! write damages only the end) from a corrupt record with valid records after it.

use serde::Serialize;

pub(crate) const HEADER: usize = 8;
/// The first bytes of a log file whose first record is not offset 0. Read as a record header
/// it would claim 1.4 GB, past [`MAX_RECORD_BYTES`], so no older file can be taken for one.
pub const MAGIC: &[u8; 8] = b"ENGRAMLG";
/// Magic and base offset.
pub(crate) const FILE_HEADER: u64 = 16;
/// A header naming a base offset above this is not one (2^62 records will never be written):
/// the file is then read from byte 0, where its magic fails as a record, and is reported as
/// corrupt instead of letting offsets overflow.
const MAX_BASE: u64 = 1 << 62;
/// Records larger than this are refused (they would also be refused as events).
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

/// Reads the file header (if any) and every record header of a log file's bytes, checking
/// lengths and checksums; returns the base, the record positions and the length of the valid
/// prefix.
pub(crate) fn scan_bytes(data: &[u8]) -> (u64, Vec<u64>, u64) {
    let mut positions = Vec::new();
    let header_base = (data.len() >= FILE_HEADER as usize && data[..8] == MAGIC[..])
        .then(|| u64::from_le_bytes(data[8..16].try_into().unwrap()))
        .filter(|&base| base <= MAX_BASE);
    let (base, mut at) = match header_base {
        Some(base) => (base, FILE_HEADER as usize),
        None => (0, 0usize),
    };
    while at + HEADER <= data.len() {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap());
        // zeros (a file extended but not written before a crash) would read as empty records
        // with a matching crc: engram never writes an empty record, so one ends the scan
        if len == 0 || len > MAX_RECORD_BYTES || at + HEADER + len > data.len() {
            break;
        }
        if crc32fast::hash(&data[at + HEADER..at + HEADER + len]) != crc {
            break;
        }
        positions.push(at as u64);
        at += HEADER + len;
    }
    (base, positions, at as u64)
}

/// A corrupt stretch of the log file with valid records after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Corruption {
    /// Byte position of the first corrupt record in the file.
    pub byte: u64,
    /// Its log offset: the records from here on are not read.
    pub offset: u64,
    /// Byte position of the first valid record after it.
    pub resumes_at_byte: u64,
    /// Valid records from there to the end of the file (each checked by length and crc32).
    pub records_after: usize,
}

/// The first position at or after `from` where a chain of one or more valid records starts
/// that runs to the end of `data`, or to a torn tail there (what a crash during one append
/// leaves: fewer than a header's bytes, zeros, or a header whose record runs past the end), with
/// its length in records. Every byte position is a candidate: the corrupt record's length field
/// cannot be trusted to say where the next one starts.
///
/// Linear in `data`'s length: positions are decided from the end backwards, remembering which
/// start a chain that reaches the end, and a candidate's checksum is computed only when the
/// record it claims ends where such a chain (or the end, or a torn tail) begins, so a random
/// length read from corrupt bytes costs nothing to reject.
pub(crate) fn chain_to_end(data: &[u8], from: usize) -> Option<(usize, usize)> {
    let n = data.len();
    if from >= n {
        return None;
    }
    let claimed_end = |at: usize| -> Option<usize> {
        let header = data.get(at..at + HEADER)?;
        let len = u32::from_le_bytes(header[..4].try_into().unwrap()) as usize;
        (len > 0 && len <= MAX_RECORD_BYTES).then_some(at + HEADER + len)
    };
    let crc_matches = |at: usize, end: usize| {
        let crc = u32::from_le_bytes(data[at + 4..at + HEADER].try_into().unwrap());
        crc32fast::hash(&data[at + HEADER..end]) == crc
    };
    let last_nonzero = data.iter().rposition(|&b| b != 0);
    let torn_from = |at: usize| {
        n - at < HEADER
            || last_nonzero.is_none_or(|last| last < at)
            || claimed_end(at).is_some_and(|end| end > n)
    };
    // chains[at - from]: a chain of valid records starting at `at` reaches the end or a torn tail
    let mut chains = vec![false; n - from];
    let mut first = None;
    for at in (from..n).rev() {
        let reaches = claimed_end(at).is_some_and(|end| {
            let ends_well = end == n || (end < n && (chains[end - from] || torn_from(end)));
            end <= n && ends_well && crc_matches(at, end)
        });
        chains[at - from] = reaches;
        if reaches {
            first = Some(at);
        }
    }
    let start = first?;
    let (mut at, mut records) = (start, 0);
    while at < n && chains[at - from] {
        at = claimed_end(at).expect("a chain's record has a length");
        records += 1;
    }
    Some((start, records))
}

pub(crate) fn corruption_in(
    data: &[u8],
    base: u64,
    valid_records: usize,
    valid_len: u64,
) -> Option<Corruption> {
    if valid_len as usize >= data.len() {
        return None;
    }
    chain_to_end(data, valid_len as usize + 1).map(|(start, records)| Corruption {
        byte: valid_len,
        offset: base.saturating_add(valid_records as u64),
        resumes_at_byte: start as u64,
        records_after: records,
    })
}
