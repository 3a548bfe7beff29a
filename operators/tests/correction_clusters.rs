//! `similarity_links`, `correction_clusters`, `cluster_measures`, `promote_patterns`,
//! `preference_traces` and `preference_contradictions`
//! maintained incrementally
//! equal the same definitions computed from scratch, over random streams of corrections drawn
//! around a few topics (so real clusters form, merge and split), outliers, duplicate records,
//! re-sent ids with other payloads and retractions, with one and two workers; and
//! `correction_clusters` does the same over arbitrary link streams.

mod common;

use common::{apply, collect_into, difference, execute, nonzero, settle, update, Sink};
use differential_dataflow::input::Input;
use engram_operators::correction_clusters::{
    cluster_measures, correction_clusters, present_corrections, promote_patterns, similarity_links,
    ClusterMeasure, CorrectionPoint, LinkGroup, LshBucket, LshHyperplanes, PatternRecord, Polarity,
    QuantisedEmbedding, UserKey, LINK_COSINE_THRESHOLD, TOPIC_LINK_COSINE, TOPIC_TERM_HOLDERS,
};
use engram_operators::lifecycle::{preference_traces, PreferenceKey, PreferenceTrace};
use engram_operators::math::decay::{LifecycleThresholds, StabilityParams};
use engram_operators::math::fusion::{
    centroid, cosine_similarity, preference_confidence, DEFAULT_EVIDENCE_WEIGHT, SECONDS_PER_DAY,
};
use engram_operators::preference_contradictions::{
    preference_contradictions, resolve, Contradiction, Resolution, CONTRADICTION_COSINE,
};
use engram_operators::requests::{requests_of, RequestSet};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use timely::dataflow::operators::probe::Handle;

type Pair = (UserKey, (String, String));
type Pattern = (UserKey, PatternRecord);
type Measure = (UserKey, ClusterMeasure);
type Trace = (PreferenceKey, PreferenceTrace);
type Contradicted = (PreferenceKey, Contradiction);
/// The input as a multiset: record → multiplicity (never 0).
type Corrections = BTreeMap<(UserKey, CorrectionPoint), isize>;
/// The present corrections of each user, by id.
type Present = BTreeMap<UserKey, BTreeMap<String, CorrectionPoint>>;

const DIMS: usize = 12;
const MICROS_PER_HOUR: i64 = 3_600_000_000;

fn users() -> [UserKey; 3] {
    [
        ("t".into(), "u0".into()),
        ("t".into(), "u1".into()),
        ("t2".into(), "u0".into()),
    ]
}

fn gaussian(rng: &mut StdRng) -> f32 {
    let (u1, u2): (f32, f32) = (1.0 - rng.gen::<f32>(), rng.gen());
    (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
}

/// A random unit vector.
fn random_direction(rng: &mut StdRng) -> Vec<f32> {
    let v: Vec<f32> = (0..DIMS).map(|_| gaussian(rng)).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / norm).collect()
}

/// The topics of a user: three or four unit vectors 50° apart along a great circle. Their
/// clusters stay apart (cos 50° = 0.64) until a bridge correction halfway between two
/// neighbours (25° from each, cos 0.91) links them; two topics linked that way still form a
/// coherent cluster, three (spanning 100°, coherence ≈ 0.76) do not.
fn user_topics(rng: &mut StdRng) -> Vec<Vec<f32>> {
    let start = random_direction(rng);
    let r = random_direction(rng);
    let along: f32 = r.iter().zip(&start).map(|(x, y)| x * y).sum();
    let orthogonal: Vec<f32> = r.iter().zip(&start).map(|(x, y)| x - along * y).collect();
    let norm = orthogonal.iter().map(|x| x * x).sum::<f32>().sqrt();
    (0..rng.gen_range(3..5))
        .map(|k| {
            let angle = (50.0 * k as f32).to_radians();
            start
                .iter()
                .zip(&orthogonal)
                .map(|(s, o)| angle.cos() * s + angle.sin() * o / norm)
                .collect()
        })
        .collect()
}

