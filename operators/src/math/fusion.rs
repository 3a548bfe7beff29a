//! Confidence of corrections and preferences, and the pattern-promotion predicate
//! (SPEC §4; seed 000 §5.5.2 and §5.6).
//!
//! - Multimodal fusion C = Σᵢ wᵢ·cᵢ·aᵢ, clamped to [0, 1], with modality weights
//!   voice > screen > video.
//! - Preference confidence from the corrections behind it, growing with their number and
//!   their confidence: 1 − Πᵢ(1 − k·cᵢ).
//! - Promotion of a correction cluster to a pattern: n ≥ 3, coherence (mean cosine to the
//!   centroid) > 0.8, and a time span ≥ 1 day.
//!
//! Everything works on plain slices; times are f64 seconds.

/// Seconds in one day.
pub const SECONDS_PER_DAY: f64 = 86_400.0;

/// Modality weights wᵢ of the fusion. The seed fixes only the order (voice > screen > video,
/// "configurable"); the defaults 0.5 / 0.3 / 0.2 sum to 1, so fully confident, fully agreeing
/// signals on the three known modalities fuse to exactly 1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModalityWeights {
    /// Weight of "voice" signals (default 0.5).
    pub voice: f64,
    /// Weight of "screen" signals (default 0.3).
    pub screen: f64,
    /// Weight of "video" signals (default 0.2).
    pub video: f64,
    /// Weight of any other modality name (default 0.1: counted, but below every known one).
    pub other: f64,
}

impl Default for ModalityWeights {
    fn default() -> Self {
        ModalityWeights {
            voice: 0.5,
            screen: 0.3,
            video: 0.2,
            other: 0.1,
        }
    }
}

impl ModalityWeights {
    /// The weight of `modality`, matched case-insensitively against "voice", "screen" and
    /// "video"; any other name gets `other`.
    pub fn weight_of(&self, modality: &str) -> f64 {
        if modality.eq_ignore_ascii_case("voice") {
            self.voice
        } else if modality.eq_ignore_ascii_case("screen") {
            self.screen
        } else if modality.eq_ignore_ascii_case("video") {
            self.video
        } else {
            self.other
        }
    }
}

/// One modality's raw signal about a correction, as carried in the event's `signals` map.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModalitySignal<'a> {
    /// Modality name, e.g. "voice".
    pub modality: &'a str,
    /// cᵢ: the modality processor's confidence, expected in [0, 1].
    pub confidence: f64,
    /// aᵢ: agreement with the other modalities, expected in [0, 1].
    pub agreement: f64,
}

/// Fused confidence C = Σᵢ wᵢ·cᵢ·aᵢ over `signals`, clamped to [0, 1]. Terms that are not
/// finite (NaN or infinite inputs) are skipped; no signals give 0. A modality listed twice
/// contributes twice, as the sum is over signals.
pub fn fuse_confidence(signals: &[ModalitySignal<'_>], weights: &ModalityWeights) -> f64 {
    let sum: f64 = signals
        .iter()
        .map(|s| weights.weight_of(s.modality) * s.confidence * s.agreement)
        .filter(|term| term.is_finite())
        .sum();
    sum.clamp(0.0, 1.0)
}

/// Default k, the share of a correction's confidence that turns into evidence for the
/// preference: with k = 0.5, three corrections of confidence 0.9 give 0.83, five give 0.95,
/// and three of confidence 0.6 give 0.66 (below the 0.75 prompt threshold of SPEC §7).
pub const DEFAULT_EVIDENCE_WEIGHT: f64 = 0.5;

/// Preference confidence from the confidences cᵢ of its supporting corrections:
/// 1 − Πᵢ(1 − k·cᵢ), each cᵢ clamped to [0, 1] (NaN → 0) and k to [0, 1].
///
/// Each correction independently removes a share k·cᵢ of the remaining doubt, so confidence
/// grows with support, saturates below 1, never decreases when support is added, and does not
/// depend on order. No support gives 0.
pub fn preference_confidence(correction_confidences: &[f64], evidence_weight: f64) -> f64 {
    correction_confidences.iter().fold(0.0, |current, &c| {
        reinforce_preference_confidence(current, c, evidence_weight)
    })
}

/// One more supporting correction of confidence `correction_confidence`:
/// 1 − (1 − current)·(1 − k·c). Folding this over corrections equals
/// [`preference_confidence`], so the dataflow can update it incrementally.
pub fn reinforce_preference_confidence(
    current: f64,
    correction_confidence: f64,
    evidence_weight: f64,
) -> f64 {
    let k = unit_interval(evidence_weight);
    let c = unit_interval(correction_confidence);
    1.0 - (1.0 - unit_interval(current)) * (1.0 - k * c)
}

/// Clamps to [0, 1]; NaN becomes 0.
fn unit_interval(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 1.0)
    }
}

