//! The embedded event log: what engram consumes when no Kafka is configured.
//!
//! One append-only file of records `[len: u32 LE][crc32: u32 LE][payload]`. A record's offset is
//! its position in the file's sequence (0, 1, 2, …). Appends are group-committed: a batch is
//! written and `fsync`ed before `append` returns, so an acknowledged event survives `kill -9`.
//! On open, a torn or corrupt tail (a crash mid-write) is cut off; everything before it is kept.
//!
//! The log is the write-ahead buffer in front of the Lance `events` table: once the table holds
//! a prefix, [`EventLog::discard_below`] drops it from the file, and reads below the log's
//! base go to the table ([`ArchivedRecords`]). Readers see one sequence of offsets either way,
//! and a restart rebuilds from Lance what the file no longer holds. A file that starts past
//! offset 0 begins with a header naming its base: [`MAGIC`] then the base as `u64` LE.

use crate::log_records::{corruption_in, scan_bytes, FILE_HEADER, HEADER};
pub use crate::log_records::{MAGIC, MAX_RECORD_BYTES};
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("event log {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "event log {path}: a record of {len} bytes; records are 1 to {MAX_RECORD_BYTES} bytes"
    )]
    BadLength { path: PathBuf, len: usize },
    #[error("event log {path}: offset {offset} is past the end ({end})")]
    OutOfRange {
        path: PathBuf,
        offset: u64,
        end: u64,
    },
    #[error("event log {path}: the record at byte {} (offset {}) is corrupt and {} valid records follow it from byte {}: this is not a torn tail, so engram does not cut them off. `engram log check` says what a repair sets aside; `engram log repair` (engram stopped) moves the corrupt record and everything after it to log/quarantine/ and cuts the log there (records the Lance events table holds come back from it)", .corruption.byte, .corruption.offset, .corruption.records_after, .corruption.resumes_at_byte)]
    Corrupt {
        path: PathBuf,
        corruption: crate::log_records::Corruption,
    },
    #[error("event log {path}: offsets {from}..{to} were moved to the archive, and {reason}")]
    Archive {
        path: PathBuf,
        from: u64,
        to: u64,
        reason: String,
    },
}

