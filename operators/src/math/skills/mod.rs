//! Prompt skills and their selection (SPEC §6; seed 004 "Behavioral Learning").
//!
//! A skill is a prompt template with a trigger context and a 16-dimension style vector. For
//! each reply a skill is chosen by 0.4·trigger match + 0.3·Thompson draw + 0.3·style
//! alignment, with ε-greedy exploration ε = max(0.05, 0.1·0.95^feedback_count). Feedback moves
//! the user's style vector towards (reward +1) or away from (−1) the skill's, and moves the
//! per-user skill confidence by an adaptive exponential moving average.
//!
//! This module also ships the ten base skills as static data ([`BASE_SKILLS`]).
//!
//! Rewards are the feedback event's −1, 0 or +1 (only the sign of an `i8` is used); 0 is
//! neutral and changes nothing. Nothing here reads a clock or holds random state: the
//! exploration draw takes the caller's uniform source.

/// Number of style dimensions.
pub const STYLE_DIMENSIONS: usize = 16;

/// A style vector: one value in [0, 1] per dimension of [`STYLE_DIMENSION_NAMES`].
pub type StyleVector = [f64; STYLE_DIMENSIONS];

/// Names of the style dimensions, in vector order (seed 004). Each runs from 0 to 1:
/// verbosity (concise → verbose), formality (casual → formal), technical_depth (simple →
/// technical), proactivity (reactive → proactive), emotional_expression (neutral →
/// expressive), structure (freeform → structured/bullet points), explanation_depth (brief →
/// detailed), example_usage (none → many examples), question_asking (declarative →
/// inquisitive), reassurance_level (minimal → supportive), directness (indirect → direct),
/// enthusiasm (reserved → energetic), patience (efficient → thorough), creativity
/// (conventional → creative). The last two are reserved by the seed for future use and sit at
/// 0.5 in every base skill, so they never affect alignment while unused.
pub const STYLE_DIMENSION_NAMES: [&str; STYLE_DIMENSIONS] = [
    "verbosity",
    "formality",
    "technical_depth",
    "proactivity",
    "emotional_expression",
    "structure",
    "explanation_depth",
    "example_usage",
    "question_asking",
    "reassurance_level",
    "directness",
    "enthusiasm",
    "patience",
    "creativity",
    "reserved_1",
    "reserved_2",
];

/// Index of the style dimension called `name` in [`STYLE_DIMENSION_NAMES`], if any.
pub fn style_dimension_index(name: &str) -> Option<usize> {
    STYLE_DIMENSION_NAMES.iter().position(|&n| n == name)
}

/// The starting style vector of a user in a context bucket: 0.5 everywhere (seed 004).
pub const NEUTRAL_STYLE: StyleVector = [0.5; STYLE_DIMENSIONS];

/// Style alignment 1 − ‖p − s‖/√16 between a user's preference vector `p` and a skill's style
/// vector `s`: 1 for identical vectors, 0 for opposite corners of the unit cube.
pub fn style_alignment(user: &StyleVector, skill: &StyleVector) -> f64 {
    let squared: f64 = user.iter().zip(skill).map(|(p, s)| (p - s) * (p - s)).sum();
    1.0 - squared.sqrt() / (STYLE_DIMENSIONS as f64).sqrt()
}

/// Learning rate of the user style update (seed 004 `learning_rate`).
pub const STYLE_LEARNING_RATE: f64 = 0.1;

/// The user's style vector after feedback `reward` on a reply made with a skill of style
/// `skill`: p ← clamp(p + r·0.1·(s − p), 0, 1) per dimension, r = sign of `reward`. Positive
/// feedback moves p towards s, negative away from it, neutral leaves it.
pub fn update_style_preference(user: &StyleVector, skill: &StyleVector, reward: i8) -> StyleVector {
    let step = f64::from(reward.signum()) * STYLE_LEARNING_RATE;
    let mut updated = *user;
    for (p, s) in updated.iter_mut().zip(skill) {
        *p = (*p + step * (s - *p)).clamp(0.0, 1.0);
    }
    updated
}

