//! Where each `(tenant, user)`'s events are in the log, so that control events (erase, restrict,
//! unrestrict) and exports read only the records of those they concern, not the whole log.
//!
//! The ingestor notes the offset of every data event (every event but the control events that
//! govern processing) before appending it, and rebuilds the index from the log when it opens.
//! The index is a superset: an offset it names may hold a record of someone else (an append
//! that failed after the index was updated leaves its offsets to whatever is appended next), so
//! readers check each record's tenant and user. Memory: 8 bytes per event, plus one entry per
//! user.

use engram_connectors::{EventLog, LogError};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

/// Offsets closer than this are read as one span (reads below the log's base go to the Lance
/// events table, one query per span).
const SPAN_GAP: u64 = 64;

#[derive(Debug, Default)]
pub struct UserOffsets {
    /// tenant → user → offsets, ascending.
    by_tenant: RwLock<HashMap<String, HashMap<String, Vec<u64>>>>,
    /// Bytes of log records read for control events and exports, since the engine started.
    bytes_read: AtomicU64,
}

impl UserOffsets {
    /// Notes that the record at `offset` is an event of `(tenant, user)`. Offsets are noted in
    /// ascending order per user (an older one is ignored).
    pub fn add(&self, tenant: &str, user: &str, offset: u64) {
        let mut map = self.by_tenant.write().unwrap_or_else(|p| p.into_inner());
        let offsets = map
            .entry(tenant.to_string())
            .or_default()
            .entry(user.to_string())
            .or_default();
        if offsets.last().is_none_or(|last| *last < offset) {
            offsets.push(offset);
        }
    }

    /// The offsets below `below` of the tenant's events (of `user` only, when given),
    /// ascending.
    pub fn offsets(&self, tenant: &str, user: Option<&str>, below: u64) -> Vec<u64> {
        let map = self.by_tenant.read().unwrap_or_else(|p| p.into_inner());
        let Some(users) = map.get(tenant) else {
            return Vec::new();
        };
        let below_of = |o: &Vec<u64>| o[..o.partition_point(|x| *x < below)].to_vec();
        let mut out: Vec<u64> = match user {
            Some(u) => users.get(u).map(below_of).unwrap_or_default(),
            None => users.values().flat_map(below_of).collect(),
        };
        out.sort_unstable();
        out
    }

    /// The offsets of `user`'s events within `range`, ascending: only those are copied.
    pub fn user_offsets_in(&self, tenant: &str, user: &str, range: Range<u64>) -> Vec<u64> {
        let map = self.by_tenant.read().unwrap_or_else(|p| p.into_inner());
        let Some(offsets) = map.get(tenant).and_then(|users| users.get(user)) else {
            return Vec::new();
        };
        let from = offsets.partition_point(|x| *x < range.start);
        let to = offsets.partition_point(|x| *x < range.end);
        offsets[from..to.max(from)].to_vec()
    }

    /// Forgets the offsets below `below` of the tenant (of `user` only, when given): their
    /// records are erased.
    pub fn forget(&self, tenant: &str, user: Option<&str>, below: u64) {
        let mut map = self.by_tenant.write().unwrap_or_else(|p| p.into_inner());
        let Some(users) = map.get_mut(tenant) else {
            return;
        };
        for (u, offsets) in users.iter_mut() {
            if user.is_none_or(|x| x == u) {
                offsets.drain(..offsets.partition_point(|x| *x < below));
            }
        }
        users.retain(|_, o| !o.is_empty());
        if users.is_empty() {
            map.remove(tenant);
        }
    }

    /// The records at `offsets` (ascending): spans of offsets closer than [`SPAN_GAP`] are read
    /// at once, so records between them may come too. Counts the bytes read.
    pub fn read(&self, log: &EventLog, offsets: &[u64]) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < offsets.len() {
            let mut j = i;
            while j + 1 < offsets.len() && offsets[j + 1] - offsets[j] <= SPAN_GAP {
                j += 1;
            }
            let (from, to) = (offsets[i], offsets[j] + 1);
            let mut at = from;
            while at < to {
                let chunk = log.read(at, (to - at) as usize)?;
                if chunk.is_empty() {
                    break;
                }
                at += chunk.len() as u64;
                self.count(&chunk);
                out.extend(chunk);
            }
            i = j + 1;
        }
        Ok(out)
    }

    /// Adds the bytes of `records` to [`UserOffsets::bytes_read`].
    pub fn count(&self, records: &[(u64, Vec<u8>)]) {
        let bytes: usize = records.iter().map(|(_, b)| b.len()).sum();
        self.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// Bytes of log records read for control events (the erasure task and every worker's
    /// re-reads on an erase, restrict or unrestrict) and exports of restricted users.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_kept_per_user_and_read_in_spans() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        let records: Vec<String> = (0..300).map(|i| format!("record {i:03}")).collect();
        log.append(&records).unwrap();
        let index = UserOffsets::default();
        for o in [3, 5, 200, 299] {
            index.add("t", "a", o);
        }
        index.add("t", "b", 7);
        index.add("u", "a", 8);
        assert_eq!(index.offsets("t", Some("a"), 300), [3, 5, 200, 299]);
        assert_eq!(index.offsets("t", Some("a"), 200), [3, 5]);
        assert_eq!(index.offsets("t", None, 300), [3, 5, 7, 200, 299]);
        assert!(index.offsets("t", Some("nobody"), 300).is_empty());
        assert!(index.offsets("nobody", None, 300).is_empty());
        assert_eq!(index.user_offsets_in("t", "a", 4..200), [5]);
        assert_eq!(index.user_offsets_in("t", "a", 5..300), [5, 200, 299]);
        assert!(index.user_offsets_in("t", "a", 6..6).is_empty());
        assert!(index.user_offsets_in("t", "a", 9..4).is_empty());
        assert!(index.user_offsets_in("t", "nobody", 0..300).is_empty());
        let read = index.read(&log, &[3, 5, 200, 299]).unwrap();
        let got: Vec<u64> = read.iter().map(|(o, _)| *o).collect();
        // 3..=5 as one span; 200 and 299 alone
        assert_eq!(got, [3, 4, 5, 200, 299]);
        assert_eq!(index.bytes_read(), 5 * 10);
        assert!(index.read(&log, &[]).unwrap().is_empty());
        assert_eq!(index.bytes_read(), 50);
        index.forget("t", Some("a"), 200);
        assert_eq!(index.offsets("t", None, 300), [7, 200, 299]);
        index.forget("t", None, 300);
        assert!(index.offsets("t", None, 300).is_empty());
        assert_eq!(index.offsets("u", None, 300), [8]);
    }
}
