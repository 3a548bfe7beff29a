//! The prompt's sections: the system message, the optional pieces (recent turns, few-shot
//! examples, facts, summaries, episodes) and the chat messages they make.

use super::*;

/// `morning` (5–12 h), `afternoon` (12–17 h), `evening` (17–22 h) or `night`.
pub fn time_of_day(hour: u32) -> &'static str {
    match hour {
        5..=11 => "morning",
        12..=16 => "afternoon",
        17..=21 => "evening",
        _ => "night",
    }
}

/// The request's context with defaults filled in.
pub fn full_context(
    given: Option<&FeedbackContext>,
    now: chrono::DateTime<chrono::Utc>,
) -> FeedbackContext {
    use chrono::Timelike;
    let given = given.cloned().unwrap_or_default();
    let or = |v: String, d: &str| {
        if v.trim().is_empty() {
            d.to_string()
        } else {
            v.trim().to_lowercase()
        }
    };
    FeedbackContext {
        intent: or(given.intent, "question"),
        sentiment: or(given.sentiment, "neutral"),
        time_of_day: or(given.time_of_day, time_of_day(now.hour())),
    }
}

/// `text` cut to at most `max` characters at a word boundary, with "…" when cut.
pub fn shorten(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let cut: String = text.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(a, _)| a);
    format!("{}…", cut.trim_end())
}

/// A correction as an instruction: what it asks for, and "not …" what it replaced when the
/// correction has both a corrected and an original answer.
pub fn instruction_line(note: &CorrectionNote) -> Option<String> {
    let instruction = note.instruction()?;
    let contrast = match (&note.corrected, note.original.trim()) {
        (Some(corrected), original) if !corrected.trim().is_empty() && !original.is_empty() => {
            format!(
                " (write like “{}”, not like “{}”)",
                shorten(corrected, 80),
                shorten(original, 80)
            )
        }
        _ => String::new(),
    };
    Some(format!("{}{contrast}", shorten(instruction, 300)))
}

/// A correction as a few-shot example (seed 000 §4.2): the original and the corrected answer.
pub fn few_shot_example(note: &CorrectionNote) -> Option<String> {
    let corrected = note.corrected.as_deref()?.trim();
    if corrected.is_empty() || note.original.trim().is_empty() {
        return None;
    }
    let mut s = format!(
        "[Example correction - {} adjustment]\nOriginal: '{}'\nCorrected: '{}'",
        note.correction_type.to_lowercase(),
        shorten(&note.original, 400),
        shorten(corrected, 400)
    );
    if let Some(why) = note
        .expected_behavior
        .as_deref()
        .filter(|w| !w.trim().is_empty())
    {
        s.push_str(&format!("\nWhy: {}", shorten(why, 200)));
    }
    Some(s)
}

/// How many current facts, picked by shared words and recency, are ranked by their embeddings'
/// similarity to the query (the embedder's cache makes the facts of a user cheap after their
/// first prompt).
pub(super) const FACT_SHORTLIST: usize = 64;

