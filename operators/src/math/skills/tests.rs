use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

/// A uniform source replaying `values`.
fn replay(values: &[f64]) -> impl FnMut() -> f64 + '_ {
    let mut it = values.iter().copied();
    move || it.next().expect("test source exhausted")
}

#[test]
fn dimension_names() {
    assert_eq!(STYLE_DIMENSION_NAMES.len(), 16);
    assert_eq!(
        &STYLE_DIMENSION_NAMES[..3],
        &["verbosity", "formality", "technical_depth"]
    );
    assert_eq!(style_dimension_index("structure"), Some(5));
    assert_eq!(style_dimension_index("creativity"), Some(13));
    assert_eq!(style_dimension_index("charisma"), None);
    for (i, a) in STYLE_DIMENSION_NAMES.iter().enumerate() {
        assert!(!STYLE_DIMENSION_NAMES[i + 1..].contains(a), "duplicate {a}");
    }
}

#[test]
fn alignment_known_values() {
    assert_eq!(style_alignment(&NEUTRAL_STYLE, &NEUTRAL_STYLE), 1.0);
    assert!(close(style_alignment(&[0.0; 16], &[1.0; 16]), 0.0, 1e-15));
    // Neutral vs the seed's concise vector: squared distance 0.19, alignment 1 − √0.19/4.
    let concise = base_skill("concise").unwrap().style;
    assert!(close(
        style_alignment(&NEUTRAL_STYLE, &concise),
        0.891_027_526_411_483,
        1e-12
    ));
    // One dimension off by 1: 1 − 1/4.
    let mut one_off = [0.0; 16];
    one_off[3] = 1.0;
    assert!(close(style_alignment(&[0.0; 16], &one_off), 0.75, 1e-15));
}

#[test]
fn selection_score_weights() {
    assert!(close(selection_score(1.0, 0.5, 0.8), 0.79, 1e-15));
    assert!(close(selection_score(1.0, 1.0, 1.0), 1.0, 1e-15));
    assert!(close(selection_score(0.0, 1.0, 0.0), 0.3, 1e-15));
}

#[test]
fn exploration_decays_to_floor() {
    assert_eq!(exploration_rate(0), 0.1);
    assert!(close(exploration_rate(1), 0.095, 1e-15));
    // 0.1·0.95¹³ = 0.0513342083…; 0.1·0.95¹⁴ = 0.0487… is below the floor.
    assert!(close(exploration_rate(13), 0.051_334_208_327_950_5, 1e-15));
    assert_eq!(exploration_rate(14), 0.05);
    assert_eq!(exploration_rate(60), 0.05);
    assert_eq!(exploration_rate(u64::MAX), 0.05);
}

#[test]
fn style_update_moves_towards_or_away_and_clamps() {
    let mut skill = NEUTRAL_STYLE;
    skill[0] = 0.2;
    let towards = update_style_preference(&NEUTRAL_STYLE, &skill, 1);
    assert!(close(towards[0], 0.47, 1e-15));
    assert_eq!(towards[1], 0.5);
    let away = update_style_preference(&NEUTRAL_STYLE, &skill, -1);
    assert!(close(away[0], 0.53, 1e-15));
    assert_eq!(
        update_style_preference(&NEUTRAL_STYLE, &skill, 0),
        NEUTRAL_STYLE
    );
    // 0.98 − 0.1·(0.5 − 0.98) = 1.028 → clamped to 1.
    let mut user = NEUTRAL_STYLE;
    user[2] = 0.98;
    assert_eq!(update_style_preference(&user, &NEUTRAL_STYLE, -1)[2], 1.0);
    // The reward's sign only: +5 acts as +1.
    assert_eq!(update_style_preference(&NEUTRAL_STYLE, &skill, 5), towards);
}

