//! MARK scores of the memories answers used (SPEC §5; seed 003): how often each episode was
//! recalled into an answer, how the answers it went into were judged, and the trust,
//! persistence and retention that follow.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::math::mark::{MemoryTrust, TrustParams, Validation};
use crate::skill_feedback::{latest_votes, FeedbackVote, MessageKey};

/// `(tenant, user, episode id)`.
pub type MemoryKey = (String, String, String);

/// One memory an answer was built with.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MemoryUse {
    /// When the answer was given, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// The episode recalled into it.
    pub episode_id: String,
}

/// A memory's MARK state: its recall history and what follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MemoryMark {
    /// C_total: answers the memory went into.
    pub recalls: u64,
    /// C_correct: of those, answers whose latest vote was positive.
    pub correct: u64,
    /// C_incorrect: answers whose latest vote was negative.
    pub incorrect: u64,
    /// When it was last recalled, microseconds since the Unix epoch.
    pub last_recalled_micros: i64,
    /// Trust TS after the recalls in time order, in millionths.
    pub trust_micro: u32,
    /// Persistence PS, in millionths.
    pub persistence_micro: u32,
    /// Whether the retention policy keeps the memory (TS > TS_init, or PS > a_PS·(1 − TS)).
    pub retained: bool,
}

impl MemoryMark {
    /// FS, the feedback score MRS takes: the sign of correct − incorrect.
    pub fn feedback(&self) -> i8 {
        (self.correct as i64 - self.incorrect as i64).signum() as i8
    }

    pub fn trust(&self) -> f64 {
        f64::from(self.trust_micro) / 1e6
    }

    pub fn persistence(&self) -> f64 {
        f64::from(self.persistence_micro) / 1e6
    }
}

/// The MARK state of every memory answers used.
///
/// Input: the memories answers used, `((tenant, user, message_id), use)` (a record counts once
/// when its multiplicity is positive), and feedback votes `((tenant, user, message_id), vote)`
/// (per message only its latest present vote counts, as for skills). Output:
/// `((tenant, user, episode_id), mark)`, multiplicity 1, for every episode some present use
/// names: its uses, each validated by its message's latest vote (reward > 0 correct, < 0
/// incorrect, 0 or no vote unvalidated), folded in order of (answer time, message id) with the
/// default [`TrustParams`] from the initial trust ([`MemoryTrust::after_recall`]), then the
/// persistence and retention of the result.
///
/// Cost: a new use or a vote re-folds the uses of the memories concerned (linear in their
/// recalls).
pub fn memory_marks<'scope, T>(
    uses: VecCollection<'scope, T, (MessageKey, MemoryUse)>,
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (MemoryKey, MemoryMark)>
where
    T: Timestamp + Lattice + Ord,
{
    memory_marks_of(uses, latest_votes(votes))
}

/// [`memory_marks`] with the counting votes ([`latest_votes`]).
pub fn memory_marks_of<'scope, T>(
    uses: VecCollection<'scope, T, (MessageKey, MemoryUse)>,
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (MemoryKey, MemoryMark)>
where
    T: Timestamp + Lattice + Ord,
{
    marks_of_judged(judged_uses(uses, counting))
}

/// [`memory_marks`] of the uses as [`judged_uses`] gives them.
pub fn marks_of_judged<'scope, T>(
    judged: VecCollection<'scope, T, (MemoryKey, (i64, String, i8))>,
) -> VecCollection<'scope, T, (MemoryKey, MemoryMark)>
where
    T: Timestamp + Lattice + Ord,
{
    let params = TrustParams::default();
    judged.reduce(move |_memory, input, output| {
        // values come sorted by (time, message id)
        let mut trust = MemoryTrust::new(&params);
        let mut last = i64::MIN;
        for ((ts, _message, reward), m) in input {
            if *m <= 0 {
                continue;
            }
            let validation = match reward {
                1.. => Validation::Correct,
                ..=-1 => Validation::Incorrect,
                0 => Validation::Unvalidated,
            };
            trust = trust.after_recall(validation, &params);
            last = last.max(*ts);
        }
        if trust.recalls > 0 {
            output.push((
                MemoryMark {
                    recalls: trust.recalls,
                    correct: trust.correct,
                    incorrect: trust.incorrect,
                    last_recalled_micros: last,
                    trust_micro: micro(trust.trust),
                    persistence_micro: micro(trust.persistence(&params)),
                    retained: trust.is_retained(&params),
                },
                1,
            ));
        }
    })
}

/// Every present use of a memory with its validation: `((tenant, user, episode_id), (answer
/// time, message id, reward))`, multiplicity 1, where reward is the sign of the message's
/// counting vote (`counting`: one per message, as [`latest_votes`] gives), 0 when it has none.
/// A use counts once when its multiplicity is positive.
pub fn judged_uses<'scope, T>(
    uses: VecCollection<'scope, T, (MessageKey, MemoryUse)>,
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (MemoryKey, (i64, String, i8))>
where
    T: Timestamp + Lattice + Ord,
{
    let uses = uses.threshold(|_, m: &isize| isize::from(*m > 0));
    let rewards = counting.map(|(message, vote)| (message, vote.reward.signum()));
    let judged = uses
        .clone()
        .join_map(rewards.clone(), |message, used, reward| {
            let (tenant, user, id) = message.clone();
            (
                (tenant, user, used.episode_id.clone()),
                (used.ts_micros, id, *reward),
            )
        });
    let voted = rewards.map(|(message, _)| message);
    let unjudged = uses.antijoin(voted).map(|((tenant, user, id), used)| {
        ((tenant, user, used.episode_id), (used.ts_micros, id, 0i8))
    });
    judged.concat(unjudged)
}

/// A value in [0, 1] in millionths, rounded to nearest.
fn micro(x: f64) -> u32 {
    (x.clamp(0.0, 1.0) * 1e6).round() as u32
}
