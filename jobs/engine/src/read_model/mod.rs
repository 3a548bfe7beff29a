//! Read models of the views: one user's memory as typed views ([`UserMemoryView`] and its
//! parts, in [`views`]) that `/v1/memory` returns, export and GDPR embed and the dashboard's
//! fact and entity rows show, read from the views at one timestamp.

mod as_of;
mod views;

#[cfg(test)]
mod by_hand;
#[cfg(test)]
mod tests;

pub use as_of::memory_as_of;
pub use views::*;

use engram_dataflows::views::UserMemory;
use engram_dataflows::MemoryViews;
use engram_operators::correction_notes::CorrectionNote;
use engram_operators::entities::EntityKind;
use engram_operators::facts::FactVersion;
use engram_operators::facts::USER_SUBJECT;
use engram_operators::math::beta::{discounted_user_posterior, ShrinkageParams};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use engram_operators::math::skills::STYLE_DIMENSION_NAMES;
use engram_operators::requests::Request;
use serde_json::Value;
use std::collections::BTreeMap;

/// A time in microseconds as RFC 3339 (whole seconds, UTC); empty when out of range.
pub fn micros_to_rfc3339(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// One user's part of the views as JSON (see `POST /v1/memory` in docs/http-api.md): the
/// [`user_memory_view`], serialised.
pub fn memory_json(views: &MemoryViews, tenant: &str, user: &str) -> Value {
    // string keys, numbers and strings only: serialising cannot fail
    serde_json::to_value(user_memory_view(views, tenant, user))
        .expect("a UserMemoryView serialises")
}

/// One user's part of the views (empty parts for a user the views hold nothing of).
pub fn user_memory_view(views: &MemoryViews, tenant: &str, user: &str) -> UserMemoryView {
    let empty = Default::default();
    let key = (tenant.to_string(), user.to_string());
    let memory = views.users.get(&key).unwrap_or(&empty);
    let now = views.engine_time_secs as i64;
    let (edges, summaries, relations) = edges_summaries_and_relations(memory);
    UserMemoryView {
        tenant: tenant.to_string(),
        user: user.to_string(),
        views_as_of: views.as_of,
        engine_time: micros_to_rfc3339(now * 1_000_000),
        team: views.user_teams.get(&key).cloned(),
        facts: facts(memory),
        entities: entities(memory, tenant),
        co_mentions: co_mentions(memory),
        skills: skills(views, memory, tenant),
        skill_confidence: memory
            .skill_confidence
            .iter()
            .map(|(skill, c)| {
                let view = SkillConfidenceView {
                    confidence: c.confidence(),
                    uses: c.uses,
                };
                (skill.clone(), view)
            })
            .collect(),
        correction_clusters: correction_clusters(memory),
        preferences: preferences(memory, now),
        stated_preferences: stated_preferences(memory),
        corrections: memory
            .corrections
            .values()
            .map(CorrectionView::new)
            .collect(),
        needs_clarification: held_corrections(memory)
            .into_iter()
            .map(|n| n.correction_id.clone())
            .collect(),
        style: memory.style.map(|s| StyleView {
            vector: STYLE_DIMENSION_NAMES.into_iter().zip(s.style()).collect(),
            feedback_count: s.feedback_count,
        }),
        marks: memory
            .marks
            .iter()
            .map(|(episode, m)| MarkView::new(episode, m))
            .collect(),
        retrieval_preferences: memory
            .retrieval
            .iter()
            .map(|(t, tally)| RetrievalPreferenceView {
                trait_name: t.label(),
                up: tally.up,
                down: tally.down,
            })
            .collect(),
        summaries,
        relations,
        edges,
    }
}

/// The user's corrections held for clarification instead of learned from (their
/// [`CorrectionNote::held`]), oldest first (by time, then id).
pub fn held_corrections(memory: &UserMemory) -> Vec<&CorrectionNote> {
    let mut held: Vec<&CorrectionNote> = memory.corrections.values().filter(|n| n.held).collect();
    held.sort_by(|a, b| (a.ts_micros, &a.correction_id).cmp(&(b.ts_micros, &b.correction_id)));
    held
}

/// The preferences the user stated in ordinary messages: each current fact
/// `preference: <aspect>` about the user, with what it asks for.
pub fn stated_preference_facts(memory: &UserMemory) -> Vec<(Request, &FactVersion)> {
    memory
        .facts
        .iter()
        .filter(|((subject, _), _)| subject == USER_SUBJECT)
        .filter_map(|((_, attribute), versions)| {
            let current = versions.iter().find(|v| v.valid_to.is_none())?;
            Some((Request::from_fact(attribute, &current.value)?, current))
        })
        .collect()
}

/// The stated preferences as the instruction each gives, with the message it was said in.
fn stated_preferences(memory: &UserMemory) -> Vec<StatedPreferenceView> {
    stated_preference_facts(memory)
        .into_iter()
        .map(|(request, current)| StatedPreferenceView {
            aspect: request.aspect.name(),
            value: current.value.clone(),
            instruction: request.to_string(),
            fact_id: current.fact_id.clone(),
            stated_in: current.evidence.clone(),
            since: micros_to_rfc3339(current.valid_from),
        })
        .collect()
}

/// Every version of every fact.
fn facts(memory: &UserMemory) -> Vec<FactView> {
    memory
        .facts
        .iter()
        .flat_map(|((subject, attribute), versions)| {
            versions
                .iter()
                .map(move |v| FactView::new(subject, attribute, v))
        })
        .collect()
}

/// Entities, by name (the views hold them unordered), named ones with the name they are an
/// alias of, where they are one.
fn entities(memory: &UserMemory, tenant: &str) -> Vec<EntityView> {
    let mut entities: Vec<_> = memory.entities.iter().collect();
    entities.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let named: Vec<&str> = entities
        .iter()
        .filter(|(_, s)| s.kind == EntityKind::Named)
        .map(|(name, _)| &***name)
        .collect();
    let aliases = engram_operators::entity_aliases::aliases(&named);
    entities
        .into_iter()
        .map(|(name, s)| EntityView {
            alias_of: aliases.get(&**name).map(|n| n.to_string()),
            ..EntityView::new(tenant, name, s)
        })
        .collect()
}

/// Co-mentions, by `(a, b)` (the views hold them unordered).
fn co_mentions(memory: &UserMemory) -> Vec<CoMentionView> {
    let mut co_mentions: Vec<_> = memory.co_mentions.iter().collect();
    co_mentions.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
    co_mentions
        .into_iter()
        .map(|(a, b, weight)| CoMentionView {
            a: a.to_string(),
            b: b.to_string(),
            weight,
        })
        .collect()
}

/// The user's skill tallies with their posteriors (shrunk towards the tenant's population).
fn skills(views: &MemoryViews, memory: &UserMemory, tenant: &str) -> Vec<SkillView> {
    memory
        .skills
        .iter()
        .map(|((bucket, skill), tally)| {
            let population = views
                .population
                .get(&(tenant.to_string(), *bucket, skill.clone()))
                .copied()
                .unwrap_or(*tally);
            // as prompts draw from it: the user's votes discounted by age when that is on
            let discounted = memory
                .discounted_skills
                .get(&(*bucket, skill.clone()))
                .map(|d| d.at(views.engine_time_secs as i64));
            let posterior = discounted_user_posterior(
                tally.counts(),
                discounted.unwrap_or(tally.counts()),
                population.counts(),
                &ShrinkageParams::default(),
            );
            let (low, high) = posterior.credible_interval(0.95);
            SkillView {
                bucket: *bucket,
                skill_id: skill.clone(),
                successes: tally.successes,
                failures: tally.failures,
                neutral: tally.neutral,
                discounted: discounted.map(|d| DiscountedVotesView {
                    successes: d.successes,
                    failures: d.failures,
                }),
                population: PopulationVotesView {
                    successes: population.successes,
                    failures: population.failures,
                },
                posterior: PosteriorView {
                    alpha: posterior.alpha,
                    beta: posterior.beta,
                    mean: posterior.mean(),
                    ci95: [low, high],
                },
            }
        })
        .collect()
}

/// Correction clusters with their promoted patterns.
fn correction_clusters(memory: &UserMemory) -> Vec<CorrectionClusterView> {
    let mut clusters: BTreeMap<&String, Vec<String>> = BTreeMap::new();
    for (correction, cluster) in &memory.correction_clusters {
        clusters
            .entry(cluster)
            .or_default()
            .push(correction.clone());
    }
    clusters
        .into_iter()
        .map(|(cluster, corrections)| CorrectionClusterView {
            cluster_id: cluster.clone(),
            corrections,
            pattern: memory.patterns.get(cluster).map(PatternView::new),
        })
        .collect()
}

/// Preferences with their lifecycle as of engine time `now` (seconds).
fn preferences(memory: &UserMemory, now: i64) -> Vec<PreferenceView> {
    let thresholds = LifecycleThresholds::default();
    memory
        .preferences
        .iter()
        .map(|(cluster, trace)| PreferenceView {
            cluster_id: cluster.clone(),
            state: memory
                .preference_states
                .get(cluster)
                .map(|s| lifecycle_name(*s)),
            retention: trace.retention_at(now),
            stability_days: trace.stability_secs as f64 / 86_400.0,
            last_activation: micros_to_rfc3339(trace.last_activation_secs * 1_000_000),
            activations: trace.activations,
            next_transition: trace
                .changes_after(now, &thresholds)
                .first()
                .map(|(at, to)| TransitionView::new(*at, *to)),
            contradiction: memory.contradictions.get(cluster).cloned(),
        })
        .collect()
}

/// The typed edges of the graph, the summaries and the relations (whose `COVERS` and
/// `EVIDENCE_FOR` edges come last, in that order).
fn edges_summaries_and_relations(
    memory: &UserMemory,
) -> (Vec<EdgeView>, Vec<SummaryView>, Vec<RelationView>) {
    // The typed edges of the consolidation graph (SPEC §3): a promoted cluster's corrections
    // CORRECT its pattern, which EVOLVES_TO its preference; a closed fact is SUPERSEDED_BY the
    // version that closed it; the message a fact was learned from is EVIDENCE_FOR it.
    let mut edges = Vec::new();
    for (correction, cluster) in &memory.correction_clusters {
        if memory.patterns.contains_key(cluster) {
            let to = format!("pattern:{cluster}");
            edges.push(EdgeView::new(EdgeType::Corrects, correction, to));
        }
    }
    for cluster in memory.patterns.keys() {
        if memory.preferences.contains_key(cluster) {
            let (from, to) = (
                format!("pattern:{cluster}"),
                format!("preference:{cluster}"),
            );
            edges.push(EdgeView::new(EdgeType::EvolvesTo, from, to));
        }
    }
    for versions in memory.facts.values() {
        for v in versions {
            if let Some(next) = &v.superseded_by {
                edges.push(EdgeView::new(EdgeType::SupersededBy, &v.fact_id, next));
            }
            if !v.evidence.is_empty() {
                edges.push(EdgeView::new(
                    EdgeType::EvidenceFor,
                    &v.evidence,
                    &v.fact_id,
                ));
            }
        }
    }
    // a summary COVERS the episodes it names
    let summaries = memory
        .summaries
        .values()
        .map(|s| {
            for episode in &s.covers {
                edges.push(EdgeView::new(EdgeType::Covers, &s.id, episode));
            }
            SummaryView::new(s)
        })
        .collect();
    // each episode a relation was read from is EVIDENCE_FOR it
    let relations = memory
        .relations
        .values()
        .map(|r| {
            for episode in &r.evidence {
                edges.push(EdgeView::new(EdgeType::EvidenceFor, episode, &r.id));
            }
            RelationView::new(r)
        })
        .collect();
    (edges, summaries, relations)
}

pub fn lifecycle_name(state: LifecycleState) -> &'static str {
    match state {
        LifecycleState::Active => "active",
        LifecycleState::Inactive => "inactive",
        LifecycleState::Archived => "archived",
    }
}
