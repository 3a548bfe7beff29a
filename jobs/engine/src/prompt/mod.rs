//! Prompt assembly (SPEC §7): a user's maintained views and recalled episodes turned into a
//! Qwen3 chat prompt that fits a token budget counted with the Qwen3 tokenizer, with the
//! provenance of every part.
//!
//! Layout, as the model sees it:
//! 1. system: persona; the active preferences (confidence ≥ 0.75, most relevant to the query
//!    first, "do X, not Y" where the correction has both); the corrections made earlier in
//!    this session (they act at once, before any pattern forms); the chosen skill's template;
//! 2. user: few-shot corrections (the most similar original → corrected pairs) and memory
//!    (current facts, most similar to the query first; recalled summaries and episodes with
//!    dates);
//! 3. the session's last turns, verbatim;
//! 4. user: the query; then the assistant's turn is opened.
//!
//! System part and query are required; the rest is added by priority (recent turns, few-shot,
//! facts, summaries, episodes) while it fits, and the final prompt is counted exactly.

use crate::config::PromptConfig;
use crate::engine::Engine;
use crate::query::recall::{RecallError, RecallHit, RecallRequest, Why};
use engram_connectors::chat_template::{ChatTemplateError, TemplateMessage};
use engram_connectors::embedder::cosine;
use engram_dataflows::views::UserMemory;
use engram_dataflows::MemoryViews;
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::math::beta::{context_bucket, discounted_user_posterior, ShrinkageParams};
use engram_operators::math::decay::LifecycleState;
use engram_operators::math::skills::{
    choose_skill, exploration_rate, keyword_topic_similarity, selection_score, style_alignment,
    trigger_match, BaseSkill, StyleVector, BASE_SKILLS, NEUTRAL_STYLE, TRIGGER_MATCH_THRESHOLD,
};
use engram_operators::preference_contradictions::Resolution;
use engram_operators::skill_confidence::DiscountedTally;
use engram_operators::skill_feedback::FeedbackTally;
use engram_operators::team_preferences::same_preference;
use engram_schemas::{validate_name, EventError, FeedbackContext};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Deserialize)]
pub struct PromptRequest {
    /// Filled in from the API key over HTTP.
    #[serde(default)]
    pub tenant: String,
    pub user: String,
    #[serde(default)]
    pub session: Option<String>,
    pub query: String,
    /// Intent, sentiment and time of day: the skill's trigger and context bucket. Missing
    /// parts default to `question`, `neutral` and the time of day of `now` (UTC).
    #[serde(default)]
    pub context: Option<FeedbackContext>,
    /// Use this skill instead of choosing one.
    #[serde(default)]
    pub skill_id: Option<String>,
    /// Token budget of the whole rendered prompt (default from the configuration).
    #[serde(default)]
    pub budget_tokens: Option<usize>,
    /// Recall memories as of this moment.
    #[serde(default)]
    pub as_of: Option<chrono::DateTime<chrono::Utc>>,
    /// Seed of the skill choice's random draws (for reproducible prompts).
    #[serde(default)]
    pub seed: Option<u64>,
    /// Qwen3's `enable_thinking` (absent: the template's default, thinking on).
    #[serde(default)]
    pub enable_thinking: Option<bool>,
    /// Where the answer goes, in the words corrections use for their `context` (e.g. "external
    /// client"): a preference the user contradicted in that context is left out there.
    #[serde(default)]
    pub situation: Option<String>,
}