/// A correction of a user with `topics` (from [`user_topics`]): mostly near one topic, with
/// noise chosen so that pairs fall on both sides of the 0.85 link threshold (cosine
/// ≈ 1 / (1 + 12σ²): 0.97, 0.85, 0.68); sometimes a bridge between two neighbouring topics;
/// now and then an outlier in a random direction.
fn correction(id: String, topics: &[Vec<f32>], rng: &mut StdRng) -> CorrectionPoint {
    let roll = rng.gen_range(0..100);
    let embedding: Vec<f32> = if roll < 15 {
        random_direction(rng)
    } else if roll < 30 {
        let k = rng.gen_range(0..topics.len() - 1);
        topics[k]
            .iter()
            .zip(&topics[k + 1])
            .map(|(x, y)| (x + y) / 2.0 + 0.02 * gaussian(rng))
            .collect()
    } else {
        let topic = &topics[rng.gen_range(0..topics.len())];
        let noise = [0.05, 0.12, 0.2][rng.gen_range(0..3)];
        topic.iter().map(|x| x + noise * gaussian(rng)).collect()
    };
    let polarity = if rng.gen_bool(0.2) {
        Polarity::Away
    } else {
        Polarity::Towards
    };
    // Half ask for nothing recognised (linked by embedding alone); the rest ask for one of a
    // few requests, many of them opposites without a negation word ("use prose" after "use
    // bullet points"), which contradict whatever their embedding and polarity.
    let requests = match rng.gen_range(0..24) {
        0 | 1 => requests_of("keep it short"),
        2 => requests_of("way too wordy"),
        3 => requests_of("more detail please"),
        4 => requests_of("give me much more detail from now on"),
        5 => requests_of("use bullet points"),
        6 => requests_of("too long, use bullets"),
        7 => requests_of("be more formal"),
        8 => requests_of("be more casual"),
        9 => requests_of("write paragraphs, use prose"),
        10 => requests_of("simpler please"),
        11 => requests_of("more technical"),
        12 => requests_of("less casual pls"),
        13 => requests_of("we're vegetarian"),
        14 => requests_of("my son has a nut allergy"),
        _ => RequestSet::default(),
    };
    // as the input gives them
    let has_topics = requests.linked_by_topic();
    CorrectionPoint {
        correction_id: id,
        requests,
        // whole hours over four days, so spans of exactly one day occur
        ts_micros: 1_700_000_000_000_000 + rng.gen_range(0..96) * MICROS_PER_HOUR,
        // mostly one way, so patterns form, and now and then the opposite, which contradicts
        // (emphatically: confident enough, at times, to outweigh a pattern)
        polarity,
        confidence_milli: match polarity {
            Polarity::Towards => rng.gen_range(300..=1000),
            Polarity::Away => rng.gen_range(700..=1000),
        },
        // the opposite is often said in a context of its own, which splits a preference
        context: match polarity {
            Polarity::Towards => ["", "", "email", "chat"][rng.gen_range(0..4)],
            Polarity::Away => ["", "client", "client", "email"][rng.gen_range(0..4)],
        }
        .to_string(),
        embedding: QuantisedEmbedding::from_f32(&embedding),
        // a few terms, so that corrections share them and meet their nearest topic neighbour
        topics: {
            let mut terms: Vec<String> = (0..if has_topics { rng.gen_range(0..3) } else { 0 })
                .map(|_| ["allergi", "budget", "diet", "ex"][rng.gen_range(0..4)].to_string())
                .collect();
            terms.sort();
            terms.dedup();
            terms
        },
    }
}

/// For each user and correction id, the least record of positive multiplicity.
fn present(current: &Corrections) -> Present {
    let mut present = Present::new();
    // BTreeMap order: by user, then by point, whose first field is the id.
    for ((user, point), m) in current {
        if *m > 0 {
            present
                .entry(user.clone())
                .or_default()
                .entry(point.correction_id.clone())
                .or_insert_with(|| point.clone());
        }
    }
    present
}

