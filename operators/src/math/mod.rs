//! The pure math under the operators: plain functions of their arguments, with no I/O, no
//! clock and no random state (time and uniform draws come in as arguments), std only.
//!
//! - [`decay`]: retention R = e^(−t/S), stability growth, the active / inactive / archived
//!   lifecycle and the exact times of its transitions; blueprint forgetting; recall scores.
//! - [`beta`]: Beta posteriors per (user, bucket, skill), credible intervals, shrinkage to the
//!   population, discounting, Thompson draws; the context bucket hash.
//! - [`mark`]: MARK memory relevance, trust and persistence scores and the retention policy.
//! - [`fusion`]: multimodal confidence fusion, preference confidence, and the
//!   cluster-to-pattern promotion predicate (centroid, coherence, span).
//! - [`skills`]: 16-dimension style vectors, skill selection and exploration, feedback updates,
//!   and the base skills.

pub mod beta;
pub mod decay;
pub mod fusion;
pub mod mark;
pub mod skills;