/// Where the records below the log's base are kept (the Lance `events` table).
pub trait ArchivedRecords: Send + Sync {
    /// Every record at offsets `from..to`, in order; an error when any of them is missing.
    fn read(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, String>;
}

pub struct EventLog {
    path: PathBuf,
    writer: Mutex<File>,
    /// What the file holds; replaced whole when a prefix is discarded.
    hot: RwLock<Hot>,
    /// Reads below the base go here.
    archive: OnceLock<Arc<dyn ArchivedRecords>>,
    /// Signalled after every durable append.
    appended: Condvar,
    appended_lock: Mutex<()>,
    /// Bytes of a torn tail cut off when the log was opened.
    truncated_bytes: u64,
}

/// The records the file holds.
struct Hot {
    /// Offset of the file's first record.
    base: u64,
    /// Byte position of each record; `base + positions.len()` is the next offset.
    positions: Vec<u64>,
    /// Length of the file (its valid records).
    len: u64,
    reader: File,
}

impl Hot {
    fn end(&self) -> u64 {
        self.base + self.positions.len() as u64
    }
}

/// Where a discard writes the file that replaces the log (renamed over it when complete).
fn compact_path(log: &Path) -> PathBuf {
    log.with_extension("compact")
}

impl EventLog {
    /// Opens (or creates) `dir/events.log`, finishes a redaction a crash interrupted, checks
    /// every record, and cuts off a torn tail.
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        let path = dir.join("events.log");
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        replay_redaction_journal(&path).map_err(io)?;
        // a discard that did not finish: the log it was to replace is intact
        match std::fs::remove_file(compact_path(&path)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io(e)),
            _ => {}
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let mut data = Vec::new();
        file.seek(SeekFrom::Start(0))
            .and_then(|_| file.read_to_end(&mut data))
            .map_err(io)?;
        let (base, positions, valid_len) = scan_bytes(&data);
        if let Some(corruption) = corruption_in(&data, base, positions.len(), valid_len) {
            return Err(LogError::Corrupt { path, corruption });
        }
        drop(data);
        let truncated_bytes = file.metadata().map_err(io)?.len() - valid_len;
        if truncated_bytes > 0 {
            tracing::warn!(path = %path.display(), truncated_bytes, records = positions.len(),
                "event log had a torn tail (crash during a write); cutting it off");
            file.set_len(valid_len).map_err(io)?;
            file.sync_all().map_err(io)?;
        }
        let reader = File::open(&path).map_err(io)?;
        Ok(EventLog {
            path,
            writer: Mutex::new(file),
            hot: RwLock::new(Hot {
                base,
                positions,
                len: valid_len,
                reader,
            }),
            archive: OnceLock::new(),
            appended: Condvar::new(),
            appended_lock: Mutex::new(()),
            truncated_bytes,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes cut off a torn tail when the log was opened.
    pub fn truncated_bytes(&self) -> u64 {
        self.truncated_bytes
    }

    /// The offset the next appended record will get (= number of records).
    pub fn end_offset(&self) -> u64 {
        self.hot().end()
    }

    /// The offset of the first record the file holds; those below it are read from the
    /// archive.
    pub fn base_offset(&self) -> u64 {
        self.hot().base
    }

    /// Bytes of records the file holds.
    pub fn file_bytes(&self) -> u64 {
        self.hot().len
    }

    /// Bytes the file's records below `offset` take (0 at or below the base).
    pub fn bytes_below(&self, offset: u64) -> u64 {
        let hot = self.hot();
        let first = hot.positions.first().copied().unwrap_or(hot.len);
        let at = if offset <= hot.base {
            first
        } else if offset < hot.end() {
            hot.positions[(offset - hot.base) as usize]
        } else {
            hot.len
        };
        at - first
    }

    fn hot(&self) -> std::sync::RwLockReadGuard<'_, Hot> {
        self.hot.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets where records below the base are read from. Once only; false if one was set.
    pub fn set_archive(&self, archive: Arc<dyn ArchivedRecords>) -> bool {
        self.archive.set(archive).is_ok()
    }

    pub fn has_archive(&self) -> bool {
        self.archive.get().is_some()
    }

    /// Appends the records durably, in order; returns the offset of the first one.
    pub fn append<B: AsRef<[u8]>>(&self, records: &[B]) -> Result<u64, LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        let mut buf = Vec::new();
        let mut rel = Vec::with_capacity(records.len());
        for r in records {
            let r = r.as_ref();
            // an empty record would read like zeros left by a crash (see log_records)
            if r.is_empty() || r.len() > MAX_RECORD_BYTES {
                return Err(LogError::BadLength {
                    path: self.path.clone(),
                    len: r.len(),
                });
            }
            rel.push(buf.len() as u64);
            buf.extend_from_slice(&(r.len() as u32).to_le_bytes());
            buf.extend_from_slice(&crc32fast::hash(r).to_le_bytes());
            buf.extend_from_slice(r);
        }
        let mut file = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let start = file.seek(SeekFrom::End(0)).map_err(io)?;
        if let Err(e) = file.write_all(&buf).and_then(|_| file.sync_data()) {
            // Leave no half-written batch behind that a later append would follow.
            let _ = file.set_len(start);
            return Err(io(e));
        }
        let first = {
            let mut hot = self.hot.write().unwrap_or_else(|p| p.into_inner());
            let first = hot.end();
            hot.positions.extend(rel.iter().map(|r| start + r));
            hot.len = start + buf.len() as u64;
            first
        };
        drop(file);
        let _guard = self.appended_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.appended.notify_all();
        Ok(first)
    }

    /// Reads up to `max` records starting at `offset`: `(offset, payload)` pairs. Below the
    /// base they come from the archive (at most up to the base in one call).
    pub fn read(&self, offset: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        let hot = self.hot();
        if offset < hot.base {
            let to = hot.base.min(offset.saturating_add(max as u64));
            drop(hot);
            return self.read_archived(offset, to);
        }
        let end = hot.end();
        if offset > end {
            return Err(LogError::OutOfRange {
                path: self.path.clone(),
                offset,
                end,
            });
        }
        let stop = end.min(offset.saturating_add(max as u64));
        if offset == stop {
            return Ok(Vec::new());
        }
        let index = |o: u64| (o - hot.base) as usize;
        let from = hot.positions[index(offset)];
        let to = if stop < end {
            hot.positions[index(stop)]
        } else {
            hot.len
        };
        let mut buf = vec![0u8; (to - from) as usize];
        hot.reader.read_exact_at(&mut buf, from).map_err(io)?;
        drop(hot);
        let mut out = Vec::with_capacity((stop - offset) as usize);
        let mut at = 0usize;
        for o in offset..stop {
            let len = u32::from_le_bytes(buf[at..at + 4].try_into().unwrap()) as usize;
            at += HEADER;
            out.push((o, buf[at..at + len].to_vec()));
            at += len;
        }
        Ok(out)
    }

    /// The records `from..to` (all below the base), from the archive.
    fn read_archived(&self, from: u64, to: u64) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        let fail = |reason: String| LogError::Archive {
            path: self.path.clone(),
            from,
            to,
            reason,
        };
        let archive = self
            .archive
            .get()
            .ok_or_else(|| fail("no archive is attached to read them from".into()))?;
        let records = archive.read(from, to).map_err(fail)?;
        let contiguous = records.len() as u64 == to - from
            && records
                .iter()
                .enumerate()
                .all(|(i, (o, _))| *o == from + i as u64);
        if !contiguous {
            return Err(fail(format!(
                "the archive returned {} of the {} records",
                records.len(),
                to - from
            )));
        }
        Ok(records)
    }

