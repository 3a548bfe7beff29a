//! The HTTP API (see README): events in, recall, status, metrics.

use crate::engine::Engine;
use crate::prompt::{PromptError, PromptRequest};
use crate::recall::{RecallError, RecallRequest};
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use engram_operators::math::beta::{discounted_user_posterior, ShrinkageParams};
use engram_operators::math::decay::{LifecycleState, LifecycleThresholds};
use engram_operators::math::skills::STYLE_DIMENSION_NAMES;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Largest request body accepted (an array of events).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The routes. Tenant routes need a tenant's API key (`Authorization: Bearer …` or
/// `X-API-Key`); admin routes need the admin key; health, status and metrics (no tenant data)
/// need none.
pub fn router(engine: Arc<Engine>) -> Router {
    let tenant_routes = Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/recall", post(post_recall))
        .route("/v1/memory", post(post_memory))
        .route("/v1/prompt", post(post_prompt))
        .route("/v1/chat", post(post_chat))
        .route("/v1/feedback", post(post_feedback))
        .route("/v1/export", post(post_export))
        .route("/v1/erase", post(post_erase))
        .route("/v1/dashboard/stream", get(crate::dashboard::get_stream))
        .route_layer(middleware::from_fn_with_state(
            engine.clone(),
            require_tenant_key,
        ));
    let admin_routes = Router::new()
        .route("/v1/admin/tenants", post(create_tenant).get(list_tenants))
        .route("/v1/admin/tenants/{tenant}", delete(erase_tenant))
        .route("/v1/admin/tenants/{tenant}/keys", post(issue_key))
        .route(
            "/v1/admin/tenants/{tenant}/keys/{key_id}",
            delete(revoke_key),
        )
        .route_layer(middleware::from_fn_with_state(
            engine.clone(),
            require_admin_key,
        ));
    Router::new()
        .merge(tenant_routes)
        .merge(admin_routes)
        .route("/v1/status", get(get_status))
        .route("/v1/openapi.json", get(get_openapi))
        .route("/healthz", get(|| async { "ok" }))
        .route("/dashboard", get(crate::dashboard::get_page))
        .route("/metrics", get(get_metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(engine)
}

/// The tenant the request's API key belongs to.
#[derive(Debug, Clone)]
pub struct AuthTenant(pub String);

pub(crate) fn presented_key(headers: &HeaderMap) -> Option<&str> {
    if let Some(v) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        return v.strip_prefix("Bearer ").map(str::trim);
    }
    headers
        .get("x-api-key")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn unauthorized(reason: &str) -> Response {
    let mut resp = error(StatusCode::UNAUTHORIZED, "authorization", reason);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    resp
}

async fn require_tenant_key(
    State(engine): State<Arc<Engine>>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(key) = presented_key(req.headers()) else {
        return unauthorized(
            "no API key: send `Authorization: Bearer <key>` (or `X-API-Key: <key>`) with the tenant's key",
        );
    };
    match engine.tenants.authenticate(key) {
        Some(tenant) => {
            req.extensions_mut().insert(AuthTenant(tenant));
            next.run(req).await
        }
        None => unauthorized("unknown or revoked API key"),
    }
}

async fn require_admin_key(
    State(engine): State<Arc<Engine>>,
    req: Request,
    next: Next,
) -> Response {
    let Some(admin) = engine.config.admin_key.as_deref() else {
        return error(
            StatusCode::FORBIDDEN,
            "authorization",
            "the admin API is off: set ENGRAM_ADMIN_KEY (or admin_key in the config file)",
        );
    };
    match presented_key(req.headers()) {
        // compare digests, so the time taken says nothing about how much of the key matched
        Some(key) if crate::tenants::same_secret(key, admin) => next.run(req).await,
        Some(_) => unauthorized("wrong admin key"),
        None => unauthorized("no admin key: send `Authorization: Bearer <admin key>`"),
    }
}

/// `423` for a user (or tenant) whose processing is restricted: their memory is not used.
pub(crate) fn check_not_restricted(
    engine: &Engine,
    tenant: &str,
    user: &str,
) -> Result<(), Response> {
    if engine.ingestor.is_restricted(tenant, user) {
        Err(error(
            StatusCode::LOCKED,
            "user",
            "processing of this user's data is restricted (a `restrict` control event); their events are kept, not used, until an `unrestrict` event",
        ))
    } else {
        Ok(())
    }
}

/// A body's `tenant` must be the key's tenant when it is given at all.
fn check_tenant(body_tenant: &str, auth: &AuthTenant) -> Result<(), Response> {
    if body_tenant.is_empty() || body_tenant == auth.0 {
        Ok(())
    } else {
        Err(error(
            StatusCode::FORBIDDEN,
            "tenant",
            format!(
                "the API key belongs to tenant {:?}, not {body_tenant:?}",
                auth.0
            ),
        ))
    }
}

#[derive(serde::Deserialize)]
struct CreateTenant {
    tenant: String,
}

fn tenant_error(err: crate::tenants::TenantError) -> Response {
    use crate::tenants::TenantError as E;
    match err {
        E::InvalidName { .. } => error(StatusCode::BAD_REQUEST, "tenant", err),
        E::Exists(_) => error(StatusCode::CONFLICT, "tenant", err),
        E::Unknown(_) | E::UnknownKey { .. } => error(StatusCode::NOT_FOUND, "tenant", err),
        E::File { .. } => {
            tracing::error!(%err, "tenant registry");
            error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
        }
    }
}

async fn create_tenant(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let req: CreateTenant = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                "$",
                format!("expected {{\"tenant\": NAME}}: {e}"),
            )
        }
    };
    match engine.tenants.create(&req.tenant) {
        Ok(key) => (
            StatusCode::CREATED,
            Json(json!({"tenant": req.tenant, "api_key": key})),
        )
            .into_response(),
        Err(e) => tenant_error(e),
    }
}

