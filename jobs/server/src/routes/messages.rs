//! `GET /v1/messages/{id}/provenance`: why an answer engram built was built that way, by its
//! message id, for as long as the answer is kept (see [`engram_engine::engine::answers`]).

use super::memories::{check_id, check_user, UserQuery};
use crate::auth::AuthTenant;
use crate::error::{error, gdpr_error};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::Engine;
use std::sync::Arc;

/// The stored provenance and explanation of the answer `id` (the `message_id` that
/// `/v1/chat` returned, or the assistant message of an OpenAI-compatible exchange) of a user of
/// the key's tenant: `{message_id, session, ts, skill_id, provenance, explanation}`. `404`
/// when the user has no such answer (another user's or tenant's, one engram did not build, or
/// one erased or forgotten).
pub(crate) async fn get_provenance(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    Path(id): Path<String>,
    Query(query): Query<UserQuery>,
) -> Response {
    let user = match check_id(&id).and_then(|()| check_user(query.user.as_deref())) {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    match engine.answer_provenance(&auth.0, user, &id).await {
        Ok(Some(answer)) => Json(answer).into_response(),
        Ok(None) => error(
            StatusCode::NOT_FOUND,
            "id",
            format!("user {user:?} has no answer {id:?} built by engram"),
        ),
        Err(e) => gdpr_error(e),
    }
}
