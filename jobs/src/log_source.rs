//! The embedded log as the dataflow's input: each worker reads the log and keeps the events of
//! the users hashed to it, so a user's events are handled, in order, by one worker.
//!
//! Corrections are embedded here, on their way in: clustering compares them by embedding, and
//! the dataflow itself does no I/O and runs no model. They are few next to messages, so one
//! batched call per read chunk costs little.

use engram_connectors::{Embedder, EventLog};
use engram_dataflows::{correction_text, InputRecord, InputSource};
use engram_schemas::{Body, Event};
use std::sync::Arc;

/// Records read per poll: bounds memory and keeps the views publishing while catching up.
const READ_CHUNK: usize = 512;

pub struct LogSource {
    log: Arc<EventLog>,
    /// Embeds corrections; without one, corrections are not clustered.
    embedder: Option<Arc<Embedder>>,
    cursor: u64,
    worker: usize,
    peers: usize,
}

impl LogSource {
    pub fn new(
        log: Arc<EventLog>,
        embedder: Option<Arc<Embedder>>,
        worker: usize,
        peers: usize,
    ) -> Self {
        LogSource {
            log,
            embedder,
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

impl LogSource {
    /// The records of `corrections`, embedded in one call. Without an embedder, or when it
    /// fails (logged), none: a correction that cannot be embedded cannot be clustered.
    fn embedded_corrections(&self, corrections: &[(u64, Event)]) -> Vec<(u64, InputRecord)> {
        let (Some(embedder), false) = (&self.embedder, corrections.is_empty()) else {
            return Vec::new();
        };
        let texts: Vec<&str> = corrections
            .iter()
            .map(|(_, event)| match &event.body {
                Body::Correction(c) => correction_text(c),
                _ => "",
            })
            .collect();
        match embedder.embed(&texts) {
            Ok(vectors) => corrections
                .iter()
                .zip(vectors)
                .filter_map(|((offset, event), vector)| {
                    InputRecord::correction(event, &vector).map(|r| (*offset, r))
                })
                .collect(),
            Err(err) => {
                tracing::error!(%err, count = corrections.len(), "embedding corrections failed; they are not clustered");
                Vec::new()
            }
        }
    }
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
        let mut corrections = Vec::new();
        for (offset, bytes) in &chunk {
            match Event::from_canonical_json(bytes) {
                Ok(event) if worker_for(&event.key(), self.peers) == self.worker => {
                    records.extend(
                        InputRecord::from_event(&event, *offset)
                            .into_iter()
                            .map(|r| (*offset, r)),
                    );
                    if matches!(event.body, Body::Correction(_)) {
                        corrections.push((*offset, event));
                    }
                }
                Ok(_) => {}
                Err(err) => {
                    tracing::error!(offset, %err, "unreadable record in the event log; skipped")
                }
            }
        }
        records.extend(self.embedded_corrections(&corrections));
        self.cursor += chunk.len() as u64;
        Some((records, self.cursor))
    }
}
