//! Preferences and their lifecycle (SPEC §4.3, §5): each promoted pattern yields a preference
//! whose retention decays, R(t) = e^(−(t − last activation)/S), and which is active, inactive
//! or archived as R crosses 0.3 and 0.05.
//!
//! - [`preference_traces`] (in the memory dataflow, at log-offset times): per pattern, the
//!   decay trace its member corrections build: created by the first, reinforced by each later
//!   one (stability × 2, clock reset), unless the trace had already been archived by then.
//! - [`lifecycle_states`] (in a dataflow whose timestamps are engine time, whole seconds): the
//!   state of every trace at every time. A trace that arrives at time t emits its state at t,
//!   and, at each future second where R crosses a threshold, the retraction of the old state
//!   and the insertion of the new one (the temporal-filter idiom). Nothing polls and no
//!   operator reads a clock: the transitions are updates at future timestamps, and they become
//!   visible when the input frontier (the engine clock) passes them.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, VecCollection};
use serde::{Deserialize, Serialize};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::Operator;
use timely::progress::Timestamp;

use crate::correction_clusters::{CorrectionPoint, PatternRecord, UserKey};
use crate::math::decay::{
    lifecycle_state, LifecycleState, LifecycleThresholds, RetentionTrace, StabilityParams,
};

/// `((tenant, user), cluster_id)`: a preference is named by the pattern it evolved from.
pub type PreferenceKey = (UserKey, String);

/// The decay trace of a preference, in whole seconds so it can be collection data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PreferenceTrace {
    /// Event time of the last activation that counted, seconds since the Unix epoch.
    pub last_activation_secs: i64,
    /// Stability S, seconds (rounded to the nearest second).
    pub stability_secs: i64,
    /// Activations that counted: the creation and every reinforcement.
    pub activations: u32,
}

impl PreferenceTrace {
    /// The trace built by corrections at `activations` (event time in seconds, and confidence
    /// 0..=1), taken in time order (ties by confidence): the first creates it with stability
    /// [`StabilityParams::initial_stability`] of its confidence (no emphasis); each later one
    /// reinforces it ([`RetentionTrace::reinforced_at`]) if the trace is not archived by then
    /// (an archived preference is cold storage: a new signal starts a new one, it does not
    /// revive this one). `None` for no activations.
    pub fn from_activations(
        activations: &[(i64, f64)],
        params: &StabilityParams,
        thresholds: &LifecycleThresholds,
    ) -> Option<PreferenceTrace> {
        let mut sorted = activations.to_vec();
        sorted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        let (&(first_at, first_confidence), rest) = sorted.split_first()?;
        let created = RetentionTrace::new(
            first_at as f64,
            params.initial_stability(first_confidence, 0.0),
        );
        let later = rest.iter().map(|&(at, _)| at);
        Some(PreferenceTrace::reinforced(
            created, later, params, thresholds,
        ))
    }

    /// The trace `created`, reinforced ([`RetentionTrace::reinforced_at`]) at each of `times`
    /// (ascending) at which it is not archived yet, as whole seconds.
    pub fn reinforced(
        created: RetentionTrace,
        times: impl IntoIterator<Item = i64>,
        params: &StabilityParams,
        thresholds: &LifecycleThresholds,
    ) -> PreferenceTrace {
        let (mut trace, mut counted) = (created, 1);
        for at in times {
            let state = lifecycle_state(
                at as f64 - trace.last_activation,
                trace.stability,
                thresholds,
            );
            if state.accepts_reinforcement() {
                trace = trace.reinforced_at(at as f64, params);
                counted += 1;
            }
        }
        PreferenceTrace {
            last_activation_secs: trace.last_activation as i64,
            stability_secs: trace.stability.round() as i64,
            activations: counted,
        }
    }

    /// Retention at second `now`.
    pub fn retention_at(&self, now: i64) -> f64 {
        RetentionTrace::new(self.last_activation_secs as f64, self.stability_secs as f64)
            .retention_at(now as f64)
    }

    /// The state at second `now`: [`lifecycle_state`] of the time elapsed since the last
    /// activation.
    pub fn state_at(&self, now: i64, thresholds: &LifecycleThresholds) -> LifecycleState {
        lifecycle_state(
            (now - self.last_activation_secs) as f64,
            self.stability_secs as f64,
            thresholds,
        )
    }

