//! Clusters of a user's similar corrections, and their promotion to patterns (SPEC §4.2–4.3).
//!
//! - [`similarity_links`]: pairs of a user's corrections that ask for the same thing: one and
//!   the same set of recognised requests ([`crate::requests`]), or, where nothing is
//!   recognised, embeddings at cosine ≥ the model's threshold ([`LINK_COSINE_THRESHOLD`] for
//!   the shipped one), looked for among the candidate pairs that random-hyperplane LSH puts in
//!   a common bucket ([`LshHyperplanes`]), or, where nothing is recognised or only
//!   circumstances of the user's are (a diet, pets), each to its nearest correction among those
//!   that name a topic term of its own ([`topic_links`]);
//!   corrections of one group are linked through the smallest of them only, which keeps the
//!   components. So two corrections that ask for different ways of answering (e.g. opposite
//!   ones) are never in one cluster, not even through a chain of others; only circumstances,
//!   which topic terms link as they would if unread, can share one.
//! - [`correction_clusters`]: the connected components of the link graph, each named by its
//!   smallest correction id.
//! - [`cluster_measures`]: every cluster's size, coherence, span and confidence, and whether it
//!   meets the default [`PromotionCriteria`](crate::math::fusion::PromotionCriteria).
//! - [`promote_patterns`] ([`promoted_patterns`] of the measures): the clusters that meet it.
//!
//! # Which corrections are present
//!
//! The operators read corrections keyed by `(tenant, user)`; a correction is identified by
//! `(tenant, user, correction_id)`. The **present corrections** are, for every identity that
//! has at least one record of positive multiplicity, the least such record in
//! [`CorrectionPoint`] order. So a record with multiplicity m > 1 counts once, one with m ≤ 0
//! not at all, and an id sent twice with different payloads still has one deterministic point.
//! Corrections of different users are never linked, clustered or measured together.
//!
//! # Embeddings
//!
//! Collection data must be totally ordered, which `f32` is not, so embeddings travel as
//! [`QuantisedEmbedding`]: scaled to unit length, then each component times
//! [`EMBEDDING_SCALE`] = 10 000 rounded to an `i16`. Direction is all that cosine, centroid and
//! coherence look at, so the scaling loses nothing; the rounding moves each component by at
//! most 5·10⁻⁵. Whether two corrections link is decided by the cosine of their integer
//! components, summed exactly ([`QuantisedEmbedding::cosine`]); every other similarity in this
//! module is computed on the dequantised floats ([`QuantisedEmbedding::to_f32`]). So the
//! incremental and from-scratch computations agree exactly.
//!
//! # Candidate pairs
//!
//! Random-hyperplane LSH ([`LshHyperplanes`], in `lsh.rs`) finds the pairs worth an exact cosine.

use std::collections::BTreeMap;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::Iterate;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

mod lsh;
mod quantised;
mod topics;

pub use lsh::{
    lsh_buckets, lsh_candidate_probability, LshBucket, LshHyperplanes, LSH_BANDS,
    LSH_ROWS_PER_BAND, LSH_SEED,
};
pub use quantised::{QuantisedEmbedding, EMBEDDING_SCALE};
pub use topics::{topic_links, topic_terms, TopicHolder, TOPIC_LINK_COSINE, TOPIC_TERM_HOLDERS};

use crate::keyed_state::key_fingerprint;
use crate::math::fusion::{
    centroid, cosine_similarity, preference_confidence, time_span, PromotionCriteria,
    DEFAULT_EVIDENCE_WEIGHT,
};
use crate::requests::RequestSet;

/// `(tenant, user)`: clustering never crosses it.
pub type UserKey = (String, String);

/// One correction as the clustering sees it. Field order is the order used to pick one point
/// per correction id (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct CorrectionPoint {
    /// Stable id of the correction, unique within its `(tenant, user)`.
    pub correction_id: String,
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    /// Confidence of the correction in thousandths (0..=1000; larger values count as 1000).
    pub confidence_milli: u16,
    /// Whether the correction asks for something or against it ([`Polarity::of_instruction`]
    /// of its text): only corrections of one polarity are linked by their embeddings.
    pub polarity: Polarity,
    /// What the correction asks for ([`requests_of`](crate::requests::requests_of) its text):
    /// corrections that ask for one and the same non-empty set are linked whatever their
    /// embeddings, and to nothing else.
    pub requests: RequestSet,
    /// The context the correction was made in (e.g. "external client"), trimmed and
    /// lowercased; empty when it names none.
    pub context: String,
    /// Embedding of the correction (e.g. of its expected behaviour).
    pub embedding: QuantisedEmbedding,
    /// What the correction is about: the [`topic_terms`] of its text when it asks for nothing
    /// recognised or only names circumstances (empty otherwise), which link such corrections
    /// ([`topic_links`]).
    pub topics: Vec<String>,
}

