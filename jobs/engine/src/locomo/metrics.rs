//! LoCoMo's turn-level retrieval metrics (as the LoCoMo README of `../shared/locomo/` defines
//! them): recall_any@k and recall_all@k of one ranking against a question's evidence turns, and
//! their means over questions.

use std::collections::HashSet;

/// The k at which the LoCoMo job reports.
pub const KS: [usize; 3] = [5, 10, 50];

/// The category names of questions 1–4 (5, adversarial, has no evidence and is left out).
pub fn category_name(category: u8) -> Option<&'static str> {
    match category {
        1 => Some("multi-hop"),
        2 => Some("temporal"),
        3 => Some("open-domain"),
        4 => Some("single-hop"),
        _ => None,
    }
}

/// recall_any and recall_all of one question at one k.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hits {
    /// 1 when at least one evidence id is among the first k ranked ids.
    pub any: f64,
    /// 1 when every evidence id is (so 1 when there is no evidence id).
    pub all: f64,
}

/// `ranked`: the returned event ids, best first; `evidence`: the question's evidence ids.
pub fn hits_at(ranked: &[String], evidence: &HashSet<String>, k: usize) -> Hits {
    let top: HashSet<&str> = ranked.iter().take(k).map(String::as_str).collect();
    Hits {
        any: evidence.iter().any(|e| top.contains(e.as_str())) as u8 as f64,
        all: evidence.iter().all(|e| top.contains(e.as_str())) as u8 as f64,
    }
}

/// Running sums of one group of questions (overall, or one category).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tally {
    pub questions: usize,
    /// Per k of [`KS`]: Σ recall_any, Σ recall_all.
    pub any: [f64; KS.len()],
    pub all: [f64; KS.len()],
}

impl Tally {
    /// Adds one question's hits, one per k of [`KS`].
    pub fn add(&mut self, per_k: &[Hits; KS.len()]) {
        self.questions += 1;
        for (i, h) in per_k.iter().enumerate() {
            self.any[i] += h.any;
            self.all[i] += h.all;
        }
    }

    /// Mean recall_any and recall_all per k of [`KS`] (0 for an empty group).
    pub fn means(&self) -> [(f64, f64); KS.len()] {
        let n = self.questions.max(1) as f64;
        std::array::from_fn(|i| (self.any[i] / n, self.all[i] / n))
    }
}

/// The evidence ids of a question, as event ids `<sample_id>:<dia_id>`. One annotation of the
/// data writes two ids in one string ("D8:6; D9:17"): it is split at `;`.
pub fn evidence_ids(sample_id: &str, evidence: &[String]) -> HashSet<String> {
    evidence
        .iter()
        .flat_map(|e| e.split(';'))
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(|e| format!("{sample_id}:{e}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn set(v: &[&str]) -> HashSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn any_and_all_at_k() {
        let ranked = ids(&["a", "b", "c", "d", "e", "f"]);
        // evidence c and f: c is 3rd, f is 6th
        let ev = set(&["c", "f"]);
        assert_eq!(hits_at(&ranked, &ev, 2), Hits { any: 0.0, all: 0.0 });
        assert_eq!(hits_at(&ranked, &ev, 3), Hits { any: 1.0, all: 0.0 });
        assert_eq!(hits_at(&ranked, &ev, 5), Hits { any: 1.0, all: 0.0 });
        assert_eq!(hits_at(&ranked, &ev, 6), Hits { any: 1.0, all: 1.0 });
        // k beyond the ranking's length: the whole ranking
        assert_eq!(hits_at(&ranked, &ev, 50), Hits { any: 1.0, all: 1.0 });
        // evidence never returned
        assert_eq!(
            hits_at(&ranked, &set(&["z"]), 50),
            Hits { any: 0.0, all: 0.0 }
        );
        // no evidence: nothing to find, everything found
        assert_eq!(hits_at(&ranked, &set(&[]), 5), Hits { any: 0.0, all: 1.0 });
        assert_eq!(hits_at(&[], &ev, 5), Hits { any: 0.0, all: 0.0 });
    }

    #[test]
    fn tally_means_by_hand() {
        let mut t = Tally::default();
        assert_eq!(t.means(), [(0.0, 0.0); 3]);
        let h = |any: f64, all: f64| Hits { any, all };
        t.add(&[h(1.0, 0.0), h(1.0, 1.0), h(1.0, 1.0)]);
        t.add(&[h(0.0, 0.0), h(1.0, 0.0), h(1.0, 1.0)]);
        t.add(&[h(0.0, 0.0), h(0.0, 0.0), h(1.0, 0.0)]);
        t.add(&[h(1.0, 1.0), h(1.0, 1.0), h(1.0, 1.0)]);
        assert_eq!(t.questions, 4);
        assert_eq!(t.means(), [(0.5, 0.25), (0.75, 0.5), (1.0, 0.75)]);
    }

    #[test]
    fn evidence_ids_are_event_ids_and_split_at_semicolons() {
        let ev = evidence_ids("conv-26", &ids(&["D1:3", "D8:6; D9:17", " "]));
        assert_eq!(ev, set(&["conv-26:D1:3", "conv-26:D8:6", "conv-26:D9:17"]));
    }

    #[test]
    fn categories() {
        assert_eq!(category_name(1), Some("multi-hop"));
        assert_eq!(category_name(2), Some("temporal"));
        assert_eq!(category_name(3), Some("open-domain"));
        assert_eq!(category_name(4), Some("single-hop"));
        assert_eq!(category_name(5), None);
    }
}
