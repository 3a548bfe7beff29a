//! Recall's pure parts: scores, graph expansion, passages.

use super::turn_scoring::TurnWeights;
use super::*;
use engram_connectors::EpisodeRow;

#[test]
fn relevance_is_the_spec_score_of_similarity_recency_and_importance() {
    let at = chrono::DateTime::parse_from_rfc3339("2025-01-08T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let mut hits = ranked(vec![hit("new", "a", 0.8), hit("old", "b", 0.6)]);
    hits[0].ts = at; // "new": now
    hits[1].ts = at - chrono::Duration::days(7); // "old": one time scale ago
    score_relevance(&mut hits, at, 7.0);
    assert!((hits[0].why.relevance - (0.7 * 0.8 + 0.2 * 1.0 + 0.1 * 0.5)).abs() < 1e-6);
    let e_minus_1 = 0.367_879_441_171_442;
    assert!((hits[1].why.recency - e_minus_1).abs() < 1e-9);
    assert!((hits[1].why.relevance - (0.7 * 0.6 + 0.2 * e_minus_1 + 0.1 * 0.5)).abs() < 1e-6);
}

#[test]
fn mrs_weighs_recall_count_recency_similarity_and_feedback() {
    use engram_operators::math::mark::MrsWeights;
    use engram_operators::memory_marks::MemoryMark;
    let at = chrono::DateTime::parse_from_rfc3339("2025-01-08T00:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let mut hits = ranked(vec![hit("used", "a", 0.5), hit("fresh", "b", 0.9)]);
    // scoring put the more similar first
    assert_eq!(
        (hits[0].id.as_str(), hits[1].id.as_str()),
        ("fresh", "used")
    );
    hits[0].ts = at - chrono::Duration::days(1);
    hits[1].ts = at - chrono::Duration::days(1);
    let mut memory = engram_dataflows::views::UserMemory::default();
    let mark = MemoryMark {
        recalls: 4,
        correct: 3,
        incorrect: 0,
        last_recalled_micros: 0,
        trust_micro: 300_000,
        persistence_micro: 1_000_000,
        retained: true,
    };
    memory.marks.insert("used".into(), mark);
    // a = 0.3 for the recall count: "used" wins despite its lower similarity
    let w = MrsWeights::POPULARITY_SIMILARITY;
    score_mrs(&mut hits, &memory, &w, at);
    let raw = |rc: f64, ss: f64, fs: f64| {
        w.recall_count * rc + w.recency / (1.0 + 0.01) + w.similarity * ss + w.feedback * fs
    };
    assert!(raw(4.0, 0.5, 1.0) > raw(0.0, 0.9, 0.0));
    assert_eq!((hits[0].why.mrs, hits[1].why.mrs), (Some(0.0), Some(1.0)));
    assert_eq!((hits[0].why.mark, hits[1].why.mark), (None, Some(mark)));
    // similarity only: the more similar wins
    score_mrs(&mut hits, &memory, &MrsWeights::SIMILARITY_ONLY, at);
    assert_eq!((hits[0].why.mrs, hits[1].why.mrs), (Some(1.0), Some(0.0)));
}

fn limits(neighbours: usize, depth: u8) -> GraphLimits {
    GraphLimits {
        neighbours,
        depth,
        entity_kinds: Vec::new(),
    }
}

#[test]
fn graph_expansion_follows_co_mentions_of_the_query_entities() {
    let mut m = engram_dataflows::views::UserMemory::default();
    for name in ["mara", "lisbon", "porto", "rex", "berlin"] {
        let stats = engram_operators::entities::EntityStats {
            first_seen_micros: 0,
            last_seen_micros: 0,
            mention_count: 1,
            kind: engram_operators::entities::EntityKind::Named,
        };
        m.entities.insert(name.into(), stats);
    }
    for (a, b, w) in [
        ("lisbon", "mara", 3),
        ("mara", "porto", 1),
        ("berlin", "rex", 2),
        ("lisbon", "rex", 1),
        ("berlin", "lisbon", 1),
    ] {
        m.co_mentions.insert(a.into(), b.into(), w);
    }
    let got = graph_expansion(&m, "Where does Mara live now?", &limits(5, 2));
    assert_eq!(
        got,
        vec![
            (
                "lisbon".to_string(),
                "co-mentioned with mara (3×)".to_string()
            ),
            (
                "porto".to_string(),
                "co-mentioned with mara (1×)".to_string()
            ),
        ]
    );
    // one neighbour per entity at most, and what joins two query entities
    let got = graph_expansion(&m, "Did Rex like Lisbon?", &limits(1, 2));
    let names: Vec<&str> = got.iter().map(|(e, _)| e.as_str()).collect();
    assert_eq!(names, ["berlin", "mara"]);
    assert!(got[0].1.contains("joins lisbon and rex") || got[0].1.contains("joins rex and lisbon"));
    assert!(graph_expansion(&m, "nothing known here", &limits(5, 2)).is_empty());
}

#[test]
fn graph_expansion_keeps_to_its_depth_and_entity_kinds() {
    use engram_operators::entities::{EntityKind, EntityStats};
    let mut m = engram_dataflows::views::UserMemory::default();
    // ana – clinic – dr ruiz – oslo – bo: the query names ana and bo
    for (name, kind) in [
        ("ana", EntityKind::Named),
        ("clinic", EntityKind::NounPhrase),
        ("dr ruiz", EntityKind::Named),
        ("oslo", EntityKind::Named),
        ("bo", EntityKind::Named),
    ] {
        let stats = EntityStats {
            first_seen_micros: 0,
            last_seen_micros: 0,
            mention_count: 1,
            kind,
        };
        m.entities.insert(name.into(), stats);
    }
    for (a, b) in [
        ("ana", "clinic"),
        ("clinic", "dr ruiz"),
        ("dr ruiz", "oslo"),
    ] {
        m.co_mentions.insert(a.into(), b.into(), 1);
    }
    m.co_mentions.insert("bo".into(), "oslo".into(), 1);
    let names = |m: &engram_dataflows::views::UserMemory, limits: &GraphLimits| {
        let mut got: Vec<String> = graph_expansion(m, "Did Ana meet Bo?", limits)
            .into_iter()
            .map(|(e, _)| e)
            .collect();
        got.sort();
        got
    };
    // depth 1 and 2: the neighbours only (no entity joins ana and bo directly)
    assert_eq!(names(&m, &limits(5, 1)), ["clinic", "oslo"]);
    assert_eq!(names(&m, &limits(5, 2)), ["clinic", "oslo"]);
    // ana – clinic – dr ruiz – oslo – bo is 4 edges: depth 3 finds no path either
    assert_eq!(names(&m, &limits(5, 3)), ["clinic", "oslo"]);
    // with clinic – oslo co-mentioned, ana – clinic – oslo – bo is a 3-edge path
    m.co_mentions.insert("clinic".into(), "oslo".into(), 1);
    let got = graph_expansion(&m, "Did Ana meet Bo?", &limits(5, 3));
    let clinic = &got.iter().find(|(e, _)| e == "clinic").unwrap().1;
    assert!(
        clinic.contains("on the path ana – clinic – oslo – bo"),
        "{clinic}"
    );
    // named entities only: the noun phrase is neither added nor passed through
    let named = GraphLimits {
        entity_kinds: vec![EntityKind::Named],
        ..limits(5, 3)
    };
    assert_eq!(names(&m, &named), ["oslo"]);
    let got = graph_expansion(&m, "Did Ana meet Bo?", &named);
    assert!(!got[0].1.contains("path"), "{got:?}");
    // off
    assert!(names(&m, &limits(0, 3)).is_empty());
}

fn row(id: &str, content: &str) -> EpisodeRow {
    EpisodeRow {
        id: id.into(),
        event_id: format!("ev-{id}"),
        tenant: "t".into(),
        user: "u".into(),
        session: Some("s".into()),
        role: "user".into(),
        content: content.into(),
        ts: "2024-01-01T00:00:00Z".parse().unwrap(),
        turn: None,
        importance: None,
        log_offset: 0,
        vector: Vec::new(),
    }
}

fn hit(id: &str, content: &str, score: f32) -> EpisodeHit {
    EpisodeHit {
        episode: row(id, content),
        score,
    }
}

/// Vector hits gathered and scored as turns, with no neighbours.
fn ranked(by_vector: Vec<EpisodeHit>) -> Vec<RecallHit> {
    let hits = gather_candidates(
        by_vector,
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        &[],
    );
    rank_turns(
        hits,
        "q",
        asked(),
        None,
        |_| (None, None),
        &TurnWeights::default(),
    )
}

#[test]
fn best_span_is_the_closer_of_the_episode_and_its_passages() {
    // "long" matches weakly as a whole but one of its sentences matches well; "short" has
    // no passages and competes with its own vector.
    let by_vector = vec![
        hit("short", "short turn", 0.6),
        hit("long", "long turn", 0.3),
    ];
    let by_passage = passage_ranking(vec![
        hit("long#p2", "the telling sentence", 0.8),
        hit("long#p0", "another sentence", 0.5),
    ]);
    assert_eq!(by_passage.len(), 1, "an episode once, at its best passage");
    let gathered = gather_candidates(
        by_vector,
        Vec::new(),
        by_passage,
        Vec::new(),
        Vec::new(),
        &[],
    );
    let fused = rank_alone(gathered);
    let (long, short) = (&fused[0], &fused[1]);
    assert_eq!((long.id.as_str(), short.id.as_str()), ("long", "short"));
    assert_eq!(long.why.span_rank, Some(1));
    assert_eq!(long.why.span_similarity, Some(0.8));
    assert_eq!(long.why.vector_rank, Some(2));
    assert_eq!(long.why.passage.as_deref(), Some("the telling sentence"));
    assert_eq!(
        long.content, "long turn",
        "the episode, not the passage, is returned"
    );
    assert_eq!(short.why.span_rank, Some(2));
    assert_eq!(short.why.passage, None);
    // cosine shares 0.8/0.8 and 0.6/0.8, each + 0.5 of the (shared) session's best
    assert!((long.score - 1.5).abs() < 1e-6, "{}", long.score);
    assert!((short.score - 1.25).abs() < 1e-6, "{}", short.score);
}

#[test]
fn an_episode_found_only_through_a_passage_comes_back_whole() {
    let by_passage = passage_ranking(vec![hit("e1#p0", "a sentence", 0.7)]);
    let gathered = gather_candidates(
        Vec::new(),
        Vec::new(),
        by_passage,
        vec![row("e1", "the whole turn")],
        Vec::new(),
        &[],
    );
    let fused = rank_alone(gathered);
    assert_eq!(fused.len(), 1);
    assert_eq!(fused[0].content, "the whole turn");
    assert_eq!(fused[0].why.span_similarity, Some(0.7));
    // a passage whose episode is gone is dropped
    let orphan = passage_ranking(vec![hit("gone#p0", "x", 0.9)]);
    assert!(
        gather_candidates(Vec::new(), Vec::new(), orphan, Vec::new(), Vec::new(), &[]).is_empty()
    );
}

#[test]
fn a_turn_is_lifted_by_its_reply_and_by_the_speaker_the_question_names() {
    // Caroline asks, Melanie answers; a question about Melanie
    let mut rows = [
        row("c1", "Caroline: What did you paint last week?"),
        row("m1", "Melanie: A sunset over the lake, for my kids."),
        row("c2", "Caroline: I went to a support group."),
        row("m2", "Melanie: That sounds brave!"),
    ];
    rows[1].role = "assistant".into();
    rows[3].role = "assistant".into();
    let by_vector = vec![
        EpisodeHit {
            episode: rows[0].clone(),
            score: 0.6,
        },
        EpisodeHit {
            episode: rows[1].clone(),
            score: 0.5,
        },
        EpisodeHit {
            episode: rows[2].clone(),
            score: 0.4,
        },
        EpisodeHit {
            episode: rows[3].clone(),
            score: 0.1,
        },
    ];
    let next = |id: &str| match id {
        "c1" => (None, Some("m1".to_string())),
        "m1" => (Some("c1".to_string()), Some("c2".to_string())),
        "c2" => (Some("m1".to_string()), Some("m2".to_string())),
        "m2" => (Some("c2".to_string()), None),
        _ => (None, None),
    };
    let gathered = gather_candidates(
        by_vector,
        Vec::new(),
        Vec::new(),
        Vec::new(),
        Vec::new(),
        &[],
    );
    let hits = rank_turns(
        gathered,
        "What did Melanie paint?",
        asked(),
        None,
        next,
        &TurnWeights::default(),
    );
    let order: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
    // m1: 0.5/0.6 · 1.7 (Melanie) + 0.4 · 1.0 (c1) = 1.817 beats c1: 1.0 + 0.4 · 1.417 = 1.567
    // (without the speaker, c1 would win: 1.333 against 1.233)
    assert_eq!(order[..2], ["m1", "c1"], "{order:?}");
    let signals = hits[0].why.signals.unwrap();
    assert!((signals.neighbour - 0.4).abs() < 1e-9);
    assert!((signals.fused - 0.5 / 0.6).abs() < 1e-6);
    // without a speaker prefix the role is the speaker: no name is known, and turns of one
    // role are not each other's prompt or reply
    let plain: Vec<EpisodeHit> = rows
        .iter()
        .map(|r| EpisodeHit {
            episode: row(&r.id, r.content.split_once(": ").unwrap().1),
            score: 0.5,
        })
        .collect();
    let gathered = gather_candidates(plain, Vec::new(), Vec::new(), Vec::new(), Vec::new(), &[]);
    // every turn is here (`complete`): BM25 is computed among them, "paint" in c1 alone
    let words = analysed(&gathered);
    let in_process = InProcessText {
        words: &words,
        expansion: &[],
        respelled: &[],
    };
    let hits = rank_turns(
        gathered,
        "What did Melanie paint?",
        asked(),
        Some(in_process),
        next,
        &TurnWeights::default(),
    );
    assert!(hits.iter().all(|h| h.why.signals.unwrap().neighbour == 0.0));
    assert_eq!(hits[0].id, "c1");
    assert_eq!(hits[0].why.text_rank, Some(1));
    assert!(hits[1..].iter().all(|h| h.why.text_bm25.is_none()));
    let score_of = |id: &str| hits.iter().find(|h| h.id == id).unwrap().score;
    assert!(score_of("c1") > score_of("m1"));
}

#[test]
fn a_misspelled_question_word_scores_as_the_word_it_was_read_as() {
    use super::respelling::respell;
    let rows = [
        row(
            "a",
            "Maria: The shelter fundraiser is on Saturday, a bake sale and a raffle.",
        ),
        row("b", "Maria: I volunteer at the shelter every week."),
        row("c", "John: Planning a trip to the shelter's open day."),
    ];
    let rank = |respelled: &[super::respelling::Respelling]| {
        let hits: Vec<EpisodeHit> = rows
            .iter()
            .map(|r| EpisodeHit {
                episode: r.clone(),
                score: 0.5,
            })
            .collect();
        let gathered = gather_candidates(hits, Vec::new(), Vec::new(), Vec::new(), Vec::new(), &[]);
        let words = analysed(&gathered);
        let in_process = InProcessText {
            words: &words,
            expansion: &[],
            respelled,
        };
        rank_turns(
            gathered,
            "What happens at the funraiser?",
            asked(),
            Some(in_process),
            |_| (None, None),
            &TurnWeights::default(),
        )
    };
    // as typed, no word of the question is in a turn
    let typed = rank(&[]);
    assert!(typed.iter().all(|h| h.why.text_bm25.is_none()));
    // read as "fundraiser", the word the user's turns use
    let words: Vec<Vec<String>> = rows.iter().map(|r| bm25::analyse(&r.content)).collect();
    let respelled = respell("What happens at the funraiser?", &words, |_| false);
    assert_eq!(respelled.len(), 1);
    assert_eq!(respelled[0].meant, "fundrais");
    let read = rank(&respelled);
    assert_eq!(
        read[0].id,
        "a",
        "{:?}",
        read.iter().map(|h| &h.id).collect::<Vec<_>>()
    );
    assert_eq!(read[0].why.text_rank, Some(1));
}

#[test]
fn merged_rankings_keep_each_ones_order() {
    let scored = |id: &str, score: f32| RecallHit {
        score,
        ..RecallHit::from_row(&row(id, id))
    };
    // "a" is in ranking order though its scores rise (a counting question's spread)
    let a = vec![scored("a1", 3.0), scored("a2", 1.0), scored("a3", 2.0)];
    let b = vec![scored("b1", 2.5), scored("b2", 1.5)];
    let ids: Vec<String> = merge_by_score(a, b).into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["a1", "b1", "b2", "a2", "a3"]);
}

/// The candidates ranked for the question "q", incomplete, with no neighbours and the default
/// weights.
fn rank_alone(gathered: Vec<RecallHit>) -> Vec<RecallHit> {
    rank_turns(
        gathered,
        "q",
        asked(),
        None,
        |_| (None, None),
        &TurnWeights::default(),
    )
}

fn analysed(hits: &[RecallHit]) -> Vec<Arc<[String]>> {
    hits.iter()
        .map(|h| super::bm25::analyse(&h.content).into())
        .collect()
}

#[test]
fn in_process_graph_scores_are_bm25_of_the_expansion_entities_among_the_turns() {
    let turns = [
        ("t1", "Caroline joined a support group."),
        ("t2", "The support group met again with Caroline and Mel."),
        ("t3", "I painted a lake."),
    ];
    let hits: Vec<EpisodeHit> = turns
        .iter()
        .map(|(id, text)| EpisodeHit {
            episode: row(id, text),
            score: 0.5,
        })
        .collect();
    let gathered = gather_candidates(hits, Vec::new(), Vec::new(), Vec::new(), Vec::new(), &[]);
    let words = analysed(&gathered);
    let expansion = [(
        "support group".to_string(),
        "caroline -> support group".to_string(),
    )];
    let in_process = InProcessText {
        words: &words,
        expansion: &expansion,
        respelled: &[],
    };
    let ranked = rank_turns(
        gathered,
        "What did she paint?",
        asked(),
        Some(in_process),
        |_| (None, None),
        &TurnWeights::default(),
    );
    let hit = |id: &str| ranked.iter().find(|h| h.id == id).unwrap();
    // without stop words the turns hold 4, 5 and 2 words; "support" and "group" are in t1 and
    // t2, 2 of 3 turns: idf = ln(1 + 1.5/2.5); t1 is the shorter, so it ranks first
    let idf = (1.0f64 + 1.5 / 2.5).ln();
    let lens = [4.0, 5.0, 2.0];
    let avg = lens.iter().sum::<f64>() / 3.0;
    let tf = |len: f64| 2.2 / (1.0 + 1.2 * (0.25 + 0.75 * len / avg));
    let g1 = hit("t1").why.graph_bm25.unwrap() as f64;
    assert!((g1 - 2.0 * idf * tf(lens[0])).abs() < 1e-5, "{g1}");
    assert_eq!(hit("t1").why.graph_rank, Some(1));
    assert_eq!(hit("t2").why.graph_rank, Some(2));
    assert_eq!(
        hit("t1").why.graph_via,
        ["support group: caroline -> support group"]
    );
    assert!(hit("t3").why.graph_bm25.is_none() && hit("t3").why.graph_rank.is_none());
    // "paint" only in t3
    assert_eq!(hit("t3").why.text_rank, Some(1));
}

/// When the tests' questions are asked (none of them places its event in time).
fn asked() -> chrono::DateTime<chrono::Utc> {
    "2023-06-01T12:00:00Z".parse().expect("a time")
}

#[test]
fn the_text_ranking_of_facts_is_bm25_among_the_rows_found_whatever_lance_scored() {
    // Lance's scores (99, 98) came from every tenant's rows: they are replaced
    let by_vector = vec![hit("a", "My garden roses", 0.9), hit("b", "The car", 0.5)];
    let by_text = vec![
        hit("c", "Garden, garden shed", 99.0),
        hit("a", "My garden roses", 98.0),
    ];
    let ranked = text_ranking_among(&by_vector, &by_text, "the garden?");
    // documents a = [garden, rose], b = [car], c = [garden, garden, shed]: average length 2;
    // "garden" in 2 of 3, idf = ln(1 + 1.5/2.5)
    let idf = 1.6f64.ln();
    let tf = |f: f64, len: f64| f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len / 2.0));
    let got: Vec<(&str, f32)> = ranked
        .iter()
        .map(|h| (h.episode.id.as_str(), h.score))
        .collect();
    let want = [
        ("c", (idf * tf(2.0, 3.0)) as f32),
        ("a", (idf * tf(1.0, 2.0)) as f32),
    ];
    assert_eq!(got.len(), 2, "{got:?}");
    for ((id, score), (want_id, want_score)) in got.iter().zip(want) {
        assert_eq!(*id, want_id);
        assert!((score - want_score).abs() < 1e-6, "{got:?}");
    }
    // nothing found, nothing ranked; a query of stop words matches nothing
    assert!(text_ranking_among(&[], &[], "garden").is_empty());
    assert!(text_ranking_among(&by_vector, &by_text, "the my").is_empty());
}

