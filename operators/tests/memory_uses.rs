//! `memory_traces` and `retrieval_preferences`, each over `used_memories`, maintained
//! incrementally equal their definitions computed from scratch, over one random stream of
//! memories (created, retracted, replaced by another version of the same id; episodes with
//! traits, facts and summaries without; a user's own memories and the tenant's domain ones) and
//! of answers' uses of them (by the owner, by another user of the tenant, by a user of another
//! tenant; recalls stamped before the creation and after the archiving; neutral, up- and
//! down-voted; one answer using several memories of a trait; duplicates, negative
//! multiplicities, retractions) while time advances, with one and two workers.

mod common;

use common::{collect_into, difference, execute, random_update, settle, update, Sink, TEXTS};
use differential_dataflow::input::{Input, InputSession};
use engram_operators::correction_clusters::UserKey;
use engram_operators::math::decay::{LifecycleThresholds, StabilityParams};
use engram_operators::memories::{
    owner_key, used_memories, JudgedUse, Memory, MemoryId, MemoryTraits, RetrievalTrait,
};
use engram_operators::memory_retention::{memory_traces, MemoryTrace};
use engram_operators::retrieval_preferences::{retrieval_preferences, TraitKey, TraitTally};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;

const DAY: i64 = 86_400;
/// Event times start here (seconds since the Unix epoch).
const START: i64 = 1_700_000_000;

type UseRecord = (MemoryId, JudgedUse);
type Trace = (MemoryId, MemoryTrace);
type Preference = (TraitKey, TraitTally);

/// The users answers are given to: two of one tenant, one of another with the same name.
const USERS: [(&str, &str); 3] = [("t1", "ann"), ("t1", "bob"), ("t2", "ann")];

/// A base stability of 1, 10 or 30 days: archived within days, weeks or months unrecalled.
fn params(seed: u64) -> StabilityParams {
    StabilityParams {
        base_secs: [10.0, 1.0, 30.0][seed as usize % 3] * DAY as f64,
        ..Default::default()
    }
}

/// One of four memories, spread over the 128 bits.
fn memory_id(rng: &mut StdRng) -> MemoryId {
    rng.gen_range(0..4u128) * (u128::MAX / 3)
}

fn random_traits(rng: &mut StdRng) -> MemoryTraits {
    let role = ["user", "assistant"][rng.gen_range(0..2)];
    let text = TEXTS[rng.gen_range(0..TEXTS.len())];
    RetrievalTrait::of(role, text, rng.gen_bool(0.5))
}

/// Ann's of t1, t1's domain memory, or ann's of t2; an episode (with traits) or a fact or
/// summary (without), made on a coarse grid of days.
fn random_memory(rng: &mut StdRng) -> Memory {
    let (tenant, user) = [("t1", "ann"), ("t1", "_domain"), ("t2", "ann")][rng.gen_range(0..3)];
    Memory {
        owner: owner_key(tenant, user),
        created_secs: START + rng.gen_range(0..8) * 5 * DAY,
        importance_milli: [0, 300, 1000][rng.gen_range(0..3)],
        traits: rng.gen_bool(0.7).then(|| random_traits(rng)),
    }
}

fn random_use(rng: &mut StdRng) -> UseRecord {
    let (tenant, user) = USERS[rng.gen_range(0..USERS.len())];
    let used = JudgedUse {
        user: (tenant.into(), user.into()),
        message: format!("m{}", rng.gen_range(0..5)),
        // from ten days before the first creation to long after most archivings
        at_secs: START + rng.gen_range(-10 * DAY..150 * DAY),
        reward: rng.gen_range(-1..=1),
    };
    (memory_id(rng), used)
}

fn owns(memory: &Memory, (tenant, user): &UserKey) -> bool {
    memory.owner == owner_key(tenant, user) || memory.owner == owner_key(tenant, "_domain")
}

/// What the stream showed the definitions, summed over rounds: traces reinforced by a recall,
/// recalls that came after the archiving, uses of a memory by someone else that counted for
/// nothing, (trait, answer) pairs with two memories or more of the trait, and messages counted
/// both up and down for a trait.
#[derive(Default)]
struct Seen {
    reinforced: usize,
    ignored: usize,
    foreign: usize,
    shared: usize,
    both_ways: usize,
}

