//! Traversal retrieval: a walk over the user's memory graph — turns, entities, relations and
//! summaries joined by `MENTIONS`, `NEXT`, `CO_MENTIONED`, `EVIDENCE_FOR`, `COVERS` and relation
//! edges, read from the views — from the entities the query names and the turns closest to it
//! ([`engram_operators::graph_walks`]). Each turn the walk reaches gets a walk score and the
//! path that reached it ([`WalkWhy`]), which the turn score adds (`recall.traversal.weight`).

use crate::config::{EdgeKind, TraversalConfig, VertexKind, Walk};
use engram_dataflows::views::{MemoryViews, UserMemory};
use engram_operators::graph_walks::{
    a_star, beam_search, water_circles, Reached, WalkGraph, WalkLimits,
};
use engram_operators::said_days::lower_words;
use engram_operators::{uuid_bits, uuid_text};
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A vertex of a user's memory graph.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryVertex {
    /// A turn, by its [`engram_operators::episode_key`].
    Episode(u128),
    Entity(Arc<str>),
    /// A relation, by its event id.
    Relation(String),
    /// A summary, by its event id.
    Summary(String),
}

/// How the walk reached a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WalkWhy {
    pub walk: Walk,
    /// 1 / depth for `bfs` and `beam`; 1 / (1 + the path's cost) for `a_star`.
    pub score: f64,
    /// From a seed (the first step, without an edge) to the turn (for `a_star`: along the
    /// cheapest path to a goal that passes the turn, or ends at it).
    pub path: Vec<PathStep>,
}

/// One step of a walk's path: the edge followed (none for the seed) and the vertex reached.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PathStep {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edge: Option<EdgeKind>,
    pub kind: VertexKind,
    /// A turn's id, an entity's name, a relation's or summary's event id.
    pub id: String,
}

/// The most co-mention edges, and entities, a user may have for a walk to follow `CO_MENTIONED`,
/// and `ALIAS_OF`, edges: their indexes are built for each walk (the views keep neither), and
/// beyond these a build would cost more than the recall (a walk still goes from an entity to
/// its co-mentioned ones through the turns that mention them).
pub const MAX_INDEXED_CO_MENTIONS: usize = 50_000;
pub const MAX_INDEXED_ENTITIES: usize = 20_000;
/// Likewise for `RELATION`, `EVIDENCE_FOR` and `COVERS` edges into relations and summaries
/// (relations and summaries in all).
pub const MAX_INDEXED_RELATIONS: usize = 50_000;

/// A relation's subject or object as entities are named (lowercase: "Caroline" is the entity
/// "caroline").
fn entity_name(text: &str) -> String {
    text.trim().to_lowercase()
}

/// Edges one walk reads at most (whatever a request's limits): past it, vertices have no more
/// edges and the walk ends with what it reached.
pub const MAX_EDGE_READS: usize = 100_000;

/// A user's memory graph as the views hold it at one timestamp, with the indexes a walk needs
/// that the views do not keep (built per walk: relations and summaries are few; co-mentions
/// and aliases only when the walk may follow them, up to [`MAX_INDEXED_CO_MENTIONS`] and
/// [`MAX_INDEXED_ENTITIES`]).
pub struct MemoryGraph<'a> {
    views: &'a MemoryViews,
    memory: &'a UserMemory,
    /// Each scored turn's cosine to the query as a share of the best.
    similarity: &'a HashMap<u128, f64>,
    /// By the entity's name as entities are named ([`entity_name`]).
    relations_of_entity: HashMap<String, Vec<&'a str>>,
    relations_of_episode: HashMap<u128, Vec<&'a str>>,
    summaries_of_episode: HashMap<u128, Vec<&'a str>>,
    /// Heaviest first.
    co_mentioned: HashMap<&'a str, Vec<(&'a Arc<str>, u64)>>,
    /// Alias → the entity it names, and the entity → its aliases.
    aliases: HashMap<&'a str, Vec<&'a Arc<str>>>,
    /// Entities named in more turns than this are hubs, not entered.
    hub_turns: usize,
    /// The walk's breadth: of a vertex's turns only this many best are listed.
    breadth: usize,
    /// What is left of [`MAX_EDGE_READS`].
    reads_left: std::cell::Cell<usize>,
}

