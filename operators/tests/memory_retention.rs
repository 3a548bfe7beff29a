//! `memory_traces` maintained incrementally equals its definition computed from scratch, over
//! random streams of memory activations (several creations of one memory, recalls stamped
//! before the creation and after the archiving, duplicates, negative multiplicities,
//! retractions, out-of-order event times), and `archived_memories` over engine time equals, at
//! every time the frontier passes, the archived records of its input as of that time computed
//! from scratch (traces inserted, duplicated, reinforced and retracted, some stamped at future
//! times, while time advances in jumps of up to two months, so that archivings fall due with no
//! new input); each with one and two workers.

mod common;

use common::{apply, collect_into, difference, execute, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::math::decay::{LifecycleThresholds, StabilityParams};
use engram_operators::memory_retention::{
    archived_memories, memory_traces, MemoryActivation, MemoryId, MemoryTrace,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;

const DAY: i64 = 86_400;
/// Event time and engine time start here (seconds since the Unix epoch).
const START: i64 = 1_700_000_000;

type Activations = BTreeMap<(MemoryId, MemoryActivation), isize>;
type Record = (MemoryId, MemoryTrace);
/// Updates with their times: what holds at a time is the sum of the updates at or before it.
type Log<D> = Vec<(D, u64, isize)>;

/// A base stability of 1, 10 or 30 days: archived within days, weeks or months unrecalled.
fn params(seed: u64) -> StabilityParams {
    StabilityParams {
        base_secs: [10.0, 1.0, 30.0][seed as usize % 3] * DAY as f64,
        ..Default::default()
    }
}

/// One of four memories, spread over the 128 bits.
fn memory(rng: &mut StdRng) -> MemoryId {
    rng.gen_range(0..4u128) * (u128::MAX / 3)
}

fn random_activation(rng: &mut StdRng) -> (MemoryId, MemoryActivation) {
    let activation = if rng.gen_bool(0.3) {
        // on a coarse grid, so that two creations of a memory can share a time
        MemoryActivation::Created {
            at_secs: START + rng.gen_range(0..8) * 5 * DAY,
            importance_milli: [0, 300, 1000][rng.gen_range(0..3)],
        }
    } else {
        // from ten days before the first creation to long after most archivings
        MemoryActivation::Recalled {
            at_secs: START + rng.gen_range(-10 * DAY..150 * DAY),
        }
    };
    (memory(rng), activation)
}

/// Per memory with a counting creation: its trace, by the definition, and its counting recalls.
fn traces_from_scratch(
    current: &Activations,
    params: &StabilityParams,
    thresholds: &LifecycleThresholds,
) -> BTreeMap<MemoryId, (MemoryTrace, usize)> {
    let mut created: BTreeMap<MemoryId, (i64, u16)> = BTreeMap::new();
    let mut recalls: BTreeMap<MemoryId, Vec<i64>> = BTreeMap::new();
    for (&(memory, activation), &m) in current.iter().filter(|(_, m)| **m > 0) {
        match activation {
            MemoryActivation::Created {
                at_secs,
                importance_milli,
            } => {
                let least = created.entry(memory).or_insert((at_secs, importance_milli));
                *least = (*least).min((at_secs, importance_milli));
            }
            MemoryActivation::Recalled { at_secs } => {
                let times = recalls.entry(memory).or_default();
                times.extend(std::iter::repeat_n(at_secs, m as usize));
            }
        }
    }
    let trace = |(at, milli): (i64, u16), recalls: &[i64]| {
        MemoryTrace::of_memory(at, f64::from(milli) / 1000.0, recalls, params, thresholds)
    };
    created
        .into_iter()
        .map(|(memory, creation)| {
            let recalls = recalls.remove(&memory).unwrap_or_default();
            (memory, (trace(creation, &recalls), recalls.len()))
        })
        .collect()
}

/// Runs `memory_traces` over 40 rounds; returns how many traces checked were reinforced by a
/// recall, and how many ignored one (archived by then).
fn run_traces(workers: usize, seed: u64) -> (usize, usize) {
    let sink: Sink<Record> = Default::default();
    let seen = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let seen_in = seen.clone();
    execute(workers, move |worker, mismatches| {
        let (params, thresholds) = (params(seed), LifecycleThresholds::default());
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, activations) = scope.new_collection();
            memory_traces(activations, params, thresholds)
                .inspect(collect_into(&sink))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current = Activations::new();
        for round in 1..=40u64 {
            for _ in 0..rng.gen_range(1..6) {
                let (record, diff) = match rng.gen_range(0..20) {
                    // a new record twice at once, or retracted before it was ever there
                    0 | 1 => (random_activation(&mut rng), 2),
                    2 => (random_activation(&mut rng), -1),
                    _ => random_update(&current, &mut rng, random_activation),
                };
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round);
            if worker.index() == 0 {
                let want = traces_from_scratch(&current, &params, &thresholds);
                let set: BTreeSet<Record> = want.iter().map(|(k, (t, _))| (*k, *t)).collect();
                if let Some(d) = difference("traces", &sink, &set) {
                    mismatches.push(format!("seed {seed} round {round}: {d}"));
                }
                for (trace, recalls) in want.values() {
                    if trace.activations > 1 {
                        seen_in.0.fetch_add(1, Ordering::Relaxed);
                    }
                    if (trace.activations as usize) < recalls + 1 {
                        seen_in.1.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
    });
    (
        seen.0.load(Ordering::Relaxed),
        seen.1.load(Ordering::Relaxed),
    )
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
fn traces_incremental_equals_from_scratch_one_worker() {
    let (reinforced, ignored) = (0..12)
        .map(|seed| run_traces(1, seed))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(reinforced > 0, "no recall ever reinforced a memory");
    assert!(ignored > 0, "no recall ever came after the archiving");
}

#[test]
fn traces_incremental_equals_from_scratch_two_workers() {
    for seed in 100..104 {
        run_traces(2, seed);
    }
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
