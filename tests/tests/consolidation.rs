//! Consolidation of corrections as people phrase them, and preferences stated in ordinary
//! messages, through the real server. Paraphrases of one request become one cluster, one
//! pattern and one preference; different or opposite requests never merge; asking for the
//! opposite without a negation word contradicts; "please keep answers short" said in passing is
//! remembered, with its message, and steers the next prompt and its skill.

use engram_tests::correction_sets::{load, send_and_score};
use engram_tests::Server;
use serde_json::{json, Value};
use std::path::Path;
use std::time::Duration;

/// A correction made `day` days into the last ten (the engine's clock is the wall clock, and a
/// preference taught long ago has decayed).
fn correction(id: &str, day: u32, asks: &str) -> Value {
    let ts = chrono::Utc::now() - chrono::Duration::days(10 - i64::from(day));
    json!({"kind": "correction", "event_id": id, "tenant": "acme", "user": "alice",
           "ts": ts.to_rfc3339(), "target_event_id": format!("m{day}"),
           "original": "Here is a long explanation in four paragraphs about the options.",
           "correction_type": "LENGTH", "expected_behavior": asks})
}

fn memory(server: &Server) -> Value {
    memory_of(server, "alice")
}

fn memory_of(server: &Server, user: &str) -> Value {
    let (status, m) = server.post("/v1/memory", &json!({"tenant": "acme", "user": user}));
    assert_eq!(status, 200, "{m}");
    m
}

