//! Ranking as pure functions: the candidate turns gathered from the searches and scored
//! ([`turn_scoring`]), reciprocal-rank fusion of facts and summaries, the SPEC §5 relevance
//! score, MARK's memory relevance score, and passages folded into their episodes.

use super::bm25;
use super::turn_scoring::{
    asks_amount_of_money, is_aggregation, known_speakers, named_speaker, order_turns, score_turns,
    states_amount_of_money, QuestionSignals, TurnEvidence, TurnWeights,
};
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

/// A full-text ranking recomputed among the rows two searches of one user's table found
/// (`by_vector` ∪ `by_text`, each row once), with the statistics of those rows alone
/// ([`bm25::scores`]): the rows matching a word of `query`, best first (ties: vector hits in
/// their order, then the others by id), each with its BM25 as `score`. Lance's full-text scores are
/// computed over every tenant's rows; these depend on the asking user's rows only.
pub(super) fn text_ranking_among(
    by_vector: &[EpisodeHit],
    by_text: &[EpisodeHit],
    query: &str,
) -> Vec<EpisodeHit> {
    let mut seen = std::collections::HashSet::new();
    let mut rows: Vec<&EpisodeHit> = by_vector
        .iter()
        .filter(|h| seen.insert(h.episode.id.as_str()))
        .collect();
    // rows only the full-text search found, by id: ties never follow Lance's order
    let mut text_only: Vec<&EpisodeHit> = by_text
        .iter()
        .filter(|h| seen.insert(h.episode.id.as_str()))
        .collect();
    text_only.sort_by(|a, b| a.episode.id.cmp(&b.episode.id));
    rows.extend(text_only);
    let words: Vec<Vec<String>> = rows
        .iter()
        .map(|h| bm25::analyse(&h.episode.content))
        .collect();
    let (scores, matched) = bm25::ranking(&words, &bm25::analyse(query), |a, b| a.cmp(&b));
    matched
        .into_iter()
        .map(|i| EpisodeHit {
            episode: rows[i].episode.clone(),
            score: scores[i] as f32,
        })
        .collect()
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

/// The candidate turns of one recall, each once, with what each search said of it in `why`
/// (rank and raw score in vector search, full-text search, best span, graph expansion) and no
/// score yet: the union of the rankings. The best span of a turn is whichever of the turn
/// itself and its passages is most similar to the query (so a turn without passages competes
/// with its own vector). `episodes` holds the rows of turns that only a passage found; a
/// passage whose turn is in none of the lists (deleted since) is left out. Graph hits add
/// their rows and `graph_via`: which expansion entities the turn names, and why.
pub fn gather_candidates(
    by_vector: Vec<EpisodeHit>,
    by_text: Vec<EpisodeHit>,
    by_passage: Vec<(String, EpisodeHit)>,
    episodes: Vec<engram_connectors::EpisodeRow>,
    by_graph: Vec<EpisodeHit>,
    expansion: &[(String, String)],
) -> Vec<RecallHit> {
    let mut out: Vec<RecallHit> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut entry = |row: &engram_connectors::EpisodeRow, out: &mut Vec<RecallHit>| -> usize {
        *index.entry(row.id.clone()).or_insert_with(|| {
            out.push(RecallHit::from_row(row));
            out.len() - 1
        })
    };
    for (rank, hit) in by_vector.iter().enumerate() {
        let i = entry(&hit.episode, &mut out);
        out[i].why.vector_rank = Some(rank + 1);
        out[i].why.vector_similarity = Some(hit.score);
        // the turn's own vector is its best span until a passage is closer
        out[i].why.span_similarity = Some(hit.score);
    }
    for (rank, hit) in by_text.iter().enumerate() {
        let i = entry(&hit.episode, &mut out);
        out[i].why.text_rank = Some(rank + 1);
        out[i].why.text_bm25 = Some(hit.score);
    }
    for row in &episodes {
        entry(row, &mut out);
    }
    for (rank, hit) in by_graph.iter().enumerate() {
        let i = entry(&hit.episode, &mut out);
        out[i].why.graph_rank = Some(rank + 1);
        out[i].why.graph_bm25 = Some(hit.score);
        out[i].why.graph_via = graph_via(&hit.episode.content, expansion);
    }
    for (episode, hit) in &by_passage {
        let Some(h) = index.get(episode).map(|i| &mut out[*i]) else {
            continue;
        };
        if h.why.span_similarity.is_none_or(|s| hit.score > s) {
            h.why.span_similarity = Some(hit.score);
            h.why.passage = Some(hit.episode.content.clone());
        }
    }
    let mut spans: Vec<usize> = (0..out.len())
        .filter(|i| out[*i].why.span_similarity.is_some())
        .collect();
    let similarity = |i: &usize| out[*i].why.span_similarity.unwrap_or(f32::MIN);
    spans.sort_by(|a, b| {
        similarity(b)
            .total_cmp(&similarity(a))
            .then(out[*a].id.cmp(&out[*b].id))
    });
    for (rank, i) in spans.into_iter().enumerate() {
        out[i].why.span_rank = Some(rank + 1);
    }
    out
}

/// The analysed words of every candidate turn (in the candidates' order) and the graph
/// expansion's `(entity, why)` pairs, for BM25 computed among the candidates.
pub struct InProcessText<'a> {
    pub words: &'a [std::sync::Arc<[String]>],
    pub expansion: &'a [(String, String)],
    /// The question's misspelled words, searched as the terms they were read as.
    pub respelled: &'a [super::respelling::Respelling],
}

