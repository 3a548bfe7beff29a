//! `style_preferences`, `skill_confidences`, `discounted_skill_feedback`, `correction_notes`,
//! `user_summaries` and `user_relations` maintained incrementally equal their definitions computed from scratch, over random streams
//! (repeats, retractions, votes out of time order, redelivered corrections), with one and two
//! workers.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::correction_clusters::UserKey;
use engram_operators::correction_notes::{correction_notes, CorrectionNote};
use engram_operators::relations::{user_relations, RelationNode};
use engram_operators::skill_confidence::{
    discounted_skill_feedback, fold_discounted, fold_skill_confidence, skill_confidences,
    DiscountedTally, SkillConfidence, UserSkillKey, MICRO,
};
use engram_operators::skill_feedback::{FeedbackVote, MessageKey, SkillKey};
use engram_operators::style_preferences::{fold_style, style_preferences, UserStyle};
use engram_operators::summaries::{user_summaries, SummaryNode};
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

/// Votes hours apart, so that discounting with a half-life of hours matters.
fn random_vote_hours(i: u64, rng: &mut StdRng) -> Vote {
    let (message, mut vote) = random_vote(i, rng);
    vote.ts_micros = rng.gen_range(0..6) * 3_600_000_000 + rng.gen_range(0..2);
    (message, vote)
}

/// Per message its latest present vote.
fn latest_votes(current: &BTreeMap<Vote, isize>) -> BTreeMap<&MessageKey, &FeedbackVote> {
    let mut latest: BTreeMap<&MessageKey, &FeedbackVote> = BTreeMap::new();
    for ((message, vote), m) in current {
        if *m > 0 && latest.get(message).is_none_or(|seen| *seen < vote) {
            latest.insert(message, vote);
        }
    }
    latest
}

/// The definition: per (user, skill) the latest votes folded in vote order.
fn confidences_from_scratch(
    current: &BTreeMap<Vote, isize>,
) -> HashMap<(UserSkillKey, SkillConfidence), isize> {
    let mut by_key: BTreeMap<UserSkillKey, Vec<&FeedbackVote>> = BTreeMap::new();
    for ((tenant, user, _), vote) in latest_votes(current) {
        let key = (tenant.clone(), user.clone(), vote.skill_id.clone());
        by_key.entry(key).or_default().push(vote);
    }
    by_key
        .into_iter()
        .map(|(key, mut votes)| {
            votes.sort();
            let c = fold_skill_confidence(votes.iter().copied());
            let confidence = SkillConfidence {
                confidence_micro: (c * MICRO).round() as u32,
                uses: votes.len() as u64,
            };
            ((key, confidence), 1)
        })
        .collect()
}

const HALF_LIFE_SECS: u64 = 7_200;

fn discounted_two_hours(
    votes: differential_dataflow::VecCollection<'_, u64, Vote>,
) -> differential_dataflow::VecCollection<'_, u64, (SkillKey, DiscountedTally)> {
    discounted_skill_feedback(votes, HALF_LIFE_SECS)
}

/// The definition: per (user, bucket, skill) the latest votes discounted in vote order.
fn discounted_from_scratch(
    current: &BTreeMap<Vote, isize>,
) -> HashMap<(SkillKey, DiscountedTally), isize> {
    let mut by_key: BTreeMap<SkillKey, Vec<&FeedbackVote>> = BTreeMap::new();
    for ((tenant, user, _), vote) in latest_votes(current) {
        let key = (
            tenant.clone(),
            user.clone(),
            vote.bucket,
            vote.skill_id.clone(),
        );
        by_key.entry(key).or_default().push(vote);
    }
    by_key
        .into_iter()
        .map(|(key, mut votes)| {
            votes.sort();
            let tally = fold_discounted(votes.iter().copied(), HALF_LIFE_SECS).unwrap();
            ((key, tally), 1)
        })
        .collect()
}

/// The definition: per message its latest present vote; per user those folded in vote order.
fn styles_from_scratch(current: &BTreeMap<Vote, isize>) -> HashMap<(UserKey, UserStyle), isize> {
    let latest = latest_votes(current);
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
        context: ["", "email"][rng.gen_range(0..2)].to_string(),
        held: rng.gen_range(0..5) == 0,
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

/// Runs `operator` over random streams of `random` records (40 rounds of 1 to 5 updates; 15
/// seeds on one worker, 4 on two), comparing its output after every round with `definition`
/// of the input.
fn run_seeds<In, Out>(
    operator: fn(
        differential_dataflow::VecCollection<'_, u64, In>,
    ) -> differential_dataflow::VecCollection<'_, u64, Out>,
    random: fn(u64, &mut StdRng) -> In,
    definition: fn(&BTreeMap<In, isize>) -> HashMap<Out, isize>,
) where
    In: timely::ExchangeData + differential_dataflow::Hashable + Ord + Clone + std::fmt::Debug,
    Out: timely::ExchangeData + std::hash::Hash + Eq + Clone + std::fmt::Debug,
{
    for (workers, seeds) in [(1, 0..15), (2, 100..104)] {
        for seed in seeds {
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
                for round in 0..40 {
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
                            found
                                .push(format!("seed {seed} round {round}: {got:?}, want {want:?}"));
                        }
                    }
                }
            });
        }
    }
}

