//! Retrieval preference learning (seed 000 §4.3; issue 33): per user, which kinds of memory
//! went into answers the user voted up and which into answers voted down, so that recall can
//! boost the kinds that served them and lower the others at the reranking stage. A memory's
//! kind is its traits: who said it (the episode's role), what it is (its content type: prose,
//! a question, a list, code, a link) and where it comes from (the user's own memory or the
//! tenant's shared domain memory).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;
use crate::memories::{JudgedUse, Memory, MemoryId, RetrievalTrait};

/// How a user's answers built with memories of one trait were judged.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TraitTally {
    /// Answers voted up (latest vote) that used at least one memory of the trait.
    pub up: u64,
    /// Answers voted down that did.
    pub down: u64,
}

impl TraitTally {
    /// The factor recall multiplies a memory of this trait by: 1 + strength·(up − down)/(up +
    /// down + 2), i.e. strength times how far the Beta(1 + up, 1 + down) mean is from ½, twice;
    /// within (1 − strength, 1 + strength), and 1 with no votes.
    pub fn boost(&self, strength: f64) -> f64 {
        let (up, down) = (self.up as f64, self.down as f64);
        1.0 + strength * (up - down) / (up + down + 2.0)
    }
}

/// `((tenant, user), trait)`.
pub type TraitKey = (UserKey, RetrievalTrait);

/// Each user's retrieval preferences.
///
/// Input: the uses of memories joined to them, as [`crate::memories::used_memories`] gives
/// them. Output: `(((tenant, user), trait), tally)`, multiplicity 1, for every user and trait
/// with at least one voted answer (reward ≠ 0) that used a memory with that trait (a memory
/// with traits: an episode; its traits are [`crate::memories::RetrievalTrait::of`]'s and its
/// age when the answer was given, [`crate::memories::RetrievalTrait::age`]) and counts (its
/// multiplicity positive): `up` the number of distinct such answers with reward > 0, `down`
/// with reward < 0.
///
/// Cost: a vote or a use re-counts the user's answers of the traits concerned; only used
/// memories are read.
pub fn retrieval_preferences<'scope, T>(
    used: VecCollection<'scope, T, (MemoryId, (Memory, JudgedUse))>,
) -> VecCollection<'scope, T, (TraitKey, TraitTally)>
where
    T: Timestamp + Lattice + Ord,
{
    used.flat_map(|(_, (memory, used))| {
        let traits = memory.traits.filter(|_| used.reward != 0);
        // an episode's own traits, and how old it was when the answer used it
        let age = RetrievalTrait::age(memory.created_secs, used.at_secs);
        let traits = traits.map(|t| t.into_iter().chain([age]));
        traits
            .into_iter()
            .flatten()
            .map(move |t| ((used.user.clone(), t), (used.message.clone(), used.reward)))
    })
    // an answer counts once for a trait, however many of its memories have it (`distinct`
    // counts a record whose multiplicity is positive)
    .distinct()
    .reduce(|_key, answers, output| {
        let mut tally = TraitTally::default();
        for ((_, reward), m) in answers {
            if *m > 0 && *reward > 0 {
                tally.up += 1;
            } else if *m > 0 && *reward < 0 {
                tally.down += 1;
            }
        }
        if tally.up + tally.down > 0 {
            output.push((tally, 1));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boost_is_the_beta_mean_scaled_by_strength() {
        let none = TraitTally::default();
        assert_eq!(none.boost(0.3), 1.0);
        // 3 up, 1 down: (3 − 1)/(4 + 2) = 1/3 → 1 + 0.3/3 = 1.1
        let liked = TraitTally { up: 3, down: 1 };
        assert!((liked.boost(0.3) - 1.1).abs() < 1e-12);
        // 0 up, 4 down: −4/6 → 1 − 0.2
        let disliked = TraitTally { up: 0, down: 4 };
        assert!((disliked.boost(0.3) - 0.8).abs() < 1e-12);
        // bounded by 1 ± strength however many votes
        let many = TraitTally { up: 1000, down: 0 };
        assert!(many.boost(0.3) < 1.3 && many.boost(0.3) > 1.29);
    }
}
