//! `[recall.traversal]`: how recall walks the user's memory graph, and what a request may ask
//! of it (`traversal` in `POST /v1/recall`).

use serde::{Deserialize, Serialize};

/// Which walk recall runs over the memory graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Walk {
    /// No walk.
    #[default]
    None,
    /// Breadth-first circles (WaterCircles): every vertex within the depth.
    Bfs,
    /// Beam search: per depth only the `beam_width` vertices closest to the query go on.
    Beam,
    /// A* from the seeds to the turns that match the query, cheapest paths first.
    AStar,
}

/// The kinds of vertex in a user's memory graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VertexKind {
    Episode,
    Entity,
    Relation,
    Summary,
}

/// The kinds of edge a walk may follow (in either direction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum EdgeKind {
    /// Episode → an entity it names.
    Mentions,
    /// Episode → the next turn of its session.
    Next,
    /// Entity → an entity named in one sentence with it.
    CoMentioned,
    /// Relation → an episode it was read from.
    EvidenceFor,
    /// Summary → an episode it summarises.
    Covers,
    /// Relation → its subject or object.
    Relation,
    /// Entity → the entity it is a short name of ("caro" → "caroline").
    AliasOf,
}

/// The walk and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TraversalConfig {
    /// `none` (the default: see the measurements in docs/benchmarks.md), `bfs`, `beam` or
    /// `a_star`.
    pub walk: Walk,
    /// The longest path, in edges.
    pub max_depth: usize,
    /// Edges followed out of one vertex (the best first: an entity's turns by their cosine to
    /// the query, an episode's entities rarest first, co-mentions heaviest first).
    pub max_breadth: usize,
    /// Vertices reached in all (A*: search states expanded).
    pub max_vertices: usize,
    /// Beam search: vertices kept per depth.
    pub beam_width: usize,
    /// Besides the entities the query names, the walk starts from this many of the turns
    /// closest to the query.
    pub seed_episodes: usize,
    /// A*: a turn is a goal when its cosine to the query is at least this share of the best.
    pub goal_similarity: f64,
    /// An entity named in more than this share of the user's turns (a speaker's name, the
    /// user's city), and in more than `max_breadth`, is a hub the walk neither starts from nor
    /// enters: through it every turn is two edges from every other.
    pub hub_share: f64,
    /// Kinds of vertex the walk may start from, enter or pass; empty: all.
    pub vertex_kinds: Vec<VertexKind>,
    /// Kinds of edge the walk may follow; empty: all.
    pub edge_kinds: Vec<EdgeKind>,
    /// Weight of the walk's score in a turn's fused score (cosine counts 1).
    pub weight: f64,
}

impl Default for TraversalConfig {
    fn default() -> Self {
        TraversalConfig {
            walk: Walk::None,
            max_depth: 2,
            max_breadth: 8,
            max_vertices: 200,
            beam_width: 8,
            seed_episodes: 3,
            goal_similarity: 0.8,
            hub_share: 0.05,
            vertex_kinds: Vec::new(),
            edge_kinds: Vec::new(),
            weight: 0.5,
        }
    }
}

/// What one request may change of [`TraversalConfig`]; absent fields keep the configured value.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraversalRequest {
    pub walk: Option<Walk>,
    pub max_depth: Option<usize>,
    pub max_breadth: Option<usize>,
    pub max_vertices: Option<usize>,
    pub beam_width: Option<usize>,
    pub seed_episodes: Option<usize>,
    pub goal_similarity: Option<f64>,
    pub hub_share: Option<f64>,
    pub vertex_kinds: Option<Vec<VertexKind>>,
    pub edge_kinds: Option<Vec<EdgeKind>>,
    pub weight: Option<f64>,
}

/// The most a request may ask for: a walk stays within milliseconds.
pub const MAX_DEPTH: usize = 6;
pub const MAX_BREADTH: usize = 100;
pub const MAX_VERTICES: usize = 5000;
pub const MAX_SEED_EPISODES: usize = 50;