#[test]
fn in_process_scoring_replaces_every_full_text_score_lance_gave_and_ties_ignore_its_order() {
    // a large user's candidates: one found by vector search, three only by Lance's full-text
    // search (in Lance's order, with Lance's scores), one of them also by its graph search
    let by_vector = vec![hit("v", "We watched the parade downtown.", 0.6)];
    let by_text = vec![
        hit("t2", "The café by the parade route.", 7.0),
        hit("t1", "The café by the parade route.", 6.0),
        hit("t3", "Cafe opens at nine.", 5.0),
    ];
    let by_graph = vec![hit("t3", "Cafe opens at nine.", 3.0)];
    let expansion = vec![("café".to_string(), "named with the parade".to_string())];
    let gathered = gather_candidates(
        by_vector,
        by_text,
        Vec::new(),
        Vec::new(),
        by_graph,
        &expansion,
    );
    assert_eq!(
        gathered[3].why.graph_bm25,
        Some(3.0),
        "Lance's graph score, before"
    );
    let words = analysed(&gathered);
    let in_process = InProcessText {
        words: &words,
        expansion: &expansion,
        respelled: &[],
    };
    let hits = rank_turns(
        gathered,
        "Where was the parade?",
        asked(),
        Some(in_process),
        |_| (None, None),
        &TurnWeights::default(),
    );
    let why = |id: &str| hits.iter().find(|h| h.id == id).unwrap().why.clone();
    // "cafe" (no accent) is not the entity "café" here: Lance's graph score is gone, not kept
    assert_eq!((why("t3").graph_rank, why("t3").graph_bm25), (None, None));
    assert!(why("t3").graph_via.is_empty());
    assert_eq!(why("t3").text_bm25, None, "no word of the question");
    // t1 and t2 tie on the question's words; Lance gave t2 first, the tie goes to t1 (by id)
    assert_eq!(why("t1").text_bm25, why("t2").text_bm25);
    assert!(why("t1").text_rank < why("t2").text_rank);
    assert!(why("t1").graph_bm25.is_some() && why("t2").graph_bm25.is_some());
}
