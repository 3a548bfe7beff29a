//! `POST /v1/events` and `POST /v1/feedback`: events into the log.

use crate::auth::AuthTenant;
use crate::error::error;
use crate::request::parse_for_tenant;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::ingest::{IngestError, IngestReport};
use engram_engine::Engine;
use serde_json::{json, Value};
use std::sync::Arc;

pub(crate) async fn post_events(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    body: Bytes,
) -> Response {
    let ingestor = engine.ingestor.clone();
    // Appending fsyncs: keep it off the async threads.
    let result =
        tokio::task::spawn_blocking(move || ingestor.ingest_body_as("http", &body, &auth.0)).await;
    ingest_answer(result)
}

/// `POST /v1/admin/events` (admin key): events of any existing tenant, tenant-scope control
/// events included (erase, restrict or unrestrict a whole tenant).
pub(crate) async fn post_admin_events(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
    let (ingestor, tenants) = (engine.ingestor.clone(), engine.tenants.clone());
    let result = tokio::task::spawn_blocking(move || {
        ingestor.ingest_body_checked("http-admin", &body, |e| tenants.known(e))
    })
    .await;
    ingest_answer(result)
}

/// 200 with the report when every event was accepted (or recognised), 422 with it when any
/// was rejected, 503 with `Retry-After: 1` when the log could not store them (disk full).
fn ingest_answer(
    result: Result<Result<IngestReport, IngestError>, tokio::task::JoinError>,
) -> Response {
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
            // nothing of the body was stored (a half-written batch is cut off): the client
            // sends it again, after a disk full for instance
            let mut resp = error(
                StatusCode::SERVICE_UNAVAILABLE,
                "$",
                format!("the event log could not store the events: {err}"),
            );
            resp.headers_mut()
                .insert(axum::http::header::RETRY_AFTER, 1.into());
            resp
        }
        Err(err) => error(StatusCode::INTERNAL_SERVER_ERROR, "$", err),
    }
}

/// Validates and appends events (a JSON value: one event or an array) for `tenant`; any
/// rejection is an error response naming the field.
pub(crate) async fn store_events(
    engine: &Engine,
    source: &'static str,
    tenant: &str,
    events: &Value,
) -> Result<engram_engine::ingest::IngestReport, Response> {
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
pub(crate) async fn post_feedback(
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
