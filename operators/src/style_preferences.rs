//! Each user's learned style preference (SPEC §6): the 16-dimension vector that skill
//! selection compares skills' styles with, and how much feedback the user has given (which sets
//! the exploration rate).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;
use crate::math::skills::{
    base_skill, update_style_preference, StyleVector, NEUTRAL_STYLE, STYLE_DIMENSIONS,
};
use crate::skill_feedback::{latest_votes, present_values, FeedbackVote, MessageKey};

/// Style components are kept in millionths so the record is exact, ordered and hashable.
pub const STYLE_SCALE: f64 = 1_000_000.0;

/// A user's style preference as the dataflow maintains it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct UserStyle {
    /// The style vector in millionths, rounded to nearest.
    pub style_micro: [u32; STYLE_DIMENSIONS],
    /// Answers the user has voted on (a changed vote counts once).
    pub feedback_count: u64,
}

impl UserStyle {
    pub fn style(&self) -> StyleVector {
        let mut v = [0.0; STYLE_DIMENSIONS];
        for (x, m) in v.iter_mut().zip(self.style_micro) {
            *x = f64::from(m) / STYLE_SCALE;
        }
        v
    }

    /// `style` rounded to millionths.
    pub fn from_style(style: &StyleVector, feedback_count: u64) -> Self {
        let mut style_micro = [0; STYLE_DIMENSIONS];
        for (m, x) in style_micro.iter_mut().zip(style) {
            *m = (x.clamp(0.0, 1.0) * STYLE_SCALE).round() as u32;
        }
        UserStyle {
            style_micro,
            feedback_count,
        }
    }
}

/// The style a user's counting votes lead to: starting from [`NEUTRAL_STYLE`], each vote in
/// [`FeedbackVote`] order (event time, then event id) moves the vector by
/// [`update_style_preference`] towards (reward > 0) or away from (reward < 0) the voted skill's
/// style. Votes on skills that are not base skills, and neutral votes, leave it unchanged.
pub fn fold_style<'a>(votes: impl IntoIterator<Item = &'a FeedbackVote>) -> StyleVector {
    votes.into_iter().fold(NEUTRAL_STYLE, |style, vote| {
        match base_skill(&vote.skill_id) {
            Some(skill) => update_style_preference(&style, &skill.style, vote.reward),
            None => style,
        }
    })
}

/// Each user's style preference.
///
/// Input: `((tenant, user, message_id), vote)` records, as for
/// [`crate::skill_feedback::skill_feedback`]: per message only the latest present vote counts.
///
/// Output: `((tenant, user), style)` with multiplicity 1 for every user with at least one
/// counting vote, where `style.style_micro` is [`fold_style`] of the user's counting votes in
/// vote order (rounded to millionths only at the end) and `style.feedback_count` their number.
///
/// Cost: a vote re-folds its user's counting votes (linear in the user's answered messages).
pub fn style_preferences<'scope, T>(
    votes: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (UserKey, UserStyle)>
where
    T: Timestamp + Lattice + Ord,
{
    style_preferences_of(latest_votes(votes))
}

/// [`style_preferences`] of the counting votes ([`latest_votes`]).
pub fn style_preferences_of<'scope, T>(
    counting: VecCollection<'scope, T, (MessageKey, FeedbackVote)>,
) -> VecCollection<'scope, T, (UserKey, UserStyle)>
where
    T: Timestamp + Lattice + Ord,
{
    counting
        .map(|((tenant, user, _message), vote)| ((tenant, user), vote))
        .reduce(|_user, votes, output| {
            // values come sorted: vote order
            let counted = present_values(votes);
            if !counted.is_empty() {
                let style = fold_style(counted.iter().copied());
                output.push((UserStyle::from_style(&style, counted.len() as u64), 1));
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vote(ts: i64, skill: &str, reward: i8) -> FeedbackVote {
        FeedbackVote {
            ts_micros: ts,
            event_id: format!("e{ts}"),
            bucket: 0,
            skill_id: skill.into(),
            reward,
        }
    }

    #[test]
    fn liking_a_skill_moves_the_style_a_tenth_of_the_way_towards_it() {
        let concise = base_skill("concise").unwrap().style;
        let style = fold_style(&[vote(1, "concise", 1)]);
        for d in 0..STYLE_DIMENSIONS {
            let want = 0.5 + 0.1 * (concise[d] - 0.5);
            assert!((style[d] - want).abs() < 1e-12, "dimension {d}");
        }
        // disliking moves away; unknown skills and neutral votes change nothing
        let away = fold_style(&[
            vote(1, "concise", -1),
            vote(2, "nope", 1),
            vote(3, "concise", 0),
        ]);
        for d in 0..STYLE_DIMENSIONS {
            let want = (0.5 - 0.1 * (concise[d] - 0.5)).clamp(0.0, 1.0);
            assert!((away[d] - want).abs() < 1e-12, "dimension {d}");
        }
    }

    #[test]
    fn micro_units_round_trip() {
        let s = UserStyle::from_style(&[0.1234567; STYLE_DIMENSIONS], 3);
        assert_eq!(s.style_micro[0], 123_457);
        assert!((s.style()[5] - 0.123457).abs() < 1e-12);
    }
}
