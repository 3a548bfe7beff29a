//! Recall over a transcript of two people (every turn "Name: …"), through `POST /v1/recall`:
//! the answer in a reply, the speaker a question names, a calendar day, a relative time read
//! from `as_of`, a counting question, a misspelled word.

use engram_tests::Server;
use serde_json::{json, Value};
use std::time::Duration;

/// Two friends over three sessions (one a day), talking about themselves and about others.
const SESSIONS: [(&str, &[(&str, &str)]); 3] = [
    (
        "2023-05-08T13:56:00Z",
        &[
            (
                "Caroline",
                "Hey Mel! How was your weekend? Did you do anything fun last Saturday?",
            ),
            (
                "Melanie",
                "Took the kids to the lake and we watched the sunrise from the pier.",
            ),
            (
                "Caroline",
                "That sounds lovely. I went to a support group on Friday, it really helped.",
            ),
            (
                "Melanie",
                "I'm so glad. Is your cousin Dana still moving to Denver?",
            ),
            (
                "Caroline",
                "Yes, Dana flies out in June, she got the job at the hospital.",
            ),
            (
                "Melanie",
                "Tell her congrats from me! Anyway, how's the painting going?",
            ),
            (
                "Caroline",
                "Slowly, I'm still stuck on the background of the harbour piece.",
            ),
        ],
    ),
    (
        "2023-05-20T18:10:00Z",
        &[
            (
                "Melanie",
                "Guess what, we adopted a puppy yesterday! His name is Oscar.",
            ),
            ("Caroline", "No way, congratulations! What breed is he?"),
            (
                "Melanie",
                "A beagle mix from the shelter, he's already chewed two shoes.",
            ),
            (
                "Caroline",
                "Haha, classic. I finished the harbour painting by the way.",
            ),
            (
                "Melanie",
                "You have to show me! Are you entering it in the fair?",
            ),
            (
                "Caroline",
                "Thinking about it, the deadline is the end of the month.",
            ),
        ],
    ),
    (
        "2023-06-02T09:30:00Z",
        &[
            (
                "Caroline",
                "Morning! I signed up for the pottery class we talked about.",
            ),
            ("Melanie", "Oh nice, which day is it on?"),
            ("Caroline", "Tuesday evenings, starting next week."),
            (
                "Melanie",
                "I might join you once Oscar is trained. We went camping at the lake again.",
            ),
            ("Caroline", "How many times is that this year, three?"),
            (
                "Melanie",
                "Yes, and the kids caught their first fish in the lake this time!",
            ),
        ],
    ),
];

fn load(server: &Server) -> Vec<(String, String)> {
    let mut events = Vec::new();
    let mut turns = Vec::new();
    for (s, (start, turns_of)) in SESSIONS.iter().enumerate() {
        let start: chrono::DateTime<chrono::Utc> = start.parse().unwrap();
        for (i, (speaker, text)) in turns_of.iter().enumerate() {
            let id = format!("d{}:{}", s + 1, i + 1);
            let ts = start + chrono::Duration::seconds(30 * i as i64);
            let role = if *speaker == "Caroline" {
                "user"
            } else {
                "assistant"
            };
            events.push(
                json!({"kind": "interaction", "event_id": id, "tenant": "acme",
                "user": "conv", "session": format!("s{}", s + 1), "turn": i, "role": role,
                "ts": ts.to_rfc3339(), "content": format!("{speaker}: {text}")}),
            );
            turns.push((id, format!("{speaker}: {text}")));
        }
    }
    let (status, body) = server.post("/v1/events", &json!(events));
    assert_eq!(status, 200, "{body}");
    server.wait_caught_up(Duration::from_secs(120));
    turns
}

