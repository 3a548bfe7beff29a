//! Corrections that contradict a preference (SPEC §4.5), and what becomes of the preference.
//!
//! A preference is a promoted cluster of corrections that point one way (their
//! [`Polarity`](crate::correction_clusters::Polarity)). A correction **contradicts** it when it is about the same thing (dequantised
//! cosine to the pattern's centroid ≥ [`CONTRADICTION_COSINE`]), points the other way, and was
//! made after the pattern's newest member: the user now asks for the opposite of what they had
//! taught. What happens then depends on the contexts (a correction's `context`, e.g.
//! "external client") and on confidence:
//!
//! - **split**: the pattern's members name contexts, and every contradicting correction was
//!   made in a context none of them names. Both hold, each in its own contexts: the preference
//!   keeps applying in its contexts, and stops applying in the contradicting ones.
//! - **deactivated**: otherwise, when a contradicting correction is more confident than the
//!   preference. The preference no longer applies anywhere.
//! - **contested**: otherwise. The preference stands (it is the more confident), and the
//!   contradiction is shown for the user to settle.
//!
//! A correction that later agrees with the preference again (joins its cluster) moves the
//! newest member past the contradiction, which then no longer counts: the preference is back.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::{ClusterMeasure, CorrectionPoint, UserKey};
use crate::lifecycle::PreferenceKey;
use crate::math::fusion::cosine_similarity;
use crate::skill_feedback::present_values;

/// How close to a pattern's centroid a correction must be to be about the same thing: the
/// coherence a pattern's own members need on average (SPEC §4.3: coherence > 0.8).
pub const CONTRADICTION_COSINE: f64 = 0.8;

/// What a contradiction does to a preference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    /// It holds in its own contexts only.
    Split,
    /// It no longer applies.
    Deactivated,
    /// It stands; the user has to settle the conflict.
    Contested,
}

/// A contradicted preference.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Contradiction {
    pub resolution: Resolution,
    /// The contradicting corrections, by id, ascending.
    pub by: Vec<String>,
    /// The contexts the preference was taught in (its members' contexts), ascending.
    pub holds_in: Vec<String>,
    /// The contexts the contradicting corrections were made in, ascending, each once.
    pub contradicted_in: Vec<String>,
}

impl Contradiction {
    /// Whether the preference applies to a request made in `context` (trimmed, lowercased; empty
    /// for none): never when deactivated; when split, except in a context it was contradicted
    /// in; when contested, always.
    pub fn applies_in(&self, context: &str) -> bool {
        match self.resolution {
            Resolution::Deactivated => false,
            Resolution::Split => !self.contradicted_in.iter().any(|c| c == context),
            Resolution::Contested => true,
        }
    }
}

/// Whether `point` contradicts the pattern measured by `pattern`: made after its newest
/// member, and
/// - when both ask for something recognised (their
///   [`RequestSet`](crate::requests::RequestSet)s, the pattern's that of its
///   named member, are non-empty): asking for one aspect another way ("be more formal" after a
///   pattern of "be casual", "more detail" after "keep it short"), with or without a negation;
/// - otherwise: the other polarity, embeddings of one length, and dequantised cosine to its
///   centroid ≥ [`CONTRADICTION_COSINE`].
pub fn contradicts(pattern: &ClusterMeasure, point: &CorrectionPoint) -> bool {
    if point.ts_micros <= pattern.latest_micros {
        return false;
    }
    if !pattern.requests.is_empty() && !point.requests.is_empty() {
        return point.requests.conflicts_with(&pattern.requests);
    }
    point.polarity == pattern.polarity.opposite()
        && point.embedding.dims() == pattern.centroid.dims()
        && cosine_similarity(&point.embedding.to_f32(), &pattern.centroid.to_f32())
            >= CONTRADICTION_COSINE
}

/// What the contradicting corrections `by` (non-empty) do to the pattern measured by `pattern`
/// (see the module docs): split when the pattern has contexts and every one of `by` has a
/// context outside them; else deactivated when one of `by` is more confident than the pattern
/// (thousandths compared); else contested.
pub fn resolve(pattern: &ClusterMeasure, by: &[&CorrectionPoint]) -> Contradiction {
    let holds_in = pattern.contexts.clone();
    let mut contradicted_in: Vec<String> = by
        .iter()
        .filter(|p| !p.context.is_empty())
        .map(|p| p.context.clone())
        .collect();
    contradicted_in.sort();
    contradicted_in.dedup();
    let elsewhere = !holds_in.is_empty()
        && by
            .iter()
            .all(|p| !p.context.is_empty() && !holds_in.contains(&p.context));
    let stronger = by
        .iter()
        .any(|p| p.confidence_milli.min(1000) > pattern.confidence_milli);
    let resolution = if elsewhere {
        Resolution::Split
    } else if stronger {
        Resolution::Deactivated
    } else {
        Resolution::Contested
    };
    let mut ids: Vec<String> = by.iter().map(|p| p.correction_id.clone()).collect();
    ids.sort();
    Contradiction {
        resolution,
        by: ids,
        holds_in,
        contradicted_in,
    }
}

