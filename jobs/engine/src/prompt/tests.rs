//! Prompt assembly's pure parts: contexts, skill selection, instructions, fitting.

use super::budget::fit;
use super::*;

fn note(id: &str, corrected: Option<&str>, expected: Option<&str>) -> CorrectionNote {
    CorrectionNote {
        correction_id: id.into(),
        ts_micros: 0,
        session: "s".into(),
        correction_type: "STYLE".into(),
        original: "I would be delighted to assist you with that request".into(),
        corrected: corrected.map(str::to_string),
        expected_behavior: expected.map(str::to_string),
        confidence_milli: 900,
        context: String::new(),
        held: false,
    }
}

#[test]
fn instructions_say_do_x_not_y_when_the_correction_has_both() {
    let n = note("c1", Some("Sure, here's how"), Some("Be direct"));
    assert_eq!(
        instruction_line(&n).unwrap(),
        "Be direct (write like “Sure, here's how”, not like “I would be delighted to assist you with that request”)"
    );
    let n = note("c2", None, Some("Be direct"));
    assert_eq!(instruction_line(&n).unwrap(), "Be direct");
    assert_eq!(instruction_line(&note("c3", None, None)), None);
    assert!(few_shot_example(&note("c2", None, Some("x"))).is_none());
    let ex = few_shot_example(&note("c1", Some("Sure, here's how"), None)).unwrap();
    assert_eq!(
        ex,
        "[Example correction - style adjustment]\nOriginal: 'I would be delighted to assist you with that request'\nCorrected: 'Sure, here's how'"
    );
}

#[test]
fn shorten_cuts_at_a_word_and_marks_the_cut() {
    assert_eq!(shorten("one two three", 20), "one two three");
    assert_eq!(shorten("one two three", 9), "one two…");
}

#[test]
fn pieces_are_kept_in_order_while_they_fit() {
    let p = |tokens| Piece {
        kind: "facts",
        role: "",
        order: 0,
        index: 0,
        text: String::new(),
        tokens,
    };
    assert_eq!(
        fit(&[p(5), p(10), p(3), p(2)], 10),
        vec![true, false, true, true]
    );
}

#[test]
fn the_default_context_follows_the_clock() {
    let t = chrono::DateTime::parse_from_rfc3339("2025-01-01T20:00:00Z")
        .unwrap()
        .with_timezone(&chrono::Utc);
    let c = full_context(None, t);
    assert_eq!(
        (
            c.intent.as_str(),
            c.sentiment.as_str(),
            c.time_of_day.as_str()
        ),
        ("question", "neutral", "evening")
    );
}

#[test]
fn a_skill_with_many_successes_wins_over_one_with_many_failures() {
    let context = full_context(None, chrono::Utc::now());
    let bucket = context_bucket(&context.intent, &context.sentiment, &context.time_of_day);
    let mut tallies = BTreeMap::new();
    tallies.insert(
        (bucket, "detailed".to_string()),
        FeedbackTally {
            successes: 60,
            failures: 0,
            neutral: 0,
        },
    );
    tallies.insert(
        (bucket, "concise".to_string()),
        FeedbackTally {
            successes: 0,
            failures: 60,
            neutral: 0,
        },
    );
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(7);
    let mut uniform = || rand::Rng::gen::<f64>(&mut rng);
    let mut detailed = 0;
    for _ in 0..200 {
        let pick = select_skill(
            "explain how this works",
            &context,
            &tallies,
            &BTreeMap::new(),
            0,
            |_, _| None,
            None,
            120,
            &[],
            &mut uniform,
        );
        assert!(!pick.candidates.is_empty());
        detailed += (pick.skill_id == "detailed") as usize;
        assert_ne!(
            (pick.skill_id.as_str(), pick.how),
            ("concise", "chosen"),
            "a skill with 60 failures and no success is never the best"
        );
    }
    assert!(detailed > 150, "detailed chosen {detailed} / 200 times");
}