/// Weights of the selection score (seed 004 "Hybrid Skill Selection": 40 / 30 / 30 %).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SelectionWeights {
    /// Weight of the trigger match (default 0.4).
    pub trigger: f64,
    /// Weight of the Thompson draw (default 0.3).
    pub thompson: f64,
    /// Weight of the style alignment (default 0.3).
    pub alignment: f64,
}

impl Default for SelectionWeights {
    fn default() -> Self {
        SelectionWeights {
            trigger: 0.4,
            thompson: 0.3,
            alignment: 0.3,
        }
    }
}

impl SelectionWeights {
    /// w_t·trigger_match + w_th·thompson_draw + w_a·alignment.
    pub fn score(&self, trigger_match: f64, thompson_draw: f64, alignment: f64) -> f64 {
        self.trigger * trigger_match + self.thompson * thompson_draw + self.alignment * alignment
    }
}

/// Selection score with the default weights: 0.4·trigger_match + 0.3·thompson_draw +
/// 0.3·alignment.
pub fn selection_score(trigger_match: f64, thompson_draw: f64, alignment: f64) -> f64 {
    SelectionWeights::default().score(trigger_match, thompson_draw, alignment)
}

/// Exploration rate ε = max(0.05, 0.1·0.95^feedback_count), where `feedback_count` is the
/// number of feedback events the user has given. It reaches the 0.05 floor at 14 events
/// (0.1·0.95¹⁴ ≈ 0.0488).
pub fn exploration_rate(feedback_count: u64) -> f64 {
    (0.1 * 0.95_f64.powf(feedback_count as f64)).max(0.05)
}

/// Outcome of [`choose_skill`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillChoice {
    /// Index of the chosen candidate.
    pub index: usize,
    /// True when the choice was an exploration step rather than the best score.
    pub explored: bool,
}

/// ε-greedy choice among candidates with selection `scores`: draws u from `uniform`; if
/// u < `exploration_rate` and there are at least two candidates, picks one of the candidates
/// other than the best uniformly (a second draw), else the best. The best is the highest
/// score, the first one on ties; NaN scores never win. `None` when `scores` is empty.
pub fn choose_skill(
    scores: &[f64],
    exploration_rate: f64,
    uniform: &mut impl FnMut() -> f64,
) -> Option<SkillChoice> {
    if scores.is_empty() {
        return None;
    }
    // Highest non-NaN score, first on ties (index 0 if every score is NaN).
    let best = scores
        .iter()
        .enumerate()
        .filter(|(_, s)| !s.is_nan())
        .fold(None, |best: Option<(usize, f64)>, (i, &s)| match best {
            Some((_, top)) if top >= s => best,
            _ => Some((i, s)),
        })
        .map_or(0, |(i, _)| i);
    if scores.len() < 2 || uniform() >= exploration_rate {
        return Some(SkillChoice {
            index: best,
            explored: false,
        });
    }
    let others = scores.len() - 1;
    let pick = ((uniform() * others as f64) as usize).min(others - 1);
    let index = if pick < best { pick } else { pick + 1 };
    Some(SkillChoice {
        index,
        explored: true,
    })
}

/// Skills whose trigger match is below this are not candidates (seed 004 `match_threshold`).
pub const TRIGGER_MATCH_THRESHOLD: f64 = 0.5;

/// When a skill applies. Values are compared case-insensitively. An empty list means the skill
/// does not care about that factor.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SkillTrigger {
    /// Intents the skill is for, e.g. "question", "request", "learning", "chat", "support",
    /// "planning", "command", "review", "summarize".
    pub intents: &'static [&'static str],
    /// Sentiments the skill is for: "positive", "neutral", "negative".
    pub sentiments: &'static [&'static str],
    /// Times of day the skill is for: "morning", "afternoon", "evening", "night".
    pub times_of_day: &'static [&'static str],
    /// Topic keywords (lower case, one or more words) for [`keyword_topic_similarity`].
    pub keywords: &'static [&'static str],
}

