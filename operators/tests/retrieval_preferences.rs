//! `retrieval_preferences` maintained incrementally equals its definition computed from scratch,
//! over random streams of memory traits (memories sharing some traits and differing in others,
//! traits replaced by others) and judged uses (one answer using several memories of a trait,
//! neutral rewards, one message judged both ways), with duplicates, negative multiplicities and
//! retractions while time advances, with one and two workers; and in hand-computed cases, an
//! answer using two list memories counts once for the list trait, and records of negative
//! multiplicity count for nothing.

mod common;

use common::{collect_into, difference, execute, random_update, settle, update, Sink};
use differential_dataflow::input::{Input, InputSession};
use engram_operators::correction_clusters::UserKey;
use engram_operators::memory_retention::MemoryId;
use engram_operators::retrieval_preferences::{
    retrieval_preferences, ContentType, MemoryTraits, RetrievalTrait, TraitKey, TraitTally,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use timely::dataflow::operators::probe::Handle;
use timely::worker::Worker;

type TraitsRecord = (MemoryId, MemoryTraits);
type JudgedRecord = (MemoryId, (UserKey, String, i8));
type Output = (TraitKey, TraitTally);

/// Texts of every content type, two of them lists.
const TEXTS: [&str; 6] = [
    "I moved to Lisbon last spring.",
    "Where did I park the car?",
    "Packing:\n- passport\n- charger",
    "Steps:\n1. preheat\n2) mix",
    "let x = 1;\nlet y = 2;",
    "The docs are at https://example.org/guide",
];

/// One of four memories, spread over the 128 bits.
fn memory(rng: &mut StdRng) -> MemoryId {
    rng.gen_range(0..4u128) * (u128::MAX / 3)
}

fn random_traits(rng: &mut StdRng) -> MemoryTraits {
    let role = ["user", "assistant"][rng.gen_range(0..2)];
    let text = TEXTS[rng.gen_range(0..TEXTS.len())];
    RetrievalTrait::of(role, text, rng.gen_bool(0.5))
}

fn random_judged(rng: &mut StdRng) -> JudgedRecord {
    let (tenant, user, message) = (
        rng.gen_range(0..2),
        rng.gen_range(0..2),
        rng.gen_range(0..5),
    );
    let (user, message) = (
        (format!("t{tenant}"), format!("u{user}")),
        format!("m{message}"),
    );
    (memory(rng), (user, message, rng.gen_range(-1..=1)))
}

/// The definition: per answer `(user, message, reward)` with reward ≠ 0, the memories its
/// present uses name; the answer counts once, by the sign of its reward, for every trait of a
/// present traits record of any of them. Also returns how many (trait, answer) pairs had two
/// memories or more with the trait, and how many messages counted both up and down for a trait.
fn from_scratch(
    traits: &BTreeMap<TraitsRecord, isize>,
    judged: &BTreeMap<JudgedRecord, isize>,
) -> (BTreeSet<Output>, usize, usize) {
    let mut answers: BTreeMap<(&UserKey, &String, i8), BTreeSet<MemoryId>> = BTreeMap::new();
    for ((memory, (user, message, reward)), m) in judged {
        if *m > 0 && *reward != 0 {
            let answer = answers.entry((user, message, *reward)).or_default();
            answer.insert(*memory);
        }
    }
    let mut counted: BTreeMap<TraitKey, BTreeSet<(&String, i8)>> = BTreeMap::new();
    let mut shared = 0;
    for ((user, message, reward), memories) in answers {
        let mut holders: BTreeMap<RetrievalTrait, BTreeSet<MemoryId>> = BTreeMap::new();
        for ((memory, kinds), m) in traits {
            if *m > 0 && memories.contains(memory) {
                for kind in kinds {
                    holders.entry(*kind).or_default().insert(*memory);
                }
            }
        }
        for (kind, held_by) in holders {
            shared += usize::from(held_by.len() > 1);
            let answers = counted.entry((user.clone(), kind)).or_default();
            answers.insert((message, reward));
        }
    }
    let mut both_ways = 0;
    let tallies = (counted.into_iter())
        .map(|(key, answers)| {
            let up = answers.iter().filter(|(_, r)| *r > 0).count() as u64;
            let down = answers.len() as u64 - up;
            let messages: BTreeSet<_> = answers.iter().map(|(m, _)| m).collect();
            both_ways += answers.len() - messages.len();
            (key, TraitTally { up, down })
        })
        .collect();
    (tallies, shared, both_ways)
}

type Inputs = (
    InputSession<u64, TraitsRecord, isize>,
    InputSession<u64, JudgedRecord, isize>,
);

/// The operator over two new inputs on `worker`, its output collected into `sink`.
fn dataflow(worker: &mut Worker, sink: &Sink<Output>, probe: &Handle<u64>) -> Inputs {
    worker.dataflow::<u64, _, _>(|scope| {
        let (traits_in, traits) = scope.new_collection();
        let (judged_in, judged) = scope.new_collection();
        retrieval_preferences(traits, judged)
            .inspect(collect_into(sink))
            .probe_with(probe);
        (traits_in, judged_in)
    })
}

/// Advances both inputs to `round` and steps `worker` until the output is complete before it.
fn advance(worker: &mut Worker, probe: &Handle<u64>, inputs: &mut Inputs, round: u64) {
    inputs.0.advance_to(round);
    inputs.0.flush();
    settle(worker, probe, &mut inputs.1, round);
}

/// Runs the operator over 40 rounds; returns how many (trait, answer) pairs checked had two
/// memories or more with the trait, and how many messages counted both ways for a trait.
fn run(workers: usize, seed: u64) -> (usize, usize) {
    let sink: Sink<Output> = Default::default();
    let seen = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let seen_in = seen.clone();
    execute(workers, move |worker, mismatches| {
        let probe = Handle::new();
        let mut inputs = dataflow(worker, &sink, &probe);
        let mut rng = StdRng::seed_from_u64(seed);
        let (mut traits, mut judged) = (BTreeMap::new(), BTreeMap::new());
        for round in 1..=40u64 {
            for _ in 0..rng.gen_range(1..6) {
                let present: Vec<TraitsRecord> = (traits.iter())
                    .filter(|(_, m)| **m > 0)
                    .map(|(r, _)| *r)
                    .collect();
                let new_traits = |rng: &mut StdRng| (memory(rng), random_traits(rng));
                match rng.gen_range(0..20) {
                    // a new record twice at once, or retracted before it was ever there
                    0 | 1 => {
                        let diff = [2, -1][rng.gen_range(0..2)];
                        let record = random_judged(&mut rng);
                        update(worker, &mut inputs.1, &mut judged, record, diff);
                    }
                    2 | 3 => {
                        let diff = [2, -1][rng.gen_range(0..2)];
                        let record = new_traits(&mut rng);
                        update(worker, &mut inputs.0, &mut traits, record, diff);
                    }
                    // a memory's traits replaced by others
                    4..7 if !present.is_empty() => {
                        let (id, old) = present[rng.gen_range(0..present.len())];
                        update(worker, &mut inputs.0, &mut traits, (id, old), -1);
                        let new = (id, random_traits(&mut rng));
                        update(worker, &mut inputs.0, &mut traits, new, 1);
                    }
                    4..10 => {
                        let (record, diff) = random_update(&traits, &mut rng, new_traits);
                        update(worker, &mut inputs.0, &mut traits, record, diff);
                    }
                    _ => {
                        let (record, diff) = random_update(&judged, &mut rng, random_judged);
                        update(worker, &mut inputs.1, &mut judged, record, diff);
                    }
                }
            }
            advance(worker, &probe, &mut inputs, round);
            if worker.index() == 0 {
                let (want, shared, both_ways) = from_scratch(&traits, &judged);
                if let Some(d) = difference("preferences", &sink, &want) {
                    mismatches.push(format!("seed {seed} round {round}: {d}"));
                }
                seen_in.0.fetch_add(shared, Ordering::Relaxed);
                seen_in.1.fetch_add(both_ways, Ordering::Relaxed);
            }
        }
    });
    (
        seen.0.load(Ordering::Relaxed),
        seen.1.load(Ordering::Relaxed),
    )
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    let (shared, both_ways) = (0..12)
        .map(|seed| run(1, seed))
        .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
    assert!(shared > 0, "no answer ever used two memories of one trait");
    assert!(both_ways > 0, "no message was ever judged both ways");
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..104 {
        run(2, seed);
    }
}

/// Updates of traits, updates of uses by `(t1, u1)`, and then its `(trait, up, down)` tallies.
type Step = (
    Vec<(TraitsRecord, isize)>,
    Vec<((MemoryId, &'static str, i8), isize)>,
    Vec<(RetrievalTrait, u64, u64)>,
);

/// Feeds each step's updates at its own time on one worker, and checks the output after it.
fn replay(steps: Vec<Step>) {
    let sink: Sink<Output> = Default::default();
    execute(1, move |worker, mismatches| {
        let probe = Handle::new();
        let mut inputs = dataflow(worker, &sink, &probe);
        let user: UserKey = ("t1".into(), "u1".into());
        for (round, (traits, judged, tallies)) in (1..).zip(&steps) {
            for (record, diff) in traits {
                inputs.0.update(*record, *diff);
            }
            for ((memory, message, reward), diff) in judged {
                let used = (user.clone(), message.to_string(), *reward);
                inputs.1.update((*memory, used), *diff);
            }
            advance(worker, &probe, &mut inputs, round);
            let want = (tallies.iter())
                .map(|&(kind, up, down)| ((user.clone(), kind), TraitTally { up, down }))
                .collect();
            if let Some(d) = difference("preferences", &sink, &want) {
                mismatches.push(format!("step {round}: {d}"));
            }
        }
    });
}

/// Two answers, one voted up using two list memories and a prose one, the other voted down
/// using the two list memories; then the down-voted answer's use of one list memory is
/// retracted, and the other list memory turns out to be prose.
#[test]
fn an_answer_counts_once_for_a_trait_of_several_of_its_memories() {
    use ContentType::{List, Prose};
    use RetrievalTrait::{Assistant, Content, Domain};
    let (list1, list2, prose1) = (1u128, u128::MAX / 2, u128::MAX);
    let list2_was = (list2, RetrievalTrait::of("assistant", TEXTS[3], true));
    let traits = vec![
        ((list1, RetrievalTrait::of("assistant", TEXTS[2], false)), 1),
        (list2_was, 1),
        ((prose1, RetrievalTrait::of("user", TEXTS[0], false)), 1),
    ];
    let judged = vec![
        ((list1, "m1", 1), 1),
        ((list2, "m1", 1), 1),
        ((prose1, "m1", 1), 1),
        ((list1, "m2", -1), 1),
        ((list2, "m2", -1), 1),
        // neutral: counts for nothing
        ((prose1, "m3", 0), 1),
    ];
    let list2_now = (list2, RetrievalTrait::of("assistant", TEXTS[0], true));
    // both answers used assistant memories and a domain one, only m1 a user's one
    let tallies = |list: (u64, u64), prose: (u64, u64), own: (u64, u64)| {
        vec![
            (Assistant(true), 1, 1),
            (Assistant(false), 1, 0),
            (Content(List), list.0, list.1),
            (Content(Prose), prose.0, prose.1),
            (Domain(false), own.0, own.1),
            (Domain(true), 1, 1),
        ]
    };
    let (unused, changed) = (((list1, "m2", -1), -1), [(list2_was, -1), (list2_now, 1)]);
    replay(vec![
        (traits, judged, tallies((1, 1), (1, 0), (1, 1))),
        // m2 still used list2, but no memory of the user's own any more
        (vec![], vec![unused], tallies((1, 1), (1, 0), (1, 0))),
        // m2 used no list any more, but prose now
        (changed.to_vec(), vec![], tallies((1, 0), (1, 1), (1, 0))),
    ]);
}

/// A record of negative multiplicity counts for nothing, on either side: a use of a memory whose
/// only traits record is negative, a use whose own record is negative, and an answer using a
/// memory of some traits and another whose record of those traits is negative.
#[test]
fn records_of_negative_multiplicity_count_for_nothing() {
    use RetrievalTrait::{Assistant, Content, Domain};
    let (a, b, c) = (1u128, u128::MAX / 2, u128::MAX);
    let traits = vec![
        ((a, RetrievalTrait::of("user", TEXTS[0], false)), -1),
        ((b, RetrievalTrait::of("assistant", TEXTS[2], true)), 1),
        ((c, RetrievalTrait::of("assistant", TEXTS[3], true)), -1),
    ];
    let judged = vec![
        ((a, "m1", 1), 1),
        ((b, "m2", -1), 1),
        ((c, "m2", -1), 1),
        ((b, "m3", 1), -1),
    ];
    let list = Content(ContentType::List);
    let tallies = vec![(Assistant(true), 0, 1), (list, 0, 1), (Domain(true), 0, 1)];
    replay(vec![(traits, judged, tallies)]);
}
