//! Updates the dataflow's outputs emit, held by time until the views are published up to a
//! frontier.

use crate::views::ViewUpdate;
use engram_operators::correction_clusters::UserKey;
use engram_operators::facts::{FactAssertion, FactKey};
use engram_operators::lifecycle::PreferenceKey;
use engram_operators::math::decay::LifecycleState;
use engram_operators::memories::MemoryId;
use engram_operators::summaries::SummaryNode;
use engram_operators::{Episode, SessionKey};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

pub(crate) type Captured = Arc<Mutex<CapturedUpdates<ViewUpdate>>>;
pub(crate) type CapturedEpisodes = Arc<Mutex<CapturedUpdates<(SessionKey, Episode)>>>;
pub(crate) type CapturedFacts = Arc<Mutex<CapturedUpdates<(FactKey, FactAssertion)>>>;
pub(crate) type CapturedSummaries = Arc<Mutex<CapturedUpdates<(UserKey, SummaryNode)>>>;
pub(crate) type CapturedStates = Arc<Mutex<CapturedUpdates<(PreferenceKey, LifecycleState)>>>;
pub(crate) type CapturedArchived = Arc<Mutex<CapturedUpdates<MemoryId>>>;

/// Everything the dataflows' outputs capture for publication.
#[derive(Clone, Default)]
pub(crate) struct CapturedOutputs {
    pub(crate) views: Captured,
    pub(crate) episodes: CapturedEpisodes,
    pub(crate) facts: CapturedFacts,
    pub(crate) summaries: CapturedSummaries,
    pub(crate) states: CapturedStates,
    /// Memories archived, at engine time.
    pub(crate) archived: CapturedArchived,
}

/// Captured updates of one kind, bucketed by their timestamp.
///
/// Taking the updates before a frontier hands whole buckets over: nothing is copied or sorted,
/// however many updates a step emitted. (One flat vector, split and sorted by time on every
/// publication, spent a third of a bulk load's time moving 240-byte updates into fresh pages,
/// because under load part of it is always at times the frontier has not passed yet.) Inputs
/// advance their time once per batch of polls of the log, so there are few buckets.
///
/// A bucket is a list of chunks of [`CHUNK`] updates, not one growing vector: a bucket of a
/// bulk load grows to megabytes, and doubling a vector copies it and touches fresh pages each
/// time, where a chunk is allocated once and its memory reused after publication. (Only the
/// first chunk grows, up to [`CHUNK`].)
#[derive(Debug)]
pub(crate) struct CapturedUpdates<D> {
    by_time: BTreeMap<u64, Vec<Vec<(D, isize)>>>,
}

/// Updates per chunk of a bucket.
const CHUNK: usize = 1024;

impl<D> Default for CapturedUpdates<D> {
    fn default() -> Self {
        CapturedUpdates {
            by_time: BTreeMap::new(),
        }
    }
}

impl<D> CapturedUpdates<D> {
    pub(crate) fn push(&mut self, data: D, time: u64, diff: isize) {
        let chunks = self.by_time.entry(time).or_default();
        match chunks.last_mut() {
            // the first chunk grows as a vector does: many times (a lifecycle's scheduled
            // transitions) hold an update or two, and must not cost a whole chunk each
            Some(chunk) if chunk.len() < CHUNK => chunk.push((data, diff)),
            Some(_) => {
                let mut chunk = Vec::with_capacity(CHUNK);
                chunk.push((data, diff));
                chunks.push(chunk);
            }
            None => chunks.push(vec![(data, diff)]),
        }
    }

    /// Takes every update out of `updates` (data, time, diff), in order.
    pub(crate) fn push_all(&mut self, updates: &mut Vec<(D, u64, isize)>) {
        for (data, time, diff) in updates.drain(..) {
            self.push(data, time, diff);
        }
    }

    /// Removes the updates at times before `frontier` and returns them by time, ascending;
    /// within one time in the order they were pushed. Later updates stay.
    pub(crate) fn take_before(&mut self, frontier: u64) -> Taken<D> {
        let later = self.by_time.split_off(&frontier);
        std::mem::replace(&mut self.by_time, later)
    }
}

/// The updates of [`CapturedUpdates::take_before`] one by one, in the order it gives them.
pub(crate) fn in_time_order<D>(taken: Taken<D>) -> impl Iterator<Item = (D, isize)> {
    taken.into_values().flatten().flatten()
}

/// What [`CapturedUpdates::take_before`] gives: the chunks of each time's updates, by time.
pub(crate) type Taken<D> = BTreeMap<u64, Vec<Vec<(D, isize)>>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_the_earlier_times_in_order_and_keeps_the_rest() {
        let mut captured = CapturedUpdates::default();
        captured.push("c", 7, 1);
        captured.push("a", 3, 1);
        captured.push("late", 9, -1);
        captured.push("b", 3, -1);
        captured.push("d", 8, 2);

        let taken: Vec<_> = in_time_order(captured.take_before(8)).collect();
        assert_eq!(taken, vec![("a", 1), ("b", -1), ("c", 1)]);

        // nothing before 8 is left; a second take at the same frontier finds nothing
        assert!(captured.take_before(8).is_empty());
        captured.push("e", 8, 1);
        let rest = captured.take_before(u64::MAX);
        assert_eq!(rest.keys().copied().collect::<Vec<_>>(), vec![8, 9]);
        assert_eq!(
            in_time_order(rest).collect::<Vec<_>>(),
            vec![("d", 2), ("e", 1), ("late", -1)]
        );
    }

    #[test]
    fn a_time_with_more_updates_than_a_chunk_keeps_their_order() {
        let mut captured = CapturedUpdates::default();
        let n = 3 * CHUNK + 5;
        for i in 0..n {
            captured.push(i, 4 + (i % 2) as u64, 1);
        }
        let taken = captured.take_before(5);
        let evens: Vec<usize> = in_time_order(taken).map(|(i, _)| i).collect();
        assert_eq!(evens, (0..n).step_by(2).collect::<Vec<_>>());
        let odds: Vec<usize> = in_time_order(captured.take_before(6))
            .map(|(i, _)| i)
            .collect();
        assert_eq!(odds, (1..n).step_by(2).collect::<Vec<_>>());
    }
}