/// Credit for one trigger factor: 1 if the skill lists `value`, 0 if it lists others only,
/// ½ if it lists nothing (no preference: ranked between a match and a mismatch).
fn factor_credit(listed: &[&str], value: &str) -> f64 {
    if listed.is_empty() {
        0.5
    } else if listed.iter().any(|v| v.eq_ignore_ascii_case(value)) {
        1.0
    } else {
        0.0
    }
}

/// Trigger match in [0, 1] (seed 004 `match_trigger`): 0.4 for the intent, 0.15 for the
/// sentiment, 0.15 for the time of day, plus 0.3·topic_similarity (clamped to [0, 1]). A factor
/// the trigger leaves empty earns half its weight.
pub fn trigger_match(
    trigger: &SkillTrigger,
    intent: &str,
    sentiment: &str,
    time_of_day: &str,
    topic_similarity: f64,
) -> f64 {
    let topic = if topic_similarity.is_nan() {
        0.0
    } else {
        topic_similarity.clamp(0.0, 1.0)
    };
    0.4 * factor_credit(trigger.intents, intent)
        + 0.15 * factor_credit(trigger.sentiments, sentiment)
        + 0.15 * factor_credit(trigger.times_of_day, time_of_day)
        + 0.3 * topic
}

/// Lower-cased alphanumeric words of `text`, joined and padded by single spaces, so that
/// " word " substring tests match whole words and whole phrases only.
fn word_padded(text: &str) -> String {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    format!(" {} ", words.join(" "))
}

/// Keyword stand-in for the seed's embedding topic similarity: min(1, hits/2), where hits is
/// the number of distinct `keywords` found in `text` as whole words or phrases, ignoring case
/// and punctuation ("review" matches "Review:" but not "preview"). Two hits count as a full
/// topic match. Callers with topic embeddings can pass their cosine to [`trigger_match`]
/// instead.
pub fn keyword_topic_similarity(keywords: &[&str], text: &str) -> f64 {
    let text = word_padded(text);
    let mut seen: Vec<String> = Vec::new();
    for keyword in keywords {
        let needle = word_padded(keyword);
        if needle.trim().is_empty() || seen.contains(&needle) {
            continue;
        }
        if text.contains(&needle) {
            seen.push(needle);
        }
    }
    (seen.len() as f64 / 2.0).min(1.0)
}

/// Confidence of a skill for a user before any feedback: 0.5, the neutral point of the
/// confidence mapping (target 0.5 + 0.3·r).
pub const INITIAL_SKILL_CONFIDENCE: f64 = 0.5;

/// Per-user skill confidence after feedback `reward` (seed 004 `update_confidence`): with
/// α = 0.3 if `uses_before` (times the skill was used before this feedback) < 10, else 0.1,
/// and target 0.5 + 0.3·r (r = sign of `reward`), returns clamp(α·target + (1 − α)·current,
/// 0.2, 0.9). Neutral feedback (r = 0) returns `current` unchanged.
pub fn update_skill_confidence(current: f64, reward: i8, uses_before: u64) -> f64 {
    if reward == 0 {
        return current;
    }
    let alpha = if uses_before < 10 { 0.3 } else { 0.1 };
    let target = 0.5 + 0.3 * f64::from(reward.signum());
    (alpha * target + (1.0 - alpha) * current).clamp(0.2, 0.9)
}

/// A skill shipped with engram.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BaseSkill {
    /// Stable id, as used in events' `skill_id`.
    pub id: &'static str,
    /// Human-readable name.
    pub name: &'static str,
    /// Prompt template: instructions placed in the system prompt when the skill is chosen.
    pub template: &'static str,
    /// When the skill applies.
    pub trigger: SkillTrigger,
    /// The skill's style, in [`STYLE_DIMENSION_NAMES`] order.
    pub style: StyleVector,
}

