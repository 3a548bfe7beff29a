//! Candidate pairs of [`similarity_links`](super::similarity_links): random-hyperplane LSH.
//!
//! # Random hyperplanes
//!
//! A hyperplane through the origin with a Gaussian normal puts two vectors at angle θ on the
//! same side with probability p = 1 − θ/π. Each embedding gets [`LSH_BANDS`] = 40 bands of
//! [`LSH_ROWS_PER_BAND`] = 10 such sign bits; two corrections are a candidate pair when some
//! band has all 10 bits equal, which happens with probability 1 − (1 − p¹⁰)⁴⁰
//! ([`lsh_candidate_probability`]). At the link threshold, cosine 0.85: θ = 0.5548 rad,
//! p = 0.82340, p¹⁰ = 0.14326, so a pair is a candidate with probability **0.99794**; at cosine
//! 0.9 it is 0.99993. The price of that recall is candidates that fail the exact check: pairs
//! at cosine 0.7 are candidates with probability 0.891, at 0.5 with 0.503, and unrelated
//! (orthogonal) ones with 0.038. Fewer bands would cut the 40 bucket records per correction,
//! and longer bands the wasted candidates, but both cost recall: 10 bits × 30 bands give only
//! 0.9903 at 0.85, and 12-bit bands need 48 bands for 0.9926. 10 × 40 keeps a margin above
//! 0.99 at modest cost.
//!
//! The hyperplanes are fixed forever (seed [`LSH_SEED`], a xorshift generator, one set per
//! embedding length), so buckets do not depend on the run, the worker or a crate version, and a
//! from-scratch computation that uses the same [`LshHyperplanes`] finds exactly the same links.

use super::QuantisedEmbedding;
use serde::{Deserialize, Serialize};

/// Number of LSH bands; a pair is a candidate when any band matches (see the module docs).
pub const LSH_BANDS: usize = 40;

/// Sign bits per LSH band; a band matches when all of them agree.
pub const LSH_ROWS_PER_BAND: usize = 10;

/// Seed of the xorshift generator that draws the hyperplanes. Changing it changes every
/// bucket, so it is part of the definition of [`similarity_links`].
pub const LSH_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// Probability that two vectors at cosine `cosine` become a candidate pair:
/// 1 − (1 − pᴿ)ᴮ with p = 1 − arccos(cosine)/π, R = [`LSH_ROWS_PER_BAND`], B = [`LSH_BANDS`]
/// (0.99794 at cosine 0.85). The probability is over the draw of the hyperplanes; with the
/// hyperplanes fixed, it is the fraction of such pairs found, over pairs in random directions.
pub fn lsh_candidate_probability(cosine: f64) -> f64 {
    let angle = cosine.clamp(-1.0, 1.0).acos();
    let bit_agrees = 1.0 - angle / std::f64::consts::PI;
    let band_agrees = bit_agrees.powi(LSH_ROWS_PER_BAND as i32);
    1.0 - (1.0 - band_agrees).powi(LSH_BANDS as i32)
}

/// One LSH bucket: band `band` of an embedding of length `dims` has the sign bits `signature`
/// (row 0 in the highest of the low [`LSH_ROWS_PER_BAND`] bits). Embeddings of different
/// lengths never share a bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct LshBucket {
    pub band: u16,
    pub dims: u32,
    pub signature: u32,
}

/// The fixed random hyperplanes for embeddings of one length: [`LSH_BANDS`] ×
/// [`LSH_ROWS_PER_BAND`] normals with independent standard-normal components, drawn in order
/// (band, row, component) from a xorshift generator seeded with [`LSH_SEED`].
#[derive(Debug, Clone, PartialEq)]
pub struct LshHyperplanes {
    dims: usize,
    /// Band-major, then row, then component.
    normals: Vec<f32>,
}

impl LshHyperplanes {
    /// The hyperplanes for embeddings of length `dims` (the same on every call).
    pub fn new(dims: usize) -> Self {
        let mut rng = XorShift64::new(LSH_SEED);
        let normals = (0..LSH_BANDS * LSH_ROWS_PER_BAND * dims)
            .map(|_| rng.next_gaussian() as f32)
            .collect();
        LshHyperplanes { dims, normals }
    }

