//! Walks over a typed graph, as recall's traversal uses them over a user's memory graph
//! (PersonalAI's retrieval walks): breadth-first circles ([`water_circles`]), [`beam_search`]
//! scored per vertex, and [`a_star`] towards goal vertices. Each bounds the depth, the
//! breadth taken out of one vertex and the vertices reached, passes only through the vertex
//! and edge kinds allowed, and returns every vertex it reached with the path that reached it.
//! Pure functions of a [`WalkGraph`]; their plain-search oracles are in the tests.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::hash::Hash;

#[cfg(test)]
mod tests;

/// A graph to walk: typed vertices with typed edges out of each.
pub trait WalkGraph {
    type Vertex: Clone + Eq + Hash + Ord;
    type VertexKind: Copy + Eq;
    type EdgeKind: Copy + Eq;
    fn kind(&self, v: &Self::Vertex) -> Self::VertexKind;
    /// The edges out of `v` as `(kind, neighbour)`, in the order a breadth limit takes them
    /// (best first, where the graph knows what is best).
    fn edges(&self, v: &Self::Vertex) -> Vec<(Self::EdgeKind, Self::Vertex)>;
}

/// How far a walk may go.
#[derive(Debug, Clone, PartialEq)]
pub struct WalkLimits<VK, EK> {
    /// The longest path, in edges.
    pub max_depth: usize,
    /// Edges followed out of one vertex: its first ones in [`WalkGraph::edges`] order among
    /// those the kinds allow.
    pub max_breadth: usize,
    /// Vertices reached in all, the seeds included.
    pub max_vertices: usize,
    /// The kinds of vertex a walk may start from, enter or pass through; empty: every kind.
    pub vertex_kinds: Vec<VK>,
    /// The kinds of edge a walk may follow; empty: every kind.
    pub edge_kinds: Vec<EK>,
}

impl<VK: Copy + Eq, EK: Copy + Eq> WalkLimits<VK, EK> {
    fn vertex_allowed(&self, kind: VK) -> bool {
        self.vertex_kinds.is_empty() || self.vertex_kinds.contains(&kind)
    }

    fn edge_allowed(&self, kind: EK) -> bool {
        self.edge_kinds.is_empty() || self.edge_kinds.contains(&kind)
    }
}

/// A vertex a walk reached: the path from a seed (`path[0]` is the seed, with no edge; each
/// later step is the edge followed and the vertex it led to; the last is this vertex), and
/// the walk's score of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reached<V, EK> {
    pub vertex: V,
    pub path: Vec<(Option<EK>, V)>,
    /// [`water_circles`]: the depth; [`beam_search`]: the vertex's score; [`a_star`]: the
    /// path's cost.
    pub score: f64,
}

impl<V, EK> Reached<V, EK> {
    /// Edges on the path.
    pub fn depth(&self) -> usize {
        self.path.len() - 1
    }
}

/// The allowed edges out of `v` to allowed vertices, the first `max_breadth` of them.
fn allowed_edges<G: WalkGraph>(
    graph: &G,
    v: &G::Vertex,
    limits: &WalkLimits<G::VertexKind, G::EdgeKind>,
) -> Vec<(G::EdgeKind, G::Vertex)> {
    graph
        .edges(v)
        .into_iter()
        .filter(|(e, n)| limits.edge_allowed(*e) && limits.vertex_allowed(graph.kind(n)))
        .take(limits.max_breadth)
        .collect()
}

/// The seeds a walk starts from: the allowed ones, each once, in their order, at most
/// `max_vertices`.
fn start<G: WalkGraph>(
    graph: &G,
    seeds: &[G::Vertex],
    limits: &WalkLimits<G::VertexKind, G::EdgeKind>,
) -> Vec<G::Vertex> {
    let mut out: Vec<G::Vertex> = Vec::new();
    for s in seeds {
        if limits.vertex_allowed(graph.kind(s))
            && !out.contains(s)
            && out.len() < limits.max_vertices
        {
            out.push(s.clone());
        }
    }
    out
}

type Path<G> = Vec<(Option<<G as WalkGraph>::EdgeKind>, <G as WalkGraph>::Vertex)>;