/// Sets each hit's text and graph BM25 and ranks from [`bm25::scores`] among the hits: for the
/// question's words, and for the expansion's entities (`graph_via`: the entities its text
/// names), as the full-text searches would with the user's statistics (a misspelled question
/// word counts as the term it was read as, [`super::respelling`]); a hit matching none has
/// neither.
fn score_words_in_process(hits: &mut [RecallHit], question: &str, text: &InProcessText<'_>) {
    debug_assert_eq!(hits.len(), text.words.len());
    // ties: by vector rank, then id (never by the order Lance's full-text search found them)
    let tie: Vec<(usize, String)> = hits
        .iter()
        .map(|h| (h.why.vector_rank.unwrap_or(usize::MAX), h.id.clone()))
        .collect();
    let ranked = |query: &[String]| bm25::ranking(text.words, query, |a, b| tie[a].cmp(&tie[b]));
    // what the full-text searches said (Lance's scores, ranks and graph hits) goes, for every hit
    for h in hits.iter_mut() {
        (h.why.text_rank, h.why.text_bm25) = (None, None);
        (h.why.graph_rank, h.why.graph_bm25) = (None, None);
        h.why.graph_via.clear();
    }
    let mut terms = bm25::analyse(question);
    terms.extend(text.respelled.iter().map(|r| r.meant.clone()));
    let (scores, matched) = ranked(&terms);
    for (rank, i) in matched.into_iter().enumerate() {
        hits[i].why.text_rank = Some(rank + 1);
        hits[i].why.text_bm25 = Some(scores[i] as f32);
    }
    if text.expansion.is_empty() {
        return;
    }
    let entities: Vec<&str> = text.expansion.iter().map(|(e, _)| e.as_str()).collect();
    let (scores, matched) = ranked(&bm25::analyse(&entities.join(" ")));
    for (rank, i) in matched.into_iter().enumerate() {
        let h = &mut hits[i];
        h.why.graph_rank = Some(rank + 1);
        h.why.graph_bm25 = Some(scores[i] as f32);
        h.why.graph_via = graph_via(&h.content, text.expansion);
    }
}

/// The expansion's entities the text names, each as "entity: why it was reached".
fn graph_via(content: &str, expansion: &[(String, String)]) -> Vec<String> {
    let content = content.to_lowercase();
    expansion
        .iter()
        .filter(|(e, _)| content.contains(e.as_str()))
        .map(|(e, why)| format!("{e}: {why}"))
        .collect()
}

/// Two rankings merged into one, each keeping its own order: at every step the head with the
/// higher score goes first (ties: `a`'s).
pub fn merge_by_score(a: Vec<RecallHit>, b: Vec<RecallHit>) -> Vec<RecallHit> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut a, mut b) = (a.into_iter().peekable(), b.into_iter().peekable());
    loop {
        let take_a = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.score >= y.score,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => return out,
        };
        out.extend(if take_a { a.next() } else { b.next() });
    }
}

