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

mod budget;
mod explanation;
mod preferences;
mod sections;
mod skills;
mod streamed_transform;
mod transforms;

pub use explanation::{explain, stored_provenance};
pub use preferences::{
    active_preferences, global_preferences, inherited_preferences, preference_wording,
    stated_preferences, without_overridden, ActivePreference,
};
pub use sections::{few_shot_example, full_context, instruction_line, shorten, time_of_day};
pub use skills::select_skill;
pub use streamed_transform::StreamedTransform;
pub use transforms::{transform_answer, transforms_asked, AppliedTransform};

use crate::config::PromptConfig;
use crate::engine::Engine;
use crate::query::recall::{FactHit, RecallError, RecallHit, RecallRequest, SummaryHit, Why};
use budget::{account, fit_to_budget, Piece};
use engram_connectors::chat_template::{ChatTemplateError, Qwen3Chat, TemplateMessage};
use engram_connectors::embedder::cosine;
use engram_connectors::EpisodeRow;
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
use engram_operators::requests::{requests_of, Request, RequestSet};
use engram_operators::skill_confidence::DiscountedTally;
use engram_operators::skill_feedback::FeedbackTally;
use engram_operators::team_preferences::same_preference;
use engram_schemas::{validate_name, EventError, FeedbackContext};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// Unclear corrections of a session the system message asks about, at most (the newest).
const UNCLEAR_SHOWN: usize = 3;

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
    /// `user`, `team` or `org` (inherited), or `global` (the operator's default).
    pub level: &'static str,
    pub instruction: String,
    pub confidence: f64,
    pub relevance: f64,
    /// The corrections the preference was learned from.
    pub corrections: Vec<String>,
    /// The message the user stated it in, for a preference stated in an ordinary message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stated_in: Option<String>,
    /// `split`, `contested` or `deactivated` when later corrections contradicted it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contradiction: Option<&'static str>,
    /// When the user last taught it (its newest correction, or the message that stated it);
    /// absent for an inherited one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<chrono::DateTime<chrono::Utc>>,
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
    /// Corrections of this session too unsure to act on: the model is asked to check with the
    /// user instead.
    pub unclear_corrections: Vec<String>,
    pub few_shot: Vec<CorrectionUsed>,
    pub facts: Vec<FactUsed>,
    /// Summaries (a reflection's, found by recall) in the memory part.
    pub summaries: Vec<SummaryUsed>,
    pub memories: Vec<MemoryUsed>,
    /// Episode ids of the verbatim last turns.
    pub recent_turns: Vec<String>,
    pub skill: Option<SkillPick>,
    /// What was done to the model's answer by the active preferences ([`transform_answer`]);
    /// only for answers engram relays (`/v1/chat`, `/v1/chat/completions`; a streamed answer's
    /// come with its end).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub transforms: Vec<AppliedTransform>,
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

/// What a prompt reads from the views, all at one timestamp ([`Engine::read_user_views`]).
struct ViewsRead {
    /// The user's memory.
    memory: UserMemory,
    /// The tenant's skill feedback over all its users, by `(context bucket, skill)`.
    population: HashMap<(u32, String), FeedbackTally>,
    /// The log offset the views are as of.
    as_of: u64,
    /// Engine time, seconds since the Unix epoch.
    engine_secs: i64,
    /// The preferences the user's team and organisation hold.
    inherited: Vec<ActivePreference>,
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
        let budget = validated_budget(req, cfg)?;
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
            include_archived: false,
            traversal: None,
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

        let ViewsRead {
            memory,
            population,
            as_of: views_as_of,
            engine_secs,
            inherited,
        } = self.read_user_views(req, cfg);

        let Candidates {
            preferences,
            session_notes,
            unclear,
            examples,
            mut facts,
        } = candidates(&memory, inherited, req, cfg, &recalled.facts);
        // Relevance to the query of every candidate text, in the order of `candidate_texts`.
        let relevance = self
            .relevance_to_query(
                &req.tenant,
                candidate_texts(req, &facts, &preferences, &examples),
            )
            .await?;
        let first_preference = 1 + facts.len();
        let first_example = first_preference + preferences.len();
        for (i, f) in facts.iter_mut().enumerate() {
            f.relevance = relevance[1 + i];
        }
        // most relevant first; the shortlist's order (shared words, recency) breaks ties
        facts.sort_by(|a, b| b.relevance.total_cmp(&a.relevance));
        facts.truncate(cfg.facts);
        // Preferences, most relevant first.
        let mut preferences: Vec<(ActivePreference, f64)> = preferences
            .into_iter()
            .enumerate()
            .map(|(i, p)| (p, relevance[first_preference + i]))
            .collect();
        preferences.sort_by(|a, b| b.1.total_cmp(&a.1));