/// Which way a correction points: towards what its words name ("use bullet points") or away
/// from it ("don't use bullet points"). Sentence embeddings place the two close together, so
/// similarity alone would cluster a correction with its own opposite.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub enum Polarity {
    #[default]
    Towards,
    Away,
}

/// Words that turn an instruction around. "n't" contractions count too.
const NEGATIONS: [&str; 16] = [
    "not", "no", "never", "dont", "avoid", "stop", "without", "less", "fewer", "none", "nothing",
    "neither", "nor", "cannot", "quit", "skip",
];

impl Polarity {
    /// The polarity of an instruction: [`Polarity::Away`] when it holds an odd number of
    /// negations (the words of [`NEGATIONS`], or a word ending in "n't"), else
    /// [`Polarity::Towards`]. Case and punctuation do not matter; typographic apostrophes count
    /// as apostrophes. A leading "No," (or "No." / "No!" / "Nope,") answers the assistant and
    /// turns nothing around.
    pub fn of_instruction(text: &str) -> Polarity {
        let lower = text.trim_start().to_lowercase().replace('\u{2019}', "'");
        let interjection = ["no", "nope"].iter().find_map(|w| {
            let rest = lower.strip_prefix(w)?;
            rest.starts_with([',', '.', '!', ';', ':', '-'])
                .then_some(rest)
        });
        let negations = interjection
            .unwrap_or(&lower)
            .split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .filter(|w| {
                let bare: String = w.chars().filter(|c| *c != '\'').collect();
                w.ends_with("n't") || NEGATIONS.contains(&bare.as_str())
            })
            .count();
        if negations % 2 == 1 {
            Polarity::Away
        } else {
            Polarity::Towards
        }
    }

    pub fn opposite(self) -> Polarity {
        match self {
            Polarity::Towards => Polarity::Away,
            Polarity::Away => Polarity::Towards,
        }
    }
}

/// A promoted cluster: the measurements behind its promotion.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PatternRecord {
    /// The cluster id of the memberships ([`correction_clusters`] names a cluster by its
    /// smallest correction id).
    pub cluster_id: String,
    /// Number of corrections in the cluster (≥ 3).
    pub size: u32,
    /// Coherence (mean cosine of the dequantised embeddings to their centroid,
    /// [`crate::math::fusion::coherence`]) in thousandths, rounded to nearest (≥ 800, as the
    /// coherence itself is > 0.8).
    pub coherence_milli: u16,
    /// Latest minus earliest correction time, microseconds (≥ one day).
    pub span_micros: i64,
    /// [`preference_confidence`] of the members' confidences (`confidence_milli / 1000`, folded
    /// in [`CorrectionPoint`] order) with [`DEFAULT_EVIDENCE_WEIGHT`], in thousandths, rounded
    /// to nearest.
    pub confidence_milli: u16,
}

/// Two corrections that ask for nothing [`requests_of`](crate::requests::requests_of) recognises
/// are linked when the cosine of their embeddings is at least this. It belongs to the embedding
/// model: this is the value calibrated for the shipped all-MiniLM-L6-v2 (int8) on the labelled
/// correction set `tests/data/correction_requests.json` (`bench/src/bin/correction_links.rs`
/// measures it). On MiniLM, paraphrases of one request lie at a median cosine of 0.48 and
/// opposite requests at 0.44, so cosine alone links only near-copies.
pub const LINK_COSINE_THRESHOLD: f64 = 0.85;

/// Whether two embeddings are linked at `min_cosine`: same length, and
/// [`QuantisedEmbedding::cosine`] ≥ `min_cosine`.
fn is_link(a: &QuantisedEmbedding, b: &QuantisedEmbedding, min_cosine: f64) -> bool {
    a.dims() == b.dims() && a.cosine(b) >= min_cosine
}