impl<'a> MemoryGraph<'a> {
    /// The graph of the user whose memory is `memory` and who has `turns` turns.
    pub fn new(
        views: &'a MemoryViews,
        memory: &'a UserMemory,
        turns: usize,
        similarity: &'a HashMap<u128, f64>,
        config: &TraversalConfig,
    ) -> Self {
        let mut relations_of_entity: HashMap<String, Vec<&str>> = HashMap::new();
        let mut relations_of_episode: HashMap<u128, Vec<&str>> = HashMap::new();
        let mut summaries_of_episode: HashMap<u128, Vec<&str>> = HashMap::new();
        if memory.relations.len() + memory.summaries.len() <= MAX_INDEXED_RELATIONS {
            for (id, r) in &memory.relations {
                for end in [&r.subject, &r.object] {
                    relations_of_entity
                        .entry(entity_name(end))
                        .or_default()
                        .push(id);
                }
                for e in r.evidence.iter().filter_map(|e| uuid_bits(e)) {
                    relations_of_episode.entry(e).or_default().push(id);
                }
            }
            for (id, s) in &memory.summaries {
                for e in s.covers.iter().filter_map(|e| uuid_bits(e)) {
                    summaries_of_episode.entry(e).or_default().push(id);
                }
            }
        }
        let mut co_mentioned: HashMap<&str, Vec<(&Arc<str>, u64)>> = HashMap::new();
        let follows = |k| config.edge_kinds.is_empty() || config.edge_kinds.contains(&k);
        if follows(EdgeKind::CoMentioned) && memory.co_mentions.len() <= MAX_INDEXED_CO_MENTIONS {
            for (a, b, w) in memory.co_mentions.iter() {
                co_mentioned.entry(a).or_default().push((b, w));
                co_mentioned.entry(b).or_default().push((a, w));
            }
            for list in co_mentioned.values_mut() {
                list.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(y.0)));
            }
        }
        let mut aliases: HashMap<&str, Vec<&Arc<str>>> = HashMap::new();
        if follows(EdgeKind::AliasOf) && memory.entities.len() <= MAX_INDEXED_ENTITIES {
            let named: HashMap<&str, &Arc<str>> = memory
                .entities
                .iter()
                .filter(|(_, s)| s.kind == engram_operators::entities::EntityKind::Named)
                .map(|(name, _)| (&**name, name))
                .collect();
            let names: Vec<&str> = named.keys().copied().collect();
            for (alias, full) in engram_operators::entity_aliases::aliases(&names) {
                aliases.entry(alias).or_default().push(named[full]);
                aliases.entry(full).or_default().push(named[alias]);
            }
        }
        MemoryGraph {
            views,
            aliases,
            memory,
            similarity,
            relations_of_entity,
            relations_of_episode,
            summaries_of_episode,
            co_mentioned,
            // an entity of no more turns than one vertex's breadth costs no more than any other
            hub_turns: ((config.hub_share * turns as f64).ceil() as usize).max(config.max_breadth),
            breadth: config.max_breadth,
            reads_left: std::cell::Cell::new(MAX_EDGE_READS),
        }
    }

    /// Whether `name` is named in so many turns that a walk does not enter it.
    fn is_hub(&self, name: &str) -> bool {
        self.memory.mentions.episode_count(name) > self.hub_turns
    }

    /// The entity vertex of `name` (a relation's end, named as entities are).
    fn entity(&self, name: &str) -> MemoryVertex {
        let name = entity_name(name);
        match self.memory.entities.get_key_value(name.as_str()) {
            Some((held, _)) => MemoryVertex::Entity(held.clone()),
            None => MemoryVertex::Entity(Arc::from(name)),
        }
    }

    /// The `breadth` turns of best cosine share, best first (ties: by key), read within what
    /// is left of [`MAX_EDGE_READS`].
    fn best_turns_first(&self, turns: impl Iterator<Item = u128>) -> Vec<MemoryVertex> {
        let turns: Vec<u128> = turns.take(self.reads_left.get()).collect();
        self.read(turns.len());
        self.best_turns(turns.into_iter(), self.breadth)
    }

    /// The `limit` turns of best cosine share, best first (ties: by key).
    fn best_turns(&self, turns: impl Iterator<Item = u128>, limit: usize) -> Vec<MemoryVertex> {
        let mut turns: Vec<(f64, u128)> = turns
            .map(|e| (self.similarity.get(&e).copied().unwrap_or(0.0), e))
            .collect();
        let best_first = |a: &(f64, u128), b: &(f64, u128)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        if turns.len() > limit {
            turns.select_nth_unstable_by(limit, best_first);
            turns.truncate(limit);
        }
        turns.sort_by(best_first);
        turns
            .into_iter()
            .map(|(_, e)| MemoryVertex::Episode(e))
            .collect()
    }

    /// Counts `n` edges read.
    fn read(&self, n: usize) {
        self.reads_left.set(self.reads_left.get().saturating_sub(n));
    }
}