/// Cosine similarity a·b / (‖a‖‖b‖), in [−1, 1]; 0 when either vector is all zeros.
///
/// # Panics
///
/// If the lengths differ: vectors from different embedders are a bug, not data.
pub fn cosine_similarity(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "cosine of vectors of different lengths");
    let (mut dot, mut norm_a, mut norm_b) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (&x, &y) in a.iter().zip(b) {
        let (x, y) = (f64::from(x), f64::from(y));
        dot += x * y;
        norm_a += x * x;
        norm_b += y * y;
    }
    if norm_a == 0.0 || norm_b == 0.0 {
        return 0.0;
    }
    (dot / (norm_a.sqrt() * norm_b.sqrt())).clamp(-1.0, 1.0)
}

/// Centroid of a cluster: the mean of its vectors after scaling each to unit length (an
/// all-zero vector contributes zeros), so only directions count, as in the cosine coherence.
/// The centroid itself is not re-normalised. `None` for an empty cluster.
///
/// # Panics
///
/// If the vectors' lengths differ.
pub fn centroid<V: AsRef<[f32]>>(vectors: &[V]) -> Option<Vec<f32>> {
    let first = vectors.first()?.as_ref();
    let mut sum = vec![0.0_f64; first.len()];
    for v in vectors {
        let v = v.as_ref();
        assert_eq!(
            v.len(),
            sum.len(),
            "centroid of vectors of different lengths"
        );
        let norm = v
            .iter()
            .map(|&x| f64::from(x) * f64::from(x))
            .sum::<f64>()
            .sqrt();
        if norm > 0.0 {
            for (s, &x) in sum.iter_mut().zip(v) {
                *s += f64::from(x) / norm;
            }
        }
    }
    let n = vectors.len() as f64;
    Some(sum.into_iter().map(|s| (s / n) as f32).collect())
}

/// Coherence of a cluster: the mean cosine similarity of its vectors to their [`centroid`];
/// `None` for an empty cluster. 1 when all vectors point the same way.
///
/// # Panics
///
/// If the vectors' lengths differ.
pub fn coherence<V: AsRef<[f32]>>(vectors: &[V]) -> Option<f64> {
    let center = centroid(vectors)?;
    let total: f64 = vectors
        .iter()
        .map(|v| cosine_similarity(v.as_ref(), &center))
        .sum();
    Some(total / vectors.len() as f64)
}

/// Time span of a cluster: latest minus earliest timestamp (seconds), 0 for fewer than two.
/// Non-finite timestamps are ignored.
pub fn time_span(timestamps: &[f64]) -> f64 {
    let finite = timestamps.iter().copied().filter(|t| t.is_finite());
    let min = finite.clone().fold(f64::INFINITY, f64::min);
    let max = finite.fold(f64::NEG_INFINITY, f64::max);
    if max > min {
        max - min
    } else {
        0.0
    }
}

/// Thresholds a correction cluster must meet to become a pattern (SPEC §4.3).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PromotionCriteria {
    /// Minimum number of corrections, inclusive (default 3).
    pub min_corrections: usize,
    /// Coherence must be strictly above this (default 0.8).
    pub min_coherence: f64,
    /// Minimum span between first and last correction, inclusive, seconds (default 1 day).
    pub min_span_secs: f64,
}

impl Default for PromotionCriteria {
    fn default() -> Self {
        PromotionCriteria {
            min_corrections: 3,
            min_coherence: 0.8,
            min_span_secs: SECONDS_PER_DAY,
        }
    }
}

impl PromotionCriteria {
    /// n ≥ min_corrections and coherence > min_coherence and span ≥ min_span_secs.
    pub fn is_met(&self, corrections: usize, coherence: f64, span_secs: f64) -> bool {
        corrections >= self.min_corrections
            && coherence > self.min_coherence
            && span_secs >= self.min_span_secs
    }
}

/// The promotion measurements of one cluster and the verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClusterAssessment {
    /// Number of corrections.
    pub corrections: usize,
    /// Mean cosine to the centroid (0 for an empty cluster).
    pub coherence: f64,
    /// Latest minus earliest correction time, seconds.
    pub span_secs: f64,
    /// Whether the criteria are met.
    pub promotable: bool,
}

