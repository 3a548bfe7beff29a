//! Relations: typed edges between things a user's conversations name ("Caroline — attended →
//! LGBTQ support group"), each with the `EVIDENCE_FOR` edges from the episodes it was read
//! from. An extractor (the enrichment job, or the user's client) publishes them as `relation`
//! events; the dataflow keeps the present ones per user, as a view. They are not memories:
//! recall and retention never see them.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;

/// One relation. Field order is the order used to pick one relation per id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RelationNode {
    /// Stable UUID of the relation node (from its tenant and event id).
    pub id: String,
    /// The relation event's id, unique within its tenant.
    pub event_id: String,
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// Input-log offset of the relation event.
    pub log_offset: u64,
    pub subject: String,
    /// What links subject and object, a short verb phrase ("attended", "sister of").
    pub relation: String,
    pub object: String,
    /// When it held or happened, as the evidence says it (an ISO date, or words).
    pub time: Option<String>,
    /// `EVIDENCE_FOR`: the episode node ids of the interactions it was read from, sorted, once
    /// each (an episode's node id follows from its tenant and event id, so an edge may name an
    /// episode that has not arrived yet).
    pub evidence: Vec<String>,
    /// The extractor's confidence in thousandths (0–1000), when it stated one.
    pub confidence_milli: Option<u16>,
}

/// The present relations of each user.
///
/// Input: `((tenant, user), relation)` records. A relation is present when its summed
/// multiplicity is positive.
///
/// Output: `((tenant, user), relation)` with multiplicity 1 for every relation id with a
/// present relation: the least present relation of that id (a redelivered event that differs
/// in nothing but its multiplicity shows once).
pub fn user_relations<'scope, T>(
    relations: VecCollection<'scope, T, (UserKey, RelationNode)>,
) -> VecCollection<'scope, T, (UserKey, RelationNode)>
where
    T: Timestamp + Lattice + Ord,
{
    relations
        .map(|(user, relation)| ((user, relation.id.clone()), relation))
        .reduce(|_id, relations, output| {
            // values come sorted: the first present one is the least
            if let Some((relation, _)) = relations.iter().find(|(_, m)| *m > 0) {
                output.push(((*relation).clone(), 1));
            }
        })
        .map(|((user, _id), relation)| (user, relation))
}
