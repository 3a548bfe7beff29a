//! Hybrid recall over a user's episodes: vector (ANN / exact) and full-text (BM25) candidates
//! from Lance, fused by reciprocal rank, with the `NEXT` neighbours from the views.

use crate::config::RecallConfig;
pub use crate::config::{GraphLimits, RankBy};
use engram_connectors::{Embedder, EpisodeHit, EpisodeStore};
use engram_dataflows::SharedViews;
use engram_schemas::{validate_name, EventError};
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
}

/// The user whose memories are the tenant's domain-wide ones: what a tenant writes for this
/// user is explicitly marked as shared with all its users (never with other tenants).
pub const DOMAIN_USER: &str = "_domain";

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
    /// The episode's MARK state, when answers have been built with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mark: Option<engram_operators::memory_marks::MemoryMark>,
    /// With `rank_by = "mrs"`: the normalised memory relevance score it was ranked by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mrs: Option<f64>,
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
    /// Fused score (sum of 1 / (rrf_k + rank) over the retrievers).
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

    /// Best fused score first, then the more recent, then by id (a deterministic order).
    pub fn by_fused_score(a: &RecallHit, b: &RecallHit) -> std::cmp::Ordering {
        b.score
            .total_cmp(&a.score)
            .then(b.ts.cmp(&a.ts))
            .then(a.id.cmp(&b.id))
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
}

impl Recall {
    fn validate(&self, req: &RecallRequest) -> Result<usize, RecallError> {
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
        Ok(k)
    }

