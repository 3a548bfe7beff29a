//! The token budget: which optional pieces fit, counted exactly, and what the kept ones
//! account for.

use super::sections::build_messages;
use super::*;

/// One optional piece of the prompt, in the order pieces are tried.
#[derive(Debug, Clone)]
pub(super) struct Piece {
    pub(super) kind: &'static str,
    /// The chat role of a recent turn (other pieces go into the context message).
    pub(super) role: &'static str,
    /// Where the piece goes among the kept pieces of its kind (recalled episodes are chosen by
    /// score but shown in time order).
    pub(super) order: i64,
    /// Index into the candidates of its kind.
    pub(super) index: usize,
    pub(super) text: String,
    pub(super) tokens: usize,
}

/// Which pieces fit: walks `pieces` in order and keeps each one whose token count still fits
/// in `room` (a piece that does not fit is skipped, later smaller ones may still go in).
pub(super) fn fit(pieces: &[Piece], room: usize) -> Vec<bool> {
    let mut left = room;
    pieces
        .iter()
        .map(|p| {
            if p.tokens <= left {
                left -= p.tokens;
                true
            } else {
                false
            }
        })
        .collect()
}

/// Fit: required parts first, then pieces while they fit; re-render and drop the last kept
/// piece while the exact count is over (joins can tokenize a little differently). Returns the
/// prompt, its messages and which pieces it keeps.
pub(super) fn fit_to_budget(
    chat: &Qwen3Chat,
    system: &str,
    pieces: &[Piece],
    query: &str,
    budget: usize,
    enable_thinking: Option<bool>,
) -> Result<(String, Vec<TemplateMessage>, Vec<bool>), PromptError> {
    let count = |t: &str| chat.count_tokens(t);
    let query_msg = TemplateMessage {
        role: "user".into(),
        content: query.to_string(),
    };
    // Every message as plain text to the tokenizer, after joining (two pieces side by side
    // could spell a control token neither holds alone): only the template adds turns.
    let build = |keep: &[bool]| -> Vec<TemplateMessage> {
        let mut messages = build_messages(system, pieces, keep, &query_msg);
        for m in &mut messages {
            if let std::borrow::Cow::Owned(plain) = chat.defuse(&m.content) {
                m.content = plain;
            }
        }
        messages
    };
    let none = vec![false; pieces.len()];
    let base = chat.render(&build(&none), true, enable_thinking)?;
    let base_tokens = count(&base)?;
    if base_tokens > budget {
        return Err(PromptError::BudgetTooSmall {
            budget,
            needed: base_tokens,
        });
    }
    // Headers of the context message ("Memory …") cost a few tokens: reserve them.
    let reserve = 48;
    let mut keep = fit(pieces, budget.saturating_sub(base_tokens + reserve));
    let (mut prompt, mut messages) = loop {
        let messages = build(&keep);
        let prompt = chat.render(&messages, true, enable_thinking)?;
        if count(&prompt)? <= budget {
            break (prompt, messages);
        }
        match keep.iter().rposition(|k| *k) {
            Some(last) => keep[last] = false,
            None => break (base.clone(), build(&none)),
        }
    };
    // Fill what the reserve left over, if anything fits now.
    for i in 0..pieces.len() {
        if keep[i] {
            continue;
        }
        keep[i] = true;
        let m = build(&keep);
        let p = chat.render(&m, true, enable_thinking)?;
        if count(&p)? <= budget {
            prompt = p;
            messages = m;
        } else {
            keep[i] = false;
        }
    }
    Ok((prompt, messages, keep))
}

/// The tokens of the kept pieces by section, the dropped pieces by kind, and the provenance of
/// everything kept (the skill is filled in by the caller).
pub(super) fn account(
    pieces: &[Piece],
    keep: &[bool],
    c: &Chosen<'_>,
    preferences: &[(ActivePreference, f64)],
    session_notes: &[&CorrectionNote],
) -> (SectionTokens, BTreeMap<&'static str, usize>, Provenance) {
    let mut tokens = SectionTokens::default();
    let mut dropped: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut provenance = Provenance {
        preferences: preferences
            .iter()
            .map(|(p, relevance)| PreferenceUsed {
                cluster_id: p.cluster_id.clone(),
                level: p.level,
                instruction: p.line.clone(),
                confidence: p.confidence,
                relevance: *relevance,
                corrections: p.corrections.clone(),
                stated_in: p.stated_in.clone(),
                contradiction: p.contradiction,
                since: (p.since_micros > 0)
                    .then(|| chrono::DateTime::from_timestamp_micros(p.since_micros))
                    .flatten(),
            })
            .collect(),
        session_corrections: session_notes
            .iter()
            .map(|n| n.correction_id.clone())
            .collect(),
        ..Default::default()
    };
    for (piece, kept) in pieces.iter().zip(keep) {
        if !kept {
            *dropped.entry(piece.kind).or_default() += 1;
            continue;
        }
        match piece.kind {
            "recent_turns" => {
                tokens.recent_turns += piece.tokens;
                provenance
                    .recent_turns
                    .push(c.recent[piece.index].id.clone());
            }
            "few_shot" => {
                tokens.few_shot += piece.tokens;
                let (note, _) = &c.examples[piece.index];
                let similarity = c
                    .ranked_examples
                    .iter()
                    .find(|(i, _)| *i == piece.index)
                    .map_or(0.0, |(_, s)| *s);
                provenance.few_shot.push(CorrectionUsed {
                    correction_id: note.correction_id.clone(),
                    similarity,
                });
            }
            "facts" => {
                tokens.memory += piece.tokens;
                provenance.facts.push(c.facts[piece.index].clone());
            }
            "summaries" => {
                tokens.memory += piece.tokens;
                let h = &c.summaries[piece.index];
                provenance.summaries.push(SummaryUsed {
                    id: h.id.clone(),
                    event_id: h.event_id.clone(),
                    ts: h.ts,
                    covers: h.covers.len(),
                    score: h.score,
                    why: h.why.clone(),
                    domain: h.domain,
                });
            }
            _ => {
                tokens.memory += piece.tokens;
                let h = c.memories[piece.index];
                provenance.memories.push(MemoryUsed {
                    id: h.id.clone(),
                    domain: h.domain,
                    event_id: h.event_id.clone(),
                    ts: h.ts,
                    score: h.score,
                    why: h.why.clone(),
                });
            }
        }
    }
    provenance.recent_turns.reverse();
    (tokens, dropped, provenance)
}
