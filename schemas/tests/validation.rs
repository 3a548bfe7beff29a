use engram_schemas::*;
use serde_json::json;

fn parse(v: serde_json::Value) -> Result<Event, EventError> {
    parse_event(v.to_string().as_bytes(), None)
}

fn interaction() -> serde_json::Value {
    json!({"event_id": "e1", "tenant": "acme", "user": "u1", "ts": "2024-05-01T10:00:00Z",
           "session": "s1", "role": "user", "content": "I moved to Lisbon last May.", "turn": 3,
           "importance": 0.4})
}

#[test]
fn a_valid_interaction_parses_and_round_trips_through_canonical_json() {
    let e = parse(interaction()).unwrap();
    assert_eq!(e.kind(), EventKind::Interaction);
    assert_eq!(e.header.user, "u1");
    assert_eq!(e.key(), "acme/u1");
    match &e.body {
        Body::Interaction(i) => {
            assert_eq!(i.role, Role::User);
            assert_eq!(i.turn, Some(3));
            assert_eq!(i.content, "I moved to Lisbon last May.");
        }
        other => panic!("wrong body {other:?}"),
    }
    let back = Event::from_canonical_json(e.to_json().as_bytes()).unwrap();
    assert_eq!(back, e);
}

#[test]
fn each_missing_required_field_is_named() {
    for field in ["event_id", "tenant", "user", "ts", "role", "content"] {
        let mut v = interaction();
        v.as_object_mut().unwrap().remove(field);
        // without `role` the kind can no longer be inferred; say it explicitly
        v["kind"] = json!("interaction");
        let err = parse(v).unwrap_err();
        assert_eq!(err.field, field, "{err}");
        assert!(err.reason.contains("required"), "{err}");
    }
}

#[test]
fn wrong_values_are_rejected_with_the_field_named() {
    let cases = [
        ("ts", json!("yesterday")),
        ("role", json!("narrator")),
        ("importance", json!(1.5)),
        ("turn", json!(-1)),
        ("user", json!("bob' OR 1=1")),
        ("tenant", json!(7)),
        ("content", json!("   ")),
    ];
    for (field, value) in cases {
        let mut v = interaction();
        v[field] = value.clone();
        let err = parse(v).unwrap_err();
        assert_eq!(err.field, field, "{value}: {err}");
    }
}

#[test]
fn not_json_and_oversized_are_rejected_as_a_whole() {
    let err = parse_event(b"{not json", None).unwrap_err();
    assert_eq!(err.field, "$");
    assert!(err.reason.contains("JSON"));
    let mut v = interaction();
    v["content"] = json!("x".repeat(MAX_EVENT_BYTES));
    let err = parse(v).unwrap_err();
    assert_eq!(err.field, "$");
    assert!(err.reason.contains("limit"));
    assert_eq!(parse(json!([1, 2])).unwrap_err().field, "$");
}

#[test]
fn kind_is_inferred_or_checked_against_the_hint() {
    let fb = json!({"event_id": "f1", "tenant": "acme", "user": "u1", "ts": "2024-05-01T10:00:00+02:00",
                    "message_id": "m1", "skill_id": "concise", "reward": -1,
                    "context": {"intent": "debug", "sentiment": "neg", "time_of_day": "evening"}});
    let e = parse(fb.clone()).unwrap();
    assert_eq!(e.kind(), EventKind::Feedback);
    assert_eq!(e.header.ts.to_rfc3339(), "2024-05-01T08:00:00+00:00");
    let err = parse_event(fb.to_string().as_bytes(), Some(EventKind::Interaction)).unwrap_err();
    assert_eq!(
        err.field, "role",
        "a feedback on the interactions topic lacks a role: {err}"
    );
    let mut explicit = fb.clone();
    explicit["kind"] = json!("feedback");
    let err =
        parse_event(explicit.to_string().as_bytes(), Some(EventKind::Correction)).unwrap_err();
    assert_eq!(err.field, "kind");
    let mut bad = fb;
    bad["reward"] = json!(2);
    assert_eq!(parse(bad).unwrap_err().field, "reward");
    let err =
        parse(json!({"event_id": "x", "tenant": "t", "user": "u", "ts": "2024-01-01T00:00:00Z"}))
            .unwrap_err();
    assert_eq!(err.field, "kind");
}

#[test]
fn correction_signals_are_checked_per_modality() {
    let c = json!({"event_id": "c1", "tenant": "acme", "user": "u1", "ts": "2024-05-01T10:00:00Z",
                   "target_event_id": "e1", "original": "Dear Sir,", "corrected": "Hi!",
                   "correction_type": "TONE", "signals": {"voice": {"confidence": 0.9, "agreement": 0.8}}});
    let e = parse(c.clone()).unwrap();
    match e.body {
        Body::Correction(c) => assert_eq!(c.signals.unwrap()["voice"].agreement, 0.8),
        other => panic!("{other:?}"),
    }
    let mut bad = c;
    bad["signals"]["voice"]["agreement"] = json!(3);
    assert_eq!(parse(bad).unwrap_err().field, "signals.voice.agreement");
}

