//! Embeddings as collection data: unit length, components as integers.

use serde::{Deserialize, Serialize};

/// Quantisation scale of [`QuantisedEmbedding`]: a unit-length vector's components, in
/// [−1, 1], become integers in [−10 000, 10 000].
pub const EMBEDDING_SCALE: f32 = 10_000.0;

/// An embedding as collection data: the vector scaled to unit length, each component times
/// [`EMBEDDING_SCALE`] rounded to the nearest integer. All zeros for an all-zero vector.
///
/// The components are shared: a correction's embedding sits in many arrangements (one per LSH
/// band alone), and a clone costs a reference count, not 768 bytes.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QuantisedEmbedding(pub std::sync::Arc<[i16]>);

// By hand: serde's impls for `Arc` need its `rc` feature, which would rebuild every crate
// that uses serde. Written as the plain sequence of components.
impl Serialize for QuantisedEmbedding {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for QuantisedEmbedding {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::<i16>::deserialize(deserializer).map(|v| QuantisedEmbedding(v.into()))
    }
}

impl QuantisedEmbedding {
    /// Quantises `embedding`; components that are not finite count as 0.
    pub fn from_f32(embedding: &[f32]) -> Self {
        let finite = |x: f32| if x.is_finite() { f64::from(x) } else { 0.0 };
        let norm = embedding
            .iter()
            .map(|&x| finite(x) * finite(x))
            .sum::<f64>()
            .sqrt();
        let scale = if norm > 0.0 {
            f64::from(EMBEDDING_SCALE) / norm
        } else {
            0.0
        };
        // |x| / norm ≤ 1, so every rounded component fits an i16.
        QuantisedEmbedding(
            embedding
                .iter()
                .map(|&x| (finite(x) * scale).round() as i16)
                .collect::<Vec<_>>()
                .into(),
        )
    }

    /// The dequantised vector: each component divided by [`EMBEDDING_SCALE`] (unit length up
    /// to rounding, or all zeros).
    pub fn to_f32(&self) -> Vec<f32> {
        self.0
            .iter()
            .map(|&q| f32::from(q) / EMBEDDING_SCALE)
            .collect()
    }

    /// Number of components.
    pub fn dims(&self) -> usize {
        self.0.len()
    }

    /// The cosine of the two integer vectors: their dot product and norms summed exactly in
    /// integers, then one division (0 when either is all zeros). Equal to the cosine of the
    /// dequantised vectors up to float rounding, and free of it: no allocation, no order of
    /// summation to agree on.
    ///
    /// # Panics
    ///
    /// If the lengths differ.
    pub fn cosine(&self, other: &QuantisedEmbedding) -> f64 {
        assert_eq!(
            self.dims(),
            other.dims(),
            "cosine of embeddings of different lengths"
        );
        let (mut dot, mut norm_a, mut norm_b) = (0_i64, 0_i64, 0_i64);
        // each product is below 2³¹ and there are far fewer than 2³² of them
        for (&x, &y) in self.0.iter().zip(other.0.iter()) {
            let (x, y) = (i64::from(x), i64::from(y));
            dot += x * y;
            norm_a += x * x;
            norm_b += y * y;
        }
        if norm_a == 0 || norm_b == 0 {
            return 0.0;
        }
        (dot as f64 / ((norm_a as f64).sqrt() * (norm_b as f64).sqrt())).clamp(-1.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::lsh::tests::gaussian_vector;
    use super::super::lsh::XorShift64;
    use super::*;
    use crate::math::fusion::cosine_similarity;

    #[test]
    fn quantisation_keeps_the_direction() {
        // serialised as the plain list of components, both ways
        let q = QuantisedEmbedding::from_f32(&[3.0, -4.0]);
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(json, "[6000,-8000]");
        assert_eq!(
            serde_json::from_str::<QuantisedEmbedding>(&json).unwrap(),
            q
        );
        let q = QuantisedEmbedding::from_f32(&[3.0, -4.0, 0.0]);
        assert_eq!(q.0[..], [6000, -8000, 0]);
        assert_eq!(q.to_f32(), vec![0.6, -0.8, 0.0]);
        // Length does not matter, only direction.
        assert_eq!(QuantisedEmbedding::from_f32(&[30.0, -40.0, 0.0]), q);
        assert_eq!(QuantisedEmbedding::from_f32(&[0.0, 0.0]).0[..], [0, 0]);
        assert_eq!(
            QuantisedEmbedding::from_f32(&[f32::NAN, 2.0]).0[..],
            [0, 10_000]
        );
        // Rounding moves a cosine by far less than the gap to any threshold that matters.
        let mut rng = XorShift64::new(7);
        for _ in 0..100 {
            let (a, b) = (
                gaussian_vector(&mut rng, 384),
                gaussian_vector(&mut rng, 384),
            );
            let exact = cosine_similarity(&a, &b);
            let (qa, qb) = (
                QuantisedEmbedding::from_f32(&a),
                QuantisedEmbedding::from_f32(&b),
            );
            let quantised = cosine_similarity(&qa.to_f32(), &qb.to_f32());
            assert!((exact - quantised).abs() < 1e-3, "{exact} vs {quantised}");
        }
    }

    #[test]
    fn the_integer_cosine_has_known_values_and_follows_the_float_one() {
        let q = |v: &[i16]| QuantisedEmbedding(v.to_vec().into());
        // (3, 4)·(4, 3) = 24, both of norm 5
        assert_eq!(q(&[3, 4]).cosine(&q(&[4, 3])), 0.96);
        assert_eq!(q(&[3, 4]).cosine(&q(&[-3, -4])), -1.0);
        assert_eq!(q(&[3, 4]).cosine(&q(&[0, 0])), 0.0);
        let mut rng = XorShift64::new(7);
        for _ in 0..200 {
            let mut v = || -> Vec<f32> { (0..384).map(|_| rng.next_gaussian() as f32).collect() };
            let (a, b) = (
                QuantisedEmbedding::from_f32(&v()),
                QuantisedEmbedding::from_f32(&v()),
            );
            let float = cosine_similarity(&a.to_f32(), &b.to_f32());
            assert!(
                (a.cosine(&b) - float).abs() < 1e-6,
                "{} vs {float}",
                a.cosine(&b)
            );
        }
    }
}