/// The present corrections (module docs), keyed by `((tenant, user), correction_id)`, each with
/// multiplicity 1: the input of the operators below. Computed once and shared, it is one
/// arrangement of every correction, not one per operator that reads them.
pub fn present_corrections<'scope, T>(
    corrections: VecCollection<'scope, T, (UserKey, CorrectionPoint)>,
) -> VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>
where
    T: Timestamp + Lattice + Ord,
{
    corrections
        .map(|(user, point)| ((user, point.correction_id.clone()), point))
        .reduce(|_correction, records, output| {
            // Records come in ascending order, so the first present one is the least.
            if let Some((point, _)) = records.iter().find(|(_, m)| *m > 0) {
                output.push(((*point).clone(), 1));
            }
        })
}

/// The similarity links between a user's corrections, as many as their clusters need.
///
/// Input: the [`present_corrections`], the cosine at which corrections that ask for nothing
/// recognised link (the embedding model's, e.g. [`LINK_COSINE_THRESHOLD`]), and the cosine at
/// which they link to their nearest topic neighbour (e.g. [`TOPIC_LINK_COSINE`]). The present
/// corrections of a user (module docs) form **groups** ([`LinkGroup`]), each represented by its
/// smallest id:
/// - those with one and the same non-empty [`RequestSet`] (they ask for the same thing,
///   whatever their words);
/// - those with an empty set, one and the same [`Polarity`] and one and the same non-zero
///   embedding (an all-zero embedding is each correction's own group).
///
/// Output: `((tenant, user), (id_a, id_b))` with `id_a < id_b`, multiplicity 1 for each of
/// these rules that links the pair (so at most 2: the second and third can agree):
/// - every member of a group with its representative;
/// - every two representatives of the same polarity, both with an empty request set, whose
///   embeddings share at least one [`LshBucket`] under [`LshHyperplanes`] and whose
///   [`QuantisedEmbedding::cosine`] is ≥ `min_cosine`. A group with a non-empty set links to
///   nothing outside itself: the requests tell corrections apart better than their embeddings
///   do, and a cosine link to one that asks for nothing recognised could chain two opposite
///   requests into one component;
/// - the [`topic_links`] at `min_topic_cosine` of the representatives with topic terms (the
///   input gives them to corrections that ask for nothing recognised or only name circumstances
///   of the user's, such as a diet) and a non-zero embedding, as `(id, ts, embedding, topics,
///   seeks)` of the representative (seeking when it asks for nothing recognised), whatever
///   their polarity.
///
/// A user who makes the same correction n times costs n − 1 links, not n²/2. A pair at cosine
/// ≥ 0.85 shares a bucket with probability ≥ 0.99794 over the choice of hyperplanes
/// ([`lsh_candidate_probability`]); a pair that shares none is not linked, whatever its cosine.
///
/// Cost: each representative of a group that asks for nothing recognised is stored once,
/// referred to from each of its 40 buckets (an
/// entry of 48 bytes); a change meets the representatives in its 40 buckets only, and computes
/// the cosine with each of them once, in the first band the two share.
pub fn similarity_links<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    min_cosine: f64,
    min_topic_cosine: f64,
) -> VecCollection<'scope, T, (UserKey, (String, String))>
where
    T: Timestamp + Lattice + Ord,
{
    let grouped =
        present.map(|((user, id), point)| ((user, LinkGroup::of(&id, &point)), (id, point)));
    let representatives = grouped.clone().reduce(|_group, members, output| {
        // members come sorted by id: the first present one is the smallest
        if let Some(((id, point), _)) = members.iter().find(|(_, m)| *m > 0) {
            output.push((((*id).clone(), (*point).clone()), 1));
        }
    });
    let topic_holders = representatives
        .clone()
        .flat_map(|((user, _group), (id, point))| {
            // a correction with an all-zero embedding is near nothing
            let near_something = point.embedding.0.iter().any(|&x| x != 0);
            let seeks = point.requests.is_empty();
            (near_something && !point.topics.is_empty()).then(|| {
                let holder = (id, point.ts_micros, point.embedding, point.topics, seeks);
                (user, holder)
            })
        });
    let members = grouped
        .map(|(group, (id, _point))| (group, id))
        .join_map(
            representatives.clone().map(|(group, (id, _))| (group, id)),
            |(user, _), id: &String, representative: &String| {
                (user.clone(), (representative.clone(), id.clone()))
            },
        )
        .filter(|(_, (representative, id))| representative != id);
    // Drawn once per embedding length per worker, not once per correction.
    let mut hyperplanes_by_dims: BTreeMap<usize, LshHyperplanes> = BTreeMap::new();
    let bucketed = representatives
        // a correction that asks for something recognised links by what it asks only: were it
        // linked by cosine to one that asks for nothing recognised, a chain of such links could
        // join two opposite requests ("shorter" … "more detail") in one component
        .filter(|((_, group), _)| matches!(group, LinkGroup::Same(..)))
        .flat_map(move |((user, _group), (id, point))| {
            let (polarity, embedding) = (point.polarity, point.embedding);
            let vector = embedding.to_f32();
            let buckets = hyperplanes_by_dims
                .entry(vector.len())
                .or_insert_with(|| LshHyperplanes::new(vector.len()))
                .buckets(&vector);
            let key = user_polarity_hash(&user, polarity);
            let signatures = buckets.iter().map(|b| b.signature).collect();
            let member = BucketMember(std::sync::Arc::new((
                user, polarity, id, embedding, signatures,
            )));
            // one polarity never meets the other: the polarity is part of the bucket key
            buckets
                .into_iter()
                .map(move |bucket| ((key, bucket), member.clone()))
        })
        .arrange_by_key();
    bucketed
        .clone()
        .join_core(
            bucketed,
            move |(_, bucket): &(u64, LshBucket), a: &BucketMember, b: &BucketMember| {
                let (
                    (user_a, polarity_a, id_a, embedding_a, bands_a),
                    (user_b, polarity_b, id_b, embedding_b, bands_b),
                ) = (&*a.0, &*b.0);
                // A pair meets in every band it shares, and is taken in the first of them
                // only: one cosine per pair, and one record, so no `distinct` (an arrangement
                // of every link) is needed after. The key's hash may be shared by another
                // user or polarity: both must match.
                let band = usize::from(bucket.band);
                (user_a == user_b
                    && polarity_a == polarity_b
                    && id_a < id_b
                    && !bands_a[..band]
                        .iter()
                        .zip(&bands_b[..band])
                        .any(|(x, y)| x == y)
                    && is_link(embedding_a, embedding_b, min_cosine))
                .then(|| (user_a.clone(), (id_a.clone(), id_b.clone())))
            },
        )
        .concat(members)
        .concat(topic_links(topic_holders, min_topic_cosine))
}

