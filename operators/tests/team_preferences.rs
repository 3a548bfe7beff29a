//! `user_teams`, `team_preferences` and `org_preferences` maintained incrementally equal the
//! same definitions computed from scratch, over random streams of team assignments (joining,
//! switching, leaving, out of order in time, retracted) and of users' cluster measures (promoted
//! or not, around a few shared topics or off on their own, retracted), in two tenants, with one
//! and two workers.

mod common;

use common::{collect_into, execute, nonzero, random_update, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::correction_clusters::{
    ClusterMeasure, Polarity, QuantisedEmbedding, UserKey,
};
use engram_operators::math::fusion::{centroid, cosine_similarity};
use engram_operators::team_preferences::{
    org_preferences, team_preferences, user_teams, OrgPreference, TeamAssignment, TeamKey,
    TeamPreference,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use timely::dataflow::operators::probe::Handle;

const DIMS: usize = 8;
const MIN_USERS: usize = 2;
const MIN_TEAMS: usize = 2;

type Measures = BTreeMap<(UserKey, ClusterMeasure), isize>;
type Assignments = BTreeMap<(UserKey, TeamAssignment), isize>;

fn gaussian(rng: &mut StdRng) -> f32 {
    let (u, v): (f32, f32) = (rng.gen_range(1e-6..1.0), rng.gen_range(0.0..1.0));
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f32::consts::PI * v).cos()
}

fn unit(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn random_user(rng: &mut StdRng) -> UserKey {
    let tenant = if rng.gen_bool(0.5) { "t1" } else { "t2" };
    (tenant.into(), format!("u{}", rng.gen_range(0..6)))
}

/// A pattern near one of the shared topics (cosine ≳ 0.95 to it), or now and then one of its
/// own; now and then not promoted.
fn random_measure(rng: &mut StdRng, topics: &[Vec<f32>], id: u64) -> (UserKey, ClusterMeasure) {
    let direction = if rng.gen_bool(0.85) {
        let topic = &topics[rng.gen_range(0..topics.len())];
        unit(topic.iter().map(|x| x + 0.08 * gaussian(rng)).collect())
    } else {
        unit((0..DIMS).map(|_| gaussian(rng)).collect())
    };
    (
        random_user(rng),
        ClusterMeasure {
            cluster_id: format!("k{id:03}"),
            size: 3,
            coherence_milli: 950,
            span_micros: 86_400_000_000,
            confidence_milli: rng.gen_range(700..1000),
            promoted: rng.gen_bool(0.85),
            centroid: QuantisedEmbedding::from_f32(&direction),
            latest_micros: 86_400_000_000,
            // now and then the opposite of a shared topic: never the same preference as it
            polarity: if rng.gen_bool(0.2) {
                Polarity::Away
            } else {
                Polarity::Towards
            },
            requests: Default::default(),
            contexts: Vec::new(),
        },
    )
}

fn random_assignment(rng: &mut StdRng, offset: u64) -> (UserKey, TeamAssignment) {
    let team = match rng.gen_range(0..8) {
        0 => None,
        t => Some(["red", "blue", "green"][t % 3].to_string()),
    };
    (
        random_user(rng),
        TeamAssignment {
            ts_micros: rng.gen_range(0..20),
            log_offset: offset,
            team,
        },
    )
}

fn teams_from_scratch(assignments: &Assignments) -> BTreeMap<UserKey, String> {
    let mut latest: BTreeMap<&UserKey, &TeamAssignment> = BTreeMap::new();
    for (user, a) in assignments.keys() {
        if latest.get(user).is_none_or(|seen| *seen < a) {
            latest.insert(user, a);
        }
    }
    latest
        .into_iter()
        .filter_map(|(u, a)| Some((u.clone(), a.team.clone()?)))
        .collect()
}

/// Connected components under cosine ≥ 0.85 of the dequantised centroids, by breadth-first
/// search; each a sorted list of indices.
fn components(centroids: &[Vec<f32>]) -> Vec<Vec<usize>> {
    let mut seen = vec![false; centroids.len()];
    let mut out = Vec::new();
    for start in 0..centroids.len() {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let (mut queue, mut component) = (vec![start], vec![]);
        while let Some(i) = queue.pop() {
            component.push(i);
            for j in 0..centroids.len() {
                if !seen[j] && cosine_similarity(&centroids[i], &centroids[j]) >= 0.85 {
                    seen[j] = true;
                    queue.push(j);
                }
            }
        }
        component.sort();
        out.push(component);
    }
    out
}

/// The mean direction ([`centroid`], unit vectors averaged), quantised.
fn mean_unit(vectors: &[Vec<f32>]) -> QuantisedEmbedding {
    QuantisedEmbedding::from_f32(&centroid(vectors).unwrap())
}

fn team_prefs_from_scratch(
    measures: &Measures,
    teams: &BTreeMap<UserKey, String>,
) -> BTreeSet<(TeamKey, TeamPreference)> {
    // per team and polarity: (user, cluster, centroid, confidence), sorted
    type Held = BTreeSet<(String, String, QuantisedEmbedding, u16)>;
    let mut held: BTreeMap<(TeamKey, Polarity), Held> = BTreeMap::new();
    for ((user, m), _) in measures.iter().filter(|(_, c)| **c > 0) {
        if let (true, Some(team)) = (m.promoted, teams.get(user)) {
            held.entry(((user.0.clone(), team.clone()), m.polarity))
                .or_default()
                .insert((
                    user.1.clone(),
                    m.cluster_id.clone(),
                    m.centroid.clone(),
                    m.confidence_milli,
                ));
        }
    }
    let mut out = BTreeSet::new();
    for ((team, polarity), patterns) in held {
        let patterns: Vec<_> = patterns.into_iter().collect();
        let centroids: Vec<Vec<f32>> = patterns.iter().map(|p| p.2.to_f32()).collect();
        for c in components(&centroids) {
            let users: BTreeSet<String> = c.iter().map(|&i| patterns[i].0.clone()).collect();
            if users.len() < MIN_USERS {
                continue;
            }
            let members: Vec<(String, String)> = c
                .iter()
                .map(|&i| (patterns[i].0.clone(), patterns[i].1.clone()))
                .collect();
            let confidence =
                c.iter().map(|&i| u64::from(patterns[i].3)).sum::<u64>() / c.len() as u64;
            out.insert((
                team.clone(),
                TeamPreference {
                    id: format!("{}/{}", members[0].0, members[0].1),
                    users: users.into_iter().collect(),
                    centroid: mean_unit(
                        &c.iter().map(|&i| centroids[i].clone()).collect::<Vec<_>>(),
                    ),
                    confidence_milli: confidence as u16,
                    members,
                    polarity,
                },
            ));
        }
    }
    out
}

fn org_prefs_from_scratch(
    team_prefs: &BTreeSet<(TeamKey, TeamPreference)>,
) -> BTreeSet<(String, OrgPreference)> {
    type Held<'a> = Vec<(&'a String, &'a TeamPreference)>;
    let mut by_tenant: BTreeMap<(&String, Polarity), Held> = BTreeMap::new();
    for ((tenant, team), p) in team_prefs {
        by_tenant
            .entry((tenant, p.polarity))
            .or_default()
            .push((team, p));
    }
    let mut out = BTreeSet::new();
    for ((tenant, polarity), mut prefs) in by_tenant {
        prefs.sort_by(|a, b| (a.0, &a.1.id, &a.1.centroid).cmp(&(b.0, &b.1.id, &b.1.centroid)));
        let centroids: Vec<Vec<f32>> = prefs.iter().map(|(_, p)| p.centroid.to_f32()).collect();
        for c in components(&centroids) {
            let teams: BTreeSet<String> = c.iter().map(|&i| prefs[i].0.clone()).collect();
            if teams.len() < MIN_TEAMS {
                continue;
            }
            let members: Vec<(String, String)> = c
                .iter()
                .map(|&i| (prefs[i].0.clone(), prefs[i].1.id.clone()))
                .collect();
            let confidence = c
                .iter()
                .map(|&i| u64::from(prefs[i].1.confidence_milli))
                .sum::<u64>()
                / c.len() as u64;
            out.insert((
                tenant.clone(),
                OrgPreference {
                    id: format!("{}/{}", members[0].0, members[0].1),
                    teams: teams.into_iter().collect(),
                    centroid: mean_unit(
                        &c.iter().map(|&i| centroids[i].clone()).collect::<Vec<_>>(),
                    ),
                    confidence_milli: confidence as u16,
                    members,
                    polarity,
                },
            ));
        }
    }
    out
}

fn check<D: Clone + Eq + std::hash::Hash + Ord + std::fmt::Debug>(
    name: &str,
    sink: &Sink<D>,
    want: &BTreeSet<D>,
) -> Option<String> {
    let got: HashMap<D, isize> = nonzero(sink);
    let got_set: BTreeSet<D> = got.keys().cloned().collect();
    (got.values().any(|m| *m != 1) || &got_set != want)
        .then(|| format!("{name}: got {got:?}, want {want:?}"))
}

fn run(workers: usize, seed: u64, rounds: u64) -> (usize, usize) {
    let teams_sink: Sink<(UserKey, String)> = Default::default();
    let team_sink: Sink<(TeamKey, TeamPreference)> = Default::default();
    let org_sink: Sink<(String, OrgPreference)> = Default::default();
    let found = std::sync::Arc::new(std::sync::Mutex::new((0, 0)));
    let found_in = found.clone();
    execute(workers, move |worker, mismatches| {
        let probe = Handle::new();
        let (mut measures_in, mut assignments_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (measures_in, measures) = scope.new_collection();
            let (assignments_in, assignments) = scope.new_collection();
            let teams = user_teams(assignments);
            let team_prefs = team_preferences(measures, teams.clone(), MIN_USERS);
            org_preferences(team_prefs.clone(), MIN_TEAMS)
                .inspect(collect_into(&org_sink))
                .probe_with(&probe);
            team_prefs
                .inspect(collect_into(&team_sink))
                .probe_with(&probe);
            teams.inspect(collect_into(&teams_sink)).probe_with(&probe);
            (measures_in, assignments_in)
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let topics: Vec<Vec<f32>> = (0..3)
            .map(|_| unit((0..DIMS).map(|_| gaussian(&mut rng)).collect()))
            .collect();
        let mut measures = Measures::new();
        let mut assignments = Assignments::new();
        let mut next = 0u64;
        for round in 1..=rounds {
            for _ in 0..rng.gen_range(1..8) {
                next += 1;
                if rng.gen_bool(0.6) {
                    let (record, diff) =
                        random_update(&measures, &mut rng, |r| random_measure(r, &topics, next));
                    update(worker, &mut measures_in, &mut measures, record, diff);
                } else {
                    let (record, diff) =
                        random_update(&assignments, &mut rng, |r| random_assignment(r, next));
                    update(worker, &mut assignments_in, &mut assignments, record, diff);
                }
            }
            assignments_in.advance_to(round);
            assignments_in.flush();
            settle(worker, &probe, &mut measures_in, round);
            if worker.index() == 0 {
                let teams = teams_from_scratch(&assignments);
                let team_prefs = team_prefs_from_scratch(&measures, &teams);
                let org_prefs = org_prefs_from_scratch(&team_prefs);
                let teams: BTreeSet<(UserKey, String)> = teams.into_iter().collect();
                let problems = [
                    check("user_teams", &teams_sink, &teams),
                    check("team_preferences", &team_sink, &team_prefs),
                    check("org_preferences", &org_sink, &org_prefs),
                ];
                for p in problems.into_iter().flatten() {
                    mismatches.push(format!("seed {seed} round {round}: {p}"));
                }
                let mut f = found_in.lock().unwrap();
                f.0 += team_prefs.len();
                f.1 += org_prefs.len();
            }
        }
    });
    let f = *found.lock().unwrap();
    f
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    let (mut teams, mut orgs) = (0, 0);
    for seed in 0..8 {
        let (t, o) = run(1, seed, 40);
        teams += t;
        orgs += o;
    }
    // the streams exercise both levels
    assert!(teams > 0 && orgs > 0, "team {teams}, org {orgs}");
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..104 {
        run(2, seed, 40);
    }
}