/// Every present use of a present memory by someone it belongs to: (memory id, memory, use,
/// multiplicity).
fn used_from_scratch<'a>(
    memories: &'a BTreeMap<MemoryId, Memory>,
    uses: &'a BTreeMap<UseRecord, isize>,
    seen: &mut Seen,
) -> Vec<(MemoryId, &'a Memory, &'a JudgedUse, isize)> {
    let mut used = Vec::new();
    for ((id, u), m) in uses.iter().filter(|(_, m)| **m > 0) {
        if let Some(memory) = memories.get(id) {
            if owns(memory, &u.user) {
                used.push((*id, memory, u, *m));
            } else {
                seen.foreign += 1;
            }
        }
    }
    used
}

/// The definition of `memory_traces`: the trace of every present memory, by
/// `MemoryTrace::of_memory` of its creation, importance and counting recalls, where it differs
/// from the trace of the memory with no recalls.
fn traces_from_scratch(
    memories: &BTreeMap<MemoryId, Memory>,
    used: &[(MemoryId, &Memory, &JudgedUse, isize)],
    params: &StabilityParams,
    seen: &mut Seen,
) -> BTreeSet<Trace> {
    let thresholds = LifecycleThresholds::default();
    let mut traces = BTreeSet::new();
    for (id, memory) in memories {
        let recalls: Vec<i64> = (used.iter())
            .filter(|(of, _, u, _)| of == id && u.reward >= 0)
            .flat_map(|(_, _, u, m)| std::iter::repeat_n(u.at_secs, *m as usize))
            .collect();
        let importance = f64::from(memory.importance_milli) / 1000.0;
        let trace = MemoryTrace::of_memory(
            memory.created_secs,
            importance,
            &recalls,
            params,
            &thresholds,
        );
        seen.reinforced += usize::from(trace.activations > 1);
        seen.ignored += usize::from((trace.activations as usize) < recalls.len() + 1);
        // only traces recalls changed leave the dataflow: the others are a closed form
        let unrecalled = MemoryTrace::unrecalled(
            memory.created_secs,
            memory.importance_milli,
            params,
            &thresholds,
        );
        if trace != unrecalled {
            traces.insert((*id, trace));
        }
    }
    traces
}

/// The definition of `retrieval_preferences`: per answer `(user, message, reward)` with reward
/// ≠ 0, the memories with traits its uses name; the answer counts once, by the sign of its
/// reward, for every trait of any of them, and for the age each had when the answer came.
fn preferences_from_scratch(
    used: &[(MemoryId, &Memory, &JudgedUse, isize)],
    seen: &mut Seen,
) -> BTreeSet<Preference> {
    let mut holders: BTreeMap<(TraitKey, &String, i8), BTreeSet<MemoryId>> = BTreeMap::new();
    for (id, memory, u, _) in used.iter().filter(|(_, _, u, _)| u.reward != 0) {
        // an episode's traits, and recent when the answer came less than a week after it
        let recent = RetrievalTrait::Recent(u.at_secs - memory.created_secs < 7 * DAY);
        let age = memory.traits.map(|_| recent);
        for kind in memory.traits.iter().flatten().chain(age.iter()) {
            let answer = ((u.user.clone(), *kind), &u.message, u.reward);
            holders.entry(answer).or_default().insert(*id);
        }
    }
    let mut counted: BTreeMap<TraitKey, BTreeSet<(&String, i8)>> = BTreeMap::new();
    for ((key, message, reward), held_by) in holders {
        seen.shared += usize::from(held_by.len() > 1);
        counted.entry(key).or_default().insert((message, reward));
    }
    (counted.into_iter())
        .map(|(key, answers)| {
            let up = answers.iter().filter(|(_, r)| *r > 0).count() as u64;
            let down = answers.len() as u64 - up;
            let messages: BTreeSet<_> = answers.iter().map(|(m, _)| m).collect();
            seen.both_ways += answers.len() - messages.len();
            (key, TraitTally { up, down })
        })
        .collect()
}