#[test]
fn confidence_ema_steps() {
    // New skill: 0.3·0.8 + 0.7·0.5 = 0.59.
    assert!(close(update_skill_confidence(0.5, 1, 0), 0.59, 1e-15));
    // Established skill: 0.1·0.8 + 0.9·0.5 = 0.53.
    assert!(close(update_skill_confidence(0.5, 1, 10), 0.53, 1e-15));
    // 9 uses is still new: 0.3·0.2 + 0.7·0.25 = 0.235.
    assert!(close(update_skill_confidence(0.25, -1, 9), 0.235, 1e-15));
    assert_eq!(update_skill_confidence(0.37, 0, 3), 0.37);
    // Clamps: 0.3·0.2 + 0.7·0.1 = 0.13 → 0.2; 0.3·0.8 + 0.7·0.95 = 0.905 → 0.9.
    assert_eq!(update_skill_confidence(0.1, -1, 0), 0.2);
    assert_eq!(update_skill_confidence(0.95, 1, 0), 0.9);
}

#[test]
fn confidence_converges_to_targets() {
    let mut c = INITIAL_SKILL_CONFIDENCE;
    for uses in 0..200 {
        c = update_skill_confidence(c, 1, uses);
        assert!((0.2..=0.9).contains(&c));
    }
    assert!(close(c, 0.8, 1e-6), "{c}");
    for uses in 200..400 {
        c = update_skill_confidence(c, -1, uses);
    }
    assert!(close(c, 0.2, 1e-6), "{c}");
}

#[test]
fn trigger_match_weights() {
    let concise = &base_skill("concise").unwrap().trigger;
    // Intent match, sentiment and time unrestricted (half credit), no topic.
    assert!(close(
        trigger_match(concise, "question", "neutral", "morning", 0.0),
        0.55,
        1e-15
    ));
    let direct = &base_skill("empathetic-direct").unwrap().trigger;
    // 0.4 + 0.15 + 0.075 + 0.3
    assert!(close(
        trigger_match(direct, "Chat", "NEGATIVE", "night", 1.0),
        0.925,
        1e-15
    ));
    // Intent and sentiment mismatch: only the unrestricted time's half credit.
    assert!(close(
        trigger_match(direct, "question", "positive", "night", 0.0),
        0.075,
        1e-15
    ));
    let casual = &base_skill("casual").unwrap().trigger;
    // Everything matches: 0.4 + 0.15 + 0.15 + 0.3·0.5
    assert!(close(
        trigger_match(casual, "chat", "positive", "evening", 0.5),
        0.85,
        1e-15
    ));
    assert!(close(
        trigger_match(casual, "chat", "positive", "evening", 7.0),
        1.0,
        1e-15
    ));
}

#[test]
fn keyword_similarity_matches_whole_words() {
    let kw = base_skill("code-review").unwrap().trigger.keywords;
    assert_eq!(
        keyword_topic_similarity(kw, "Can you review my pull request?"),
        1.0
    );
    assert_eq!(keyword_topic_similarity(kw, "Quick REVIEW: thoughts?"), 0.5);
    assert_eq!(
        keyword_topic_similarity(kw, "Show me a preview of the pullrequest"),
        0.0
    );
    assert_eq!(
        keyword_topic_similarity(&["pull request"], "pull the request"),
        0.0
    );
    assert_eq!(
        keyword_topic_similarity(&["tldr", "tldr"], "tldr please"),
        0.5
    );
    assert_eq!(keyword_topic_similarity(&[], "anything"), 0.0);
}

#[test]
fn choose_skill_exploits_and_explores() {
    let scores = [0.2, 0.9, 0.5];
    assert_eq!(
        choose_skill(&scores, 0.1, &mut replay(&[0.5])),
        Some(SkillChoice {
            index: 1,
            explored: false
        })
    );
    // Exploration picks uniformly among the non-best candidates.
    assert_eq!(
        choose_skill(&scores, 0.1, &mut replay(&[0.05, 0.0])),
        Some(SkillChoice {
            index: 0,
            explored: true
        })
    );
    assert_eq!(
        choose_skill(&scores, 0.1, &mut replay(&[0.05, 0.99])),
        Some(SkillChoice {
            index: 2,
            explored: true
        })
    );
    assert_eq!(choose_skill(&[], 0.1, &mut replay(&[])), None);
    assert_eq!(
        choose_skill(&[0.3], 1.0, &mut replay(&[0.0])),
        Some(SkillChoice {
            index: 0,
            explored: false
        })
    );
    // Ties go to the first; NaN never wins.
    assert_eq!(
        choose_skill(&[0.7, 0.7], 0.0, &mut replay(&[0.5]))
            .unwrap()
            .index,
        0
    );
    assert_eq!(
        choose_skill(&[f64::NAN, 0.1], 0.0, &mut replay(&[0.5]))
            .unwrap()
            .index,
        1
    );
}

