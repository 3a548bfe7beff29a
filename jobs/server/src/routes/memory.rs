//! `POST /v1/recall` and `POST /v1/memory`: reading a user's memory.

use crate::auth::{check_not_restricted, AuthTenant};
use crate::error::{error, recall_error};
use crate::request::parse_for_tenant;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::query::recall::RecallRequest;
use engram_engine::read_model::memory_json;
use engram_engine::Engine;
use std::sync::Arc;

pub(crate) async fn post_recall(
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
        Err(err) => recall_error(err, &req.tenant),
    }
}

#[derive(serde::Deserialize)]
struct MemoryRequest {
    #[serde(default)]
    tenant: String,
    user: String,
    /// An event time: the graph's time-stamped parts as they stood then
    /// ([`engram_engine::read_model::memory_as_of`]).
    #[serde(default)]
    as_of: Option<chrono::DateTime<chrono::Utc>>,
}

/// One user's facts (every version, with validity and supersession), entities, co-mentions and
/// skill posteriors (own votes, shrunk towards the tenant's other users), read from the views at
/// one timestamp.
pub(crate) async fn post_memory(
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
    let mut memory = memory_json(&engine.views.read(), &req.tenant, &req.user);
    if let Some(as_of) = req.as_of {
        engram_engine::read_model::memory_as_of(&mut memory, as_of);
    }
    Json(memory).into_response()
}