/// The LSH buckets of embeddings, memoised across rounds (bucketing is the slow part of the
/// from-scratch computation in a debug build, and a pure function of the embedding).
#[derive(Default)]
struct BucketsOf {
    hyperplanes: BTreeMap<usize, LshHyperplanes>,
    buckets: HashMap<QuantisedEmbedding, BTreeSet<LshBucket>>,
}

impl BucketsOf {
    fn get(&mut self, embedding: &QuantisedEmbedding) -> BTreeSet<LshBucket> {
        let hyperplanes = &mut self.hyperplanes;
        let buckets = self.buckets.entry(embedding.clone()).or_insert_with(|| {
            let v = embedding.to_f32();
            hyperplanes
                .entry(v.len())
                .or_insert_with(|| LshHyperplanes::new(v.len()))
                .buckets(&v)
                .into_iter()
                .collect()
        });
        buckets.clone()
    }
}

/// Links from scratch: a user's present corrections that ask for one and the same non-empty
/// request set form a group, and so do those that ask for nothing recognised with one and the
/// same polarity and non-zero embedding; each group is represented by its smallest id, and
/// every member is linked to its representative. Every two representatives of one polarity,
/// neither asking for recognised requests, that share an LSH bucket (same fixed hyperplanes)
/// at a cosine of their integer components ≥ the threshold are linked. And each representative
/// with topic terms and a non-zero embedding that asks for nothing recognised is linked to its
/// nearest topic neighbour
/// (greatest cosine, then smallest id) at ≥ [`TOPIC_LINK_COSINE`], among the representatives
/// with topic terms that share a term with it, both among the term's first [`TOPIC_TERM_HOLDERS`] in
/// (ts, id) order. A pair linked by both rules is listed twice.
fn links_from_scratch(present: &Present, buckets: &mut BucketsOf) -> BTreeMap<Pair, isize> {
    let mut links = BTreeSet::new();
    let mut topic_links = BTreeSet::new();
    for (user, points) in present {
        // group -> smallest id (points iterate in id order)
        let mut representative: BTreeMap<LinkGroup, &String> = BTreeMap::new();
        let mut representatives = Vec::new();
        for (id, p) in points {
            let zero = p.embedding.0.iter().all(|&x| x == 0);
            let group = if !p.requests.is_empty() {
                LinkGroup::Asks(p.requests.clone())
            } else {
                LinkGroup::Same(p.polarity, p.embedding.clone(), zero.then(|| id.clone()))
            };
            match representative.get(&group) {
                Some(rep) => {
                    links.insert((user.clone(), ((*rep).clone(), id.clone())));
                }
                None => {
                    representative.insert(group, id);
                    representatives.push((id, p));
                }
            }
        }
        let bucketed: Vec<_> = representatives
            .iter()
            .map(|(id, p)| (*id, *p, buckets.get(&p.embedding)))
            .collect();
        for (i, (a, pa, ba)) in bucketed.iter().enumerate() {
            for (b, pb, bb) in &bucketed[i + 1..] {
                if pa.polarity == pb.polarity
                    && pa.requests.is_empty()
                    && pb.requests.is_empty()
                    && !ba.is_disjoint(bb)
                    && pa.embedding.cosine(&pb.embedding) >= LINK_COSINE_THRESHOLD
                {
                    links.insert((user.clone(), ((*a).clone(), (*b).clone())));
                }
            }
        }
        let topical: Vec<&(&String, &CorrectionPoint)> = representatives
            .iter()
            .filter(|(_, p)| !p.topics.is_empty() && p.embedding.0.iter().any(|&x| x != 0))
            .collect();
        let mut holders: BTreeMap<&String, Vec<(i64, &String)>> = BTreeMap::new();
        for (id, p) in &topical {
            for term in &p.topics {
                holders.entry(term).or_default().push((p.ts_micros, *id));
            }
        }
        for h in holders.values_mut() {
            h.sort();
            h.truncate(TOPIC_TERM_HOLDERS);
        }
        // only those that ask for nothing recognised seek their nearest; the others are found
        for (a, pa) in topical.iter().filter(|(_, p)| p.requests.is_empty()) {
            let nearest = topical
                .iter()
                .filter(|(b, pb)| {
                    b != a
                        && pb.embedding.dims() == pa.embedding.dims()
                        && holders
                            .values()
                            .any(|h| h.iter().any(|(_, x)| x == a) && h.iter().any(|(_, x)| x == b))
                })
                .map(|(b, pb)| (pa.embedding.cosine(&pb.embedding), *b))
                // greatest cosine; among equal ones the smallest id
                .max_by(|(x, b), (y, c)| x.total_cmp(y).then(c.cmp(b)));
            if let Some((cosine, b)) = nearest {
                if cosine >= TOPIC_LINK_COSINE {
                    let pair = if a < &b {
                        ((*a).clone(), b.clone())
                    } else {
                        (b.clone(), (*a).clone())
                    };
                    topic_links.insert((user.clone(), pair));
                }
            }
        }
    }
    let mut counted: BTreeMap<Pair, isize> = BTreeMap::new();
    for link in links.into_iter().chain(topic_links) {
        *counted.entry(link).or_default() += 1;
    }
    counted
}