/// What groups corrections that are linked through one representative ([`similarity_links`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum LinkGroup {
    /// They ask for one and the same non-empty set of requests.
    Asks(RequestSet),
    /// They ask for nothing recognised, point one way and have one embedding; the id is that
    /// of a correction whose embedding is all zeros, which groups with nothing else.
    Same(Polarity, QuantisedEmbedding, Option<String>),
}

impl LinkGroup {
    /// The group of correction `id` at `point`.
    pub fn of(id: &str, point: &CorrectionPoint) -> LinkGroup {
        if point.requests.is_empty() {
            let zero = point.embedding.0.iter().all(|&x| x == 0);
            LinkGroup::Same(
                point.polarity,
                point.embedding.clone(),
                zero.then(|| id.to_string()),
            )
        } else {
            LinkGroup::Asks(point.requests.clone())
        }
    }
}

/// A representative correction as the LSH buckets hold it: `(user, polarity, id, embedding,
/// signatures)`, with the signature of each band in band order, shared by its [`LSH_BANDS`]
/// bucket entries (one copy of the user and id, not forty).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct BucketMember(std::sync::Arc<BucketMemberData>);

type BucketMemberData = (UserKey, Polarity, String, QuantisedEmbedding, Vec<u32>);

// By hand, as for `QuantisedEmbedding`: serde's `Arc` impls need its `rc` feature.
impl Serialize for BucketMember {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.as_ref().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for BucketMember {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BucketMemberData::deserialize(deserializer)
            .map(|member| BucketMember(std::sync::Arc::new(member)))
    }
}

/// The bucket key's stand-in for `(user, polarity)`: 8 bytes instead of two strings in each
/// of a correction's forty bucket entries. Equal hashes of two users only make their buckets
/// meet; the join checks user and polarity.
fn user_polarity_hash(user: &UserKey, polarity: Polarity) -> u64 {
    key_fingerprint(&(user, polarity)) as u64
}

