//! One sentence a person can read on why an answer was built the way it was, from its
//! prompt's [`Provenance`]: the skill, the preferences it followed (and when the user taught
//! them), and the memories and facts it drew on; and what an answer's event keeps of both.

use super::{PreferenceUsed, Provenance};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// The most bytes of JSON the stored provenance takes, so the answer's event stays far below
/// the event limit (256 KiB) whatever the prompt was built from.
const MAX_STORED_PROVENANCE_BYTES: usize = 64 * 1024;
/// Correction ids kept per preference, and entries kept per list, when it must be cut.
const KEPT_IDS: usize = 20;
const KEPT_ENTRIES: usize = 40;

/// The provenance and explanation an answer's event carries (`meta.provenance`,
/// `meta.explanation`): the prompt's provenance as `/v1/chat` returned it while that is at most
/// [`MAX_STORED_PROVENANCE_BYTES`] of JSON; beyond, cut in steps until it fits:
/// 1. the memories' `why` (the retrievers' ranks and scores) left out;
/// 2. each preference's correction ids cut to the newest [`KEPT_IDS`] (`corrections_total`
///    gives how many), the summaries' `why` and the skill's candidates left out;
/// 3. every list cut to its first [`KEPT_ENTRIES`] entries, each only its id, and
///    `truncated: true`.
pub fn stored_provenance(provenance: &Provenance) -> (Value, String) {
    let fits = |v: &Value| v.to_string().len() <= MAX_STORED_PROVENANCE_BYTES;
    let mut value = serde_json::to_value(provenance).expect("provenance serialises");
    let without = |value: &mut Value, list: &str, key: &str| {
        for entry in value[list].as_array_mut().into_iter().flatten() {
            if let Some(entry) = entry.as_object_mut() {
                entry.remove(key);
            }
        }
    };
    if !fits(&value) {
        without(&mut value, "memories", "why");
    }
    if !fits(&value) {
        without(&mut value, "summaries", "why");
        for p in value["preferences"].as_array_mut().into_iter().flatten() {
            if let Some(ids) = p["corrections"].as_array_mut() {
                let total = ids.len();
                if total > KEPT_IDS {
                    ids.drain(..total - KEPT_IDS);
                    p["corrections_total"] = total.into();
                }
            }
        }
        if let Some(skill) = value["skill"].as_object_mut() {
            skill.remove("candidates");
        }
    }
    if !fits(&value) {
        let ids = |list: &str, key: &str| -> Value {
            let entries = value[list]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default();
            entries
                .iter()
                .take(KEPT_ENTRIES)
                .map(|e| {
                    if key.is_empty() {
                        e.clone()
                    } else {
                        e[key].clone()
                    }
                })
                .collect()
        };
        value = serde_json::json!({
            "truncated": true,
            "preferences": ids("preferences", "cluster_id"),
            "session_corrections": ids("session_corrections", ""),
            "unclear_corrections": ids("unclear_corrections", ""),
            "few_shot": ids("few_shot", "correction_id"),
            "facts": ids("facts", "id"),
            "summaries": ids("summaries", "id"),
            "memories": ids("memories", "id"),
            "recent_turns": ids("recent_turns", ""),
            "skill": value["skill"]["skill_id"].clone(),
            "transforms": value["transforms"].clone(),
        });
    }
    (value, explain(provenance))
}

/// Preferences named in the sentence (the rest are counted).
const NAMED_PREFERENCES: usize = 3;
/// Characters of an instruction quoted in the sentence.
const QUOTED_CHARS: usize = 80;