fn ids(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["event_id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_transcript_is_recalled_by_speaker_reply_day_and_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let turns = load(&server);
    assert_eq!(turns.len(), 19);

    // The answer is in Melanie's reply, which shares no word with the question; the question
    // matches Caroline's prompt. The reply comes with it.
    let answer = server.recall("acme", "conv", "What did Melanie do last Saturday?", 3);
    let top = ids(&answer);
    assert!(top.contains(&"d1:2".to_string()), "{top:?}\n{answer}");
    let reply =
        &answer["results"].as_array().unwrap()[top.iter().position(|i| i == "d1:2").unwrap()];
    assert!(
        reply["why"]["signals"]["neighbour"].as_f64().unwrap() > 0.0,
        "{reply}"
    );

    // Asked again, with the speakers now known from the first recall: the same answer.
    let again = server.recall("acme", "conv", "What did Melanie do last Saturday?", 3);
    assert_eq!(ids(&again), top);
    assert_eq!(again["results"][0]["score"], answer["results"][0]["score"]);

    // Both talk about painting; the question names Caroline, whose turn says she finished.
    let answer = server.recall("acme", "conv", "Has Caroline finished her painting?", 1);
    assert_eq!(ids(&answer), ["d2:4"], "{answer}");

    // A calendar day: Melanie took the kids to the lake twice; the question names the day of
    // the second time (session 3, 2 June), three weeks after the first.
    let answer = server.recall(
        "acme",
        "conv",
        "Where did Melanie go with the kids on 2 June, 2023?",
        1,
    );
    let top = ids(&answer);
    assert!(top[0].starts_with("d3:"), "{top:?}\n{answer}");

    // Relative time, read from the moment the question is asked (`as_of`, 16 June): "two weeks
    // ago" is session 3 (2 June), not session 1's lake trip with the kids (8 May): turns inside
    // the window weigh twice as much, those outside less the further they are.
    let (status, answer) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "conv", "k": 3,
            "query": "What did Melanie do with the kids two weeks ago?",
            "as_of": "2023-06-16T12:00:00Z"}),
    );
    assert_eq!(status, 200, "{answer}");
    let top = ids(&answer);
    assert!(top[0].starts_with("d3:"), "{top:?}\n{answer}");
    let (status, all) = server.post(
        "/v1/recall",
        &json!({"tenant": "acme", "user": "conv", "k": 19,
            "query": "What did Melanie do with the kids two weeks ago?",
            "as_of": "2023-06-16T12:00:00Z"}),
    );
    assert_eq!(status, 200, "{all}");
    let factor = |id: &str| {
        all["results"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["event_id"] == id)
            .map(|r| r["why"]["signals"]["factor"].as_f64().unwrap())
            .unwrap_or_else(|| panic!("{id} not recalled: {all}"))
    };
    // d3:6 "the kids caught their first fish" is inside the window (× 2); d1:2, weeks before
    // it, keeps only a near miss's share (e^(−distance / the window's width))
    assert!(factor("d3:6") >= 1.99, "{all}");
    assert!(factor("d1:2") < 1.5, "{all}");

    // A counting question spreads its best turns over the sessions that hold its evidence:
    // session 1's lake turn is among them, and the results are taken greedily by score ·
    // 0.9^m, m being the turns of the same session taken before (checked on the returned
    // scores: each result's discounted score is at least that of every later one at its turn).
    let answer = server.recall(
        "acme",
        "conv",
        "How many times has Melanie been to the lake?",
        8,
    );
    let results = answer["results"].as_array().unwrap();
    assert!(
        results.iter().any(|r| r["event_id"] == "d1:2"),
        "session 1's lake turn is missing: {answer}"
    );
    let raw = |r: &Value| r["why"]["signals"]["score"].as_f64().unwrap();
    let mut taken: std::collections::HashMap<&str, i32> = Default::default();
    for (i, chosen) in results.iter().enumerate() {
        let discounted = |r: &Value| {
            let m = taken
                .get(r["session"].as_str().unwrap())
                .copied()
                .unwrap_or(0);
            raw(r) * 0.9f64.powi(m)
        };
        for later in &results[i + 1..] {
            assert!(
                discounted(chosen) >= discounted(later) - 1e-9,
                "{} was taken before {}: {answer}",
                chosen["event_id"],
                later["event_id"]
            );
        }
        *taken
            .entry(chosen["session"].as_str().unwrap())
            .or_default() += 1;
    }

    // A misspelled question word is read as the user's word one edit away: "beagel" is in no
    // turn and no word of the model's vocabulary, "beagle" is in Melanie's turn, so that turn
    // is the full-text search's first (the other words are stop words: without the respelling
    // no turn would have a BM25 score).
    let answer = server.recall("acme", "conv", "Who has a beagel?", 5);
    let results = answer["results"].as_array().unwrap();
    let beagle = results
        .iter()
        .find(|r| r["event_id"] == "d2:3")
        .unwrap_or_else(|| panic!("the beagle turn is missing: {answer}"));
    assert_eq!(beagle["why"]["text_rank"], 1, "{answer}");
    assert!(
        results
            .iter()
            .filter(|r| r["event_id"] != "d2:3")
            .all(|r| r["why"]["text_bm25"].is_null()),
        "{answer}"
    );
}
