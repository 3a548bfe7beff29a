//! The dashboard's rows: one user, team or organisation preference, fact, entity, correction
//! cluster, preference or skill, read from the views as the JSON the page shows
//! (`jobs/server/dashboard/PROTOCOL.md`).

use engram_dataflows::views::UserMemory;
use engram_dataflows::MemoryViews;
use engram_engine::prompt::preference_wording;
use engram_engine::read_model::{
    held_corrections, lifecycle_name, micros_to_rfc3339, EntityView, FactVersionView,
};
use engram_operators::math::beta::{discounted_user_posterior, thompson_shares, ShrinkageParams};
use engram_operators::math::decay::{lifecycle_transition_times, LifecycleThresholds};
use engram_operators::math::skills::BASE_SKILLS;
use engram_operators::team_preferences::{OrgPreference, TeamPreference};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Points of a preference's retention curve R(t) in its row.
const CURVE_POINTS: usize = 60;
/// Points of a skill's posterior density in its row (x = 0, 0.01, …, 1).
const DENSITY_POINTS: usize = 101;
/// Cells of the integral behind a skill's Thompson share.
const SHARE_GRID: usize = 1000;
/// Fact versions, and corrections of a cluster, a row carries at most (the newest).
const ROW_HISTORY: usize = 20;

pub(super) fn milli(x: u16) -> f64 {
    f64::from(x) / 1000.0
}

pub(super) fn days(micros: i64) -> f64 {
    micros as f64 / 86_400e6
}

/// A user's counts, or `None` when the views hold nothing of them.
pub(super) fn user_row(views: &MemoryViews, tenant: &str, user: &str) -> Option<Value> {
    let key = (tenant.to_string(), user.to_string());
    let episodes = views.user_episodes.get(&key).copied().unwrap_or(0);
    let memory = views.users.get(&key);
    let team = views.user_teams.get(&key);
    if episodes == 0 && memory.is_none() && team.is_none() {
        return None;
    }
    let empty = UserMemory::default();
    let m = memory.unwrap_or(&empty);
    let versions = m.facts.values().map(|v| v.len()).sum::<usize>();
    let current = m
        .facts
        .values()
        .flat_map(|v| v.iter())
        .filter(|v| v.valid_to.is_none())
        .count();
    let mut states: BTreeMap<&str, usize> =
        [("active", 0), ("inactive", 0), ("archived", 0)].into();
    for state in m.preference_states.values() {
        *states.entry(lifecycle_name(*state)).or_default() += 1;
    }
    let clusters: BTreeSet<&String> = m.correction_clusters.values().collect();
    Some(json!({
        "user": user, "team": team,
        "episodes": episodes, "entities": m.entities.len(), "facts": versions,
        "current_facts": current, "superseded_facts": versions - current,
        "corrections": m.corrections.len(), "needs_clarification": held_corrections(m).len(),
        "clusters": clusters.len(),
        "patterns": m.patterns.len(), "preferences": states,
    }))
}

/// How a team preference is worded (by the first member whose correction says what it wants).
pub(super) fn team_text(views: &MemoryViews, tenant: &str, p: &TeamPreference) -> Option<String> {
    p.members
        .iter()
        .find_map(|(user, cluster)| preference_wording(views, tenant, user, cluster))
}

pub(super) fn org_text(views: &MemoryViews, tenant: &str, p: &OrgPreference) -> Option<String> {
    p.members.iter().find_map(|(team, id)| {
        let held = views
            .team_preferences
            .get(&(tenant.to_string(), team.clone()))?;
        team_text(views, tenant, held.get(id)?)
    })
}

/// A preference team `team` holds, or `None` when it holds no preference `id`.
pub(super) fn team_row(views: &MemoryViews, tenant: &str, team: &str, id: &str) -> Option<Value> {
    let p = views
        .team_preferences
        .get(&(tenant.to_string(), team.to_string()))?
        .get(id)?;
    let members = views
        .user_teams
        .iter()
        .filter(|((t, _), tm)| t == tenant && tm.as_str() == team)
        .count();
    Some(json!({
        "level": "team", "team": team, "id": id, "text": team_text(views, tenant, p),
        "held_by": p.users, "of": members, "patterns": p.members.len(),
        "confidence": milli(p.confidence_milli),
    }))
}

