//! What the memory dataflow consumes.

use engram_operators::facts::{extract_facts, normalise_attribute, FactAssertion, FactKey};
use engram_operators::{Episode, SessionKey};
use engram_schemas::{node_id, Body, Event, Role};

/// One input to the dataflow, derived from one accepted event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputRecord {
    /// An interaction became an episode of its session.
    Episode(SessionKey, Episode),
    /// A value asserted for a (subject, attribute): from a `fact` event, or extracted from what
    /// the user said.
    Fact(FactKey, FactAssertion),
}

impl InputRecord {
    /// The records an event at `log_offset` contributes (none for kinds not yet maintained).
    pub fn from_event(event: &Event, log_offset: u64) -> Vec<InputRecord> {
        let h = &event.header;
        match &event.body {
            Body::Fact(f) => vec![InputRecord::Fact(
                (
                    h.tenant.clone(),
                    h.user.clone(),
                    f.subject.trim().to_lowercase(),
                    normalise_attribute(&f.attribute),
                ),
                FactAssertion {
                    valid_from_micros: h.ts.timestamp_micros(),
                    log_offset,
                    fact_id: node_id(&h.tenant, &h.event_id).to_string(),
                    value: f.value.trim().to_string(),
                },
            )],
            Body::Interaction(i) => {
                let key = (
                    h.tenant.clone(),
                    h.user.clone(),
                    h.session.clone().unwrap_or_default(),
                );
                // Only the user speaks about themselves in the first person.
                let facts = if i.role == Role::User {
                    extract_facts(&i.content)
                } else {
                    Vec::new()
                };
                let mut records: Vec<InputRecord> = facts
                    .into_iter()
                    .enumerate()
                    .map(|(n, f)| {
                        InputRecord::Fact(
                            (
                                h.tenant.clone(),
                                h.user.clone(),
                                f.subject.clone(),
                                f.key_attribute(),
                            ),
                            FactAssertion {
                                valid_from_micros: h.ts.timestamp_micros(),
                                log_offset,
                                fact_id: node_id(&h.tenant, &format!("{}#fact{n}", h.event_id))
                                    .to_string(),
                                value: f.value,
                            },
                        )
                    })
                    .collect();
                records.push(InputRecord::Episode(
                    key,
                    Episode {
                        ts_micros: h.ts.timestamp_micros(),
                        turn: i.turn,
                        log_offset,
                        id: node_id(&h.tenant, &h.event_id).to_string(),
                        event_id: h.event_id.clone(),
                        role: i.role.as_str().to_string(),
                        content: i.content.clone(),
                        importance_milli: i
                            .importance
                            .map(|x| (x.clamp(0.0, 1.0) * 1000.0).round() as u16),
                    },
                ));
                records
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
