//! Hybrid recall over a user's episodes: vector (ANN / exact), passage and full-text (BM25)
//! candidates from Lance, scored as turns of conversations ([`turn_scoring`]: fused scores,
//! speakers, `NEXT` neighbours, sessions, dates), with the neighbours' ids from the views.

use crate::config::RecallConfig;
pub mod analysed_turns;
pub mod bm25;
mod graph;
pub mod learned;
mod ranking;
pub mod respelling;
mod search;
pub mod speaker_cache;
pub mod traversal;
pub mod turn_scoring;

pub use crate::config::{GraphLimits, RankBy};
use engram_connectors::{Embedder, EpisodeHit, EpisodeStore};
use engram_dataflows::SharedViews;
use engram_operators::memories::UNSTATED_IMPORTANCE_MILLI;
use engram_schemas::{validate_name, EventError};
pub use graph::graph_expansion;
use ranking::{fuse_two, text_ranking_among};
pub use ranking::{
    gather_candidates, merge_by_score, passage_ranking, rank_turns, score_mrs, score_relevance,
    InProcessText,
};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, Clone, Deserialize)]
pub struct RecallRequest {
    /// Filled in from the API key over HTTP (a different tenant here is refused).
    #[serde(default)]
    pub tenant: String,
    pub user: String,
    pub query: String,
    #[serde(default)]
    pub k: Option<usize>,
    /// Recall as of this moment: only episodes whose event time is at or before it.
    #[serde(default)]
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
    /// Also recall the tenant's domain-wide memories: the episodes written for the reserved
    /// user [`DOMAIN_USER`], and only those (nothing any other user wrote is shared).
    #[serde(default)]
    pub include_domain: bool,
    /// Also recall archived memories (issue 33: those whose retention fell below 0.05). An
    /// `as_of` recall always includes them.
    #[serde(default)]
    pub include_archived: bool,
    /// Walk the memory graph for this request: any of `recall.traversal`'s fields, in place of
    /// the configured ones (`{"walk": "beam", "max_depth": 3}`).
    #[serde(default)]
    pub traversal: Option<crate::config::TraversalRequest>,
}

/// The user whose memories are the tenant's domain-wide ones: what a tenant writes for this
/// user is explicitly marked as shared with all its users (never with other tenants).
pub const DOMAIN_USER: &str = engram_schemas::DOMAIN_USER;

/// Why a result was chosen: its rank and raw score in each retriever that found it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Why {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_similarity: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bm25: Option<f32>,
    /// Rank and similarity of the episode's best-matching span: the episode itself or one of
    /// its passages (sentences), whichever is closer to the query.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span_similarity: Option<f32>,
    /// The passage, when the best span is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passage: Option<String>,
    /// Rank in the graph expansion: a full-text search for the entities the query's entities
    /// lead to in the user's co-mention graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_rank: Option<usize>,
    /// BM25 in the graph expansion's search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_bm25: Option<f32>,
    /// How the graph expansion reached this episode ("Rex: co-mentioned with Berlin", …).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub graph_via: Vec<String>,
    /// SPEC §5: e^(−Δt/λ) of the episode's age at the recall's time (λ = `recency_scale_days`).
    pub recency: f64,
    /// The episode's importance (0.5 when it has none).
    pub importance: f64,
    /// SPEC §5 score: 0.7·similarity (the best of the episode's and its passages' cosine; 0
    /// when only the text or graph search found it) + 0.2·recency + 0.1·importance.
    pub relevance: f64,
    /// The memory's retention R at the recall's moment, e^(−t/S) of its decay trace (set for
    /// every turn recall scores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retention: Option<f64>,
    /// The memory is archived (only an `include_archived` or `as_of` recall returns it).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub archived: bool,
    /// The boost the user's retrieval preferences give the turn's kind (its role, content type
    /// and origin), when feedback has taught any ([`learned::LearnedBoosts`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<f64>,
    /// The episode's MARK state, when answers have been built with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark: Option<engram_operators::memory_marks::MemoryMark>,
    /// How traversal retrieval reached the turn, when a walk ran and reached it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub walk: Option<traversal::WalkWhy>,
    /// With `rank_by = "mrs"`: the normalised memory relevance score it was ranked by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrs: Option<f64>,
    /// How the turn's score was made: fused retrievers, neighbour and session shares, and the
    /// speaker, date and event factor ([`turn_scoring::score_turns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signals: Option<turn_scoring::TurnScore>,
}

