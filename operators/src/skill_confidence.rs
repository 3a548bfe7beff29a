//! Two per-user summaries of skill feedback that depend on the order of the votes (SPEC §6):
//!
//! - [`skill_confidences`]: each user's confidence in each skill, an exponential moving average
//!   of their rewards ([`update_skill_confidence`]: α = 0.3 for the first ten uses, then 0.1;
//!   target 0.5 + 0.3·r; clamped to [0.2, 0.9]).
//! - [`discounted_skill_feedback`]: each user's feedback per (context bucket, skill) with old
//!   votes discounted exponentially (half-life in seconds of event time), for users whose
//!   preferences drift. The counts are kept as of the user's latest vote there; a reader carries
//!   them forward to its own time with [`DiscountedTally::at`], so no operator reads a clock
//!   and nothing needs updating while no feedback arrives.
//!
//! Both read the counting votes of [`crate::skill_feedback::skill_feedback`]: per message only
//! the latest present vote.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::math::beta::{gamma_for_half_life, DiscountedFeedback, FeedbackCounts};
use crate::math::skills::{update_skill_confidence, INITIAL_SKILL_CONFIDENCE};
use crate::skill_feedback::{latest_votes, present_values, FeedbackVote, MessageKey, SkillKey};

/// `(tenant, user, skill_id)`.
pub type UserSkillKey = (String, String, String);

/// Confidences and discounted counts are kept in millionths so records are exact and ordered.
pub const MICRO: f64 = 1_000_000.0;

/// A user's confidence in one skill.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SkillConfidence {
    /// The confidence in millionths (200 000 ..= 900 000 once any non-neutral vote counted).
    pub confidence_micro: u32,
    /// Counting votes on answers made with the skill (its uses that got feedback).
    pub uses: u64,
}

impl SkillConfidence {
    pub fn confidence(&self) -> f64 {
        f64::from(self.confidence_micro) / MICRO
    }
}

/// The confidence `votes` (in the order given) lead to, from [`INITIAL_SKILL_CONFIDENCE`]: the
/// i-th vote (from 0) updates it with [`update_skill_confidence`] and `uses_before` = i.
pub fn fold_skill_confidence<'a>(votes: impl IntoIterator<Item = &'a FeedbackVote>) -> f64 {
    votes
        .into_iter()
        .enumerate()
        .fold(INITIAL_SKILL_CONFIDENCE, |confidence, (i, vote)| {
            update_skill_confidence(confidence, vote.reward, i as u64)
        })
}

/// Each user's confidence in each skill they have voted on.
///
/// Input: `((tenant, user, message_id), vote)` records; per message only the latest present
/// vote counts (as in [`crate::skill_feedback::skill_feedback`]).
///
/// Output: `((tenant, user, skill_id), confidence)`, multiplicity 1, for every (user, skill)
/// with at least one counting vote: `confidence_micro` is [`fold_skill_confidence`] of those
/// votes in vote order (event time, then event id; whatever the bucket), rounded to millionths
/// only at the end, and `uses` their number.
///
/// Cost: a vote re-folds the counting votes of its (user, skill).
pub fn skill_confidences<'scope, T>(
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (UserSkillKey, SkillConfidence)>
where
    T: Timestamp + Lattice + Ord,
{
    skill_confidences_of(latest_votes(votes))
}

/// [`skill_confidences`] of the counting votes ([`latest_votes`]).
pub fn skill_confidences_of<'scope, T>(
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (UserSkillKey, SkillConfidence)>
where
    T: Timestamp + Lattice + Ord,
{
    counting
        .map(|((tenant, user, _message), vote)| ((tenant, user, vote.skill_id.clone()), vote))
        .reduce(|_key, votes, output| {
            // values come sorted: vote order
            let counted = present_values(votes);
            if !counted.is_empty() {
                let confidence = fold_skill_confidence(counted.iter().copied());
                output.push((
                    SkillConfidence {
                        confidence_micro: (confidence * MICRO).round() as u32,
                        uses: counted.len() as u64,
                    },
                    1,
                ));
            }
        })
}

/// Discounted feedback counts of one (user, bucket, skill), as of its latest vote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DiscountedTally {
    /// Discounted successes at `as_of_secs`, in millionths.
    pub successes_micro: u64,
    /// Discounted failures at `as_of_secs`, in millionths.
    pub failures_micro: u64,
    /// Event time of the latest counting vote, seconds since the Unix epoch.
    pub as_of_secs: i64,
    /// The half-life the counts were discounted with, seconds.
    pub half_life_secs: u64,
}

impl DiscountedTally {
    /// The counts at `now_secs`: carried forward from `as_of_secs` with the same discount (a
    /// `now_secs` before it leaves them as they are).
    pub fn at(&self, now_secs: i64) -> FeedbackCounts {
        let counts = FeedbackCounts::new(
            self.successes_micro as f64 / MICRO,
            self.failures_micro as f64 / MICRO,
        );
        DiscountedFeedback {
            counts,
            as_of: self.as_of_secs as f64,
            gamma: gamma_for_half_life(self.half_life_secs.max(1) as f64),
        }
        .advanced_to(now_secs as f64)
        .counts
    }
}