/// A preference the organisation holds, or `None`.
pub(super) fn org_row(views: &MemoryViews, tenant: &str, id: &str) -> Option<Value> {
    let p = views.org_preferences.get(tenant)?.get(id)?;
    let teams: BTreeSet<&String> = views
        .user_teams
        .iter()
        .filter(|((t, _), _)| t == tenant)
        .map(|(_, team)| team)
        .collect();
    Some(json!({
        "level": "org", "team": null, "id": id, "text": org_text(views, tenant, p),
        "held_by": p.teams, "of": teams.len(), "patterns": p.members.len(),
        "confidence": milli(p.confidence_milli),
    }))
}

/// The latest [`ROW_HISTORY`] versions of one `(subject, attribute)`, oldest first (as the
/// read model's [`FactVersionView`]s), and how many there are (a row is re-sent whenever a
/// version is added: it must stay small).
pub(super) fn fact_row(memory: &UserMemory, subject: &str, attribute: &str) -> Option<Value> {
    let versions = memory
        .facts
        .get(&(subject.to_string(), attribute.to_string()))?;
    let total = versions.len();
    let mut versions: Vec<_> = versions.iter().collect();
    versions.sort_by_key(|v| (v.valid_from, v.fact_id.clone()));
    let versions: Vec<FactVersionView> = versions
        .into_iter()
        .skip(total.saturating_sub(ROW_HISTORY))
        .map(FactVersionView::new)
        .collect();
    Some(
        json!({"subject": subject, "attribute": attribute, "versions": versions,
        "versions_total": total}),
    )
}

/// An entity, as the read model's [`EntityView`].
pub(super) fn entity_row(memory: &UserMemory, tenant: &str, name: &str) -> Option<Value> {
    let s = memory.entities.get(name)?;
    Some(json!(EntityView::new(tenant, name, s)))
}

/// A correction's words as the dashboard shows them: what it asks for, else the original.
fn correction_text(memory: &UserMemory, id: &str) -> Option<String> {
    let note = memory.corrections.get(id)?;
    Some(note.instruction().unwrap_or(&note.original).to_string())
}

/// A cluster's measurements and members, or `None` when it has no members.
pub(super) fn cluster_row(memory: &UserMemory, cluster: &str) -> Option<Value> {
    let members: Vec<&String> = memory
        .correction_clusters
        .iter()
        .filter(|(_, c)| c.as_str() == cluster)
        .map(|(id, _)| id)
        .collect();
    if members.is_empty() {
        return None;
    }
    // the newest few: the row is re-sent whenever the cluster changes
    let mut newest: Vec<(&String, i64)> = members
        .iter()
        .map(|id| {
            (
                *id,
                memory
                    .corrections
                    .get(*id)
                    .map_or(i64::MIN, |n| n.ts_micros),
            )
        })
        .collect();
    newest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let corrections: Vec<Value> = newest
        .iter()
        .take(ROW_HISTORY)
        .map(|(id, _)| {
            let ts = memory
                .corrections
                .get(*id)
                .map(|n| micros_to_rfc3339(n.ts_micros));
            json!({"id": id, "ts": ts, "text": correction_text(memory, id)})
        })
        .collect();
    let m = memory.cluster_measures.get(cluster);
    Some(json!({
        "cluster_id": cluster,
        "size": m.map_or(members.len() as u32, |m| m.size),
        "coherence": m.map(|m| milli(m.coherence_milli)),
        "span_days": m.map(|m| days(m.span_micros)),
        "confidence": m.map(|m| milli(m.confidence_milli)),
        "promoted": memory.patterns.contains_key(cluster),
        "corrections": corrections,
    }))
}

