//! `next_edges` maintained incrementally equals `next_edges` computed from scratch, over random
//! streams of inserted, late (out-of-order) and retracted episodes, with one and two workers.

mod common;

use common::{collect_into, execute, nonzero, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::{episode_key, next_edges, Episode, SessionKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use timely::dataflow::operators::probe::Handle;

type Edge = (SessionKey, (u128, u128));

fn episode(i: u64, rng: &mut StdRng) -> (SessionKey, Episode) {
    let session = (
        "t".to_string(),
        format!("u{}", rng.gen_range(0..2)),
        format!("s{}", rng.gen_range(0..3)),
    );
    let e = Episode {
        // few distinct timestamps, so ties broken by turn and offset are exercised
        ts_micros: rng.gen_range(0..20) * 1_000_000,
        turn: if rng.gen_bool(0.5) {
            Some(rng.gen_range(0..4))
        } else {
            None
        },
        log_offset: i,
        id: format!("ep{i}"),
        event_id: format!("e{i}"),
        role: "user".into(),
        content: format!("message {i}"),
        importance_milli: None,
    };
    (session, e)
}

/// The definition, computed from scratch over the current multiset of episodes.
fn from_scratch(current: &BTreeMap<(SessionKey, Episode), isize>) -> HashMap<Edge, isize> {
    let mut by_session: BTreeMap<SessionKey, Vec<&Episode>> = BTreeMap::new();
    for ((s, e), m) in current {
        if *m > 0 {
            by_session.entry(s.clone()).or_default().push(e);
        }
    }
    let mut out = HashMap::new();
    for (s, mut eps) in by_session {
        eps.sort();
        for w in eps.windows(2) {
            out.insert(
                (s.clone(), (episode_key(&w[0].id), episode_key(&w[1].id))),
                1,
            );
        }
    }
    out
}

fn run(workers: usize, seed: u64, rounds: usize) {
    // shared by all workers: each worker's inspect adds the updates it saw
    let output: Sink<Edge> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, episodes) = scope.new_collection();
            next_edges(episodes.map(|(session, e): (SessionKey, Episode)| (session, e.node())))
                .inspect(collect_into(&output))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<(SessionKey, Episode), isize> = BTreeMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                let retract = !current.is_empty() && rng.gen_bool(0.3);
                let record = if retract {
                    let k = rng.gen_range(0..current.len());
                    current.keys().nth(k).unwrap().clone()
                } else {
                    next_id += 1;
                    episode(next_id, &mut rng)
                };
                let diff = if retract { -1 } else { 1 };
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                // every worker's inspect has run for times before the frontier
                let got = nonzero(&output);
                let want = from_scratch(&current);
                if got != want {
                    found.push(format!(
                        "seed {seed} round {round}: got {got:?}, want {want:?}"
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
    for seed in 100..110 {
        run(2, seed, 40);
    }
}
