//! Each walk against a plain search over the same random graphs: Bellman–Ford relaxations of
//! every edge (hop distances, and costs over paths of bounded length), and the beam's circles
//! recomputed from its own output.

use super::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

/// Vertices 0..n of kind `v % 3`; directed edges of kind 0..3, listed per vertex in a random
/// order (so breadth limits cut at random).
struct RandomGraph {
    out: Vec<Vec<(u8, u32)>>,
}

impl RandomGraph {
    fn new(rng: &mut StdRng, n: u32, edges: usize) -> Self {
        let mut out = vec![Vec::new(); n as usize];
        for _ in 0..edges {
            let (a, b, k) = (
                rng.gen_range(0..n),
                rng.gen_range(0..n),
                rng.gen_range(0..3u8),
            );
            if a != b && !out[a as usize].contains(&(k, b)) {
                out[a as usize].push((k, b));
            }
        }
        RandomGraph { out }
    }

    /// Every edge `(from, kind, to)` the limits' kinds allow, between allowed vertices.
    fn allowed(&self, limits: &Limits) -> Vec<(u32, u8, u32)> {
        let ok = |v: u32| limits.vertex_kinds.is_empty() || limits.vertex_kinds.contains(&(v % 3));
        let mut all = Vec::new();
        for (a, list) in self.out.iter().enumerate() {
            for &(k, b) in list {
                let edge_ok = limits.edge_kinds.is_empty() || limits.edge_kinds.contains(&k);
                if edge_ok && ok(a as u32) && ok(b) {
                    all.push((a as u32, k, b));
                }
            }
        }
        all
    }
}

impl WalkGraph for RandomGraph {
    type Vertex = u32;
    type VertexKind = u32;
    type EdgeKind = u8;
    fn kind(&self, v: &u32) -> u32 {
        v % 3
    }
    fn edges(&self, v: &u32) -> Vec<(u8, u32)> {
        self.out[*v as usize].clone()
    }
}

type Limits = WalkLimits<u32, u8>;

fn random_limits(rng: &mut StdRng, unbounded: bool) -> Limits {
    let kinds = |rng: &mut StdRng, of: u32| -> Vec<u32> {
        if rng.gen_bool(0.5) {
            Vec::new()
        } else {
            (0..of).filter(|_| rng.gen_bool(0.7)).collect()
        }
    };
    Limits {
        max_depth: rng.gen_range(0..5),
        max_breadth: if unbounded {
            usize::MAX
        } else {
            rng.gen_range(1..4)
        },
        max_vertices: if unbounded {
            usize::MAX
        } else {
            rng.gen_range(1..30)
        },
        vertex_kinds: kinds(rng, 3),
        edge_kinds: kinds(rng, 3).into_iter().map(|k| k as u8).collect(),
    }
}

fn seeds(rng: &mut StdRng, n: u32) -> Vec<u32> {
    (0..rng.gen_range(1..4))
        .map(|_| rng.gen_range(0..n))
        .collect()
}

fn allowed_seeds(seeds: &[u32], limits: &Limits) -> BTreeSet<u32> {
    seeds
        .iter()
        .copied()
        .filter(|s| limits.vertex_kinds.is_empty() || limits.vertex_kinds.contains(&(s % 3)))
        .collect()
}

/// Plain search: hop distances ≤ `max_depth`, as the costs of paths whose every edge costs 1.
fn hop_distances(graph: &RandomGraph, seeds: &[u32], limits: &Limits) -> BTreeMap<u32, usize> {
    bounded_costs(graph, seeds, limits, |_, _| 1.0)
        .into_iter()
        .map(|(v, c)| (v, c as usize))
        .collect()
}

/// Plain search: the cheapest cost of each vertex over paths of ≤ `max_depth` allowed edges,
/// relaxing every allowed edge `max_depth` times (Bellman–Ford).
fn bounded_costs(
    graph: &RandomGraph,
    seeds: &[u32],
    limits: &Limits,
    cost: impl Fn(u8, &u32) -> f64,
) -> BTreeMap<u32, f64> {
    let mut best: BTreeMap<u32, f64> = allowed_seeds(seeds, limits)
        .into_iter()
        .map(|s| (s, 0.0))
        .collect();
    let edges = graph.allowed(limits);
    for _ in 0..limits.max_depth {
        let before = best.clone();
        for &(a, k, b) in &edges {
            if let Some(&c) = before.get(&a) {
                let e = best.entry(b).or_insert(f64::INFINITY);
                *e = e.min(c + cost(k, &b));
            }
        }
    }
    best
}

/// A path starts at an allowed seed and follows edges of the graph the limits allow.
fn assert_path_valid(graph: &RandomGraph, r: &Reached<u32, u8>, seeds: &[u32], limits: &Limits) {
    let allowed = graph.allowed(limits);
    assert_eq!(r.path[0].0, None, "the seed comes without an edge");
    assert!(allowed_seeds(seeds, limits).contains(&r.path[0].1));
    assert_eq!(r.path.last().unwrap().1, r.vertex);
    for w in r.path.windows(2) {
        let (a, (k, b)) = (w[0].1, (w[1].0.expect("a step has its edge"), w[1].1));
        assert!(
            allowed.contains(&(a, k, b)),
            "{a} -{k}-> {b} is an allowed edge"
        );
    }
    assert!(r.depth() <= limits.max_depth);
}