/// The user's current facts: first those among `found` (recall's search of the facts table, by
/// vector and full text: it finds a fact that shares no word with the query among thousands),
/// in its order; then those sharing the most words with the query; then the most recently
/// learned. Each once; at most `limit`; not the stated preferences (`preference: …`), which the
/// system message gives.
pub(super) fn ranked_facts(
    memory: &UserMemory,
    query: &str,
    found: &[crate::query::recall::FactHit],
    limit: usize,
) -> Vec<FactUsed> {
    let found_rank: HashMap<&str, usize> = found
        .iter()
        .enumerate()
        .map(|(rank, hit)| (hit.fact_id.as_str(), rank))
        .collect();
    let words = |s: &str| -> std::collections::HashSet<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2)
            .map(str::to_lowercase)
            .collect()
    };
    let q = words(query);
    let mut facts: Vec<(_, FactUsed)> = memory
        .facts
        .iter()
        // a stated preference is a fact too, but the system message already says it (as an
        // instruction, with where it was stated): not again among the facts
        .filter(|((_, attribute), _)| {
            !attribute.starts_with(engram_operators::requests::PREFERENCE_ATTRIBUTE_PREFIX)
        })
        .filter_map(|((subject, attribute), versions)| {
            let current = versions.iter().find(|v| v.valid_to.is_none())?;
            let text = format!("{subject} {attribute} {}", current.value);
            let overlap = words(&text).intersection(&q).count();
            // sorted descending below: found facts first (best rank first), then the rest
            let found = found_rank
                .get(current.fact_id.as_str())
                .map(|rank| std::cmp::Reverse(*rank));
            Some((
                (found, overlap),
                FactUsed {
                    id: current.fact_id.clone(),
                    subject: subject.clone(),
                    attribute: attribute.clone(),
                    value: current.value.clone(),
                    valid_from: chrono::DateTime::from_timestamp_micros(current.valid_from)
                        .unwrap_or_default(),
                    relevance: 0.0,
                    domain: false,
                },
            ))
        })
        .collect();
    facts.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(b.1.valid_from.cmp(&a.1.valid_from))
            .then(a.1.id.cmp(&b.1.id))
    });
    facts.into_iter().take(limit).map(|(_, f)| f).collect()
}

/// The chat messages for the kept pieces (see the module docs for the layout).
pub(super) fn build_messages(
    system: &str,
    pieces: &[Piece],
    keep: &[bool],
    query: &TemplateMessage,
) -> Vec<TemplateMessage> {
    let kept = |kind: &str| -> Vec<&Piece> {
        let mut kept: Vec<&Piece> = pieces
            .iter()
            .zip(keep)
            .filter(|(p, k)| **k && p.kind == kind)
            .map(|(p, _)| p)
            .collect();
        kept.sort_by_key(|p| p.order);
        kept
    };
    let mut messages = vec![TemplateMessage {
        role: "system".into(),
        content: system.to_string(),
    }];
    let mut context = String::new();
    let few = kept("few_shot");
    if !few.is_empty() {
        context.push_str(
            "Corrections this user made to earlier answers (learn the preference behind them):\n\n",
        );
        for p in few {
            context.push_str(&p.text);
        }
    }
    let (facts, summaries, memories) = (kept("facts"), kept("summaries"), kept("memories"));
    if !facts.is_empty() || !summaries.is_empty() || !memories.is_empty() {
        context.push_str("Memory of this user (dates are when it was said):\n");
        if !facts.is_empty() {
            context.push_str("Facts:\n");
            facts.iter().for_each(|p| context.push_str(&p.text));
        }
        if !summaries.is_empty() {
            context.push_str("Summaries of earlier conversations:\n");
            summaries.iter().for_each(|p| context.push_str(&p.text));
        }
        if !memories.is_empty() {
            context.push_str("Earlier conversation:\n");
            memories.iter().for_each(|p| context.push_str(&p.text));
        }
    }
    if !context.is_empty() {
        messages.push(TemplateMessage {
            role: "user".into(),
            content: context.trim_end().to_string(),
        });
    }
    for p in kept("recent_turns") {
        messages.push(TemplateMessage {
            role: p.role.into(),
            content: p.text.clone(),
        });
    }
    messages.push(query.clone());
    messages
}

/// The system message: persona, preferences (most relevant first), this session's
/// corrections, those too unsure to act on (to ask about), and the skill's response style.
pub(super) fn system_message(
    persona: &str,
    preferences: &[(ActivePreference, f64)],
    session_notes: &[&CorrectionNote],
    unclear: &[&CorrectionNote],
    skill: &BaseSkill,
) -> String {
    let mut system = persona.trim().to_string();
    if !preferences.is_empty() {
        system.push_str("\n\nUser preferences indicate:");
        for (p, _) in preferences {
            let from = match p.level {
                "team" => "; your team's",
                "org" => "; your organisation's",
                "global" => "; a default for everyone",
                _ => "",
            };
            system.push_str(&format!(
                "\n- {} (confidence: {:.2}{from})",
                p.line, p.confidence
            ));
        }
    }
    if !session_notes.is_empty() {
        system
            .push_str("\n\nIn this conversation the user corrected you; follow these from now on:");
        for n in session_notes {
            if let Some(line) = instruction_line(n) {
                system.push_str(&format!("\n- {line}"));
            }
        }
    }
    if !unclear.is_empty() {
        system.push_str(
            "\n\nThe user may have corrected you here, but it was unclear; do not act on it \
             yet: if it matters for this answer, ask what they meant:",
        );
        for n in unclear {
            let said = n.instruction().unwrap_or(n.original.trim());
            system.push_str(&format!("\n- \"{}\"", shorten(said, 200)));
        }
    }
    system.push_str(&format!(
        "\n\nResponse style ({}): {}",
        skill.name, skill.template
    ));
    system
}