impl WalkGraph for MemoryGraph<'_> {
    type Vertex = MemoryVertex;
    type VertexKind = VertexKind;
    type EdgeKind = EdgeKind;

    fn kind(&self, v: &MemoryVertex) -> VertexKind {
        match v {
            MemoryVertex::Episode(_) => VertexKind::Episode,
            MemoryVertex::Entity(_) => VertexKind::Entity,
            MemoryVertex::Relation(_) => VertexKind::Relation,
            MemoryVertex::Summary(_) => VertexKind::Summary,
        }
    }

    /// A turn: its neighbours in the session, its entities (rarest first), the relations read
    /// from it, the summaries covering it. An entity: the entity it is a short name of, or its
    /// short names, the turns naming it (best cosine first), its relations, the entities
    /// co-mentioned with it (heaviest first). A relation: its subject and object, then its
    /// evidence. A summary: the turns it covers. Hubs are left out; each kind lists at most
    /// `max_breadth`, and the kinds take turns: the first of each kind, then the second of
    /// each, … (so a breadth limit follows some edges of every kind).
    fn edges(&self, v: &MemoryVertex) -> Vec<(EdgeKind, MemoryVertex)> {
        if self.reads_left.get() == 0 {
            return Vec::new();
        }
        let entity = |n: &Arc<str>| MemoryVertex::Entity(n.clone());
        let entities = |kind: EdgeKind, names: Vec<&Arc<str>>| -> Vec<(EdgeKind, MemoryVertex)> {
            let kept = names.into_iter().filter(|n| !self.is_hub(n));
            kept.take(self.breadth).map(|n| (kind, entity(n))).collect()
        };
        let tagged =
            |kind: EdgeKind, vertices: Vec<MemoryVertex>| -> Vec<(EdgeKind, MemoryVertex)> {
                vertices.into_iter().map(|v| (kind, v)).collect()
            };
        let ids = |kind: EdgeKind, ids: Option<&Vec<&str>>, of: fn(String) -> MemoryVertex| {
            let ids = ids.into_iter().flatten().take(self.breadth);
            ids.map(|id| (kind, of(id.to_string()))).collect::<Vec<_>>()
        };
        // each kind's best first; the kinds take turns (a breadth limit takes some of each)
        let kinds: Vec<Vec<(EdgeKind, MemoryVertex)>> = match v {
            MemoryVertex::Episode(e) => {
                let next = [self.views.prev.get(e), self.views.next.get(e)];
                let next = next
                    .into_iter()
                    .flatten()
                    .map(|n| MemoryVertex::Episode(*n));
                let mut names: Vec<&Arc<str>> =
                    self.memory.mentions.entities_of(*e).iter().collect();
                names.sort_by_cached_key(|n| self.memory.mentions.episode_count(n));
                vec![
                    tagged(EdgeKind::Next, next.collect()),
                    entities(EdgeKind::Mentions, names),
                    ids(
                        EdgeKind::EvidenceFor,
                        self.relations_of_episode.get(e),
                        MemoryVertex::Relation,
                    ),
                    ids(
                        EdgeKind::Covers,
                        self.summaries_of_episode.get(e),
                        MemoryVertex::Summary,
                    ),
                ]
            }
            MemoryVertex::Entity(name) => {
                let aliases = self.aliases.get(&**name).into_iter().flatten().copied();
                let co_mentioned = self.co_mentioned.get(&**name).into_iter().flatten();
                vec![
                    entities(EdgeKind::AliasOf, aliases.collect()),
                    tagged(
                        EdgeKind::Mentions,
                        self.best_turns_first(self.memory.mentions.episodes_of(name)),
                    ),
                    ids(
                        EdgeKind::Relation,
                        self.relations_of_entity.get(&**name),
                        MemoryVertex::Relation,
                    ),
                    entities(
                        EdgeKind::CoMentioned,
                        co_mentioned.map(|(n, _)| *n).collect(),
                    ),
                ]
            }
            MemoryVertex::Relation(id) => match self.memory.relations.get(id) {
                Some(r) => {
                    let ends = [self.entity(&r.subject), self.entity(&r.object)];
                    let ends = ends.into_iter().filter(|v| match v {
                        MemoryVertex::Entity(n) => !self.is_hub(n),
                        _ => true,
                    });
                    let evidence = r.evidence.iter().filter_map(|e| uuid_bits(e));
                    vec![
                        tagged(EdgeKind::Relation, ends.collect()),
                        tagged(EdgeKind::EvidenceFor, self.best_turns_first(evidence)),
                    ]
                }
                None => Vec::new(),
            },
            MemoryVertex::Summary(id) => match self.memory.summaries.get(id) {
                Some(s) => {
                    let covered = s.covers.iter().filter_map(|e| uuid_bits(e));
                    vec![tagged(EdgeKind::Covers, self.best_turns_first(covered))]
                }
                None => Vec::new(),
            },
        };
        let out = take_turns(kinds);
        self.read(out.len());
        out
    }
}