    /// Drops the records below `offset` from the file: they must be in the archive already,
    /// which answers reads below the new base from then on. An `offset` past the end leaves
    /// an empty file that continues at `offset` (a log behind the archive catches up this
    /// way). Crash-safe: the rest is written to a new file that replaces the log by a rename.
    /// Returns how many records the file no longer holds.
    pub fn discard_below(&self, offset: u64) -> Result<u64, LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        if !self.has_archive() {
            return Err(LogError::Archive {
                path: self.path.clone(),
                from: self.base_offset(),
                to: offset,
                reason: "no archive is attached to hold them".into(),
            });
        }
        // no append or redaction meanwhile; reads go on from the old file until the swap
        let mut writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let (base, end, keep_from, len) = {
            let hot = self.hot();
            if offset <= hot.base {
                return Ok(0);
            }
            let keep_from = if offset < hot.end() {
                hot.positions[(offset - hot.base) as usize]
            } else {
                hot.len
            };
            (hot.base, hot.end(), keep_from, hot.len)
        };
        let mut tail = vec![0u8; (len - keep_from) as usize];
        self.hot()
            .reader
            .read_exact_at(&mut tail, keep_from)
            .map_err(io)?;
        let tmp = compact_path(&self.path);
        {
            let mut f = File::create(&tmp).map_err(io)?;
            f.write_all(MAGIC).map_err(io)?;
            f.write_all(&offset.to_le_bytes()).map_err(io)?;
            f.write_all(&tail).map_err(io)?;
            f.sync_all().map_err(io)?;
        }
        std::fs::rename(&tmp, &self.path).map_err(io)?;
        if let Some(dir) = self.path.parent() {
            File::open(dir).and_then(|d| d.sync_all()).map_err(io)?;
        }
        let new_writer = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        let reader = File::open(&self.path).map_err(io)?;
        let mut hot = self.hot.write().unwrap_or_else(|p| p.into_inner());
        let kept = hot.positions.len() - (offset.min(end) - base) as usize;
        let positions: Vec<u64> = hot.positions[hot.positions.len() - kept..]
            .iter()
            .map(|p| p - keep_from + FILE_HEADER)
            .collect();
        *hot = Hot {
            base: offset,
            positions,
            len: FILE_HEADER + tail.len() as u64,
            reader,
        };
        *writer = new_writer;
        drop((hot, writer));
        if offset > end {
            // the end moved too
            let _guard = self.appended_lock.lock().unwrap_or_else(|p| p.into_inner());
            self.appended.notify_all();
        }
        let dropped = offset.min(end) - base;
        tracing::debug!(path = %self.path.display(), base = offset, dropped, "event log prefix moved to the archive");
        Ok(dropped)
    }

    /// Blocks until the log holds a record at `offset`, or `timeout` passes.
    /// Returns whether the record is there.
    pub fn wait_for(&self, offset: u64, timeout: Duration) -> bool {
        let guard = self.appended_lock.lock().unwrap_or_else(|p| p.into_inner());
        if self.end_offset() > offset {
            return true;
        }
        let _ = self
            .appended
            .wait_timeout_while(guard, timeout, |_| self.end_offset() <= offset);
        self.end_offset() > offset
    }
}

/// The journal of a redaction in progress: the records to overwrite, written and synced before
/// the first overwrite, removed after the last. A crash in between leaves it, and the next open
/// applies it again (overwrites are idempotent), so a half-written record is never taken for a
/// torn tail.
fn journal_path(log: &Path) -> PathBuf {
    log.with_extension("redact-journal")
}

#[derive(serde::Serialize, serde::Deserialize)]
struct JournalEntry {
    /// Byte position of the record.
    position: u64,
    /// The whole new record: header and payload.
    record: Vec<u8>,
}

fn apply_journal(log: &Path, entries: &[JournalEntry]) -> std::io::Result<()> {
    let file = OpenOptions::new().write(true).open(log)?;
    for e in entries {
        file.write_all_at(&e.record, e.position)?;
    }
    file.sync_data()?;
    std::fs::remove_file(journal_path(log))
}

