//! The typed read model serialises to exactly the JSON the hand-built one did.

use super::by_hand::memory_json_by_hand;
use super::{memory_json, user_memory_view};
use engram_dataflows::views::UserMemory;
use engram_dataflows::MemoryViews;
use engram_operators::correction_clusters::PatternRecord;
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::entities::{EntityKind, EntityStats};
use engram_operators::facts::FactVersion;
use engram_operators::lifecycle::PreferenceTrace;
use engram_operators::math::decay::LifecycleState;
use engram_operators::memory_marks::MemoryMark;
use engram_operators::preference_contradictions::{Contradiction, Resolution};
use engram_operators::relations::RelationNode;
use engram_operators::skill_confidence::{DiscountedTally, SkillConfidence};
use engram_operators::skill_feedback::FeedbackTally;
use engram_operators::style_preferences::UserStyle;
use engram_operators::summaries::SummaryNode;
use serde_json::Value;
use std::sync::Arc;

const DAY: i64 = 86_400;
/// 2024-03-01T00:00:00Z, seconds.
const T0: i64 = 1_709_251_200;

fn version(id: &str, value: &str, from: i64, to: Option<i64>, next: Option<&str>) -> FactVersion {
    FactVersion {
        fact_id: id.into(),
        value: value.into(),
        valid_from: from * 1_000_000,
        valid_to: to.map(|t| t * 1_000_000),
        superseded_by: next.map(Into::into),
        evidence: if id == "f3" {
            String::new()
        } else {
            format!("ep-{id}")
        },
    }
}

fn note(id: &str, day: i64, context: &str, expected: Option<&str>) -> CorrectionNote {
    CorrectionNote {
        correction_id: id.into(),
        ts_micros: (T0 + day * DAY) * 1_000_000,
        session: format!("s-{day}"),
        correction_type: "FORMAT".into(),
        original: format!("answer {id}"),
        corrected: (expected.is_none()).then(|| format!("better {id}")),
        expected_behavior: expected.map(Into::into),
        confidence_milli: 875,
        context: context.into(),
        held: false,
    }
}

/// A user with some of everything the views hold.
fn populated() -> UserMemory {
    let mut m = UserMemory::default();
    m.facts.insert(
        ("user".into(), "lives_in".into()),
        [
            version("f1", "Lyon", T0, Some(T0 + 3 * DAY), Some("f2")),
            version("f2", "Paris", T0 + 3 * DAY, None, None),
        ]
        .into(),
    );
    m.facts.insert(
        ("user".into(), "preference: length".into()),
        [version("f4", "less", T0 + DAY, None, None)].into(),
    );
    m.facts.insert(
        ("sister".into(), "name".into()),
        [version("f3", "Ada", T0 + 2 * DAY, None, None)].into(),
    );
    for (name, kind, n) in [
        ("paris", EntityKind::Named, 3),
        ("ada", EntityKind::Named, 1),
        // "ada" is its short name
        ("ada lovelace", EntityKind::Named, 2),
        ("new laptop", EntityKind::NounPhrase, 2),
    ] {
        let stats = EntityStats {
            first_seen_micros: T0 * 1_000_000,
            last_seen_micros: (T0 + n as i64 * DAY) * 1_000_000,
            mention_count: n,
            kind,
        };
        m.entities.insert(Arc::from(name), stats);
    }
    m.co_mentions.insert("paris".into(), "ada".into(), 2);
    m.co_mentions.insert("new laptop".into(), "paris".into(), 1);
    m.co_mentions.insert("ada".into(), "new laptop".into(), 5);
    let tally = |s, f, n| FeedbackTally {
        successes: s,
        failures: f,
        neutral: n,
    };
    m.skills.insert((0, "concise".into()), tally(4, 1, 2));
    m.skills.insert((3, "detailed".into()), tally(0, 2, 0));
    m.discounted_skills.insert(
        (0, "concise".into()),
        DiscountedTally {
            successes_micro: 3_500_000,
            failures_micro: 900_000,
            as_of_secs: T0 + 5 * DAY,
            half_life_secs: 30 * DAY as u64,
        },
    );
    m.skill_confidence.insert(
        "concise".into(),
        SkillConfidence {
            confidence_micro: 640_000,
            uses: 7,
        },
    );
    for (c, cluster) in [("c1", "c1"), ("c2", "c1"), ("c3", "c1"), ("c4", "c4")] {
        m.correction_clusters.insert(c.into(), cluster.into());
    }
    m.corrections
        .insert("c1".into(), note("c1", 1, "", Some("Use bullet points")));
    m.corrections
        .insert("c2".into(), note("c2", 2, "external client", None));
    m.corrections
        .insert("c3".into(), note("c3", 4, "", Some("Bullets, please")));
    m.corrections
        .insert("c4".into(), note("c4", 5, "work", None));
    // too unsure to learn from: held for clarification
    let mut unsure = note("c5", 6, "", Some("maybe less of that"));
    unsure.confidence_milli = 200;
    unsure.held = true;
    m.corrections.insert("c5".into(), unsure);
    m.patterns.insert(
        "c1".into(),
        PatternRecord {
            cluster_id: "c1".into(),
            size: 3,
            coherence_milli: 912,
            span_micros: 3 * DAY * 1_000_000,
            confidence_milli: 804,
        },
    );
    m.preferences.insert(
        "c1".into(),
        PreferenceTrace {
            last_activation_secs: T0 + 4 * DAY,
            stability_secs: 10 * DAY,
            activations: 3,
        },
    );
    m.preferences.insert(
        "c4".into(),
        PreferenceTrace {
            last_activation_secs: T0,
            stability_secs: DAY,
            activations: 1,
        },
    );
    m.preference_states
        .insert("c1".into(), LifecycleState::Active);
    m.contradictions.insert(
        "c1".into(),
        Contradiction {
            resolution: Resolution::Split,
            by: vec!["c4".into()],
            holds_in: vec!["".into()],
            contradicted_in: vec!["work".into()],
        },
    );
    let mut style_micro = [0; 16];
    for (i, x) in style_micro.iter_mut().enumerate() {
        *x = 500_000 + 31_250 * i as u32;
    }
    m.style = Some(UserStyle {
        style_micro,
        feedback_count: 9,
    });
    m.marks.insert(
        "ep-1".into(),
        MemoryMark {
            recalls: 4,
            correct: 3,
            incorrect: 1,
            last_recalled_micros: (T0 + 2 * DAY) * 1_000_000,
            trust_micro: 712_500,
            persistence_micro: 950_000,
            retained: true,
        },
    );
    {
        use engram_operators::memories::{ContentType, RetrievalTrait};
        use engram_operators::retrieval_preferences::TraitTally;
        m.retrieval.insert(
            RetrievalTrait::Assistant(false),
            TraitTally { up: 3, down: 1 },
        );
        let list = RetrievalTrait::Content(ContentType::List);
        m.retrieval.insert(list, TraitTally { up: 0, down: 2 });
    }
    m.summaries.insert(
        "sum-1".into(),
        SummaryNode {
            id: "summary:1".into(),
            event_id: "sum-1".into(),
            ts_micros: (T0 + 6 * DAY) * 1_000_000,
            log_offset: 42,
            content: "The user moved from Lyon to Paris.".into(),
            covers: vec!["ep-f1".into(), "ep-f2".into()],
        },
    );
    // one relation with a time and a confidence, one with neither and no evidence
    let relation = |n: u64, object: &str, time: Option<&str>, evidence: &[&str]| RelationNode {
        id: format!("relation:{n}"),
        event_id: format!("rel-{n}"),
        ts_micros: (T0 + 7 * DAY) * 1_000_000,
        log_offset: 50 + n,
        subject: "Ada".into(),
        relation: "moved to".into(),
        object: object.into(),
        time: time.map(Into::into),
        evidence: evidence.iter().map(|e| e.to_string()).collect(),
        confidence_milli: time.map(|_| 875),
    };
    for r in [
        relation(1, "Paris", Some("2024-03-04"), &["ep-f1", "ep-f2"]),
        relation(2, "Lyon", None, &[]),
    ] {
        m.relations.insert(r.event_id.clone(), r);
    }
    m
}

