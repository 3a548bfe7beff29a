//! Hand-built cases of the correction operators: erasing the middle of a chain splits its
//! cluster (`similarity_links`, `correction_clusters`, `promote_patterns`), opposite requests
//! never join through a chain of embeddings, and a topic term links only among its first holders
//! (`topic_links`).

mod common;

use common::{collect_into, difference, nonzero, settle, Sink};
use differential_dataflow::input::Input;
use engram_operators::correction_clusters::{
    correction_clusters, present_corrections, promote_patterns, similarity_links, topic_links,
    CorrectionPoint, PatternRecord, Polarity, QuantisedEmbedding, TopicHolder, UserKey,
    LINK_COSINE_THRESHOLD, TOPIC_LINK_COSINE, TOPIC_TERM_HOLDERS,
};
use engram_operators::requests::{requests_of, RequestSet};
use std::collections::BTreeSet;
use timely::dataflow::operators::probe::Handle;

type Pair = (UserKey, (String, String));
type Pattern = (UserKey, PatternRecord);

const DIMS: usize = 12;
const MICROS_PER_HOUR: i64 = 3_600_000_000;

/// `((user), (x, y))` for each `(x, y)`.
fn pairs_of(user: &UserKey, pairs: &[(&str, &str)]) -> BTreeSet<Pair> {
    pairs
        .iter()
        .map(|(x, y)| (user.clone(), (x.to_string(), y.to_string())))
        .collect()
}

/// A correction of the chain test: a unit vector at `degrees` in the first two dimensions.
fn chain_point(id: &str, day: i64, degrees: f32) -> CorrectionPoint {
    let mut v = vec![0.0; DIMS];
    v[0] = degrees.to_radians().cos();
    v[1] = degrees.to_radians().sin();
    CorrectionPoint {
        correction_id: id.into(),
        ts_micros: day * 24 * MICROS_PER_HOUR,
        confidence_milli: 900,
        polarity: Polarity::Towards,
        requests: RequestSet::default(),
        context: String::new(),
        embedding: QuantisedEmbedding::from_f32(&v),
        topics: Vec::new(),
    }
}

/// A chain a – b – c (a and c too far apart to link) forms one cluster and a pattern; erasing
/// b splits it into two singletons and withdraws the pattern; b's return restores both.
#[test]
fn erasing_the_middle_of_a_chain_splits_its_cluster() {
    timely::execute(timely::Config::thread(), |worker| {
        let user: UserKey = ("t".into(), "u".into());
        // cos 30° = 0.866 ≥ 0.85 between neighbours, cos 60° = 0.5 between the ends
        let (a, b, c) = (
            chain_point("a", 0, 0.0),
            chain_point("b", 1, 30.0),
            chain_point("c", 2, 60.0),
        );
        let links_sink: Sink<Pair> = Default::default();
        let clusters_sink: Sink<Pair> = Default::default();
        let patterns_sink: Sink<Pattern> = Default::default();
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
            promote_patterns(corrections, clusters.clone())
                .inspect(collect_into(&patterns_sink))
                .probe_with(&probe);
            links.inspect(collect_into(&links_sink)).probe_with(&probe);
            clusters
                .inspect(collect_into(&clusters_sink))
                .probe_with(&probe);
            input
        });
        let pattern = PatternRecord {
            cluster_id: "a".into(),
            size: 3,
            // mean of cos 30°, 1, cos 30° to the centroid's direction at 30°
            coherence_milli: 911,
            span_micros: 2 * 24 * MICROS_PER_HOUR,
            // 1 − (1 − 0.5·0.9)³ = 0.833625
            confidence_milli: 834,
        };
        let promoted = BTreeSet::from([(user.clone(), pattern)]);
        let joined = pairs_of(&user, &[("a", "a"), ("b", "a"), ("c", "a")]);

        for p in [&a, &b, &c] {
            input.insert((user.clone(), p.clone()));
        }
        settle(worker, &probe, &mut input, 1);
        let chain = pairs_of(&user, &[("a", "b"), ("b", "c")]);
        assert_eq!(difference("links", &links_sink, &chain), None);
        assert_eq!(difference("clusters", &clusters_sink, &joined), None);
        assert_eq!(difference("patterns", &patterns_sink, &promoted), None);

        input.remove((user.clone(), b.clone()));
        settle(worker, &probe, &mut input, 2);
        let split = pairs_of(&user, &[("a", "a"), ("c", "c")]);
        assert_eq!(difference("links", &links_sink, &BTreeSet::new()), None);
        assert_eq!(difference("clusters", &clusters_sink, &split), None);
        assert_eq!(
            difference("patterns", &patterns_sink, &BTreeSet::new()),
            None
        );

        input.insert((user.clone(), b));
        settle(worker, &probe, &mut input, 3);
        assert_eq!(difference("clusters", &clusters_sink, &joined), None);
        assert_eq!(difference("patterns", &patterns_sink, &promoted), None);
    })
    .unwrap();
}