impl Why {
    /// The best of the episode's and its passages' cosine to the query; 0 when only the text
    /// or graph search found it.
    pub fn best_similarity(&self) -> f64 {
        [self.vector_similarity, self.span_similarity]
            .into_iter()
            .flatten()
            .fold(0.0f64, |best, s| best.max(f64::from(s)))
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct RecallHit {
    pub id: String,
    pub event_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    pub role: String,
    pub content: String,
    pub ts: chrono::DateTime<chrono::Utc>,
    /// The turn's score ([`turn_scoring::score_turns`]); comparable within one recall only.
    /// Results come in ranking order, which for a counting question spreads its best turns
    /// over sessions ([`turn_scoring::order_turns`]), so there the score may rise down the list.
    pub score: f32,
    pub why: Why,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prev_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_id: Option<String>,
    /// A domain-wide memory of the tenant (see [`DOMAIN_USER`]).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub domain: bool,
}

impl RecallHit {
    /// The turn's creation second and importance in thousandths, as the dataflow reads them
    /// for its retention.
    pub fn made(&self) -> (i64, u16) {
        let importance = (self.why.importance.clamp(0.0, 1.0) * 1000.0).round() as u16;
        (self.ts.timestamp(), importance)
    }

    /// Sets the turn's retention R and archived state from `views` at the recall's moment:
    /// `as_of`, else the engine's time.
    pub fn read_retention(
        &mut self,
        views: &engram_dataflows::MemoryViews,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) {
        let at = as_of.map_or(views.engine_time_secs as i64, |t| t.timestamp());
        let (created, importance) = self.made();
        let (trace, archived) = views.memory_state(&self.id, created, importance);
        self.why.retention = Some(trace.retention_at(at));
        self.why.archived = archived;
    }

    /// The episode as a result no retriever has scored yet.
    pub fn from_row(e: &engram_connectors::EpisodeRow) -> Self {
        RecallHit {
            id: e.id.clone(),
            event_id: e.event_id.clone(),
            session: e.session.clone(),
            role: e.role.clone(),
            content: e.content.clone(),
            ts: e.ts,
            score: 0.0,
            why: Why {
                importance: e.importance.map_or(0.5, f64::from),
                ..Why::default()
            },
            prev_id: None,
            next_id: None,
            domain: false,
        }
    }
}

/// A fact the query found in the user's facts table, with its validity from the views.
#[derive(Debug, Clone, Serialize)]
pub struct FactHit {
    /// The fact version's id (an assertion repeating a current value is credited to it).
    pub fact_id: String,
    pub subject: String,
    pub attribute: String,
    pub value: String,
    pub valid_from: chrono::DateTime<chrono::Utc>,
    /// When a newer value closed it; absent while it holds (at the recall's `as_of`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<chrono::DateTime<chrono::Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Valid at the recall's time: current facts come before superseded ones.
    pub current: bool,
    /// Fused score (sum of 1 / (rrf_k + rank) over vector and full-text search).
    pub score: f32,
    pub why: FactWhy,
    /// A domain-wide fact of the tenant (see [`DOMAIN_USER`]), not the user's own.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub domain: bool,
}

impl FactHit {
    /// Current facts before superseded ones, then the best fused score, then the newest.
    fn current_then_best(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.current
            .cmp(&a.current)
            .then(b.score.total_cmp(&a.score))
            .then(b.valid_from.cmp(&a.valid_from))
            .then(a.fact_id.cmp(&b.fact_id))
    }
}

/// Why a fact was chosen: its rank and raw score in each search that found it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FactWhy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vector_similarity: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_rank: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text_bm25: Option<f32>,
}

/// A summary the query found in the user's summaries table.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryHit {
    /// The summary node's id.
    pub id: String,
    pub event_id: String,
    pub ts: chrono::DateTime<chrono::Utc>,
    pub content: String,
    /// `COVERS`: ids of the episodes it summarises.
    pub covers: Vec<String>,
    /// Fused score (sum of 1 / (rrf_k + rank) over vector and full-text search).
    pub score: f32,
    pub why: FactWhy,
    /// A domain-wide summary of the tenant (see [`DOMAIN_USER`]), not the user's own.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub domain: bool,
}

impl SummaryHit {
    /// The best fused score first, then the newest.
    fn best_first(a: &Self, b: &Self) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then(b.ts.cmp(&a.ts))
            .then(a.id.cmp(&b.id))
    }
}

