//! `engram bench locomo` on a tiny conversation in the LoCoMo format that the test writes
//! itself: categories 1–4 are scored (5 is left out), the report has recall_any/all at 5, 10
//! and 50 overall and per category, and evidence turns that say what no other turn says are
//! found.

use engram_tests::engram_bin;
use serde_json::{json, Value};
use std::process::{Command, Stdio};

fn conversation() -> Value {
    let turn = |speaker: &str, dia: &str, text: &str| json!({"speaker": speaker, "dia_id": dia, "text": text});
    json!([{
        "sample_id": "conv-t",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                turn("Ann", "D1:1", "Hey Bob! How have you been lately?"),
                turn("Bob", "D1:2", "Pretty good, work keeps me busy."),
                turn("Ann", "D1:3", "I adopted a grey kitten called Pepper from the shelter yesterday."),
                turn("Bob", "D1:4", "That's lovely, cats are great company."),
                {"speaker": "Ann", "dia_id": "D1:5", "text": "Here she is!",
                 "blip_caption": "a photo of a grey kitten on a sofa"},
            ],
            "session_2_date_time": "7:55 pm on 9 June, 2023",
            "session_2": [
                turn("Bob", "D2:1", "I finally ran my first marathon in Rotterdam last weekend."),
                turn("Ann", "D2:2", "Wow, congratulations! How long did it take?"),
                turn("Bob", "D2:3", "Four hours and ten minutes, my knees hurt."),
                turn("Ann", "D2:4", "I started learning the cello at a music school downtown."),
                turn("Bob", "D2:5", "Nice, have fun with it."),
            ],
        },
        "qa": [
            {"question": "What pets and instruments does Ann have?", "answer": "a kitten, a cello",
             "evidence": ["D1:3", "D2:4"], "category": 1},
            {"question": "When did Bob run the marathon in Rotterdam?", "answer": "early June 2023",
             "evidence": ["D2:1"], "category": 2},
            {"question": "Would Ann enjoy an orchestra concert?", "answer": "yes, she plays cello",
             "evidence": ["D2:4"], "category": 3},
            {"question": "What is the name of Ann's kitten?", "answer": "Pepper",
             "evidence": ["D1:3"], "category": 4},
            {"question": "What is the name of Bob's kitten?", "adversarial_answer": "Pepper",
             "evidence": [], "category": 5},
        ],
    }])
}

#[test]
fn bench_reports_recall_any_and_all_by_category() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("mini_locomo.json");
    std::fs::write(&data, serde_json::to_vec(&conversation()).unwrap()).unwrap();
    let report_path = dir.path().join("report.json");
    let output = Command::new(engram_bin())
        .args(["bench", "locomo", "--data"])
        .arg(&data)
        .arg("--json")
        .arg(&report_path)
        .env("ENGRAM_LOG", "warn")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success(), "bench failed: {}", output.status);
    let table = String::from_utf8_lossy(&output.stdout);
    for row in [
        "overall",
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    ] {
        assert!(table.contains(row), "no {row} row: {table}");
    }

    let report: Value = serde_json::from_slice(&std::fs::read(&report_path).unwrap()).unwrap();
    assert_eq!(report["conversations"], 1);
    assert_eq!(report["turns"], 10);
    // the adversarial question (category 5) is left out
    assert_eq!(report["overall"]["n"], 4, "{report}");
    let by = report["by_category"].as_object().unwrap();
    assert_eq!(by.len(), 4, "{by:?}");
    let mut rows: Vec<(String, Value)> = by.iter().map(|(n, r)| (n.clone(), r.clone())).collect();
    rows.push(("overall".into(), report["overall"].clone()));
    for (name, row) in &rows {
        for k in [5, 10, 50] {
            for metric in ["recall_any", "recall_all"] {
                let v = row[format!("{metric}@{k}")]
                    .as_f64()
                    .unwrap_or_else(|| panic!("{name} {metric}@{k}: {row}"));
                assert!((0.0..=1.0).contains(&v), "{name} {metric}@{k} = {v}");
            }
        }
    }
    // 10 turns: k = 50 returns them all, so every evidence turn is found
    assert_eq!(report["overall"]["recall_all@50"], 1.0, "{report}");
    // the single-hop and temporal evidence say what no other turn says
    assert_eq!(by["single-hop"]["recall_any@5"], 1.0, "{report}");
    assert_eq!(by["temporal"]["recall_any@5"], 1.0, "{report}");
    assert!(report["recall_ms_k10"]["p95"].as_f64().unwrap() > 0.0);
}
