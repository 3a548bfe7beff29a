//! `skill_feedback` maintained incrementally equals its definition computed from scratch, over
//! random streams of votes (several per message, repeated, retracted, out of time order) of
//! two tenants, with one and two workers.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::skill_feedback::{
    skill_feedback, FeedbackTally, FeedbackVote, MessageKey, PopulationKey, SkillKey,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use timely::dataflow::operators::probe::Handle;

type Record = (MessageKey, FeedbackVote);

fn random_vote(i: u64, rng: &mut StdRng) -> Record {
    let message = (
        format!("t{}", rng.gen_range(0..2)),
        format!("u{}", rng.gen_range(0..3)),
        // few messages, so votes on one message replace each other
        format!("m{}", rng.gen_range(0..4)),
    );
    let vote = FeedbackVote {
        // few distinct times: ties are broken by event id
        ts_micros: rng.gen_range(0..5),
        event_id: format!("e{i}"),
        bucket: rng.gen_range(0..2),
        skill_id: ["concise", "detailed"][rng.gen_range(0..2)].to_string(),
        reward: rng.gen_range(-1..=1),
    };
    (message, vote)
}

fn add(tally: &mut FeedbackTally, reward: i8) {
    match reward.signum() {
        1 => tally.successes += 1,
        -1 => tally.failures += 1,
        _ => tally.neutral += 1,
    }
}

/// The definition: per message its latest present vote; those counted per user key and per
/// population key.
fn from_scratch(
    current: &BTreeMap<Record, isize>,
) -> (
    HashMap<(SkillKey, FeedbackTally), isize>,
    HashMap<(PopulationKey, FeedbackTally), isize>,
) {
    let mut latest: BTreeMap<&MessageKey, &FeedbackVote> = BTreeMap::new();
    for ((message, vote), m) in current {
        if *m > 0 && latest.get(message).is_none_or(|seen| *seen < vote) {
            latest.insert(message, vote);
        }
    }
    let mut users: BTreeMap<SkillKey, FeedbackTally> = BTreeMap::new();
    let mut population: BTreeMap<PopulationKey, FeedbackTally> = BTreeMap::new();
    for ((tenant, user, _message), vote) in latest {
        let key = (
            tenant.clone(),
            user.clone(),
            vote.bucket,
            vote.skill_id.clone(),
        );
        add(users.entry(key).or_default(), vote.reward);
        let key = (tenant.clone(), vote.bucket, vote.skill_id.clone());
        add(population.entry(key).or_default(), vote.reward);
    }
    (
        users.into_iter().map(|record| (record, 1)).collect(),
        population.into_iter().map(|record| (record, 1)).collect(),
    )
}

fn run(workers: usize, seed: u64, rounds: usize) {
    let user_updates: Sink<(SkillKey, FeedbackTally)> = Default::default();
    let population_updates: Sink<(PopulationKey, FeedbackTally)> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, votes) = scope.new_collection();
            let (by_user, by_population) = skill_feedback(votes);
            by_user
                .inspect(collect_into(&user_updates))
                .probe_with(&probe);
            by_population
                .inspect(collect_into(&population_updates))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<Record, isize> = BTreeMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                let (record, diff) = random_update(&current, &mut rng, |rng| {
                    next_id += 1;
                    random_vote(next_id, rng)
                });
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                let (want_users, want_population) = from_scratch(&current);
                let got = nonzero(&user_updates);
                if got != want_users {
                    found.push(format!(
                        "seed {seed} round {round}: per user {got:?}, want {want_users:?}"
                    ));
                }
                let got = nonzero(&population_updates);
                if got != want_population {
                    found.push(format!(
                        "seed {seed} round {round}: population {got:?}, want {want_population:?}"
                    ));
                }
            }
        }
    });
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    for seed in 0..20 {
        run(1, seed, 40);
    }
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..106 {
        run(2, seed, 40);
    }
}