async fn list_tenants(State(engine): State<Arc<Engine>>) -> Response {
    let tenants: Vec<_> = engine
        .tenants
        .list()
        .into_iter()
        .map(|(name, t)| {
            let keys: Vec<_> = t
                .keys
                .iter()
                .map(|k| json!({"key_id": k.id, "created": k.created}))
                .collect();
            json!({"tenant": name, "created": t.created, "keys": keys})
        })
        .collect();
    Json(json!({ "tenants": tenants })).into_response()
}

async fn issue_key(State(engine): State<Arc<Engine>>, Path(tenant): Path<String>) -> Response {
    match engine.tenants.issue_key(&tenant) {
        Ok(key) => (
            StatusCode::CREATED,
            Json(json!({"tenant": tenant, "api_key": key})),
        )
            .into_response(),
        Err(e) => tenant_error(e),
    }
}

async fn revoke_key(
    State(engine): State<Arc<Engine>>,
    Path((tenant, key_id)): Path<(String, String)>,
) -> Response {
    match engine.tenants.revoke_key(&tenant, &key_id) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => tenant_error(e),
    }
}

pub(crate) fn error(status: StatusCode, field: &str, reason: impl std::fmt::Display) -> Response {
    (
        status,
        Json(json!({"error": {"field": field, "reason": reason.to_string()}})),
    )
        .into_response()
}