/// The sentence, e.g. `Answered with the "Concise" skill (the best fit), following your
/// preference "Keep it to three bullet points." (you asked for it on 15 Oct 2026), drawing on
/// 3 of your earlier messages (2 Oct 2026 – 14 Oct 2026) and 1 fact about you.`
///
/// - skill: `with the "<name>" skill` and why: `the best fit` (chosen), `tried to learn what
///   suits you` (explored) or `as asked` (requested); omitted without a skill;
/// - preferences, in the prompt's order (most relevant first), at most three named, each
///   `your preference "<instruction>"` (`your team's` / `your organisation's` for inherited
///   ones, `the default preference` for the operator's) with when it was taught: `you asked for it on <day>` (learned from corrections) or
///   `you said so on <day>` (stated in a message); more are counted (`and 2 more`);
/// - memories: the user's own (`N of your earlier messages`, with the span of their days) and
///   the tenant's shared ones (`N shared memories`); facts: `N fact(s) about you`;
/// - with none of these: `Answered without any of your memories or preferences.`
pub fn explain(p: &Provenance) -> String {
    let mut sentence = String::from("Answered");
    if let Some(skill) = &p.skill {
        let why = match skill.how {
            "explored" => "tried to learn what suits you",
            "requested" => "as asked",
            _ => "the best fit",
        };
        sentence.push_str(&format!(" with the \"{}\" skill ({why})", skill.name));
    }
    let mut parts = Vec::new();
    if !p.preferences.is_empty() {
        let mut named: Vec<String> = p
            .preferences
            .iter()
            .take(NAMED_PREFERENCES)
            .map(preference_phrase)
            .collect();
        let more = p.preferences.len().saturating_sub(NAMED_PREFERENCES);
        if more > 0 {
            named.push(format!("{more} more"));
        }
        parts.push(format!("following {}", join_and(&named)));
    }
    let mut drawn = Vec::new();
    let own: Vec<DateTime<Utc>> = p
        .memories
        .iter()
        .filter(|m| !m.domain)
        .map(|m| m.ts)
        .collect();
    if !own.is_empty() {
        let span = match (own.iter().min(), own.iter().max()) {
            (Some(a), Some(b)) if a.date_naive() != b.date_naive() => {
                format!(" ({} – {})", day(*a), day(*b))
            }
            (Some(a), _) => format!(" ({})", day(*a)),
            _ => String::new(),
        };
        drawn.push(format!("{} of your earlier messages{span}", own.len()));
    }
    let shared = p.memories.len() - own.len();
    if shared > 0 {
        drawn.push(plural(shared, "shared memory", "shared memories"));
    }
    let facts = p.facts.iter().filter(|f| !f.domain).count();
    if facts > 0 {
        drawn.push(format!("{} about you", plural(facts, "fact", "facts")));
    }
    if !drawn.is_empty() {
        parts.push(format!("drawing on {}", join_and(&drawn)));
    }
    if p.skill.is_none() && parts.is_empty() {
        return "Answered without any of your memories or preferences.".to_string();
    }
    for part in parts {
        sentence.push_str(", ");
        sentence.push_str(&part);
    }
    sentence.push('.');
    sentence
}

/// `your preference "<instruction>" (you asked for it on <day>)`.
fn preference_phrase(p: &PreferenceUsed) -> String {
    let whose = match p.level {
        "team" => "your team's preference",
        "org" => "your organisation's preference",
        "global" => "the default preference",
        _ => "your preference",
    };
    let mut quoted: String = p.instruction.chars().take(QUOTED_CHARS).collect();
    if p.instruction.chars().count() > QUOTED_CHARS {
        quoted.push('…');
    }
    let taught = match p.since {
        Some(at) if p.stated_in.is_some() => format!(" (you said so on {})", day(at)),
        Some(at) => format!(" (you asked for it on {})", day(at)),
        None => String::new(),
    };
    format!("{whose} \"{quoted}\"{taught}")
}

