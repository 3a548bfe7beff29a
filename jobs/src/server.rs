//! The HTTP API (see README): events in, recall, status, metrics.

use crate::engine::Engine;
use crate::recall::{RecallError, RecallRequest};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use engram_operators::math::beta::{user_posterior, ShrinkageParams};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Largest request body accepted (an array of events).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

pub fn router(engine: Arc<Engine>) -> Router {
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/recall", post(post_recall))
        .route("/v1/memory", post(post_memory))
        .route("/v1/status", get(get_status))
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(get_metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(engine)
}

fn error(status: StatusCode, field: &str, reason: impl std::fmt::Display) -> Response {
    (
        status,
        Json(json!({"error": {"field": field, "reason": reason.to_string()}})),
    )
        .into_response()
}

async fn post_events(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let ingestor = engine.ingestor.clone();
    // Appending fsyncs: keep it off the async threads.
    let result = tokio::task::spawn_blocking(move || ingestor.ingest_body("http", &body)).await;
    match result {
        Ok(Ok(report)) => {
            let status = if report.rejected.is_empty() {
                StatusCode::OK
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            (status, Json(report)).into_response()
        }
        Ok(Err(err)) => {
            tracing::error!(%err, "appending to the event log failed");
            error(
                StatusCode::SERVICE_UNAVAILABLE,
                "$",
                format!("the event log could not store the events: {err}"),
            )
        }
        Err(err) => error(StatusCode::INTERNAL_SERVER_ERROR, "$", err),
    }
}

async fn post_recall(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let req: RecallRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            let field = e
                .to_string()
                .split('`')
                .nth(1)
                .map(str::to_string)
                .unwrap_or_else(|| "$".into());
            return error(
                StatusCode::BAD_REQUEST,
                &field,
                format!("invalid recall request: {e}"),
            );
        }
    };
    match engine.recall.recall(&req).await {
        Ok(resp) => Json(resp).into_response(),
        Err(RecallError::Invalid(e)) => error(StatusCode::BAD_REQUEST, &e.field, &e.reason),
        Err(err) => {
            tracing::error!(%err, tenant = %req.tenant, "recall failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
        }
    }
}

#[derive(serde::Deserialize)]
struct MemoryRequest {
    tenant: String,
    user: String,
}

fn micros_to_rfc3339(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// One user's facts (every version, with validity and supersession), entities, co-mentions and
/// skill posteriors (own votes, shrunk towards the tenant's other users), read from the views at
/// one timestamp.
async fn post_memory(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let req: MemoryRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "$",
                format!("invalid memory request: {e}"),
            )
        }
    };
    for (field, value) in [("tenant", &req.tenant), ("user", &req.user)] {
        if let Err(reason) = engram_schemas::validate_name(value) {
            return error(StatusCode::BAD_REQUEST, field, reason);
        }
    }
    let views = engine.views.read();
    let empty = Default::default();
    let memory = views
        .users
        .get(&(req.tenant.clone(), req.user.clone()))
        .unwrap_or(&empty);
    let facts: Vec<_> = memory
        .facts
        .iter()
        .flat_map(|((subject, attribute), versions)| {
            versions.iter().map(move |v| {
                json!({
                    "id": v.fact_id, "subject": subject, "attribute": attribute, "value": v.value,
                    "valid_from": micros_to_rfc3339(v.valid_from),
                    "valid_to": v.valid_to.map(micros_to_rfc3339),
                    "superseded_by": v.superseded_by, "current": v.valid_to.is_none(),
                })
            })
        })
        .collect();
    let entities: Vec<_> = memory
        .entities
        .iter()
        .map(|(name, s)| {
            json!({
                "name": name, "kind": format!("{:?}", s.kind).to_lowercase(), "mentions": s.mention_count,
                "first_seen": micros_to_rfc3339(s.first_seen_micros),
                "last_seen": micros_to_rfc3339(s.last_seen_micros),
            })
        })
        .collect();
    let co_mentions: Vec<_> = memory
        .co_mentions
        .iter()
        .map(|((a, b), w)| json!({"a": a, "b": b, "weight": w}))
        .collect();
    let skills: Vec<_> = memory
        .skills
        .iter()
        .map(|((bucket, skill), tally)| {
            let population = views
                .population
                .get(&(req.tenant.clone(), *bucket, skill.clone()))
                .copied()
                .unwrap_or(*tally);
            let posterior = user_posterior(
                tally.counts(),
                population.counts(),
                &ShrinkageParams::default(),
            );
            let (low, high) = posterior.credible_interval(0.95);
            json!({
                "bucket": bucket, "skill_id": skill, "successes": tally.successes,
                "failures": tally.failures, "neutral": tally.neutral,
                "population": {"successes": population.successes, "failures": population.failures},
                "posterior": {"alpha": posterior.alpha, "beta": posterior.beta,
                    "mean": posterior.mean(), "ci95": [low, high]},
            })
        })
        .collect();
    let mut clusters: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
    for (correction, cluster) in &memory.correction_clusters {
        clusters.entry(cluster).or_default().push(correction);
    }
    let correction_clusters: Vec<_> = clusters
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
        .collect();
    let now = views.engine_time_secs as i64;
    let thresholds = LifecycleThresholds::default();
    let preferences: Vec<_> = memory
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
            })
        })
        .collect();
    Json(json!({
        "tenant": req.tenant, "user": req.user, "views_as_of": views.as_of,
        "engine_time": micros_to_rfc3339(now * 1_000_000),
        "facts": facts, "entities": entities, "co_mentions": co_mentions, "skills": skills,
        "correction_clusters": correction_clusters, "preferences": preferences,
    }))
    .into_response()
}

fn lifecycle_name(state: LifecycleState) -> &'static str {
    match state {
        LifecycleState::Active => "active",
        LifecycleState::Inactive => "inactive",
        LifecycleState::Archived => "archived",
    }
}

async fn get_status(State(engine): State<Arc<Engine>>) -> Response {
    Json(engine.status().await).into_response()
}

async fn get_metrics(State(engine): State<Arc<Engine>>) -> Response {
    let s = engine.status().await;
    let body = format!(
        "# HELP engram_log_end_offset Offset the next accepted event will get.\n\
         # TYPE engram_log_end_offset gauge\nengram_log_end_offset {}\n\
         # HELP engram_views_as_of Input-log offset the views reflect.\n\
         # TYPE engram_views_as_of gauge\nengram_views_as_of {}\n\
         # HELP engram_frontier_lag_events Accepted events not yet reflected in the views.\n\
         # TYPE engram_frontier_lag_events gauge\nengram_frontier_lag_events {}\n\
         # HELP engram_episodes_stored Episodes committed to Lance.\n\
         # TYPE engram_episodes_stored gauge\nengram_episodes_stored {}\n\
         # HELP engram_events_rejected_total Inputs rejected to the reject log.\n\
         # TYPE engram_events_rejected_total counter\nengram_events_rejected_total {}\n\
         # HELP engram_unindexed_rows Episodes not yet folded into the indexes.\n\
         # TYPE engram_unindexed_rows gauge\nengram_unindexed_rows {}\n",
        s.log_end,
        s.views_as_of,
        s.log_end.saturating_sub(s.views_as_of),
        s.episodes,
        s.rejected,
        s.unindexed_rows,
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}