/// The discounted counts `votes` (in the order given) lead to, as of the latest of their times
/// (whole seconds of event time, rounded down): each vote at time tᵢ weighs 0.5^((as_of − tᵢ) /
/// half_life) ([`DiscountedFeedback::observed`]). `None` for no votes.
pub fn fold_discounted<'a>(
    votes: impl IntoIterator<Item = &'a FeedbackVote>,
    half_life_secs: u64,
) -> Option<DiscountedTally> {
    let gamma = gamma_for_half_life(half_life_secs.max(1) as f64);
    let mut votes = votes.into_iter().peekable();
    let start = votes.peek()?.ts_micros.div_euclid(1_000_000);
    let discounted = votes.fold(DiscountedFeedback::new(start as f64, gamma), |d, vote| {
        d.observed(vote.ts_micros.div_euclid(1_000_000) as f64, vote.reward)
    });
    Some(DiscountedTally {
        successes_micro: (discounted.counts.successes * MICRO).round() as u64,
        failures_micro: (discounted.counts.failures * MICRO).round() as u64,
        as_of_secs: discounted.as_of as i64,
        half_life_secs,
    })
}

/// Each user's feedback per (bucket, skill) with old votes discounted.
///
/// Input: `((tenant, user, message_id), vote)` records; per message only the latest present
/// vote counts. `half_life_secs`: after that much event time a vote weighs half.
///
/// Output: `((tenant, user, bucket, skill_id), tally)`, multiplicity 1, for every key with at
/// least one counting vote: [`fold_discounted`] of its counting votes in vote order (event
/// time, then event id).
///
/// Cost: a vote re-folds the counting votes of its (user, bucket, skill).
pub fn discounted_skill_feedback<'scope, T>(
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
    half_life_secs: u64,
) -> VecCollection<'scope, T, (SkillKey, DiscountedTally)>
where
    T: Timestamp + Lattice + Ord,
{
    discounted_skill_feedback_of(latest_votes(votes), half_life_secs)
}

/// [`discounted_skill_feedback`] of the counting votes ([`latest_votes`]).
pub fn discounted_skill_feedback_of<'scope, T>(
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
    half_life_secs: u64,
) -> VecCollection<'scope, T, (SkillKey, DiscountedTally)>
where
    T: Timestamp + Lattice + Ord,
{
    counting
        .map(|((tenant, user, _message), vote)| {
            ((tenant, user, vote.bucket, vote.skill_id.clone()), vote)
        })
        .reduce(move |_key, votes, output| {
            let counted = votes.iter().filter(|(_, m)| *m > 0).map(|(v, _)| *v);
            if let Some(tally) = fold_discounted(counted, half_life_secs) {
                output.push((tally, 1));
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(secs: i64, reward: i8) -> FeedbackVote {
        FeedbackVote {
            ts_micros: secs * 1_000_000,
            event_id: format!("e{secs}"),
            bucket: 0,
            skill_id: "concise".into(),
            reward,
        }
    }

    #[test]
    fn confidence_moves_three_tenths_of_the_way_to_the_target_while_young() {
        // 0.3·0.8 + 0.7·0.5 = 0.59; then 0.3·0.2 + 0.7·0.59 = 0.473
        let c = fold_skill_confidence(&[vote(1, 1)]);
        assert!((c - 0.59).abs() < 1e-12, "{c}");
        let c = fold_skill_confidence(&[vote(1, 1), vote(2, -1)]);
        assert!((c - 0.473).abs() < 1e-12, "{c}");
        // neutral votes leave it, but count as uses
        let c = fold_skill_confidence(&[vote(1, 0)]);
        assert_eq!(c, INITIAL_SKILL_CONFIDENCE);
    }

    #[test]
    fn after_ten_uses_confidence_moves_a_tenth_and_stays_clamped() {
        let likes: Vec<FeedbackVote> = (0..10).map(|s| vote(s, 1)).collect();
        let ten = fold_skill_confidence(&likes);
        // 0.8 − 0.3·0.7¹⁰ (the EMA from 0.5 towards 0.8), under the 0.9 cap
        assert!(
            (ten - (0.8 - 0.3 * 0.7_f64.powi(10))).abs() < 1e-12,
            "{ten}"
        );
        let mut eleven = likes.clone();
        eleven.push(vote(10, -1));
        let c = fold_skill_confidence(&eleven);
        assert!((c - (0.1 * 0.2 + 0.9 * ten)).abs() < 1e-12, "{c}");
        let dislikes: Vec<FeedbackVote> = (0..40).map(|s| vote(s, -1)).collect();
        assert!(fold_skill_confidence(&dislikes) >= 0.2);
    }

    #[test]
    fn a_vote_one_half_life_old_counts_half() {
        let day = 86_400;
        let t = fold_discounted(&[vote(0, 1), vote(day, -1)], day as u64).unwrap();
        assert_eq!(t.as_of_secs, day);
        assert_eq!(t.successes_micro, 500_000);
        assert_eq!(t.failures_micro, 1_000_000);
        // and a day later both halve again
        let later = t.at(2 * day);
        assert!((later.successes - 0.25).abs() < 1e-6 && (later.failures - 0.5).abs() < 1e-6);
        // reading before the latest vote leaves the counts
        assert!((t.at(0).failures - 1.0).abs() < 1e-12);
        assert!(fold_discounted(&[], day as u64).is_none());
    }
}
