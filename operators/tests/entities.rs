//! `mentions`, `co_mentions` and `entity_stats` maintained incrementally equal their definitions
//! computed from scratch, over random streams of inserted, late (out-of-order), repeated and
//! retracted episodes, with one and two workers.
//!
//! Episode contents are generated from known names, so the entities each sentence of an episode
//! mentions are known without calling the extractor: "we talked about Alice, New York and my
//! dog. we talked about Bob."

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::entities::{
    co_mentions, entity_stats, mentions, CoMentionKey, EntityKey, EntityKind, EntityStats,
};
use engram_operators::{Episode, SessionKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use timely::dataflow::operators::probe::Handle;

type Record = (SessionKey, Episode);
type Mention = (EntityKey, String);
type CoMention = (CoMentionKey, u64);
type Stats = (EntityKey, EntityStats);

/// Names as written mid-sentence, and the entity each is.
const NAMES: &[(&str, &str)] = &[
    ("Alice", "alice"),
    ("Bob", "bob"),
    ("Carol Danvers", "carol danvers"),
    ("New York", "new york"),
    ("Bank of America", "bank of america"),
    ("Dave's", "dave"),
];

/// What an episode mentions: each sentence's entities.
type Mentioned = Vec<BTreeMap<String, EntityKind>>;

/// An episode of a random user and session of one or two sentences, each naming some of
/// [`NAMES`], maybe twice, and maybe "my dog" (a noun phrase); returns it with the entities each
/// sentence mentions.
fn random_episode(i: u64, rng: &mut StdRng) -> (Record, Mentioned) {
    let session = (
        "t".to_string(),
        format!("u{}", rng.gen_range(0..2)),
        format!("s{}", rng.gen_range(0..2)),
    );
    let mut content = String::new();
    let mut mentioned = Vec::new();
    for _ in 0..rng.gen_range(1..3) {
        let mut written = Vec::new();
        let mut entities = BTreeMap::new();
        for _ in 0..rng.gen_range(0..4) {
            let (name, entity) = NAMES[rng.gen_range(0..NAMES.len())];
            written.push(name);
            entities.insert(entity.to_string(), EntityKind::Named);
        }
        let separator = if rng.gen_bool(0.5) { ", " } else { " and " };
        content.push_str(&format!("we talked about {}", written.join(separator)));
        if rng.gen_bool(0.3) {
            content.push_str(" with my dog");
            entities.insert("dog".to_string(), EntityKind::NounPhrase);
        }
        content.push_str(". ");
        mentioned.push(entities);
    }
    let episode = Episode {
        // few distinct timestamps, so first/last seen ties are exercised
        ts_micros: rng.gen_range(0..20) * 1_000_000,
        turn: None,
        log_offset: i,
        id: format!("ep{i}"),
        event_id: format!("e{i}"),
        role: "user".into(),
        content,
        importance_milli: None,
    };
    ((session, episode), mentioned)
}

struct Expected {
    mentions: HashMap<Mention, isize>,
    co_mentions: HashMap<CoMention, isize>,
    stats: HashMap<Stats, isize>,
}

/// The definitions, computed from scratch over the episodes present (positive multiplicity).
fn from_scratch(
    current: &BTreeMap<Record, isize>,
    mentioned_by: &HashMap<String, Mentioned>,
) -> Expected {
    // (tenant, user, entity) -> episodes mentioning it: id -> (ts, kind)
    let mut mentioning: BTreeMap<EntityKey, BTreeMap<String, (i64, EntityKind)>> = BTreeMap::new();
    // (tenant, user, a, b) -> episodes with a sentence mentioning both
    let mut together: BTreeMap<CoMentionKey, BTreeSet<String>> = BTreeMap::new();
    for (((tenant, user, _session), episode), m) in current {
        if *m <= 0 {
            continue;
        }
        for sentence in &mentioned_by[&episode.id] {
            for (entity, kind) in sentence {
                let key = (tenant.clone(), user.clone(), entity.clone());
                let (_, seen_kind) = mentioning
                    .entry(key)
                    .or_default()
                    .entry(episode.id.clone())
                    .or_insert((episode.ts_micros, *kind));
                *seen_kind = (*seen_kind).min(*kind);
                for b in sentence.keys().filter(|b| *b > entity) {
                    together
                        .entry((tenant.clone(), user.clone(), entity.clone(), b.clone()))
                        .or_default()
                        .insert(episode.id.clone());
                }
            }
        }
    }
    let mut expected = Expected {
        mentions: HashMap::new(),
        co_mentions: HashMap::new(),
        stats: HashMap::new(),
    };
    for (key, episodes) in &mentioning {
        for id in episodes.keys() {
            expected.mentions.insert((key.clone(), id.clone()), 1);
        }
        let times: Vec<i64> = episodes.values().map(|(ts, _)| *ts).collect();
        let any_named = episodes
            .values()
            .any(|(_, kind)| *kind == EntityKind::Named);
        let stats = EntityStats {
            first_seen_micros: *times.iter().min().unwrap(),
            last_seen_micros: *times.iter().max().unwrap(),
            mention_count: episodes.len() as u64,
            kind: if any_named {
                EntityKind::Named
            } else {
                EntityKind::NounPhrase
            },
        };
        expected.stats.insert((key.clone(), stats), 1);
    }
    expected.co_mentions = together
        .into_iter()
        .map(|(pair, episodes)| ((pair, episodes.len() as u64), 1))
        .collect();
    expected
}

fn run(workers: usize, seed: u64, rounds: usize) {
    // shared by all workers: each worker's inspect adds the updates it saw
    let mention_updates: Sink<Mention> = Default::default();
    let co_mention_updates: Sink<CoMention> = Default::default();
    let stats_updates: Sink<Stats> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, episodes) = scope.new_collection();
            co_mentions(episodes.clone())
                .inspect(collect_into(&co_mention_updates))
                .probe_with(&probe);
            mentions(episodes.clone())
                .inspect(collect_into(&mention_updates))
                .probe_with(&probe);
            entity_stats(episodes)
                .inspect(collect_into(&stats_updates))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<Record, isize> = BTreeMap::new();
        let mut mentioned_by: HashMap<String, Mentioned> = HashMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                // a retraction, the same episode again, or a new episode
                let (record, diff) = random_update(&current, &mut rng, |rng| {
                    next_id += 1;
                    let (record, mentioned) = random_episode(next_id, rng);
                    mentioned_by.insert(record.1.id.clone(), mentioned);
                    record
                });
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                // every worker's inspect has run for times before the frontier
                let want = from_scratch(&current, &mentioned_by);
                let got = nonzero(&mention_updates);
                if got != want.mentions {
                    found.push(format!(
                        "seed {seed} round {round}: mentions {got:?}, want {:?}",
                        want.mentions
                    ));
                }
                let got = nonzero(&co_mention_updates);
                if got != want.co_mentions {
                    found.push(format!(
                        "seed {seed} round {round}: co-mentions {got:?}, want {:?}",
                        want.co_mentions
                    ));
                }
                let got = nonzero(&stats_updates);
                if got != want.stats {
                    found.push(format!(
                        "seed {seed} round {round}: stats {got:?}, want {:?}",
                        want.stats
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
    // fewer seeds than with one worker: two workers spin on each other's progress every round
    for seed in 100..106 {
        run(2, seed, 40);
    }
}
