//! `DELETE /v1/memories/{id}` and `PATCH /v1/memories/{id}`: one memory of a user forgotten,
//! or one fact rectified (see [`engram_engine::engine::memory_edits`]).

use crate::auth::{check_not_restricted, AuthTenant};
use crate::error::{error, gdpr_error, memory_edit_error};
use crate::request::parse_body;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::engine::memory_edits::MemoryEditError;
use engram_engine::Engine;
use serde_json::json;
use std::sync::Arc;

/// The longest memory id taken (event ids are at most 256 bytes; node ids are UUIDs).
const MAX_ID_BYTES: usize = 256;

#[derive(serde::Deserialize)]
pub(crate) struct UserQuery {
    pub(crate) user: Option<String>,
}

/// The id of the path, unless malformed (400, field `id`).
pub(super) fn check_id(id: &str) -> Result<(), Response> {
    if id.is_empty() || id.len() > MAX_ID_BYTES || id.chars().any(char::is_control) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "id",
            format!("a memory id is 1 to {MAX_ID_BYTES} bytes without control characters"),
        ));
    }
    Ok(())
}

/// The user named, unless missing or not a valid name (400, field `user`).
pub(super) fn check_user(user: Option<&str>) -> Result<&str, Response> {
    let user = user.ok_or_else(|| error(StatusCode::BAD_REQUEST, "user", "is required"))?;
    engram_schemas::validate_name(user)
        .map_err(|reason| error(StatusCode::BAD_REQUEST, "user", reason))?;
    Ok(user)
}

/// Forgets one memory of a user of the key's tenant: `id` is an event id (an interaction, a
/// correction, a fact or summary event, a vote) or the id of an episode, summary or fact; the
/// event behind it (for a fact learned from a message, that message) is removed with
/// everything derived from it. Answers with the receipt once done; `404` when the user has no
/// such memory (another user's or tenant's id included).
pub(crate) async fn delete_memory(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    Path(id): Path<String>,
    Query(query): Query<UserQuery>,
) -> Response {
    let user = match check_id(&id).and_then(|()| check_user(query.user.as_deref())) {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    let tenant = &auth.0;
    let found = match engine.find_memory(tenant, user, &id).await {
        Ok(Some(found)) => found,
        Ok(None) => {
            return memory_edit_error(MemoryEditError::NotFound {
                user: user.to_string(),
                id,
            })
        }
        Err(e) => return gdpr_error(e),
    };
    match engine.forget(tenant, user, &found.event_id).await {
        Ok(receipt) => {
            let mut body = serde_json::to_value(receipt).expect("a receipt serialises");
            body["memory"] = json!({"id": id, "event_id": found.event_id, "kind": found.kind});
            Json(body).into_response()
        }
        Err(e) => gdpr_error(e),
    }
}

#[derive(serde::Deserialize)]
struct RectifyRequest {
    user: String,
    value: String,
}

/// Rectifies one fact of a user of the key's tenant (`id`: its current version's fact id) to
/// `value`: the new value supersedes it, stated by the user. `404` for no such fact of the
/// user, `409` when it is not the current value, `422` for the same or an invalid value.
pub(crate) async fn patch_memory(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    let req: RectifyRequest = match parse_body(&body, "rectify") {
        Ok(r) => r,
        Err(resp) => return resp,
    };
    let user = match check_id(&id).and_then(|()| check_user(Some(&req.user))) {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    if let Err(resp) = check_not_restricted(&engine, &auth.0, user) {
        return resp;
    }
    match engine.rectify_fact(&auth.0, user, &id, &req.value).await {
        Ok(done) => Json(done).into_response(),
        Err(e) => memory_edit_error(e),
    }
}
