//! `engram bench longmemeval` on a small file in the LongMemEval format that the test writes
//! itself: the report has every official metric at both granularities, the evidence sessions
//! are found, and with `--llm` each question is answered through an OpenAI-compatible server
//! (a stand-in on loopback that speaks the same API) with the recalled memory in the prompt.

use engram_tests::{engram_bin, stand_in_llm};
use serde_json::{json, Value};
use std::process::{Command, Stdio};
use std::time::Duration;

const FILLER: [&str; 6] = [
    "Can you suggest a weekly workout plan for a beginner who likes swimming?",
    "What are good houseplants for a dark apartment with little sunlight?",
    "Explain how compound interest works with a simple example.",
    "I need a recipe for a vegetarian lasagna for six people.",
    "How do I fix a leaking kitchen faucet without calling a plumber?",
    "Give me tips for learning the basics of watercolor painting.",
];

/// Question i: its evidence (gold) sessions say something no filler session says.
fn question(i: usize) -> Value {
    let (qtype, question, evidence): (&str, &str, Vec<&str>) = match i {
        0 => (
            "single-session-user",
            "What breed is my new puppy?",
            vec!["We just adopted a puppy, a Bernese mountain dog named Biscuit."],
        ),
        1 => (
            "multi-session",
            "How many ukulele lessons have I taken in total?",
            vec![
                "I took my first three ukulele lessons this month.",
                "Two more ukulele lessons done this week, chords are getting easier.",
            ],
        ),
        2 => (
            "temporal-reasoning",
            "When did I start volunteering at the animal shelter?",
            vec!["Today was my first day volunteering at the animal shelter downtown."],
        ),
        _ => (
            "knowledge-update",
            "Which city does my sister live in now?",
            vec![
                "My sister lives in Lisbon.",
                "My sister just moved from Lisbon to Porto.",
            ],
        ),
    };
    let mut ids = Vec::new();
    let mut dates = Vec::new();
    let mut sessions = Vec::new();
    let mut answers = Vec::new();
    for (s, filler) in FILLER.iter().enumerate() {
        let sid = format!("q{i}_s{s}");
        let mut turns = vec![
            json!({"role": "user", "content": filler}),
            json!({"role": "assistant", "content": format!("Here is some advice about that: {filler} Start small.")}),
        ];
        if let Some(e) = evidence.get(s) {
            turns.push(json!({"role": "user", "content": e, "has_answer": true}));
            turns.push(json!({"role": "assistant", "content": "Thanks for telling me!"}));
            answers.push(sid.clone());
        }
        ids.push(sid);
        dates.push(format!("2023/05/{:02} (Mon) 1{s}:00", 1 + s * 3));
        sessions.push(Value::Array(turns));
    }
    json!({
        "question_id": format!("q{i}"),
        "question_type": qtype,
        "question": question,
        "answer": "n/a",
        "question_date": "2023/06/01 (Thu) 09:00",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": answers,
    })
}

#[test]
fn bench_reports_official_metrics_and_answers_through_an_openai_compatible_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("mini_longmemeval.json");
    let questions: Vec<Value> = (0..4).map(question).collect();
    std::fs::write(&data, serde_json::to_vec(&questions).unwrap()).unwrap();
    let report_path = dir.path().join("report.json");
    let answers_path = dir.path().join("answers.jsonl");
    let (url, requests) = stand_in_llm(4, Duration::from_secs(300));

    let status = Command::new(engram_bin())
        .args(["bench", "longmemeval", "--data"])
        .arg(&data)
        .arg("--json")
        .arg(&report_path)
        .args(["--llm", &url, "--llm-model", "stand-in-model", "--answers"])
        .arg(&answers_path)
        .env("ENGRAM_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .status()
        .unwrap();
    assert!(status.success(), "bench failed: {status}");

    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["n"], 4);
    assert!(report["ingest_seconds"].as_f64().unwrap() > 0.0);
    for granularity in ["session", "turn"] {
        for k in [1, 3, 5, 10, 30, 50] {
            for metric in ["recall_any", "recall_all", "ndcg_any"] {
                let v = &report[granularity]["overall"][format!("{metric}@{k}")];
                let v = v
                    .as_f64()
                    .unwrap_or_else(|| panic!("{granularity} {metric}@{k}: {v}"));
                assert!((0.0..=1.0).contains(&v), "{granularity} {metric}@{k} = {v}");
            }
        }
        let by_type = report[granularity]["by_type"].as_object().unwrap();
        assert_eq!(by_type.len(), 4, "{by_type:?}");
    }
    // Every evidence session states something no other session does: all are in the top 3.
    assert_eq!(
        report["session"]["overall"]["recall_all@3"], 1.0,
        "{report}"
    );
    // With 6 sessions, everything is inside the top 10.
    assert_eq!(report["session"]["overall"]["recall_all@10"], 1.0);

    let answers: Vec<Value> = std::fs::read_to_string(&answers_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ids: Vec<&str> = answers
        .iter()
        .map(|a| a["question_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["q0", "q1", "q2", "q3"]);
    assert!(answers.iter().all(|a| a["hypothesis"] == "stand-in answer"));

    let requests = requests.lock().unwrap();
    assert_eq!(requests.len(), 4);
    for (i, r) in requests.iter().enumerate() {
        assert_eq!(r["model"], "stand-in-model");
        let messages = r["messages"].as_array().unwrap();
        assert_eq!(messages[1]["role"], "user");
        assert_eq!(messages[1]["content"], questions[i]["question"]);
        let system = messages[0]["content"].as_str().unwrap();
        assert!(system.contains("2023/06/01"), "the question date: {system}");
        // the evidence and the date of its conversation are in the prompt
        for (s, sid) in questions[i]["haystack_session_ids"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
        {
            if questions[i]["answer_session_ids"]
                .as_array()
                .unwrap()
                .contains(sid)
            {
                let evidence = questions[i]["haystack_sessions"][s][2]["content"]
                    .as_str()
                    .unwrap();
                assert!(system.contains(evidence), "missing {evidence:?}: {system}");
                let date = questions[i]["haystack_dates"][s].as_str().unwrap();
                assert!(system.contains(date), "missing the date {date}");
            }
        }
    }
}