/// The optional pieces, in priority order: recent turns (newest first), few-shot examples,
/// facts, summaries, then recalled episodes.
pub(super) fn pieces(
    chat: &Qwen3Chat,
    max_memory_chars: usize,
    c: &Chosen<'_>,
) -> Result<Vec<Piece>, PromptError> {
    let mut pieces: Vec<Piece> = Vec::new();
    let count = |t: &str| chat.count_tokens(t);
    // stored text as plain text (counted as it will be rendered; see Qwen3Chat::defuse)
    let plain = |t: String| chat.defuse(&t).into_owned();
    for (i, row) in c.recent.iter().enumerate().rev() {
        let role = if row.role == "assistant" {
            "assistant"
        } else {
            "user"
        };
        let msg = TemplateMessage {
            role: role.into(),
            content: plain(row.content.clone()),
        };
        pieces.push(Piece {
            kind: "recent_turns",
            role,
            order: i as i64,
            index: i,
            tokens: chat.message_tokens(&msg)?,
            text: msg.content,
        });
    }
    for &(i, _) in c.ranked_examples {
        let text = plain(format!("{}\n\n", c.examples[i].1));
        pieces.push(Piece {
            kind: "few_shot",
            role: "",
            order: pieces.len() as i64,
            index: i,
            tokens: count(&text)?,
            text,
        });
    }
    for (i, f) in c.facts.iter().enumerate() {
        let text = plain(format!(
            "- {}{} {}: {} (since {})\n",
            if f.domain { "shared knowledge: " } else { "" },
            f.subject,
            engram_operators::facts::attribute_of_key(&f.attribute),
            f.value,
            f.valid_from.format("%Y-%m-%d")
        ));
        pieces.push(Piece {
            kind: "facts",
            role: "",
            order: i as i64,
            index: i,
            tokens: count(&text)?,
            text,
        });
    }
    for (i, h) in c.summaries.iter().enumerate() {
        let text = plain(format!(
            "- [{}] {}{}\n",
            h.ts.format("%Y-%m-%d"),
            if h.domain { "shared knowledge: " } else { "" },
            shorten(&h.content, max_memory_chars)
        ));
        pieces.push(Piece {
            kind: "summaries",
            role: "",
            order: h.ts.timestamp_micros(),
            index: i,
            tokens: count(&text)?,
            text,
        });
    }
    for (i, h) in c.memories.iter().enumerate() {
        let text = plain(format!(
            "- [{}] {}{}: {}{}\n",
            h.ts.format("%Y-%m-%d %H:%M"),
            if h.domain { "shared knowledge, " } else { "" },
            h.role,
            shorten(&h.content, max_memory_chars),
            days_meant(&h.content, h.ts)
        ));
        pieces.push(Piece {
            kind: "memories",
            role: "",
            order: h.ts.timestamp_micros(),
            index: i,
            tokens: count(&text)?,
            text,
        });
    }
    Ok(pieces)
}

/// The days a memory's relative words meant when they were said, for the model to read dates
/// off: " (last saturday = 2026-11-21)"; empty when it names none.
fn days_meant(content: &str, said: chrono::DateTime<chrono::Utc>) -> String {
    let named = engram_operators::said_days::days_named(content, said);
    if named.is_empty() {
        return String::new();
    }
    let each: Vec<String> = named
        .iter()
        .map(|(phrase, day)| format!("{phrase} = {}", day.format("%Y-%m-%d")))
        .collect();
    format!(" ({})", each.join("; "))
}