/// Breadth-first circles (WaterCircles): every vertex within `max_depth` edges of a seed,
/// circle by circle, each once at its least depth, with the path that first reached it.
///
/// Input: seeds (those of a kind `limits` excludes are dropped, repeats ignored). Output: the
/// seeds (depth 0), then each circle's new vertices in the order they were found (the circle
/// before in order, each vertex's edges in [`WalkGraph::edges`] order, at most `max_breadth`
/// allowed ones per vertex); `score` is the depth. Stops when `max_vertices` are reached.
/// With `max_breadth` and `max_vertices` unbounded this is exactly the set of vertices at
/// hop distance ≤ `max_depth` from the seeds in the graph restricted to the allowed kinds.
///
/// Cost: O(reached · max_breadth) edge reads.
pub fn water_circles<G: WalkGraph>(
    graph: &G,
    seeds: &[G::Vertex],
    limits: &WalkLimits<G::VertexKind, G::EdgeKind>,
) -> Vec<Reached<G::Vertex, G::EdgeKind>> {
    let mut out: Vec<Reached<G::Vertex, G::EdgeKind>> = start(graph, seeds, limits)
        .into_iter()
        .map(|s| Reached {
            path: vec![(None, s.clone())],
            vertex: s,
            score: 0.0,
        })
        .collect();
    let mut seen: HashMap<G::Vertex, usize> = out
        .iter()
        .enumerate()
        .map(|(i, r)| (r.vertex.clone(), i))
        .collect();
    let mut circle = 0..out.len();
    for depth in 1..=limits.max_depth {
        let from = out.len();
        for i in circle.clone() {
            for (edge, n) in allowed_edges(graph, &out[i].vertex, limits) {
                if out.len() >= limits.max_vertices {
                    return out;
                }
                if seen.contains_key(&n) {
                    continue;
                }
                let mut path = out[i].path.clone();
                path.push((Some(edge), n.clone()));
                seen.insert(n.clone(), out.len());
                out.push(Reached {
                    vertex: n,
                    path,
                    score: depth as f64,
                });
            }
        }
        circle = from..out.len();
        if circle.is_empty() {
            break;
        }
    }
    out
}

/// Beam search: circle by circle as [`water_circles`], but only the `width` best-scored
/// vertices of each new circle go on (ties: the lesser vertex).
///
/// Input: seeds, `score` of a vertex (higher is better; NaN counts as lowest). Output: the
/// seeds, then per depth the vertices of the beam, best first, each with its `score`; a
/// vertex is in the beam at depth d when it is among the `width` best of the vertices first
/// reached at depth d from the beam at depth d − 1 (at most `max_breadth` allowed edges out of
/// each). Vertices that fell out of a beam are not returned. Stops when `max_vertices` are
/// reached. With `width` ≥ the number of vertices this reaches what [`water_circles`] does.
///
/// Cost: O(depth · width · max_breadth) edge reads and a sort per circle.
pub fn beam_search<G: WalkGraph>(
    graph: &G,
    seeds: &[G::Vertex],
    limits: &WalkLimits<G::VertexKind, G::EdgeKind>,
    width: usize,
    score: impl Fn(&G::Vertex) -> f64,
) -> Vec<Reached<G::Vertex, G::EdgeKind>> {
    let of = |v: &G::Vertex| {
        let s = score(v);
        if s.is_nan() {
            f64::NEG_INFINITY
        } else {
            s
        }
    };
    let mut out: Vec<Reached<G::Vertex, G::EdgeKind>> = start(graph, seeds, limits)
        .into_iter()
        .map(|s| Reached {
            path: vec![(None, s.clone())],
            score: of(&s),
            vertex: s,
        })
        .collect();
    // every vertex reached (kept in a beam or not) is not reached again
    let mut seen: std::collections::HashSet<G::Vertex> =
        out.iter().map(|r| r.vertex.clone()).collect();
    let mut beam = 0..out.len();
    for _ in 1..=limits.max_depth {
        let mut next: Vec<Reached<G::Vertex, G::EdgeKind>> = Vec::new();
        for i in beam.clone() {
            for (edge, n) in allowed_edges(graph, &out[i].vertex, limits) {
                if seen.insert(n.clone()) {
                    let mut path = out[i].path.clone();
                    path.push((Some(edge), n.clone()));
                    next.push(Reached {
                        score: of(&n),
                        vertex: n,
                        path,
                    });
                }
            }
        }
        next.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| a.vertex.cmp(&b.vertex))
        });
        next.truncate(width.min(limits.max_vertices.saturating_sub(out.len())));
        if next.is_empty() {
            break;
        }
        let from = out.len();
        out.extend(next);
        beam = from..out.len();
    }
    out
}