async fn post_events(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let ingestor = engine.ingestor.clone();
    // Appending fsyncs: keep it off the async threads.
    let result =
        tokio::task::spawn_blocking(move || ingestor.ingest_body_as("http", &body, &auth.0)).await;
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

async fn post_recall(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req: RecallRequest =
        match parse_for_tenant(&body, "recall", &auth, |r: &mut RecallRequest| {
            &mut r.tenant
        }) {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    if let Err(resp) = check_not_restricted(&engine, &req.tenant, &req.user) {
        return resp;
    }
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
    #[serde(default)]
    tenant: String,
    user: String,
}

pub(crate) fn micros_to_rfc3339(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// One user's facts (every version, with validity and supersession), entities, co-mentions and
/// skill posteriors (own votes, shrunk towards the tenant's other users), read from the views at
/// one timestamp.
async fn post_memory(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req: MemoryRequest =
        match parse_for_tenant(&body, "memory", &auth, |r: &mut MemoryRequest| {
            &mut r.tenant
        }) {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    if let Err(reason) = engram_schemas::validate_name(&req.user) {
        return error(StatusCode::BAD_REQUEST, "user", reason);
    }
    if let Err(resp) = check_not_restricted(&engine, &req.tenant, &req.user) {
        return resp;
    }
    Json(memory_json(&engine.views.read(), &req.tenant, &req.user)).into_response()
}

/// One user's part of the views (see `/v1/memory` in the README).
pub fn memory_json(views: &engram_dataflows::MemoryViews, tenant: &str, user: &str) -> Value {
    let empty = Default::default();
    let memory = views
        .users
        .get(&(tenant.to_string(), user.to_string()))
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
    // the views hold entities and co-mentions unordered; an export lists them by name
    let mut entities: Vec<_> = memory.entities.iter().collect();
    entities.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let entities: Vec<_> = entities
        .into_iter()
        .map(|(name, s)| {
            json!({
                "name": &**name, "kind": format!("{:?}", s.kind).to_lowercase(), "mentions": s.mention_count,
                "first_seen": micros_to_rfc3339(s.first_seen_micros),
                "last_seen": micros_to_rfc3339(s.last_seen_micros),
            })
        })
        .collect();
    let mut co_mentions: Vec<_> = memory.co_mentions.iter().collect();
    co_mentions.sort_unstable_by(|x, y| (x.0, x.1).cmp(&(y.0, y.1)));
    let co_mentions: Vec<_> = co_mentions
        .into_iter()
        .map(|(a, b, w)| json!({"a": &**a, "b": &**b, "weight": w}))
        .collect();
    let skills: Vec<_> = memory
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
                // later corrections that said the opposite, and what that did to it
                "contradiction": memory.contradictions.get(cluster),
            })
        })
        .collect();
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
    // The typed edges of the consolidation graph (SPEC §3): a promoted cluster's corrections
    // CORRECT its pattern, which EVOLVES_TO its preference; a closed fact is SUPERSEDED_BY the
    // version that closed it.
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
    json!({
        "style": style, "corrections": corrections, "skill_confidence": skill_confidence,
        "edges": edges, "summaries": summaries,
        "tenant": tenant, "user": user, "views_as_of": views.as_of,
        "team": views.user_teams.get(&(tenant.to_string(), user.to_string())),
        "marks": marks,
        "engine_time": micros_to_rfc3339(now * 1_000_000),
        "facts": facts, "entities": entities, "co_mentions": co_mentions, "skills": skills,
        "correction_clusters": correction_clusters, "preferences": preferences,
    })
}

pub(crate) fn lifecycle_name(state: LifecycleState) -> &'static str {
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

/// A JSON body as `T`, or a 400 naming the field serde complained about.
fn parse_body<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Response> {
    serde_json::from_slice(body).map_err(|e| {
        let field = e
            .to_string()
            .split('`')
            .nth(1)
            .map(str::to_string)
            .unwrap_or_else(|| "$".into());
        error(
            StatusCode::BAD_REQUEST,
            &field,
            format!("invalid {what} request: {e}"),
        )
    })
}

/// A request body for the key's tenant: parsed (400 naming the field), its `tenant` checked
/// against the key (403) and filled in from it.
fn parse_for_tenant<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
    auth: &AuthTenant,
    tenant: fn(&mut T) -> &mut String,
) -> Result<T, Response> {
    let mut req: T = parse_body(body, what)?;
    check_tenant(tenant(&mut req), auth)?;
    *tenant(&mut req) = auth.0.clone();
    Ok(req)
}

/// Validates and appends events (a JSON value: one event or an array) for `tenant`; any
/// rejection is an error response naming the field.
async fn store_events(
    engine: &Engine,
    source: &'static str,
    tenant: &str,
    events: &Value,
) -> Result<crate::ingest::IngestReport, Response> {
    let ingestor = engine.ingestor.clone();
    let bytes = serde_json::to_vec(events).expect("JSON");
    let tenant = tenant.to_string();
    match tokio::task::spawn_blocking(move || ingestor.ingest_body_as(source, &bytes, &tenant))
        .await
    {
        Ok(Ok(report)) => match report.rejected.first() {
            None => Ok(report),
            Some(r) => Err(error(
                StatusCode::BAD_REQUEST,
                &r.error.field,
                &r.error.reason,
            )),
        },
        Ok(Err(err)) => Err(error(StatusCode::SERVICE_UNAVAILABLE, "$", err)),
        Err(err) => Err(error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)),
    }
}

