//! The official LongMemEval retrieval metrics (src/retrieval of the LongMemEval repository),
//! reimplemented exactly: recall_any@k, recall_all@k and ndcg_any@k over a ranked list of
//! corpus ids and a set of gold ids.

use std::collections::HashSet;

/// The k at which every metric is reported.
pub const KS: [usize; 6] = [1, 3, 5, 10, 30, 50];

/// `rel[0] + Σ_{i≥2} rel[i-1] / log2(i)` over the first `k` relevances.
pub fn dcg(relevances: &[f64], k: usize) -> f64 {
    relevances
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, r)| {
            if i == 0 {
                *r
            } else {
                r / ((i + 1) as f64).log2()
            }
        })
        .sum()
}

/// Scores of one ranking at one k.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetrievalScores {
    pub recall_any: f64,
    pub recall_all: f64,
    pub ndcg_any: f64,
}

/// `ranked` is the system's ranking of the whole corpus (best first), `corpus` every id of the
/// corpus, `gold` the evidence ids.
///
/// recall_any = 1 if any gold id is in the top k; recall_all = 1 if all are (so 1 when there is
/// no gold id); ndcg_any = DCG of the top k's relevances over the DCG of the ideal order (0 when
/// the ideal DCG is 0).
pub fn evaluate(
    ranked: &[String],
    corpus: &[String],
    gold: &HashSet<String>,
    k: usize,
) -> RetrievalScores {
    let top: HashSet<&String> = ranked.iter().take(k).collect();
    let recall_any = gold.iter().any(|g| top.contains(g)) as u8 as f64;
    let recall_all = gold.iter().all(|g| top.contains(g)) as u8 as f64;
    let actual: Vec<f64> = ranked
        .iter()
        .take(k)
        .map(|id| gold.contains(id) as u8 as f64)
        .collect();
    let mut ideal: Vec<f64> = corpus
        .iter()
        .map(|id| gold.contains(id) as u8 as f64)
        .collect();
    ideal.sort_by(|a, b| b.total_cmp(a));
    let ideal_dcg = dcg(&ideal, k);
    let ndcg_any = if ideal_dcg == 0.0 {
        0.0
    } else {
        dcg(&actual, k) / ideal_dcg
    };
    RetrievalScores {
        recall_any,
        recall_all,
        ndcg_any,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn dcg_matches_hand_computed_values() {
        // 1 + 0/1 + 1/log2(3)
        assert!((dcg(&[1.0, 0.0, 1.0], 3) - (1.0 + 1.0 / 3f64.log2())).abs() < 1e-12);
        assert_eq!(
            dcg(&[0.0, 1.0], 2),
            1.0,
            "second position is divided by log2(2) = 1"
        );
        assert_eq!(dcg(&[1.0, 1.0, 1.0], 1), 1.0);
    }

    #[test]
    fn recall_and_ndcg_on_a_small_ranking() {
        let corpus = ids(&["a", "b", "c", "d"]);
        let ranked = ids(&["c", "a", "d", "b"]);
        let gold: HashSet<String> = ids(&["a", "b"]).into_iter().collect();
        let at1 = evaluate(&ranked, &corpus, &gold, 1);
        assert_eq!(
            (at1.recall_any, at1.recall_all, at1.ndcg_any),
            (0.0, 0.0, 0.0)
        );
        let at2 = evaluate(&ranked, &corpus, &gold, 2);
        assert_eq!((at2.recall_any, at2.recall_all), (1.0, 0.0));
        // actual [0, 1] → 1; ideal [1, 1] → 2
        assert!((at2.ndcg_any - 0.5).abs() < 1e-12);
        let at4 = evaluate(&ranked, &corpus, &gold, 4);
        assert_eq!(at4.recall_all, 1.0);
        // actual [0,1,0,1] → 1 + 1/2 = 1.5; ideal [1,1,0,0] → 2
        assert!((at4.ndcg_any - 0.75).abs() < 1e-12);
    }

    #[test]
    fn no_gold_counts_recall_all_one_and_ndcg_zero() {
        let corpus = ids(&["a", "b"]);
        let s = evaluate(&corpus, &corpus, &HashSet::new(), 5);
        assert_eq!((s.recall_any, s.recall_all, s.ndcg_any), (0.0, 1.0, 0.0));
    }
}