    /// Embedding length these hyperplanes are for.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The [`LSH_BANDS`] buckets of `embedding`, one per band in band order. A row's bit is 1
    /// when the dot product of the embedding with the row's normal is ≥ 0, accumulated in
    /// eight f32 lanes (components i, i + 8, … in lane i mod 8) that are then added in lane
    /// order: the same on every call, and vectorised (400 rows of 384 products each).
    ///
    /// # Panics
    ///
    /// If `embedding.len()` is not [`Self::dims`].
    pub fn buckets(&self, embedding: &[f32]) -> Vec<LshBucket> {
        assert_eq!(
            embedding.len(),
            self.dims,
            "LSH hyperplanes of another embedding length"
        );
        (0..LSH_BANDS)
            .map(|band| {
                let signature = (0..LSH_ROWS_PER_BAND).fold(0_u32, |bits, row| {
                    let start = (band * LSH_ROWS_PER_BAND + row) * self.dims;
                    let normal = &self.normals[start..start + self.dims];
                    (bits << 1) | u32::from(lane_dot(normal, embedding) >= 0.0)
                });
                LshBucket {
                    band: band as u16,
                    dims: self.dims as u32,
                    signature,
                }
            })
            .collect()
    }
}

/// The dot product of two vectors of one length, in eight lanes as
/// [`LshHyperplanes::buckets`] describes.
fn lane_dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut lanes = [0.0_f32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (a_rest, b_rest) = (a_chunks.remainder(), b_chunks.remainder());
    for (x, y) in a_chunks.zip(b_chunks) {
        for i in 0..LANES {
            lanes[i] += x[i] * y[i];
        }
    }
    for (i, (x, y)) in a_rest.iter().zip(b_rest).enumerate() {
        lanes[i] += x * y;
    }
    lanes.iter().sum()
}

/// The LSH buckets of one embedding (dequantised), as [`LshHyperplanes::buckets`]. Draws the
/// hyperplanes on every call; to bucket many embeddings, keep an [`LshHyperplanes`].
pub fn lsh_buckets(embedding: &QuantisedEmbedding) -> Vec<LshBucket> {
    LshHyperplanes::new(embedding.dims()).buckets(&embedding.to_f32())
}

/// Marsaglia's xorshift64: plenty for hyperplane directions, and written out here so the
/// hyperplanes never change with a random-number crate's version.
pub(super) struct XorShift64(u64);