        // a skill whose style goes against an active preference is not chosen
        let asked: Vec<Request> = preferences
            .iter()
            .flat_map(|(p, _)| p.requests.0.iter().copied())
            .collect();
        let (pick, skill) =
            skills::pick_skill(req, &context, &memory, &population, engine_secs, &asked);
        let system =
            sections::system_message(&cfg.persona, &preferences, &session_notes, &unclear, skill);

        // Optional pieces, in priority order.
        let mut ranked_examples: Vec<(usize, f64)> = (0..examples.len())
            .map(|i| (i, relevance[first_example + i]))
            .collect();
        ranked_examples.sort_by(|a, b| b.1.total_cmp(&a.1));
        ranked_examples.truncate(cfg.few_shot);
        let recent_ids: HashSet<&str> = recent.iter().map(|r| r.id.as_str()).collect();
        let memories: Vec<&RecallHit> = recalled
            .results
            .iter()
            .filter(|h| !recent_ids.contains(h.id.as_str()))
            .collect();
        let chosen = Chosen {
            recent: &recent,
            examples: &examples,
            ranked_examples: &ranked_examples,
            facts: &facts,
            summaries: &recalled.summaries,
            memories: &memories,
        };
        let pieces = sections::pieces(&chat, cfg.max_memory_chars, &chosen)?;
        let (prompt, messages, keep) = fit_to_budget(
            &chat,
            &system,
            &pieces,
            &req.query,
            budget,
            req.enable_thinking,
        )?;

        let (mut tokens, dropped, mut provenance) =
            account(&pieces, &keep, &chosen, &preferences, &session_notes);
        provenance.unclear_corrections = unclear.iter().map(|n| n.correction_id.clone()).collect();
        tokens.system = chat.count_tokens(&system)?;
        tokens.query = chat.count_tokens(&req.query)?;
        tokens.total = chat.count_tokens(&prompt)?;
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

    /// What the prompt for `req` reads from the views, all at one timestamp.
    fn read_user_views(&self, req: &PromptRequest, cfg: &PromptConfig) -> ViewsRead {
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
        ViewsRead {
            memory,
            population,
            as_of: views.as_of,
            engine_secs,
            inherited,
        }
    }

    /// The similarity of each of `texts` to the first (the query), by their embeddings made
    /// for `tenant`.
    async fn relevance_to_query(
        &self,
        tenant: &str,
        texts: Vec<String>,
    ) -> Result<Vec<f64>, PromptError> {
        let vectors = self.recall.embed_texts(tenant, texts).await?;
        let query_vec = &vectors[0];
        Ok(vectors
            .iter()
            .map(|v| f64::from(cosine(query_vec, v)))
            .collect())
    }