    /// The seconds after `now` at which [`Self::state_at`] changes, with the state entered, in
    /// time order (at most two: to inactive, to archived). Each is the first whole second
    /// strictly after the exact crossing time.
    pub fn changes_after(
        &self,
        now: i64,
        thresholds: &LifecycleThresholds,
    ) -> Vec<(i64, LifecycleState)> {
        let mut changes = Vec::new();
        let mut state = self.state_at(now, thresholds);
        let mut at = now;
        while let Some(next) =
            RetentionTrace::new(self.last_activation_secs as f64, self.stability_secs as f64)
                .lifecycle_at(at as f64, thresholds)
                .1
        {
            // the old state holds up to and including the crossing, the new one after it
            let second = next.at.floor() as i64 + 1;
            let entered = self.state_at(second, thresholds);
            if entered == state {
                break;
            }
            changes.push((second, entered));
            state = entered;
            at = second;
        }
        changes
    }
}

/// The decay traces of the preferences.
///
/// Input: the present corrections as
/// [`crate::correction_clusters::present_corrections`] gives them, cluster memberships `((tenant, user), (correction_id,
/// cluster_id))` as [`crate::correction_clusters::correction_clusters`] produces them, and the
/// patterns of [`crate::correction_clusters::promote_patterns`]. A membership or pattern counts
/// once when its multiplicity is positive.
///
/// Output: `(((tenant, user), cluster_id), trace)`, multiplicity 1, for every cluster with a
/// present pattern and at least one present member, where `trace` is
/// [`PreferenceTrace::from_activations`] of its present members' (event time in whole seconds,
/// rounded down; confidence `confidence_milli / 1000`) with the default stability parameters
/// and thresholds.
///
/// Cost: a change to a cluster re-derives its trace (linear in its size).
pub fn preference_traces<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    clusters: VecCollection<'scope, T, (UserKey, (String, String))>,
    patterns: VecCollection<'scope, T, (UserKey, PatternRecord)>,
) -> VecCollection<'scope, T, (PreferenceKey, PreferenceTrace)>
where
    T: Timestamp + Lattice + Ord,
{
    let promoted = patterns
        .map(|(user, pattern)| (user, pattern.cluster_id))
        .distinct();
    clusters
        .map(|(user, (id, cluster_id))| ((user, id), cluster_id))
        .distinct()
        .join_map(present, |(user, _id), cluster_id, point| {
            (
                (user.clone(), cluster_id.clone()),
                (
                    point.ts_micros.div_euclid(1_000_000),
                    point.confidence_milli,
                ),
            )
        })
        .semijoin(promoted)
        .reduce(|_preference, members, output| {
            // two corrections in the same second with the same confidence are one value with
            // multiplicity 2, and two activations
            let activations: Vec<(i64, f64)> = members
                .iter()
                .filter(|(_, m)| *m > 0)
                .flat_map(|((at, confidence), m)| {
                    let activation = (*at, f64::from(*confidence).min(1000.0) / 1000.0);
                    std::iter::repeat_n(activation, *m as usize)
                })
                .collect();
            if let Some(trace) = PreferenceTrace::from_activations(
                &activations,
                &StabilityParams::default(),
                &LifecycleThresholds::default(),
            ) {
                output.push((trace, 1));
            }
        })
}

/// Lifecycle states over engine time.
///
/// Input: traces keyed by anything, in a dataflow whose timestamps are engine time in whole
/// seconds since the Unix epoch. Output: at every time t, for every record `(key, trace)` of
/// the input as of t with multiplicity m, the record `(key, trace.state_at(t))` with
/// multiplicity m ([`PreferenceTrace::state_at`], `thresholds`), and nothing else.
///
/// Each input update `((key, trace), t, m)` becomes `((key, state at t), t, m)` and, for every
/// change after t ([`PreferenceTrace::changes_after`]), `((key, old), at, −m)` and
/// `((key, new), at, m)`: updates at future times, which the output holds back until the input
/// frontier passes them. A retraction at a later time emits the negation of the rest of the
/// schedule, so a trace that is reinforced (retracted and replaced) stops its old transitions.
///
/// Cost: at most five output updates per input update; no state.
pub fn lifecycle_states<'scope, K>(
    traces: VecCollection<'scope, u64, (K, PreferenceTrace)>,
    thresholds: LifecycleThresholds,
) -> VecCollection<'scope, u64, (K, LifecycleState)>
where
    K: differential_dataflow::Data,
{
    scheduled(
        traces,
        "LifecycleStates",
        move |(key, trace), time, diff, updates| {
            let now = time as i64;
            let mut state = trace.state_at(now, &thresholds);
            updates.push(((key.clone(), state), time, diff));
            for (at, entered) in trace.changes_after(now, &thresholds) {
                let at = at.max(now) as u64;
                updates.push(((key.clone(), state), at, -diff));
                updates.push(((key.clone(), entered), at, diff));
                state = entered;
            }
        },
    )
}