fn prompt_error(err: PromptError, tenant: &str) -> Response {
    match err {
        PromptError::Invalid(e) | PromptError::Recall(RecallError::Invalid(e)) => {
            error(StatusCode::BAD_REQUEST, &e.field, &e.reason)
        }
        PromptError::BudgetTooSmall { .. } => {
            error(StatusCode::UNPROCESSABLE_ENTITY, "budget_tokens", err)
        }
        PromptError::NoTokenizer(_) => error(StatusCode::SERVICE_UNAVAILABLE, "$", err),
        err => {
            tracing::error!(%err, tenant, "prompt assembly failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
        }
    }
}

/// Assembles the Qwen3 prompt for a query (see `prompt.rs`), with its provenance.
async fn post_prompt(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req: PromptRequest =
        match parse_for_tenant(&body, "prompt", &auth, |r: &mut PromptRequest| {
            &mut r.tenant
        }) {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    if let Err(resp) = check_not_restricted(&engine, &req.tenant, &req.user) {
        return resp;
    }
    match engine.assemble_prompt(&req).await {
        Ok(p) => Json(p).into_response(),
        Err(e) => prompt_error(e, &req.tenant),
    }
}

#[derive(serde::Deserialize)]
struct ChatRequest {
    #[serde(flatten)]
    prompt: PromptRequest,
    /// Id of this exchange: the query is stored as event `{id}.q`, the answer as `{id}.a` (the
    /// `message_id` to give feedback on). Default: a new UUID.
    #[serde(default)]
    exchange_id: Option<String>,
    /// Stream the answer as server-sent events (`prompt`, `delta`…, then `done` or `error`).
    #[serde(default)]
    stream: bool,
}

/// Assembles the prompt, asks the configured chat server, stores the query and the answer as
/// interaction events of the session, and returns the answer with the prompt's provenance.
async fn post_chat(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let ChatRequest {
        prompt: mut req,
        exchange_id,
        stream,
    } = match parse_for_tenant(&body, "chat", &auth, |r: &mut ChatRequest| {
        &mut r.prompt.tenant
    }) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let Some(session) = req.session.clone() else {
        return error(
            StatusCode::BAD_REQUEST,
            "session",
            "a chat needs a session: the exchange is stored in it",
        );
    };
    if let Err(resp) = check_not_restricted(&engine, &req.tenant, &req.user) {
        return resp;
    }
    let exchange = exchange_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if let Err(reason) = engram_schemas::validate_name(&exchange) {
        return error(StatusCode::BAD_REQUEST, "exchange_id", reason);
    }
    let Some(llm) = &engine.llm else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "$",
            "no chat server configured: set llm.url (ENGRAM_LLM_URL) to an OpenAI-compatible endpoint",
        );
    };
    // The chat client asks with thinking off; count the prompt the same way.
    req.enable_thinking = Some(false);
    let asked_at = chrono::Utc::now();
    let assembled = match engine.assemble_prompt(&req).await {
        Ok(p) => p,
        Err(e) => return prompt_error(e, &req.tenant),
    };
    let messages: Vec<crate::llm::ChatMessage> = assembled
        .messages
        .iter()
        .map(|m| crate::llm::ChatMessage::new(&m.role, m.content.clone()))
        .collect();
    let skill_id = assembled
        .provenance
        .skill
        .as_ref()
        .map(|s| s.skill_id.clone())
        .unwrap_or_default();
    let exchange = Exchange {
        tenant: req.tenant.clone(),
        user: req.user.clone(),
        session,
        id: exchange,
        query: req.query.clone(),
        asked_at,
        skill_id,
        prompt_tokens: assembled.tokens.total,
        // the user's own memories the answer was built with: their recall counts and the
        // feedback on this answer feed the MARK scores
        memories: assembled
            .provenance
            .memories
            .iter()
            .filter(|m| !m.domain)
            .map(|m| m.id.clone())
            .collect(),
    };
    let max_tokens = engine.config.llm.max_tokens;
    if stream {
        let pieces = match llm.stream(&messages, max_tokens).await {
            Ok(rx) => rx,
            Err(err) => {
                tracing::warn!(%err, tenant = %req.tenant, "the chat server failed");
                return error(StatusCode::BAD_GATEWAY, "$", err);
            }
        };
        return stream_chat(engine.clone(), exchange, assembled, pieces);
    }
    let answer = match llm.complete(&messages, max_tokens).await {
        Ok(a) => a,
        Err(err) => {
            tracing::warn!(%err, tenant = %req.tenant, "the chat server failed");
            return error(StatusCode::BAD_GATEWAY, "$", err);
        }
    };
    let stored = match exchange.store(&engine, &answer).await {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    Json(json!({
        "answer": answer,
        "message_id": exchange.answer_id(),
        "query_event_id": exchange.query_id(),
        "skill_id": exchange.skill_id,
        "tokens": assembled.tokens,
        "provenance": assembled.provenance,
        "stored": {"accepted": stored.accepted, "duplicates": stored.duplicates, "log_end": stored.log_end},
    }))
    .into_response()
}

/// One chat exchange, to be stored as two interaction events of its session once answered.
struct Exchange {
    tenant: String,
    user: String,
    session: String,
    id: String,
    query: String,
    asked_at: chrono::DateTime<chrono::Utc>,
    skill_id: String,
    prompt_tokens: usize,
    memories: Vec<String>,
}

impl Exchange {
    fn query_id(&self) -> String {
        format!("{}.q", self.id)
    }

    fn answer_id(&self) -> String {
        format!("{}.a", self.id)
    }

    /// Stores the query and `answer` (after it, with the skill and the memories used).
    async fn store(
        &self,
        engine: &Engine,
        answer: &str,
    ) -> Result<crate::ingest::IngestReport, Response> {
        let answered_at = chrono::Utc::now().max(self.asked_at + chrono::Duration::microseconds(1));
        let events = json!([
            {"kind": "interaction", "event_id": self.query_id(), "tenant": self.tenant,
             "user": self.user, "session": self.session, "ts": self.asked_at, "role": "user",
             "content": self.query},
            {"kind": "interaction", "event_id": self.answer_id(), "tenant": self.tenant,
             "user": self.user, "session": self.session, "ts": answered_at, "role": "assistant",
             "content": answer, "skill_id": self.skill_id,
             "meta": {"prompt_tokens": self.prompt_tokens, "memories": self.memories}},
        ]);
        store_events(engine, "chat", &self.tenant, &events).await
    }
}

/// The streamed chat answer: `prompt` (ids, tokens, provenance), a `delta` per piece of the
/// answer shown (thinking left out), then `done` (the whole answer, once stored) or `error`
/// (nothing stored). The exchange is stored even if the client has gone.
fn stream_chat(
    engine: Arc<Engine>,
    exchange: Exchange,
    assembled: crate::prompt::AssembledPrompt,
    mut pieces: tokio::sync::mpsc::Receiver<Result<String, crate::llm::LlmError>>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
    let event = |name: &str, data: Value| Event::default().event(name).data(data.to_string());
    tokio::spawn(async move {
        let _ = tx
            .send(event(
                "prompt",
                json!({"message_id": exchange.answer_id(), "query_event_id": exchange.query_id(),
                       "skill_id": exchange.skill_id, "tokens": assembled.tokens,
                       "provenance": assembled.provenance}),
            ))
            .await;
        let mut raw = String::new();
        let mut filter = crate::llm::ThinkingFilter::default();
        while let Some(piece) = pieces.recv().await {
            let piece = match piece {
                Ok(p) => p,
                Err(err) => {
                    tracing::warn!(%err, tenant = %exchange.tenant, "the chat server failed mid-answer");
                    let body = json!({"error": {"field": "$", "reason": err.to_string()}});
                    let _ = tx.send(event("error", body)).await;
                    return;
                }
            };
            raw.push_str(&piece);
            let shown = filter.push(&piece);
            if !shown.is_empty() {
                let _ = tx.send(event("delta", json!({"content": shown}))).await;
            }
        }
        let rest = filter.finish();
        if !rest.is_empty() {
            let _ = tx.send(event("delta", json!({"content": rest}))).await;
        }
        let answer = crate::llm::strip_thinking(&raw).to_string();
        let done = match exchange.store(&engine, &answer).await {
            Ok(stored) => event(
                "done",
                json!({"answer": answer, "message_id": exchange.answer_id(),
                       "stored": {"accepted": stored.accepted, "duplicates": stored.duplicates,
                                  "log_end": stored.log_end}}),
            ),
            Err(_) => event(
                "error",
                json!({"error": {"field": "$", "reason": "the exchange could not be stored"}}),
            ),
        };
        let _ = tx.send(done).await;
    });
    let events = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|e| (Ok::<_, std::convert::Infallible>(e), rx))
    });
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

