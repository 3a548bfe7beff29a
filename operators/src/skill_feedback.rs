//! Thompson-sampling evidence (SPEC §6): feedback tallies per (tenant, user, context bucket,
//! skill), and per (tenant, bucket, skill) over all of the tenant's users: the population whose
//! posterior is the prior of a user with little feedback of their own
//! ([`crate::math::beta::user_posterior`]).
//!
//! The posteriors themselves are not collection data: they are a closed formula of the two
//! tallies, computed when read. Keeping integer tallies in the dataflow means a feedback event
//! changes two records, not the posterior of every user that borrows the population prior.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::math::beta::FeedbackCounts;

/// `(tenant, user, message_id)`: one answer, which is judged by its latest vote.
pub type MessageKey = (String, String, String);

/// `(tenant, user, context bucket, skill_id)`.
pub type SkillKey = (String, String, u32, String);

/// `(tenant, context bucket, skill_id)`: a tenant's population, never across tenants.
pub type PopulationKey = (String, u32, String);

/// One feedback event as the dataflow sees it. Ordered by event time, then event id: the order
/// in which later votes on the same message replace earlier ones.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FeedbackVote {
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    pub event_id: String,
    /// [`crate::math::beta::context_bucket`] of the feedback's context.
    pub bucket: u32,
    pub skill_id: String,
    /// −1, 0 or 1 (any sign counts as its sign).
    pub reward: i8,
}

/// Counted votes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct FeedbackTally {
    /// Votes with reward > 0.
    pub successes: u64,
    /// Votes with reward < 0.
    pub failures: u64,
    /// Votes with reward 0: they move no posterior but count as feedback given.
    pub neutral: u64,
}

impl FeedbackTally {
    /// The tally as posterior counts (neutral votes add nothing).
    pub fn counts(&self) -> FeedbackCounts {
        FeedbackCounts::new(self.successes as f64, self.failures as f64)
    }

    /// All votes counted.
    pub fn votes(&self) -> u64 {
        self.successes + self.failures + self.neutral
    }

    /// `self` without `other`'s votes (saturating): a population without one user.
    pub fn without(&self, other: &FeedbackTally) -> FeedbackTally {
        FeedbackTally {
            successes: self.successes.saturating_sub(other.successes),
            failures: self.failures.saturating_sub(other.failures),
            neutral: self.neutral.saturating_sub(other.neutral),
        }
    }
}

/// −1, 0 or 1: which count of a [`FeedbackTally`] a reward adds to.
fn outcome(reward: i8) -> i8 {
    reward.signum()
}

/// The tallies of feedback, per user and per population.
///
/// Input: `((tenant, user, message_id), vote)` records. A vote is present when its summed
/// multiplicity is positive (present twice: once). Per message only the **latest** present
/// vote counts (greatest [`FeedbackVote`]: event time, then event id), so a user who changes
/// their mind about an answer is counted once, as they decided last.
///
/// Output, a pair of collections, each record with multiplicity 1:
/// - `((tenant, user, bucket, skill), tally)` for every such key that the counting vote of at
///   least one message has, where `tally` counts those votes by the sign of their reward;
/// - `((tenant, bucket, skill), tally)`: the same summed over the tenant's users.
///
/// Cost: a vote re-derives its message's latest vote (linear in that message's votes, usually
/// one), then changes at most two counts per output.
pub fn skill_feedback<'scope, T>(
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> (
    VecCollection<'scope, T, (SkillKey, FeedbackTally)>,
    VecCollection<'scope, T, (PopulationKey, FeedbackTally)>,
)
where
    T: Timestamp + Lattice + Ord,
{
    skill_feedback_of(latest_votes(votes))
}

/// [`skill_feedback`] of the counting votes ([`latest_votes`]), when they are derived once for
/// every view that reads them.
pub fn skill_feedback_of<'scope, T>(
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> (
    VecCollection<'scope, T, (SkillKey, FeedbackTally)>,
    VecCollection<'scope, T, (PopulationKey, FeedbackTally)>,
)
where
    T: Timestamp + Lattice + Ord,
{
    let by_user = tally(counting.clone().map(|((tenant, user, _message), vote)| {
        (
            (tenant, user, vote.bucket, vote.skill_id),
            outcome(vote.reward),
        )
    }));
    let by_population = tally(counting.map(|((tenant, _user, _message), vote)| {
        ((tenant, vote.bucket, vote.skill_id), outcome(vote.reward))
    }));
    (by_user, by_population)
}

/// The counting votes: per message its latest present vote.
///
/// Input: `((tenant, user, message_id), vote)` records. Output: for every message with a vote
/// of positive summed multiplicity, `(message, vote)` with multiplicity 1, where `vote` is the
/// greatest such [`FeedbackVote`] (event time, then event id). Every view of feedback reads
/// these; derive them once and hand them to the `_of` variants ([`skill_feedback_of`], the style
/// preferences' [`style_preferences_of`](super::style_preferences::style_preferences_of), …)
/// rather than have each arrange every vote twice again. (A doc link only: this module is below
/// `style_preferences`, which reads its votes.)
pub fn latest_votes<'scope, T>(
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (MessageKey, FeedbackVote)>
where
    T: Timestamp + Lattice + Ord,
{
    votes.reduce(|_message, votes, latest| {
        // values come sorted; the last present one is the latest
        if let Some((vote, _)) = votes.iter().rev().find(|(_, m)| *m > 0) {
            latest.push(((*vote).clone(), 1));
        }
    })
}

/// The present values of a reduce's input (positive multiplicity), in the order given.
pub(crate) fn present_values<'a, V>(values: &[(&'a V, isize)]) -> Vec<&'a V> {
    values
        .iter()
        .filter(|(_, m)| *m > 0)
        .map(|(v, _)| *v)
        .collect()
}

/// `(key, tally)` for every key of `outcomes`, counting its records by outcome (−1, 0, 1).
fn tally<'scope, T, K>(
    outcomes: VecCollection<'scope, T, (K, i8)>,
) -> VecCollection<'scope, T, (K, FeedbackTally)>
where
    T: Timestamp + Lattice + Ord,
    K: differential_dataflow::ExchangeData + std::hash::Hash,
{
    outcomes
        .count()
        .map(|((key, outcome), n)| (key, (outcome, n)))
        .reduce(|_key, counts, output| {
            let mut tally = FeedbackTally::default();
            for ((outcome, n), m) in counts {
                if *m <= 0 || *n <= 0 {
                    continue;
                }
                let n = *n as u64;
                match outcome {
                    1 => tally.successes += n,
                    -1 => tally.failures += n,
                    _ => tally.neutral += n,
                }
            }
            if tally.votes() > 0 {
                output.push((tally, 1));
            }
        })
}
