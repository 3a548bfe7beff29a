//! Forgetting and recall scores (SPEC §5).
//!
//! - Retention of a preference or memory, R(t) = e^(−t/S) (seed 000 §3.3, Ebbinghaus), where t is
//!   the time since the last activation and S the stability.
//! - Stability: higher for confident / emphatic origins, multiplied on every reinforcement
//!   (spaced repetition: an activation resets t and multiplies S).
//! - Lifecycle: `Active` while R ≥ 0.3, `Inactive` while R ≥ 0.05, `Archived` below, with the
//!   exact elapsed times at which R crosses each threshold, t = −S·ln θ, so the dataflow can
//!   schedule each transition as an update at a future timestamp instead of polling a clock.
//! - The blueprint's alternative forgetting score relevance / (1 + 0.002·age_days) with
//!   soft-archive under 0.05 (seed 001 §4 `forgetting`).
//! - Generative-agents recall: recency e^(−Δt/λ) and 0.7·similarity + 0.2·recency +
//!   0.1·importance (seed 001, "Context selection").
//!
//! Units: `retention`, `threshold_crossing_time`, the lifecycle functions and `recency` are
//! unit-agnostic — elapsed time, stability and λ only need to share one unit. engram uses
//! **seconds** everywhere (the defaults below are in seconds); only the blueprint score takes
//! days, because its constant is per day. Nothing here reads a clock: every time is an argument.

/// Seconds in one day, for converting the day-based defaults.
pub const SECONDS_PER_DAY: f64 = 86_400.0;

/// Retention R = e^(−elapsed/stability).
///
/// `elapsed` and `stability` share a unit. A negative `elapsed` (an activation stamped after
/// the query time) counts as 0, so R ≤ 1 always. An infinite stability never decays (R = 1). A
/// stability that is not positive (≤ 0 or NaN) means the trace holds nothing: R = 0 for any
/// positive elapsed time.
pub fn retention(elapsed: f64, stability: f64) -> f64 {
    if elapsed.is_nan() || elapsed <= 0.0 {
        return 1.0;
    }
    if stability.is_nan() || stability <= 0.0 {
        return 0.0;
    }
    (-elapsed / stability).exp()
}

/// The elapsed time t ≥ 0 at which retention e^(−t/S) falls to `threshold`: t = −S·ln θ.
///
/// For every elapsed time up to and including the result R ≥ θ, and after it R < θ.
/// `threshold` ≥ 1 gives 0 (only the activation instant itself has R ≥ 1); `threshold` ≤ 0 or
/// an infinite stability gives `f64::INFINITY` (never crossed); a stability that is not
/// positive gives 0.
pub fn threshold_crossing_time(stability: f64, threshold: f64) -> f64 {
    if threshold >= 1.0 || stability.is_nan() || stability <= 0.0 {
        return 0.0;
    }
    if threshold.is_nan() || threshold <= 0.0 || stability.is_infinite() {
        return f64::INFINITY;
    }
    -stability * threshold.ln()
}

/// Retention thresholds of the preference lifecycle (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LifecycleThresholds {
    /// θ_inactive: a trace with R below this is no longer active (default 0.3).
    pub inactive_below: f64,
    /// θ_archive: a trace with R below this is archived (default 0.05). Expected to be
    /// ≤ `inactive_below`; if it is larger, the inactive state is skipped.
    pub archived_below: f64,
}

impl Default for LifecycleThresholds {
    fn default() -> Self {
        LifecycleThresholds {
            inactive_below: 0.3,
            archived_below: 0.05,
        }
    }
}

/// Lifecycle state of a preference or memory, ordered by how far it has decayed.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum LifecycleState {
    /// R ≥ θ_inactive: shapes prompts and output.
    Active,
    /// θ_archive ≤ R < θ_inactive: left out by default, reactivated by a matching signal.
    Inactive,
    /// R < θ_archive: cold storage for audit; no longer retrieved.
    Archived,
}

impl LifecycleState {
    /// Whether a matching new signal may reinforce (and so reactivate) a trace in this state:
    /// true for `Active` and `Inactive`, false for `Archived` (seed 000 §3.3.1: archived
    /// preferences sit in cold storage and are no longer retrieved during normal operation).
    pub fn accepts_reinforcement(self) -> bool {
        self != LifecycleState::Archived
    }
}