    pub async fn recall(&self, req: &RecallRequest) -> Result<RecallResponse, RecallError> {
        let started = std::time::Instant::now();
        let k = self.validate(req)?;
        let candidates = k * self.config.candidates_per_k.max(1);
        let vector = self.embed_query(&req.query).await?;
        let own = self.fused_candidates_for(
            &req.tenant,
            &req.user,
            &req.query,
            vector.clone(),
            candidates,
            req.as_of,
        );
        let domain = async {
            if req.include_domain && req.user != DOMAIN_USER {
                let v = vector.clone();
                self.fused_candidates_for(&req.tenant, DOMAIN_USER, &req.query, v, k, req.as_of)
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
        let (shared_facts, shared_summaries) = shared?;
        let mut facts = facts?;
        // both lists are scored by the same reciprocal-rank fusion, so they merge by score
        facts.extend(shared_facts.into_iter().map(|mut f| {
            f.domain = true;
            f
        }));
        facts.sort_by(FactHit::current_then_best);
        facts.truncate(k);
        let mut summaries = summaries?;
        summaries.extend(shared_summaries.into_iter().map(|mut h| {
            h.domain = true;
            h
        }));
        summaries.sort_by(SummaryHit::best_first);
        summaries.truncate(k);
        let mut results = own?;
        // Both lists are scored by the same reciprocal-rank fusion, so they merge by score.
        results.extend(domain?.into_iter().map(|mut h| {
            h.domain = true;
            h
        }));
        results.sort_by(RecallHit::by_fused_score);
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

impl Recall {
    /// The user's facts found by vector and full-text search of the facts table (the top
    /// `candidates` of each, fused by reciprocal rank), as the views hold them: each version
    /// once, those valid at `as_of` (or now) first, then by fused score. With `as_of`, only
    /// facts asserted by then are searched. Empty without a facts table.
    pub async fn fact_hits(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<FactHit>, RecallError> {
        let Some((by_vector, by_text)) =
            search_both(&self.facts, tenant, user, query, vector, candidates, as_of).await?
        else {
            return Ok(Vec::new());
        };
        let views = self.views.read();
        let Some(memory) = views.users.get(&(tenant.to_string(), user.to_string())) else {
            return Ok(Vec::new());
        };
        // the user's fact versions by id (a row's id is its assertion's: a version's own, or
        // that of an assertion which repeated a value and so made no version of its own)
        let versions: HashMap<&str, (&(String, String), &engram_operators::facts::FactVersion)> =
            memory
                .facts
                .iter()
                .flat_map(|(key, versions)| {
                    versions.iter().map(move |v| (v.fact_id.as_str(), (key, v)))
                })
                .collect();
        let version_of = |hit: &EpisodeHit| -> Option<String> {
            if versions.contains_key(hit.episode.id.as_str()) {
                return Some(hit.episode.id.clone());
            }
            // a repeated assertion: the latest version by then with the same text, compared as
            // the dataflow compares values (case and spacing aside)
            versions
                .values()
                .filter(|(k, v)| {
                    let text = crate::pipeline::episode_writer::fact_text(&k.0, &k.1, &v.value);
                    engram_operators::facts::same_fact_value(&text, &hit.episode.content)
                        && v.valid_from <= hit.episode.ts.timestamp_micros()
                })
                .max_by_key(|(_, v)| v.valid_from)
                .map(|(_, v)| v.fact_id.clone())
        };
        // fact version id → (fused score, why): a version counts once per ranking
        let fused = fuse_two(&by_vector, &by_text, self.config.rrf_k, version_of);
        let at = as_of.map(|t| t.timestamp_micros());
        let time =
            |micros: i64| chrono::DateTime::from_timestamp_micros(micros).unwrap_or_default();
        let mut hits: Vec<FactHit> = fused
            .into_iter()
            .filter_map(|(id, (score, why))| {
                let ((subject, attribute), v) = versions.get(id.as_str())?;
                // as of a time, a version closed later still held then
                let valid_to = v.valid_to.filter(|to| at.is_none_or(|t| *to <= t));
                Some(FactHit {
                    fact_id: id,
                    subject: subject.clone(),
                    attribute: attribute.clone(),
                    value: v.value.clone(),
                    valid_from: time(v.valid_from),
                    valid_to: valid_to.map(time),
                    superseded_by: valid_to.and(v.superseded_by.clone()),
                    current: valid_to.is_none(),
                    score,
                    why,
                    domain: false,
                })
            })
            .collect();
        hits.sort_by(FactHit::current_then_best);
        Ok(hits)
    }

    /// The user's summaries found by vector and full-text search of the summaries table (the
    /// top `candidates` of each, fused by reciprocal rank), best first, each with the episodes
    /// it covers as the views hold them; only summaries present in the views (not erased). With
    /// `as_of`, only summaries written by then are searched. Empty without a summaries table.
    pub async fn summary_hits(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<SummaryHit>, RecallError> {
        let Some((by_vector, by_text)) = search_both(
            &self.summaries,
            tenant,
            user,
            query,
            vector,
            candidates,
            as_of,
        )
        .await?
        else {
            return Ok(Vec::new());
        };
        let views = self.views.read();
        let Some(memory) = views.users.get(&(tenant.to_string(), user.to_string())) else {
            return Ok(Vec::new());
        };
        let fused = fuse_two(&by_vector, &by_text, self.config.rrf_k, |hit| {
            Some(hit.episode.event_id.clone())
        });
        let mut hits: Vec<SummaryHit> = fused
            .into_iter()
            .filter_map(|(event_id, (score, why))| {
                let node = memory.summaries.get(&event_id)?;
                Some(SummaryHit {
                    id: node.id.clone(),
                    event_id: node.event_id.clone(),
                    ts: chrono::DateTime::from_timestamp_micros(node.ts_micros).unwrap_or_default(),
                    content: node.content.clone(),
                    covers: node.covers.clone(),
                    score,
                    why,
                    domain: false,
                })
            })
            .collect();
        hits.sort_by(SummaryHit::best_first);
        Ok(hits)
    }

    /// The user's episodes found by embedding `query` and taking the top `candidates` of vector
    /// search, of full-text search and (when passages are kept) of passage vector search, fused
    /// by reciprocal rank (best first, not truncated). With `as_of`, only episodes whose event
    /// time is at or before it are searched.
    pub async fn fused_candidates(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<RecallHit>, RecallError> {
        let vector = self.embed_query(query).await?;
        self.fused_candidates_for(tenant, user, query, vector, candidates, as_of)
            .await
    }

    /// The query's embedding (on a blocking thread: the model runs for milliseconds).
    pub async fn embed_query(&self, query: &str) -> Result<Vec<f32>, RecallError> {
        let embedder = self.embedder.clone();
        let text = query.to_string();
        Ok(
            tokio::task::spawn_blocking(move || embedder.embed(&[text.as_str()]))
                .await
                .expect("embedding task")?
                .remove(0),
        )
    }

    /// [`Recall::fused_candidates`] with the query already embedded (`vector`).
    pub async fn fused_candidates_for(
        &self,
        tenant: &str,
        user: &str,
        query: &str,
        vector: Vec<f32>,
        candidates: usize,
        as_of: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<Vec<RecallHit>, RecallError> {
        // Graph expansion: episodes naming what the query's entities are connected to.
        let expansion = {
            let views = self.views.read();
            views
                .users
                .get(&(tenant.to_string(), user.to_string()))
                .map(|m| graph_expansion(m, query, &self.config.graph))
                .unwrap_or_default()
        };
        // Each search is a task of its own: a Lance search does much of its work inside its
        // future's poll, so searches polled together on one task take turns on one core (at
        // 1M episodes, vector and full-text search took their sum, not their maximum).
        let vector = Arc::new(vector);
        let by_vector_of = |store: Arc<EpisodeStore>| {
            let (tenant, user, vector) = (tenant.to_string(), user.to_string(), vector.clone());
            tokio::spawn(async move {
                store
                    .search_vector(&tenant, &user, &vector, candidates, as_of)
                    .await
            })
        };
        let by_text_of = |words: String| {
            let (store, tenant, user) = (self.store.clone(), tenant.to_string(), user.to_string());
            tokio::spawn(async move {
                store
                    .search_text(&tenant, &user, &words, candidates, as_of)
                    .await
            })
        };
        let by_vector = by_vector_of(self.store.clone());
        let by_text = by_text_of(query.to_string());
        let by_passage = self.passages.clone().map(by_vector_of);
        let by_graph = (!expansion.is_empty()).then(|| {
            let terms: Vec<&str> = expansion.iter().map(|(e, _)| e.as_str()).collect();
            by_text_of(terms.join(" "))
        });
        let by_vector = by_vector.await.expect("vector search task")?;
        let by_text = by_text.await.expect("full-text search task")?;
        let by_passage = match by_passage {
            Some(task) => passage_ranking(task.await.expect("passage search task")?),
            None => Vec::new(),
        };
        // Episodes found only through a passage are read from the episode store.
        let known: std::collections::HashSet<&str> = by_vector
            .iter()
            .chain(&by_text)
            .map(|h| h.episode.id.as_str())
            .collect();
        let missing: Vec<String> = by_passage
            .iter()
            .filter(|(id, _)| !known.contains(id.as_str()))
            .map(|(id, _)| id.clone())
            .collect();
        let found = self.store.episodes_by_id(tenant, user, &missing).await?;
        let mut fused = fuse(by_vector, by_text, by_passage, found, self.config.rrf_k);
        if let Some(task) = by_graph {
            let hits = task.await.expect("graph expansion search task")?;
            add_graph_hits(&mut fused, hits, &expansion, self.config.rrf_k);
        }
        Ok(fused)
    }
}

/// The top `candidates` rows of `user` in `table` by vector and by full-text search (the two
/// run concurrently); `None` without a table or when the user has no rows in it.
async fn search_both(
    table: &Option<Arc<EpisodeStore>>,
    tenant: &str,
    user: &str,
    query: &str,
    vector: Vec<f32>,
    candidates: usize,
    as_of: Option<chrono::DateTime<chrono::Utc>>,
) -> Result<Option<(Vec<EpisodeHit>, Vec<EpisodeHit>)>, RecallError> {
    let Some(store) = table.clone() else {
        return Ok(None);
    };
    if store.user_row_count(tenant, user) == 0 {
        return Ok(None);
    }
    let by_vector = {
        let (store, tenant, user) = (store.clone(), tenant.to_string(), user.to_string());
        tokio::spawn(async move {
            store
                .search_vector(&tenant, &user, &vector, candidates, as_of)
                .await
        })
    };
    let by_text = store
        .search_text(tenant, user, query, candidates, as_of)
        .await?;
    let by_vector = by_vector.await.expect("vector search task")?;
    Ok(Some((by_vector, by_text)))
}

/// Reciprocal-rank fusion of a vector and a full-text ranking, by `key` (rows it gives `None`
/// are left out): per key the sum of 1 / (rrf_k + rank) over the rankings, each ranking
/// counting a key once at its best rank, with those ranks and raw scores (`why`).
fn fuse_two<K: std::hash::Hash + Eq>(
    by_vector: &[EpisodeHit],
    by_text: &[EpisodeHit],
    rrf_k: f32,
    mut key: impl FnMut(&EpisodeHit) -> Option<K>,
) -> HashMap<K, (f32, FactWhy)> {
    let mut fused: HashMap<K, (f32, FactWhy)> = HashMap::new();
    for (text, ranking) in [(false, by_vector), (true, by_text)] {
        for (rank, hit) in ranking.iter().enumerate() {
            let Some(k) = key(hit) else { continue };
            let (score, why) = fused.entry(k).or_default();
            let (seen, raw) = if text {
                (&mut why.text_rank, &mut why.text_bm25)
            } else {
                (&mut why.vector_rank, &mut why.vector_similarity)
            };
            if seen.is_none() {
                *seen = Some(rank + 1);
                *raw = Some(hit.score);
                *score += 1.0 / (rrf_k + rank as f32 + 1.0);
            }
        }
    }
    fused
}

/// Neighbours per query entity considered as the inner vertices of a 3-edge path: bounds the
/// pair checks to 50² per pair of query entities.
const PATH_FANOUT: usize = 50;

/// The entities the query's entities lead to in the user's co-mention graph, within `limits`,
/// each with why: the `limits.neighbours` heaviest neighbours of each query entity (depth ≥ 1),
/// every entity joining two query entities (depth ≥ 2), and the inner entities of paths of
/// three edges between two query entities (depth 3, through their [`PATH_FANOUT`] heaviest
/// neighbours). Entities whose kind `limits` excludes are neither added nor passed through.
/// The query's own entities are not listed: its words already find them.
pub fn graph_expansion(
    memory: &engram_dataflows::views::UserMemory,
    query: &str,
    limits: &GraphLimits,
) -> Vec<(String, String)> {
    if limits.neighbours == 0 || limits.depth == 0 {
        return Vec::new();
    }
    let allowed = |name: &str| {
        memory.entities.get(name).is_some_and(|stats| {
            limits.entity_kinds.is_empty() || limits.entity_kinds.contains(&stats.kind)
        })
    };
    let in_query: Vec<String> = engram_operators::entities::extract_entities(query)
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| memory.entities.contains_key(name.as_str()))
        .collect();
    if in_query.is_empty() {
        return Vec::new();
    }
    // the allowed neighbours of each query entity, heaviest first
    let mut neighbours: HashMap<&str, Vec<(&str, u64)>> = HashMap::new();
    for (a, b, w) in memory.co_mentions.iter() {
        for (x, y) in [(&**a, &**b), (&**b, &**a)] {
            if in_query.iter().any(|q| q == x) && allowed(y) {
                neighbours.entry(x).or_default().push((y, w));
            }
        }
    }
    for list in neighbours.values_mut() {
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    let mut add = |entity: &str, why: String| {
        if in_query.iter().any(|q| q == entity) {
            return;
        }
        match out.iter_mut().find(|(e, _)| e == entity) {
            Some((_, w)) => {
                w.push_str("; ");
                w.push_str(&why);
            }
            None => out.push((entity.to_string(), why)),
        }
    };
    for q in &in_query {
        if let Some(list) = neighbours.get(q.as_str()) {
            for (n, w) in list.iter().take(limits.neighbours) {
                add(n, format!("co-mentioned with {q} ({w}×)"));
            }
        }
    }
    let co_mentioned = |x: &str, y: &str| memory.co_mentions.weight(x, y).is_some();
    for (i, a) in in_query.iter().enumerate() {
        for b in &in_query[i + 1..] {
            let (Some(na), Some(nb)) = (neighbours.get(a.as_str()), neighbours.get(b.as_str()))
            else {
                continue;
            };
            if limits.depth >= 2 {
                for (c, _) in na {
                    if nb.iter().any(|(d, _)| d == c) {
                        add(c, format!("joins {a} and {b}"));
                    }
                }
            }
            if limits.depth >= 3 {
                for (x, _) in na.iter().take(PATH_FANOUT) {
                    for (y, _) in nb.iter().take(PATH_FANOUT) {
                        if x != y && co_mentioned(x, y) {
                            let why = format!("on the path {a} – {x} – {y} – {b}");
                            add(x, why.clone());
                            add(y, why);
                        }
                    }
                }
            }
        }
    }
    out
}

/// Adds the graph expansion's ranking to fused results and sorts them again. Its reciprocal
/// ranks count half: it is indirect evidence (an episode about a neighbour of what was asked),
/// so it reorders close calls and brings in what the direct retrievers missed, without
/// outvoting them.
pub const GRAPH_WEIGHT: f32 = 0.5;

/// See [`GRAPH_WEIGHT`].
fn add_graph_hits(
    fused: &mut Vec<RecallHit>,
    hits: Vec<EpisodeHit>,
    expansion: &[(String, String)],
    rrf_k: f32,
) {
    for (i, hit) in hits.into_iter().enumerate() {
        let rank = i + 1;
        let content = hit.episode.content.to_lowercase();
        let via: Vec<String> = expansion
            .iter()
            .filter(|(e, _)| content.contains(e.as_str()))
            .map(|(e, why)| format!("{e}: {why}"))
            .collect();
        let pos = match fused.iter().position(|h| h.id == hit.episode.id) {
            Some(p) => p,
            None => {
                fused.push(RecallHit::from_row(&hit.episode));
                fused.len() - 1
            }
        };
        let entry = &mut fused[pos];
        entry.score += GRAPH_WEIGHT / (rrf_k + rank as f32);
        entry.why.graph_rank = Some(rank);
        entry.why.graph_via = via;
    }
    fused.sort_by(RecallHit::by_fused_score);
}

/// Fills each result's recency (at `at`), and its §5 relevance score.
pub fn score_relevance(
    results: &mut [RecallHit],
    at: chrono::DateTime<chrono::Utc>,
    scale_days: f64,
) {
    use engram_operators::math::decay::{recall_score, recency, SECONDS_PER_DAY};
    for r in results {
        let age = (at - r.ts).num_milliseconds() as f64 / 1000.0;
        r.why.recency = recency(age, scale_days * SECONDS_PER_DAY);
        let similarity = r.why.best_similarity();
        r.why.relevance = recall_score(similarity, r.why.recency, r.why.importance);
    }
}

/// Fills each result's MARK state (from `memory`) and its memory relevance score
/// MRS = a·RC + b/(Rec + ε) + c·SS + d·FS (RC: answers it went into, Rec: age in days at `at`,
/// SS: its best cosine to the query, FS: the sign of its correct − incorrect validations),
/// min–max normalised over `results`.
pub fn score_mrs(
    results: &mut [RecallHit],
    memory: &engram_dataflows::views::UserMemory,
    weights: &engram_operators::math::mark::MrsWeights,
    at: chrono::DateTime<chrono::Utc>,
) {
    use engram_operators::math::mark::{memory_relevance_score, normalize_min_max};
    let scores: Vec<f64> = results
        .iter_mut()
        .map(|r| {
            r.why.mark = memory.marks.get(&r.id).copied();
            let age_days = (at - r.ts).num_milliseconds() as f64 / 86_400_000.0;
            let similarity = r.why.best_similarity();
            let (recalls, feedback) = r.why.mark.map_or((0, 0), |m| (m.recalls, m.feedback()));
            memory_relevance_score(weights, recalls, age_days, similarity, feedback)
        })
        .collect();
    for (r, s) in results.iter_mut().zip(normalize_min_max(&scores)) {
        r.why.mrs = Some(s);
    }
}

/// Passage hits (best first) as their episodes' ranking: each episode once, at its best
/// passage, with that passage.
pub fn passage_ranking(hits: Vec<EpisodeHit>) -> Vec<(String, EpisodeHit)> {
    let mut seen = std::collections::HashSet::new();
    hits.into_iter()
        .filter_map(|h| {
            let (episode, _) = h
                .episode
                .id
                .rsplit_once(crate::pipeline::episode_writer::PASSAGE_ID_SEPARATOR)?;
            let episode = episode.to_string();
            seen.insert(episode.clone()).then_some((episode, h))
        })
        .collect()
}

/// Reciprocal rank fusion: score(d) = Σ 1 / (rrf_k + rank(d)) over three rankings (ranks from
/// 1): episode vectors, full text, and best span, where an episode's best span is whichever of
/// the episode itself and its passages is most similar to the query (so an episode without
/// passages, short or not split, competes with its own vector). `episodes` holds the rows of
/// episodes that only a passage found. Ties are broken by the more recent episode, then by id,
/// so the order is deterministic.
pub fn fuse(
    by_vector: Vec<EpisodeHit>,
    by_text: Vec<EpisodeHit>,
    by_passage: Vec<(String, EpisodeHit)>,
    episodes: Vec<engram_connectors::EpisodeRow>,
    rrf_k: f32,
) -> Vec<RecallHit> {
    // episode id → (similarity, passage text when the span is a passage)
    let mut spans: HashMap<String, (f32, Option<String>)> = HashMap::new();
    for h in &by_vector {
        spans.insert(h.episode.id.clone(), (h.score, None));
    }
    for (episode, h) in &by_passage {
        let e = spans
            .entry(episode.clone())
            .or_insert((f32::NEG_INFINITY, None));
        if h.score > e.0 {
            *e = (h.score, Some(h.episode.content.clone()));
        }
    }
    let mut spans: Vec<(String, (f32, Option<String>))> = spans.into_iter().collect();
    spans.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.0.cmp(&b.0)));

    let mut fused: HashMap<String, RecallHit> = HashMap::new();
    let hit_of = RecallHit::from_row;
    for (list, vector) in [(by_vector, true), (by_text, false)] {
        for (i, hit) in list.into_iter().enumerate() {
            let rank = i + 1;
            let entry = fused
                .entry(hit.episode.id.clone())
                .or_insert_with(|| hit_of(&hit.episode));
            entry.score += 1.0 / (rrf_k + rank as f32);
            if vector {
                entry.why.vector_rank = Some(rank);
                entry.why.vector_similarity = Some(hit.score);
            } else {
                entry.why.text_rank = Some(rank);
                entry.why.text_bm25 = Some(hit.score);
            }
        }
    }
    for e in &episodes {
        fused.entry(e.id.clone()).or_insert_with(|| hit_of(e));
    }
    let mut rank = 0;
    for (episode, (similarity, passage)) in spans {
        // an episode deleted since its passage was found is left out
        let Some(entry) = fused.get_mut(&episode) else {
            continue;
        };
        rank += 1;
        entry.score += 1.0 / (rrf_k + rank as f32);
        entry.why.span_rank = Some(rank);
        entry.why.span_similarity = Some(similarity);
        entry.why.passage = passage;
    }
    let mut out: Vec<RecallHit> = fused.into_values().collect();
    out.sort_by(RecallHit::by_fused_score);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use engram_connectors::EpisodeRow;

    #[test]
    fn relevance_is_the_spec_score_of_similarity_recency_and_importance() {
        let at = chrono::DateTime::parse_from_rfc3339("2025-01-08T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut hits = fuse(
            vec![hit("new", "a", 0.8), hit("old", "b", 0.6)],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            60.0,
        );
        hits[0].ts = at; // "new": now
        hits[1].ts = at - chrono::Duration::days(7); // "old": one time scale ago
        score_relevance(&mut hits, at, 7.0);
        assert!((hits[0].why.relevance - (0.7 * 0.8 + 0.2 * 1.0 + 0.1 * 0.5)).abs() < 1e-6);
        let e_minus_1 = 0.367_879_441_171_442;
        assert!((hits[1].why.recency - e_minus_1).abs() < 1e-9);
        assert!((hits[1].why.relevance - (0.7 * 0.6 + 0.2 * e_minus_1 + 0.1 * 0.5)).abs() < 1e-6);
    }

    #[test]
    fn mrs_weighs_recall_count_recency_similarity_and_feedback() {
        use engram_operators::math::mark::MrsWeights;
        use engram_operators::memory_marks::MemoryMark;
        let at = chrono::DateTime::parse_from_rfc3339("2025-01-08T00:00:00Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let mut hits = fuse(
            vec![hit("used", "a", 0.5), hit("fresh", "b", 0.9)],
            Vec::new(),
            Vec::new(),
            Vec::new(),
            60.0,
        );
        // fusion put the more similar first
        assert_eq!(
            (hits[0].id.as_str(), hits[1].id.as_str()),
            ("fresh", "used")
        );
        hits[0].ts = at - chrono::Duration::days(1);
        hits[1].ts = at - chrono::Duration::days(1);
        let mut memory = engram_dataflows::views::UserMemory::default();
        let mark = MemoryMark {
            recalls: 4,
            correct: 3,
            incorrect: 0,
            last_recalled_micros: 0,
            trust_micro: 300_000,
            persistence_micro: 1_000_000,
            retained: true,
        };
        memory.marks.insert("used".into(), mark);
        // a = 0.3 for the recall count: "used" wins despite its lower similarity
        let w = MrsWeights::POPULARITY_SIMILARITY;
        score_mrs(&mut hits, &memory, &w, at);
        let raw = |rc: f64, ss: f64, fs: f64| {
            w.recall_count * rc + w.recency / (1.0 + 0.01) + w.similarity * ss + w.feedback * fs
        };
        assert!(raw(4.0, 0.5, 1.0) > raw(0.0, 0.9, 0.0));
        assert_eq!((hits[0].why.mrs, hits[1].why.mrs), (Some(0.0), Some(1.0)));
        assert_eq!((hits[0].why.mark, hits[1].why.mark), (None, Some(mark)));
        // similarity only: the more similar wins
        score_mrs(&mut hits, &memory, &MrsWeights::SIMILARITY_ONLY, at);
        assert_eq!((hits[0].why.mrs, hits[1].why.mrs), (Some(1.0), Some(0.0)));
    }

    fn limits(neighbours: usize, depth: u8) -> GraphLimits {
        GraphLimits {
            neighbours,
            depth,
            entity_kinds: Vec::new(),
        }
    }

    #[test]
    fn graph_expansion_follows_co_mentions_of_the_query_entities() {
        let mut m = engram_dataflows::views::UserMemory::default();
        for name in ["mara", "lisbon", "porto", "rex", "berlin"] {
            let stats = engram_operators::entities::EntityStats {
                first_seen_micros: 0,
                last_seen_micros: 0,
                mention_count: 1,
                kind: engram_operators::entities::EntityKind::Named,
            };
            m.entities.insert(name.into(), stats);
        }
        for (a, b, w) in [
            ("lisbon", "mara", 3),
            ("mara", "porto", 1),
            ("berlin", "rex", 2),
            ("lisbon", "rex", 1),
            ("berlin", "lisbon", 1),
        ] {
            m.co_mentions.insert(a.into(), b.into(), w);
        }
        let got = graph_expansion(&m, "Where does Mara live now?", &limits(5, 2));
        assert_eq!(
            got,
            vec![
                (
                    "lisbon".to_string(),
                    "co-mentioned with mara (3×)".to_string()
                ),
                (
                    "porto".to_string(),
                    "co-mentioned with mara (1×)".to_string()
                ),
            ]
        );
        // one neighbour per entity at most, and what joins two query entities
        let got = graph_expansion(&m, "Did Rex like Lisbon?", &limits(1, 2));
        let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
        assert_eq!(names, ["berlin", "mara"]);
        assert!(
            got[0].1.contains("joins lisbon and rex") || got[0].1.contains("joins rex and lisbon")
        );
        assert!(graph_expansion(&m, "nothing known here", &limits(5, 2)).is_empty());
    }

    #[test]
    fn graph_expansion_keeps_to_its_depth_and_entity_kinds() {
        use engram_operators::entities::{EntityKind, EntityStats};
        let mut m = engram_dataflows::views::UserMemory::default();
        // ana – clinic – dr ruiz – oslo – bo: the query names ana and bo
        for (name, kind) in [
            ("ana", EntityKind::Named),
            ("clinic", EntityKind::NounPhrase),
            ("dr ruiz", EntityKind::Named),
            ("oslo", EntityKind::Named),
            ("bo", EntityKind::Named),
        ] {
            let stats = EntityStats {
                first_seen_micros: 0,
                last_seen_micros: 0,
                mention_count: 1,
                kind,
            };
            m.entities.insert(name.into(), stats);
        }
        for (a, b) in [
            ("ana", "clinic"),
            ("clinic", "dr ruiz"),
            ("dr ruiz", "oslo"),
        ] {
            m.co_mentions.insert(a.into(), b.into(), 1);
        }
        m.co_mentions.insert("bo".into(), "oslo".into(), 1);
        let names = |m: &engram_dataflows::views::UserMemory, limits: &GraphLimits| {
            let mut got: Vec<String> = graph_expansion(m, "Did Ana meet Bo?", limits)
                .into_iter()
                .map(|(e, _)| e)
                .collect();
            got.sort();
            got
        };
        // depth 1 and 2: the neighbours only (no entity joins ana and bo directly)
        assert_eq!(names(&m, &limits(5, 1)), ["clinic", "oslo"]);
        assert_eq!(names(&m, &limits(5, 2)), ["clinic", "oslo"]);
        // ana – clinic – dr ruiz – oslo – bo is 4 edges: depth 3 finds no path either
        assert_eq!(names(&m, &limits(5, 3)), ["clinic", "oslo"]);
        // with clinic – oslo co-mentioned, ana – clinic – oslo – bo is a 3-edge path
        m.co_mentions.insert("clinic".into(), "oslo".into(), 1);
        let got = graph_expansion(&m, "Did Ana meet Bo?", &limits(5, 3));
        let clinic = &got.iter().find(|(e, _)| e == "clinic").unwrap().1;
        assert!(
            clinic.contains("on the path ana – clinic – oslo – bo"),
            "{clinic}"
        );
        // named entities only: the noun phrase is neither added nor passed through
        let named = GraphLimits {
            entity_kinds: vec![EntityKind::Named],
            ..limits(5, 3)
        };
        assert_eq!(names(&m, &named), ["oslo"]);
        let got = graph_expansion(&m, "Did Ana meet Bo?", &named);
        assert!(!got[0].1.contains("path"), "{got:?}");
        // off
        assert!(names(&m, &limits(0, 3)).is_empty());
    }

    fn row(id: &str, content: &str) -> EpisodeRow {
        EpisodeRow {
            id: id.into(),
            event_id: format!("ev-{id}"),
            tenant: "t".into(),
            user: "u".into(),
            session: Some("s".into()),
            role: "user".into(),
            content: content.into(),
            ts: "2024-01-01T00:00:00Z".parse().unwrap(),
            turn: None,
            importance: None,
            log_offset: 0,
            vector: Vec::new(),
        }
    }

    fn hit(id: &str, content: &str, score: f32) -> EpisodeHit {
        EpisodeHit {
            episode: row(id, content),
            score,
        }
    }

    #[test]
    fn best_span_is_the_closer_of_the_episode_and_its_passages() {
        // "long" matches weakly as a whole but one of its sentences matches well; "short" has
        // no passages and competes with its own vector.
        let by_vector = vec![
            hit("short", "short turn", 0.6),
            hit("long", "long turn", 0.3),
        ];
        let by_passage = passage_ranking(vec![
            hit("long#p2", "the telling sentence", 0.8),
            hit("long#p0", "another sentence", 0.5),
        ]);
        assert_eq!(by_passage.len(), 1, "an episode once, at its best passage");
        let fused = fuse(by_vector, Vec::new(), by_passage, Vec::new(), 60.0);
        let long = fused.iter().find(|h| h.id == "long").unwrap();
        let short = fused.iter().find(|h| h.id == "short").unwrap();
        assert_eq!(long.why.span_rank, Some(1));
        assert_eq!(long.why.span_similarity, Some(0.8));
        assert_eq!(long.why.passage.as_deref(), Some("the telling sentence"));
        assert_eq!(
            long.content, "long turn",
            "the episode, not the passage, is returned"
        );
        assert_eq!(short.why.span_rank, Some(2));
        assert_eq!(short.why.passage, None);
        // long: 1/62 (vector rank 2) + 1/61 (span rank 1); short: 1/61 + 1/62
        assert!((long.score - short.score).abs() < 1e-7);
    }

    #[test]
    fn an_episode_found_only_through_a_passage_comes_back_whole() {
        let by_passage = passage_ranking(vec![hit("e1#p0", "a sentence", 0.7)]);
        let fused = fuse(
            Vec::new(),
            Vec::new(),
            by_passage,
            vec![row("e1", "the whole turn")],
            60.0,
        );
        assert_eq!(fused.len(), 1);
        assert_eq!(fused[0].content, "the whole turn");
        assert!((fused[0].score - 1.0 / 61.0).abs() < 1e-7);
        // a passage whose episode is gone is dropped
        let orphan = passage_ranking(vec![hit("gone#p0", "x", 0.9)]);
        assert!(fuse(Vec::new(), Vec::new(), orphan, Vec::new(), 60.0).is_empty());
    }
}