/// The clusters of a user's corrections: connected components of the link graph.
///
/// Input: the [`present_corrections`], and links `((tenant, user), (a, b))` between
/// correction ids of that user. Links are undirected: `(a, b)` and `(b, a)` are the same link,
/// which is present when the multiplicities of its records in both orders sum to more than 0.
/// The graph of a user has the present corrections (module docs) as vertices and the present
/// links whose both ends are present corrections as edges; links naming any other id are
/// ignored.
///
/// Output: `((tenant, user), (correction_id, cluster_id))`, multiplicity 1, for every present
/// correction, where `cluster_id` is the smallest correction id of its connected component (a
/// correction without links is its own cluster). When a correction or link is retracted, a
/// component may split and its members are relabelled, so the output always equals this
/// definition over the current input.
///
/// Cost: label propagation (each round, every vertex takes the smallest label among itself and
/// its neighbours) runs as many rounds as the largest component's diameter; a change re-derives
/// only the labels it affects.
pub fn correction_clusters<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    links: VecCollection<'scope, T, (UserKey, (String, String))>,
) -> VecCollection<'scope, T, (UserKey, (String, String))>
where
    T: Timestamp + Lattice + Ord,
{
    // Every present correction proposes its own id as its label.
    let own_labels = present.map(|((user, id), _point)| ((user, id.clone()), id));
    let present_ids = own_labels.clone().map(|(correction, _label)| correction);
    // `((user, x), y)`: x proposes its label to y. Every link is listed in both directions; the
    // semijoin keeps those whose key end is present, and the swap makes that end the target.
    // Only present corrections ever hold a label (they start with one, and proposals go to
    // present targets only), so requiring the target to be present is enough.
    let edges = links
        .flat_map(|(user, (a, b))| [((user.clone(), a.clone()), b.clone()), ((user, b), a)])
        .threshold(|_edge, count: &isize| isize::from(*count > 0))
        .semijoin(present_ids)
        .map(|((user, target), source)| ((user, source), target))
        .arrange_by_key();
    own_labels
        .clone()
        .iterate(|scope, labels| {
            let edges = edges.enter(scope);
            let own_labels = own_labels.enter(scope);
            labels
                .join_core(
                    edges,
                    |correction: &(UserKey, String), label: &String, neighbour: &String| {
                        Some(((correction.0.clone(), neighbour.clone()), label.clone()))
                    },
                )
                .concat(own_labels)
                .reduce(|_correction, proposed_labels, output| {
                    // Labels come in ascending order: keep the smallest one proposed.
                    if let Some((label, _)) = proposed_labels.iter().find(|(_, m)| *m > 0) {
                        output.push(((*label).clone(), 1));
                    }
                })
        })
        .map(|((user, id), cluster_id)| (user, (id, cluster_id)))
}

/// The measurements of a cluster, promoted or not: what the promotion criteria look at.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClusterMeasure {
    /// The cluster id of the memberships (its smallest correction id).
    pub cluster_id: String,
    /// Number of present corrections in the cluster (≥ 1).
    pub size: u32,
    /// Mean cosine of the dequantised embeddings to their centroid, in thousandths, rounded to
    /// nearest (1000 for a single correction).
    pub coherence_milli: u16,
    /// Latest minus earliest correction time, microseconds (0 for a single correction).
    pub span_micros: i64,
    /// [`preference_confidence`] of the members' confidences, as in [`PatternRecord`].
    pub confidence_milli: u16,
    /// Whether the cluster meets the default [`PromotionCriteria`] (then it is a pattern).
    pub promoted: bool,
    /// The mean of the members' dequantised embeddings ([`centroid`]), quantised: what the
    /// cluster is about, to compare it with other users' clusters.
    pub centroid: QuantisedEmbedding,
    /// Event time of the newest member, microseconds.
    pub latest_micros: i64,
    /// The polarity of the member named by `cluster_id`.
    pub polarity: Polarity,
    /// What the member named by `cluster_id` asks for: what every member asks for when it is
    /// non-empty (a group that asks for something links to nothing outside itself).
    pub requests: RequestSet,
    /// The members' non-empty contexts, ascending, each once.
    pub contexts: Vec<String>,
}

impl ClusterMeasure {
    /// The pattern this cluster is, when it is promoted.
    pub fn pattern(&self) -> Option<PatternRecord> {
        self.promoted.then(|| PatternRecord {
            cluster_id: self.cluster_id.clone(),
            size: self.size,
            coherence_milli: self.coherence_milli,
            span_micros: self.span_micros,
            confidence_milli: self.confidence_milli,
        })
    }
}