/// Measures a cluster given its corrections' embeddings and timestamps (seconds; the two
/// slices describe the same corrections, the count is taken from the embeddings) and applies
/// `criteria`.
///
/// # Panics
///
/// If the embeddings' lengths differ.
pub fn assess_cluster<V: AsRef<[f32]>>(
    embeddings: &[V],
    timestamps: &[f64],
    criteria: &PromotionCriteria,
) -> ClusterAssessment {
    let corrections = embeddings.len();
    let coherence = coherence(embeddings).unwrap_or(0.0);
    let span_secs = time_span(timestamps);
    ClusterAssessment {
        corrections,
        coherence,
        span_secs,
        promotable: criteria.is_met(corrections, coherence, span_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    fn signal(modality: &str, confidence: f64, agreement: f64) -> ModalitySignal<'_> {
        ModalitySignal {
            modality,
            confidence,
            agreement,
        }
    }

    #[test]
    fn default_weights_order_voice_screen_video() {
        let w = ModalityWeights::default();
        assert!(w.weight_of("voice") > w.weight_of("screen"));
        assert!(w.weight_of("screen") > w.weight_of("video"));
        assert!(w.weight_of("video") > w.weight_of("gesture"));
        assert_eq!(w.weight_of("VOICE"), 0.5);
        assert_eq!(w.weight_of("eye-tracking"), 0.1);
    }

    #[test]
    fn fusion_weighted_sum() {
        let w = ModalityWeights::default();
        // 0.5·0.9·1.0 + 0.3·0.8·0.5 = 0.45 + 0.12
        let c = fuse_confidence(&[signal("voice", 0.9, 1.0), signal("screen", 0.8, 0.5)], &w);
        assert!(close(c, 0.57, 1e-15), "{c}");
        // 0.2·0.5·0.5 + 0.1·1·1 = 0.05 + 0.1
        let c = fuse_confidence(&[signal("video", 0.5, 0.5), signal("text", 1.0, 1.0)], &w);
        assert!(close(c, 0.15, 1e-15), "{c}");
        assert_eq!(fuse_confidence(&[], &w), 0.0);
    }

    #[test]
    fn fusion_is_clamped() {
        let w = ModalityWeights::default();
        let all = [
            signal("voice", 1.0, 1.0),
            signal("screen", 1.0, 1.0),
            signal("video", 1.0, 1.0),
        ];
        assert!(close(fuse_confidence(&all, &w), 1.0, 1e-15));
        let over = [
            signal("voice", 1.0, 1.0),
            signal("screen", 1.0, 1.0),
            signal("video", 1.0, 1.0),
            signal("text", 1.0, 1.0),
        ];
        assert_eq!(fuse_confidence(&over, &w), 1.0);
        let heavy = ModalityWeights { voice: 3.0, ..w };
        assert_eq!(fuse_confidence(&[signal("voice", 0.9, 0.9)], &heavy), 1.0);
        assert_eq!(fuse_confidence(&[signal("voice", -0.8, 1.0)], &w), 0.0);
        assert!(close(
            fuse_confidence(
                &[signal("voice", f64::NAN, 1.0), signal("video", 1.0, 1.0)],
                &w
            ),
            0.2,
            1e-15
        ));
    }

    #[test]
    fn preference_confidence_grows_and_saturates() {
        // 1 − (1 − 0.5·0.9)³ = 1 − 0.55³ = 0.833625
        assert!(close(
            preference_confidence(&[0.9, 0.9, 0.9], 0.5),
            0.833_625,
            1e-12
        ));
        // 1 − 0.55⁵ = 0.9496715625
        assert!(close(
            preference_confidence(&[0.9; 5], 0.5),
            0.949_671_562_5,
            1e-12
        ));
        // 1 − 0.7³ = 0.657
        assert!(close(preference_confidence(&[0.6; 3], 0.5), 0.657, 1e-12));
        assert_eq!(preference_confidence(&[], 0.5), 0.0);
        let mut previous = 0.0;
        for n in 1..50 {
            let c = preference_confidence(&vec![0.8; n], DEFAULT_EVIDENCE_WEIGHT);
            assert!(c > previous && c < 1.0 + 1e-15);
            previous = c;
        }
        // Higher correction confidence gives higher preference confidence.
        assert!(preference_confidence(&[0.9, 0.9], 0.5) > preference_confidence(&[0.5, 0.5], 0.5));
        // Out-of-range confidences are clamped.
        assert_eq!(preference_confidence(&[1.7], 0.5), 0.5);
    }

    #[test]
    fn incremental_equals_batch() {
        let cs = [0.3, 0.95, 0.6, 0.8];
        let incremental = cs
            .iter()
            .fold(0.0, |acc, &c| reinforce_preference_confidence(acc, c, 0.4));
        assert_eq!(incremental, preference_confidence(&cs, 0.4));
        let reversed: Vec<f64> = cs.iter().rev().copied().collect();
        assert!(close(
            preference_confidence(&reversed, 0.4),
            incremental,
            1e-15
        ));
    }

    #[test]
    fn cosine_known_values() {
        assert!(close(
            cosine_similarity(&[1.0, 0.0], &[0.0, 1.0]),
            0.0,
            1e-15
        ));
        assert!(close(
            cosine_similarity(&[1.0, 2.0], &[2.0, 4.0]),
            1.0,
            1e-12
        ));
        assert!(close(
            cosine_similarity(&[1.0, 0.0], &[-3.0, 0.0]),
            -1.0,
            1e-15
        ));
        // (1,1)·(1,0) / √2 = 1/√2
        assert!(close(
            cosine_similarity(&[1.0, 1.0], &[1.0, 0.0]),
            std::f64::consts::FRAC_1_SQRT_2,
            1e-7
        ));
        assert_eq!(cosine_similarity(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }

    #[test]
    fn centroid_and_coherence() {
        // Unit vectors (1,0) and (0,1): centroid (0.5, 0.5), each at cosine 1/√2 to it.
        let c = centroid(&[vec![1.0_f32, 0.0], vec![0.0, 1.0]]).unwrap();
        assert_eq!(c, vec![0.5, 0.5]);
        let coh = coherence(&[vec![1.0_f32, 0.0], vec![0.0, 1.0]]).unwrap();
        assert!(close(coh, std::f64::consts::FRAC_1_SQRT_2, 1e-7), "{coh}");
        // Length does not matter: (10, 0) and (0, 1) give the same centroid.
        let c = centroid(&[vec![10.0_f32, 0.0], vec![0.0, 1.0]]).unwrap();
        assert_eq!(c, vec![0.5, 0.5]);
        // Parallel vectors are perfectly coherent.
        let coh = coherence(&[[1.0_f32, 1.0], [2.0, 2.0], [0.5, 0.5]]).unwrap();
        assert!(close(coh, 1.0, 1e-7));
        assert_eq!(centroid::<Vec<f32>>(&[]), None);
        assert_eq!(coherence::<Vec<f32>>(&[]), None);
    }

    #[test]
    fn span() {
        assert_eq!(time_span(&[300.0, 100.0, 200.0]), 200.0);
        assert_eq!(time_span(&[5.0]), 0.0);
        assert_eq!(time_span(&[]), 0.0);
        assert_eq!(time_span(&[1.0, f64::NAN, 4.0]), 3.0);
    }

    #[test]
    fn promotion_predicate_boundaries() {
        let k = PromotionCriteria::default();
        let day = SECONDS_PER_DAY;
        assert!(k.is_met(3, 0.81, day));
        assert!(!k.is_met(2, 0.99, 10.0 * day));
        assert!(!k.is_met(3, 0.8, day), "coherence must exceed 0.8 strictly");
        assert!(!k.is_met(3, 0.9, day - 1.0));
        assert!(k.is_met(10, 0.9, 30.0 * day));
    }

    #[test]
    fn assess_cluster_end_to_end() {
        let k = PromotionCriteria::default();
        let day = SECONDS_PER_DAY;
        // Three nearly parallel corrections over two days: promotable.
        let tight = [
            vec![1.0_f32, 0.1, 0.0],
            vec![1.0, 0.0, 0.1],
            vec![0.9, 0.1, 0.1],
        ];
        let a = assess_cluster(&tight, &[0.0, day, 2.0 * day], &k);
        assert_eq!(a.corrections, 3);
        assert!(a.coherence > 0.95, "{}", a.coherence);
        assert_eq!(a.span_secs, 2.0 * day);
        assert!(a.promotable);
        // Same corrections within one hour: not yet.
        assert!(!assess_cluster(&tight, &[0.0, 1800.0, 3600.0], &k).promotable);
        // Orthogonal corrections: coherence 1/√3 ≈ 0.577, not promotable.
        let loose = [
            vec![1.0_f32, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
        ];
        let a = assess_cluster(&loose, &[0.0, day, 2.0 * day], &k);
        assert!(
            close(a.coherence, 1.0 / 3f64.sqrt(), 1e-6),
            "{}",
            a.coherence
        );
        assert!(!a.promotable);
    }
}