/// Scores and orders the candidate turns of a question ([`turn_scoring`]), best first, each with
/// its `score` and `why.signals`. A turn's cosine is its best span's similarity; a turn vector
/// search did not return counts the lowest similarity it did return (it ranked below all of
/// them), unless a passage of it is closer. Who speaks is the speaker prefix of the content, or
/// else the role; the known speakers are the prefixes of at least two candidates. `neighbours`
/// gives a turn's previous and next turn ids in its session (the views' `NEXT` edges). With
/// `in_process` (the hits' analysed words: every turn of the user in scope, or a large user's
/// candidates), their BM25 for the question and
/// for the graph expansion's entities is computed among them ([`bm25`]) in place of the
/// full-text searches', and `why.text_rank` and `why.graph_rank` follow it. `asked` is the
/// moment the question is asked, from which its relative time expressions are read.
pub fn rank_turns(
    mut hits: Vec<RecallHit>,
    question: &str,
    asked: chrono::DateTime<chrono::Utc>,
    in_process: Option<InProcessText<'_>>,
    neighbours: impl Fn(&str) -> (Option<String>, Option<String>),
    weights: &TurnWeights,
) -> Vec<RecallHit> {
    use engram_operators::turn_text::{reports_own_event, speaker_prefix};
    if let Some(text) = in_process {
        score_words_in_process(&mut hits, question, &text);
    }
    let floor = hits
        .iter()
        .filter_map(|h| h.why.vector_similarity)
        .map(f64::from)
        .reduce(f64::min)
        .unwrap_or(0.0);
    let index: HashMap<&str, usize> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| (h.id.as_str(), i))
        .collect();
    let speakers: Vec<String> = hits
        .iter()
        .map(|h| speaker_prefix(&h.content).map_or_else(|| h.role.clone(), |(n, _)| n.to_string()))
        .collect();
    let known = known_speakers(hits.iter().map(|h| h.content.as_str()));
    let signals = QuestionSignals {
        speaker: named_speaker(question, known.iter().map(String::as_str)),
        date: crate::query::time_window::named_day(question),
        window: crate::query::time_window::time_window(question, asked),
        aggregation: is_aggregation(question),
        money: asks_amount_of_money(question),
    };
    let evidence: Vec<TurnEvidence> = hits
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let (prev, next) = neighbours(&h.id);
            // a neighbour is the turn's prompt or reply: another speaker's
            let other = |id: Option<String>| {
                let j = *index.get(id?.as_str())?;
                (speakers[j] != speakers[i]).then_some(j)
            };
            TurnEvidence {
                cosine: h
                    .why
                    .vector_similarity
                    .map_or(floor, f64::from)
                    .max(h.why.span_similarity.map_or(f64::MIN, f64::from)),
                bm25: h.why.text_bm25.map_or(0.0, f64::from),
                graph_bm25: h.why.graph_bm25.map_or(0.0, f64::from),
                walk: h.why.walk.as_ref().map_or(0.0, |w| w.score),
                speaker: speakers[i].clone(),
                session: h.session.clone(),
                ts: h.ts,
                prev: other(prev),
                next: other(next),
                own_event: reports_own_event(&h.content),
                // read only where the question asks for an amount
                money: signals.money && states_amount_of_money(&h.content),
                retention: h.why.retention.unwrap_or(1.0),
                learned: h.why.learned.unwrap_or(1.0),
            }
        })
        .collect();
    let scores = score_turns(&evidence, &signals, weights);
    let order = {
        let values: Vec<f64> = scores.iter().map(|s| s.score).collect();
        let sessions: Vec<Option<&str>> = hits.iter().map(|h| h.session.as_deref()).collect();
        order_turns(&values, &sessions, signals.aggregation, weights)
    };
    for (h, s) in hits.iter_mut().zip(&scores) {
        h.score = s.score as f32;
        h.why.signals = Some(*s);
    }
    let mut slots: Vec<Option<RecallHit>> = hits.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}