/// Every cluster's measurements, while it forms.
///
/// Input: the [`present_corrections`], and cluster memberships
/// `((tenant, user), (correction_id, cluster_id))` as [`correction_clusters`] produces them. A
/// membership counts once when its multiplicity is positive, and only if its correction is
/// present (module docs); a correction listed under two cluster ids counts in both.
///
/// Output: `((tenant, user), measure)`, multiplicity 1, for every cluster with at least one
/// present member whose members' embeddings all have one length: its size, coherence (mean
/// cosine to the centroid, [`crate::math::fusion::coherence`]), centroid, span, newest member
/// time, polarity (of the member the cluster is named by), the members' contexts, the
/// [`preference_confidence`] of its members' confidences (folded in [`CorrectionPoint`]
/// order), and whether it meets the default [`PromotionCriteria`] (n ≥ 3, coherence > 0.8,
/// span ≥ 1 day). When a member is added or retracted, the cluster's measure is replaced or
/// withdrawn.
///
/// Cost: a change to a cluster re-measures that cluster (linear in its size).
pub fn cluster_measures<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    clusters: VecCollection<'scope, T, (UserKey, (String, String))>,
) -> VecCollection<'scope, T, (UserKey, ClusterMeasure)>
where
    T: Timestamp + Lattice + Ord,
{
    clusters
        .map(|(user, (id, cluster_id))| ((user, id), cluster_id))
        .threshold(|_membership, count: &isize| isize::from(*count > 0))
        .join_map(
            present,
            |correction: &(UserKey, String), cluster_id: &String, point: &CorrectionPoint| {
                ((correction.0.clone(), cluster_id.clone()), point.clone())
            },
        )
        .reduce(|(_user, cluster_id), members, output| {
            let present: Vec<&CorrectionPoint> = members
                .iter()
                .filter(|(_, m)| *m > 0)
                .map(|(point, _)| *point)
                .collect();
            if let Some(measure) = measure_of(cluster_id, &present) {
                output.push((measure, 1));
            }
        })
        .map(|((user, _cluster_id), measure)| (user, measure))
}

/// The patterns among the [`cluster_measures`]: `((tenant, user), record)`, multiplicity 1,
/// for every measure that is `promoted`, with the same numbers.
pub fn promoted_patterns<'scope, T>(
    measures: VecCollection<'scope, T, (UserKey, ClusterMeasure)>,
) -> VecCollection<'scope, T, (UserKey, PatternRecord)>
where
    T: Timestamp + Lattice + Ord,
{
    measures.flat_map(|(user, measure)| measure.pattern().map(|p| (user, p)))
}

/// The patterns: clusters that meet the promotion criteria.
///
/// Input: as [`cluster_measures`]. Output: `((tenant, user), record)`, multiplicity 1, for
/// every cluster whose present members meet the default [`PromotionCriteria`] (n ≥ 3,
/// coherence > 0.8, span ≥ 1 day), with `record` as documented on [`PatternRecord`]. A cluster
/// whose members' embeddings differ in length is never promoted (their coherence is
/// undefined). When a member is added or retracted, the cluster's record is replaced or
/// withdrawn. The same as [`promoted_patterns`] of [`cluster_measures`].
///
/// Cost: a change to a cluster re-measures that cluster (linear in its size).
pub fn promote_patterns<'scope, T>(
    present: VecCollection<'scope, T, ((UserKey, String), CorrectionPoint)>,
    clusters: VecCollection<'scope, T, (UserKey, (String, String))>,
) -> VecCollection<'scope, T, (UserKey, PatternRecord)>
where
    T: Timestamp + Lattice + Ord,
{
    promoted_patterns(cluster_measures(present, clusters))
}

