//! Episodes and the `NEXT` edges between consecutive episodes of a session.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

/// `(tenant, user, session)`; messages without a session share the session `""` of their user.
pub type SessionKey = (String, String, String);

/// One message as the dataflow sees it. Field order is the order of episodes within a session:
/// event time, then turn, then input-log offset (the arrival order), then id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Episode {
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    pub turn: Option<u32>,
    pub log_offset: u64,
    /// Stable UUID of the episode node.
    pub id: String,
    pub event_id: String,
    pub role: String,
    pub content: String,
    /// Importance in thousandths (0..=1000), kept integral so episodes are totally ordered.
    pub importance_milli: Option<u16>,
}

impl Episode {
    /// What ordering within a session needs: everything but the message itself.
    pub fn node(&self) -> EpisodeNode {
        EpisodeNode {
            ts_micros: self.ts_micros,
            turn: self.turn,
            log_offset: self.log_offset,
            id: self.id.clone(),
        }
    }
}

/// An episode without its message: enough to order a session. Ordered like [`Episode`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EpisodeNode {
    pub ts_micros: i64,
    pub turn: Option<u32>,
    pub log_offset: u64,
    pub id: String,
}

/// The `NEXT` edges of each session.
///
/// Input: episode nodes keyed by their session ([`Episode::node`]: the edges need no message
/// text, so the session arrangement does not hold it). Output: for every session whose nodes, in
/// [`EpisodeNode`] order, are `e1 < e2 < … < en`, the records `(session, (e_i.id, e_{i+1}.id))` for
/// `i` in `1..n`, each with multiplicity 1. An episode present with multiplicity m > 1 counts once;
/// one with multiplicity ≤ 0 does not count. When an episode arrives out of order (an earlier
/// timestamp than episodes already present) or is retracted, the edges around it are retracted
/// and replaced, so the output always equals this definition over the current input.
///
/// Cost: a change to a session re-derives that session's edges (linear in its length); other
/// sessions are untouched.
pub fn next_edges<'scope, T>(
    episodes: VecCollection<'scope, T, (SessionKey, EpisodeNode)>,
) -> VecCollection<'scope, T, (SessionKey, (String, String))>
where
    T: Timestamp + Lattice + Ord,
{
    episodes.reduce(|_session, input, output| {
        let present = input.iter().filter(|(_, m)| *m > 0).map(|(e, _)| *e);
        let mut previous: Option<&EpisodeNode> = None;
        for e in present {
            if let Some(p) = previous {
                output.push(((p.id.clone(), e.id.clone()), 1));
            }
            previous = Some(e);
        }
    })
}
