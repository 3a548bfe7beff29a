//! Retention of memories (episodes, facts, summaries), as preferences have it (SPEC §5; issue
//! 33): a memory decays as R(t) = e^(−(t − last activation)/S) from its creation; each answer
//! it was recalled into that was not voted down reinforces it (S × 2, clock reset) when the
//! answer was its owner's ([`crate::memories::used_memories`]); once R
//! falls below the archive threshold it is archived — left out of what a plain recall and a
//! prompt draw on, still found by an explicit search or an as-of query, never deleted.
//!
//! A memory no answer recalled has a closed-form trace ([`MemoryTrace::unrecalled`]) and so a
//! known archive hour: readers compute both from its row (creation time and importance) and the
//! engine time, and the dataflow keeps nothing for it. Only the memories recalls reinforced
//! are traced and scheduled in the dataflows:
//! - [`memory_traces`] (in the memory dataflow, at log-offset times): per reinforced memory, its
//!   decay trace from its creation and its recalls.
//! - [`archived_memories`] (in the dataflow whose timestamps are engine time, whole seconds):
//!   those memories archived at every time, each archiving an update at a future hour (the
//!   temporal-filter idiom of [`crate::lifecycle::lifecycle_states`]): nothing polls.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::progress::Timestamp;

use crate::lifecycle::{scheduled, PreferenceTrace};
use crate::math::decay::{
    threshold_crossing_time, LifecycleThresholds, RetentionTrace, StabilityParams,
};
use crate::memories::{JudgedUse, Memory, MemoryId};

/// Archivings happen on whole hours.
const ARCHIVE_GRAIN_SECS: i64 = 3600;

/// A memory's decay trace: the same record as a preference's.
pub type MemoryTrace = PreferenceTrace;

impl MemoryTrace {
    /// A memory's trace: created at `created_secs` with stability
    /// [`StabilityParams::initial_stability`] of its importance (importance plays the part a
    /// correction's confidence plays for a preference), then reinforced
    /// ([`RetentionTrace::reinforced_at`]) by each recall in time order, if the memory is not
    /// archived by then (an archived memory is cold storage: finding it by an explicit search
    /// does not revive it). A recall stamped before the creation counts at the creation.
    pub fn of_memory(
        created_secs: i64,
        importance: f64,
        recalls: &[i64],
        params: &StabilityParams,
        thresholds: &LifecycleThresholds,
    ) -> MemoryTrace {
        let mut recalls = recalls.to_vec();
        recalls.sort_unstable();
        let created = RetentionTrace::new(
            created_secs as f64,
            params.initial_stability(importance, 0.0),
        );
        let times = recalls.into_iter().map(|at| at.max(created_secs));
        MemoryTrace::reinforced(created, times, params, thresholds)
    }

    /// The trace of a memory no answer recalled: [`MemoryTrace::of_memory`] with no recalls.
    pub fn unrecalled(
        created_secs: i64,
        importance_milli: u16,
        params: &StabilityParams,
        thresholds: &LifecycleThresholds,
    ) -> MemoryTrace {
        let importance = memory_importance(importance_milli);
        MemoryTrace::of_memory(created_secs, importance, &[], params, thresholds)
    }

    /// When the trace is archived: the first whole hour (a multiple of 3600 seconds since the
    /// Unix epoch) at or after the first second strictly after the exact time R falls below
    /// `thresholds.archived_below`. `None` when it never is. (Whole hours, so that the
    /// archivings of many memories share a few times: one per second each cost the engine-time
    /// dataflow a time of its own.)
    pub fn archived_from(&self, thresholds: &LifecycleThresholds) -> Option<i64> {
        let after = threshold_crossing_time(self.stability_secs as f64, thresholds.archived_below);
        after.is_finite().then(|| {
            let second = self.last_activation_secs + after.floor() as i64 + 1;
            (second + ARCHIVE_GRAIN_SECS - 1).div_euclid(ARCHIVE_GRAIN_SECS) * ARCHIVE_GRAIN_SECS
        })
    }
}

/// The decay traces of memories that recalls reinforced.
///
/// Every memory's trace is [`MemoryTrace::of_memory`] of its creation time, its importance
/// (`importance_milli / 1000`) and the answer times of its uses that were not voted down
/// (reward ≥ 0), with `params` and `thresholds`. Without such uses it is a closed form of the
/// memory itself ([`MemoryTrace::unrecalled`]), which readers compute from the memory's row:
/// only the traces that differ from it leave the dataflow.
///
/// Input: the uses of memories joined to them, as [`crate::memories::used_memories`] gives
/// them. Output: `(id, trace)`, multiplicity 1, for every memory whose trace, counting each use
/// as many times as its multiplicity when that is positive, differs from its closed form.
///
/// Cost: a use re-derives its memory's trace (linear in its uses); a memory no answer used
/// costs nothing here.
pub fn memory_traces<'scope, T>(
    used: VecCollection<'scope, T, (MemoryId, (Memory, JudgedUse))>,
    params: StabilityParams,
    thresholds: LifecycleThresholds,
) -> VecCollection<'scope, T, (MemoryId, MemoryTrace)>
where
    T: Timestamp + Lattice + Ord,
{
    used.filter(|(_, (_, used))| used.reward >= 0)
        .map(|(id, (memory, used))| (id, (memory, used.at_secs)))
        .reduce(move |_id, input, output| {
            // one memory per id: every use carries the same
            let memory = (input[0].0).0;
            let recalls: Vec<i64> = input
                .iter()
                .filter(|(_, m)| *m > 0)
                .flat_map(|((_, at), m)| std::iter::repeat_n(*at, *m as usize))
                .collect();
            let importance = memory_importance(memory.importance_milli);
            let trace = |recalls: &[i64]| {
                MemoryTrace::of_memory(
                    memory.created_secs,
                    importance,
                    recalls,
                    &params,
                    &thresholds,
                )
            };
            let recalled = trace(&recalls);
            if recalled != trace(&[]) {
                output.push((recalled, 1));
            }
        })
}

