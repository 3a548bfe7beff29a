//! The views the running memory dataflow publishes (NEXT edges, facts over time, entities,
//! co-mentions) equal a from-scratch computation over all input so far, after every chunk of a
//! random stream with out-of-order timestamps, with one and with two workers.

use chrono::{TimeZone, Utc};
use engram_dataflows::{run_memory_dataflow, InputRecord, InputSource, SharedViews};
use engram_operators::entities::{extract_entities, sentence_pairs, EntityKind};
use engram_operators::facts::{fact_versions, FactAssertion, FactVersion};
use engram_operators::Episode;
use engram_schemas::{Body, Event, Header, Interaction, Role};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Log = Arc<Mutex<Vec<Event>>>;

struct VecSource {
    log: Log,
    cursor: usize,
    worker: usize,
    peers: usize,
}

impl InputSource for VecSource {
    fn poll(&mut self) -> Option<(Vec<(u64, InputRecord)>, u64)> {
        let log = self.log.lock().unwrap();
        if log.len() <= self.cursor {
            return None;
        }
        let mut out = Vec::new();
        for (offset, e) in log.iter().enumerate().skip(self.cursor) {
            let owner = e.header.user.bytes().map(|b| b as usize).sum::<usize>() % self.peers;
            if owner == self.worker {
                out.extend(
                    InputRecord::from_event(e, offset as u64)
                        .into_iter()
                        .map(|r| (offset as u64, r)),
                );
            }
        }
        self.cursor = log.len();
        Some((out, log.len() as u64))
    }
}

const CITIES: [&str; 4] = ["Lisbon", "Porto", "Berlin", "Oslo"];
const PEOPLE: [&str; 3] = ["Jana Novak", "Rui", "Miso"];
const COLORS: [&str; 3] = ["green", "blue", "red"];

fn random_event(rng: &mut StdRng, i: usize) -> Event {
    let user = format!("u{}", rng.gen_range(0..2));
    let content = match rng.gen_range(0..5) {
        0 => format!("I moved to {}.", CITIES[rng.gen_range(0..4)]),
        1 => format!("My favorite color is {}.", COLORS[rng.gen_range(0..3)]),
        2 => format!(
            "Yesterday I met {} in {}.",
            PEOPLE[rng.gen_range(0..3)],
            CITIES[rng.gen_range(0..4)]
        ),
        3 => format!(
            "We talked about the new laptop and {}.",
            PEOPLE[rng.gen_range(0..3)]
        ),
        _ => "ok, thanks!".to_string(),
    };
    Event {
        header: Header {
            event_id: format!("e{i}"),
            tenant: "t".into(),
            user,
            // few distinct times, arriving out of order
            ts: Utc
                .timestamp_opt(1_700_000_000 + rng.gen_range(0..30) * 60, 0)
                .unwrap(),
            session: Some(format!("s{}", rng.gen_range(0..2))),
        },
        body: Body::Interaction(Interaction {
            role: if rng.gen_bool(0.8) {
                Role::User
            } else {
                Role::Assistant
            },
            content,
            turn: None,
            importance: None,
            skill_id: None,
            meta: None,
        }),
    }
}

#[derive(Debug, PartialEq)]
struct Expected {
    next: HashMap<String, String>,
    facts: BTreeMap<(String, String, String, String), BTreeSet<FactVersion>>,
    entities: BTreeMap<(String, String, String), (i64, i64, u64, EntityKind)>,
    co_mentions: BTreeMap<(String, String, String, String), u64>,
}

