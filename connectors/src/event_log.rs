//! The embedded event log: what engram consumes when no Kafka is configured.
//!
//! One append-only file of records `[len: u32 LE][crc32: u32 LE][payload]`. A record's offset is
//! its position in the file's sequence (0, 1, 2, …). Appends are group-committed: a batch is
//! written and `fsync`ed before `append` returns, so an acknowledged event survives `kill -9`.
//! On open, a torn or corrupt tail (a crash mid-write) is cut off; everything before it is kept.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex, RwLock};
use std::time::Duration;

const HEADER: usize = 8;
/// Records larger than this are refused (they would also be refused as events).
pub const MAX_RECORD_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("event log {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("event log {path}: record of {len} bytes exceeds the {MAX_RECORD_BYTES}-byte limit")]
    TooLarge { path: PathBuf, len: usize },
    #[error("event log {path}: offset {offset} is past the end ({end})")]
    OutOfRange {
        path: PathBuf,
        offset: u64,
        end: u64,
    },
}

pub struct EventLog {
    path: PathBuf,
    writer: Mutex<File>,
    reader: File,
    /// Byte position of each record; `positions.len()` is the next offset.
    positions: RwLock<Vec<u64>>,
    /// Signalled after every durable append.
    appended: Condvar,
    appended_lock: Mutex<()>,
    /// Bytes of a torn tail cut off when the log was opened.
    truncated_bytes: u64,
}

impl EventLog {
    /// Opens (or creates) `dir/events.log`, checks every record, and cuts off a torn tail.
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        let path = dir.join("events.log");
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io)?;
        let (positions, valid_len) = scan(&mut file).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let truncated_bytes = file_len - valid_len;
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
            reader,
            positions: RwLock::new(positions),
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
        self.positions
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .len() as u64
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
            if r.len() > MAX_RECORD_BYTES {
                return Err(LogError::TooLarge {
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
            let mut positions = self.positions.write().unwrap_or_else(|p| p.into_inner());
            let first = positions.len() as u64;
            positions.extend(rel.iter().map(|r| start + r));
            first
        };
        drop(file);
        let _guard = self.appended_lock.lock().unwrap_or_else(|p| p.into_inner());
        self.appended.notify_all();
        Ok(first)
    }

    /// Reads up to `max` records starting at `offset`: `(offset, payload)` pairs.
    pub fn read(&self, offset: u64, max: usize) -> Result<Vec<(u64, Vec<u8>)>, LogError> {
        let io = |source| LogError::Io {
            path: self.path.clone(),
            source,
        };
        let positions = self.positions.read().unwrap_or_else(|p| p.into_inner());
        let end = positions.len() as u64;
        if offset > end {
            return Err(LogError::OutOfRange {
                path: self.path.clone(),
                offset,
                end,
            });
        }
        let stop = end.min(offset + max as u64);
        if offset == stop {
            return Ok(Vec::new());
        }
        let from = positions[offset as usize];
        let to = if (stop as usize) < positions.len() {
            positions[stop as usize]
        } else {
            self.writer_len_hint(&positions)?
        };
        let mut buf = vec![0u8; (to - from) as usize];
        self.reader.read_exact_at(&mut buf, from).map_err(io)?;
        drop(positions);
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

    /// End of the last record, from its header (the file may be growing concurrently).
    fn writer_len_hint(&self, positions: &[u64]) -> Result<u64, LogError> {
        let last = *positions.last().expect("non-empty");
        let mut header = [0u8; 4];
        self.reader
            .read_exact_at(&mut header, last)
            .map_err(|source| LogError::Io {
                path: self.path.clone(),
                source,
            })?;
        Ok(last + HEADER as u64 + u32::from_le_bytes(header) as u64)
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

/// Reads every record header, checking lengths and checksums; returns the record positions and
/// the length of the valid prefix.
fn scan(file: &mut File) -> std::io::Result<(Vec<u64>, u64)> {
    file.seek(SeekFrom::Start(0))?;
    let mut data = Vec::new();
    file.read_to_end(&mut data)?;
    let mut positions = Vec::new();
    let mut at = 0usize;
    while at + HEADER <= data.len() {
        let len = u32::from_le_bytes(data[at..at + 4].try_into().unwrap()) as usize;
        let crc = u32::from_le_bytes(data[at + 4..at + 8].try_into().unwrap());
        if len > MAX_RECORD_BYTES || at + HEADER + len > data.len() {
            break;
        }
        if crc32fast::hash(&data[at + HEADER..at + HEADER + len]) != crc {
            break;
        }
        positions.push(at as u64);
        at += HEADER + len;
    }
    Ok((positions, at as u64))
}

/// Where rejected input goes when there is no Kafka DLQ: one JSON line per rejected input,
/// with the reason and the original bytes, fsync'd.
pub struct RejectLog {
    path: PathBuf,
    file: Mutex<File>,
    count: std::sync::atomic::AtomicU64,
}

/// One rejected input.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Rejection {
    /// Where it came from (`http`, a topic name, a file path).
    pub source: String,
    /// The field that is wrong (`$` for the whole input).
    pub field: String,
    pub reason: String,
    /// The input as received (lossy UTF-8).
    pub original: String,
    pub rejected_at: chrono::DateTime<chrono::Utc>,
}

impl RejectLog {
    pub fn open(dir: &Path) -> Result<Self, LogError> {
        let path = dir.join("rejects.jsonl");
        let io = |source| LogError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(dir).map_err(io)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(&path)
            .map_err(io)?;
        let count = std::io::BufRead::lines(std::io::BufReader::new(File::open(&path).map_err(io)?))
            .count() as u64;
        Ok(RejectLog {
            path,
            file: Mutex::new(file),
            count: count.into(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rejections recorded so far, across restarts.
    pub fn count(&self) -> u64 {
        self.count.load(std::sync::atomic::Ordering::Relaxed)
    }

    pub fn record(&self, rejections: &[Rejection]) -> Result<(), LogError> {
        if rejections.is_empty() {
            return Ok(());
        }
        let mut buf = String::new();
        for r in rejections {
            buf.push_str(&serde_json::to_string(r).expect("rejections serialize"));
            buf.push('\n');
        }
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(buf.as_bytes())
            .and_then(|_| file.sync_data())
            .map_err(|source| LogError::Io {
                path: self.path.clone(),
                source,
            })?;
        self.count.fetch_add(
            rejections.len() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
        Ok(())
    }

    /// Every rejection recorded, oldest first.
    pub fn read_all(&self) -> Result<Vec<Rejection>, LogError> {
        let text = std::fs::read_to_string(&self.path).map_err(|source| LogError::Io {
            path: self.path.clone(),
            source,
        })?;
        Ok(text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect())
    }
}