/// The lifecycle state of `user`'s first preference, once there is one (the lifecycle follows
/// the engine's clock in a dataflow of its own: it is given a moment); null after 30 s without.
fn first_preference_state(server: &Server, user: &str) -> Value {
    let start = std::time::Instant::now();
    loop {
        let state = memory_of(server, user)["preferences"][0]["state"].clone();
        if !state.is_null() || start.elapsed() > Duration::from_secs(30) {
            return state;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_labelled_set_clusters_by_what_is_asked_and_never_merges_opposites() {
    let set =
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("data/correction_requests.json")).unwrap();
    assert!(set.len() >= 25 && set.iter().all(|r| r.texts.len() >= 5));
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let s = send_and_score(
        &server,
        "acme",
        "labelled",
        "x",
        &set,
        Duration::from_secs(120),
    );
    println!("labelled set: {s:?}");
    assert_eq!(s.opposites_merged, 0, "{s:?}");
    assert!(s.precision >= 0.95, "{s:?}");
    assert!(s.recall >= 0.9, "{s:?}");
}

#[test]
fn five_ways_of_asking_for_the_same_thing_over_five_days_become_one_preference() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        correction("c1", 1, "Too long, keep it to three bullet points."),
        correction("c2", 2, "Please be shorter: three bullets max."),
        correction("c3", 3, "Way too wordy. Three bullet points, please."),
        correction("c4", 4, "cut it down to 3 bullets"),
        correction("c5", 5, "Give me the short version in three bullet points"),
        // another request, and its opposite (made before the last paraphrase, so it does not
        // contradict the preference either): neither joins
        correction("c6", 4, "Answer in German from now on."),
        correction("c7", 4, "Don't use bullet points, write prose."),
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let clusters = m["correction_clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 3, "{m}");
    let asked = clusters.iter().find(|c| c["cluster_id"] == "c1").unwrap();
    assert_eq!(
        asked["corrections"],
        json!(["c1", "c2", "c3", "c4", "c5"]),
        "{m}"
    );
    assert_eq!(asked["pattern"]["size"], 5, "{m}");
    let preferences = m["preferences"].as_array().unwrap();
    assert_eq!(preferences.len(), 1, "{m}");
    assert_eq!(preferences[0]["cluster_id"], "c1", "{m}");
    assert!(preferences[0]["contradiction"].is_null(), "{m}");
    assert_eq!(first_preference_state(&server, "alice"), "active", "{m}");
}

/// A constraint about the user's life, which names no request the normaliser knows, said four
/// ways over four days: linked by the words it names ("shellfish") and the nearest of the
/// corrections that name them, it becomes one pattern; corrections that share only what the
/// constraint applies to ("dinners") stay apart.
#[test]
fn a_constraint_said_four_ways_becomes_one_pattern_by_what_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        correction("a1", 1, "I'm allergic to shellfish, no shrimp please"),
        correction(
            "a2",
            2,
            "You put prawns in the paella again. Shellfish allergy!"
        ),
        correction(
            "a3",
            3,
            "Remember my shellfish allergy when you plan dinners."
        ),
        correction(
            "a4",
            4,
            "no crab, no lobster, no shrimp. I react to shellfish"
        ),
        correction(
            "b1",
            2,
            "My kids won't eat anything spicy, tone down the chili in dinners"
        ),
        correction("b2", 3, "the children hate spicy food, skip the jalapeños"),
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let clusters = m["correction_clusters"].as_array().unwrap();
    let of = |id: &str| {
        clusters
            .iter()
            .find(|c| c["corrections"].as_array().unwrap().contains(&json!(id)))
            .unwrap_or_else(|| panic!("{id} in no cluster: {m}"))
    };
    assert_eq!(
        of("a1")["corrections"],
        json!(["a1", "a2", "a3", "a4"]),
        "{m}"
    );
    assert_eq!(of("a1")["pattern"]["size"], 4, "{m}");
    assert_eq!(of("b1")["corrections"], json!(["b1", "b2"]), "{m}");
}

#[test]
fn asking_for_the_opposite_without_a_negation_contradicts_the_preference() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let casual = [
        "Be more casual.",
        "You sound so stiff, loosen up",
        "talk to me like a friend, less formal",
    ];
    let mut events: Vec<Value> = casual
        .iter()
        .enumerate()
        .map(|(n, text)| correction(&format!("c{}", n + 1), n as u32 + 1, text))
        .collect();
    // more confident than the preference, and no "not" or "don't" in it
    let mut formal = correction(
        "c9",
        9,
        "Please use a professional tone, this is for a client.",
    );
    formal["confidence"] = json!(1.0);
    events.push(formal);
    assert_eq!(server.post("/v1/events", &json!(events)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let preference = &m["preferences"].as_array().unwrap()[0];
    assert_eq!(preference["cluster_id"], "c1", "{m}");
    let contradiction = &preference["contradiction"];
    assert_eq!(contradiction["by"], json!(["c9"]), "{m}");
    assert_eq!(contradiction["resolution"], "deactivated", "{m}");
}

fn said(id: &str, minutes: i64, text: &str) -> Value {
    let ts = chrono::Utc::now() - chrono::Duration::minutes(60 - minutes);
    json!({"kind": "interaction", "event_id": id, "tenant": "acme", "user": "alice",
           "session": "s1", "ts": ts.to_rfc3339(), "role": "user", "content": text})
}

fn prompt(server: &Server, query: &str) -> Value {
    prompt_for(server, "alice", query, None)
}

fn prompt_for(server: &Server, user: &str, query: &str, situation: Option<&str>) -> Value {
    let (status, p) = server.post(
        "/v1/prompt",
        &json!({"tenant": "acme", "user": user, "session": "s1", "query": query, "seed": 3,
                "situation": situation}),
    );
    assert_eq!(status, 200, "{p}");
    p
}

#[test]
fn a_preference_stated_in_a_message_is_remembered_and_steers_the_next_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let events = json!([
        said(
            "m1",
            1,
            "Please keep answers short, I read them on my phone."
        ),
        // about other people and things, not how to answer: no preference
        said(
            "m2",
            2,
            "My boss wants long, detailed reports every Friday."
        ),
    ]);
    assert_eq!(server.post("/v1/events", &events).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    assert_eq!(
        m["stated_preferences"],
        json!([{"aspect": "length", "value": "less", "instruction": "Keep answers short and concise.",
                "fact_id": m["stated_preferences"][0]["fact_id"], "stated_in": "m1",
                "since": m["stated_preferences"][0]["since"]}]),
        "{m}"
    );
    let evidence = m["edges"].as_array().unwrap().iter().any(|e| {
        e["type"] == "EVIDENCE_FOR"
            && e["from"] == "m1"
            && e["to"] == m["stated_preferences"][0]["fact_id"]
    });
    assert!(evidence, "{m}");

    // "explain … why" is what the Detailed skill is triggered by; the preference rules it out
    let query = "Can you explain in detail why the sky is blue?";
    let p = prompt(&server, query);
    let system = p["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- Keep answers short and concise."),
        "{system}"
    );
    let stated: Vec<&Value> = p["provenance"]["preferences"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["stated_in"] == "m1")
        .collect();
    assert_eq!(stated.len(), 1, "{p}");
    // said once, in the system message: not again among the facts of the memory message
    let said_again = p["messages"].as_array().unwrap()[1..].iter().any(|m| {
        m["content"]
            .as_str()
            .unwrap()
            .contains("preference: length")
    });
    assert!(!said_again, "{p}");
    assert!(
        p["provenance"]["facts"].as_array().unwrap().is_empty(),
        "{p}"
    );
    let skill = &p["provenance"]["skill"];
    assert_ne!(skill["skill_id"], "detailed", "{skill}");
    let candidates = skill["candidates"].as_array().unwrap();
    assert!(
        candidates.iter().all(|c| c["skill_id"] != "detailed"),
        "{skill}"
    );

    // the user changes their mind: the later statement replaces the earlier one
    let later = json!([said(
        "m3",
        30,
        "Actually, give me detailed answers from now on."
    )]);
    assert_eq!(server.post("/v1/events", &later).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    let m = memory(&server);
    let stated = m["stated_preferences"].as_array().unwrap();
    assert_eq!(stated.len(), 1, "{m}");
    assert_eq!(
        (&stated[0]["value"], &stated[0]["stated_in"]),
        (&json!("more"), &json!("m3"))
    );
    let system = prompt(&server, query)["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("- Give detailed, thorough answers."),
        "{system}"
    );
    assert!(!system.contains("Keep answers short"), "{system}");
}

/// The system part of `user`'s next prompt (in `situation`) and the skill it chose.
fn system_and_skill(server: &Server, user: &str, situation: Option<&str>) -> (String, Value) {
    let p = prompt_for(server, user, "How should I set up backups?", situation);
    let system = p["messages"][0]["content"].as_str().unwrap().to_string();
    (system, p["provenance"]["skill"]["skill_id"].clone())
}

/// Whether a prompt's system part asks for brevity: the lines of the short preference (its
/// corrections' words) or the instruction a short request reads as.
fn asks_for_brevity(system: &str) -> bool {
    SHORT.iter().any(|t| system.contains(t)) || system.contains("Keep answers short")
}

/// Three ways of asking for short answers, in different words.
const SHORT: [&str; 3] = [
    "Please keep it short.",
    "way too wordy, trim it",
    "Be more concise.",
];

/// Three ways of asking for short answers over five days become an active preference that the
/// next prompt follows. "Give me much more detail from now on", with no negation word in it,
/// then contradicts it and never joins it: alice names no context, so the preference is
/// deactivated and her next prompt asks for detail, not brevity; bob taught it in team chat and
/// asks for detail for client reports, so it is split: kept in team chat, left out for client
/// reports.
#[test]
fn asking_for_detail_after_a_pattern_of_short_answers_deactivates_or_splits_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let said_by = |user: &str, id: &str, day: u32, text: &str, context: Option<&str>| {
        let mut c = correction(id, day, text);
        c["user"] = json!(user);
        if let Some(context) = context {
            c["context"] = json!(context);
        }
        c
    };
    let mut taught = Vec::new();
    for (user, context) in [("alice", None), ("bob", Some("team chat"))] {
        for (n, text) in SHORT.iter().enumerate() {
            let id = format!("{user}{}", n + 1);
            taught.push(said_by(user, &id, 1 + 2 * n as u32, text, context));
        }
    }
    assert_eq!(server.post("/v1/events", &json!(taught)).0, 200);
    server.wait_caught_up(Duration::from_secs(60));
    for (user, situation) in [("alice", None), ("bob", Some("team chat"))] {
        let m = memory_of(&server, user);
        let clusters = m["correction_clusters"].as_array().unwrap();
        assert_eq!(clusters.len(), 1, "{m}");
        assert_eq!(clusters[0]["pattern"]["size"], 3, "{m}");
        assert!(m["preferences"][0]["contradiction"].is_null(), "{m}");
        assert_eq!(first_preference_state(&server, user), "active", "{m}");
        let (system, skill) = system_and_skill(&server, user, situation);
        assert!(system.contains("- Be more concise."), "{system}");
        assert_ne!(skill, "detailed");
    }

    let detail = "give me much more detail from now on";
    let later = json!([
        said_by("alice", "alice4", 8, detail, None),
        said_by("bob", "bob4", 8, detail, Some("client report")),
    ]);
    assert_eq!(server.post("/v1/events", &later).0, 200);
    server.wait_caught_up(Duration::from_secs(60));

    let m = memory_of(&server, "alice");
    let clusters = m["correction_clusters"].as_array().unwrap();
    assert_eq!(clusters.len(), 2, "the opposite joins no cluster: {m}");
    let contradiction = &m["preferences"][0]["contradiction"];
    assert_eq!(contradiction["by"], json!(["alice4"]), "{m}");
    assert_eq!(contradiction["resolution"], "deactivated", "{m}");
    let (system, skill) = system_and_skill(&server, "alice", None);
    assert!(!asks_for_brevity(&system), "{system}");
    assert!(system.contains(detail), "{system}");
    assert_ne!(skill, "concise");

    let m = memory_of(&server, "bob");
    let contradiction = &m["preferences"][0]["contradiction"];
    assert_eq!(contradiction["resolution"], "split", "{m}");
    assert_eq!(contradiction["holds_in"], json!(["team chat"]), "{m}");
    assert_eq!(
        contradiction["contradicted_in"],
        json!(["client report"]),
        "{m}"
    );
    let (for_client, _) = system_and_skill(&server, "bob", Some("client report"));
    assert!(!asks_for_brevity(&for_client), "{for_client}");
    assert!(for_client.contains(detail), "{for_client}");
    let (in_team_chat, _) = system_and_skill(&server, "bob", Some("team chat"));
    assert!(
        in_team_chat.contains("- Be more concise."),
        "{in_team_chat}"
    );
    assert!(!in_team_chat.contains(detail), "{in_team_chat}");
}
