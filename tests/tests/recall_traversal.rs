//! Traversal retrieval through `POST /v1/recall`: a walk from the entity a question names,
//! through the turns and entities of a conversation, to a turn that shares no word with the
//! question; each walk's path, its limits (depth, edge kinds) and a request out of bounds.

use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

/// Two friends; what Maya does for a living is said turns after she is first named, without
/// naming Lisbon.
const TURNS: [(&str, &str); 8] = [
    (
        "Caroline",
        "My sister Maya finally moved to Lisbon last month!",
    ),
    (
        "Melanie",
        "Oh wow, that's a big step. Is she settling in okay?",
    ),
    (
        "Caroline",
        "Mostly, the flat is small but the light is amazing.",
    ),
    (
        "Melanie",
        "We finally booked the camping trip to Yosemite for August.",
    ),
    ("Caroline", "Jealous! Bring me back a pine cone."),
    ("Melanie", "Deal. How's the pottery going?"),
    (
        "Caroline",
        "Slowly. Oh, and Maya got hired as a pastry chef at a bakery by the river.",
    ),
    (
        "Melanie",
        "Tell Maya congrats from me, that's her dream job.",
    ),
];

fn load(server: &Server) -> Vec<String> {
    let events: Vec<Value> = TURNS
        .iter()
        .enumerate()
        .map(|(i, (who, text))| {
            json!({"event_id": format!("t{i}"), "tenant": "acme", "user": "caro",
                   "session": "s1", "ts": format!("2023-05-08T13:{:02}:00Z", 10 + i),
                   "role": "user", "content": format!("{who}: {text}")})
        })
        .collect();
    let (status, body) = server.post("/v1/events", &json!(events));
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    // the turns' ids, in order: every turn is among 8 results
    let (status, all) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "caro", "query": "Maya", "k": 8}),
    );
    assert_eq!(status, 200, "{all}");
    let mut episodes: Vec<(String, String)> = all["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|e| {
            let (id, event) = (e["id"].as_str().unwrap(), e["event_id"].as_str().unwrap());
            (event.to_string(), id.to_string())
        })
        .collect();
    assert_eq!(episodes.len(), TURNS.len());
    episodes.sort_by_key(|(event, _)| event[1..].parse::<usize>().unwrap());
    episodes.into_iter().map(|(_, id)| id).collect()
}

fn recall(server: &Server, traversal: Value) -> (u16, Value) {
    server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "caro", "k": 8,
                "query": "What job did the woman who moved to Lisbon get?",
                "traversal": traversal}),
    )
}

/// The walk's path to turn `id` as `(edge, kind, id)` steps, when the walk reached it.
fn path_to(answer: &Value, id: &str) -> Option<Vec<(String, String, String)>> {
    let hit = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id)?;
    let walk = hit["why"].get("walk")?;
    assert!(walk["score"].as_f64().unwrap() > 0.0, "{walk}");
    Some(
        walk["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let text = |k: &str| s[k].as_str().unwrap_or("").to_lowercase();
                (text("edge"), text("kind"), text("id"))
            })
            .collect(),
    )
}

/// The walk's path to the result of event `event_id` as `(edge, kind, id)` steps, as written.
fn walk_steps(answer: &Value, event_id: &str) -> Vec<(String, String, String)> {
    let hit = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["event_id"] == event_id)
        .unwrap_or_else(|| panic!("{event_id} among the results: {answer}"));
    hit["why"]["walk"]["path"]
        .as_array()
        .unwrap_or_else(|| panic!("{event_id} reached by the walk: {answer}"))
        .iter()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
            (text("edge"), text("kind"), text("id"))
        })
        .collect()
}

fn step(edge: &str, kind: &str, id: &str) -> (String, String, String) {
    (edge.to_lowercase(), kind.into(), id.to_lowercase())
}