/// The temporal-filter idiom over engine time: each input update `(data, t, m)` becomes the
/// updates `schedule` pushes for it, each at its own time, none earlier than t (a later time
/// is held back by the output's frontier until the input frontier passes it).
pub fn scheduled<'scope, D, R>(
    input: VecCollection<'scope, u64, D>,
    name: &str,
    schedule: impl Fn(D, u64, isize, &mut Vec<(R, u64, isize)>) + 'static,
) -> VecCollection<'scope, u64, R>
where
    D: differential_dataflow::Data,
    R: differential_dataflow::Data,
{
    input
        .inner
        .unary(Pipeline, name, move |_, _| {
            let mut updates = Vec::new();
            move |input, output| {
                input.for_each_stamp(|capability, batches| {
                    for batch in batches {
                        for (data, time, diff) in batch.drain(..) {
                            schedule(data, time, diff, &mut updates);
                            for (record, at, diff) in updates.drain(..) {
                                let at = at.max(time);
                                let delayed = capability.delayed(&at, output.output_index());
                                output.session(&delayed).give((record, at, diff));
                            }
                        }
                    }
                });
            }
        })
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::decay::SECONDS_PER_DAY;
    use LifecycleState::{Active, Archived, Inactive};

    const DAY: i64 = SECONDS_PER_DAY as i64;

    #[test]
    fn one_correction_decays_on_the_known_schedule() {
        let params = StabilityParams::default();
        let th = LifecycleThresholds::default();
        // confidence 1: S = 14 days · 2 = 28 days
        let trace = PreferenceTrace::from_activations(&[(1_000, 1.0)], &params, &th).unwrap();
        assert_eq!(trace.stability_secs, 28 * DAY);
        assert_eq!(trace.activations, 1);
        // R(t = S) = e^−1
        let r = trace.retention_at(1_000 + 28 * DAY);
        assert!((r - (-1.0f64).exp()).abs() < 1e-12);
        // inactive after S·ln(1/0.3) = 33.711… days, archived after S·ln(1/0.05) = 83.88… days
        let inactive = 1_000 + (28.0 * SECONDS_PER_DAY * (1.0f64 / 0.3).ln()).floor() as i64 + 1;
        let archived = 1_000 + (28.0 * SECONDS_PER_DAY * (1.0f64 / 0.05).ln()).floor() as i64 + 1;
        assert_eq!(
            trace.changes_after(1_000, &th),
            vec![(inactive, Inactive), (archived, Archived)]
        );
        assert_eq!(trace.state_at(inactive - 1, &th), Active);
        assert_eq!(trace.state_at(inactive, &th), Inactive);
        assert_eq!(trace.state_at(archived - 1, &th), Inactive);
        assert_eq!(trace.state_at(archived, &th), Archived);
        assert_eq!(
            trace.changes_after(inactive, &th),
            vec![(archived, Archived)]
        );
        assert_eq!(trace.changes_after(archived, &th), vec![]);
    }

    #[test]
    fn reinforcement_doubles_stability_and_resets_the_clock_unless_archived() {
        let params = StabilityParams::default();
        let th = LifecycleThresholds::default();
        // confidence 0: S = 14 days; reinforced on day 10 → S = 28 days from day 10
        let trace =
            PreferenceTrace::from_activations(&[(10 * DAY, 0.0), (0, 0.0)], &params, &th).unwrap();
        assert_eq!(trace.last_activation_secs, 10 * DAY);
        assert_eq!(trace.stability_secs, 28 * DAY);
        assert_eq!(trace.activations, 2);
        // a signal after archiving (14·ln 20 = 41.9 days) is not counted
        let late =
            PreferenceTrace::from_activations(&[(0, 0.0), (50 * DAY, 0.0)], &params, &th).unwrap();
        assert_eq!(late.last_activation_secs, 0);
        assert_eq!(late.stability_secs, 14 * DAY);
        assert_eq!(late.activations, 1);
        // while inactive (day 20: 14·ln(1/0.3) = 16.9 < 20 < 41.9) it still reactivates
        let revived =
            PreferenceTrace::from_activations(&[(0, 0.0), (20 * DAY, 0.0)], &params, &th).unwrap();
        assert_eq!(revived.state_at(20 * DAY, &th), Active);
        assert_eq!(revived.activations, 2);
        assert!(PreferenceTrace::from_activations(&[], &params, &th).is_none());
    }
}
