//! `mentions`, `co_mentions` and `entity_stats` maintained incrementally equal their definitions
//! computed from scratch, over random streams of inserted, late (out-of-order), repeated and
//! retracted episodes, with one and two workers.
//!
//! Episode contents are generated from known names, so the entities each episode mentions are
//! known without calling the extractor: "we talked about Alice, New York and my dog."

use differential_dataflow::input::Input;
use engram_operators::entities::{
    co_mentions, entity_stats, mentions, CoMentionKey, EntityKey, EntityKind, EntityStats,
};
use engram_operators::{Episode, SessionKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
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

/// An episode of a random user and session whose content names some of [`NAMES`], maybe twice,
/// and maybe "my dog" (a noun phrase); returns it with the entities it mentions.
fn random_episode(i: u64, rng: &mut StdRng) -> (Record, Vec<(String, EntityKind)>) {
    let session = (
        "t".to_string(),
        format!("u{}", rng.gen_range(0..2)),
        format!("s{}", rng.gen_range(0..2)),
    );
    let mut written = Vec::new();
    let mut entities = BTreeMap::new();
    for _ in 0..rng.gen_range(0..4) {
        let (name, entity) = NAMES[rng.gen_range(0..NAMES.len())];
        written.push(name);
        entities.insert(entity.to_string(), EntityKind::Named);
    }
    let separator = if rng.gen_bool(0.5) { ", " } else { " and " };
    let mut content = format!("we talked about {}", written.join(separator));
    if rng.gen_bool(0.3) {
        content.push_str(" with my dog");
        entities.insert("dog".to_string(), EntityKind::NounPhrase);
    }
    content.push('.');
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
    ((session, episode), entities.into_iter().collect())
}

struct Expected {
    mentions: HashMap<Mention, isize>,
    co_mentions: HashMap<CoMention, isize>,
    stats: HashMap<Stats, isize>,
}

/// The definitions, computed from scratch over the episodes present (positive multiplicity).
fn from_scratch(
    current: &BTreeMap<Record, isize>,
    entities_of: &HashMap<String, Vec<(String, EntityKind)>>,
) -> Expected {
    // (tenant, user, entity) -> episodes mentioning it: id -> (ts, kind)
    let mut mentioning: BTreeMap<EntityKey, BTreeMap<String, (i64, EntityKind)>> = BTreeMap::new();
    // (tenant, user, episode id) -> entities it mentions
    let mut per_episode: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    for (((tenant, user, _session), episode), m) in current {
        if *m <= 0 {
            continue;
        }
        for (entity, kind) in &entities_of[&episode.id] {
            let key = (tenant.clone(), user.clone(), entity.clone());
            mentioning
                .entry(key)
                .or_default()
                .insert(episode.id.clone(), (episode.ts_micros, *kind));
            per_episode
                .entry((tenant.clone(), user.clone(), episode.id.clone()))
                .or_default()
                .insert(entity.clone());
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
    let mut weights: BTreeMap<CoMentionKey, u64> = BTreeMap::new();
    for ((tenant, user, _episode), entities) in &per_episode {
        for a in entities {
            for b in entities {
                if a < b {
                    *weights
                        .entry((tenant.clone(), user.clone(), a.clone(), b.clone()))
                        .or_insert(0) += 1;
                }
            }
        }
    }
    expected.co_mentions = weights.into_iter().map(|pair| (pair, 1)).collect();
    expected
}

type Sink<D> = Arc<Mutex<HashMap<D, isize>>>;

fn nonzero<D: Clone + Eq + std::hash::Hash>(updates: &Sink<D>) -> HashMap<D, isize> {
    updates
        .lock()
        .unwrap()
        .iter()
        .filter(|(_, m)| **m != 0)
        .map(|(k, m)| (k.clone(), *m))
        .collect()
}

fn run(workers: usize, seed: u64, rounds: usize) {
    let mismatches = Arc::new(Mutex::new(Vec::<String>::new()));
    let mismatches2 = mismatches.clone();
    // shared by all workers: each worker's inspect adds the updates it saw
    let mention_updates: Sink<Mention> = Default::default();
    let co_mention_updates: Sink<CoMention> = Default::default();
    let stats_updates: Sink<Stats> = Default::default();
    timely::execute(timely::Config::process(workers), move |worker| {
        let mention_sink = mention_updates.clone();
        let co_mention_sink = co_mention_updates.clone();
        let stats_sink = stats_updates.clone();
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, episodes) = scope.new_collection();
            let mentioned = mentions(episodes.clone());
            co_mentions(mentioned.clone())
                .inspect(move |(pair, _t, diff)| {
                    *co_mention_sink
                        .lock()
                        .unwrap()
                        .entry(pair.clone())
                        .or_insert(0) += diff;
                })
                .probe_with(&probe);
            mentioned
                .inspect(move |(mention, _t, diff)| {
                    *mention_sink
                        .lock()
                        .unwrap()
                        .entry(mention.clone())
                        .or_insert(0) += diff;
                })
                .probe_with(&probe);
            entity_stats(episodes)
                .inspect(move |(stats, _t, diff)| {
                    *stats_sink.lock().unwrap().entry(stats.clone()).or_insert(0) += diff;
                })
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<Record, isize> = BTreeMap::new();
        let mut entities_of: HashMap<String, Vec<(String, EntityKind)>> = HashMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                let (record, diff) = if !current.is_empty() && rng.gen_bool(0.3) {
                    let k = rng.gen_range(0..current.len());
                    (current.keys().nth(k).unwrap().clone(), -1)
                } else if !current.is_empty() && rng.gen_bool(0.1) {
                    // the same episode again: present twice, still counts once
                    let k = rng.gen_range(0..current.len());
                    (current.keys().nth(k).unwrap().clone(), 1)
                } else {
                    next_id += 1;
                    let (record, entities) = random_episode(next_id, &mut rng);
                    entities_of.insert(record.1.id.clone(), entities);
                    (record, 1)
                };
                *current.entry(record.clone()).or_insert(0) += diff;
                if current[&record] == 0 {
                    current.remove(&record);
                }
                if worker.index() == 0 {
                    input.update(record, diff);
                }
            }
            input.advance_to(round as u64 + 1);
            input.flush();
            worker.step_while(|| probe.less_than(input.time()));
            if worker.index() == 0 {
                // every worker's inspect has run for times before the frontier
                let want = from_scratch(&current, &entities_of);
                let mut errors = mismatches2.lock().unwrap();
                let got = nonzero(&mention_updates);
                if got != want.mentions {
                    errors.push(format!(
                        "seed {seed} round {round}: mentions {got:?}, want {:?}",
                        want.mentions
                    ));
                }
                let got = nonzero(&co_mention_updates);
                if got != want.co_mentions {
                    errors.push(format!(
                        "seed {seed} round {round}: co-mentions {got:?}, want {:?}",
                        want.co_mentions
                    ));
                }
                let got = nonzero(&stats_updates);
                if got != want.stats {
                    errors.push(format!(
                        "seed {seed} round {round}: stats {got:?}, want {:?}",
                        want.stats
                    ));
                }
            }
        }
    })
    .unwrap();
    let m = mismatches.lock().unwrap();
    assert!(m.is_empty(), "{}", m.join("\n"));
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