#[test]
fn style_preferences_incremental_equals_from_scratch() {
    run_seeds(style_preferences, random_vote, styles_from_scratch);
}

#[test]
fn correction_notes_incremental_equals_from_scratch() {
    run_seeds(correction_notes, random_note, notes_from_scratch);
}

type UserSummary = (UserKey, SummaryNode);

fn random_summary(i: u64, rng: &mut StdRng) -> UserSummary {
    let user = (
        format!("t{}", rng.gen_range(0..2)),
        format!("u{}", rng.gen_range(0..2)),
    );
    // few ids: a redelivered summary with other fields shares its id
    let id = rng.gen_range(0..5);
    let summary = SummaryNode {
        id: format!("node-{id}"),
        event_id: format!("s{id}"),
        ts_micros: rng.gen_range(0..4),
        log_offset: i,
        content: format!("summary {i}"),
        covers: (0..rng.gen_range(0..3)).map(|n| format!("ep{n}")).collect(),
    };
    (user, summary)
}

fn summaries_from_scratch(current: &BTreeMap<UserSummary, isize>) -> HashMap<UserSummary, isize> {
    let mut least: BTreeMap<(&UserKey, &String), &SummaryNode> = BTreeMap::new();
    for ((user, summary), m) in current {
        let key = (user, &summary.id);
        if *m > 0 && least.get(&key).is_none_or(|seen| *seen > summary) {
            least.insert(key, summary);
        }
    }
    least
        .into_iter()
        .map(|((user, _), summary)| ((user.clone(), summary.clone()), 1))
        .collect()
}

#[test]
fn user_summaries_incremental_equals_from_scratch() {
    run_seeds(user_summaries, random_summary, summaries_from_scratch);
}

type UserRelation = (UserKey, RelationNode);

fn random_relation(i: u64, rng: &mut StdRng) -> UserRelation {
    let user = (
        format!("t{}", rng.gen_range(0..2)),
        format!("u{}", rng.gen_range(0..2)),
    );
    // few ids: a redelivered relation with other fields shares its id
    let id = rng.gen_range(0..5);
    let relation = RelationNode {
        id: format!("node-{id}"),
        event_id: format!("r{id}"),
        ts_micros: rng.gen_range(0..4),
        log_offset: i,
        subject: ["Caroline", "Mel"][rng.gen_range(0..2)].into(),
        relation: ["attended", "sister of"][rng.gen_range(0..2)].into(),
        object: format!("thing {}", rng.gen_range(0..3)),
        time: rng.gen_bool(0.5).then(|| "2023-05-07".to_string()),
        evidence: (0..rng.gen_range(0..3)).map(|n| format!("ep{n}")).collect(),
        confidence_milli: rng.gen_bool(0.5).then(|| rng.gen_range(0..=1000)),
    };
    (user, relation)
}

/// Per user and relation id, the least relation of positive multiplicity, once.
fn relations_from_scratch(current: &BTreeMap<UserRelation, isize>) -> HashMap<UserRelation, isize> {
    let mut least: BTreeMap<(&UserKey, &String), &RelationNode> = BTreeMap::new();
    for ((user, relation), m) in current {
        let key = (user, &relation.id);
        if *m > 0 && least.get(&key).is_none_or(|seen| *seen > relation) {
            least.insert(key, relation);
        }
    }
    least
        .into_iter()
        .map(|((user, _), relation)| ((user.clone(), relation.clone()), 1))
        .collect()
}

#[test]
fn user_relations_incremental_equals_from_scratch() {
    run_seeds(user_relations, random_relation, relations_from_scratch);
}

#[test]
fn skill_confidences_incremental_equals_from_scratch() {
    run_seeds(skill_confidences, random_vote, confidences_from_scratch);
}

#[test]
fn discounted_skill_feedback_incremental_equals_from_scratch() {
    run_seeds(
        discounted_two_hours,
        random_vote_hours,
        discounted_from_scratch,
    );
}