#[derive(serde::Deserialize)]
struct FeedbackRequest {
    #[serde(default)]
    tenant: String,
    user: String,
    message_id: String,
    skill_id: String,
    reward: i64,
    #[serde(default)]
    context: Option<engram_schemas::FeedbackContext>,
    #[serde(default)]
    session: Option<String>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    free_text: Option<String>,
    /// Idempotency key (default: a new id; each vote is stored, the latest on a message counts).
    #[serde(default)]
    event_id: Option<String>,
}

/// A thumbs up/down on an answer, stored as a feedback event; the posteriors and the user's
/// style move through the dataflow.
async fn post_feedback(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req: FeedbackRequest =
        match parse_for_tenant(&body, "feedback", &auth, |r: &mut FeedbackRequest| {
            &mut r.tenant
        }) {
            Ok(r) => r,
            Err(resp) => return resp,
        };
    let event_id = req
        .event_id
        .unwrap_or_else(|| format!("fb-{}", uuid::Uuid::new_v4()));
    let mut event = json!({
        "kind": "feedback", "event_id": event_id, "tenant": req.tenant, "user": req.user,
        "ts": chrono::Utc::now(), "message_id": req.message_id, "skill_id": req.skill_id,
        "reward": req.reward,
    });
    for (field, value) in [
        ("session", req.session.map(Value::from)),
        ("reason", req.reason.map(Value::from)),
        ("free_text", req.free_text.map(Value::from)),
        ("context", req.context.map(|c| json!(c))),
    ] {
        if let Some(v) = value {
            event[field] = v;
        }
    }
    match store_events(&engine, "http", &req.tenant, &event).await {
        Ok(report) => Json(json!({"event_id": event_id, "accepted": report.accepted,
            "duplicates": report.duplicates, "log_end": report.log_end}))
        .into_response(),
        Err(resp) => resp,
    }
}