#[derive(Debug, Serialize)]
pub struct RecallResponse {
    pub results: Vec<RecallHit>,
    /// The user's facts closest to the query (vector and full-text search over the facts
    /// table), current ones first; at most `k`.
    #[serde(default)]
    pub facts: Vec<FactHit>,
    /// The user's summaries closest to the query (vector and full-text search over the
    /// summaries table), best first; at most `k`.
    #[serde(default)]
    pub summaries: Vec<SummaryHit>,
    /// The views' timestamp (input-log offset) the neighbours were read at.
    pub views_as_of: u64,
    pub took_ms: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum RecallError {
    #[error("{0}")]
    Invalid(EventError),
    #[error(transparent)]
    Embed(#[from] engram_connectors::EmbedderError),
    #[error(transparent)]
    Store(#[from] engram_connectors::StoreError),
}

pub struct Recall {
    pub store: Arc<EpisodeStore>,
    /// Sentences of long episodes, searched by vector; a hit credits its episode.
    pub passages: Option<Arc<EpisodeStore>>,
    /// Fact assertions (`episode_writer::fact_row`), searched by vector and by words.
    pub facts: Option<Arc<EpisodeStore>>,
    /// Summaries (`episode_writer::summary_row`), searched by vector and by words.
    pub summaries: Option<Arc<EpisodeStore>>,
    pub embedder: Arc<Embedder>,
    pub views: Arc<SharedViews>,
    pub config: RecallConfig,
    /// Each user's conversation speakers, found by an earlier recall.
    pub speakers: speaker_cache::SpeakerCache,
    /// The analysed words of each user's turns, for the in-process BM25.
    pub analysed: analysed_turns::AnalysedTurns,
    /// Where queries' embedding calls wait their turn ([`Recall::embed_texts`]).
    pub embedding_calls: EmbeddingCalls,
}

/// Embedding calls of queries (recall, prompts) in progress at once: the model runs one small
/// call at a time anyway, and a call waiting for it here waits without holding a thread of the
/// bounded blocking pool, which Lance's file reads and appends need (`Config::blocking_threads`).
pub struct EmbeddingCalls(tokio::sync::Semaphore);

/// Calls let through at once: one running on each of the embedder's two model sessions.
const EMBEDDING_CALLS: usize = 2;

impl Default for EmbeddingCalls {
    fn default() -> Self {
        EmbeddingCalls(tokio::sync::Semaphore::new(EMBEDDING_CALLS))
    }
}

impl Recall {
    fn validate(
        &self,
        req: &RecallRequest,
    ) -> Result<(usize, crate::config::TraversalConfig), RecallError> {
        let invalid = |f: &str, r: String| RecallError::Invalid(EventError::new(f, r));
        validate_name(&req.tenant).map_err(|r| invalid("tenant", r))?;
        validate_name(&req.user).map_err(|r| invalid("user", r))?;
        if req.query.trim().is_empty() {
            return Err(invalid("query", "must not be empty".into()));
        }
        if req.query.len() > 16 * 1024 {
            return Err(invalid("query", "must be at most 16384 bytes".into()));
        }
        let k = req.k.unwrap_or(self.config.default_k);
        if k == 0 || k > self.config.max_k {
            return Err(invalid("k", format!("must be 1 to {}", self.config.max_k)));
        }
        let walk = match &req.traversal {
            Some(asked) => self
                .config
                .traversal
                .with(asked)
                .map_err(|(field, reason)| invalid(&field, reason))?,
            None => self.config.traversal.clone(),
        };
        Ok((k, walk))
    }

    pub async fn recall(&self, req: &RecallRequest) -> Result<RecallResponse, RecallError> {
        let started = std::time::Instant::now();
        let (k, walk) = self.validate(req)?;
        let candidates = k * self.config.candidates_per_k.max(1);
        let (vector, turn_vector) = self
            .embed_question(&req.tenant, &req.user, &req.query, req.as_of)
            .await?;
        // the asking user's retrieval preferences, for their own turns and the domain's
        let learned = self.learned_boosts(&req.tenant, &req.user);
        // archived memories only for a recall that asks for them, or looks back (`as_of`)
        let keep_archived = req.include_archived || req.as_of.is_some();
        let own = self.fused_candidates_for(
            &req.tenant,
            &req.user,
            &req.query,
            vector.clone(),
            turn_vector,
            candidates,
            req.as_of,
            keep_archived,
            &learned,
            &walk,
        );
        let domain = async {
            if req.include_domain && req.user != DOMAIN_USER {
                let v = vector.clone();
                self.fused_candidates_for(
                    &req.tenant,
                    DOMAIN_USER,
                    &req.query,
                    v,
                    None,
                    k,
                    req.as_of,
                    keep_archived,
                    &learned,
                    &walk,
                )
                .await
            } else {
                Ok(Vec::new())
            }
        };
        let facts = self.fact_hits(
            &req.tenant,
            &req.user,
            &req.query,
            vector.clone(),
            candidates,
            req.as_of,
        );
        let summaries = self.summary_hits(
            &req.tenant,
            &req.user,
            &req.query,
            vector.clone(),
            candidates,
            req.as_of,
        );
        // the tenant's domain-wide facts and summaries, marked, when asked for
        let domain_facts_and_summaries = async {
            if req.include_domain && req.user != DOMAIN_USER {
                let (t, q) = (&req.tenant, &req.query);
                let facts = self.fact_hits(t, DOMAIN_USER, q, vector.clone(), k, req.as_of);
                let summaries = self.summary_hits(t, DOMAIN_USER, q, vector.clone(), k, req.as_of);
                let (facts, summaries) = tokio::join!(facts, summaries);
                Ok::<_, RecallError>((facts?, summaries?))
            } else {
                Ok((Vec::new(), Vec::new()))
            }
        };
        let (own, domain, facts, summaries, shared) =
            tokio::join!(own, domain, facts, summaries, domain_facts_and_summaries);
        let (mut facts, mut summaries) = (facts?, summaries?);
        let (mut shared_facts, mut shared_summaries) = shared?;
        if !keep_archived {
            let views = self.views.read();
            let archived = |id: &str, made: &chrono::DateTime<chrono::Utc>| {
                views.is_archived(id, made.timestamp(), UNSTATED_IMPORTANCE_MILLI)
            };
            facts.retain(|f| !archived(&f.fact_id, &f.valid_from));
            shared_facts.retain(|f| !archived(&f.fact_id, &f.valid_from));
            summaries.retain(|s| !archived(&s.id, &s.ts));
            shared_summaries.retain(|s| !archived(&s.id, &s.ts));
        }
        // both lists are scored by the same reciprocal-rank fusion, so they merge by score
        facts.extend(shared_facts.into_iter().map(|mut f| {
            f.domain = true;
            f
        }));
        facts.sort_by(FactHit::current_then_best);
        facts.truncate(k);
        summaries.extend(shared_summaries.into_iter().map(|mut h| {
            h.domain = true;
            h
        }));
        summaries.sort_by(SummaryHit::best_first);
        summaries.truncate(k);
        // Both lists are scored alike (shares of their best) and each is in ranking order (a
        // counting question's spread over sessions included): they are merged, not re-sorted.
        let domain = domain?.into_iter().map(|mut h| {
            h.domain = true;
            h
        });
        let mut results = merge_by_score(own?, domain.collect());
        let at = req.as_of.unwrap_or_else(chrono::Utc::now);
        score_relevance(&mut results, at, self.config.recency_scale_days);
        if self.config.rank_by == RankBy::Mrs {
            let views = self.views.read();
            let empty = Default::default();
            let memory = views
                .users
                .get(&(req.tenant.clone(), req.user.clone()))
                .unwrap_or(&empty);
            let weights =
                engram_operators::math::mark::MrsWeights::preset(&self.config.mrs_weights)
                    .unwrap_or_default();
            score_mrs(&mut results, memory, &weights, at);
            results.retain(|r| r.why.mark.is_none_or(|m| m.retained));
            results.sort_by(|a, b| {
                b.why
                    .mrs
                    .unwrap_or(0.0)
                    .total_cmp(&a.why.mrs.unwrap_or(0.0))
                    .then(b.score.total_cmp(&a.score))
                    .then(a.id.cmp(&b.id))
            });
        }
        if self.config.rank_by == RankBy::Relevance {
            results.sort_by(|a, b| {
                b.why
                    .relevance
                    .total_cmp(&a.why.relevance)
                    .then(b.score.total_cmp(&a.score))
                    .then(a.id.cmp(&b.id))
            });
        }
        results.truncate(k);
        let views = self.views.read();
        for r in &mut results {
            r.prev_id = views.prev_id(&r.id);
            r.next_id = views.next_id(&r.id);
        }
        Ok(RecallResponse {
            results,
            facts,
            summaries,
            views_as_of: views.as_of,
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }
}

#[cfg(test)]
mod tests;