/// The edges of `kinds` taken in turns: the first of each kind, then the second of each, ….
fn take_turns(kinds: Vec<Vec<(EdgeKind, MemoryVertex)>>) -> Vec<(EdgeKind, MemoryVertex)> {
    let mut iters: Vec<_> = kinds.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(iters.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// How close a vertex is to the query, 0 to 1: a turn's cosine share; an entity the query
/// names, 1; any other entity, relation or summary, the share of its words the query has.
fn closeness(
    graph: &MemoryGraph<'_>,
    query_words: &HashSet<String>,
    named: &HashSet<&str>,
    v: &MemoryVertex,
) -> f64 {
    let overlap = |text: &str| {
        let words = lower_words(text);
        if words.is_empty() {
            return 0.0;
        }
        words.iter().filter(|w| query_words.contains(*w)).count() as f64 / words.len() as f64
    };
    match v {
        MemoryVertex::Episode(e) => graph.similarity.get(e).copied().unwrap_or(0.0),
        MemoryVertex::Entity(name) if named.contains(&**name) => 1.0,
        MemoryVertex::Entity(name) => overlap(name),
        MemoryVertex::Relation(id) => graph.memory.relations.get(id).map_or(0.0, |r| {
            overlap(&format!("{} {} {}", r.subject, r.relation, r.object))
        }),
        MemoryVertex::Summary(id) => graph
            .memory
            .summaries
            .get(id)
            .map_or(0.0, |s| overlap(&s.content)),
    }
}

/// Every hop of an A* path costs at least this: the heuristic's step, so it stays consistent.
const HOP_COST: f64 = 0.1;

/// Runs `config.walk` over the graph of a user with `turns` turns from the entities `query`
/// names (hubs excepted: `config.hub_share`) and the `config.seed_episodes` turns of highest `similarity` (each turn's cosine share); returns
/// each turn the walk reached (the seed turns excepted) with its walk score and path, by
/// episode key. Nothing for `Walk::None`.
pub fn walk_turns(
    views: &MemoryViews,
    memory: &UserMemory,
    turns: usize,
    query: &str,
    similarity: &HashMap<u128, f64>,
    config: &TraversalConfig,
) -> HashMap<u128, WalkWhy> {
    if config.walk == Walk::None {
        return HashMap::new();
    }
    let graph = MemoryGraph::new(views, memory, turns, similarity, config);
    let mut named_entities = super::graph::query_entities(memory, query);
    named_entities.retain(|name| !graph.is_hub(name));
    let named: HashSet<&str> = named_entities.iter().map(String::as_str).collect();
    let mut seeds: Vec<MemoryVertex> = named_entities.iter().map(|n| graph.entity(n)).collect();
    let seed_turns = graph.best_turns(similarity.keys().copied(), config.seed_episodes);
    seeds.extend(seed_turns.iter().cloned());
    let limits = WalkLimits {
        max_depth: config.max_depth,
        max_breadth: config.max_breadth,
        max_vertices: config.max_vertices,
        vertex_kinds: config.vertex_kinds.clone(),
        edge_kinds: config.edge_kinds.clone(),
    };
    let query_words: HashSet<String> = lower_words(query).into_iter().collect();
    let close = |v: &MemoryVertex| closeness(&graph, &query_words, &named, v);
    let mut out: HashMap<u128, WalkWhy> = HashMap::new();
    let mut credit = |turn: u128, score: f64, path: &[(Option<EdgeKind>, MemoryVertex)]| {
        if seed_turns.contains(&MemoryVertex::Episode(turn)) {
            return;
        }
        let better = out.get(&turn).is_none_or(|w| w.score < score);
        if better {
            let why = WalkWhy {
                walk: config.walk,
                score,
                path: path.iter().map(|(e, v)| step(&graph, *e, v)).collect(),
            };
            out.insert(turn, why);
        }
    };
    let by_depth =
        |reached: Vec<Reached<MemoryVertex, EdgeKind>>,
         credit: &mut dyn FnMut(u128, f64, &[(Option<EdgeKind>, MemoryVertex)])| {
            for r in reached {
                if let (MemoryVertex::Episode(e), d) = (&r.vertex, r.depth()) {
                    if d > 0 {
                        credit(*e, 1.0 / d as f64, &r.path);
                    }
                }
            }
        };
    match config.walk {
        Walk::None => {}
        Walk::Bfs => by_depth(water_circles(&graph, &seeds, &limits), &mut credit),
        Walk::Beam => by_depth(
            beam_search(&graph, &seeds, &limits, config.beam_width, close),
            &mut credit,
        ),
        Walk::AStar => {
            let goal_share = config.goal_similarity;
            let is_goal = |v: &MemoryVertex| matches!(v, MemoryVertex::Episode(e) if similarity.get(e).is_some_and(|s| *s >= goal_share));
            // entering a vertex costs what it is away from the query, and at least a hop
            let cost = |_: EdgeKind, v: &MemoryVertex| HOP_COST + (1.0 - close(v)).max(0.0);
            let h = |v: &MemoryVertex| if is_goal(v) { 0.0 } else { HOP_COST };
            let goals = a_star(
                &graph,
                &seeds,
                &limits,
                config.max_vertices,
                is_goal,
                cost,
                h,
            );
            for g in goals {
                let score = 1.0 / (1.0 + g.score);
                // the goal and every turn its path passes (a bridge between the query's
                // entities and the turns that match it)
                for (i, (_, v)) in g.path.iter().enumerate().skip(1) {
                    if let MemoryVertex::Episode(e) = v {
                        credit(*e, score, &g.path[..=i]);
                    }
                }
            }
        }
    }
    out
}

fn step(graph: &MemoryGraph<'_>, edge: Option<EdgeKind>, v: &MemoryVertex) -> PathStep {
    use engram_operators::graph_walks::WalkGraph as _;
    let id = match v {
        MemoryVertex::Episode(e) => uuid_text(*e),
        MemoryVertex::Entity(name) => name.to_string(),
        MemoryVertex::Relation(id) | MemoryVertex::Summary(id) => id.clone(),
    };
    PathStep {
        edge,
        kind: graph.kind(v),
        id,
    }
}

impl super::Recall {
    /// Runs `config.walk` over the user's graph ([`walk_turns`]) and sets `why.walk` on the
    /// turns it reached; turns it reached that no search found (a large user's) are read and
    /// added, within `as_of` and, unless `keep_archived`, only those not archived.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn walk_memory_graph(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        hits: &mut Vec<super::RecallHit>,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
        keep_archived: bool,
        config: &TraversalConfig,
    ) -> Result<(), super::RecallError> {
        if config.walk == Walk::None {
            return Ok(());
        }
        let best = hits
            .iter()
            .map(|h| h.why.best_similarity())
            .fold(1e-9, f64::max);
        let similarity: HashMap<u128, f64> = hits
            .iter()
            .filter_map(|h| Some((uuid_bits(&h.id)?, (h.why.best_similarity() / best).max(0.0))))
            .collect();
        let walked = {
            let views = self.views.read();
            let key = (tenant.to_string(), user.to_string());
            let turns = views.user_episodes.get(&key).copied().unwrap_or(0);
            match views.users.get(&key) {
                Some(memory) => walk_turns(&views, memory, turns, query, &similarity, config),
                None => return Ok(()),
            }
        };
        let missing: Vec<String> = walked
            .keys()
            .filter(|k| !similarity.contains_key(k))
            .map(|k| uuid_text(*k))
            .collect();
        let rows = self.store.episodes_by_id(tenant, user, &missing).await?;
        let views = self.views.read();
        for row in rows.iter().filter(|r| as_of.is_none_or(|t| r.ts <= t)) {
            let mut hit = super::RecallHit::from_row(row);
            hit.read_retention(&views, as_of);
            if keep_archived || !hit.why.archived {
                hits.push(hit);
            }
        }
        for h in hits.iter_mut() {
            h.why.walk = uuid_bits(&h.id).and_then(|k| walked.get(&k).cloned());
        }
        Ok(())
    }
}