/// A preference's lifecycle with its retention curve, or `None` when the cluster has none.
pub(super) fn preference_row(memory: &UserMemory, cluster: &str, now: i64) -> Option<Value> {
    let trace = memory.preferences.get(cluster)?;
    let thresholds = LifecycleThresholds::default();
    let (inactive_after, archived_after) =
        lifecycle_transition_times(trace.stability_secs as f64, &thresholds);
    let start = trace.last_activation_secs;
    let at = |after: f64| after.is_finite().then(|| start + after.round() as i64);
    let (inactive_at, archived_at) = (at(inactive_after), at(archived_after));
    // from the last activation until a little past archival (or now, if later)
    let end = archived_at.unwrap_or(start + 90 * 86_400).max(now);
    let end = start + ((end - start) as f64 * 1.15).ceil() as i64 + 1;
    let curve: Vec<[f64; 2]> = (0..CURVE_POINTS)
        .map(|i| {
            let t = start + (end - start) * i as i64 / (CURVE_POINTS as i64 - 1);
            [t as f64, trace.retention_at(t)]
        })
        .collect();
    let next = trace.changes_after(now, &thresholds).first().map(|(at, to)| {
        json!({"to": lifecycle_name(*to), "at": micros_to_rfc3339(at * 1_000_000), "at_secs": at})
    });
    Some(json!({
        "cluster_id": cluster,
        "text": correction_text(memory, cluster),
        "state": memory.preference_states.get(cluster).map(|s| lifecycle_name(*s)),
        "retention": trace.retention_at(now),
        "stability_days": trace.stability_secs as f64 / 86_400.0,
        "last_activation": micros_to_rfc3339(start * 1_000_000),
        "last_activation_secs": start,
        "activations": trace.activations,
        "confidence": memory.patterns.get(cluster).map(|p| milli(p.confidence_milli)),
        "inactive_at_secs": inactive_at, "archived_at_secs": archived_at,
        "next_transition": next, "curve": curve,
        "contradiction": memory.contradictions.get(cluster),
    }))
}

/// One row per base skill in `bucket`: the user's posterior (their votes, shrunk towards the
/// tenant's other users, as skill selection draws from it), its density, and its Thompson
/// share among the ten. Empty when the user has no votes in the bucket.
pub(super) fn skill_rows(
    views: &MemoryViews,
    tenant: &str,
    memory: &UserMemory,
    bucket: u32,
) -> Vec<(String, Value)> {
    if !memory.skills.keys().any(|(b, _)| *b == bucket) {
        return Vec::new();
    }
    let shrinkage = ShrinkageParams::default();
    let rows: Vec<_> = BASE_SKILLS
        .iter()
        .map(|skill| {
            let own = memory
                .skills
                .get(&(bucket, skill.id.to_string()))
                .copied()
                .unwrap_or_default();
            let population = views
                .population
                .get(&(tenant.to_string(), bucket, skill.id.to_string()))
                .copied()
                .unwrap_or(own);
            // as skill selection draws from it: discounted votes where that is on
            let weighted = memory
                .discounted_skills
                .get(&(bucket, skill.id.to_string()))
                .map_or(own.counts(), |d| d.at(views.engine_time_secs as i64));
            let posterior =
                discounted_user_posterior(own.counts(), weighted, population.counts(), &shrinkage);
            (skill, own, population, posterior)
        })
        .collect();
    let posteriors: Vec<_> = rows.iter().map(|(_, _, _, p)| *p).collect();
    let shares = thompson_shares(&posteriors, SHARE_GRID);
    rows.into_iter()
        .zip(shares)
        .map(|((skill, own, population, posterior), share)| {
            let (low, high) = posterior.credible_interval(0.95);
            let density: Vec<f64> = (0..DENSITY_POINTS)
                .map(|i| posterior.density(i as f64 / (DENSITY_POINTS - 1) as f64))
                .map(|d| if d.is_finite() { d } else { 0.0 })
                .collect();
            (
                format!("{bucket}/{}", skill.id),
                json!({
                    "bucket": bucket, "skill_id": skill.id, "name": skill.name,
                    "successes": own.successes, "failures": own.failures, "neutral": own.neutral,
                    "population": {"successes": population.successes,
                        "failures": population.failures},
                    "alpha": posterior.alpha, "beta": posterior.beta, "mean": posterior.mean(),
                    "ci95": [low, high], "density": density, "thompson_share": share,
                }),
            )
        })
        .collect()
}
