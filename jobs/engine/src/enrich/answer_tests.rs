use super::*;
use crate::enrich::sessions::{Batch, Turn};
use chrono::TimeZone;

/// Two friends, a month apart in LoCoMo's style, the second turn the assistant's.
fn batch() -> Batch {
    let turn = |offset: u64, id: &str, day: u32, role: Role, text: &str| Turn {
        offset,
        event_id: id.into(),
        ts: chrono::Utc
            .with_ymd_and_hms(2023, 5, day, 13, 56, 0)
            .unwrap(),
        role,
        speaker: None,
        content: text.into(),
    };
    Batch::new(
        "qwen3",
        "t".into(),
        "caroline".into(),
        Some("s1".into()),
        vec![
            turn(
                7,
                "D1:1",
                8,
                Role::User,
                "I went to a LGBTQ support group last Saturday, it was so powerful.",
            ),
            turn(
                8,
                "D1:2",
                8,
                Role::Assistant,
                "That sounds wonderful! What happened there?",
            ),
            turn(
                9,
                "D1:3",
                9,
                Role::User,
                "Please keep your answers short, I read them on my phone.",
            ),
        ],
    )
}

#[test]
fn a_realistic_answer_becomes_a_summary_relations_and_a_preference() {
    let b = batch();
    let answer = r#"```json
{"summary": "Caroline told the assistant about the LGBTQ support group she went to on 2023-05-06.",
 "relations": [
   {"subject": "Caroline", "relation": "attended", "object": "LGBTQ support group",
    "time": "2023-05-06", "evidence": ["D1:1"]},
   {"subject": "Caroline", "relation": "found moving", "object": "the support group",
    "evidence": ["D1:2", "D1:1", "D1:1"]}
 ],
 "preferences": [{"topic": "Answer Length", "preference": "short answers", "evidence": ["D1:3"]}]}
```"#;
    let read = read_answer(&b, answer);
    assert_eq!(read.rejected, []);
    assert_eq!(read.events.len(), 4);
    let ids: Vec<&str> = read
        .events
        .iter()
        .map(|e| e.header.event_id.as_str())
        .collect();
    let key = &b.key;
    assert_eq!(
        ids,
        [
            format!("enrich-{key}-summary"),
            format!("enrich-{key}-r0"),
            format!("enrich-{key}-r1"),
            format!("enrich-{key}-p0")
        ]
    );
    for e in &read.events {
        assert_eq!(
            (e.header.tenant.as_str(), e.header.user.as_str()),
            ("t", "caroline")
        );
        assert_eq!(e.header.session.as_deref(), Some("s1"));
    }
    let Body::Summary(s) = &read.events[0].body else {
        panic!("{:?}", read.events[0])
    };
    assert_eq!(s.covers, ["D1:1", "D1:2", "D1:3"]);
    assert_eq!(
        read.events[0].header.ts.to_rfc3339(),
        "2023-05-09T13:56:00+00:00"
    );
    let Body::Relation(r) = &read.events[1].body else {
        panic!()
    };
    assert_eq!(
        (
            r.subject.as_str(),
            r.relation.as_str(),
            r.object.as_str(),
            r.time.as_deref()
        ),
        (
            "Caroline",
            "attended",
            "LGBTQ support group",
            Some("2023-05-06")
        )
    );
    assert_eq!(r.evidence, ["D1:1"]);
    // dated by its evidence, not by the batch's last turn
    assert_eq!(
        read.events[1].header.ts.to_rfc3339(),
        "2023-05-08T13:56:00+00:00"
    );
    let Body::Relation(r) = &read.events[2].body else {
        panic!()
    };
    assert_eq!(
        (r.time.as_deref(), r.evidence.clone()),
        (None, vec!["D1:1".to_string(), "D1:2".to_string()])
    );
    let Body::Fact(f) = &read.events[3].body else {
        panic!()
    };
    assert_eq!(
        (
            f.subject.as_str(),
            f.attribute.as_str(),
            f.value.as_str(),
            f.source_event_id.as_deref()
        ),
        (
            "user",
            "prefers (answer length)",
            "short answers",
            Some("D1:3")
        )
    );
    // every event passes the same validation a client's does
    for e in &read.events {
        let again = engram_schemas::parse_event(e.to_json().as_bytes(), None).unwrap();
        assert_eq!(&again, e);
    }
}

#[test]
fn an_answer_without_a_json_object_is_rejected_whole() {
    for (answer, says) in [
        ("Sorry, I cannot help with that.", "no JSON object"),
        ("{\"summary\": \"Caroline went to", "no JSON object"),
        ("Here: {\"summary\": \"x\",, } done", "does not parse"),
        ("[{\"summary\": \"x\"}]", "not an object: an array"),
        ("\"just a string\"", "not an object: a string"),
    ] {
        let read = read_answer(&batch(), answer);
        assert!(read.events.is_empty(), "{answer}");
        assert_eq!(read.rejected.len(), 1, "{answer}");
        assert_eq!(read.rejected[0].field, "$");
        assert!(
            read.rejected[0].reason.contains(says),
            "{answer}: {}",
            read.rejected[0].reason
        );
        assert_eq!(read.rejected[0].original, answer);
    }
}

#[test]
fn each_bad_item_is_rejected_with_its_field_and_the_good_ones_kept() {
    let answer = serde_json::json!({
        "summary": 42,
        "relations": [
            {"subject": "Caroline", "relation": "attended", "object": "support group", "evidence": ["D1:1"]},
            {"subject": "Caroline", "relation": "", "object": "x", "evidence": ["D1:1"]},
            {"subject": "Caroline", "relation": "met", "object": "Melanie", "evidence": ["D9:9"]},
            {"subject": "Caroline", "relation": "met", "object": "Melanie", "evidence": []},
            {"subject": "Caroline", "relation": "met", "object": "Melanie"},
            {"subject": "Caroline", "relation": "met", "object": "Melanie", "time": 2023, "evidence": ["D1:1"]},
            "Caroline attended a support group",
            {"subject": "x".repeat(MAX_PART_CHARS + 1), "relation": "is", "object": "y", "evidence": ["D1:1"]}
        ],
        "preferences": [
            {"topic": "tone", "preference": "be enthusiastic", "evidence": ["D1:2"]},
            {"topic": "answer length", "preference": "short", "evidence": ["D1:3"]}
        ]
    });
    let read = read_answer(&batch(), &answer.to_string());
    let fields: Vec<&str> = read.rejected.iter().map(|r| r.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "summary",
            "relations[1].relation",
            "relations[2].evidence[0]",
            "relations[3].evidence",
            "relations[4].evidence",
            "relations[5].time",
            "relations[6]",
            "relations[7].subject",
            "preferences[0].evidence[0]",
        ]
    );
    assert!(read.rejected[2]
        .reason
        .contains("\"D9:9\" is not one of the turns"));
    assert!(read.rejected[8].reason.contains("not the user's turn"));
    assert!(read.rejected[6].original.contains("Caroline attended"));
    let kept: Vec<&str> = read
        .events
        .iter()
        .map(|e| e.header.event_id.rsplit('-').next().unwrap())
        .collect();
    assert_eq!(kept, ["r0", "p1"]);
}

#[test]
fn more_items_than_the_limit_are_rejected_past_it() {
    let relation = serde_json::json!({"subject": "Caroline", "relation": "likes", "object": "hiking", "evidence": ["D1:1"]});
    let answer =
        serde_json::json!({"summary": "Hiking.", "relations": vec![relation; MAX_ITEMS + 3]});
    let read = read_answer(&batch(), &answer.to_string());
    assert_eq!(read.events.len(), 1 + MAX_ITEMS);
    assert_eq!(read.rejected.len(), 1, "one reject for the overflow");
    assert_eq!(read.rejected[0].field, format!("relations[{MAX_ITEMS}..]"));
    assert!(
        read.rejected[0].reason.starts_with("3 relations past"),
        "{}",
        read.rejected[0].reason
    );
}
