//! Summaries: what an asynchronous reflection wrote about a stretch of a user's
//! conversations, with the `COVERS` edges to the episodes it summarises (SPEC §3). They are
//! written off the ingest path (an LLM) and published back as `summary` events; the dataflow
//! keeps the present ones per user, for the views and for the summaries table in Lance.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;

/// One summary. Field order is the order used to pick one summary per id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SummaryNode {
    /// Stable UUID of the summary node (from its tenant and event id).
    pub id: String,
    /// The summary event's id, unique within its tenant.
    pub event_id: String,
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// Input-log offset of the summary event.
    pub log_offset: u64,
    pub content: String,
    /// `COVERS`: the episode node ids of the interactions it names, sorted, once each (an
    /// episode's node id follows from its tenant and event id, so an edge may name an episode
    /// that has not arrived yet).
    pub covers: Vec<String>,
}

/// The present summaries of each user.
///
/// Input: `((tenant, user), summary)` records. A summary is present when its summed
/// multiplicity is positive.
///
/// Output: `((tenant, user), summary)` with multiplicity 1 for every summary id with a present
/// summary: the least present summary of that id (a redelivered event that differs in
/// nothing but its multiplicity shows once).
pub fn user_summaries<'scope, T>(
    summaries: VecCollection<'scope, T, (UserKey, SummaryNode)>,
) -> VecCollection<'scope, T, (UserKey, SummaryNode)>
where
    T: Timestamp + Lattice + Ord,
{
    summaries
        .map(|(user, summary)| ((user, summary.id.clone()), summary))
        .reduce(|_id, summaries, output| {
            // values come sorted: the first present one is the least
            if let Some((summary, _)) = summaries.iter().find(|(_, m)| *m > 0) {
                output.push(((*summary).clone(), 1));
            }
        })
        .map(|((user, _id), summary)| (user, summary))
}