/// The contradicted preferences.
///
/// Input: the present corrections as
/// [`crate::correction_clusters::present_corrections`] gives them, and cluster measures `((tenant, user), measure)` as
/// [`crate::correction_clusters::cluster_measures`] produces them (one per cluster).
///
/// Output: `(((tenant, user), cluster_id), contradiction)`, multiplicity 1, for every promoted
/// measure that at least one present correction of the same user [`contradicts`]:
/// [`resolve`] of the measure and all such corrections.
///
/// Cost: a user's corrections are compared with that user's patterns (a handful): a new
/// correction costs one cosine per pattern, a pattern that changes one per correction of its
/// user.
pub fn preference_contradictions<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    measures: VecCollection<'scope, T, (UserKey, ClusterMeasure)>,
) -> VecCollection<'scope, T, (PreferenceKey, Contradiction)>
where
    T: Timestamp + Lattice + Ord,
{
    let points = present.map(|((user, _id), point)| (user, point));
    measures
        .filter(|(_, measure)| measure.promoted)
        .join_map(points, |user, pattern, point| {
            contradicts(pattern, point).then(|| ((user.clone(), pattern.clone()), point.clone()))
        })
        .flat_map(|found| found)
        .reduce(|(_user, pattern), points, output| {
            let by = present_values(points);
            if !by.is_empty() {
                output.push((resolve(pattern, &by), 1));
            }
        })
        .map(|((user, pattern), contradiction)| ((user, pattern.cluster_id), contradiction))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::correction_clusters::{Polarity, QuantisedEmbedding};
    use crate::requests::RequestSet;

    fn pattern(contexts: &[&str], confidence_milli: u16) -> ClusterMeasure {
        ClusterMeasure {
            cluster_id: "c1".into(),
            size: 3,
            coherence_milli: 950,
            span_micros: 86_400_000_000,
            confidence_milli,
            promoted: true,
            centroid: QuantisedEmbedding::from_f32(&[1.0, 0.0, 0.0]),
            latest_micros: 100,
            polarity: Polarity::Towards,
            requests: RequestSet::default(),
            contexts: contexts.iter().map(|c| c.to_string()).collect(),
        }
    }

    fn point(id: &str, ts: i64, polarity: Polarity, context: &str, v: &[f32]) -> CorrectionPoint {
        CorrectionPoint {
            correction_id: id.into(),
            ts_micros: ts,
            confidence_milli: 900,
            polarity,
            requests: RequestSet::default(),
            context: context.into(),
            embedding: QuantisedEmbedding::from_f32(v),
            topics: Vec::new(),
        }
    }

    #[test]
    fn asking_for_an_aspect_the_other_way_contradicts_without_a_negation() {
        use crate::requests::requests_of;
        let casual = ClusterMeasure {
            requests: requests_of("Be more casual."),
            ..pattern(&[], 830)
        };
        // orthogonal to the centroid, and no negation: only what is asked tells
        let said = |text: &str, ts: i64| CorrectionPoint {
            requests: requests_of(text),
            polarity: Polarity::of_instruction(text),
            ..point("x", ts, Polarity::Towards, "", &[0.0, 1.0, 0.0])
        };
        assert!(contradicts(&casual, &said("Be more formal.", 101)));
        assert!(contradicts(
            &casual,
            &said("too casual, sound professional", 101)
        ));
        assert!(!contradicts(&casual, &said("keep it chill", 101)));
        assert!(!contradicts(&casual, &said("use bullet points", 101)));
        assert!(!contradicts(&casual, &said("Be more formal.", 100)));
        let shorter = ClusterMeasure {
            requests: requests_of("keep it short"),
            ..pattern(&[], 830)
        };
        assert!(contradicts(&shorter, &said("give me more detail", 101)));
        // near the centroid and negated, but asking for nothing recognised against a pattern
        // that asks for something: the embedding rule decides
        let near = point("y", 101, Polarity::Away, "", &[0.9, 0.3, 0.0]);
        assert!(contradicts(&shorter, &near));
    }

    /// The opposition rule on known readings: a later correction contradicts a pattern when
    /// they ask for one aspect two ways, whatever their words, negations, embeddings and
    /// polarities; never for a paraphrase or another aspect.
    #[test]
    fn opposite_readings_contradict_and_paraphrases_or_other_aspects_do_not() {
        use crate::requests::{requests_of, Aspect::*, Request, Way::*};
        for (text, aspect, way) in [
            ("be casual", Formality, Less),
            ("Be more formal", Formality, More),
            ("more formall", Formality, More),
            ("less casual pls", Formality, More),
            ("be shorter", Length, Less),
            ("give me much more detail from now on", Length, More),
            ("bullet points", Bullets, More),
            ("use prose", Bullets, Less),
            ("write paragraphs", Bullets, Less),
            ("simpler please", Technical, Less),
            ("more technical", Technical, More),
        ] {
            assert_eq!(requests_of(text).0, [Request { aspect, way }], "{text:?}");
        }
        let taught = |text: &str| ClusterMeasure {
            requests: requests_of(text),
            ..pattern(&[], 830)
        };
        // orthogonal to the centroid and of the pattern's polarity: neither the embedding nor a
        // negation could tell it is an opposite
        let unlike = |text: &str| CorrectionPoint {
            requests: requests_of(text),
            ..point("x", 101, Polarity::Towards, "", &[0.0, 1.0, 0.0])
        };
        for (before, after) in [
            ("be casual", "Be more formal"),
            ("be casual", "more formall"),
            ("be casual", "less casual pls"),
            ("be shorter", "give me much more detail from now on"),
            ("bullet points", "use prose"),
            ("bullet points", "write paragraphs"),
            ("simpler please", "more technical"),
            ("answer in English", "answer in German"),
            (
                "Too long, keep it to three bullet points.",
                "write paragraphs",
            ),
        ] {
            assert!(
                contradicts(&taught(before), &unlike(after)),
                "{before:?} / {after:?}"
            );
        }
        // near the centroid (cos 0.95) and of the other polarity: the embedding rule alone would
        // call it a contradiction
        let alike = |text: &str| CorrectionPoint {
            requests: requests_of(text),
            ..point("x", 101, Polarity::Away, "", &[0.95, 0.3, 0.0])
        };
        for (before, after) in [
            // paraphrases
            ("be casual", "loosen up, talk like a friend"),
            ("be shorter", "way too wordy"),
            ("more formall", "Be more formal"),
            ("less casual pls", "sound professional"),
            ("bullet points", "put it in a list"),
            ("simpler please", "explain it in plain English"),
            ("write paragraphs", "no bullet points"),
            ("Too long, keep it to three bullet points.", "keep it short"),
            // other aspects
            ("be shorter", "Be more formal"),
            ("be casual", "keep it short"),
            ("bullet points", "more technical"),
            ("simpler please", "give me more detail"),
            ("use prose", "no emojis"),
        ] {
            assert!(!requests_of(after).is_empty(), "{after:?}");
            assert!(
                !contradicts(&taught(before), &alike(after)),
                "{before:?} / {after:?}"
            );
        }
    }

    #[test]
    fn only_a_later_opposite_correction_on_the_same_topic_contradicts() {
        let p = pattern(&[], 830);
        let near = [0.9, 0.3, 0.0]; // cos 0.949
        assert!(contradicts(&p, &point("x", 101, Polarity::Away, "", &near)));
        // same direction: it agrees
        assert!(!contradicts(
            &p,
            &point("x", 101, Polarity::Towards, "", &near)
        ));
        // before the newest member: the pattern was taught after it
        assert!(!contradicts(
            &p,
            &point("x", 100, Polarity::Away, "", &near)
        ));
        // another topic: cos 0.707 < 0.8
        assert!(!contradicts(
            &p,
            &point("x", 101, Polarity::Away, "", &[1.0, 1.0, 0.0])
        ));
        // another embedding length
        assert!(!contradicts(
            &p,
            &point("x", 101, Polarity::Away, "", &[1.0, 0.0])
        ));
    }

    #[test]
    fn contexts_split_and_confidence_deactivates() {
        let v = [1.0, 0.0, 0.0];
        let external = point("x1", 200, Polarity::Away, "external client", &v);
        let team = point("x2", 300, Polarity::Away, "team chat", &v);
        let bare = point("x3", 300, Polarity::Away, "", &v);
        // taught in "team chat", contradicted for external clients: both hold, each in its own
        let split = resolve(&pattern(&["team chat"], 830), &[&external]);
        assert_eq!(split.resolution, Resolution::Split);
        assert_eq!(split.contradicted_in, vec!["external client".to_string()]);
        assert!(split.applies_in("team chat") && split.applies_in(""));
        assert!(!split.applies_in("external client"));
        // contradicted in its own context, by a more confident correction (0.9 > 0.83)
        let off = resolve(&pattern(&["team chat"], 830), &[&external, &team]);
        assert_eq!(off.resolution, Resolution::Deactivated);
        assert_eq!(off.by, vec!["x1".to_string(), "x2".to_string()]);
        assert!(!off.applies_in("team chat"));
        // no contexts to split by, and a less confident correction: contested, still applies
        let contested = resolve(&pattern(&[], 950), &[&bare]);
        assert_eq!(contested.resolution, Resolution::Contested);
        assert!(contested.applies_in("anything"));
    }
}