fn from_scratch(log: &[Event]) -> Expected {
    let mut sessions: BTreeMap<(String, String, String), Vec<Episode>> = BTreeMap::new();
    let mut assertions: BTreeMap<(String, String, String, String), Vec<FactAssertion>> =
        BTreeMap::new();
    for (offset, e) in log.iter().enumerate() {
        for r in InputRecord::from_event(e, offset as u64) {
            match r {
                InputRecord::Episode(k, ep) => sessions.entry(k).or_default().push(ep),
                InputRecord::Fact(k, a) => assertions.entry(k).or_default().push(a),
            }
        }
    }
    let mut next = HashMap::new();
    let mut entities: BTreeMap<(String, String, String), (i64, i64, u64, EntityKind)> =
        BTreeMap::new();
    let mut co_mentions = BTreeMap::new();
    for ((tenant, user, _), mut eps) in sessions {
        eps.sort();
        for w in eps.windows(2) {
            next.insert(w[0].id.clone(), w[1].id.clone());
        }
        for ep in &eps {
            let found = extract_entities(&ep.content);
            for (name, kind) in &found {
                let e = entities
                    .entry((tenant.clone(), user.clone(), name.clone()))
                    .or_insert((i64::MAX, i64::MIN, 0, EntityKind::NounPhrase));
                e.0 = e.0.min(ep.ts_micros);
                e.1 = e.1.max(ep.ts_micros);
                e.2 += 1;
                e.3 = e.3.min(*kind);
            }
            for (a, b) in sentence_pairs(&ep.content) {
                *co_mentions
                    .entry((tenant.clone(), user.clone(), a, b))
                    .or_insert(0) += 1;
            }
        }
    }
    let facts = assertions
        .into_iter()
        .map(|(k, a)| (k, fact_versions(&a).into_iter().collect()))
        .collect();
    Expected {
        next,
        facts,
        entities,
        co_mentions,
    }
}

fn published(views: &SharedViews) -> Expected {
    let v = views.read();
    let mut facts = BTreeMap::new();
    let mut entities = BTreeMap::new();
    let mut co_mentions = BTreeMap::new();
    for ((tenant, user), m) in &v.users {
        for ((subject, attribute), versions) in &m.facts {
            facts.insert(
                (
                    tenant.clone(),
                    user.clone(),
                    subject.clone(),
                    attribute.clone(),
                ),
                versions.clone(),
            );
        }
        for (name, s) in &m.entities {
            entities.insert(
                (tenant.clone(), user.clone(), name.clone()),
                (
                    s.first_seen_micros,
                    s.last_seen_micros,
                    s.mention_count,
                    s.kind,
                ),
            );
        }
        for ((a, b), w) in &m.co_mentions {
            co_mentions.insert((tenant.clone(), user.clone(), a.clone(), b.clone()), *w);
        }
    }
    Expected {
        next: v.next.clone(),
        facts,
        entities,
        co_mentions,
    }
}

fn run(workers: usize, seed: u64) {
    let log: Log = Default::default();
    let views = Arc::new(SharedViews::default());
    let (tx, rx) = std::sync::mpsc::channel();
    let source_log = log.clone();
    let handle = run_memory_dataflow(
        workers,
        move |worker, peers| {
            Box::new(VecSource {
                log: source_log.clone(),
                cursor: 0,
                worker,
                peers,
            }) as Box<dyn InputSource>
        },
        views.clone(),
        tx,
    )
    .unwrap();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut stored_episodes = 0;
    for chunk in 0..8 {
        {
            let mut l = log.lock().unwrap();
            for _ in 0..rng.gen_range(1..12) {
                let i = l.len();
                l.push(random_event(&mut rng, i));
            }
        }
        let end = log.lock().unwrap().len() as u64;
        let start = Instant::now();
        while handle.as_of() < end {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "dataflow stuck below {end}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let want = from_scratch(&log.lock().unwrap());
        let got = published(&views);
        assert_eq!(got, want, "seed {seed}, chunk {chunk}, {workers} worker(s)");
        while let Ok(batch) = rx.try_recv() {
            stored_episodes += batch.episodes.len();
        }
    }
    handle.stop();
    while let Ok(batch) = rx.try_recv() {
        stored_episodes += batch.episodes.len();
    }
    assert_eq!(
        stored_episodes,
        log.lock().unwrap().len(),
        "each episode is emitted for storage once"
    );
}

#[test]
fn published_views_equal_from_scratch_one_worker() {
    for seed in 0..12 {
        run(1, seed);
    }
}

#[test]
fn published_views_equal_from_scratch_two_workers() {
    for seed in 100..106 {
        run(2, seed);
    }
}
