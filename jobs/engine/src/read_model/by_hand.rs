//! The oracle for the typed read model: `memory_json` as it was built by hand (JSON assembled
//! field by field), kept to check that the typed views serialise to exactly the same JSON.

use super::{lifecycle_name, micros_to_rfc3339, stated_preference_facts};
use engram_dataflows::views::UserMemory;
use engram_dataflows::MemoryViews;
use engram_operators::math::beta::{discounted_user_posterior, ShrinkageParams};
use engram_operators::math::decay::LifecycleThresholds;
use engram_operators::math::skills::STYLE_DIMENSION_NAMES;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One user's part of the views as the hand-built JSON `/v1/memory` returned before the typed
/// read model: the oracle the typed model is checked against.
pub(super) fn memory_json_by_hand(views: &MemoryViews, tenant: &str, user: &str) -> Value {
    let empty = Default::default();
    let memory = views
        .users
        .get(&(tenant.to_string(), user.to_string()))
        .unwrap_or(&empty);
    let facts = facts_json(memory);
    let (entities, co_mentions) = entities_json(memory, tenant);
    let skills = skills_json(views, memory, tenant);
    let correction_clusters = correction_clusters_json(memory);
    let now = views.engine_time_secs as i64;
    let preferences = preferences_json(memory, now);
    let stated_preferences = stated_preferences_json(memory);
    let marks: Vec<_> = memory
        .marks
        .iter()
        .map(|(episode, m)| {
            json!({
                "episode_id": episode, "recalls": m.recalls, "correct": m.correct,
                "incorrect": m.incorrect, "trust": m.trust(), "persistence": m.persistence(),
                "retained": m.retained,
                "last_recalled": micros_to_rfc3339(m.last_recalled_micros),
            })
        })
        .collect();
    let retrieval: Vec<_> = memory
        .retrieval
        .iter()
        .map(|(t, tally)| json!({"trait": t.label(), "up": tally.up, "down": tally.down}))
        .collect();
    let style = memory.style.map(|s| {
        let v = s.style();
        let by_name: serde_json::Map<String, Value> = STYLE_DIMENSION_NAMES
            .iter()
            .zip(v)
            .map(|(name, x)| (name.to_string(), json!(x)))
            .collect();
        json!({"vector": by_name, "feedback_count": s.feedback_count})
    });
    let corrections: Vec<_> = memory
        .corrections
        .values()
        .map(|n| {
            json!({
                "id": n.correction_id, "session": n.session, "type": n.correction_type,
                "ts": micros_to_rfc3339(n.ts_micros), "original": n.original,
                "corrected": n.corrected, "expected_behavior": n.expected_behavior,
                "confidence": f64::from(n.confidence_milli) / 1000.0,
                "context": (!n.context.is_empty()).then_some(&n.context),
            })
        })
        .collect();
    let skill_confidence: serde_json::Map<String, Value> = memory
        .skill_confidence
        .iter()
        .map(|(skill, c)| {
            let v = json!({"confidence": c.confidence(), "uses": c.uses});
            (skill.clone(), v)
        })
        .collect();
    let (edges, summaries, relations) = edges_summaries_and_relations(memory);
    // corrections held for clarification when they were read, oldest first
    let mut held: Vec<(i64, &String)> = memory
        .corrections
        .values()
        .filter(|n| n.held)
        .map(|n| (n.ts_micros, &n.correction_id))
        .collect();
    held.sort();
    let held: Vec<&String> = held.into_iter().map(|(_, id)| id).collect();
    json!({
        "style": style, "corrections": corrections, "skill_confidence": skill_confidence,
        "edges": edges, "summaries": summaries, "relations": relations,
        "tenant": tenant, "user": user, "views_as_of": views.as_of,
        "team": views.user_teams.get(&(tenant.to_string(), user.to_string())),
        "marks": marks, "retrieval_preferences": retrieval,
        "engine_time": micros_to_rfc3339(now * 1_000_000),
        "facts": facts, "entities": entities, "co_mentions": co_mentions, "skills": skills,
        "correction_clusters": correction_clusters, "preferences": preferences,
        "stated_preferences": stated_preferences,
        "needs_clarification": held,
    })
}