/// The measure of a cluster with these members (in [`CorrectionPoint`] order), or `None` when
/// it has none or their embeddings differ in length.
fn measure_of(cluster_id: &str, members: &[&CorrectionPoint]) -> Option<ClusterMeasure> {
    let dims = members.first()?.embedding.dims();
    if members.iter().any(|m| m.embedding.dims() != dims) {
        return None;
    }
    let earliest = members.iter().map(|m| m.ts_micros).min()?;
    let latest = members.iter().map(|m| m.ts_micros).max()?;
    let named = members
        .iter()
        .find(|m| m.correction_id == cluster_id)
        .unwrap_or(&members[0]);
    let embeddings: Vec<Vec<f32>> = members.iter().map(|m| m.embedding.to_f32()).collect();
    let centroid = centroid(&embeddings)?;
    let coherence = agreement(members, &named.requests, &embeddings, &centroid);
    // Seconds since the earliest member: small exact differences, so a span of exactly one day
    // is exactly 86 400 s, not a rounding of two epoch-sized times.
    let seconds: Vec<f64> = members
        .iter()
        .map(|m| m.ts_micros.saturating_sub(earliest) as f64 / 1e6)
        .collect();
    let promoted =
        PromotionCriteria::default().is_met(members.len(), coherence, time_span(&seconds));
    let confidences: Vec<f64> = members
        .iter()
        .map(|m| f64::from(m.confidence_milli) / 1000.0)
        .collect();
    Some(ClusterMeasure {
        cluster_id: cluster_id.to_string(),
        size: members.len() as u32,
        coherence_milli: to_milli(coherence),
        span_micros: latest.saturating_sub(earliest),
        confidence_milli: to_milli(preference_confidence(&confidences, DEFAULT_EVIDENCE_WEIGHT)),
        promoted,
        centroid: QuantisedEmbedding::from_f32(&centroid),
        latest_micros: latest,
        polarity: named.polarity,
        requests: named.requests.clone(),
        contexts: members
            .iter()
            .filter(|m| !m.context.is_empty())
            .map(|m| m.context.clone())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
    })
}

/// The coherence of a cluster: the mean over its members of how well each agrees with it —
/// 1 for a member that asks for `requests` (non-empty: the cluster's, as its named member
/// asks), else the cosine of its embedding to the `centroid` of all members' embeddings.
/// Paraphrases of one request agree fully whatever the embedding model makes of their words;
/// for the rest, it is the mean cosine to the centroid of SPEC §4.3.
pub fn agreement(
    members: &[&CorrectionPoint],
    requests: &RequestSet,
    embeddings: &[Vec<f32>],
    centroid: &[f32],
) -> f64 {
    let total: f64 = members
        .iter()
        .zip(embeddings)
        .map(|(m, e)| {
            if !requests.is_empty() && m.requests == *requests {
                1.0
            } else {
                cosine_similarity(e, centroid)
            }
        })
        .sum();
    total / members.len().max(1) as f64
}

