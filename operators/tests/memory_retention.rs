//! `archived_memories` over engine time equals, at every time the frontier passes, the archived
//! records of its input as of that time computed from scratch (traces inserted, duplicated,
//! reinforced and retracted, some stamped at future times, while time advances in jumps of up
//! to two months, so that archivings fall due with no new input), with one and two workers.
//! (`memory_traces` is checked with the other views of memory uses, in `memory_uses.rs`.)

mod common;

use common::{apply, execute};
use differential_dataflow::input::Input;
use engram_operators::math::decay::LifecycleThresholds;
use engram_operators::memories::MemoryId;
use engram_operators::memory_retention::{archived_memories, MemoryTrace};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;

const DAY: i64 = 86_400;
/// Engine time starts here (seconds since the Unix epoch).
const START: i64 = 1_700_000_000;

type Record = (MemoryId, MemoryTrace);
/// Updates with their times: what holds at a time is the sum of the updates at or before it.
type Log<D> = Vec<(D, u64, isize)>;

/// One of four memories, spread over the 128 bits.
fn memory(rng: &mut StdRng) -> MemoryId {
    rng.gen_range(0..4u128) * (u128::MAX / 3)
}

fn random_trace(now: i64, rng: &mut StdRng) -> MemoryTrace {
    MemoryTrace {
        // activated just now, up to 60 days ago, or up to a day ahead of engine time
        last_activation_secs: match rng.gen_range(0..3) {
            0 => now,
            1 => now - rng.gen_range(0..=60 * DAY),
            _ => now + rng.gen_range(0..DAY),
        },
        // now and then no stability at all: archived the second after its activation
        stability_secs: if rng.gen_bool(0.1) {
            0
        } else {
            rng.gen_range(1..=40) * DAY + rng.gen_range(0..DAY)
        },
        activations: rng.gen_range(1..4),
    }
}

/// The multiset at `t`: the sum of the updates at or before it.
fn as_of<D: Clone + Ord>(log: &Log<D>, t: u64) -> BTreeMap<D, isize> {
    let mut at = BTreeMap::new();
    for (d, _, diff) in log.iter().filter(|(_, time, _)| *time <= t) {
        apply(&mut at, d, *diff);
    }
    at
}

/// The definition at `t`, from the input as of `t`.
fn archived_from_scratch(
    input: &Log<Record>,
    t: u64,
    thresholds: &LifecycleThresholds,
) -> BTreeMap<MemoryId, isize> {
    let mut archived = BTreeMap::new();
    for ((key, trace), m) in as_of(input, t) {
        if trace
            .archived_from(thresholds)
            .is_some_and(|f| f <= t as i64)
        {
            apply(&mut archived, &key, m);
        }
    }
    archived
}

/// Runs `archived_memories` over 40 rounds; returns how many times the output changed with no
/// input at that time (an archiving falling due).
fn run_archived(workers: usize, seed: u64) -> usize {
    let output: Arc<Mutex<Log<MemoryId>>> = Default::default();
    let due = Arc::new(AtomicUsize::new(0));
    let due_in = due.clone();
    execute(workers, move |worker, mismatches| {
        let thresholds = match seed % 2 {
            0 => LifecycleThresholds::default(),
            _ => LifecycleThresholds {
                inactive_below: 0.5,
                archived_below: 0.3,
            },
        };
        let probe = Handle::new();
        let sink = output.clone();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, traces) = scope.new_collection::<Record, isize>();
            archived_memories(traces, thresholds)
                .inspect(move |update| sink.lock().unwrap().push(*update))
                .probe_with(&probe);
            input
        });
        input.advance_to(START as u64);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut log: Log<Record> = Vec::new();
        for round in 0..40 {
            let now = *input.time();
            for _ in 0..rng.gen_range(1..5) {
                // now and then stamped at a future time, ahead of later updates at earlier ones
                let at = now + rng.gen_bool(0.2) as u64 * rng.gen_range(1..=30 * DAY) as u64;
                let present: Vec<Record> = as_of(&log, u64::MAX).into_keys().collect();
                let pick = |rng: &mut StdRng| present[rng.gen_range(0..present.len())];
                let updates = match rng.gen_range(0..10) {
                    0..3 if !present.is_empty() => vec![(pick(&mut rng), -1)],
                    3 if !present.is_empty() => vec![(pick(&mut rng), 1)],
                    4..7 if !present.is_empty() => {
                        // reinforced: retracted and replaced by a later, more stable trace
                        let (key, old) = pick(&mut rng);
                        let new = MemoryTrace {
                            last_activation_secs: old.last_activation_secs.max(at as i64),
                            stability_secs: (old.stability_secs * 2).max(DAY),
                            activations: old.activations + 1,
                        };
                        vec![((key, old), -1), ((key, new), 1)]
                    }
                    _ => vec![((memory(&mut rng), random_trace(at as i64, &mut rng)), 1)],
                };
                for (record, diff) in updates {
                    if worker.index() == 0 {
                        input.update_at(record, at, diff);
                    }
                    log.push((record, at, diff));
                }
            }
            // time jumps by up to two months, often across several archivings at once
            let next =
                now + rng.gen_range(0..=60) as u64 * DAY as u64 + rng.gen_range(0..DAY) as u64;
            input.advance_to(next.max(now + 1));
            input.flush();
            worker.step_while(|| probe.less_than(input.time()));
            if worker.index() == 0 {
                // every time before the frontier is final: check each at which the input, an
                // archiving or the output can change, so every time in [now, frontier) is covered
                let output = output.lock().unwrap().clone();
                let input_times: BTreeSet<u64> = log.iter().map(|(_, t, _)| *t).collect();
                let due_times = log.iter().filter_map(|((_, trace), _, _)| {
                    trace.archived_from(&thresholds).map(|f| f.max(0) as u64)
                });
                let times: BTreeSet<u64> = (input_times.iter().copied())
                    .chain(due_times)
                    .chain(output.iter().map(|(_, t, _)| *t))
                    .chain([now])
                    .filter(|t| (now..*input.time()).contains(t))
                    .collect();
                let mut before = archived_from_scratch(&log, now.saturating_sub(1), &thresholds);
                for t in times {
                    let want = archived_from_scratch(&log, t, &thresholds);
                    let got = as_of(&output, t);
                    if got != want {
                        mismatches.push(format!(
                            "seed {seed} round {round} at {t}: got {got:?}, want {want:?}"
                        ));
                    }
                    if want != before && !input_times.contains(&t) {
                        due_in.fetch_add(1, Ordering::Relaxed);
                    }
                    before = want;
                }
            }
        }
    });
    due.load(Ordering::Relaxed)
}

#[test]
fn archived_at_every_time_equals_from_scratch_one_worker() {
    let due: usize = (0..20).map(|seed| run_archived(1, seed)).sum();
    assert!(due > 0, "no archiving ever fell due without input");
}

#[test]
fn archived_at_every_time_equals_from_scratch_two_workers() {
    for seed in 100..106 {
        run_archived(2, seed);
    }
}