fn replay_redaction_journal(log: &Path) -> std::io::Result<()> {
    match std::fs::read(journal_path(log)) {
        Ok(bytes) => match serde_json::from_slice::<Vec<JournalEntry>>(&bytes) {
            Ok(entries) => apply_journal(log, &entries),
            // torn while being written: no overwrite had started
            Err(_) => std::fs::remove_file(journal_path(log)),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

impl EventLog {
    /// Overwrites the payloads of the records at `offsets` in place, each with `replacement`
    /// of its old payload padded with spaces to the old length (offsets, positions and the
    /// records around them stay as they are). A replacement longer than the record it replaces
    /// is an error. Durable when it returns; a crash midway is completed on the next open.
    /// Offsets below the base are skipped: the archive holds those records, and redacts them
    /// itself.
    pub fn redact(
        &self,
        offsets: &[u64],
        replacement: impl Fn(&[u8]) -> Vec<u8>,
    ) -> Result<usize, LogError> {
        // the journal names byte positions in this file: no discard may replace it meanwhile
        let _writer = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        let entries = self.plan_redaction(offsets, replacement)?;
        if entries.is_empty() {
            return Ok(0);
        }
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        write_journal(&self.path, &entries).map_err(io)?;
        apply_journal(&self.path, &entries).map_err(io)?;
        Ok(entries.len())
    }

    /// The overwrites a redaction makes (see [`EventLog::redact`]).
    fn plan_redaction(
        &self,
        offsets: &[u64],
        replacement: impl Fn(&[u8]) -> Vec<u8>,
    ) -> Result<Vec<JournalEntry>, LogError> {
        let (base, positions) = {
            let hot = self.hot();
            (hot.base, hot.positions.clone())
        };
        let mut entries = Vec::new();
        for &offset in offsets.iter().filter(|o| **o >= base) {
            let Some(&pos) = positions.get((offset - base) as usize) else {
                return Err(LogError::OutOfRange {
                    path: self.path.clone(),
                    offset,
                    end: base + positions.len() as u64,
                });
            };
            let old = self.read(offset, 1)?.remove(0).1;
            let mut payload = replacement(&old);
            if payload.len() > old.len() {
                return Err(LogError::BadLength {
                    path: self.path.clone(),
                    len: payload.len(),
                });
            }
            payload.resize(old.len(), b' ');
            let mut record = Vec::with_capacity(HEADER + payload.len());
            record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
            record.extend_from_slice(&crc32fast::hash(&payload).to_le_bytes());
            record.extend_from_slice(&payload);
            entries.push(JournalEntry {
                position: pos,
                record,
            });
        }
        Ok(entries)
    }
}

fn write_journal(log: &Path, entries: &[JournalEntry]) -> std::io::Result<()> {
    let mut f = File::create(journal_path(log))?;
    f.write_all(&serde_json::to_vec(entries).expect("journal serializes"))?;
    f.sync_all()
}

#[cfg(test)]
mod redaction_tests {
    use super::*;

    fn all(log: &EventLog) -> Vec<Vec<u8>> {
        log.read(0, 100)
            .unwrap()
            .into_iter()
            .map(|(_, b)| b)
            .collect()
    }

    #[test]
    fn redacted_records_keep_their_offsets_and_length_and_the_rest_is_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&["first secret", "second secret", "third"])
            .unwrap();
        assert_eq!(log.redact(&[1], |_| b"gone".to_vec()).unwrap(), 1);
        assert!(
            log.redact(&[0], |_| vec![b'x'; 100]).is_err(),
            "longer than the record"
        );
        log.append(&["fourth"]).unwrap();
        drop(log);
        let log = EventLog::open(dir.path()).unwrap();
        assert_eq!(log.truncated_bytes(), 0);
        assert_eq!(
            all(&log),
            vec![
                b"first secret".to_vec(),
                b"gone         ".to_vec(),
                b"third".to_vec(),
                b"fourth".to_vec()
            ]
        );
    }

    #[test]
    fn a_crash_in_the_middle_of_an_overwrite_is_finished_on_open_not_cut_off() {
        let dir = tempfile::tempdir().unwrap();
        let log = EventLog::open(dir.path()).unwrap();
        log.append(&["aaaa secret one", "bbbb secret two", "cccc"])
            .unwrap();
        let entries = log.plan_redaction(&[0, 1], |_| b"r".to_vec()).unwrap();
        write_journal(&log.path, &entries).unwrap();
        // the crash: half of the first overwrite reached the file, the second none
        let half = &entries[0].record[..entries[0].record.len() / 2];
        let f = OpenOptions::new().write(true).open(&log.path).unwrap();
        f.write_all_at(half, entries[0].position).unwrap();
        drop((f, log));
        let log = EventLog::open(dir.path()).unwrap();
        assert_eq!(log.truncated_bytes(), 0);
        assert_eq!(
            all(&log),
            vec![
                b"r              ".to_vec(),
                b"r              ".to_vec(),
                b"cccc".to_vec()
            ]
        );
        assert!(!journal_path(&log.path).exists());
    }
}
