//! `facts_over_time` (and `current_facts` on top of it) maintained incrementally equals the
//! definition computed from scratch, over random streams of inserted, late (out-of-order),
//! repeated and retracted assertions, with one and two workers. `fact_as_of` over the maintained
//! versions answers the value last asserted at or before the time asked.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::facts::{
    current_facts, fact_as_of, facts_over_time, FactAssertion, FactKey, FactVersion,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use timely::dataflow::operators::probe::Handle;

type Assertion = (FactKey, FactAssertion);
type Version = (FactKey, FactVersion);

/// Spellings of three values: case and spacing variants of one value are the same value.
const VALUES: &[&str] = &[
    "Berlin",
    "berlin",
    "Paris",
    "PARIS ",
    "new  york",
    "New York",
];
const ATTRIBUTES: &[&str] = &["lives_in", "works_at"];

fn random_assertion(i: u64, rng: &mut StdRng) -> Assertion {
    let key = (
        "t".to_string(),
        format!("u{}", rng.gen_range(0..2)),
        "user".to_string(),
        ATTRIBUTES[rng.gen_range(0..ATTRIBUTES.len())].to_string(),
    );
    let assertion = FactAssertion {
        // few distinct times, so ties broken by log offset and id are exercised
        valid_from_micros: rng.gen_range(0..10) * 1_000_000,
        // sometimes an offset already used, so the id tie-break is exercised too
        log_offset: if rng.gen_bool(0.2) {
            rng.gen_range(0..=i)
        } else {
            i
        },
        fact_id: format!("f{i}"),
        value: VALUES[rng.gen_range(0..VALUES.len())].to_string(),
        evidence: format!("e{i}"),
    };
    (key, assertion)
}

/// Equal ignoring case and whitespace layout.
fn same_value(a: &str, b: &str) -> bool {
    let words = |s: &str| {
        s.split_whitespace()
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
    };
    words(a) == words(b)
}

/// The assertions present (positive multiplicity) per key, in (valid_from, log_offset, fact_id)
/// order.
fn present_by_key(current: &BTreeMap<Assertion, isize>) -> BTreeMap<FactKey, Vec<&FactAssertion>> {
    let mut by_key: BTreeMap<FactKey, Vec<&FactAssertion>> = BTreeMap::new();
    for ((key, assertion), m) in current {
        if *m > 0 {
            by_key.entry(key.clone()).or_default().push(assertion);
        }
    }
    for assertions in by_key.values_mut() {
        assertions.sort_by(|a, b| {
            (a.valid_from_micros, a.log_offset, &a.fact_id).cmp(&(
                b.valid_from_micros,
                b.log_offset,
                &b.fact_id,
            ))
        });
    }
    by_key
}

/// The definition, computed from scratch over the current multiset of assertions: a version
/// starts at every assertion whose value differs from the previous assertion's, and lasts until
/// the next version starts.
fn from_scratch(current: &BTreeMap<Assertion, isize>) -> HashMap<Version, isize> {
    let mut out = HashMap::new();
    for (key, assertions) in present_by_key(current) {
        let starts: Vec<&FactAssertion> = assertions
            .iter()
            .enumerate()
            .filter(|(i, a)| *i == 0 || !same_value(&assertions[i - 1].value, &a.value))
            .map(|(_, a)| *a)
            .collect();
        for (j, start) in starts.iter().enumerate() {
            let next = starts.get(j + 1);
            let version = FactVersion {
                fact_id: start.fact_id.clone(),
                value: start.value.clone(),
                valid_from: start.valid_from_micros,
                valid_to: next.map(|n| n.valid_from_micros),
                superseded_by: next.map(|n| n.fact_id.clone()),
                evidence: start.evidence.clone(),
            };
            out.insert((key.clone(), version), 1);
        }
    }
    out
}

/// `fact_as_of` over the maintained versions of each key gives, at every time, a value equal to
/// the last assertion (in order) with `valid_from ≤ t`, and nothing before the first.
fn check_as_of(
    current: &BTreeMap<Assertion, isize>,
    maintained: &HashMap<Version, isize>,
) -> Result<(), String> {
    let mut versions_by_key: BTreeMap<&FactKey, Vec<FactVersion>> = BTreeMap::new();
    for (key, version) in maintained.keys() {
        versions_by_key
            .entry(key)
            .or_default()
            .push(version.clone());
    }
    for (key, assertions) in present_by_key(current) {
        let versions = versions_by_key.get(&key).map(Vec::as_slice).unwrap_or(&[]);
        for second in 0..11 {
            for t in [second * 1_000_000 - 1, second * 1_000_000] {
                let want = assertions.iter().rev().find(|a| a.valid_from_micros <= t);
                let got = fact_as_of(versions, t);
                let agrees = match (want, got) {
                    (None, None) => true,
                    (Some(w), Some(g)) => same_value(&w.value, &g.value),
                    _ => false,
                };
                if !agrees {
                    return Err(format!(
                        "{key:?} as of {t}: got {got:?}, want a value like {want:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

fn run(workers: usize, seed: u64, rounds: usize) {
    // shared by all workers: each worker's inspect adds the updates it saw
    let all_versions: Sink<Version> = Default::default();
    let current_versions: Sink<Version> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, assertions) = scope.new_collection();
            let versions = facts_over_time(assertions);
            current_facts(versions.clone())
                .inspect(collect_into(&current_versions))
                .probe_with(&probe);
            versions
                .inspect(collect_into(&all_versions))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let mut current: BTreeMap<Assertion, isize> = BTreeMap::new();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                // a retraction, the same assertion again, or a new assertion
                let (record, diff) = random_update(&current, &mut rng, |rng| {
                    next_id += 1;
                    random_assertion(next_id, rng)
                });
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                // every worker's inspect has run for times before the frontier
                let got = nonzero(&all_versions);
                let want = from_scratch(&current);
                if got != want {
                    found.push(format!(
                        "seed {seed} round {round}: got {got:?}, want {want:?}"
                    ));
                }
                let got_current = nonzero(&current_versions);
                let want_current: HashMap<Version, isize> = want
                    .into_iter()
                    .filter(|((_, v), _)| v.valid_to.is_none())
                    .collect();
                if got_current != want_current {
                    found.push(format!(
                        "seed {seed} round {round}: current {got_current:?}, want {want_current:?}"
                    ));
                }
                if let Err(e) = check_as_of(&current, &got) {
                    found.push(format!("seed {seed} round {round}: {e}"));
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
