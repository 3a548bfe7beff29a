//! Labelled sets of ordinary chat messages (`tests/data/stated_preferences*.json`): each with
//! the standing preferences about answers it states, none for most. Sent to a real server, they
//! measure how well it remembers what people ask for in passing, and leaves the rest alone.

use crate::Server;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// One preference: an aspect of answers and the way it should go ("more", "less" or a value's
/// name, as `/v1/memory`'s `stated_preferences` give them, lower-case).
pub type Stated = (String, String);

/// One message and what it states.
#[derive(Debug, Clone)]
pub struct LabelledMessage {
    pub text: String,
    pub states: BTreeSet<Stated>,
}

/// A set: `{"messages": [{"text", "requests": [{"aspect", "way"}, …]}, …]}`.
pub fn load(path: &Path) -> anyhow::Result<Vec<LabelledMessage>> {
    let set: Value = serde_json::from_str(&std::fs::read_to_string(path)?)?;
    let messages = set["messages"]
        .as_array()
        .ok_or_else(|| anyhow::anyhow!("{}: no `messages` list", path.display()))?;
    messages
        .iter()
        .enumerate()
        .map(|(n, m)| {
            let text = m["text"]
                .as_str()
                .ok_or_else(|| anyhow::anyhow!("{}: message {n} has no `text`", path.display()))?;
            let states = m["requests"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| match (r["aspect"].as_str(), r["way"].as_str()) {
                    (Some(a), Some(w)) => Ok((a.to_string(), w.to_lowercase())),
                    _ => anyhow::bail!(
                        "{}: message {n}: a request needs `aspect` and `way`: {r}",
                        path.display()
                    ),
                })
                .collect::<anyhow::Result<_>>()?;
            Ok(LabelledMessage {
                text: text.to_string(),
                states,
            })
        })
        .collect()
}

/// How well what was remembered matches the labels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scores {
    pub messages: usize,
    /// Messages labelled with at least one preference.
    pub stating: usize,
    /// Of the messages where something was remembered, the share that state a preference.
    pub detection_precision: f64,
    /// Of the messages that state a preference, the share where something was remembered.
    pub detection_recall: f64,
    /// Of the preferences remembered, the share that the message states (aspect and way).
    pub precision: f64,
    /// Of the preferences stated, the share remembered (aspect and way).
    pub recall: f64,
    /// Preferences remembered from messages that state none.
    pub false_preferences: usize,
}

/// Scores `found[i]` (what was remembered from message `i`) against the labels.
pub fn score(set: &[LabelledMessage], found: &[BTreeSet<Stated>]) -> Scores {
    assert_eq!(set.len(), found.len());
    let (mut detected, mut detected_right, mut stating) = (0, 0, 0);
    let (mut remembered, mut right, mut stated, mut false_preferences) = (0, 0, 0, 0);
    for (m, f) in set.iter().zip(found) {
        let states = !m.states.is_empty();
        stating += usize::from(states);
        if !f.is_empty() {
            detected += 1;
            detected_right += usize::from(states);
        }
        remembered += f.len();
        stated += m.states.len();
        right += f.intersection(&m.states).count();
        if !states {
            false_preferences += f.len();
        }
    }
    let ratio = |a: usize, b: usize| if b == 0 { 1.0 } else { a as f64 / b as f64 };
    Scores {
        messages: set.len(),
        stating,
        detection_precision: ratio(detected_right, detected),
        detection_recall: ratio(
            set.iter()
                .zip(found)
                .filter(|(m, f)| !m.states.is_empty() && !f.is_empty())
                .count(),
            stating,
        ),
        precision: ratio(right, remembered),
        recall: ratio(right, stated),
        false_preferences,
    }
}

/// Sends each message of `set` as the only message of a user of its own (`<prefix><n>`, tenant
/// `tenant`), waits until the server has read them all, and returns what `/v1/memory` says each
/// user stated (`stated_preferences`: aspect and value).
pub fn send_and_read(
    server: &Server,
    tenant: &str,
    prefix: &str,
    set: &[LabelledMessage],
    timeout: Duration,
) -> Vec<BTreeSet<Stated>> {
    let events: Vec<Value> = set
        .iter()
        .enumerate()
        .map(|(n, m)| {
            json!({"kind": "interaction", "event_id": format!("{prefix}{n}"), "tenant": tenant,
                   "user": format!("{prefix}{n}"), "session": "s1",
                   "ts": "2026-01-05T10:00:00Z", "role": "user", "content": m.text})
        })
        .collect();
    for chunk in events.chunks(100) {
        let (status, body) = server.post("/v1/events", &json!(chunk));
        assert_eq!(status, 200, "{body}");
    }
    server.wait_caught_up(timeout);
    (0..set.len())
        .map(|n| {
            let (status, m) = server.post(
                "/v1/memory",
                &json!({"tenant": tenant, "user": format!("{prefix}{n}")}),
            );
            assert_eq!(status, 200, "{m}");
            m["stated_preferences"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| {
                    let (a, v) = (p["aspect"].as_str()?, p["value"].as_str()?);
                    Some((a.to_string(), v.to_lowercase()))
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(labels: &[&[(&str, &str)]]) -> Vec<LabelledMessage> {
        labels
            .iter()
            .map(|l| LabelledMessage {
                text: String::new(),
                states: l
                    .iter()
                    .map(|(a, w)| (a.to_string(), w.to_string()))
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn scores_count_messages_and_preferences() {
        // stating: 0 (length less), 1 (bullets more, emoji less); 2 and 3 state nothing
        let labels = set(&[
            &[("length", "less")],
            &[("bullets", "more"), ("emoji", "less")],
            &[],
            &[],
        ]);
        let found = set(&[
            &[("length", "more")],
            &[("bullets", "more")],
            &[("formality", "less")],
            &[],
        ]);
        let found: Vec<BTreeSet<Stated>> = found.into_iter().map(|m| m.states).collect();
        let s = score(&labels, &found);
        assert_eq!((s.messages, s.stating, s.false_preferences), (4, 2, 1));
        // detected in 0, 1, 2: two of three state something; both stating ones detected
        assert!((s.detection_precision - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.detection_recall, 1.0);
        // remembered 3, one right (bullets); stated 3
        assert!((s.precision - 1.0 / 3.0).abs() < 1e-12);
        assert!((s.recall - 1.0 / 3.0).abs() < 1e-12);
    }
}