impl XorShift64 {
    pub(super) fn new(seed: u64) -> Self {
        // The all-zero state is a fixed point of xorshift.
        XorShift64(seed.max(1))
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in (0, 1], never 0, so its logarithm is finite.
    fn next_unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1_u64 << 53) as f64
    }

    /// Standard normal draw (Box–Muller). Gaussian components make the normal's direction
    /// uniform on the sphere, which is what gives P(same side) = 1 − θ/π.
    pub(super) fn next_gaussian(&mut self) -> f64 {
        let radius = (-2.0 * self.next_unit().ln()).sqrt();
        radius * (std::f64::consts::TAU * self.next_unit()).cos()
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::super::{is_link, LINK_COSINE_THRESHOLD};
    use super::*;

    /// Deterministic test vectors without a random crate in the library's tests.
    pub(in crate::correction_clusters) fn gaussian_vector(
        rng: &mut XorShift64,
        dims: usize,
    ) -> Vec<f32> {
        (0..dims).map(|_| rng.next_gaussian() as f32).collect()
    }
    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }
    /// A unit vector at exactly cosine `cosine` to the unit vector `a`, in a random direction.
    fn at_cosine(rng: &mut XorShift64, a: &[f32], cosine: f32) -> Vec<f32> {
        let r = gaussian_vector(rng, a.len());
        let along: f32 = r.iter().zip(a).map(|(x, y)| x * y).sum();
        let orthogonal = unit(
            &r.iter()
                .zip(a)
                .map(|(x, y)| x - along * y)
                .collect::<Vec<_>>(),
        );
        let sine = (1.0 - cosine * cosine).sqrt();
        a.iter()
            .zip(&orthogonal)
            .map(|(x, o)| cosine * x + sine * o)
            .collect()
    }
    fn share_a_bucket(h: &LshHyperplanes, a: &QuantisedEmbedding, b: &QuantisedEmbedding) -> bool {
        let (a, b) = (h.buckets(&a.to_f32()), h.buckets(&b.to_f32()));
        a.iter().zip(&b).any(|(x, y)| x == y)
    }

    #[test]
    fn lane_dot_is_the_dot_product() {
        let mut rng = XorShift64::new(11);
        for len in [0, 1, 7, 8, 9, 384, 385] {
            let a: Vec<f32> = (0..len).map(|_| rng.next_gaussian() as f32).collect();
            let b: Vec<f32> = (0..len).map(|_| rng.next_gaussian() as f32).collect();
            let exact: f64 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| f64::from(x) * f64::from(y))
                .sum();
            assert!(
                (f64::from(lane_dot(&a, &b)) - exact).abs() < 1e-4,
                "length {len}"
            );
        }
        assert_eq!(lane_dot(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]), 32.0);
    }

    #[test]
    fn hyperplanes_are_fixed_and_independent() {
        let h = LshHyperplanes::new(16);
        assert_eq!(h, LshHyperplanes::new(16));
        assert_eq!(h.dims(), 16);
        assert_eq!(h.normals.len(), LSH_BANDS * LSH_ROWS_PER_BAND * 16);
        // Standard-normal components: mean ≈ 0, variance ≈ 1 over 6 400 draws.
        let n = h.normals.len() as f64;
        let mean = h.normals.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let variance = h
            .normals
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / n;
        assert!(mean.abs() < 0.05, "{mean}");
        assert!((variance - 1.0).abs() < 0.1, "{variance}");
        let v = QuantisedEmbedding::from_f32(&[1.0; 16]);
        let buckets = lsh_buckets(&v);
        assert_eq!(buckets, h.buckets(&v.to_f32()));
        assert_eq!(buckets.len(), LSH_BANDS);
        assert!(buckets
            .iter()
            .enumerate()
            .all(|(band, b)| b.band as usize == band
                && b.dims == 16
                && b.signature < 1 << LSH_ROWS_PER_BAND));
        // Different bands use different hyperplanes, so their signatures are not all equal.
        assert!(buckets.iter().any(|b| b.signature != buckets[0].signature));
    }

    #[test]
    fn candidate_probability_of_the_parameters() {
        let at_threshold = lsh_candidate_probability(LINK_COSINE_THRESHOLD);
        assert!((at_threshold - 0.99794).abs() < 5e-6, "{at_threshold}");
        assert!(lsh_candidate_probability(0.9) > 0.9999);
        assert!(lsh_candidate_probability(0.0) < 0.04);
        assert_eq!(lsh_candidate_probability(1.0), 1.0);
    }

    #[test]
    fn lsh_finds_99_percent_of_pairs_at_the_threshold() {
        // The hardest linked pairs, cosine in [0.85, 0.87], in random directions; the expected
        // recall is ≈ 0.998, and does not depend on the embedding length.
        let h = LshHyperplanes::new(64);
        let mut rng = XorShift64::new(2024);
        let pairs = 1_500;
        let mut linked = 0;
        let mut found = 0;
        for i in 0..pairs {
            let a = unit(&gaussian_vector(&mut rng, 64));
            let b = at_cosine(&mut rng, &a, 0.85 + 0.02 * (i as f32 / pairs as f32));
            let (qa, qb) = (
                QuantisedEmbedding::from_f32(&a),
                QuantisedEmbedding::from_f32(&b),
            );
            if is_link(&qa, &qb, LINK_COSINE_THRESHOLD) {
                linked += 1;
                found += usize::from(share_a_bucket(&h, &qa, &qb));
            }
        }
        assert!(linked > pairs * 9 / 10, "{linked} pairs kept cosine ≥ 0.85");
        let recall = found as f64 / linked as f64;
        assert!(recall >= 0.99, "recall {recall} over {linked} pairs");
    }

    #[test]
    fn lsh_rarely_pairs_unrelated_corrections() {
        // Independent random directions are nearly orthogonal: expected rate ≈ 0.038.
        let h = LshHyperplanes::new(64);
        let mut rng = XorShift64::new(99);
        let pairs = 1_500;
        let candidates = (0..pairs)
            .filter(|_| {
                let a = QuantisedEmbedding::from_f32(&gaussian_vector(&mut rng, 64));
                let b = QuantisedEmbedding::from_f32(&gaussian_vector(&mut rng, 64));
                share_a_bucket(&h, &a, &b)
            })
            .count();
        let rate = candidates as f64 / pairs as f64;
        assert!(rate < 0.06, "candidate rate {rate}");
    }
}