fn views() -> MemoryViews {
    let mut views = MemoryViews {
        as_of: 1234,
        engine_time_secs: (T0 + 8 * DAY) as u64,
        ..Default::default()
    };
    let key = ("acme".to_string(), "u1".to_string());
    views.users.insert(key.clone(), populated());
    views.user_teams.insert(key, "support".into());
    views.population.insert(
        ("acme".into(), 0, "concise".into()),
        FeedbackTally {
            successes: 40,
            failures: 12,
            neutral: 3,
        },
    );
    views
}

#[test]
fn typed_views_serialise_to_the_hand_built_json() {
    let views = views();
    let typed = memory_json(&views, "acme", "u1");
    let by_hand = memory_json_by_hand(&views, "acme", "u1");
    // everything is there, so the comparison compares something
    for (part, n) in [
        ("facts", 4),
        ("entities", 4),
        ("co_mentions", 3),
        ("skills", 2),
        ("correction_clusters", 2),
        ("preferences", 2),
        ("stated_preferences", 1),
        ("corrections", 5),
        ("needs_clarification", 1),
        ("marks", 1),
        ("retrieval_preferences", 2),
        ("summaries", 1),
        ("relations", 2),
    ] {
        assert_eq!(by_hand[part].as_array().map(Vec::len), Some(n), "{part}");
    }
    assert!(by_hand["style"].is_object() && by_hand["team"].is_string());
    let aliases: Vec<(&Value, &Value)> = by_hand["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((&e["name"], e.get("alias_of")?)))
        .collect();
    assert_eq!(
        aliases,
        [(
            &serde_json::json!("ada"),
            &serde_json::json!("ada lovelace")
        )]
    );
    assert!(by_hand["edges"].as_array().unwrap().len() >= 10);
    let relation_evidence = |edges: &Value| {
        let edges = edges.as_array().unwrap().iter();
        edges
            .filter(|e| e["type"] == "EVIDENCE_FOR" && e["to"] == "relation:1")
            .count()
    };
    assert_eq!(relation_evidence(&by_hand["edges"]), 2);
    assert_eq!(typed, by_hand);
    // key order aside, the same text
    let sorted = |v: &Value| serde_json::to_string(v).unwrap();
    assert_eq!(sorted(&typed), sorted(&by_hand));
}

#[test]
fn a_user_the_views_hold_nothing_of_serialises_as_before() {
    let views = views();
    for (tenant, user) in [("acme", "nobody"), ("other", "u1")] {
        let typed = serde_json::to_value(user_memory_view(&views, tenant, user)).unwrap();
        assert_eq!(typed, memory_json_by_hand(&views, tenant, user));
        assert!(typed["style"].is_null() && typed["team"].is_null());
    }
    let empty = MemoryViews::default();
    assert_eq!(
        memory_json(&empty, "t", "u"),
        memory_json_by_hand(&empty, "t", "u")
    );
}