const CASES: u64 = 300;

/// A random case: its generator (for what the test draws next), its graph and vertex count.
fn random_case(seed: u64) -> (StdRng, RandomGraph, u32) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = rng.gen_range(1..40);
    let edges = rng.gen_range(0..120);
    let graph = RandomGraph::new(&mut rng, n, edges);
    (rng, graph, n)
}

#[test]
fn water_circles_unbounded_reach_the_plain_searchs_hop_distances() {
    for seed in 0..CASES {
        let (mut rng, graph, n) = random_case(seed);
        let limits = random_limits(&mut rng, true);
        let seeds = seeds(&mut rng, n);
        let got = water_circles(&graph, &seeds, &limits);
        let want = hop_distances(&graph, &seeds, &limits);
        let reached: BTreeMap<u32, usize> = got.iter().map(|r| (r.vertex, r.depth())).collect();
        assert_eq!(reached.len(), got.len(), "seed {seed}: each vertex once");
        assert_eq!(reached, want, "seed {seed}");
        for r in &got {
            assert_path_valid(&graph, r, &seeds, &limits);
            assert_eq!(r.score, r.depth() as f64);
        }
        // circle by circle
        assert!(got.windows(2).all(|w| w[0].depth() <= w[1].depth()));
    }
}

#[test]
fn water_circles_keep_their_breadth_and_vertex_limits() {
    for seed in 0..CASES {
        let (mut rng, graph, n) = random_case(seed);
        let limits = random_limits(&mut rng, false);
        let seeds = seeds(&mut rng, n);
        let got = water_circles(&graph, &seeds, &limits);
        let unbounded = hop_distances(&graph, &seeds, &limits);
        assert!(got.len() <= limits.max_vertices, "seed {seed}");
        let mut children: BTreeMap<u32, usize> = BTreeMap::new();
        for r in &got {
            assert_path_valid(&graph, r, &seeds, &limits);
            // never closer than the plain search says
            assert!(r.depth() >= unbounded[&r.vertex], "seed {seed}");
            if r.depth() > 0 {
                *children.entry(r.path[r.depth() - 1].1).or_default() += 1;
            }
        }
        assert!(
            children.values().all(|&c| c <= limits.max_breadth),
            "seed {seed}"
        );
        // the vertex limit cuts the walk without it short, and nothing else
        let whole = water_circles(
            &graph,
            &seeds,
            &Limits {
                max_vertices: usize::MAX,
                ..limits.clone()
            },
        );
        assert_eq!(got[..], whole[..got.len()], "seed {seed}: a prefix");
        assert!(got.len() == whole.len() || got.len() == limits.max_vertices);
    }
}

fn score_of(v: &u32) -> f64 {
    f64::from((v * 37) % 11)
}

#[test]
fn a_beam_wider_than_the_graph_reaches_what_water_circles_do() {
    for seed in 0..CASES {
        let (mut rng, graph, n) = random_case(seed);
        let unbounded = rng.gen_bool(0.5);
        let limits = random_limits(&mut rng, unbounded);
        let limits = Limits {
            max_vertices: usize::MAX,
            ..limits
        };
        let seeds = seeds(&mut rng, n);
        let beam = beam_search(&graph, &seeds, &limits, n as usize, score_of);
        let circles = water_circles(&graph, &seeds, &limits);
        let as_set = |rs: &[Reached<u32, u8>]| -> BTreeSet<(u32, usize)> {
            rs.iter().map(|r| (r.vertex, r.depth())).collect()
        };
        assert_eq!(as_set(&beam), as_set(&circles), "seed {seed}");
    }
}

