//! Moves accepted events from the embedded log (the write-ahead buffer) into the Lance
//! `events` table (the store of record), in log order, one Lance commit per batch; drops from
//! the log file what the table holds and the views have read; and, on start, points the log at
//! the table for everything the file does not hold.
//!
//! The table's end is what Kafka commits wait for ([`crate::ingest::kafka`]): an offset is committed
//! only once every event it covers is in Lance. Below the log's base, every reader of the log
//! (the ingestor's id set, the timely workers, erase and export) reads the table: a restart
//! rebuilds the views from Lance.

use engram_connectors::{EventLog, EventTable, LogError, StoreError, TableArchive};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most records committed to the table together.
const MAX_BATCH: usize = 8192;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("starting the reader of the events table: {0}")]
    Reader(std::io::Error),
}

/// Makes `table` the archive `log` reads below its base, and, when the log is behind the
/// table (a crash cut it short, or only the Lance folder was kept), moves the log's base to
/// the table's end: what the file lacks is read from the table. Returns how many records the
/// file was behind.
pub fn attach_archive(log: &EventLog, table: &Arc<EventTable>) -> Result<u64, ArchiveError> {
    log.set_archive(Arc::new(
        TableArchive::new(table.clone()).map_err(ArchiveError::Reader)?,
    ));
    let (start, end) = (log.end_offset(), table.end());
    if start < end {
        log.discard_below(end)?;
        tracing::warn!(
            behind = end - start,
            from = start,
            "the event log was behind the Lance events table; it continues at the table's end"
        );
    }
    Ok(end.saturating_sub(start))
}

/// When the log file drops its prefix.
#[derive(Clone)]
pub struct Discard {
    /// Once this many bytes of the file are in the table and read by `read_up_to`'s readers,
    /// they leave the file (one rewrite of the rest of it).
    pub after_bytes: u64,
    /// The offset the slowest reader of the log's tail (the views) has read up to: records
    /// below it are not read again in the normal course, so reading them from the table later
    /// costs little.
    pub read_up_to: Arc<dyn Fn() -> u64 + Send + Sync>,
}

/// Copies the log into the table as it grows, until `stop` is set, and drops from the file
/// what the table holds ([`Discard`]). A failed commit is retried with the same records (the
/// table skips what it already holds).
pub fn spawn_event_archiver(
    log: Arc<EventLog>,
    table: Arc<EventTable>,
    discard: Option<Discard>,
    rt: tokio::runtime::Handle,
    stop: Arc<AtomicBool>,
) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name("event-archiver".into())
        .spawn(move || {
            let mut backoff = Duration::from_millis(100);
            while !stop.load(Ordering::Acquire) {
                let end = table.end();
                if !log.wait_for(end, Duration::from_millis(200)) {
                    continue;
                }
                let step = log
                    .read(end, MAX_BATCH)
                    .map_err(ArchiveError::from)
                    .and_then(|records| {
                        let bytes: Vec<Vec<u8>> = records.into_iter().map(|(_, b)| b).collect();
                        rt.block_on(table.append(end, &bytes))
                            .map_err(ArchiveError::from)
                    })
                    .and_then(|written| {
                        if let Some(d) = &discard {
                            discard_read_prefix(&log, &table, d)?;
                        }
                        Ok(written)
                    });
                match step {
                    Ok(written) => {
                        tracing::debug!(from = end, written, "events archived to Lance");
                        backoff = Duration::from_millis(100);
                    }
                    Err(err) => {
                        tracing::error!(%err, from = end, "archiving events to Lance failed; retrying");
                        std::thread::sleep(backoff);
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
        })
        .expect("spawn the event archiver")
}

/// Drops the file's records below both the table's end and what the views have read, once
/// they are [`Discard::after_bytes`] or more.
fn discard_read_prefix(log: &EventLog, table: &EventTable, d: &Discard) -> Result<(), LogError> {
    let below = table.end().min((d.read_up_to)()).min(log.end_offset());
    if below > log.base_offset() && log.bytes_below(below) >= d.after_bytes {
        let dropped = log.discard_below(below)?;
        tracing::info!(
            dropped,
            base = below,
            file_bytes = log.file_bytes(),
            "event log records in Lance left the log file"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(n: u64) -> Vec<u8> {
        serde_json::json!({"event_id": format!("e{n}"), "tenant": "t", "user": "u",
            "ts": "2025-01-01T00:00:00Z", "kind": "interaction", "role": "user",
            "content": format!("message {n}")})
        .to_string()
        .into_bytes()
    }

    /// Every record of `log`, read in chunks of 100.
    fn read_all(log: &EventLog) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while (out.len() as u64) < log.end_offset() {
            let chunk = log.read(out.len() as u64, 100).unwrap();
            assert!(!chunk.is_empty());
            out.extend(chunk.into_iter().map(|(_, b)| b));
        }
        out
    }

    #[test]
    fn the_archiver_follows_the_log_drops_what_the_table_holds_and_a_lost_log_reads_the_table() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let table_dir = dir.path().join("events.lance");
        let records: Vec<Vec<u8>> = (0..500).map(record).collect();
        // the views have read up to 400
        let read_up_to = 400;
        {
            let log = Arc::new(EventLog::open(&dir.path().join("log")).unwrap());
            let table = Arc::new(rt.block_on(EventTable::open(&table_dir)).unwrap());
            assert_eq!(attach_archive(&log, &table).unwrap(), 0);
            let stop = Arc::new(AtomicBool::new(false));
            let archiver = spawn_event_archiver(
                log.clone(),
                table.clone(),
                Some(Discard {
                    after_bytes: 2_000,
                    read_up_to: Arc::new(move || read_up_to),
                }),
                rt.handle().clone(),
                stop.clone(),
            );
            for chunk in records.chunks(37) {
                log.append(chunk).unwrap();
            }
            assert!(rt.block_on(table.wait_for(500, Duration::from_secs(30))));
            // the last batch's discard may still be under way
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while log.bytes_below(read_up_to) >= 2_000 && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            stop.store(true, Ordering::Release);
            archiver.join().unwrap();
            let base = log.base_offset();
            assert!(base > 300 && base <= read_up_to, "base {base}");
            assert_eq!(read_all(&log), records);
        }
        // reopened, the file still starts at its base; the rest comes from the table
        {
            let log = EventLog::open(&dir.path().join("log")).unwrap();
            let table = Arc::new(rt.block_on(EventTable::open(&table_dir)).unwrap());
            assert!(log.base_offset() > 0);
            assert_eq!(attach_archive(&log, &table).unwrap(), 0);
            assert_eq!(read_all(&log), records);
        }
        // the log is lost; a new one continues at the table's end and reads the rest from it
        std::fs::remove_dir_all(dir.path().join("log")).unwrap();
        let log = EventLog::open(&dir.path().join("log")).unwrap();
        let table = Arc::new(rt.block_on(EventTable::open(&table_dir)).unwrap());
        assert_eq!(attach_archive(&log, &table).unwrap(), 500);
        assert_eq!((log.base_offset(), log.end_offset()), (500, 500));
        assert_eq!(read_all(&log), records);
        assert_eq!(log.append(&[record(500)]).unwrap(), 500);
    }
}