/// A* from the seeds to the goal vertices over paths of at most `max_depth` edges.
///
/// Input: seeds, `is_goal`, the cost of entering a vertex by an edge (`cost(edge, to)`, ≥ 0)
/// and a heuristic `h` that never overestimates the cost left to a goal and is consistent
/// (h(u) ≤ cost(e, v) + h(v) for every edge u → v, and 0 at goals; 0 everywhere is always
/// right). Output: the `max_goals` cheapest goals (which of equally cheap ones at that limit:
/// any), cheapest first (ties: the lesser vertex), each once, with the cheapest path of at
/// most `max_depth` edges to it and that path's cost as `score`.
/// A seed that is a goal is reached at cost 0. Stops after expanding `max_vertices` search
/// states (a state is a vertex at a depth).
///
/// Cost: O(states · max_breadth · log states).
#[allow(clippy::too_many_arguments)]
pub fn a_star<G: WalkGraph>(
    graph: &G,
    seeds: &[G::Vertex],
    limits: &WalkLimits<G::VertexKind, G::EdgeKind>,
    max_goals: usize,
    is_goal: impl Fn(&G::Vertex) -> bool,
    cost: impl Fn(G::EdgeKind, &G::Vertex) -> f64,
    h: impl Fn(&G::Vertex) -> f64,
) -> Vec<Reached<G::Vertex, G::EdgeKind>> {
    // search states: (vertex, depth); each keeps its cheapest path so far
    let mut best: HashMap<(G::Vertex, usize), (f64, Path<G>)> = HashMap::new();
    let mut open: BinaryHeap<Open<G::Vertex>> = BinaryHeap::new();
    for s in start(graph, seeds, limits) {
        best.insert((s.clone(), 0), (0.0, vec![(None, s.clone())]));
        open.push(Open {
            f: h(&s),
            g: 0.0,
            vertex: s,
            depth: 0,
        });
    }
    let mut done: std::collections::HashSet<(G::Vertex, usize)> = Default::default();
    let mut goals: Vec<Reached<G::Vertex, G::EdgeKind>> = Vec::new();
    let mut expanded = 0;
    while let Some(Open {
        g, vertex, depth, ..
    }) = open.pop()
    {
        if goals.len() >= max_goals || expanded >= limits.max_vertices {
            break;
        }
        if !done.insert((vertex.clone(), depth)) {
            continue;
        }
        expanded += 1;
        let path = best[&(vertex.clone(), depth)].1.clone();
        if is_goal(&vertex) && !goals.iter().any(|r| r.vertex == vertex) {
            goals.push(Reached {
                vertex: vertex.clone(),
                path: path.clone(),
                score: g,
            });
        }
        if depth == limits.max_depth {
            continue;
        }
        for (edge, n) in allowed_edges(graph, &vertex, limits) {
            let g2 = g + cost(edge, &n).max(0.0);
            let key = (n.clone(), depth + 1);
            if done.contains(&key) || best.get(&key).is_some_and(|(old, _)| *old <= g2) {
                continue;
            }
            let mut p = path.clone();
            p.push((Some(edge), n.clone()));
            best.insert(key, (g2, p));
            open.push(Open {
                f: g2 + h(&n),
                g: g2,
                vertex: n,
                depth: depth + 1,
            });
        }
    }
    goals.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then_with(|| a.vertex.cmp(&b.vertex))
    });
    goals
}

/// A state waiting in A*'s open list, popped cheapest `f` first (ties: the lesser vertex,
/// then the shallower).
struct Open<V> {
    f: f64,
    g: f64,
    vertex: V,
    depth: usize,
}

impl<V: Ord> Ord for Open<V> {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .f
            .total_cmp(&self.f)
            .then_with(|| other.vertex.cmp(&self.vertex))
            .then_with(|| other.depth.cmp(&self.depth))
    }
}

impl<V: Ord> PartialOrd for Open<V> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<V: Ord> PartialEq for Open<V> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<V: Ord> Eq for Open<V> {}
