//! Preferences in the prompt: the user's own active ones, and those their team and
//! organisation hold, worded as instructions.

use super::*;

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
    /// `user`, or `team` / `org` for one inherited from the user's team or organisation, or
    /// `global` for one of the operator's defaults for everyone.
    pub level: &'static str,
    /// How later corrections contradicted it (SPEC §4.5), when they did: `split` (it applies
    /// outside the contexts it was contradicted in), `contested` (it stands), or `deactivated`
    /// (then this entry is the newest contradicting correction that took its place).
    pub contradiction: Option<&'static str>,
    /// What it asks for, where that is recognised (empty otherwise): how preferences that ask
    /// for one aspect two ways are told apart, and which skills it rules out.
    pub requests: RequestSet,
    /// When it was last taught (its newest correction, or the message that stated it),
    /// microseconds since the Unix epoch; 0 for an inherited one.
    pub since_micros: i64,
    /// The message that stated it ("please keep answers short"), for a stated preference.
    pub stated_in: Option<String>,
}

impl ActivePreference {
    /// A preference inherited from the user's team or organisation (`level`), worded by `line`.
    fn inherited(id: &str, confidence: f64, line: String, level: &'static str) -> Self {
        ActivePreference {
            cluster_id: id.to_string(),
            confidence,
            requests: requests_of(&line),
            line,
            corrections: Vec::new(),
            level,
            contradiction: None,
            since_micros: 0,
            stated_in: None,
        }
    }
}

/// The preferences the user stated in ordinary messages ("Please keep answers short"): the
/// current facts `preference: <aspect>` about the user, each worded as an instruction, with the
/// message it was said in. A later statement about the same aspect has superseded an earlier
/// one in the facts view already.
pub fn stated_preferences(memory: &UserMemory) -> Vec<ActivePreference> {
    crate::read_model::stated_preference_facts(memory)
        .into_iter()
        .map(|(request, current)| ActivePreference {
            cluster_id: format!("stated:{}", request.aspect.name()),
            // said in so many words: as sure as a preference gets
            confidence: 1.0,
            line: request.to_string(),
            corrections: Vec::new(),
            level: "user",
            contradiction: None,
            requests: RequestSet(vec![request]),
            since_micros: current.valid_from,
            stated_in: (!current.evidence.is_empty()).then(|| current.evidence.clone()),
        })
        .collect()
}

/// How far from the user a preference's level is: the user's own (`user`) 0, their team's 1,
/// their organisation's (`org`) 2, the operator's defaults for every tenant (`global`) 3.
fn level_rank(level: &str) -> u8 {
    match level {
        "user" => 0,
        "team" => 1,
        "org" => 2,
        _ => 3,
    }
}

/// Leaves out every preference that asks for an aspect another way than a preference closer
/// to the user (individual beats team beats organisation beats global: "be formal" from the
/// organisation gives way to the team's "be casual"), or than one of the user's own that was
/// taught later ("give me more detail" said after a pattern of "keep it short"). A global
/// default is also left out where a closer preference asks for the same aspect at all (the
/// same way included): it is a default, for users nothing else speaks for.
pub fn without_overridden(preferences: Vec<ActivePreference>) -> Vec<ActivePreference> {
    let overridden = |p: &ActivePreference| {
        preferences.iter().any(|q| {
            let (rq, rp) = (level_rank(q.level), level_rank(p.level));
            let closer_or_later =
                rq < rp || (rq == 0 && rp == 0 && q.since_micros > p.since_micros);
            (q.requests.conflicts_with(&p.requests) && closer_or_later)
                || (rp == 3 && rq < 3 && shares_aspect(&q.requests, &p.requests))
        })
    };
    let keep: Vec<bool> = preferences.iter().map(|p| !overridden(p)).collect();
    preferences
        .into_iter()
        .zip(keep)
        .filter_map(|(p, keep)| keep.then_some(p))
        .collect()
}

/// Whether the two sets ask for some aspect, the same way or not.
fn shares_aspect(a: &RequestSet, b: &RequestSet) -> bool {
    a.0.iter().any(|x| b.0.iter().any(|y| x.aspect == y.aspect))
}

