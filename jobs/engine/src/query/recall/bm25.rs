//! BM25 over one user's turns, with statistics of that user's turns alone.
//!
//! Lance's full-text index finds candidates in large memories, but its statistics (how rare a
//! word is) are taken over every row of the table, all users and tenants together (so its scores
//! would tell one tenant about another's words), and its analyser stems before it removes stop
//! words, so "was", "this" and "has" are kept (as "wa", "thi", "ha"). Recall scores here every
//! turn of a user it holds whole (most users: see `recall.scored_turns`), a larger user's
//! candidates among themselves, and the facts and summaries found: words are the runs of letters and digits,
//! lower-cased, without [`STOP_WORDS`], stemmed (Snowball English, as Lance and tantivy do).
//! On LoCoMo this analyser was worth 0.04 of recall_any@10 over plain words, and a short stop
//! list (Lucene's 33) 0.026 less.

pub use engram_operators::english_terms::{analyse, STOP_WORDS};
use std::collections::HashMap;

/// Term-frequency saturation.
const K1: f64 = 1.2;
/// Length normalisation.
const B: f64 = 0.75;

/// BM25 scores of `documents` (analysed) for the distinct terms of `query` (analysed), with
/// the statistics of these documents: for each document
/// `Σ_t idf(t) · f·(K1 + 1) / (f + K1·(1 − B + B·len/avg len))`, `f` the count of `t` in it,
/// `idf(t) = ln(1 + (N − n_t + 0.5)/(n_t + 0.5))` (Lucene's), `n_t` the documents holding `t`.
pub fn scores<D: AsRef<[String]>>(documents: &[D], query: &[String]) -> Vec<f64> {
    let n = documents.len() as f64;
    if documents.is_empty() {
        return Vec::new();
    }
    let avg_len = (documents.iter().map(|d| d.as_ref().len()).sum::<usize>() as f64 / n).max(1e-9);
    let mut terms: Vec<&str> = query.iter().map(String::as_str).collect();
    terms.sort_unstable();
    terms.dedup();
    let counts: Vec<HashMap<&str, usize>> = documents
        .iter()
        .map(|d| {
            let mut c: HashMap<&str, usize> = HashMap::new();
            for w in d
                .as_ref()
                .iter()
                .filter(|w| terms.binary_search(&w.as_str()).is_ok())
            {
                *c.entry(w.as_str()).or_default() += 1;
            }
            c
        })
        .collect();
    let idf: Vec<f64> = terms
        .iter()
        .map(|t| {
            let holding = counts.iter().filter(|c| c.contains_key(t)).count() as f64;
            (1.0 + (n - holding + 0.5) / (holding + 0.5)).ln()
        })
        .collect();
    documents
        .iter()
        .zip(&counts)
        .map(|(d, c)| {
            let norm = K1 * (1.0 - B + B * d.as_ref().len() as f64 / avg_len);
            terms
                .iter()
                .zip(&idf)
                .map(|(t, idf)| {
                    let f = c.get(t).copied().unwrap_or(0) as f64;
                    idf * f * (K1 + 1.0) / (f + norm)
                })
                .sum()
        })
        .collect()
}

/// [`scores`], and the documents matching a word of `query` (a score above 0), best first,
/// ties in the order `tie` gives their indexes.
pub fn ranking<D: AsRef<[String]>>(
    documents: &[D],
    query: &[String],
    tie: impl Fn(usize, usize) -> std::cmp::Ordering,
) -> (Vec<f64>, Vec<usize>) {
    let scores = scores(documents, query);
    let mut matched: Vec<usize> = (0..scores.len()).filter(|i| scores[*i] > 0.0).collect();
    matched.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(tie(*a, *b)));
    (scores, matched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_lucene_bm25_with_these_documents_statistics() {
        let docs: Vec<Vec<String>> = [
            "painting a sunset",
            "a sunset",
            "the lake at night, the lake",
        ]
        .iter()
        .map(|d| analyse(d))
        .collect();
        // lengths 2, 1, 3 (avg 2); "sunset" in 2 of 3 documents, "paint" in 1
        let s = scores(&docs, &analyse("Paint the sunset"));
        let idf = |n_t: f64| (1.0 + (3.0 - n_t + 0.5) / (n_t + 0.5)).ln();
        let tf = |f: f64, len: f64| f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len / 2.0));
        let want = [
            idf(1.0) * tf(1.0, 2.0) + idf(2.0) * tf(1.0, 2.0),
            idf(2.0) * tf(1.0, 1.0),
            0.0,
        ];
        for (got, want) in s.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{s:?}");
        }
        // a query word twice counts once; no documents, no scores
        assert_eq!(
            scores(&docs, &analyse("sunset sunset")),
            scores(&docs, &analyse("sunset"))
        );
        assert!(scores::<Vec<String>>(&[], &analyse("sunset")).is_empty());
    }
}