/// `15 Oct 2026`.
fn day(at: DateTime<Utc>) -> String {
    at.format("%-d %b %Y").to_string()
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{FactUsed, MemoryUsed, SkillPick};
    use super::*;
    use crate::query::recall::Why;
    use serde_json::json;

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn preference(instruction: &str, level: &'static str, since: Option<&str>) -> PreferenceUsed {
        PreferenceUsed {
            cluster_id: "c1".into(),
            level,
            instruction: instruction.into(),
            confidence: 0.9,
            relevance: 0.5,
            corrections: vec!["k1".into()],
            stated_in: None,
            contradiction: None,
            since: since.map(at),
        }
    }

    fn memory(ts: &str, domain: bool) -> MemoryUsed {
        MemoryUsed {
            id: "m".into(),
            domain,
            event_id: "e".into(),
            ts: at(ts),
            score: 1.0,
            why: Why::default(),
        }
    }

    fn skill(name: &str, how: &'static str) -> SkillPick {
        SkillPick {
            skill_id: "s".into(),
            name: name.into(),
            how,
            bucket: 0,
            exploration_rate: 0.1,
            candidates: Vec::new(),
            confidence: None,
        }
    }

    fn fact(domain: bool) -> FactUsed {
        FactUsed {
            id: "f".into(),
            subject: "user".into(),
            attribute: "home city".into(),
            value: "Berlin".into(),
            valid_from: at("2026-10-01T00:00:00Z"),
            relevance: 0.4,
            domain,
        }
    }

    #[test]
    fn an_answer_with_nothing_of_the_user_says_so() {
        assert_eq!(
            explain(&Provenance::default()),
            "Answered without any of your memories or preferences."
        );
    }

    #[test]
    fn skill_preference_memories_and_facts_make_one_sentence() {
        let p = Provenance {
            skill: Some(skill("Concise", "chosen")),
            preferences: vec![preference(
                "Keep it to three bullet points.",
                "user",
                Some("2026-10-15T09:30:00Z"),
            )],
            memories: vec![
                memory("2026-10-14T08:00:00Z", false),
                memory("2026-10-02T20:00:00Z", false),
                memory("2026-10-05T20:00:00Z", false),
                memory("2026-09-01T00:00:00Z", true),
            ],
            facts: vec![fact(false), fact(true)],
            ..Default::default()
        };
        assert_eq!(
            explain(&p),
            "Answered with the \"Concise\" skill (the best fit), following your preference \
             \"Keep it to three bullet points.\" (you asked for it on 15 Oct 2026), drawing on \
             3 of your earlier messages (2 Oct 2026 – 14 Oct 2026), 1 shared memory and 1 fact \
             about you."
        );
    }

    #[test]
    fn stated_inherited_and_extra_preferences_are_told_apart() {
        let mut stated = preference("Answer in German.", "user", Some("2026-11-02T10:00:00Z"));
        stated.stated_in = Some("msg-7".into());
        let p = Provenance {
            skill: Some(skill("Detailed", "explored")),
            preferences: vec![
                stated,
                preference("Use metric units.", "team", None),
                preference("Be formal.", "org", None),
                preference("No emoji.", "user", Some("2026-11-03T10:00:00Z")),
                preference("Cite sources.", "user", Some("2026-11-04T10:00:00Z")),
            ],
            ..Default::default()
        };
        assert_eq!(
            explain(&p),
            "Answered with the \"Detailed\" skill (tried to learn what suits you), following your \
             preference \"Answer in German.\" (you said so on 2 Nov 2026), your team's preference \
             \"Use metric units.\", your organisation's preference \"Be formal.\" and 2 more."
        );
    }

    #[test]
    fn a_long_instruction_is_cut_and_one_day_is_no_span() {
        let long = "x".repeat(100);
        let p = Provenance {
            preferences: vec![preference(&long, "user", Some("2026-10-15T09:30:00Z"))],
            memories: vec![
                memory("2026-10-14T08:00:00Z", false),
                memory("2026-10-14T20:00:00Z", false),
            ],
            facts: vec![fact(false), fact(false)],
            ..Default::default()
        };
        assert_eq!(
            explain(&p),
            format!(
                "Answered, following your preference \"{}…\" (you asked for it on 15 Oct 2026), \
                 drawing on 2 of your earlier messages (14 Oct 2026) and 2 facts about you.",
                "x".repeat(80)
            )
        );
    }

    #[test]
    fn a_large_provenance_is_stored_without_the_memories_why() {
        let small = Provenance::default();
        let (value, explanation) = stored_provenance(&small);
        assert_eq!(value["memories"], json!([]));
        assert_eq!(
            explanation,
            "Answered without any of your memories or preferences."
        );
        let memory = MemoryUsed {
            id: "m".into(),
            domain: false,
            event_id: "e".repeat(20),
            ts: "2026-10-15T09:30:00Z".parse().unwrap(),
            score: 1.0,
            why: crate::query::recall::Why {
                passage: Some("p".repeat(300)),
                ..Default::default()
            },
        };
        let large = Provenance {
            memories: vec![memory; 400],
            ..Default::default()
        };
        assert!(serde_json::to_string(&large).unwrap().len() > MAX_STORED_PROVENANCE_BYTES);
        let (value, _) = stored_provenance(&large);
        assert!(value.get("truncated").is_none());
        let memories = value["memories"].as_array().unwrap();
        assert_eq!(memories.len(), 400);
        assert!(memories
            .iter()
            .all(|m| m.get("why").is_none() && m["id"] == "m"));
        assert!(value.to_string().len() <= MAX_STORED_PROVENANCE_BYTES);
    }

    #[test]
    fn a_huge_provenance_is_cut_in_steps_until_it_fits() {
        let ids = |n: usize, prefix: &str| -> Vec<String> {
            (0..n).map(|i| format!("{prefix}{i:0>200}")).collect()
        };
        // thousands of correction ids behind one preference: cut to the newest 20
        let mut p = preference("Keep it short.", "user", Some("2026-10-15T09:30:00Z"));
        p.corrections = ids(400, "c");
        let (value, _) = stored_provenance(&Provenance {
            preferences: vec![p.clone()],
            ..Default::default()
        });
        let kept = value["preferences"][0]["corrections"].as_array().unwrap();
        assert_eq!(kept.len(), 20);
        assert_eq!(kept[19], json!(p.corrections[399]));
        assert_eq!(value["preferences"][0]["corrections_total"], 400);
        assert!(value.get("truncated").is_none());
        // hundreds of long preferences and recent turns: only ids, 40 of each
        let many = Provenance {
            preferences: (0..400).map(|_| p.clone()).collect(),
            recent_turns: ids(2000, "t"),
            ..Default::default()
        };
        let (value, explanation) = stored_provenance(&many);
        assert_eq!(value["truncated"], true);
        assert_eq!(value["preferences"].as_array().unwrap().len(), 40);
        assert_eq!(value["preferences"][0], "c1");
        assert_eq!(value["recent_turns"].as_array().unwrap().len(), 40);
        assert!(value.to_string().len() <= MAX_STORED_PROVENANCE_BYTES);
        assert!(explanation.ends_with("and 397 more."), "{explanation}");
    }
}
