//! Sessions ranked by the evidence of their recalled turns.
//!
//! A whole conversation does not fit in one 256-token embedding, so recall scores turns (and
//! their passages) and a session is judged by its turns: its best turn, plus a share of its
//! second best (two turns on the subject are more telling than one that happens to match a
//! word), weighted up when the session falls in the time the question points at ("two weeks
//! ago", "last month").

use crate::query::recall::RecallHit;
use crate::query::time_window::TimeWindow;
use chrono::{DateTime, Utc};
use std::collections::HashMap;

/// How much of a session's second-best turn score is added to its best.
pub const SECOND_TURN_WEIGHT: f32 = 0.5;
/// A session inside the question's time window scores up to `1 + TIME_WEIGHT` times as much.
pub const TIME_WEIGHT: f32 = 0.2;

/// A ranked session: its id, score, and when it started (its earliest recalled turn).
#[derive(Debug, Clone, PartialEq)]
pub struct RankedSession {
    pub session: String,
    pub score: f32,
    pub started: DateTime<Utc>,
}

/// The sessions of `hits` (fused turn scores, any order), best first:
/// `score = (best + SECOND_TURN_WEIGHT · second) · (1 + TIME_WEIGHT · proximity)`, where
/// `proximity` is the window's proximity of the session's start (1 inside it; no window: 0).
/// Hits without a session are left out; ties go to the earlier session, then by id.
pub fn rank_sessions(hits: &[RecallHit], window: Option<&TimeWindow>) -> Vec<RankedSession> {
    // session → (best, second, started)
    let mut by_session: HashMap<&str, (f32, f32, DateTime<Utc>)> = HashMap::new();
    for hit in hits {
        let Some(session) = hit.session.as_deref() else {
            continue;
        };
        let e = by_session
            .entry(session)
            .or_insert((f32::NEG_INFINITY, 0.0, hit.ts));
        if hit.score > e.0 {
            e.1 = if e.0.is_finite() { e.0 } else { 0.0 };
            e.0 = hit.score;
        } else if hit.score > e.1 {
            e.1 = hit.score;
        }
        e.2 = e.2.min(hit.ts);
    }
    let mut ranked: Vec<RankedSession> = by_session
        .into_iter()
        .map(|(session, (best, second, started))| {
            let time = window.map_or(0.0, |w| w.proximity(started) as f32);
            RankedSession {
                session: session.to_string(),
                score: (best + SECOND_TURN_WEIGHT * second) * (1.0 + TIME_WEIGHT * time),
                started,
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.started.cmp(&b.started))
            .then(a.session.cmp(&b.session))
    });
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::query::recall::Why;

    fn hit(session: &str, score: f32, day: u32) -> RecallHit {
        RecallHit {
            id: format!("{session}-{score}"),
            event_id: String::new(),
            session: Some(session.to_string()),
            role: "user".into(),
            content: String::new(),
            ts: format!("2024-03-{day:02}T12:00:00Z").parse().unwrap(),
            score,
            why: Why::default(),
            prev_id: None,
            next_id: None,
            domain: false,
        }
    }

    #[test]
    fn best_turn_plus_a_share_of_the_second() {
        let hits = vec![
            hit("a", 0.030, 1),
            hit("b", 0.025, 2),
            hit("b", 0.020, 2),
            hit("b", 0.010, 2),
        ];
        let ranked = rank_sessions(&hits, None);
        assert_eq!(ranked[0].session, "b", "0.025 + 0.5·0.020 = 0.035 > 0.030");
        assert!((ranked[0].score - 0.035).abs() < 1e-6);
        assert!((ranked[1].score - 0.030).abs() < 1e-6);
    }

    #[test]
    fn a_session_in_the_question_window_is_weighted_up() {
        let hits = vec![hit("early", 0.030, 1), hit("late", 0.026, 20)];
        let window = TimeWindow {
            start: "2024-03-18T00:00:00Z".parse().unwrap(),
            end: "2024-03-25T00:00:00Z".parse().unwrap(),
            phrase: "last week".into(),
        };
        let ranked = rank_sessions(&hits, Some(&window));
        assert_eq!(ranked[0].session, "late");
        assert!((ranked[0].score - 0.026 * 1.2).abs() < 1e-6);
        // 16.5 days before a 7-day window: e^(-16.5/7) of the weight
        let expected = 0.030 * (1.0 + 0.2 * (-16.5f32 / 7.0).exp());
        assert!((ranked[1].score - expected).abs() < 1e-6);
    }

    #[test]
    fn session_start_is_the_earliest_turn_and_ties_go_to_it() {
        let hits = vec![hit("x", 0.02, 5), hit("x", 0.01, 3), hit("w", 0.02, 4)];
        let mut no_second = hits.clone();
        no_second.remove(1);
        let ranked = rank_sessions(&no_second, None);
        assert_eq!(
            ranked
                .iter()
                .map(|r| r.session.as_str())
                .collect::<Vec<_>>(),
            vec!["w", "x"],
            "equal scores: the earlier session first"
        );
        let ranked = rank_sessions(&hits, None);
        let x = ranked.iter().find(|r| r.session == "x").unwrap();
        assert_eq!(
            x.started,
            "2024-03-03T12:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }
}