/// "keep it short" (a) and "give me more detail" (c) lie at cos 30° of an unread correction
/// (b) each, as the chain test's a and c do of its b: a paraphrase of a (d, orthogonal to all)
/// joins it by what it asks, but neither a nor c links to b, so the opposites stay apart; b's
/// retraction and return change nothing.
#[test]
fn opposite_requests_never_join_through_an_unread_correction() {
    timely::execute(timely::Config::thread(), |worker| {
        let user: UserKey = ("t".into(), "u".into());
        let asking = |id: &str, day: i64, degrees: f32, text: &str| CorrectionPoint {
            requests: requests_of(text),
            ..chain_point(id, day, degrees)
        };
        let mut orthogonal = chain_point("d", 3, 0.0);
        orthogonal.embedding =
            QuantisedEmbedding::from_f32(&[0., 0., 0., 0., 1., 0., 0., 0., 0., 0., 0., 0.]);
        orthogonal.requests = requests_of("way too wordy");
        let points = [
            asking("a", 0, 0.0, "keep it short"),
            chain_point("b", 1, 30.0),
            asking("c", 2, 60.0, "give me more detail"),
            orthogonal,
        ];
        assert!(points[1].requests.is_empty());
        let clusters_sink: Sink<Pair> = Default::default();
        let probe = Handle::new();
        let mut input = worker.dataflow::<u64, _, _>(|scope| {
            let (input, corrections) = scope.new_collection();
            let corrections = present_corrections(corrections);
            let links = similarity_links(
                corrections.clone(),
                LINK_COSINE_THRESHOLD,
                TOPIC_LINK_COSINE,
            );
            correction_clusters(corrections, links)
                .inspect(collect_into(&clusters_sink))
                .probe_with(&probe);
            input
        });
        let apart = pairs_of(&user, &[("a", "a"), ("b", "b"), ("c", "c"), ("d", "a")]);
        for p in &points {
            input.insert((user.clone(), p.clone()));
        }
        settle(worker, &probe, &mut input, 1);
        assert_eq!(difference("clusters", &clusters_sink, &apart), None);
        input.remove((user.clone(), points[1].clone()));
        settle(worker, &probe, &mut input, 2);
        let without_b = pairs_of(&user, &[("a", "a"), ("c", "c"), ("d", "a")]);
        assert_eq!(difference("clusters", &clusters_sink, &without_b), None);
        input.insert((user.clone(), points[1].clone()));
        settle(worker, &probe, &mut input, 3);
        assert_eq!(difference("clusters", &clusters_sink, &apart), None);
    })
    .unwrap();
}

/// A dataflow of [`topic_links`] alone: its input, the links it outputs and its probe.
fn topic_links_of(
    worker: &mut timely::worker::Worker,
) -> (
    differential_dataflow::input::InputSession<u64, (UserKey, TopicHolder), isize>,
    Sink<Pair>,
    Handle<u64>,
) {
    let sink: Sink<Pair> = Default::default();
    let probe = Handle::new();
    let input = worker.dataflow::<u64, _, _>(|scope| {
        let (input, holders) = scope.new_collection::<(UserKey, TopicHolder), isize>();
        topic_links(holders, TOPIC_LINK_COSINE)
            .inspect(collect_into(&sink))
            .probe_with(&probe);
        input
    });
    (input, sink, probe)
}

/// A unit vector at `degrees` in the plane of dimensions 2 and 3.
fn in_plane(degrees: f32) -> QuantisedEmbedding {
    let mut v = vec![0.0; DIMS];
    v[2] = degrees.to_radians().cos();
    v[3] = degrees.to_radians().sin();
    QuantisedEmbedding::from_f32(&v)
}

