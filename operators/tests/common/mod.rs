//! Harness shared by the random-stream tests: each runs an operator incrementally over a random
//! stream of updates on one or more workers ([`execute`]), keeps its own copy of the input
//! ([`update`], often of a [`random_update`]), accumulates what the operator emits in a
//! [`Sink`] shared by all workers ([`collect_into`]), and after every round ([`settle`]) has
//! worker 0 compare the sink's [`nonzero`] contents with the definition computed from scratch
//! (often by [`difference`]), recording any difference in [`Mismatches`].

#![allow(dead_code)]

use differential_dataflow::input::InputSession;
use differential_dataflow::Data;
use rand::rngs::StdRng;
use rand::Rng;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;
use timely::worker::Worker;

/// Accumulated output of one collection, summed over every worker's updates.
pub type Sink<D> = Arc<Mutex<HashMap<D, isize>>>;

/// An `inspect` callback adding every update to `sink`.
pub fn collect_into<D: Clone + Eq + Hash + 'static>(
    sink: &Sink<D>,
) -> impl FnMut(&(D, u64, isize)) + 'static {
    let sink = sink.clone();
    move |(data, _time, diff)| *sink.lock().unwrap().entry(data.clone()).or_insert(0) += diff
}

/// What `sink` holds with a non-zero multiplicity: the collection as of the last update seen.
pub fn nonzero<D: Clone + Eq + Hash>(sink: &Sink<D>) -> HashMap<D, isize> {
    sink.lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| **m != 0)
        .map(|(d, m)| (d.clone(), *m))
        .collect()
}

/// Applies `diff` to `record` in the multiset, dropping it at 0.
pub fn apply<K: Ord + Clone>(multiset: &mut BTreeMap<K, isize>, record: &K, diff: isize) {
    let m = multiset.entry(record.clone()).or_insert(0);
    *m += diff;
    if *m == 0 {
        multiset.remove(record);
    }
}

/// Messages describing where the maintained output differed from the definition; clones share
/// one list, so the workers can push to it and the test can check it once they are done.
#[derive(Clone, Default)]
pub struct Mismatches(Arc<Mutex<Vec<String>>>);

impl Mismatches {
    /// Records one difference.
    pub fn push(&self, message: String) {
        self.0.lock().unwrap().push(message);
    }

    /// Fails, listing every recorded difference, unless there were none.
    #[track_caller]
    pub fn assert_none(&self) {
        let m = self.0.lock().unwrap();
        assert!(m.is_empty(), "{}", m.join("\n"));
    }
}

/// Runs `body` on `workers` workers of one process, handing each the shared [`Mismatches`], and
/// fails listing them once all workers are done, unless there were none.
#[track_caller]
pub fn execute<F>(workers: usize, body: F)
where
    F: Fn(&mut Worker, &Mismatches) + Send + Sync + 'static,
{
    let mismatches = Mismatches::default();
    let found = mismatches.clone();
    timely::execute(timely::Config::process(workers), move |worker| {
        body(worker, &found)
    })
    .unwrap();
    mismatches.assert_none();
}

/// Applies `diff` to `record` in `current`, the test's copy of the input multiset, and feeds it
/// to `input` on worker 0 alone, so that each update enters the dataflow once.
pub fn update<D: Data + Ord>(
    worker: &Worker,
    input: &mut InputSession<u64, D, isize>,
    current: &mut BTreeMap<D, isize>,
    record: D,
    diff: isize,
) {
    apply(current, &record, diff);
    if worker.index() == 0 {
        input.update(record, diff);
    }
}

/// One random update to the multiset `current`: with probability 0.3 the retraction of a present
/// record, else with probability 0.1 the same present record once more (present twice, it still
/// counts once in the definitions), else a record made by `new`. Draws nothing more from `rng`
/// than that, in that order.
pub fn random_update<D: Clone>(
    current: &BTreeMap<D, isize>,
    rng: &mut StdRng,
    new: impl FnOnce(&mut StdRng) -> D,
) -> (D, isize) {
    if !current.is_empty() && rng.gen_bool(0.3) {
        let k = rng.gen_range(0..current.len());
        (current.keys().nth(k).unwrap().clone(), -1)
    } else if !current.is_empty() && rng.gen_bool(0.1) {
        let k = rng.gen_range(0..current.len());
        (current.keys().nth(k).unwrap().clone(), 1)
    } else {
        (new(rng), 1)
    }
}

/// Advances `input` to `time` and steps `worker` until `probe` has passed every earlier time:
/// then every worker's `inspect` has run for the updates before `time`.
pub fn settle<D: Data>(
    worker: &mut Worker,
    probe: &Handle<u64>,
    input: &mut InputSession<u64, D, isize>,
    time: u64,
) {
    input.advance_to(time);
    input.flush();
    worker.step_while(|| probe.less_than(input.time()));
}

/// `None` when `sink` holds each record of `want` once and nothing else; else a message, headed
/// `name`, listing what it holds wrongly (or with another multiplicity) and what it lacks.
pub fn difference<D: Clone + Eq + Hash + Ord + Debug>(
    name: &str,
    sink: &Sink<D>,
    want: &BTreeSet<D>,
) -> Option<String> {
    let got: BTreeMap<D, isize> = nonzero(sink).into_iter().collect();
    let wrong: Vec<_> = got
        .iter()
        .filter(|(d, m)| **m != 1 || !want.contains(*d))
        .collect();
    let missing: Vec<_> = want.iter().filter(|d| !got.contains_key(*d)).collect();
    (!wrong.is_empty() || !missing.is_empty())
        .then(|| format!("{name}: unexpected {wrong:?}, missing {missing:?}"))
}

/// Memory texts of every content type (prose, question, two lists, code, link), for the
/// views that read a memory's traits.
pub const TEXTS: [&str; 6] = [
    "I moved to Lisbon last spring.",
    "Where did I park the car?",
    "Packing:\n- passport\n- charger",
    "Steps:\n1. preheat\n2) mix",
    "let x = 1;\nlet y = 2;",
    "The docs are at https://example.org/guide",
];
