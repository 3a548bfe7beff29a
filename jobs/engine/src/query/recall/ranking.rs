//! Ranking as pure functions: reciprocal-rank fusion, the SPEC §5 relevance score, MARK's
//! memory relevance score, and passages folded into their episodes.

use super::*;

/// Reciprocal-rank fusion of a vector and a full-text ranking, by `key` (rows it gives `None`
/// are left out): per key the sum of 1 / (rrf_k + rank) over the rankings, each ranking
/// counting a key once at its best rank, with those ranks and raw scores (`why`).
pub(super) fn fuse_two<K: std::hash::Hash + Eq>(
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