/// A future lifecycle change: the state the trace enters, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    /// The state entered.
    pub to: LifecycleState,
    /// The time of the crossing, in the same frame as the query: elapsed since the last
    /// activation for the free functions, absolute time for [`RetentionTrace`] methods. The old
    /// state holds up to and including `at`; the new state holds at every time after it.
    pub at: f64,
}

/// Elapsed times (since the last activation) at which a trace of the given stability becomes
/// inactive and archived: `(−S·ln θ_inactive, −S·ln θ_archive)`, the first never later than the
/// second. Either may be `f64::INFINITY` (never).
pub fn lifecycle_transition_times(stability: f64, thresholds: &LifecycleThresholds) -> (f64, f64) {
    let archived_at = threshold_crossing_time(stability, thresholds.archived_below);
    let inactive_at =
        threshold_crossing_time(stability, thresholds.inactive_below).min(archived_at);
    (inactive_at, archived_at)
}

/// Lifecycle state at `elapsed` time since the last activation: `Active` while
/// elapsed ≤ −S·ln θ_inactive, `Inactive` while elapsed ≤ −S·ln θ_archive, `Archived` after.
///
/// This equals classifying R(elapsed) against the thresholds (R ≥ θ_inactive → active, …), but
/// compares times rather than retentions so that the state and the transition times returned
/// by [`next_transition`] can never disagree through floating-point rounding.
pub fn lifecycle_state(
    elapsed: f64,
    stability: f64,
    thresholds: &LifecycleThresholds,
) -> LifecycleState {
    let (inactive_at, archived_at) = lifecycle_transition_times(stability, thresholds);
    let elapsed = if elapsed.is_nan() {
        0.0
    } else {
        elapsed.max(0.0)
    };
    if elapsed <= inactive_at {
        LifecycleState::Active
    } else if elapsed <= archived_at {
        LifecycleState::Inactive
    } else {
        LifecycleState::Archived
    }
}

/// The first lifecycle change strictly after `elapsed` (time since the last activation), or
/// `None` if the state never changes again (already archived, or infinite stability). An
/// active trace whose two crossing times coincide goes straight to `Archived`.
pub fn next_transition(
    elapsed: f64,
    stability: f64,
    thresholds: &LifecycleThresholds,
) -> Option<Transition> {
    let (inactive_at, archived_at) = lifecycle_transition_times(stability, thresholds);
    let next = match lifecycle_state(elapsed, stability, thresholds) {
        LifecycleState::Active if inactive_at < archived_at => Transition {
            to: LifecycleState::Inactive,
            at: inactive_at,
        },
        LifecycleState::Active | LifecycleState::Inactive => Transition {
            to: LifecycleState::Archived,
            at: archived_at,
        },
        LifecycleState::Archived => return None,
    };
    next.at.is_finite().then_some(next)
}

/// The lifecycle state at `elapsed` time since the last activation, together with the next
/// change after it ([`lifecycle_state`] and [`next_transition`] in one call). This is what the
/// dataflow emits: the current state now, and a retraction/insertion pair at `Transition::at`.
pub fn lifecycle_at(
    elapsed: f64,
    stability: f64,
    thresholds: &LifecycleThresholds,
) -> (LifecycleState, Option<Transition>) {
    (
        lifecycle_state(elapsed, stability, thresholds),
        next_transition(elapsed, stability, thresholds),
    )
}

/// How stability is set at creation and grown on reinforcement. All durations in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StabilityParams {
    /// Stability of a trace whose origin has confidence 0 and no emphasis (default 14 days:
    /// active for ≈ 16.9 days, archived after ≈ 41.9 days without reinforcement).
    pub base_secs: f64,
    /// Relative stability gain at full confidence: S₀ is multiplied by (1 + gain·confidence)
    /// (default 1.0, so a confidence-1 origin starts twice as stable).
    pub confidence_gain: f64,
    /// Relative stability gain at full emphasis: S₀ is multiplied by (1 + gain·emphasis)
    /// (default 1.0: an emphatic correction — raised voice, repeated — doubles it again).
    pub emphasis_gain: f64,
    /// Factor applied to S on each reinforcement (default 2.0).
    pub reinforcement_factor: f64,
    /// Upper bound on S, so repeated reinforcement stays finite (default 3650 days).
    pub max_secs: f64,
}