/// An importance in thousandths as [`MemoryTrace::of_memory`] takes it: 0..=1.
pub fn memory_importance(importance_milli: u16) -> f64 {
    f64::from(importance_milli.min(1000)) / 1000.0
}

/// The archived memories over engine time.
///
/// Input: traces keyed by anything, in a dataflow whose timestamps are engine time in whole
/// seconds since the Unix epoch. Output: at every time t, for every record `(key, trace)` of
/// the input as of t with multiplicity m whose [`MemoryTrace::archived_from`] is at or before
/// t, the record `key` with multiplicity m, and nothing else.
///
/// Each input update `((key, trace), t, m)` becomes the one update `(key, max(t, archived
/// from), m)`: at a future time when the memory is not archived yet, which the output holds
/// back until the input frontier passes it. A trace retracted before that time retracts the
/// archiving at the same future time, so the two cancel (a reinforced trace, retracted and
/// replaced, moves its archiving later).
///
/// Cost: at most one output update per input update; no state.
pub fn archived_memories<'scope, K>(
    traces: VecCollection<'scope, u64, (K, MemoryTrace)>,
    thresholds: LifecycleThresholds,
) -> VecCollection<'scope, u64, K>
where
    K: differential_dataflow::Data,
{
    scheduled(
        traces,
        "ArchivedMemories",
        move |(key, trace), time, diff, updates| {
            if let Some(from) = trace.archived_from(&thresholds) {
                updates.push((key, time.max(u64::try_from(from).unwrap_or(0)), diff));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::decay::SECONDS_PER_DAY;

    const DAY: i64 = SECONDS_PER_DAY as i64;

    fn params(base_days: f64) -> StabilityParams {
        StabilityParams {
            base_secs: base_days * SECONDS_PER_DAY,
            ..StabilityParams::default()
        }
    }

    #[test]
    fn importance_sets_the_initial_stability_and_the_archive_day() {
        let th = LifecycleThresholds::default();
        // base 100 days: importance 0 → S = 100 days, 1 → 200 days, 0.5 → 150 days
        for (importance, days) in [(0.0, 100), (1.0, 200), (0.5, 150)] {
            let trace = MemoryTrace::of_memory(1_000, importance, &[], &params(100.0), &th);
            assert_eq!(trace.stability_secs, days * DAY);
            assert_eq!(trace.activations, 1);
            // archived at the first whole hour strictly after S·ln 20 (ln 20 = 2.9957…)
            let exact = 1_000.0 + days as f64 * SECONDS_PER_DAY * 20f64.ln();
            let from = trace.archived_from(&th).unwrap();
            assert_eq!(from % 3600, 0);
            assert!(from as f64 > exact && ((from - 3600) as f64) < exact + 1.0);
        }
        // 100 days · ln 20 = 299.57 days = 25,883,126.8 s: hour 7190 (25,884,000 s)
        let trace = MemoryTrace::of_memory(0, 0.0, &[], &params(100.0), &th);
        let from = trace.archived_from(&th).unwrap();
        assert_eq!(from, 7190 * 3600);
        assert!(trace.retention_at(from - 3600) >= 0.05);
        assert!(trace.retention_at(from) < 0.05);
        assert_eq!(from / DAY, 299);
    }

    #[test]
    fn recalls_double_stability_and_reset_the_clock_unless_archived() {
        let th = LifecycleThresholds::default();
        let p = params(10.0);
        // S = 10 days; recalled on days 5 and 12 → S = 40 days from day 12
        let trace = MemoryTrace::of_memory(0, 0.0, &[12 * DAY, 5 * DAY], &p, &th);
        assert_eq!(trace.last_activation_secs, 12 * DAY);
        assert_eq!(trace.stability_secs, 40 * DAY);
        assert_eq!(trace.activations, 3);
        // archived after 10·ln 20 = 29.96 days: a recall on day 31 does not revive it
        let late = MemoryTrace::of_memory(0, 0.0, &[31 * DAY], &p, &th);
        assert_eq!(late.last_activation_secs, 0);
        assert_eq!(late.stability_secs, 10 * DAY);
        assert_eq!(late.activations, 1);
        // a recall stamped before the creation counts at the creation
        let early = MemoryTrace::of_memory(7 * DAY, 0.0, &[DAY], &p, &th);
        assert_eq!(early.last_activation_secs, 7 * DAY);
        assert_eq!(early.stability_secs, 20 * DAY);
    }

    #[test]
    fn a_trace_that_never_decays_is_never_archived() {
        let th = LifecycleThresholds::default();
        let trace = MemoryTrace {
            last_activation_secs: 0,
            stability_secs: 0,
            activations: 1,
        };
        // no stability: archived at the first hour after its activation
        assert_eq!(trace.archived_from(&th), Some(3600));
        let never = LifecycleThresholds {
            inactive_below: 0.0,
            archived_below: 0.0,
        };
        assert_eq!(
            MemoryTrace::of_memory(0, 0.0, &[], &params(1.0), &never).archived_from(&never),
            None
        );
    }
}
