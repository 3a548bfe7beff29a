//! One sentence a person can read on why an answer was built the way it was, from its
//! prompt's [`Provenance`]: the skill, the preferences it followed (and when the user taught
//! them), and the memories and facts it drew on; and what an answer's event keeps of both.

use super::{PreferenceUsed, Provenance};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Above this many bytes of JSON, the stored provenance leaves out each memory's `why` (the
/// retrievers' ranks and scores), so the answer's event stays far below the event limit.
const MAX_STORED_PROVENANCE_BYTES: usize = 64 * 1024;

/// The provenance and explanation an answer's event carries (`meta.provenance`,
/// `meta.explanation`): the prompt's provenance as `/v1/chat` returned it, or, when that is
/// larger than [`MAX_STORED_PROVENANCE_BYTES`], the same without the memories' `why`.
pub fn stored_provenance(provenance: &Provenance) -> (Value, String) {
    let mut value = serde_json::to_value(provenance).expect("provenance serialises");
    if value.to_string().len() > MAX_STORED_PROVENANCE_BYTES {
        if let Some(memories) = value["memories"].as_array_mut() {
            for m in memories {
                if let Some(m) = m.as_object_mut() {
                    m.remove("why");
                }
            }
        }
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
        let memories = value["memories"].as_array().unwrap();
        assert_eq!(memories.len(), 400);
        assert!(memories
            .iter()
            .all(|m| m.get("why").is_none() && m["id"] == "m"));
        assert!(value.to_string().len() <= MAX_STORED_PROVENANCE_BYTES);
    }
}