impl Default for StabilityParams {
    fn default() -> Self {
        StabilityParams {
            base_secs: 14.0 * SECONDS_PER_DAY,
            confidence_gain: 1.0,
            emphasis_gain: 1.0,
            reinforcement_factor: 2.0,
            max_secs: 3650.0 * SECONDS_PER_DAY,
        }
    }
}

impl StabilityParams {
    /// Initial stability S₀ = base·(1 + confidence_gain·c)·(1 + emphasis_gain·e), capped at
    /// `max_secs`, where c and e are `confidence` and `emphasis` clamped to [0, 1] (NaN → 0).
    pub fn initial_stability(&self, confidence: f64, emphasis: f64) -> f64 {
        let s0 = self.base_secs
            * (1.0 + self.confidence_gain * unit_interval(confidence))
            * (1.0 + self.emphasis_gain * unit_interval(emphasis));
        s0.min(self.max_secs)
    }

    /// Stability after one reinforcement: min(S·reinforcement_factor, max_secs).
    pub fn reinforced_stability(&self, stability: f64) -> f64 {
        (stability * self.reinforcement_factor).min(self.max_secs)
    }
}

/// Clamps to [0, 1]; NaN becomes 0.
fn unit_interval(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// The decay state of one preference or memory: its stability and when it was last activated.
/// Times are absolute (seconds on the caller's clock, e.g. event time since the Unix epoch).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetentionTrace {
    /// Current stability S, seconds.
    pub stability: f64,
    /// Time of the last activation (creation or reinforcement), seconds.
    pub last_activation: f64,
}

impl RetentionTrace {
    /// A trace created at `created_at` with stability `stability`.
    pub fn new(created_at: f64, stability: f64) -> Self {
        RetentionTrace {
            stability,
            last_activation: created_at,
        }
    }

    /// Retention at absolute time `now`: e^(−(now − last_activation)/S).
    pub fn retention_at(&self, now: f64) -> f64 {
        retention(now - self.last_activation, self.stability)
    }

    /// The trace after a reinforcement at `now`: S multiplied by the reinforcement factor
    /// (capped), and the last activation moved to `now` — or kept, if it is already later (a
    /// reinforcement that arrives out of order still strengthens but never rewinds the clock).
    pub fn reinforced_at(&self, now: f64, params: &StabilityParams) -> Self {
        RetentionTrace {
            stability: params.reinforced_stability(self.stability),
            last_activation: self.last_activation.max(now),
        }
    }

    /// The trace after reinforcements at each of `activations` (in any order), applied in time
    /// order; equivalent to calling [`Self::reinforced_at`] with the times sorted, so the
    /// result does not depend on arrival order.
    pub fn replayed(&self, activations: &[f64], params: &StabilityParams) -> Self {
        let mut times = activations.to_vec();
        times.sort_by(f64::total_cmp);
        times
            .iter()
            .fold(*self, |trace, &t| trace.reinforced_at(t, params))
    }

    /// Lifecycle state at absolute time `now` and the next change, with `Transition::at` as an
    /// absolute time (last_activation + crossing time).
    pub fn lifecycle_at(
        &self,
        now: f64,
        thresholds: &LifecycleThresholds,
    ) -> (LifecycleState, Option<Transition>) {
        let (state, next) = lifecycle_at(now - self.last_activation, self.stability, thresholds);
        let next = next.map(|t| Transition {
            to: t.to,
            at: self.last_activation + t.at,
        });
        (state, next)
    }
}

/// The blueprint's forgetting rate, per day (seed 001 `forgetting.decay_lambda`).
pub const BLUEPRINT_DECAY_PER_DAY: f64 = 0.002;

/// Blueprint forgetting scores below this are soft-archived (seed 001
/// `forgetting.pruning_threshold`).
pub const BLUEPRINT_SOFT_ARCHIVE_BELOW: f64 = 0.05;

/// The blueprint's hyperbolic forgetting score relevance / (1 + decay_per_day·age_days).
/// A negative age counts as 0.
pub fn blueprint_forgetting_score(relevance: f64, age_days: f64, decay_per_day: f64) -> f64 {
    relevance / (1.0 + decay_per_day * age_days.max(0.0))
}

/// Whether a blueprint forgetting score is soft-archived: score < 0.05.
pub fn blueprint_soft_archived(score: f64) -> bool {
    score < BLUEPRINT_SOFT_ARCHIVE_BELOW
}