/// The operator's default preferences for every tenant and user (`prompt.global_preferences`),
/// level `global`, as sure as a preference gets; ids `global:<index>`.
pub fn global_preferences(lines: &[String]) -> Vec<ActivePreference> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            ActivePreference::inherited(
                &format!("global:{i}"),
                1.0,
                line.trim().to_string(),
                "global",
            )
        })
        .collect()
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
                    requests: requests_of(newest.instruction().unwrap_or_default()),
                    since_micros: newest.ts_micros,
                    stated_in: None,
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
            let measure = memory.cluster_measures.get(cluster);
            Some(ActivePreference {
                requests: measure.map(|m| m.requests.clone()).unwrap_or_default(),
                since_micros: measure.map_or(0, |m| m.latest_micros),
                stated_in: None,
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
            out.push(ActivePreference::inherited(&p.id, confidence, line, "team"));
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
            out.push(ActivePreference::inherited(&p.id, confidence, line, "org"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(level: &'static str, line: &str, since_micros: i64) -> ActivePreference {
        let mut p = ActivePreference::inherited(line, 0.9, line.to_string(), level);
        p.since_micros = since_micros;
        p
    }

    fn kept(preferences: Vec<ActivePreference>) -> Vec<(&'static str, String)> {
        without_overridden(preferences)
            .into_iter()
            .map(|p| (p.level, p.line))
            .collect()
    }

    #[test]
    fn the_closest_level_wins_where_levels_oppose() {
        // formality asked three ways: the user's casual beats the team's and the org's formal
        let formal_org = at("org", "Please be more formal.", 0);
        let casual_team = at("team", "Be more casual.", 0);
        let formal_user = at("user", "Please be more formal.", 5);
        assert!(formal_org.requests.conflicts_with(&casual_team.requests));
        assert_eq!(
            kept(vec![formal_org.clone(), casual_team.clone()]),
            [("team", "Be more casual.".to_string())]
        );
        // the user's own word beats the team's; the organisation's, which gave way to the
        // team's, is not brought back (the user says it already)
        assert_eq!(
            kept(vec![formal_org.clone(), casual_team, formal_user]),
            [("user", "Please be more formal.".to_string())]
        );
        // the organisation beats a global default that opposes it
        let casual_global = at("global", "Be more casual.", 0);
        assert_eq!(
            kept(vec![casual_global, formal_org]),
            [("org", "Please be more formal.".to_string())]
        );
    }

    #[test]
    fn a_global_default_gives_way_to_any_closer_word_on_its_aspect_and_stays_otherwise() {
        let short_global = at("global", "Keep answers short.", 0);
        let short_user = at("user", "keep it short", 3);
        let german_global = at("global", "Answer in German.", 0);
        assert_eq!(
            kept(vec![
                short_global.clone(),
                german_global.clone(),
                short_user
            ]),
            [
                ("global", "Answer in German.".to_string()),
                ("user", "keep it short".to_string())
            ]
        );
        // alone, both defaults stand
        assert_eq!(kept(vec![short_global, german_global]).len(), 2);
    }

    #[test]
    fn the_users_later_word_beats_their_earlier_one_and_peers_both_stand() {
        let short = at("user", "keep it short", 1);
        let long = at("user", "give me more detail", 2);
        assert_eq!(
            kept(vec![short.clone(), long.clone()]),
            [("user", "give me more detail".to_string())]
        );
        // two teams' opposite preferences are not for this rule to settle
        let (a, b) = (
            at("team", "keep it short", 0),
            at("team", "give me more detail", 0),
        );
        assert_eq!(kept(vec![a, b]).len(), 2);
    }

    #[test]
    fn global_preferences_come_from_the_configured_lines() {
        let g = global_preferences(&[
            "Use metric units.".into(),
            "  ".into(),
            " No emoji. ".into(),
        ]);
        let ids: Vec<_> = g
            .iter()
            .map(|p| (p.cluster_id.as_str(), p.line.as_str(), p.level))
            .collect();
        assert_eq!(
            ids,
            [
                ("global:0", "Use metric units.", "global"),
                ("global:2", "No emoji.", "global")
            ]
        );
        assert!(g
            .iter()
            .all(|p| p.confidence == 1.0 && p.corrections.is_empty()));
    }
}