#[test]
fn tenant_wide_control_needs_no_user() {
    let e = parse(
        json!({"event_id": "k1", "tenant": "acme", "ts": "2024-05-01T10:00:00Z",
                         "action": "erase", "scope": "tenant"}),
    )
    .unwrap();
    assert_eq!(e.header.user, "");
    let err = parse(
        json!({"event_id": "k1", "tenant": "acme", "ts": "2024-05-01T10:00:00Z",
                           "action": "erase"}),
    )
    .unwrap_err();
    assert_eq!(err.field, "user");
}

#[test]
fn node_ids_are_stable_and_tenant_scoped() {
    assert_eq!(node_id("a", "e1"), node_id("a", "e1"));
    assert_ne!(node_id("a", "e1"), node_id("b", "e1"));
    assert_ne!(node_id("a", "e1"), node_id("a", "e2"));
}

#[test]
fn set_team_names_a_valid_team_for_one_user() {
    let base = json!({"kind": "control", "event_id": "t1", "tenant": "acme", "user": "u1",
        "ts": "2024-05-01T10:00:00Z", "action": "set_team", "team": "support"});
    let e = parse(base.clone()).unwrap();
    let Body::Control(c) = &e.body else {
        panic!("{e:?}")
    };
    assert_eq!(c.action, ControlAction::SetTeam);
    assert_eq!(c.team.as_deref(), Some("support"));
    assert!(!e.governs_processing());
    assert_eq!(
        Event::from_canonical_json(e.to_json().as_bytes()).unwrap(),
        e
    );
    // leaving every team: no team
    let mut leave = base.clone();
    leave.as_object_mut().unwrap().remove("team");
    let Body::Control(c) = parse(leave).unwrap().body else {
        panic!()
    };
    assert_eq!(c.team, None);
    for (field, patch) in [
        ("team", json!({"team": "sup port"})),
        ("team", json!({"team": 3})),
        ("scope", json!({"scope": "tenant"})),
        ("team", json!({"action": "erase"})),
    ] {
        let mut v = base.clone();
        v.as_object_mut()
            .unwrap()
            .extend(patch.as_object().unwrap().clone());
        assert_eq!(parse(v).unwrap_err().field, field, "{patch}");
    }
    let erase = json!({"kind": "control", "event_id": "t2", "tenant": "acme", "user": "u1",
        "ts": "2024-05-01T10:00:00Z", "action": "erase"});
    assert!(parse(erase).unwrap().governs_processing());
}

#[test]
fn a_summary_names_the_events_it_covers_and_travels_with_interactions() {
    let summary = json!({"event_id": "sum1", "tenant": "acme", "user": "u1",
                         "ts": "2024-05-02T00:00:00Z",
                         "content": "Ana planned the Porto move with the agent.",
                         "covers": ["e3", "e1", 7, "e1"]});
    let e = parse(summary.clone()).unwrap();
    assert_eq!(e.kind(), EventKind::Summary, "inferred from `covers`");
    match &e.body {
        Body::Summary(s) => assert_eq!(s.covers, ["7", "e1", "e3"], "sorted, once each"),
        other => panic!("not a summary: {other:?}"),
    }
    assert_eq!(
        Event::from_canonical_json(e.to_json().as_bytes()).unwrap(),
        e
    );
    // published by an extractor on the interactions topic, like facts
    let mut explicit = summary.clone();
    explicit["kind"] = json!("summary");
    let on_topic = parse_event(
        explicit.to_string().as_bytes(),
        Some(EventKind::Interaction),
    );
    assert_eq!(on_topic.unwrap().kind(), EventKind::Summary);
    let err = parse_event(explicit.to_string().as_bytes(), Some(EventKind::Feedback)).unwrap_err();
    assert_eq!(err.field, "kind");
    let mut fact = json!({"event_id": "f1", "tenant": "acme", "user": "u1", "ts": "2024-05-02T00:00:00Z",
                          "kind": "fact", "subject": "user", "attribute": "city", "value": "Porto"});
    assert_eq!(
        parse_event(fact.to_string().as_bytes(), Some(EventKind::Interaction))
            .unwrap()
            .kind(),
        EventKind::Fact
    );
    fact["kind"] = json!("fact");
    assert!(parse_event(fact.to_string().as_bytes(), Some(EventKind::Control)).is_err());

    let mut bad = summary.clone();
    bad["content"] = json!("  ");
    assert_eq!(parse(bad).unwrap_err().field, "content");
    let mut bad = summary.clone();
    bad["covers"] = json!("e1");
    assert_eq!(parse(bad).unwrap_err().field, "covers");
    let mut bad = summary.clone();
    bad["covers"] = json!(["e1", "bad\"id"]);
    assert_eq!(parse(bad).unwrap_err().field, "covers[1]");
    let mut bad = summary;
    bad["covers"] = json!((0..=MAX_SUMMARY_COVERS).collect::<Vec<_>>());
    assert_eq!(parse(bad).unwrap_err().field, "covers");
}