/// Age in days at which `relevance / (1 + decay_per_day·age)` falls to `threshold`:
/// (relevance/threshold − 1)/decay_per_day. 0 when the score starts at or below the threshold;
/// `f64::INFINITY` when it never decays (decay_per_day ≤ 0) or the threshold is not positive.
pub fn blueprint_soft_archive_age_days(relevance: f64, decay_per_day: f64, threshold: f64) -> f64 {
    if relevance <= threshold {
        return 0.0;
    }
    if decay_per_day.is_nan() || decay_per_day <= 0.0 || threshold.is_nan() || threshold <= 0.0 {
        return f64::INFINITY;
    }
    (relevance / threshold - 1.0) / decay_per_day
}

/// Default recency time scale λ: 7 days, in seconds. A memory a few days old keeps recency
/// ≥ 0.6; one a month old is below 0.015 (the blueprint asks for "a few days old still have
/// decent weight, months old negligible"; it fixes no number).
pub const DEFAULT_RECENCY_SCALE_SECS: f64 = 7.0 * SECONDS_PER_DAY;

/// Recency e^(−elapsed/scale) (generative agents); `elapsed` and `scale` share a unit, a
/// negative `elapsed` counts as 0.
pub fn recency(elapsed: f64, scale: f64) -> f64 {
    retention(elapsed, scale)
}

/// Weights of the recall score (seed 001 blueprint: 0.7, 0.2, 0.1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecallWeights {
    /// Weight of the query–memory similarity (default 0.7).
    pub similarity: f64,
    /// Weight of the recency (default 0.2).
    pub recency: f64,
    /// Weight of the importance (default 0.1).
    pub importance: f64,
}

impl Default for RecallWeights {
    fn default() -> Self {
        RecallWeights {
            similarity: 0.7,
            recency: 0.2,
            importance: 0.1,
        }
    }
}

impl RecallWeights {
    /// Recall score w_sim·similarity + w_rec·recency + w_imp·importance. Inputs are used as
    /// given (similarity is a cosine, recency and importance are in [0, 1]); no clamping.
    pub fn score(&self, similarity: f64, recency: f64, importance: f64) -> f64 {
        self.similarity * similarity + self.recency * recency + self.importance * importance
    }
}

/// Recall score with the blueprint weights: 0.7·similarity + 0.2·recency + 0.1·importance.
pub fn recall_score(similarity: f64, recency: f64, importance: f64) -> f64 {
    RecallWeights::default().score(similarity, recency, importance)
}

#[cfg(test)]
mod tests {
    use super::*;

    // e^−1, e^−2, −10·ln 0.3 and 10·ln 20, computed independently (Python math) to 15 digits.
    const E_MINUS_1: f64 = 0.367_879_441_171_442;
    const E_MINUS_2: f64 = 0.135_335_283_236_613;
    const CROSS_03_S10: f64 = 12.039_728_043_259_4;
    const CROSS_005_S10: f64 = 29.957_322_735_539_9;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn retention_known_values() {
        assert_eq!(retention(0.0, 10.0), 1.0);
        assert!(close(retention(10.0, 10.0), E_MINUS_1, 1e-14));
        assert!(close(retention(20.0, 10.0), E_MINUS_2, 1e-14));
        assert!(close(retention(86_400.0, 86_400.0), E_MINUS_1, 1e-14));
        assert_eq!(retention(-5.0, 10.0), 1.0);
        assert_eq!(retention(5.0, f64::INFINITY), 1.0);
        assert_eq!(retention(5.0, 0.0), 0.0);
        assert_eq!(retention(5.0, f64::NAN), 0.0);
    }

    #[test]
    fn crossing_time_known_values_and_round_trip() {
        assert!(close(
            threshold_crossing_time(10.0, 0.3),
            CROSS_03_S10,
            1e-12
        ));
        assert!(close(
            threshold_crossing_time(10.0, 0.05),
            CROSS_005_S10,
            1e-12
        ));
        for &s in &[1.0, 10.0, 86_400.0 * 14.0] {
            for &theta in &[0.3, 0.05, 0.9] {
                let t = threshold_crossing_time(s, theta);
                assert!(close(retention(t, s), theta, 1e-12), "S={s} θ={theta}");
            }
        }
        assert_eq!(threshold_crossing_time(10.0, 1.0), 0.0);
        assert_eq!(threshold_crossing_time(10.0, 0.0), f64::INFINITY);
        assert_eq!(threshold_crossing_time(f64::INFINITY, 0.3), f64::INFINITY);
    }