#[test]
fn each_beam_holds_the_best_of_what_the_previous_one_reached() {
    for seed in 0..CASES {
        let (mut rng, graph, n) = random_case(seed);
        let limits = random_limits(&mut rng, false);
        let width = rng.gen_range(1..5);
        let seeds = seeds(&mut rng, n);
        let got = beam_search(&graph, &seeds, &limits, width, score_of);
        assert!(got.len() <= limits.max_vertices.max(1), "seed {seed}");
        let ok = |v: u32| limits.vertex_kinds.is_empty() || limits.vertex_kinds.contains(&(v % 3));
        let (mut reached, mut returned): (BTreeSet<u32>, usize) = (BTreeSet::new(), 0);
        let max_depth = got.iter().map(|r| r.depth()).max().unwrap_or(0);
        for d in 0..=max_depth {
            let at = |d: usize| got.iter().filter(move |r| r.depth() == d);
            for r in at(d) {
                assert_path_valid(&graph, r, &seeds, &limits);
                assert_eq!(r.score, score_of(&r.vertex));
            }
            let kept: Vec<u32> = at(d).map(|r| r.vertex).collect();
            if d > 0 {
                // the plain search: what the beam before reaches through its first allowed
                // edges, not seen before, best first
                let mut candidates: Vec<u32> = Vec::new();
                for v in at(d - 1).map(|r| r.vertex) {
                    let allowed_out = graph.out[v as usize].iter().filter(|(k, b)| {
                        (limits.edge_kinds.is_empty() || limits.edge_kinds.contains(k)) && ok(*b)
                    });
                    for &(_, b) in allowed_out.take(limits.max_breadth) {
                        if !reached.contains(&b) && !candidates.contains(&b) {
                            candidates.push(b);
                        }
                    }
                }
                candidates.sort_by(|a, b| score_of(b).total_cmp(&score_of(a)).then(a.cmp(b)));
                // what was reached and fell out of the beam is not reached again
                reached.extend(&candidates);
                let room = limits.max_vertices.saturating_sub(returned);
                candidates.truncate(width.min(room));
                assert_eq!(kept, candidates, "seed {seed} depth {d}");
            } else {
                reached.extend(&kept);
            }
            returned += kept.len();
        }
    }
}

fn cost_of(k: u8, to: &u32) -> f64 {
    0.1 + f64::from((to * 7 + u32::from(k)) % 5) * 0.3
}

#[test]
fn a_star_finds_the_cheapest_bounded_paths_the_plain_search_finds() {
    for seed in 0..CASES {
        let (mut rng, graph, n) = random_case(seed);
        let limits = Limits {
            max_breadth: usize::MAX,
            max_vertices: usize::MAX,
            ..random_limits(&mut rng, true)
        };
        let seeds = seeds(&mut rng, n);
        let goal = |v: &u32| v % 4 == 1;
        // 0 everywhere, or the least cost of one more edge away from a goal: both consistent
        let informed = rng.gen_bool(0.5);
        let h = |v: &u32| if informed && !goal(v) { 0.1 } else { 0.0 };
        let max_goals = rng.gen_range(1..8);
        let got = a_star(&graph, &seeds, &limits, max_goals, goal, cost_of, h);
        let plain = bounded_costs(&graph, &seeds, &limits, cost_of);
        let mut want: Vec<f64> = plain
            .iter()
            .filter(|(v, _)| goal(v))
            .map(|(_, c)| *c)
            .collect();
        want.sort_by(f64::total_cmp);
        want.truncate(max_goals);
        let costs: Vec<f64> = got.iter().map(|r| r.score).collect();
        assert_eq!(costs.len(), want.len(), "seed {seed}");
        for (c, w) in costs.iter().zip(&want) {
            assert!((c - w).abs() < 1e-9, "seed {seed}: {costs:?} vs {want:?}");
        }
        for r in &got {
            assert!(goal(&r.vertex));
            assert!((r.score - plain[&r.vertex]).abs() < 1e-9, "seed {seed}");
            assert_path_valid(&graph, r, &seeds, &limits);
            let path_cost: f64 = r.path[1..]
                .iter()
                .map(|(k, v)| cost_of(k.unwrap(), v))
                .sum();
            assert!(
                (path_cost - r.score).abs() < 1e-9,
                "the path costs its score"
            );
        }
        let vertices: BTreeSet<u32> = got.iter().map(|r| r.vertex).collect();
        assert_eq!(vertices.len(), got.len(), "each goal once");
    }
}

#[test]
fn a_star_stops_at_its_limits() {
    // a line 0 → 1 → 2 → 3 → 4: goals 3 and 4 lie 3 and 4 edges away
    let graph = RandomGraph {
        out: vec![
            vec![(0, 1)],
            vec![(0, 2)],
            vec![(0, 3)],
            vec![(1, 4)],
            vec![],
        ],
    };
    let limits = |depth, vertices, edge_kinds: Vec<u8>| Limits {
        max_depth: depth,
        max_breadth: 8,
        max_vertices: vertices,
        vertex_kinds: Vec::new(),
        edge_kinds,
    };
    let goal = |v: &u32| *v >= 3;
    let unit = |_: u8, _: &u32| 1.0;
    let run = |l: &Limits| -> Vec<(u32, f64)> {
        a_star(&graph, &[0], l, 5, goal, unit, |_| 0.0)
            .into_iter()
            .map(|r| (r.vertex, r.score))
            .collect()
    };
    assert_eq!(run(&limits(4, 100, vec![])), vec![(3, 3.0), (4, 4.0)]);
    assert_eq!(run(&limits(3, 100, vec![])), vec![(3, 3.0)], "depth");
    assert_eq!(run(&limits(4, 100, vec![0])), vec![(3, 3.0)], "edge kind");
    assert_eq!(
        run(&limits(4, 3, vec![])),
        vec![],
        "three states expanded: 0, 1, 2"
    );
    assert_eq!(
        a_star(&graph, &[0], &limits(4, 100, vec![]), 1, goal, unit, |_| {
            0.0
        })
        .len(),
        1,
        "max goals"
    );
}