#[test]
fn base_skills_are_complete_and_valid() {
    let ids: Vec<&str> = BASE_SKILLS.iter().map(|s| s.id).collect();
    assert_eq!(
        ids,
        [
            "concise",
            "detailed",
            "casual",
            "technical",
            "empathetic-direct",
            "empathetic-subtle",
            "proactive",
            "reactive",
            "code-review",
            "key-points"
        ]
    );
    for skill in &BASE_SKILLS {
        assert!(
            skill.style.iter().all(|v| (0.0..=1.0).contains(v)),
            "{}",
            skill.id
        );
        assert_eq!(
            skill.style[14..],
            [0.5, 0.5],
            "{}: reserved dimensions",
            skill.id
        );
        assert!(
            skill.template.matches(". ").count() >= 2,
            "{}: template too short",
            skill.id
        );
        assert!(
            !skill.trigger.intents.is_empty() && skill.trigger.keywords.len() >= 4,
            "{}",
            skill.id
        );
        assert!(
            skill
                .trigger
                .keywords
                .iter()
                .all(|k| *k == k.to_lowercase()),
            "{}",
            skill.id
        );
        assert!(!skill.name.is_empty());
    }
    assert_eq!(base_skill("code-review").unwrap().name, "Code review");
    assert!(base_skill("missing").is_none());
}

#[test]
fn base_skill_styles_agree_with_their_names() {
    let dim =
        |id: &str, name: &str| base_skill(id).unwrap().style[style_dimension_index(name).unwrap()];
    // The seed's two vectors.
    assert_eq!(
        base_skill("concise").unwrap().style,
        [0.2, 0.5, 0.5, 0.5, 0.3, 0.7, 0.4, 0.5, 0.5, 0.5, 0.6, 0.5, 0.5, 0.5, 0.5, 0.5]
    );
    assert_eq!(
        base_skill("detailed").unwrap().style,
        [0.9, 0.6, 0.7, 0.5, 0.4, 0.6, 0.8, 0.7, 0.6, 0.6, 0.6, 0.6, 0.7, 0.5, 0.5, 0.5]
    );
    assert!(dim("concise", "verbosity") < dim("detailed", "verbosity"));
    assert!(dim("casual", "formality") < dim("technical", "formality"));
    assert!(dim("technical", "technical_depth") > dim("casual", "technical_depth"));
    assert!(dim("proactive", "proactivity") > dim("reactive", "proactivity"));
    assert!(
        dim("empathetic-direct", "emotional_expression")
            > dim("empathetic-subtle", "emotional_expression")
    );
    assert!(dim("key-points", "structure") >= 0.9);
}

#[test]
fn code_review_request_selects_code_review() {
    // Equal Thompson draws and a neutral user: the trigger decides.
    let text = "Could you review this pull request before I merge?";
    let scores: Vec<f64> = BASE_SKILLS
        .iter()
        .map(|s| {
            let topic = keyword_topic_similarity(s.trigger.keywords, text);
            let trigger = trigger_match(&s.trigger, "review", "neutral", "afternoon", topic);
            selection_score(trigger, 0.5, style_alignment(&NEUTRAL_STYLE, &s.style))
        })
        .collect();
    let choice = choose_skill(&scores, 0.0, &mut replay(&[0.5])).unwrap();
    assert_eq!(BASE_SKILLS[choice.index].id, "code-review");
}
