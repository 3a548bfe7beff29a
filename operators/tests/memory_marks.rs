//! `memory_marks` maintained incrementally equals its definition computed from scratch, over
//! random streams of memory uses and feedback votes (re-votes, retractions, duplicates,
//! out-of-order times), with one and two workers.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::math::mark::{MemoryTrust, TrustParams, Validation};
use engram_operators::memory_marks::{memory_marks, MemoryKey, MemoryMark, MemoryUse};
use engram_operators::skill_feedback::{FeedbackVote, MessageKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use timely::dataflow::operators::probe::Handle;

type Uses = BTreeMap<(MessageKey, MemoryUse), isize>;
type Votes = BTreeMap<(MessageKey, FeedbackVote), isize>;

fn message(rng: &mut StdRng) -> MessageKey {
    let tenant = if rng.gen_bool(0.5) { "t1" } else { "t2" };
    (
        tenant.into(),
        format!("u{}", rng.gen_range(0..2)),
        format!("m{}", rng.gen_range(0..6)),
    )
}

fn random_use(rng: &mut StdRng) -> (MessageKey, MemoryUse) {
    let m = message(rng);
    // an answer's time is fixed by its message; a few episodes are shared by many answers
    let ts = m.2[1..].parse::<i64>().unwrap() * 1000 + if m.0 == "t1" { 0 } else { 7 };
    (
        m,
        MemoryUse {
            ts_micros: ts,
            episode_id: format!("e{}", rng.gen_range(0..4)),
        },
    )
}

fn random_vote(rng: &mut StdRng, id: u64) -> (MessageKey, FeedbackVote) {
    (
        message(rng),
        FeedbackVote {
            ts_micros: rng.gen_range(0..50),
            event_id: format!("v{id}"),
            bucket: 0,
            skill_id: "concise".into(),
            reward: rng.gen_range(-1..=1),
        },
    )
}

fn from_scratch(uses: &Uses, votes: &Votes) -> BTreeSet<(MemoryKey, MemoryMark)> {
    let mut latest: BTreeMap<&MessageKey, &FeedbackVote> = BTreeMap::new();
    for (m, v) in votes.keys() {
        if latest.get(m).is_none_or(|seen| *seen < v) {
            latest.insert(m, v);
        }
    }
    let mut by_memory: BTreeMap<MemoryKey, BTreeSet<(i64, String, i8)>> = BTreeMap::new();
    for ((t, u, m), used) in uses.keys() {
        let reward = latest
            .get(&(t.clone(), u.clone(), m.clone()))
            .map_or(0, |v| v.reward.signum());
        by_memory
            .entry((t.clone(), u.clone(), used.episode_id.clone()))
            .or_default()
            .insert((used.ts_micros, m.clone(), reward));
    }
    let params = TrustParams::default();
    by_memory
        .into_iter()
        .map(|(key, uses)| {
            let mut trust = MemoryTrust::new(&params);
            for (_, _, reward) in &uses {
                let v = match reward {
                    1 => Validation::Correct,
                    -1 => Validation::Incorrect,
                    _ => Validation::Unvalidated,
                };
                trust = trust.after_recall(v, &params);
            }
            let mark = MemoryMark {
                recalls: trust.recalls,
                correct: trust.correct,
                incorrect: trust.incorrect,
                last_recalled_micros: uses.iter().map(|u| u.0).max().unwrap(),
                trust_micro: (trust.trust * 1e6).round() as u32,
                persistence_micro: (trust.persistence(&params) * 1e6).round() as u32,
                retained: trust.is_retained(&params),
            };
            (key, mark)
        })
        .collect()
}

fn run(workers: usize, seed: u64) -> usize {
    let sink: Sink<(MemoryKey, MemoryMark)> = Default::default();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen_in = seen.clone();
    execute(workers, move |worker, mismatches| {
        let probe = Handle::new();
        let (mut uses_in, mut votes_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (uses_in, uses) = scope.new_collection();
            let (votes_in, votes) = scope.new_collection();
            memory_marks(uses, votes)
                .inspect(collect_into(&sink))
                .probe_with(&probe);
            (uses_in, votes_in)
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let (mut uses, mut votes) = (Uses::new(), Votes::new());
        for round in 1..=40u64 {
            for i in 0..rng.gen_range(1..6) {
                if rng.gen_bool(0.6) {
                    let (r, d) = random_update(&uses, &mut rng, random_use);
                    update(worker, &mut uses_in, &mut uses, r, d);
                } else {
                    let id = round * 10 + i;
                    let (r, d) = random_update(&votes, &mut rng, |r| random_vote(r, id));
                    update(worker, &mut votes_in, &mut votes, r, d);
                }
            }
            votes_in.advance_to(round);
            votes_in.flush();
            settle(worker, &probe, &mut uses_in, round);
            if worker.index() == 0 {
                let want = from_scratch(&uses, &votes);
                let got = nonzero(&sink);
                let got_set: BTreeSet<_> = got.keys().cloned().collect();
                if got.values().any(|m| *m != 1) || got_set != want {
                    mismatches.push(format!(
                        "seed {seed} round {round}: got {got:?}, want {want:?}"
                    ));
                }
                let validated = want
                    .iter()
                    .filter(|(_, m)| m.correct + m.incorrect > 0)
                    .count();
                seen_in.fetch_add(validated, std::sync::atomic::Ordering::Relaxed);
            }
        }
    });
    seen.load(std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    let validated: usize = (0..10).map(|seed| run(1, seed)).sum();
    assert!(validated > 0, "no memory was ever judged by a vote");
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..104 {
        run(2, seed);
    }
}
