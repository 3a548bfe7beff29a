//! The embedded log as the dataflow's input: each worker reads the log and keeps the events of
//! the users hashed to it, so a user's events are handled, in order, by one worker.

use engram_connectors::EventLog;
use engram_dataflows::{InputRecord, InputSource};
use engram_schemas::Event;
use std::sync::Arc;

/// Records read per poll: bounds memory and keeps the views publishing while catching up.
const READ_CHUNK: usize = 512;

pub struct LogSource {
    log: Arc<EventLog>,
    cursor: u64,
    worker: usize,
    peers: usize,
}

impl LogSource {
    pub fn new(log: Arc<EventLog>, worker: usize, peers: usize) -> Self {
        LogSource {
            log,
            cursor: 0,
            worker,
            peers,
        }
    }
}

/// The worker that owns a `tenant/user` key.
pub fn worker_for(key: &str, peers: usize) -> usize {
    crc32fast::hash(key.as_bytes()) as usize % peers.max(1)
}

impl InputSource for LogSource {
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord)>, u64)> {
        if self.log.end_offset() <= self.cursor {
            return None;
        }
        let chunk = match self.log.read(self.cursor, READ_CHUNK) {
            Ok(c) => c,
            Err(err) => {
                tracing::error!(%err, cursor = self.cursor, "reading the event log failed; will retry");
                return None;
            }
        };
        let mut records = Vec::new();
        for (offset, bytes) in &chunk {
            match Event::from_canonical_json(bytes) {
                Ok(event) if worker_for(&event.key(), self.peers) == self.worker => records.extend(
                    InputRecord::from_event(&event, *offset)
                        .into_iter()
                        .map(|r| (*offset, r)),
                ),
                Ok(_) => {}
                Err(err) => {
                    tracing::error!(offset, %err, "unreadable record in the event log; skipped")
                }
            }
        }
        self.cursor += chunk.len() as u64;
        Some((records, self.cursor))
    }
}