    #[test]
    fn default_thresholds() {
        let th = LifecycleThresholds::default();
        assert_eq!(th.inactive_below, 0.3);
        assert_eq!(th.archived_below, 0.05);
    }

    #[test]
    fn lifecycle_states_around_crossings() {
        let th = LifecycleThresholds::default();
        assert_eq!(lifecycle_state(0.0, 10.0, &th), LifecycleState::Active);
        assert_eq!(lifecycle_state(12.0, 10.0, &th), LifecycleState::Active);
        assert_eq!(lifecycle_state(12.1, 10.0, &th), LifecycleState::Inactive);
        assert_eq!(lifecycle_state(29.9, 10.0, &th), LifecycleState::Inactive);
        assert_eq!(lifecycle_state(30.0, 10.0, &th), LifecycleState::Archived);
        // At the crossing itself R = θ, which is still ≥ θ.
        let t = threshold_crossing_time(10.0, 0.3);
        assert_eq!(lifecycle_state(t, 10.0, &th), LifecycleState::Active);
    }

    #[test]
    fn state_agrees_with_retention_away_from_boundaries() {
        let th = LifecycleThresholds::default();
        for i in 0..400 {
            let t = i as f64 * 0.1;
            let r = retention(t, 10.0);
            if (r - 0.3).abs() < 1e-9 || (r - 0.05).abs() < 1e-9 {
                continue;
            }
            let expected = if r >= 0.3 {
                LifecycleState::Active
            } else if r >= 0.05 {
                LifecycleState::Inactive
            } else {
                LifecycleState::Archived
            };
            assert_eq!(lifecycle_state(t, 10.0, &th), expected, "t={t}");
        }
    }

    #[test]
    fn next_transitions_are_scheduled_at_exact_crossings() {
        let th = LifecycleThresholds::default();
        let (state, next) = lifecycle_at(0.0, 10.0, &th);
        assert_eq!(state, LifecycleState::Active);
        let next = next.unwrap();
        assert_eq!(next.to, LifecycleState::Inactive);
        assert!(close(next.at, CROSS_03_S10, 1e-12));

        let (state, next) = lifecycle_at(13.0, 10.0, &th);
        assert_eq!(state, LifecycleState::Inactive);
        let next = next.unwrap();
        assert_eq!(next.to, LifecycleState::Archived);
        assert!(close(next.at, CROSS_005_S10, 1e-12));

        assert_eq!(
            lifecycle_at(31.0, 10.0, &th),
            (LifecycleState::Archived, None)
        );
        assert_eq!(
            lifecycle_at(1e12, f64::INFINITY, &th),
            (LifecycleState::Active, None)
        );

        // Just after a scheduled time, the state is the scheduled one.
        let at = next_transition(0.0, 10.0, &th).unwrap().at;
        assert_eq!(
            lifecycle_state(at + 1e-9, 10.0, &th),
            LifecycleState::Inactive
        );
    }

    #[test]
    fn equal_thresholds_skip_inactive() {
        let th = LifecycleThresholds {
            inactive_below: 0.1,
            archived_below: 0.1,
        };
        let next = next_transition(0.0, 10.0, &th).unwrap();
        assert_eq!(next.to, LifecycleState::Archived);
        assert_eq!(
            lifecycle_state(next.at + 1e-9, 10.0, &th),
            LifecycleState::Archived
        );
    }

    #[test]
    fn initial_stability_grows_with_confidence_and_emphasis() {
        let p = StabilityParams::default();
        let day = SECONDS_PER_DAY;
        assert_eq!(p.initial_stability(0.0, 0.0), 14.0 * day);
        assert_eq!(p.initial_stability(1.0, 0.0), 28.0 * day);
        assert_eq!(p.initial_stability(0.5, 0.0), 21.0 * day);
        assert_eq!(p.initial_stability(1.0, 1.0), 56.0 * day);
        assert_eq!(p.initial_stability(7.0, -3.0), 28.0 * day);
        assert_eq!(p.initial_stability(f64::NAN, 0.0), 14.0 * day);
    }

    #[test]
    fn reinforcement_multiplies_and_caps() {
        let p = StabilityParams::default();
        let day = SECONDS_PER_DAY;
        assert_eq!(p.reinforced_stability(14.0 * day), 28.0 * day);
        assert_eq!(p.reinforced_stability(3000.0 * day), 3650.0 * day);
    }

