//! `style_preferences` and `correction_notes` maintained incrementally equal their definitions
//! computed from scratch, over random streams (repeats, retractions, votes out of time order,
//! redelivered corrections), with one and two workers.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::correction_clusters::UserKey;
use engram_operators::correction_notes::{correction_notes, CorrectionNote};
use engram_operators::skill_feedback::{FeedbackVote, MessageKey};
use engram_operators::style_preferences::{fold_style, style_preferences, UserStyle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use timely::dataflow::operators::probe::Handle;

type Vote = (MessageKey, FeedbackVote);

fn random_vote(i: u64, rng: &mut StdRng) -> Vote {
    let message = (
        format!("t{}", rng.gen_range(0..2)),
        format!("u{}", rng.gen_range(0..2)),
        format!("m{}", rng.gen_range(0..5)),
    );
    let vote = FeedbackVote {
        ts_micros: rng.gen_range(0..6),
        event_id: format!("e{i}"),
        bucket: rng.gen_range(0..2),
        skill_id: ["concise", "detailed", "casual", "not-a-base-skill"][rng.gen_range(0..4)]
            .to_string(),
        reward: rng.gen_range(-1..=1),
    };
    (message, vote)
}

/// The definition: per message its latest present vote; per user those folded in vote order.
fn styles_from_scratch(current: &BTreeMap<Vote, isize>) -> HashMap<(UserKey, UserStyle), isize> {
    let mut latest: BTreeMap<&MessageKey, &FeedbackVote> = BTreeMap::new();
    for ((message, vote), m) in current {
        if *m > 0 && latest.get(message).is_none_or(|seen| *seen < vote) {
            latest.insert(message, vote);
        }
    }
    let mut by_user: BTreeMap<UserKey, Vec<&FeedbackVote>> = BTreeMap::new();
    for ((tenant, user, _), vote) in latest {
        by_user
            .entry((tenant.clone(), user.clone()))
            .or_default()
            .push(vote);
    }
    by_user
        .into_iter()
        .map(|(user, mut votes)| {
            votes.sort();
            let style = fold_style(votes.iter().copied());
            ((user, UserStyle::from_style(&style, votes.len() as u64)), 1)
        })
        .collect()
}

type Note = (UserKey, CorrectionNote);

fn random_note(i: u64, rng: &mut StdRng) -> Note {
    let user = (
        format!("t{}", rng.gen_range(0..2)),
        format!("u{}", rng.gen_range(0..2)),
    );
    let note = CorrectionNote {
        // few ids: a redelivered correction with other fields shares its id
        correction_id: format!("c{}", rng.gen_range(0..6)),
        ts_micros: rng.gen_range(0..4),
        session: format!("s{}", rng.gen_range(0..2)),
        correction_type: "STYLE".into(),
        original: format!("original {i}"),
        corrected: rng.gen_bool(0.5).then(|| format!("corrected {i}")),
        expected_behavior: rng.gen_bool(0.5).then(|| "be brief".to_string()),
        confidence_milli: rng.gen_range(500..1000),
    };
    (user, note)
}

/// The definition: per (user, correction id) the least present note.
fn notes_from_scratch(current: &BTreeMap<Note, isize>) -> HashMap<Note, isize> {
    let mut least: BTreeMap<(&UserKey, &String), &CorrectionNote> = BTreeMap::new();
    for ((user, note), m) in current {
        let key = (user, &note.correction_id);
        if *m > 0 && least.get(&key).is_none_or(|seen| *seen > note) {
            least.insert(key, note);
        }
    }
    least
        .into_iter()
        .map(|((user, _), note)| ((user.clone(), note.clone()), 1))
        .collect()
}

/// Runs `operator` over a random stream of `random` records (1 to 5 updates per round) on
/// `workers` workers, comparing its output after every round with `definition` of the input.
fn run<In, Out>(
    workers: usize,
    seed: u64,
    rounds: usize,
    operator: fn(
        differential_dataflow::VecCollection<'_, u64, In>,
    ) -> differential_dataflow::VecCollection<'_, u64, Out>,
    random: fn(u64, &mut StdRng) -> In,
    definition: fn(&BTreeMap<In, isize>) -> HashMap<Out, isize>,
) where
    In: timely::ExchangeData + differential_dataflow::Hashable + Ord + Clone + std::fmt::Debug,
    Out: timely::ExchangeData + std::hash::Hash + Eq + Clone + std::fmt::Debug,
{
    let sink: Sink<Out> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, records) = scope.new_collection();
            operator(records)
                .inspect(collect_into(&sink))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current = BTreeMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                let (record, diff) = random_update(&current, &mut rng, |rng| {
                    next_id += 1;
                    random(next_id, rng)
                });
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                let (got, want) = (nonzero(&sink), definition(&current));
                if got != want {
                    found.push(format!("seed {seed} round {round}: {got:?}, want {want:?}"));
                }
            }
        }
    });
}

#[test]
fn style_preferences_incremental_equals_from_scratch() {
    for (workers, seeds) in [(1, 0..15), (2, 100..104)] {
        for seed in seeds {
            run(
                workers,
                seed,
                40,
                style_preferences,
                random_vote,
                styles_from_scratch,
            );
        }
    }
}

#[test]
fn correction_notes_incremental_equals_from_scratch() {
    for (workers, seeds) in [(1, 0..15), (2, 100..104)] {
        for seed in seeds {
            run(
                workers,
                seed,
                40,
                correction_notes,
                random_note,
                notes_from_scratch,
            );
        }
    }
}