/// The OpenAPI document of this API.
async fn get_openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::OPENAPI_JSON,
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct UserRequest {
    #[serde(default)]
    tenant: String,
    user: String,
}

fn user_request(body: &[u8], what: &str, auth: &AuthTenant) -> Result<UserRequest, Response> {
    let req = parse_for_tenant(body, what, auth, |r: &mut UserRequest| &mut r.tenant)?;
    engram_schemas::validate_name(&req.user)
        .map_err(|reason| error(StatusCode::BAD_REQUEST, "user", reason))?;
    Ok(req)
}

fn gdpr_error(err: crate::gdpr::GdprError) -> Response {
    tracing::error!(%err, "export or erase failed");
    error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
}

/// A user's whole subgraph as JSON.
async fn post_export(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req = match user_request(&body, "export", &auth) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    match engine.export_user(&req.tenant, &req.user).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => gdpr_error(e),
    }
}

/// Erases a user of the key's tenant everywhere; answers with the receipt once done.
async fn post_erase(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let req = match user_request(&body, "erase", &auth) {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    match engine.erase(&req.tenant, Some(&req.user)).await {
        Ok(receipt) => Json(receipt).into_response(),
        Err(e) => gdpr_error(e),
    }
}

/// Erases a whole tenant (its users' data and its keys).
async fn erase_tenant(State(engine): State<Arc<Engine>>, Path(tenant): Path<String>) -> Response {
    if let Err(reason) = engram_schemas::validate_name(&tenant) {
        return error(StatusCode::BAD_REQUEST, "tenant", reason);
    }
    match engine.erase(&tenant, None).await {
        Ok(receipt) => Json(receipt).into_response(),
        Err(e) => gdpr_error(e),
    }
}