/// The stated preferences as the instruction each gives, with the message it was said in.
fn stated_preferences_json(memory: &UserMemory) -> Vec<Value> {
    stated_preference_facts(memory)
        .into_iter()
        .map(|(request, current)| {
            json!({
                "aspect": request.aspect.name(), "value": current.value,
                "instruction": request.to_string(), "fact_id": current.fact_id,
                "stated_in": current.evidence, "since": micros_to_rfc3339(current.valid_from),
            })
        })
        .collect()
}

/// Every version of every fact.
fn facts_json(memory: &UserMemory) -> Vec<Value> {
    memory
        .facts
        .iter()
        .flat_map(|((subject, attribute), versions)| {
            versions.iter().map(move |v| {
                json!({
                    "id": v.fact_id, "subject": subject, "attribute": attribute, "value": v.value,
                    "valid_from": micros_to_rfc3339(v.valid_from),
                    "valid_to": v.valid_to.map(micros_to_rfc3339),
                    "superseded_by": v.superseded_by, "current": v.valid_to.is_none(),
                    "evidence": (!v.evidence.is_empty()).then_some(&v.evidence),
                })
            })
        })
        .collect()
}

/// Entities and co-mentions, by name.
fn entities_json(memory: &UserMemory, tenant: &str) -> (Vec<Value>, Vec<Value>) {
    // the views hold entities and co-mentions unordered; an export lists them by name
    let mut entities: Vec<_> = memory.entities.iter().collect();
    entities.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let named: Vec<&str> = entities
        .iter()
        .filter(|(_, s)| s.kind == engram_operators::entities::EntityKind::Named)
        .map(|(name, _)| &***name)
        .collect();
    let entities: Vec<_> = entities
        .into_iter()
        .map(|(name, s)| {
            // the same name-derived id, written out here again
            let id = engram_schemas::node_id(tenant, &format!("\0entity\0{name}"));
            let mut entity = json!({
                "id": id.to_string(),
                "name": &**name, "kind": format!("{:?}", s.kind).to_lowercase(), "mentions": s.mention_count,
                "first_seen": micros_to_rfc3339(s.first_seen_micros),
                "last_seen": micros_to_rfc3339(s.last_seen_micros),
            });
            // an alias by its definition, over every named entity
            let alias_of = named
                .contains(&&**name)
                .then(|| engram_operators::entity_aliases::canonical_of(name, named.iter().copied()))
                .flatten();
            if let Some(full) = alias_of {
                entity["alias_of"] = json!(full);
            }
            entity
        })
        .collect();
    let mut co_mentions: Vec<_> = memory.co_mentions.iter().collect();
    co_mentions.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
    let co_mentions: Vec<_> = co_mentions
        .into_iter()
        .map(|(a, b, w)| json!({"a": &**a, "b": &**b, "weight": w}))
        .collect();
    (entities, co_mentions)
}

/// The user's skill tallies with their posteriors (shrunk towards the tenant's population).
fn skills_json(views: &MemoryViews, memory: &UserMemory, tenant: &str) -> Vec<Value> {
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
            json!({
                "bucket": bucket, "skill_id": skill, "successes": tally.successes,
                "failures": tally.failures, "neutral": tally.neutral,
                "discounted": discounted.map(|d| json!({"successes": d.successes, "failures": d.failures})),
                "population": {"successes": population.successes, "failures": population.failures},
                "posterior": {"alpha": posterior.alpha, "beta": posterior.beta,
                    "mean": posterior.mean(), "ci95": [low, high]},
            })
        })
        .collect()
}