/// A term links only among its first [`TOPIC_TERM_HOLDERS`] holders in time: two late
/// corrections that share only a common term do not link until earlier holders are retracted,
/// and a correction whose nearest topic neighbour is below [`TOPIC_LINK_COSINE`] links to none.
#[test]
fn a_term_links_only_among_its_first_holders() {
    timely::execute(timely::Config::thread(), |worker| {
        let user: UserKey = ("t".into(), "u".into());
        let (mut input, sink, probe) = topic_links_of(worker);
        let mut along_first = vec![0.0; DIMS];
        along_first[0] = 1.0;
        let holder = |id: &str, ts: i64, embedding: QuantisedEmbedding| {
            (
                user.clone(),
                (
                    id.to_string(),
                    ts,
                    embedding,
                    vec!["diet".to_string()],
                    true,
                ),
            )
        };
        let early: Vec<_> = (0..TOPIC_TERM_HOLDERS as i64)
            .map(|i| {
                holder(
                    &format!("e{i:02}"),
                    i,
                    QuantisedEmbedding::from_f32(&along_first),
                )
            })
            .collect();
        // l1 and l2 at cos 60° = 0.5, l3 at 90° from l2 and 150° from l1; all orthogonal to the
        // early ones
        let late = [
            holder("l1", 100, in_plane(0.0)),
            holder("l2", 101, in_plane(60.0)),
            holder("l3", 102, in_plane(150.0)),
        ];
        for h in early.iter().chain(&late) {
            input.insert(h.clone());
        }
        settle(worker, &probe, &mut input, 1);
        let linked = |a: &str, b: &str| {
            nonzero(&sink)
                .iter()
                .any(|((u, pair), _)| *u == user && *pair == (a.to_string(), b.to_string()))
        };
        let touches_l3 = || {
            nonzero(&sink)
                .iter()
                .any(|((_, (a, b)), _)| a == "l3" || b == "l3")
        };
        assert!(
            !linked("l1", "l2"),
            "l1 and l2 are not among the first holders"
        );
        assert!(linked("e00", "e01"), "the early ones link among themselves");

        // three early holders go: l1, l2 and l3 are among the first now
        for h in &early[..3] {
            input.remove(h.clone());
        }
        settle(worker, &probe, &mut input, 2);
        assert!(linked("l1", "l2"));
        assert!(!touches_l3(), "l3's nearest neighbour is at cos 0");
        assert!(nonzero(&sink).iter().all(|(_, m)| *m == 1));
    })
    .unwrap();
}

/// A holder that does not seek (a correction that only names a circumstance) links only where
/// another's nearest neighbour is it: `c`'s nearest is `x`, but `x`'s is `y`, so `c` stays
/// apart until it seeks.
#[test]
fn a_holder_that_does_not_seek_is_only_found() {
    timely::execute(timely::Config::thread(), |worker| {
        let user: UserKey = ("t".into(), "u".into());
        let (mut input, sink, probe) = topic_links_of(worker);
        let holder = |id: &str, degrees: f32, seeks: bool| {
            let terms = vec!["diet".to_string()];
            (
                user.clone(),
                (id.to_string(), 0, in_plane(degrees), terms, seeks),
            )
        };
        // c at 0°, x at 30°, y at 50°: c's nearest is x, x's and y's are each other
        let c = holder("c", 0.0, false);
        for h in [c.clone(), holder("x", 30.0, true), holder("y", 50.0, true)] {
            input.insert(h);
        }
        settle(worker, &probe, &mut input, 1);
        let pairs = || -> Vec<(String, String)> {
            let mut pairs: Vec<_> = nonzero(&sink)
                .into_iter()
                .map(|((_, pair), _)| pair)
                .collect();
            pairs.sort();
            pairs
        };
        assert_eq!(pairs(), [("x".to_string(), "y".to_string())]);

        input.remove(c);
        input.insert(holder("c", 0.0, true));
        settle(worker, &probe, &mut input, 2);
        assert_eq!(
            pairs(),
            [
                ("c".to_string(), "x".to_string()),
                ("x".to_string(), "y".to_string())
            ]
        );
    })
    .unwrap();
}
