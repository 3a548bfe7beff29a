//! Moves accepted events from the embedded log (the write-ahead buffer) into the Lance
//! `events` table (the store of record), in log order, one Lance commit per batch; and, on
//! start, restores the part of the log a crash or a lost disk took away from the table.
//!
//! The table's end is what Kafka commits wait for ([`crate::kafka`]): an offset is committed
//! only once every event it covers is in Lance.

use engram_connectors::{EventLog, EventTable, LogError, StoreError};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// The most records committed to the table together.
const MAX_BATCH: usize = 8192;
/// Records restored into the log per read of the table.
const RESTORE_CHUNK: u64 = 65_536;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the events table has no record at offset {offset} (it ends at {end}): the log cannot be restored past it")]
    Gap { offset: u64, end: u64 },
}

/// Appends to `log` the records the table holds beyond its end: after a crash that cut the
/// log short, or on a machine that kept only the Lance folder. Returns how many.
pub async fn restore_log(log: &EventLog, table: &EventTable) -> Result<u64, ArchiveError> {
    let (start, end) = (log.end_offset(), table.end());
    let mut at = start;
    while at < end {
        let to = end.min(at + RESTORE_CHUNK);
        let records = table.read(at, to).await?;
        for (i, (offset, _)) in records.iter().enumerate() {
            if *offset != at + i as u64 {
                return Err(ArchiveError::Gap {
                    offset: at + i as u64,
                    end,
                });
            }
        }
        if records.len() as u64 != to - at {
            return Err(ArchiveError::Gap {
                offset: at + records.len() as u64,
                end,
            });
        }
        let bytes: Vec<Vec<u8>> = records.into_iter().map(|(_, b)| b).collect();
        log.append(&bytes)?;
        at = to;
    }
    if end > start {
        tracing::warn!(
            restored = end - start,
            from = start,
            "the event log was behind the Lance events table; restored it from the table"
        );
    }
    Ok(end.saturating_sub(start))
}

/// Copies the log into the table as it grows, until `stop` is set. A failed commit is retried
/// with the same records (the table skips what it already holds).
pub fn spawn_event_archiver(
    log: Arc<EventLog>,
    table: Arc<EventTable>,
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

    #[test]
    fn the_archiver_follows_the_log_and_a_lost_log_is_restored_from_the_table() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let table_dir = dir.path().join("events.lance");
        let records: Vec<Vec<u8>> = (0..500).map(record).collect();
        {
            let log = Arc::new(EventLog::open(&dir.path().join("log")).unwrap());
            let table = Arc::new(rt.block_on(EventTable::open(&table_dir)).unwrap());
            let stop = Arc::new(AtomicBool::new(false));
            let archiver = spawn_event_archiver(
                log.clone(),
                table.clone(),
                rt.handle().clone(),
                stop.clone(),
            );
            for chunk in records.chunks(37) {
                log.append(chunk).unwrap();
            }
            assert!(rt.block_on(table.wait_for(500, Duration::from_secs(30))));
            stop.store(true, Ordering::Release);
            archiver.join().unwrap();
        }
        // the log is lost; a new one is rebuilt from the table, record for record
        std::fs::remove_dir_all(dir.path().join("log")).unwrap();
        let log = EventLog::open(&dir.path().join("log")).unwrap();
        let table = rt.block_on(EventTable::open(&table_dir)).unwrap();
        assert_eq!(rt.block_on(restore_log(&log, &table)).unwrap(), 500);
        let restored: Vec<Vec<u8>> = log
            .read(0, 1000)
            .unwrap()
            .into_iter()
            .map(|(_, b)| b)
            .collect();
        assert_eq!(restored, records);
        // a log that is not behind is left alone
        assert_eq!(rt.block_on(restore_log(&log, &table)).unwrap(), 0);
        assert_eq!(log.end_offset(), 500);
    }
}