impl TraversalConfig {
    /// `self` with `request`'s fields in place of its own, or the field and the reason it is
    /// out of bounds.
    pub fn with(&self, request: &TraversalRequest) -> Result<TraversalConfig, (String, String)> {
        let mut out = self.clone();
        let r = request.clone();
        out.walk = r.walk.unwrap_or(out.walk);
        out.max_depth = r.max_depth.unwrap_or(out.max_depth);
        out.max_breadth = r.max_breadth.unwrap_or(out.max_breadth);
        out.max_vertices = r.max_vertices.unwrap_or(out.max_vertices);
        out.beam_width = r.beam_width.unwrap_or(out.beam_width);
        out.seed_episodes = r.seed_episodes.unwrap_or(out.seed_episodes);
        out.goal_similarity = r.goal_similarity.unwrap_or(out.goal_similarity);
        out.hub_share = r.hub_share.unwrap_or(out.hub_share);
        out.vertex_kinds = r.vertex_kinds.unwrap_or(out.vertex_kinds);
        out.edge_kinds = r.edge_kinds.unwrap_or(out.edge_kinds);
        out.weight = r.weight.unwrap_or(out.weight);
        out.check().map(|()| out)
    }

    /// The limits a configuration or request must keep.
    pub fn check(&self) -> Result<(), (String, String)> {
        let bad = |field: &str, reason: String| Err((format!("traversal.{field}"), reason));
        if self.max_depth > MAX_DEPTH {
            return bad("max_depth", format!("must be at most {MAX_DEPTH}"));
        }
        if !(1..=MAX_BREADTH).contains(&self.max_breadth) {
            return bad("max_breadth", format!("must be 1 to {MAX_BREADTH}"));
        }
        if !(1..=MAX_VERTICES).contains(&self.max_vertices) {
            return bad("max_vertices", format!("must be 1 to {MAX_VERTICES}"));
        }
        if !(1..=MAX_VERTICES).contains(&self.beam_width) {
            return bad("beam_width", format!("must be 1 to {MAX_VERTICES}"));
        }
        if self.seed_episodes > MAX_SEED_EPISODES {
            return bad(
                "seed_episodes",
                format!("must be at most {MAX_SEED_EPISODES}"),
            );
        }
        if !(0.0..=1.0).contains(&self.goal_similarity) {
            return bad("goal_similarity", "must be 0 to 1".into());
        }
        if !(0.0..=1.0).contains(&self.hub_share) {
            return bad("hub_share", "must be 0 to 1".into());
        }
        if !(0.0..=10.0).contains(&self.weight) {
            return bad("weight", "must be 0 to 10".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_overrides_what_it_names_within_bounds() {
        let base = TraversalConfig::default();
        let asked: TraversalRequest = serde_json::from_str(
            r#"{"walk": "beam", "beam_width": 3, "edge_kinds": ["MENTIONS"]}"#,
        )
        .unwrap();
        let got = base.with(&asked).unwrap();
        assert_eq!(got.walk, Walk::Beam);
        assert_eq!(got.beam_width, 3);
        assert_eq!(got.edge_kinds, vec![EdgeKind::Mentions]);
        assert_eq!(got.max_depth, base.max_depth, "unnamed fields are kept");
        let too_deep = TraversalRequest {
            max_depth: Some(7),
            ..Default::default()
        };
        assert_eq!(
            base.with(&too_deep).unwrap_err(),
            (
                "traversal.max_depth".to_string(),
                "must be at most 6".to_string()
            )
        );
        let wide = TraversalRequest {
            max_vertices: Some(1_000_000),
            ..Default::default()
        };
        assert_eq!(base.with(&wide).unwrap_err().0, "traversal.max_vertices");
        assert!(serde_json::from_str::<TraversalRequest>(r#"{"walk": "dfs"}"#).is_err());
        assert!(serde_json::from_str::<TraversalRequest>(r#"{"depth": 2}"#).is_err());
    }
}
