//! The skill a prompt uses (SPEC §6): every base skill scored for the query, one chosen.

use super::*;

/// Scores every base skill for a query (SPEC §6): 0.4·trigger match + 0.3·Thompson draw from
/// the user's posterior for (bucket, skill) (shrunk towards the tenant's population; the user's
/// votes discounted by age as of `now_secs` where `discounted` holds them) + 0.3·style
/// alignment with the user's style. Candidates are the skills whose trigger match reaches
/// [`TRIGGER_MATCH_THRESHOLD`] (all skills when none does); one is chosen ε-greedily with
/// ε = [`exploration_rate`] of the user's feedback count. A skill whose style goes against one
/// of `asked` (the requests of the active preferences, [`Request::contradicts_style`]) is no
/// candidate, unless every skill does. Returns the pick with every candidate's score, best
/// first.
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
    asked: &[Request],
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
    let fits = |i: usize| {
        !asked
            .iter()
            .any(|r| r.contradicts_style(&BASE_SKILLS[i].style))
    };
    let fitting: Vec<(usize, f64)> = triggers.iter().copied().filter(|(i, _)| fits(*i)).collect();
    let pool = if fitting.is_empty() {
        triggers
    } else {
        fitting
    };
    let mut candidates: Vec<(usize, f64)> = pool
        .iter()
        .copied()
        .filter(|(_, t)| *t >= TRIGGER_MATCH_THRESHOLD)
        .collect();
    if candidates.is_empty() {
        candidates = pool;
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

/// The skill for `req`: the one selected for the query (or the one requested), with the
/// user's confidence in it, and its definition.
pub(super) fn pick_skill(
    req: &PromptRequest,
    context: &FeedbackContext,
    memory: &UserMemory,
    population: &HashMap<(u32, String), FeedbackTally>,
    engine_secs: i64,
    asked: &[Request],
) -> (SkillPick, &'static BaseSkill) {
    let mut rng = match req.seed {
        Some(seed) => <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed),
        None => <rand::rngs::StdRng as rand::SeedableRng>::from_entropy(),
    };
    let mut uniform = || rand::Rng::gen::<f64>(&mut rng);
    let style = memory.style.map(|s| s.style());
    let mut pick = select_skill(
        &req.query,
        context,
        &memory.skills,
        &memory.discounted_skills,
        engine_secs,
        |bucket, skill| population.get(&(bucket, skill.to_string())).copied(),
        style.as_ref(),
        memory.style.map_or(0, |s| s.feedback_count),
        asked,
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
    (pick, skill)
}