/// The base skill with id `id`, if any.
pub fn base_skill(id: &str) -> Option<&'static BaseSkill> {
    BASE_SKILLS.iter().find(|s| s.id == id)
}

/// The ten base skills of SPEC §6. Style vectors are in [`STYLE_DIMENSION_NAMES`] order; those
/// of "concise" and "detailed" are the seed's, the others are set by hand on the same scale.
pub static BASE_SKILLS: [BaseSkill; 10] = [
    BaseSkill {
        id: "concise",
        name: "Concise",
        template: "Answer briefly and directly. Lead with the answer in the first sentence, then \
                   add at most three short bullet points if they help. Leave out background, \
                   caveats and restatements of the question unless the user asks for them.",
        trigger: SkillTrigger {
            intents: &["question", "request"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "quick", "quickly", "brief", "briefly", "short", "tldr", "in short", "one line",
            ],
        },
        style: [
            0.2, 0.5, 0.5, 0.5, 0.3, 0.7, 0.4, 0.5, 0.5, 0.5, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "detailed",
        name: "Detailed",
        template: "Give a thorough explanation. Start with a one-sentence summary, then explain \
                   the reasoning step by step, with concrete examples and the context needed to \
                   see why. Define terms the user may not know, and close with the key takeaways.",
        trigger: SkillTrigger {
            intents: &["question", "learning"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "explain",
                "why",
                "how does",
                "in depth",
                "detail",
                "details",
                "walk me through",
                "understand",
            ],
        },
        style: [
            0.9, 0.6, 0.7, 0.5, 0.4, 0.6, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.7, 0.5, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "casual",
        name: "Casual",
        template: "Keep the tone relaxed and conversational, as if talking with a friend. Use \
                   plain everyday words and contractions, and skip formal structure such as \
                   headings. Stay accurate and helpful: casual is about the voice, not about \
                   cutting corners.",
        trigger: SkillTrigger {
            intents: &["chat"],
            sentiments: &["positive", "neutral"],
            times_of_day: &["evening", "night"],
            keywords: &[
                "hey",
                "hi",
                "lol",
                "chat",
                "fun",
                "weekend",
                "how are you",
                "funny",
            ],
        },
        style: [
            0.4, 0.1, 0.3, 0.6, 0.7, 0.2, 0.4, 0.5, 0.6, 0.5, 0.6, 0.7, 0.5, 0.6, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "technical",
        name: "Technical",
        template:
            "Answer at an expert level. Use precise terminology and the exact names of APIs, \
                   commands and units, and include code or formulas where they say it better than \
                   prose. State assumptions, edge cases and trade-offs explicitly; do not simplify \
                   for a general audience.",
        trigger: SkillTrigger {
            intents: &["question", "request"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "api",
                "code",
                "error",
                "compile",
                "algorithm",
                "complexity",
                "config",
                "latency",
                "database",
                "stack trace",
            ],
        },
        style: [
            0.6, 0.7, 0.95, 0.4, 0.2, 0.7, 0.7, 0.6, 0.3, 0.3, 0.8, 0.4, 0.6, 0.4, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "empathetic-direct",
        name: "Empathetic (direct)",
        template:
            "The user may be frustrated or upset. Acknowledge the feeling explicitly in your \
                   first sentence, for example \"That sounds really stressful\", without \
                   exaggerating it. Then help with the actual problem, keeping the steps clear and \
                   manageable.",
        trigger: SkillTrigger {
            intents: &["chat", "support"],
            sentiments: &["negative"],
            times_of_day: &[],
            keywords: &[
                "frustrated",
                "upset",
                "stressed",
                "angry",
                "sad",
                "overwhelmed",
                "annoyed",
                "worried",
            ],
        },
        style: [
            0.5, 0.4, 0.2, 0.4, 0.9, 0.3, 0.4, 0.2, 0.5, 0.9, 0.7, 0.5, 0.8, 0.4, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "empathetic-subtle",
        name: "Empathetic (subtle)",
        template: "The user may be having a hard time. Show care through what you do rather than \
                   by naming their feelings: be patient, make the next step small and concrete, \
                   and offer practical support. Keep the tone warm and calm, and do not dwell on \
                   emotions unless the user brings them up.",
        trigger: SkillTrigger {
            intents: &["chat", "support", "request"],
            sentiments: &["negative"],
            times_of_day: &[],
            keywords: &[
                "tired",
                "struggling",
                "difficult",
                "hard time",
                "stuck",
                "anxious",
                "deadline",
                "exhausted",
            ],
        },
        style: [
            0.4, 0.4, 0.2, 0.6, 0.4, 0.3, 0.3, 0.3, 0.5, 0.7, 0.3, 0.4, 0.8, 0.5, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "proactive",
        name: "Proactive",
        template: "Answer the request, then anticipate what the user will need next. Point out \
                   likely pitfalls, suggest one or two useful next steps or improvements, and \
                   offer to do them. Keep every suggestion relevant to the user's goal; do not pad \
                   the answer.",
        trigger: SkillTrigger {
            intents: &["request", "planning"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "plan",
                "next steps",
                "improve",
                "project",
                "roadmap",
                "what else",
                "prepare",
                "set up",
            ],
        },
        style: [
            0.6, 0.5, 0.5, 0.95, 0.5, 0.6, 0.5, 0.5, 0.6, 0.5, 0.6, 0.7, 0.5, 0.7, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "reactive",
        name: "Reactive",
        template: "Answer exactly what was asked and nothing more. Do not volunteer suggestions, \
                   follow-up tasks or unrelated improvements. If something essential is missing \
                   from the request, ask one short clarifying question instead of guessing.",
        trigger: SkillTrigger {
            intents: &["question", "command"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "just",
                "only",
                "exactly",
                "simply",
                "nothing else",
                "yes or no",
            ],
        },
        style: [
            0.3, 0.5, 0.5, 0.05, 0.3, 0.5, 0.4, 0.4, 0.2, 0.4, 0.7, 0.4, 0.5, 0.3, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "code-review",
        name: "Code review",
        template: "Review the code like a constructive senior colleague. Start with what works, \
                   then list concrete issues ordered by severity: correctness, security, \
                   performance, then readability. For each issue quote the relevant line, explain \
                   why it matters and suggest a fix. Be polite and specific.",
        trigger: SkillTrigger {
            intents: &["review", "request"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "review",
                "code review",
                "pull request",
                "pr",
                "diff",
                "refactor",
                "bug",
                "patch",
            ],
        },
        style: [
            0.6, 0.6, 0.9, 0.6, 0.2, 0.8, 0.6, 0.7, 0.4, 0.4, 0.8, 0.3, 0.6, 0.4, 0.5, 0.5,
        ],
    },
    BaseSkill {
        id: "key-points",
        name: "Key points",
        template: "Reply with the key points only, as a bulleted list of at most five items. Each \
                   bullet is one self-contained sentence that starts with its most important \
                   words. Add no introduction and no conclusion.",
        trigger: SkillTrigger {
            intents: &["summarize", "request"],
            sentiments: &[],
            times_of_day: &[],
            keywords: &[
                "summary",
                "summarize",
                "summarise",
                "key points",
                "main points",
                "highlights",
                "takeaways",
                "recap",
            ],
        },
        style: [
            0.15, 0.5, 0.5, 0.4, 0.2, 0.95, 0.3, 0.2, 0.2, 0.3, 0.8, 0.3, 0.4, 0.3, 0.5, 0.5,
        ],
    },
];

#[cfg(test)]
mod tests;