    #[test]
    fn trace_reinforcement_resets_elapsed_and_doubles_stability() {
        let p = StabilityParams {
            reinforcement_factor: 2.0,
            ..StabilityParams::default()
        };
        let trace = RetentionTrace::new(1000.0, 10.0);
        assert!(close(trace.retention_at(1010.0), E_MINUS_1, 1e-14));
        let r = trace.reinforced_at(1010.0, &p);
        assert_eq!(
            r,
            RetentionTrace {
                stability: 20.0,
                last_activation: 1010.0
            }
        );
        assert_eq!(r.retention_at(1010.0), 1.0);
        assert!(close(r.retention_at(1030.0), E_MINUS_1, 1e-14));
        // Out-of-order reinforcement: stronger, clock not rewound.
        let late = r.reinforced_at(1005.0, &p);
        assert_eq!(
            late,
            RetentionTrace {
                stability: 40.0,
                last_activation: 1010.0
            }
        );
    }

    #[test]
    fn replay_is_order_independent() {
        let p = StabilityParams {
            reinforcement_factor: 1.5,
            ..StabilityParams::default()
        };
        let t0 = RetentionTrace::new(0.0, 100.0);
        let a = t0.replayed(&[50.0, 20.0, 80.0], &p);
        let b = t0.replayed(&[80.0, 50.0, 20.0], &p);
        assert_eq!(a, b);
        assert_eq!(
            a,
            RetentionTrace {
                stability: 337.5,
                last_activation: 80.0
            }
        );
    }

    #[test]
    fn trace_lifecycle_uses_absolute_times() {
        let th = LifecycleThresholds::default();
        let trace = RetentionTrace::new(1000.0, 10.0);
        let (state, next) = trace.lifecycle_at(1005.0, &th);
        assert_eq!(state, LifecycleState::Active);
        let next = next.unwrap();
        assert_eq!(next.to, LifecycleState::Inactive);
        assert!(close(next.at, 1000.0 + CROSS_03_S10, 1e-9));
        assert!(LifecycleState::Inactive.accepts_reinforcement());
        assert!(!LifecycleState::Archived.accepts_reinforcement());
    }

    #[test]
    fn blueprint_forgetting() {
        let k = BLUEPRINT_DECAY_PER_DAY;
        assert_eq!(blueprint_forgetting_score(0.8, 0.0, k), 0.8);
        assert!(close(blueprint_forgetting_score(1.0, 500.0, k), 0.5, 1e-14));
        assert!(close(blueprint_forgetting_score(0.9, 250.0, k), 0.6, 1e-14));
        assert_eq!(blueprint_forgetting_score(0.8, -10.0, k), 0.8);
        // 0.1 / (1 + 0.002·400) = 0.0556 kept; 0.1 / (1 + 0.002·600) = 0.0455 archived.
        assert!(!blueprint_soft_archived(blueprint_forgetting_score(
            0.1, 400.0, k
        )));
        assert!(blueprint_soft_archived(blueprint_forgetting_score(
            0.1, 600.0, k
        )));
        let age = blueprint_soft_archive_age_days(0.1, k, BLUEPRINT_SOFT_ARCHIVE_BELOW);
        assert!(close(age, 500.0, 1e-9));
        assert_eq!(blueprint_soft_archive_age_days(0.04, k, 0.05), 0.0);
        assert_eq!(
            blueprint_soft_archive_age_days(0.5, 0.0, 0.05),
            f64::INFINITY
        );
    }

    #[test]
    fn recency_and_recall_score() {
        assert!(close(
            recency(DEFAULT_RECENCY_SCALE_SECS, DEFAULT_RECENCY_SCALE_SECS),
            E_MINUS_1,
            1e-14
        ));
        assert_eq!(recency(-1.0, 10.0), 1.0);
        assert!(close(recall_score(1.0, 1.0, 1.0), 1.0, 1e-14));
        assert!(close(recall_score(0.5, 0.25, 1.0), 0.5, 1e-14));
        assert!(close(recall_score(0.0, 1.0, 0.0), 0.2, 1e-14));
        let w = RecallWeights {
            similarity: 1.0,
            recency: 0.0,
            importance: 0.0,
        };
        assert_eq!(w.score(0.42, 0.9, 0.9), 0.42);
    }
}