    /// Waits (at most `limit`) until the views reflect everything accepted before the call and
    /// recall finds every episode of `(tenant, user)` the views hold (staged or committed: the
    /// Lance commit that follows staging adds nothing a prompt reads); true if that happened.
    pub async fn wait_for_user(&self, tenant: &str, user: &str, limit: Duration) -> bool {
        let target = self.ingestor.log().end_offset();
        let key = (tenant.to_string(), user.to_string());
        let deadline = Instant::now() + limit;
        loop {
            let (as_of, in_views) = {
                let v = self.views.read();
                (v.as_of, v.user_episodes.get(&key).copied().unwrap_or(0))
            };
            if as_of >= target && self.store.user_rows_with_staged(tenant, user) >= in_views {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// The request's budget, once the request is checked (user, session, query, budget, skill).
fn validated_budget(req: &PromptRequest, cfg: &PromptConfig) -> Result<usize, PromptError> {
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
    Ok(budget)
}

/// What may go into the prompt besides the recalled episodes, before it is ranked by relevance.
struct Candidates<'m> {
    /// The user's active preferences, then those inherited from their team and organisation.
    preferences: Vec<ActivePreference>,
    /// Corrections made earlier in this session that no preference holds yet, oldest first.
    session_notes: Vec<&'m CorrectionNote>,
    /// Corrections of this session too unsure to learn from or act on
    /// ([`CorrectionNote::held`]): the newest [`UNCLEAR_SHOWN`], oldest first, to ask about.
    unclear: Vec<&'m CorrectionNote>,
    /// Few-shot examples, one per distinct text, newest first.
    examples: Vec<(&'m CorrectionNote, String)>,
    /// Current facts: the shortlist, then the tenant's domain-wide facts recall found.
    facts: Vec<FactUsed>,
}

fn candidates<'m>(
    memory: &'m UserMemory,
    inherited: Vec<ActivePreference>,
    req: &PromptRequest,
    cfg: &PromptConfig,
    found: &[FactHit],
) -> Candidates<'m> {
    // Texts to compare with the query: preferences and correction examples.
    let situation = req
        .situation
        .as_deref()
        .map(|t| t.trim().to_lowercase())
        .unwrap_or_default();
    let mut preferences = active_preferences(memory, cfg.min_preference_confidence, &situation);
    preferences.extend(stated_preferences(memory));
    preferences.extend(inherited);
    preferences.extend(global_preferences(&cfg.global_preferences));
    let preferences = without_overridden(preferences);
    let session = req.session.clone().unwrap_or_default();
    let in_preferences: HashSet<&String> =
        preferences.iter().flat_map(|p| &p.corrections).collect();
    let held = |n: &&CorrectionNote| n.held;
    let in_session = |n: &&CorrectionNote| !session.is_empty() && n.session == session;
    let mut session_notes: Vec<&CorrectionNote> = memory
        .corrections
        .values()
        .filter(in_session)
        .filter(|n| !held(n))
        .filter(|n| !in_preferences.contains(&n.correction_id))
        .filter(|n| n.instruction().is_some())
        .collect();
    session_notes.sort_by_key(|n| (n.ts_micros, n.correction_id.clone()));
    let mut unclear: Vec<&CorrectionNote> = crate::read_model::held_corrections(memory)
        .into_iter()
        .filter(in_session)
        .collect();
    unclear.drain(..unclear.len().saturating_sub(UNCLEAR_SHOWN));
    // One example per distinct text (a correction made again teaches nothing new), newest.
    let mut newest_first: Vec<&CorrectionNote> = memory.corrections.values().collect();
    newest_first.sort_by_key(|n| std::cmp::Reverse((n.ts_micros, n.correction_id.clone())));
    let mut seen_examples = HashSet::new();
    let examples: Vec<(&CorrectionNote, String)> = newest_first
        .into_iter()
        .filter(|n| !held(n))
        .filter_map(|n| few_shot_example(n).map(|e| (n, e)))
        .filter(|(_, e)| seen_examples.insert(e.clone()))
        .collect();
    // Current facts: a shortlist (those recall found in the facts table, then by shared
    // words and recency), ranked by meaning below.
    let mut facts = sections::ranked_facts(
        memory,
        &req.query,
        found,
        sections::FACT_SHORTLIST.max(cfg.facts),
    );
    // the tenant's domain-wide facts recall found (only when asked for), ranked alike
    facts.extend(
        found
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
    Candidates {
        preferences,
        session_notes,
        unclear,
        examples,
        facts,
    }
}

/// The texts compared with the query: the query itself, then the facts, the preferences and
/// the examples' instructions (or corrected texts), in that order.
fn candidate_texts(
    req: &PromptRequest,
    facts: &[FactUsed],
    preferences: &[ActivePreference],
    examples: &[(&CorrectionNote, String)],
) -> Vec<String> {
    let mut texts: Vec<String> = vec![req.query.clone()];
    texts.extend(
        facts
            .iter()
            .map(|f| format!("{} {} {}", f.subject, f.attribute, f.value)),
    );
    texts.extend(preferences.iter().map(|p| p.line.clone()));
    texts.extend(examples.iter().map(|(n, _)| {
        n.instruction()
            .or(n.corrected.as_deref())
            .unwrap_or(n.original.as_str())
            .to_string()
    }));
    texts
}

/// The optional parts the prompt may hold, as chosen and ranked.
struct Chosen<'a> {
    /// The session's last turns, oldest first.
    recent: &'a [EpisodeRow],
    examples: &'a [(&'a CorrectionNote, String)],
    /// Indexes into `examples` with their similarity, most similar first.
    ranked_examples: &'a [(usize, f64)],
    facts: &'a [FactUsed],
    summaries: &'a [SummaryHit],
    /// Recalled episodes that are not among the recent turns.
    memories: &'a [&'a RecallHit],
}

#[cfg(test)]
mod tests;