#[test]
fn a_walk_reaches_a_turn_through_the_entities_between_it_and_the_question() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let ids = load(&server);
    let (moved, hired) = (&ids[0], &ids[6]);
    // breadth first from Lisbon (the seed turns left out, so only the graph reaches turns):
    // Lisbon and Maya are named in one sentence, and Maya in the hiring turn
    let (status, answer) = recall(&server, json!({"walk": "bfs", "seed_episodes": 0}));
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        path_to(&answer, hired).expect("the hiring turn is reached"),
        vec![
            step("", "entity", "Lisbon"),
            step("CO_MENTIONED", "entity", "Maya"),
            step("MENTIONS", "episode", hired),
        ],
        "{answer}"
    );
    // through turns and mentions only, it takes three edges
    let mentions = json!({"walk": "bfs", "max_depth": 3, "seed_episodes": 0,
                          "edge_kinds": ["MENTIONS", "NEXT"]});
    let (status, answer) = recall(&server, mentions);
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        path_to(&answer, hired).expect("the hiring turn is reached"),
        vec![
            step("", "entity", "Lisbon"),
            step("MENTIONS", "episode", moved),
            step("MENTIONS", "entity", "Maya"),
            step("MENTIONS", "episode", hired),
        ],
        "{answer}"
    );
    assert_eq!(
        path_to(&answer, moved).expect("the move is reached"),
        vec![
            step("", "entity", "Lisbon"),
            step("MENTIONS", "episode", moved)
        ]
    );
    // the turn right after the move is its reply: one NEXT away
    let reply = path_to(&answer, &ids[1]).expect("the reply is reached");
    assert_eq!(reply.last().unwrap(), &step("NEXT", "episode", &ids[1]));
    // two edges do not reach the hiring turn; without MENTIONS nothing leaves Lisbon
    let shallow = json!({"walk": "bfs", "max_depth": 2, "seed_episodes": 0,
                         "edge_kinds": ["MENTIONS", "NEXT"]});
    let (_, answer) = recall(&server, shallow);
    assert!(path_to(&answer, hired).is_none(), "{answer}");
    let next_only =
        json!({"walk": "bfs", "max_depth": 3, "seed_episodes": 0, "edge_kinds": ["NEXT"]});
    let (_, answer) = recall(&server, next_only);
    let walked = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["why"].get("walk").is_some());
    assert_eq!(walked.count(), 0, "{answer}");
    // Maya is named in three of the eight turns: with a hub share of 0 and a breadth of 2 she
    // is a hub, which the walk does not enter
    let through_maya = |hub_share: f64| {
        let asked = json!({"walk": "bfs", "max_depth": 3, "max_breadth": 2, "seed_episodes": 0,
                           "edge_kinds": ["MENTIONS"], "hub_share": hub_share});
        let (status, answer) = recall(&server, asked);
        assert_eq!(status, 200, "{answer}");
        path_to(&answer, hired)
    };
    assert_eq!(
        through_maya(1.0).expect("reached through Maya")[2],
        step("MENTIONS", "entity", "Maya")
    );
    assert_eq!(through_maya(0.0), None);
    // no walk: no path anywhere
    let (_, answer) = recall(&server, json!({"walk": "none"}));
    assert!(answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["why"].get("walk").is_none()));
    // beam and A* reach it too, by a path that starts at the seed and ends at the turn
    for walk in ["beam", "a_star"] {
        let asked =
            json!({"walk": walk, "max_depth": 3, "seed_episodes": 0, "goal_similarity": 0.0});
        let (status, answer) = recall(&server, asked);
        assert_eq!(status, 200, "{answer}");
        let path = path_to(&answer, hired).unwrap_or_else(|| panic!("{walk}: {answer}"));
        assert_eq!(path[0], step("", "entity", "Lisbon"), "{walk}");
        assert_eq!(
            path.last().unwrap(),
            &step("MENTIONS", "episode", hired),
            "{walk}"
        );
    }
    // out of bounds, or unknown: 400 naming the field
    for (bad, field) in [
        (
            json!({"walk": "bfs", "max_depth": 7}),
            "traversal.max_depth",
        ),
        (
            json!({"walk": "bfs", "max_vertices": 1_000_000}),
            "traversal.max_vertices",
        ),
        (json!({"walk": "dfs"}), "unknown variant `dfs`"),
    ] {
        let (status, answer) = recall(&server, bad);
        assert_eq!(status, 400, "{answer}");
        assert!(answer.to_string().contains(field), "{field}: {answer}");
    }
}

#[test]
fn a_short_name_is_an_alias_the_walk_follows_to_the_full_name() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let said = |id: &str, minute: u32, text: &str| {
        json!({"event_id": id, "tenant": "acme", "user": "ana", "session": "s1",
               "ts": format!("2024-03-02T10:{minute:02}:00Z"), "role": "user", "content": text})
    };
    let events = json!([
        said(
            "a1",
            1,
            "I had coffee with Caroline at the harbour cafe this morning."
        ),
        said("a2", 2, "Then I walked home past the flower market."),
        said(
            "a3",
            3,
            "Dinner with Caro tonight, she is bringing her new guitar."
        ),
        said("a4", 4, "Also booked the dentist for next Tuesday, ugh."),
        // a relation as an enrichment model would send it, names in their own case
        {"kind": "relation", "event_id": "rel-1", "tenant": "acme", "user": "ana",
         "ts": "2024-03-02T10:05:00Z", "subject": "Caroline", "relation": "plays",
         "object": "the guitar", "evidence": ["a3"]},
    ]);
    let (status, body) = server.post("/v1/events", &events);
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(60));
    let (status, memory) = server.post("/v1/memory", &json!({"tenant": "acme", "user": "ana"}));
    assert_eq!(status, 200, "{memory}");
    let alias_of = |name: &str| {
        let entities = memory["entities"].as_array().unwrap();
        let e = entities.iter().find(|e| e["name"] == name);
        e.unwrap_or_else(|| panic!("{name} in {memory}"))
            .get("alias_of")
            .cloned()
    };
    assert_eq!(alias_of("caro"), Some(json!("caroline")));
    assert_eq!(alias_of("caroline"), None);
    let (status, answer) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "ana", "k": 4,
                "query": "Where did I have coffee with Caro?",
                "traversal": {"walk": "bfs", "seed_episodes": 0}}),
    );
    assert_eq!(status, 200, "{answer}");
    let path: Vec<(String, String)> = walk_steps(&answer, "a1")
        .into_iter()
        .map(|(edge, _, id)| (edge, id))
        .collect();
    assert_eq!(
        path[..2],
        [
            (String::new(), "caro".to_string()),
            ("ALIAS_OF".to_string(), "caroline".to_string())
        ],
        "{answer}"
    );
    assert_eq!(path[2].0, "MENTIONS");
    // from Caroline (named "Caroline" by the relation, "caroline" as an entity) through the
    // relation to the turn it was read from
    let (status, answer) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "ana", "k": 4,
                "query": "Which instrument does Caroline play?",
                "traversal": {"walk": "bfs", "seed_episodes": 0, "edge_kinds": ["RELATION", "EVIDENCE_FOR"]}}),
    );
    assert_eq!(status, 200, "{answer}");
    let steps = walk_steps(&answer, "a3");
    let steps: Vec<(&str, &str)> = steps
        .iter()
        .map(|(e, k, _)| (e.as_str(), k.as_str()))
        .collect();
    assert_eq!(
        steps,
        [
            ("", "entity"),
            ("RELATION", "relation"),
            ("EVIDENCE_FOR", "episode")
        ],
        "{answer}"
    );
}