/// A value in [0, 1] in thousandths, rounded to nearest.
fn to_milli(x: f64) -> u16 {
    (x.clamp(0.0, 1.0) * 1000.0).round() as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::fusion::SECONDS_PER_DAY;

    fn point(id: &str, day: f64, confidence_milli: u16, v: &[f32]) -> CorrectionPoint {
        CorrectionPoint {
            correction_id: id.into(),
            ts_micros: 1_700_000_000_000_000 + (day * SECONDS_PER_DAY * 1e6) as i64,
            confidence_milli,
            polarity: Polarity::Towards,
            requests: RequestSet::default(),
            context: String::new(),
            embedding: QuantisedEmbedding::from_f32(v),
            topics: Vec::new(),
        }
    }

    #[test]
    fn polarity_counts_negations() {
        use Polarity::{Away, Towards};
        for (text, want) in [
            ("Use bullet points.", Towards),
            ("Don't use bullet points", Away),
            ("Do NOT use bullet points!", Away),
            ("Please don\u{2019}t use emojis", Away),
            ("dont add a summary", Away),
            ("Never start with an apology", Away),
            ("Avoid jargon with clients", Away),
            ("Answers without caveats", Away),
            ("Not without a summary", Towards),
            ("No, use a table instead", Towards),
            ("Nope. Keep it formal", Towards),
            ("No emojis", Away),
            ("Write notes about the piano", Towards),
        ] {
            assert_eq!(Polarity::of_instruction(text), want, "{text:?}");
        }
        assert_eq!(Away.opposite(), Towards);
    }

    fn pattern_of(cluster_id: &str, members: &[&CorrectionPoint]) -> Option<PatternRecord> {
        measure_of(cluster_id, members)?.pattern()
    }

    #[test]
    fn pattern_measurements() {
        let tight = [[1.0_f32, 0.1, 0.0], [1.0, 0.0, 0.1], [0.9, 0.1, 0.1]];
        let points = [
            point("a", 0.0, 900, &tight[0]),
            point("b", 0.5, 900, &tight[1]),
            point("c", 1.0, 900, &tight[2]),
        ];
        let members: Vec<&CorrectionPoint> = points.iter().collect();
        let record = pattern_of("a", &members).expect("promotable");
        assert_eq!(record.cluster_id, "a");
        assert_eq!(record.size, 3);
        assert!(record.coherence_milli > 950, "{record:?}");
        // Exactly one day is enough.
        assert_eq!(record.span_micros, 86_400_000_000);
        // 1 − (1 − 0.5·0.9)³ = 0.833625
        assert_eq!(record.confidence_milli, 834);
        // Two corrections, or less than a day, or incoherent directions: no pattern.
        assert_eq!(pattern_of("a", &members[..2]), None);
        let hasty = [
            point("a", 0.0, 900, &tight[0]),
            point("b", 0.5, 900, &tight[1]),
            point("c", 0.99, 900, &tight[2]),
        ];
        assert_eq!(pattern_of("a", &hasty.iter().collect::<Vec<_>>()), None);
        let loose = [
            point("a", 0.0, 900, &[1.0, 0.0, 0.0]),
            point("b", 1.0, 900, &[0.0, 1.0, 0.0]),
            point("c", 2.0, 900, &[0.0, 0.0, 1.0]),
        ];
        assert_eq!(pattern_of("a", &loose.iter().collect::<Vec<_>>()), None);
        let mixed = [
            point("a", 0.0, 900, &[1.0, 0.0, 0.0]),
            point("b", 1.0, 900, &[1.0, 0.0, 0.0]),
            point("c", 2.0, 900, &[1.0, 0.0]),
        ];
        assert_eq!(pattern_of("a", &mixed.iter().collect::<Vec<_>>()), None);
        assert_eq!(pattern_of("a", &[]), None);
        assert_eq!(measure_of("a", &[]), None);
        assert_eq!(measure_of("a", &mixed.iter().collect::<Vec<_>>()), None);
    }

    #[test]
    fn clusters_are_measured_before_promotion() {
        // A single correction: its own centroid, no span, not yet a pattern.
        let one = [point("a", 0.0, 800, &[1.0, 0.0, 0.0])];
        let m = measure_of("a", &one.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!((m.size, m.coherence_milli, m.span_micros), (1, 1000, 0));
        // 1 − (1 − 0.5·0.8) = 0.4
        assert_eq!(m.confidence_milli, 400);
        assert!(!m.promoted && m.pattern().is_none());
        // Two orthogonal corrections half a day apart: centroid at 45° to each, cos = 0.7071.
        let two = [
            point("a", 0.0, 800, &[1.0, 0.0, 0.0]),
            point("b", 0.5, 800, &[0.0, 1.0, 0.0]),
        ];
        let m = measure_of("a", &two.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!((m.size, m.coherence_milli), (2, 707));
        assert_eq!(m.span_micros, 43_200_000_000);
        assert!(!m.promoted);
    }

    #[test]
    fn paraphrases_of_one_request_agree_fully_whatever_their_embeddings() {
        let asking = |id: &str, day: f64, text: &str, v: &[f32]| CorrectionPoint {
            requests: crate::requests::requests_of(text),
            ..point(id, day, 900, v)
        };
        // three orthogonal embeddings: alone they would cohere at 0.577
        let members = [
            asking("a", 0.0, "Too long, keep it short.", &[1.0, 0.0, 0.0]),
            asking("b", 1.0, "Please be more concise", &[0.0, 1.0, 0.0]),
            asking("c", 2.0, "way too wordy", &[0.0, 0.0, 1.0]),
        ];
        let m = measure_of("a", &members.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(m.coherence_milli, 1000);
        assert!(m.promoted);
        assert_eq!(m.requests, crate::requests::requests_of("shorter"));
        // a member that asks for nothing recognised counts by its cosine to the centroid
        // (1, 1, 1)/3 · (1, 0, 0) / |(1, 1, 1)/3| = 1/√3 = 0.577: (1 + 1 + 0.577) / 3 = 0.859
        let mixed = [
            members[0].clone(),
            members[1].clone(),
            point("c", 2.0, 900, &[0.0, 0.0, 1.0]),
        ];
        let m = measure_of("a", &mixed.iter().collect::<Vec<_>>()).unwrap();
        assert_eq!(m.coherence_milli, 859);
    }
}
