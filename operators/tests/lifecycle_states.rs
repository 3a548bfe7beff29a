//! `lifecycle_states` over engine time equals the state of every present trace computed from
//! scratch at that time, over random streams of traces inserted, reinforced (retracted and
//! replaced) and retracted while time advances in jumps of up to two months, with one and two
//! workers. Transitions are never fed in: they must come from the updates the operator
//! schedules itself.

mod common;

use common::{apply, execute};
use differential_dataflow::input::{Input, InputSession};
use engram_operators::lifecycle::{lifecycle_states, PreferenceTrace};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;

const DAY: i64 = 86_400;
/// Engine time starts here (seconds since the Unix epoch).
const START: u64 = 1_700_000_000;

type Key = String;
type Record = (Key, PreferenceTrace);
/// Every output update with its time: the operator emits future updates early, so what holds
/// at a time is the sum of the updates at or before it.
type Updates = Arc<Mutex<Vec<((Key, LifecycleState), u64, isize)>>>;

fn random_trace(now: u64, rng: &mut StdRng) -> PreferenceTrace {
    PreferenceTrace {
        // activated up to 60 days ago, or just now
        last_activation_secs: now as i64 - rng.gen_range(0..=60) * DAY * rng.gen_range(0..2),
        stability_secs: rng.gen_range(1..=40) * DAY + rng.gen_range(0..DAY),
        activations: rng.gen_range(1..4),
    }
}

/// The states at `t`, summed from the updates at or before it.
fn states_at(updates: &Updates, t: u64) -> HashMap<(Key, LifecycleState), isize> {
    let mut states = HashMap::new();
    for (record, time, diff) in updates.lock().unwrap().iter() {
        if *time <= t {
            *states.entry(record.clone()).or_insert(0) += diff;
        }
    }
    states.retain(|_, m| *m != 0);
    states
}

/// `lifecycle_states` with default thresholds on `worker`, its output collected into `updates`;
/// the input starts at [`START`].
fn lifecycle_dataflow(
    worker: &mut timely::worker::Worker,
    probe: &Handle<u64>,
    updates: &Updates,
) -> InputSession<u64, Record, isize> {
    let sink = updates.clone();
    let mut input = worker.dataflow::<u64, _, _>(|scope| {
        let (input, traces) = scope.new_collection::<Record, isize>();
        lifecycle_states(traces, LifecycleThresholds::default())
            .inspect(move |update| sink.lock().unwrap().push(update.clone()))
            .probe_with(probe);
        input
    });
    input.advance_to(START);
    input
}

fn run(workers: usize, seed: u64, rounds: usize) {
    let updates: Updates = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = lifecycle_dataflow(worker, &probe, &updates);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<Record, isize> = BTreeMap::new();
        let mut next_key = 0;
        for round in 0..rounds {
            let now = *input.time();
            for _ in 0..rng.gen_range(1..4) {
                let roll = rng.gen_range(0..10);
                let keys: Vec<Record> = current.keys().cloned().collect();
                if roll < 3 && !keys.is_empty() {
                    // retract
                    let record = keys[rng.gen_range(0..keys.len())].clone();
                    feed(worker.index(), &mut input, &mut current, record, -1);
                } else if roll < 6 && !keys.is_empty() {
                    // reinforce: replace a trace by a later, more stable one
                    let (key, old) = keys[rng.gen_range(0..keys.len())].clone();
                    let new = PreferenceTrace {
                        last_activation_secs: now as i64,
                        stability_secs: old.stability_secs * 2,
                        activations: old.activations + 1,
                    };
                    feed(
                        worker.index(),
                        &mut input,
                        &mut current,
                        (key.clone(), old),
                        -1,
                    );
                    feed(worker.index(), &mut input, &mut current, (key, new), 1);
                } else {
                    next_key += 1;
                    let record = (format!("p{next_key}"), random_trace(now, &mut rng));
                    feed(worker.index(), &mut input, &mut current, record, 1);
                }
            }
            // time jumps by up to two months, often across several transitions at once
            let next =
                now + rng.gen_range(0..=60) as u64 * DAY as u64 + rng.gen_range(0..DAY) as u64;
            input.advance_to(next.max(now + 1));
            input.flush();
            worker.step_while(|| probe.less_than(input.time()));
            if worker.index() == 0 {
                // the frontier is at `next`: every time before it is final
                let t = *input.time() - 1;
                let mut want: HashMap<(Key, LifecycleState), isize> = HashMap::new();
                for ((key, trace), m) in &current {
                    let state = trace.state_at(t as i64, &LifecycleThresholds::default());
                    *want.entry((key.clone(), state)).or_insert(0) += m;
                }
                want.retain(|_, m| *m != 0);
                let got = states_at(&updates, t);
                if got != want {
                    found.push(format!(
                        "seed {seed} round {round} at {t}: got {got:?}, want {want:?}"
                    ));
                }
            }
        }
    });
}

/// Applies the update to the test's copy and feeds it on worker 0 only.
fn feed(
    worker: usize,
    input: &mut InputSession<u64, Record, isize>,
    current: &mut BTreeMap<Record, isize>,
    record: Record,
    diff: isize,
) {
    apply(current, &record, diff);
    if worker == 0 {
        input.update(record, diff);
    }
}

#[test]
fn scheduled_transitions_equal_states_from_scratch_one_worker() {
    for seed in 0..20 {
        run(1, seed, 40);
    }
}

#[test]
fn scheduled_transitions_equal_states_from_scratch_two_workers() {
    for seed in 100..106 {
        run(2, seed, 40);
    }
}

#[test]
fn transitions_happen_at_the_crossing_seconds_without_new_input() {
    // one trace, then only time passes: the states must change by themselves
    let updates: Updates = Default::default();
    let sink = updates.clone();
    let trace = PreferenceTrace {
        last_activation_secs: START as i64,
        stability_secs: 28 * DAY,
        activations: 1,
    };
    timely::execute(timely::Config::thread(), move |worker| {
        let probe = Handle::new();
        let mut input = lifecycle_dataflow(worker, &probe, &sink);
        input.insert(("p".to_string(), trace));
        input.advance_to(START + 200 * DAY as u64);
        input.flush();
        worker.step_while(|| probe.less_than(input.time()));
    })
    .unwrap();
    // R = e^(−t/S) crosses 0.3 at S·ln(1/0.3) and 0.05 at S·ln 20
    let s = 28.0 * DAY as f64;
    let inactive = START + (s * (1.0f64 / 0.3).ln()).floor() as u64 + 1;
    let archived = START + (s * 20.0f64.ln()).floor() as u64 + 1;
    let only = |state| HashMap::from([(("p".to_string(), state), 1)]);
    assert_eq!(
        states_at(&updates, inactive - 1),
        only(LifecycleState::Active)
    );
    assert_eq!(
        states_at(&updates, inactive),
        only(LifecycleState::Inactive)
    );
    assert_eq!(
        states_at(&updates, archived - 1),
        only(LifecycleState::Inactive)
    );
    assert_eq!(
        states_at(&updates, archived),
        only(LifecycleState::Archived)
    );
}