/// Clusters from scratch: connected components over the present corrections and the links
/// between them (undirected), each named by its smallest id.
fn clusters_from_scratch(present: &Present, links: &BTreeSet<Pair>) -> BTreeSet<Pair> {
    let mut clusters = BTreeSet::new();
    for (user, points) in present {
        let mut neighbours: BTreeMap<&String, Vec<&String>> =
            points.keys().map(|id| (id, Vec::new())).collect();
        for (_, (a, b)) in links.iter().filter(|(u, _)| u == user) {
            if points.contains_key(a) && points.contains_key(b) {
                neighbours.get_mut(a).unwrap().push(b);
                neighbours.get_mut(b).unwrap().push(a);
            }
        }
        let mut seen = BTreeSet::new();
        // Ids in ascending order: the first one reached in a component is its smallest.
        for start in points.keys() {
            if !seen.insert(start) {
                continue;
            }
            let mut stack = vec![start];
            while let Some(id) = stack.pop() {
                clusters.insert((user.clone(), (id.clone(), start.clone())));
                for n in &neighbours[id] {
                    if seen.insert(*n) {
                        stack.push(*n);
                    }
                }
            }
        }
    }
    clusters
}

/// Every cluster's measure from scratch: size, coherence, span, confidence, and the
/// thresholds of SPEC §4.3 (n ≥ 3, coherence > 0.8, span ≥ 1 day) for `promoted`.
fn measures_from_scratch(present: &Present, clusters: &BTreeSet<Pair>) -> BTreeSet<Measure> {
    let mut members: BTreeMap<(UserKey, String), Vec<&CorrectionPoint>> = BTreeMap::new();
    for (user, (id, cluster)) in clusters {
        let point = &present[user][id];
        members
            .entry((user.clone(), cluster.clone()))
            .or_default()
            .push(point);
    }
    let mut measures = BTreeSet::new();
    for ((user, cluster_id), mut points) in members {
        points.sort();
        let embeddings: Vec<Vec<f32>> = points.iter().map(|p| p.embedding.to_f32()).collect();
        let named = points
            .iter()
            .find(|p| p.correction_id == cluster_id)
            .unwrap();
        // a member asking for what the named one asks (non-empty) agrees fully; the others by
        // their cosine to the centroid, as SPEC §4.3's coherence
        let center = centroid(&embeddings).unwrap();
        let coherence = points
            .iter()
            .zip(&embeddings)
            .map(|(p, e)| {
                if !named.requests.is_empty() && p.requests == named.requests {
                    1.0
                } else {
                    cosine_similarity(e, &center)
                }
            })
            .sum::<f64>()
            / points.len() as f64;
        let earliest = points.iter().map(|p| p.ts_micros).min().unwrap();
        let latest = points.iter().map(|p| p.ts_micros).max().unwrap();
        let span_micros = latest - earliest;
        let confidences: Vec<f64> = points
            .iter()
            .map(|p| f64::from(p.confidence_milli) / 1000.0)
            .collect();
        let confidence = preference_confidence(&confidences, DEFAULT_EVIDENCE_WEIGHT);
        measures.insert((
            user,
            ClusterMeasure {
                cluster_id: cluster_id.clone(),
                size: points.len() as u32,
                coherence_milli: (coherence * 1000.0).round() as u16,
                span_micros,
                confidence_milli: (confidence * 1000.0).round() as u16,
                promoted: points.len() >= 3
                    && coherence > 0.8
                    && span_micros as f64 / 1e6 >= SECONDS_PER_DAY,
                centroid: QuantisedEmbedding::from_f32(&centroid(&embeddings).unwrap()),
                latest_micros: latest,
                polarity: named.polarity,
                requests: named.requests.clone(),
                contexts: points
                    .iter()
                    .filter(|p| !p.context.is_empty())
                    .map(|p| p.context.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            },
        ));
    }
    measures
}

/// Patterns from scratch: the promoted measures.
fn patterns_from_scratch(measures: &BTreeSet<Measure>) -> BTreeSet<Pattern> {
    measures
        .iter()
        .filter(|(_, m)| m.promoted)
        .map(|(user, m)| {
            (
                user.clone(),
                PatternRecord {
                    cluster_id: m.cluster_id.clone(),
                    size: m.size,
                    coherence_milli: m.coherence_milli,
                    span_micros: m.span_micros,
                    confidence_milli: m.confidence_milli,
                },
            )
        })
        .collect()
}

/// Per promoted cluster, the present corrections of its user that came after its newest member
/// and, when both ask for something recognised, ask for one of its aspects another way (whatever
/// their polarity), else point the other way and lie at cosine ≥ 0.8 of its centroid; resolved.
fn contradictions_from_scratch(
    present: &Present,
    measures: &BTreeSet<Measure>,
) -> BTreeSet<Contradicted> {
    let mut found = BTreeSet::new();
    for (user, m) in measures.iter().filter(|(_, m)| m.promoted) {
        let by: Vec<&CorrectionPoint> = present[user]
            .values()
            .filter(|p| {
                let asks_otherwise = || {
                    p.requests.0.iter().any(|a| {
                        m.requests
                            .0
                            .iter()
                            .any(|b| a.aspect == b.aspect && a.way != b.way)
                    })
                };
                p.ts_micros > m.latest_micros
                    && if !p.requests.is_empty() && !m.requests.is_empty() {
                        asks_otherwise()
                    } else {
                        p.polarity != m.polarity
                            && cosine_similarity(&p.embedding.to_f32(), &m.centroid.to_f32())
                                >= CONTRADICTION_COSINE
                    }
            })
            .collect();
        if !by.is_empty() {
            found.insert(((user.clone(), m.cluster_id.clone()), resolve(m, &by)));
        }
    }
    found
}

/// Per pattern, the decay trace its present members build.
fn traces_from_scratch(
    present: &Present,
    clusters: &BTreeSet<Pair>,
    patterns: &BTreeSet<Pattern>,
) -> BTreeSet<Trace> {
    patterns
        .iter()
        .filter_map(|(user, pattern)| {
            let activations: Vec<(i64, f64)> = clusters
                .iter()
                .filter(|(u, (_, cluster))| u == user && *cluster == pattern.cluster_id)
                .map(|(_, (id, _))| {
                    let point = &present[user][id];
                    (
                        point.ts_micros.div_euclid(1_000_000),
                        f64::from(point.confidence_milli) / 1000.0,
                    )
                })
                .collect();
            let trace = PreferenceTrace::from_activations(
                &activations,
                &StabilityParams::default(),
                &LifecycleThresholds::default(),
            )?;
            Some(((user.clone(), pattern.cluster_id.clone()), trace))
        })
        .collect()
}

/// As [`difference`], for a collection whose records may have a multiplicity above 1.
fn counted_difference<D: Clone + Eq + Hash + Ord + Debug>(
    name: &str,
    sink: &Sink<D>,
    want: &BTreeMap<D, isize>,
) -> Option<String> {
    let got: BTreeMap<D, isize> = nonzero(sink).into_iter().collect();
    (got != *want).then(|| format!("{name}: got {got:?}, want {want:?}"))
}

/// One random change to the corrections: a new correction named `new_id` (unless that id is
/// taken, in which case it is re-sent with another payload), a new correction made with the same
/// embedding as a present one, a duplicate of a present record, an existing id re-sent with
/// another payload, or the retraction of a record.
fn random_change(
    current: &Corrections,
    topics: &BTreeMap<UserKey, Vec<Vec<f32>>>,
    new_id: String,
    rng: &mut StdRng,
) -> ((UserKey, CorrectionPoint), isize) {
    let pick = |rng: &mut StdRng| current.keys().nth(rng.gen_range(0..current.len())).cloned();
    let roll = rng.gen_range(0..100);
    if !current.is_empty() && roll < 25 {
        (pick(rng).unwrap(), -1)
    } else if !current.is_empty() && roll < 30 {
        (pick(rng).unwrap(), 1)
    } else if !current.is_empty() && roll < 45 {
        // the same correction made again: a new id with an existing embedding
        let (user, old) = pick(rng).unwrap();
        let mut point = old.clone();
        point.correction_id = new_id;
        point.ts_micros += MICROS_PER_HOUR;
        ((user, point), 1)
    } else if !current.is_empty() && roll < 50 {
        let (user, old) = pick(rng).unwrap();
        let point = correction(old.correction_id, &topics[&user], rng);
        ((user, point), 1)
    } else {
        let user = users()[rng.gen_range(0..3)].clone();
        let point = correction(new_id, &topics[&user], rng);
        ((user, point), 1)
    }
}

/// Whether some cluster holds two corrections that ask for different recognised ways of
/// answering (such as opposites): never, however they are linked. Circumstances of the user's
/// ("we're vegetarian") are linked by topic as unread corrections are, so they may share one.
fn cluster_mixing_requests(present: &Present, clusters: &BTreeSet<Pair>) -> Option<String> {
    let mut asked: BTreeMap<(&UserKey, &String), BTreeSet<&RequestSet>> = BTreeMap::new();
    for (user, (id, cluster)) in clusters {
        let requests = &present[user][id].requests;
        if !requests.is_empty() && !requests.only_circumstances() {
            asked.entry((user, cluster)).or_default().insert(requests);
        }
    }
    asked
        .into_iter()
        .find(|(_, sets)| sets.len() > 1)
        .map(|(cluster, sets)| format!("cluster {cluster:?} asks for {sets:?}"))
}

/// What the checked rounds of a stream held: contradictions of each resolution, and those made
/// by a correction of the pattern's own polarity (no negation turned it: only what is asked
/// tells), so the tests can check that the streams exercise them.
#[derive(Default)]
struct Exercised {
    resolutions: BTreeMap<Resolution, usize>,
    without_negation: usize,
}

/// Runs one random stream; returns what its checked rounds exercised.
fn run(workers: usize, seed: u64, rounds: usize) -> Exercised {
    let seen: Arc<Mutex<Exercised>> = Default::default();
    let seen_by_workers = seen.clone();
    // shared by all workers: each worker's inspect adds the updates it saw
    let links_sink: Sink<Pair> = Default::default();
    let clusters_sink: Sink<Pair> = Default::default();
    let patterns_sink: Sink<Pattern> = Default::default();
    let measures_sink: Sink<Measure> = Default::default();
    let traces_sink: Sink<Trace> = Default::default();
    let contradictions_sink: Sink<Contradicted> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, corrections) = scope.new_collection();
            let corrections = present_corrections(corrections);
            let links = similarity_links(
                corrections.clone(),
                LINK_COSINE_THRESHOLD,
                TOPIC_LINK_COSINE,
            );
            let clusters = correction_clusters(corrections.clone(), links.clone());
            let patterns = promote_patterns(corrections.clone(), clusters.clone());
            let measures = cluster_measures(corrections.clone(), clusters.clone());
            measures
                .clone()
                .inspect(collect_into(&measures_sink))
                .probe_with(&probe);
            preference_contradictions(corrections.clone(), measures)
                .inspect(collect_into(&contradictions_sink))
                .probe_with(&probe);
            preference_traces(corrections, clusters.clone(), patterns.clone())
                .inspect(collect_into(&traces_sink))
                .probe_with(&probe);
            links.inspect(collect_into(&links_sink)).probe_with(&probe);
            clusters
                .inspect(collect_into(&clusters_sink))
                .probe_with(&probe);
            patterns
                .inspect(collect_into(&patterns_sink))
                .probe_with(&probe);
            input
        });
        let mut rng = StdRng::seed_from_u64(seed);
        let topics: BTreeMap<UserKey, Vec<Vec<f32>>> = users()
            .into_iter()
            .map(|u| (u, user_topics(&mut rng)))
            .collect();
        let mut current = Corrections::new();
        let mut buckets = BucketsOf::default();
        let mut next_id = 0u64;
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                next_id += 1;
                let new_id = format!("c{next_id:03}");
                let (record, diff) = random_change(&current, &topics, new_id, &mut rng);
                update(worker, &mut input, &mut current, record, diff);
            }
            settle(worker, &probe, &mut input, round as u64 + 1);
            if worker.index() == 0 {
                // every worker's inspect has run for times before the frontier
                let present = present(&current);
                let links = links_from_scratch(&present, &mut buckets);
                let clusters = clusters_from_scratch(&present, &links.keys().cloned().collect());
                let measures = measures_from_scratch(&present, &clusters);
                let patterns = patterns_from_scratch(&measures);
                let traces = traces_from_scratch(&present, &clusters, &patterns);
                let contradictions = contradictions_from_scratch(&present, &measures);
                let mut seen = seen_by_workers.lock().unwrap();
                for ((user, cluster), c) in &contradictions {
                    *seen.resolutions.entry(c.resolution).or_default() += 1;
                    let pattern = measures
                        .iter()
                        .find(|(u, m)| u == user && m.cluster_id == *cluster)
                        .map(|(_, m)| m)
                        .unwrap();
                    seen.without_negation +=
                        c.by.iter()
                            .filter(|id| present[user][*id].polarity == pattern.polarity)
                            .count();
                }
                drop(seen);
                let differences = [
                    cluster_mixing_requests(&present, &clusters),
                    difference("contradictions", &contradictions_sink, &contradictions),
                    counted_difference("links", &links_sink, &links),
                    difference("clusters", &clusters_sink, &clusters),
                    difference("measures", &measures_sink, &measures),
                    difference("patterns", &patterns_sink, &patterns),
                    difference("traces", &traces_sink, &traces),
                ];
                for d in differences.into_iter().flatten() {
                    found.push(format!("seed {seed} round {round}: {d}"));
                }
            }
        }
    });
    let seen = std::mem::take(&mut *seen.lock().unwrap());
    seen
}