/// Correction clusters with their promoted patterns.
fn correction_clusters_json(memory: &UserMemory) -> Vec<Value> {
    let mut clusters: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
    for (correction, cluster) in &memory.correction_clusters {
        clusters.entry(cluster).or_default().push(correction);
    }
    clusters
        .into_iter()
        .map(|(cluster, members)| {
            let pattern = memory.patterns.get(cluster).map(|p| {
                json!({
                    "size": p.size, "coherence": f64::from(p.coherence_milli) / 1000.0,
                    "span_days": p.span_micros as f64 / 86_400e6,
                    "confidence": f64::from(p.confidence_milli) / 1000.0,
                })
            });
            json!({"cluster_id": cluster, "corrections": members, "pattern": pattern})
        })
        .collect()
}

/// Preferences with their lifecycle as of engine time `now` (seconds).
fn preferences_json(memory: &UserMemory, now: i64) -> Vec<Value> {
    let thresholds = LifecycleThresholds::default();
    memory
        .preferences
        .iter()
        .map(|(cluster, trace)| {
            let next = trace.changes_after(now, &thresholds).first().map(|(at, to)| {
                json!({"to": lifecycle_name(*to), "at": micros_to_rfc3339(at * 1_000_000)})
            });
            json!({
                "cluster_id": cluster,
                "state": memory.preference_states.get(cluster).map(|s| lifecycle_name(*s)),
                "retention": trace.retention_at(now),
                "stability_days": trace.stability_secs as f64 / 86_400.0,
                "last_activation": micros_to_rfc3339(trace.last_activation_secs * 1_000_000),
                "activations": trace.activations,
                "next_transition": next,
                // later corrections that said the opposite, and what that did to it
                "contradiction": memory.contradictions.get(cluster),
            })
        })
        .collect()
}

/// The typed edges of the graph, the summaries and the relations (whose `COVERS` and
/// `EVIDENCE_FOR` edges come last, in that order).
fn edges_summaries_and_relations(memory: &UserMemory) -> (Vec<Value>, Vec<Value>, Vec<Value>) {
    // The typed edges of the consolidation graph (SPEC §3): a promoted cluster's corrections
    // CORRECT its pattern, which EVOLVES_TO its preference; a closed fact is SUPERSEDED_BY the
    // version that closed it; the message a fact was learned from is EVIDENCE_FOR it.
    let mut edges = Vec::new();
    for (correction, cluster) in &memory.correction_clusters {
        if memory.patterns.contains_key(cluster) {
            edges.push(
                json!({"type": "CORRECTS", "from": correction, "to": format!("pattern:{cluster}")}),
            );
        }
    }
    for cluster in memory.patterns.keys() {
        if memory.preferences.contains_key(cluster) {
            edges.push(
                json!({"type": "EVOLVES_TO", "from": format!("pattern:{cluster}"),
                "to": format!("preference:{cluster}")}),
            );
        }
    }
    for versions in memory.facts.values() {
        for v in versions {
            if let Some(next) = &v.superseded_by {
                edges.push(json!({"type": "SUPERSEDED_BY", "from": v.fact_id, "to": next}));
            }
            if !v.evidence.is_empty() {
                edges.push(json!({"type": "EVIDENCE_FOR", "from": v.evidence, "to": v.fact_id}));
            }
        }
    }
    // a summary COVERS the episodes it names
    let summaries: Vec<Value> = memory
        .summaries
        .values()
        .map(|s| {
            for episode in &s.covers {
                edges.push(json!({"type": "COVERS", "from": s.id, "to": episode}));
            }
            json!({"id": s.id, "event_id": s.event_id, "ts": micros_to_rfc3339(s.ts_micros),
                   "content": s.content, "covers": s.covers})
        })
        .collect();
    // each episode a relation was read from is EVIDENCE_FOR it
    let relations: Vec<Value> = memory
        .relations
        .values()
        .map(|r| {
            for episode in &r.evidence {
                edges.push(json!({"type": "EVIDENCE_FOR", "from": episode, "to": r.id}));
            }
            json!({"id": r.id, "event_id": r.event_id, "ts": micros_to_rfc3339(r.ts_micros),
                   "subject": r.subject, "relation": r.relation, "object": r.object,
                   "time": r.time,
                   "confidence": r.confidence_milli.map(|c| f64::from(c) / 1000.0),
                   "evidence": r.evidence})
        })
        .collect();
    (edges, summaries, relations)
}