/// Runs both views over 40 rounds of one random stream.
fn run(workers: usize, seed: u64) -> Seen {
    let (traces_sink, preferences_sink): (Sink<Trace>, Sink<Preference>) = Default::default();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen_in = seen.clone();
    execute(workers, move |worker, mismatches| {
        let params = params(seed);
        let probe = Handle::new();
        let (mut memories_in, mut uses_in): (
            InputSession<u64, (MemoryId, Memory), isize>,
            InputSession<u64, UseRecord, isize>,
        ) = worker.dataflow::<u64, _, _>(|scope| {
            let (memories_in, memories) = scope.new_collection();
            let (uses_in, uses) = scope.new_collection();
            let used = used_memories(memories, uses);
            let thresholds = LifecycleThresholds::default();
            memory_traces(used.clone(), params, thresholds)
                .inspect(collect_into(&traces_sink))
                .probe_with(&probe);
            retrieval_preferences(used)
                .inspect(collect_into(&preferences_sink))
                .probe_with(&probe);
            (memories_in, uses_in)
        });
        let mut rng = StdRng::seed_from_u64(seed);
        // the memories: a set, one record per id, as the log gives them
        let mut memories: BTreeMap<MemoryId, Memory> = BTreeMap::new();
        let mut uses = BTreeMap::new();
        let first = worker.index() == 0;
        let feed = |memories_in: &mut InputSession<_, _, _>, record, diff| {
            if first {
                memories_in.update(record, diff);
            }
        };
        for round in 1..=40u64 {
            for _ in 0..rng.gen_range(1..6) {
                let id = memory_id(&mut rng);
                match (rng.gen_range(0..20), memories.get(&id).copied()) {
                    // a use twice at once, or retracted before it was ever there
                    (0 | 1, _) => {
                        let diff = [2, -1][rng.gen_range(0..2)];
                        let record = random_use(&mut rng);
                        update(worker, &mut uses_in, &mut uses, record, diff);
                    }
                    (2..5, None) => {
                        let memory = random_memory(&mut rng);
                        memories.insert(id, memory);
                        feed(&mut memories_in, (id, memory), 1);
                    }
                    (2 | 3, Some(old)) => {
                        memories.remove(&id);
                        feed(&mut memories_in, (id, old), -1);
                    }
                    // another version of the memory in its place
                    (4, Some(old)) => {
                        let new = random_memory(&mut rng);
                        memories.insert(id, new);
                        feed(&mut memories_in, (id, old), -1);
                        feed(&mut memories_in, (id, new), 1);
                    }
                    _ => {
                        let (record, diff) = random_update(&uses, &mut rng, random_use);
                        update(worker, &mut uses_in, &mut uses, record, diff);
                    }
                }
            }
            memories_in.advance_to(round);
            memories_in.flush();
            settle(worker, &probe, &mut uses_in, round);
            if worker.index() == 0 {
                let mut seen = seen_in.lock().unwrap();
                let used = used_from_scratch(&memories, &uses, &mut seen);
                let traces = traces_from_scratch(&memories, &used, &params, &mut seen);
                if let Some(d) = difference("traces", &traces_sink, &traces) {
                    mismatches.push(format!("seed {seed} round {round}: {d}"));
                }
                let preferences = preferences_from_scratch(&used, &mut seen);
                if let Some(d) = difference("preferences", &preferences_sink, &preferences) {
                    mismatches.push(format!("seed {seed} round {round}: {d}"));
                }
            }
        }
    });
    Arc::try_unwrap(seen)
        .ok()
        .expect("the workers are done")
        .into_inner()
        .unwrap()
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    let mut all = Seen::default();
    for seed in 0..12 {
        let seen = run(1, seed);
        all.reinforced += seen.reinforced;
        all.ignored += seen.ignored;
        all.foreign += seen.foreign;
        all.shared += seen.shared;
        all.both_ways += seen.both_ways;
    }
    assert!(all.reinforced > 0, "no recall ever reinforced a memory");
    assert!(all.ignored > 0, "no recall ever came after the archiving");
    assert!(all.foreign > 0, "no one ever used a memory not theirs");
    assert!(
        all.shared > 0,
        "no answer ever used two memories of one trait"
    );
    assert!(all.both_ways > 0, "no message was ever judged both ways");
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..104 {
        run(2, seed);
    }
}
