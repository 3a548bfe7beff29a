//! What the memory dataflow consumes.

use engram_operators::{Episode, SessionKey};
use engram_schemas::{Body, Event};

/// One input to the dataflow, derived from one accepted event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputRecord {
    /// An interaction became an episode of its session.
    Episode(SessionKey, Episode),
}

impl InputRecord {
    /// The records an event at `log_offset` contributes (none for kinds not yet maintained).
    pub fn from_event(event: &Event, log_offset: u64) -> Vec<InputRecord> {
        match &event.body {
            Body::Interaction(i) => {
                let h = &event.header;
                let key = (
                    h.tenant.clone(),
                    h.user.clone(),
                    h.session.clone().unwrap_or_default(),
                );
                vec![InputRecord::Episode(
                    key,
                    Episode {
                        ts_micros: h.ts.timestamp_micros(),
                        turn: i.turn,
                        log_offset,
                        id: engram_schemas::node_id(&h.tenant, &h.event_id).to_string(),
                        event_id: h.event_id.clone(),
                        role: i.role.as_str().to_string(),
                        content: i.content.clone(),
                        importance_milli: i
                            .importance
                            .map(|x| (x.clamp(0.0, 1.0) * 1000.0).round() as u16),
                    },
                )]
            }
            _ => Vec::new(),
        }
    }
}

/// A worker's share of the input. Offsets are positions in the input log; they are the
/// dataflow's timestamps, so views are "as of log offset N".
pub trait InputSource: Send {
    /// Returns, without blocking, the next records of this worker's share and the offset up to
    /// which the worker has now read everything (records at offsets below it will never come).
    /// `None` when nothing new has arrived.
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord)>, u64)>;
}