#[test]
fn incremental_equals_from_scratch_one_worker() {
    let mut seen = BTreeMap::new();
    let mut without_negation = 0;
    for seed in 0..10 {
        let exercised = run(1, seed, 32);
        for (resolution, n) in exercised.resolutions {
            *seen.entry(resolution).or_insert(0) += n;
        }
        without_negation += exercised.without_negation;
    }
    assert!(without_negation > 0, "no contradiction without a negation");
    // the streams contradict preferences in every way there is
    for resolution in [
        Resolution::Split,
        Resolution::Deactivated,
        Resolution::Contested,
    ] {
        assert!(
            seen.get(&resolution).is_some_and(|n| *n > 0),
            "{resolution:?}: {seen:?}"
        );
    }
}

#[test]
fn incremental_equals_from_scratch_two_workers() {
    for seed in 100..103 {
        run(2, seed, 24);
    }
}

/// `correction_clusters` over links that are an input of their own: reversed pairs,
/// self-links, links to ids that are not present, duplicates and retractions.
fn run_arbitrary_links(workers: usize, seed: u64, rounds: usize) {
    let clusters_sink: Sink<Pair> = Default::default();
    execute(workers, move |worker, found| {
        let probe = Handle::new();
        let (mut corrections_in, mut links_in) = worker.dataflow::<u64, _, _>(|scope| {
            let (corrections_in, corrections) = scope.new_collection();
            let corrections = present_corrections(corrections);
            let (links_in, links) = scope.new_collection();
            correction_clusters(corrections, links)
                .inspect(collect_into(&clusters_sink))
                .probe_with(&probe);
            (corrections_in, links_in)
        });
        let mut rng = StdRng::seed_from_u64(seed);
        // the embeddings do not matter here: links come from their own input
        let topics: BTreeMap<UserKey, Vec<Vec<f32>>> = users()
            .into_iter()
            .map(|u| (u, user_topics(&mut rng)))
            .collect();
        let mut current = Corrections::new();
        let mut links = BTreeMap::<Pair, isize>::new();
        for round in 0..rounds {
            for _ in 0..rng.gen_range(1..6) {
                // ids from a small pool, so corrections come and go under existing links
                let new_id = format!("c{:03}", rng.gen_range(1..13));
                let (record, diff) = random_change(&current, &topics, new_id, &mut rng);
                apply(&mut current, &record, diff);
                let user = users()[rng.gen_range(0..2)].clone();
                let link = (
                    user,
                    (
                        format!("c{:03}", rng.gen_range(1..14)),
                        format!("c{:03}", rng.gen_range(1..14)),
                    ),
                );
                let link_diff = if rng.gen_bool(0.3) { -1 } else { 1 };
                apply(&mut links, &link, link_diff);
                if worker.index() == 0 {
                    corrections_in.update(record, diff);
                    links_in.update(link, link_diff);
                }
            }
            corrections_in.advance_to(round as u64 + 1);
            links_in.advance_to(round as u64 + 1);
            corrections_in.flush();
            links_in.flush();
            worker.step_while(|| probe.less_than(corrections_in.time()));
            if worker.index() == 0 {
                // an undirected link is present when its records in both orders sum above 0
                let mut undirected = BTreeMap::<Pair, isize>::new();
                for ((user, (a, b)), m) in &links {
                    let key = (user.clone(), (a.min(b).clone(), a.max(b).clone()));
                    *undirected.entry(key).or_insert(0) += m;
                }
                let present_links: BTreeSet<Pair> = undirected
                    .into_iter()
                    .filter(|(_, m)| *m > 0)
                    .map(|(link, _)| link)
                    .collect();
                let want = clusters_from_scratch(&present(&current), &present_links);
                if let Some(d) = difference("clusters", &clusters_sink, &want) {
                    found.push(format!("seed {seed} round {round}: {d}"));
                }
            }
        }
    });
}

#[test]
fn clusters_of_arbitrary_links_one_worker() {
    for seed in 200..212 {
        run_arbitrary_links(1, seed, 40);
    }
}

#[test]
fn clusters_of_arbitrary_links_two_workers() {
    for seed in 300..303 {
        run_arbitrary_links(2, seed, 30);
    }
}