/// Tokens per part of the prompt (each part's own text; the total is the exact count of the
/// rendered prompt, template tokens included).
#[derive(Debug, Clone, Default, Serialize)]
pub struct SectionTokens {
    pub system: usize,
    pub few_shot: usize,
    pub memory: usize,
    pub recent_turns: usize,
    pub query: usize,
    pub total: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PreferenceUsed {
    pub cluster_id: String,
    /// `user`, `team` or `org` (inherited).
    pub level: &'static str,
    pub instruction: String,
    pub confidence: f64,
    pub relevance: f64,
    /// The corrections the preference was learned from.
    pub corrections: Vec<String>,
    /// `split`, `contested` or `deactivated` when later corrections contradicted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contradiction: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CorrectionUsed {
    pub correction_id: String,
    pub similarity: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct MemoryUsed {
    pub id: String,
    /// A domain-wide memory of the tenant, not the user's own.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub domain: bool,
    pub event_id: String,
    pub ts: chrono::DateTime<chrono::Utc>,
    pub score: f32,
    pub why: Why,
}

#[derive(Debug, Clone, Serialize)]
pub struct FactUsed {
    pub id: String,
    pub subject: String,
    pub attribute: String,
    pub value: String,
    pub valid_from: chrono::DateTime<chrono::Utc>,
    /// Cosine of the fact ("subject attribute value") to the query: facts are ranked by it.
    pub relevance: f64,
    /// A domain-wide fact of the tenant, not the user's own.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub domain: bool,
}

/// One skill's selection score and its parts.
#[derive(Debug, Clone, Serialize)]
pub struct SkillScore {
    pub skill_id: String,
    pub trigger: f64,
    pub thompson: f64,
    pub alignment: f64,
    pub score: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SkillPick {
    pub skill_id: String,
    pub name: String,
    /// `chosen` (best score), `explored` (ε-exploration), or `requested`.
    pub how: &'static str,
    pub bucket: u32,
    pub exploration_rate: f64,
    /// The candidates (trigger match ≥ 0.5, or every skill when none reaches it), best first.
    pub candidates: Vec<SkillScore>,
    /// The user's confidence in the picked skill (an EMA of their rewards for it, SPEC §6);
    /// absent before any feedback on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// Where every part of the prompt came from.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Provenance {
    pub preferences: Vec<PreferenceUsed>,
    /// Corrections of this session, used as instructions at once.
    pub session_corrections: Vec<String>,
    pub few_shot: Vec<CorrectionUsed>,
    pub facts: Vec<FactUsed>,
    /// Summaries (a reflection's, found by recall) in the memory part.
    pub summaries: Vec<SummaryUsed>,
    pub memories: Vec<MemoryUsed>,
    /// Episode ids of the verbatim last turns.
    pub recent_turns: Vec<String>,
    pub skill: Option<SkillPick>,
}

/// A summary the prompt's memory part shows, and why recall chose it.
#[derive(Debug, Clone, Serialize)]
pub struct SummaryUsed {
    pub id: String,
    pub event_id: String,
    pub ts: chrono::DateTime<chrono::Utc>,
    /// How many episodes it covers.
    pub covers: usize,
    pub score: f32,
    pub why: crate::query::recall::FactWhy,
    /// A domain-wide summary of the tenant, not the user's own.
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub domain: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssembledPrompt {
    /// The rendered Qwen3 prompt, ending with the opened assistant turn.
    pub prompt: String,
    /// The same as chat messages (what an OpenAI-compatible server is sent).
    pub messages: Vec<TemplateMessage>,
    pub tokens: SectionTokens,
    pub budget_tokens: usize,
    /// Parts left out because the budget was spent: `recent_turns`, `few_shot`, `facts`,
    /// `summaries`, `memories` counts.
    pub dropped: BTreeMap<&'static str, usize>,
    pub provenance: Provenance,
    /// The views' timestamp the prompt was assembled at.
    pub views_as_of: u64,
    /// Whether everything accepted before the request (this user's episodes in Lance
    /// included) was visible; false when the wait for it timed out.
    pub consistent: bool,
    pub took_ms: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{0}")]
    Invalid(EventError),
    #[error("the Qwen3 tokenizer is not loaded: {0}")]
    NoTokenizer(String),
    #[error(transparent)]
    Template(#[from] ChatTemplateError),
    #[error(transparent)]
    Recall(#[from] RecallError),
    #[error(transparent)]
    Store(#[from] engram_connectors::StoreError),
    #[error(transparent)]
    Embed(#[from] engram_connectors::EmbedderError),
    #[error("budget_tokens: {budget} is too small: the system part and the query alone take {needed} tokens")]
    BudgetTooSmall { budget: usize, needed: usize },
}

fn invalid(field: &str, reason: impl Into<String>) -> PromptError {
    PromptError::Invalid(EventError::new(field, reason.into()))
}

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

/// Scores every base skill for a query (SPEC §6): 0.4·trigger match + 0.3·Thompson draw from
/// the user's posterior for (bucket, skill) (shrunk towards the tenant's population; the user's
/// votes discounted by age as of `now_secs` where `discounted` holds them) + 0.3·style
/// alignment with the user's style. Candidates are the skills whose trigger match reaches
/// [`TRIGGER_MATCH_THRESHOLD`] (all skills when none does); one is chosen ε-greedily with
/// ε = [`exploration_rate`] of the user's feedback count. Returns the pick with every
/// candidate's score, best first.
#[allow(clippy::too_many_arguments)]
pub fn select_skill(
    query: &str,
    context: &FeedbackContext,
    user_tallies: &BTreeMap<(u32, String), FeedbackTally>,
    discounted: &BTreeMap<(u32, String), DiscountedTally>,
    now_secs: i64,
    population: impl Fn(u32, &str) -> Option<FeedbackTally>,
    user_style: Option<&StyleVector>,
    feedback_count: u64,
    uniform: &mut impl FnMut() -> f64,
) -> SkillPick {
    let bucket = context_bucket(&context.intent, &context.sentiment, &context.time_of_day);
    let style = user_style.unwrap_or(&NEUTRAL_STYLE);
    let shrinkage = ShrinkageParams::default();
    let triggers: Vec<(usize, f64)> = BASE_SKILLS
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let topic = keyword_topic_similarity(s.trigger.keywords, query);
            let t = trigger_match(
                &s.trigger,
                &context.intent,
                &context.sentiment,
                &context.time_of_day,
                topic,
            );
            (i, t)
        })
        .collect();
    let mut candidates: Vec<(usize, f64)> = triggers
        .iter()
        .copied()
        .filter(|(_, t)| *t >= TRIGGER_MATCH_THRESHOLD)
        .collect();
    if candidates.is_empty() {
        candidates = triggers;
    }
    let scored: Vec<(usize, SkillScore)> = candidates
        .into_iter()
        .map(|(i, trigger)| {
            let skill = &BASE_SKILLS[i];
            let own = user_tallies
                .get(&(bucket, skill.id.to_string()))
                .copied()
                .unwrap_or_default();
            let pop = population(bucket, skill.id).unwrap_or(own);
            // with discounting on, the user's votes weigh less as they age
            let weighted = discounted
                .get(&(bucket, skill.id.to_string()))
                .map_or(own.counts(), |d| d.at(now_secs));
            let thompson =
                discounted_user_posterior(own.counts(), weighted, pop.counts(), &shrinkage)
                    .sample(uniform);
            let alignment = style_alignment(style, &skill.style);
            (
                i,
                SkillScore {
                    skill_id: skill.id.to_string(),
                    trigger,
                    thompson,
                    alignment,
                    score: selection_score(trigger, thompson, alignment),
                },
            )
        })
        .collect();
    let epsilon = exploration_rate(feedback_count);
    let scores: Vec<f64> = scored.iter().map(|(_, s)| s.score).collect();
    let choice = choose_skill(&scores, epsilon, uniform).expect("ten base skills");
    let skill: &BaseSkill = &BASE_SKILLS[scored[choice.index].0];
    let mut candidates: Vec<SkillScore> = scored.into_iter().map(|(_, s)| s).collect();
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    SkillPick {
        skill_id: skill.id.to_string(),
        name: skill.name.to_string(),
        how: if choice.explored {
            "explored"
        } else {
            "chosen"
        },
        bucket,
        exploration_rate: epsilon,
        candidates,
        confidence: None,
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

/// An active preference of the user: a promoted pattern whose preference is `active` and whose
/// confidence reaches the threshold, worded by its newest correction that says what it wants.
#[derive(Debug, Clone)]
pub struct ActivePreference {
    /// The user's cluster, or the id of the team or organisation preference.
    pub cluster_id: String,
    pub confidence: f64,
    pub line: String,
    /// The user's corrections it was learned from (none for an inherited one: those are other
    /// users' corrections).
    pub corrections: Vec<String>,
    /// `user`, or `team` / `org` for one inherited from the user's team or organisation.
    pub level: &'static str,
    /// How later corrections contradicted it (SPEC §4.5), when they did: `split` (it applies
    /// outside the contexts it was contradicted in), `contested` (it stands), or `deactivated`
    /// (then this entry is the newest contradicting correction that took its place).
    pub contradiction: Option<&'static str>,
}

/// The user's active preferences for a request made in `situation` (trimmed, lowercased;
/// empty for none), with contradictions applied (SPEC §4.5): a deactivated preference is
/// replaced by the newest of the corrections that contradicted it; a split one applies outside
/// the contexts it was contradicted in (and there, too, the newest contradicting correction
/// made in that context takes its place); a contested one stands.
pub fn active_preferences(
    memory: &UserMemory,
    min_confidence: f64,
    situation: &str,
) -> Vec<ActivePreference> {
    let mut members: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
    for (correction, cluster) in &memory.correction_clusters {
        members.entry(cluster).or_default().push(correction);
    }
    let newest_instruction = |ids: &mut dyn Iterator<Item = &String>| {
        ids.filter_map(|id| memory.corrections.get(id))
            .filter(|n| n.instruction().is_some())
            .max_by_key(|n| (n.ts_micros, n.correction_id.clone()))
    };
    memory
        .patterns
        .iter()
        .filter(|(cluster, _)| {
            memory.preference_states.get(*cluster) == Some(&LifecycleState::Active)
        })
        .filter_map(|(cluster, pattern)| {
            let confidence = f64::from(pattern.confidence_milli) / 1000.0;
            if confidence < min_confidence {
                return None;
            }
            let ids = members.get(cluster)?;
            let contradiction = memory.contradictions.get(cluster);
            if let Some(c) = contradiction.filter(|c| !c.applies_in(situation)) {
                // the user's later word on it: the newest contradicting correction that applies
                let newest = newest_instruction(&mut c.by.iter().filter(|id| {
                    c.resolution == Resolution::Deactivated
                        || memory
                            .corrections
                            .get(*id)
                            .is_some_and(|n| n.context == situation)
                }))?;
                return Some(ActivePreference {
                    cluster_id: cluster.clone(),
                    confidence: f64::from(newest.confidence_milli) / 1000.0,
                    line: format!(
                        "{} (this replaces an earlier preference)",
                        instruction_line(newest)?
                    ),
                    corrections: vec![newest.correction_id.clone()],
                    level: "user",
                    contradiction: Some(match c.resolution {
                        Resolution::Deactivated => "deactivated",
                        _ => "split",
                    }),
                });
            }
            let newest = newest_instruction(&mut ids.iter().copied())?;
            let mut line = instruction_line(newest)?;
            match contradiction.map(|c| c.resolution) {
                Some(Resolution::Split) => {
                    let c = contradiction.expect("matched");
                    line.push_str(&format!(
                        " (when {}; not when {})",
                        c.holds_in.join(" or "),
                        c.contradicted_in.join(" or ")
                    ));
                }
                Some(Resolution::Contested) => {
                    line.push_str(" (a later correction said otherwise; check with the user)")
                }
                _ => {}
            }
            Some(ActivePreference {
                cluster_id: cluster.clone(),
                confidence,
                line,
                corrections: ids.iter().map(|s| s.to_string()).collect(),
                level: "user",
                contradiction: contradiction.map(|c| match c.resolution {
                    Resolution::Split => "split",
                    Resolution::Contested => "contested",
                    Resolution::Deactivated => "deactivated",
                }),
            })
        })
        .collect()
}

/// How a shared preference is worded: what the newest correction of `member`'s cluster
/// `cluster` asks for (its `expected_behavior`; never the answers, which are that user's own).
pub fn preference_wording(
    views: &MemoryViews,
    tenant: &str,
    member: &str,
    cluster: &str,
) -> Option<String> {
    let m = views.users.get(&(tenant.to_string(), member.to_string()))?;
    let newest = m
        .correction_clusters
        .iter()
        .filter(|(_, c)| c.as_str() == cluster)
        .filter_map(|(id, _)| m.corrections.get(id))
        .filter(|n| {
            n.expected_behavior
                .as_deref()
                .is_some_and(|t| !t.trim().is_empty())
        })
        .max_by_key(|n| (n.ts_micros, n.correction_id.clone()))?;
    Some(shorten(newest.expected_behavior.as_deref()?.trim(), 300))
}

/// The preferences a user inherits (SPEC §4.4): those their team holds, then those their
/// organisation (tenant) holds, at `min_confidence` or more, except where the user already
/// has a pattern of their own on the same thing (individual beats team beats organisation:
/// an organisation preference is also left out where the team's covers it). Worded by what the
/// corrections behind it ask for (`expected_behavior`, never another user's answers).
pub fn inherited_preferences(
    views: &MemoryViews,
    tenant: &str,
    user: &str,
    min_confidence: f64,
) -> Vec<ActivePreference> {
    let key = (tenant.to_string(), user.to_string());
    let empty = UserMemory::default();
    let memory = views.users.get(&key).unwrap_or(&empty);
    // what is already covered: the user's own patterns, then each level taken
    let mut covered: Vec<Vec<f32>> = memory
        .cluster_measures
        .values()
        .filter(|m| m.promoted)
        .map(|m| m.centroid.to_f32())
        .collect();
    let is_covered =
        |covered: &[Vec<f32>], c: &[f32]| covered.iter().any(|o| same_preference(o, c));
    let wording = |member: &str, cluster: &str| preference_wording(views, tenant, member, cluster);
    let mut out = Vec::new();
    let team = views.user_teams.get(&key);
    let team_held = team
        .and_then(|t| views.team_preferences.get(&(tenant.to_string(), t.clone())))
        .into_iter()
        .flat_map(|held| held.values());
    for p in team_held {
        let centroid = p.centroid.to_f32();
        let confidence = f64::from(p.confidence_milli) / 1000.0;
        if p.users.iter().any(|u| u == user) || is_covered(&covered, &centroid) {
            covered.push(centroid);
            continue;
        }
        covered.push(centroid);
        if confidence < min_confidence {
            continue;
        }
        if let Some(line) = p.members.iter().find_map(|(u, c)| wording(u, c)) {
            out.push(ActivePreference {
                cluster_id: p.id.clone(),
                confidence,
                line,
                corrections: Vec::new(),
                level: "team",
                contradiction: None,
            });
        }
    }
    let org_held = views
        .org_preferences
        .get(tenant)
        .into_iter()
        .flat_map(|h| h.values());
    for p in org_held {
        let centroid = p.centroid.to_f32();
        let confidence = f64::from(p.confidence_milli) / 1000.0;
        if confidence < min_confidence || is_covered(&covered, &centroid) {
            continue;
        }
        let line = p.members.iter().find_map(|(team, id)| {
            let held = views
                .team_preferences
                .get(&(tenant.to_string(), team.clone()))?;
            held.get(id)?
                .members
                .iter()
                .find_map(|(u, c)| wording(u, c))
        });
        if let Some(line) = line {
            out.push(ActivePreference {
                cluster_id: p.id.clone(),
                confidence,
                line,
                corrections: Vec::new(),
                level: "org",
                contradiction: None,
            });
        }
    }
    out
}

/// One optional piece of the prompt, in the order pieces are tried.
#[derive(Debug, Clone)]
struct Piece {
    kind: &'static str,
    /// The chat role of a recent turn (other pieces go into the context message).
    role: &'static str,
    /// Where the piece goes among the kept pieces of its kind (recalled episodes are chosen by
    /// score but shown in time order).
    order: i64,
    /// Index into the candidates of its kind.
    index: usize,
    text: String,
    tokens: usize,
}

/// Which pieces fit: walks `pieces` in order and keeps each one whose token count still fits
/// in `room` (a piece that does not fit is skipped, later smaller ones may still go in).
fn fit(pieces: &[Piece], room: usize) -> Vec<bool> {
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

impl Engine {
    /// Assembles the prompt for `req` (its tenant already checked against the API key).
    pub async fn assemble_prompt(
        &self,
        req: &PromptRequest,
    ) -> Result<AssembledPrompt, PromptError> {
        let started = Instant::now();
        let chat = self
            .chat_template
            .as_ref()
            .map_err(|e| PromptError::NoTokenizer(e.clone()))?
            .clone();
        let cfg: &PromptConfig = &self.config.prompt;
        validate_name(&req.user).map_err(|r| invalid("user", r))?;
        if let Some(s) = &req.session {
            validate_name(s).map_err(|r| invalid("session", r))?;
        }
        if req.query.trim().is_empty() {
            return Err(invalid("query", "must not be empty"));
        }
        let budget = req.budget_tokens.unwrap_or(cfg.default_budget_tokens);
        if budget == 0 || budget > cfg.max_budget_tokens {
            return Err(invalid(
                "budget_tokens",
                format!("must be 1 to {}", cfg.max_budget_tokens),
            ));
        }
        if let Some(id) = &req.skill_id {
            if engram_operators::math::skills::base_skill(id).is_none() {
                return Err(invalid("skill_id", format!("no skill {id:?}")));
            }
        }
        let consistent = self
            .wait_for_user(
                &req.tenant,
                &req.user,
                Duration::from_millis(cfg.consistency_wait_ms),
            )
            .await;
        let now = chrono::Utc::now();
        let context = full_context(req.context.as_ref(), now);

        // Memories (this also embeds the query; the embedder's cache serves it again below).
        let recall_req = RecallRequest {
            tenant: req.tenant.clone(),
            user: req.user.clone(),
            query: req.query.clone(),
            k: Some(cfg.memories),
            as_of: req.as_of,
            include_domain: cfg.domain_memories,
        };
        let recent = async {
            match &req.session {
                Some(s) if cfg.recent_turns > 0 => {
                    self.store
                        .session_tail(&req.tenant, &req.user, s, cfg.recent_turns, req.as_of)
                        .await
                }
                _ => Ok(Vec::new()),
            }
        };
        let (recalled, recent) = tokio::join!(self.recall.recall(&recall_req), recent);
        let (recalled, recent) = (recalled?, recent?);

        // Everything read from the views is read at one timestamp.
        let (memory, population, views_as_of, engine_secs, inherited) = {
            let views = self.views.read();
            let inherited = inherited_preferences(
                &views,
                &req.tenant,
                &req.user,
                cfg.min_preference_confidence,
            );
            let memory = views
                .users
                .get(&(req.tenant.clone(), req.user.clone()))
                .cloned()
                .unwrap_or_default();
            let population: HashMap<(u32, String), FeedbackTally> = views
                .population
                .iter()
                .filter(|((t, _, _), _)| *t == req.tenant)
                .map(|((_, b, s), tally)| ((*b, s.clone()), *tally))
                .collect();
            let engine_secs = views.engine_time_secs as i64;
            (memory, population, views.as_of, engine_secs, inherited)
        };

        // Texts to compare with the query: preferences and correction examples.
        let situation = req
            .situation
            .as_deref()
            .map(|t| t.trim().to_lowercase())
            .unwrap_or_default();
        let mut preferences =
            active_preferences(&memory, cfg.min_preference_confidence, &situation);
        preferences.extend(inherited);
        let session = req.session.clone().unwrap_or_default();
        let in_preferences: std::collections::HashSet<&String> =
            preferences.iter().flat_map(|p| &p.corrections).collect();
        let mut session_notes: Vec<&CorrectionNote> = memory
            .corrections
            .values()
            .filter(|n| !session.is_empty() && n.session == session)
            .filter(|n| !in_preferences.contains(&n.correction_id))
            .filter(|n| n.instruction().is_some())
            .collect();
        session_notes.sort_by_key(|n| (n.ts_micros, n.correction_id.clone()));
        // One example per distinct text (a correction made again teaches nothing new), newest.
        let mut newest_first: Vec<&CorrectionNote> = memory.corrections.values().collect();
        newest_first.sort_by_key(|n| std::cmp::Reverse((n.ts_micros, n.correction_id.clone())));
        let mut seen_examples = std::collections::HashSet::new();
        let examples: Vec<(&CorrectionNote, String)> = newest_first
            .into_iter()
            .filter_map(|n| few_shot_example(n).map(|e| (n, e)))
            .filter(|(_, e)| seen_examples.insert(e.clone()))
            .collect();
        // Current facts: a shortlist (those recall found in the facts table, then by shared
        // words and recency), ranked by meaning below.
        let mut facts = ranked_facts(
            &memory,
            &req.query,
            &recalled.facts,
            FACT_SHORTLIST.max(cfg.facts),
        );
        // the tenant's domain-wide facts recall found (only when asked for), ranked alike
        facts.extend(
            recalled
                .facts
                .iter()
                .filter(|f| f.domain && f.current)
                .map(|f| FactUsed {
                    id: f.fact_id.clone(),
                    subject: f.subject.clone(),
                    attribute: f.attribute.clone(),
                    value: f.value.clone(),
                    valid_from: f.valid_from,
                    relevance: 0.0,
                    domain: true,
                }),
        );
        let fact_texts: Vec<String> = facts
            .iter()
            .map(|f| format!("{} {} {}", f.subject, f.attribute, f.value))
            .collect();
        let mut texts: Vec<&str> = vec![req.query.as_str()];
        texts.extend(fact_texts.iter().map(String::as_str));
        let first_preference = texts.len();
        texts.extend(preferences.iter().map(|p| p.line.as_str()));
        texts.extend(examples.iter().map(|(n, _)| {
            n.instruction()
                .or(n.corrected.as_deref())
                .unwrap_or(n.original.as_str())
        }));
        let embedder = self.recall.embedder.clone();
        let owned: Vec<String> = texts.iter().map(|s| s.to_string()).collect();
        let vectors = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = owned.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .expect("embedding task")?;
        let query_vec = &vectors[0];
        let relevance = |i: usize| f64::from(cosine(query_vec, &vectors[i]));
        for (i, f) in facts.iter_mut().enumerate() {
            f.relevance = relevance(1 + i);
        }
        // most relevant first; the shortlist's order (shared words, recency) breaks ties
        facts.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
        facts.truncate(cfg.facts);

        // Preferences, most relevant first.
        let mut preferences: Vec<(ActivePreference, f64)> = preferences
            .into_iter()
            .enumerate()
            .map(|(i, p)| (p, relevance(first_preference + i)))
            .collect();
        preferences.sort_by(|a, b| b.1.total_cmp(&a.1));
        let n_prefs = preferences.len();

        // Skill.
        let mut rng = match req.seed {
            Some(seed) => <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed),
            None => <rand::rngs::StdRng as rand::SeedableRng>::from_entropy(),
        };
        let mut uniform = || rand::Rng::gen::<f64>(&mut rng);
        let style = memory.style.map(|s| s.style());
        let mut pick = select_skill(
            &req.query,
            &context,
            &memory.skills,
            &memory.discounted_skills,
            engine_secs,
            |bucket, skill| population.get(&(bucket, skill.to_string())).copied(),
            style.as_ref(),
            memory.style.map_or(0, |s| s.feedback_count),
            &mut uniform,
        );
        if let Some(id) = &req.skill_id {
            pick.skill_id = id.clone();
            pick.how = "requested";
        }
        pick.confidence = memory
            .skill_confidence
            .get(&pick.skill_id)
            .map(|c| c.confidence());
        let skill = engram_operators::math::skills::base_skill(&pick.skill_id).expect("checked");
        pick.name = skill.name.to_string();

        // The system message.
        let mut system = cfg.persona.trim().to_string();
        if !preferences.is_empty() {
            system.push_str("\n\nUser preferences indicate:");
            for (p, _) in &preferences {
                let from = match p.level {
                    "team" => "; your team's",
                    "org" => "; your organisation's",
                    _ => "",
                };
                system.push_str(&format!(
                    "\n- {} (confidence: {:.2}{from})",
                    p.line, p.confidence
                ));
            }
        }
        if !session_notes.is_empty() {
            system.push_str(
                "\n\nIn this conversation the user corrected you; follow these from now on:",
            );
            for n in &session_notes {
                if let Some(line) = instruction_line(n) {
                    system.push_str(&format!("\n- {line}"));
                }
            }
        }
        system.push_str(&format!(
            "\n\nResponse style ({}): {}",
            skill.name, skill.template
        ));

        // Optional pieces, in priority order.
        let mut pieces: Vec<Piece> = Vec::new();
        let count = |t: &str| chat.count_tokens(t);
        for (i, row) in recent.iter().enumerate().rev() {
            let role = if row.role == "assistant" {
                "assistant"
            } else {
                "user"
            };
            let msg = TemplateMessage {
                role: role.into(),
                content: row.content.clone(),
            };
            pieces.push(Piece {
                kind: "recent_turns",
                role,
                order: i as i64,
                index: i,
                tokens: chat.message_tokens(&msg)?,
                text: row.content.clone(),
            });
        }
        let mut ranked_examples: Vec<(usize, f64)> = (0..examples.len())
            .map(|i| (i, relevance(first_preference + n_prefs + i)))
            .collect();
        ranked_examples.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked_examples.truncate(cfg.few_shot);
        for &(i, _) in &ranked_examples {
            let text = format!("{}\n\n", examples[i].1);
            pieces.push(Piece {
                kind: "few_shot",
                role: "",
                order: pieces.len() as i64,
                index: i,
                tokens: count(&text)?,
                text,
            });
        }
        let recent_ids: std::collections::HashSet<&str> =
            recent.iter().map(|r| r.id.as_str()).collect();
        for (i, f) in facts.iter().enumerate() {
            let text = format!(
                "- {}{} {}: {} (since {})\n",
                if f.domain { "shared knowledge: " } else { "" },
                f.subject,
                f.attribute,
                f.value,
                f.valid_from.format("%Y-%m-%d")
            );
            pieces.push(Piece {
                kind: "facts",
                role: "",
                order: i as i64,
                index: i,
                tokens: count(&text)?,
                text,
            });
        }
        for (i, h) in recalled.summaries.iter().enumerate() {
            let text = format!(
                "- [{}] {}{}\n",
                h.ts.format("%Y-%m-%d"),
                if h.domain { "shared knowledge: " } else { "" },
                shorten(&h.content, cfg.max_memory_chars)
            );
            pieces.push(Piece {
                kind: "summaries",
                role: "",
                order: h.ts.timestamp_micros(),
                index: i,
                tokens: count(&text)?,
                text,
            });
        }
        let memories: Vec<&RecallHit> = recalled
            .results
            .iter()
            .filter(|h| !recent_ids.contains(h.id.as_str()))
            .collect();
        for (i, h) in memories.iter().enumerate() {
            let text = format!(
                "- [{}] {}{}: {}\n",
                h.ts.format("%Y-%m-%d %H:%M"),
                if h.domain { "shared knowledge, " } else { "" },
                h.role,
                shorten(&h.content, cfg.max_memory_chars)
            );
            pieces.push(Piece {
                kind: "memories",
                role: "",
                order: h.ts.timestamp_micros(),
                index: i,
                tokens: count(&text)?,
                text,
            });
        }

        // Fit: required parts first, then pieces while they fit; re-render and drop the last
        // kept piece while the exact count is over (joins can tokenize a little differently).
        let query_msg = TemplateMessage {
            role: "user".into(),
            content: req.query.clone(),
        };
        let build = |keep: &[bool]| -> Vec<TemplateMessage> {
            build_messages(&system, &pieces, keep, &query_msg)
        };
        let none = vec![false; pieces.len()];
        let base = chat.render(&build(&none), true, req.enable_thinking)?;
        let base_tokens = count(&base)?;
        if base_tokens > budget {
            return Err(PromptError::BudgetTooSmall {
                budget,
                needed: base_tokens,
            });
        }
        // Headers of the context message ("Memory …") cost a few tokens: reserve them.
        let reserve = 48;
        let mut keep = fit(&pieces, budget.saturating_sub(base_tokens + reserve));
        let (mut prompt, mut messages) = loop {
            let messages = build(&keep);
            let prompt = chat.render(&messages, true, req.enable_thinking)?;
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
            let p = chat.render(&m, true, req.enable_thinking)?;
            if count(&p)? <= budget {
                prompt = p;
                messages = m;
            } else {
                keep[i] = false;
            }
        }

        let mut tokens = SectionTokens {
            system: count(&system)?,
            query: count(&req.query)?,
            total: count(&prompt)?,
            ..Default::default()
        };
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
                    contradiction: p.contradiction,
                })
                .collect(),
            session_corrections: session_notes
                .iter()
                .map(|n| n.correction_id.clone())
                .collect(),
            ..Default::default()
        };
        for (piece, kept) in pieces.iter().zip(&keep) {
            if !kept {
                *dropped.entry(piece.kind).or_default() += 1;
                continue;
            }
            match piece.kind {
                "recent_turns" => {
                    tokens.recent_turns += piece.tokens;
                    provenance.recent_turns.push(recent[piece.index].id.clone());
                }
                "few_shot" => {
                    tokens.few_shot += piece.tokens;
                    let (note, _) = &examples[piece.index];
                    let similarity = ranked_examples
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
                    provenance.facts.push(facts[piece.index].clone());
                }
                "summaries" => {
                    tokens.memory += piece.tokens;
                    let h = &recalled.summaries[piece.index];
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
                    let h = memories[piece.index];
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
        provenance.skill = Some(pick);
        Ok(AssembledPrompt {
            prompt,
            messages,
            tokens,
            budget_tokens: budget,
            dropped,
            provenance,
            views_as_of,
            consistent,
            took_ms: started.elapsed().as_secs_f64() * 1000.0,
        })
    }

    /// Waits (at most `limit`) until the views reflect everything accepted before the call and
    /// Lance holds every episode of `(tenant, user)` the views hold; true if that happened.
    pub async fn wait_for_user(&self, tenant: &str, user: &str, limit: Duration) -> bool {
        let target = self.ingestor.log().end_offset();
        let key = (tenant.to_string(), user.to_string());
        let deadline = Instant::now() + limit;
        loop {
            let (as_of, in_views) = {
                let v = self.views.read();
                (v.as_of, v.user_episodes.get(&key).copied().unwrap_or(0))
            };
            if as_of >= target && self.store.user_row_count(tenant, user) >= in_views {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// How many current facts, picked by shared words and recency, are ranked by their embeddings'
/// similarity to the query (the embedder's cache makes the facts of a user cheap after their
/// first prompt).
const FACT_SHORTLIST: usize = 64;

/// The user's current facts: first those among `found` (recall's search of the facts table, by
/// vector and full text: it finds a fact that shares no word with the query among thousands),
/// in its order; then those sharing the most words with the query; then the most recently
/// learned. Each once; at most `limit`.
fn ranked_facts(
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
fn build_messages(
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

#[cfg(test)]
mod tests {
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
}
