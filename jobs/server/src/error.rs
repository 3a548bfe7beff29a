//! Every error response: the body `{"error": {"field", "reason"}}`, and the one table of which
//! engine error answers with which HTTP status.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use engram_engine::engine::gdpr::GdprError;
use engram_engine::engine::memory_edits::MemoryEditError;
use engram_engine::prompt::PromptError;
use engram_engine::query::recall::RecallError;
use engram_engine::tenants::TenantError;
use serde_json::json;

pub fn error(status: StatusCode, field: &str, reason: impl std::fmt::Display) -> Response {
    (
        status,
        Json(json!({"error": {"field": field, "reason": reason.to_string()}})),
    )
        .into_response()
}

pub(crate) fn unauthorized(reason: &str) -> Response {
    let mut resp = error(StatusCode::UNAUTHORIZED, "authorization", reason);
    resp.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer"),
    );
    resp
}

/// `429`: a per-tenant limit or a cap on streams refused the request; `Retry-After` (whole
/// seconds, at least 1) says when to try again.
pub(crate) fn too_many_requests(reason: impl std::fmt::Display, retry_after_secs: u64) -> Response {
    let mut resp = error(StatusCode::TOO_MANY_REQUESTS, "$", reason);
    resp.headers_mut()
        .insert(header::RETRY_AFTER, retry_after_secs.max(1).into());
    resp
}

pub(crate) fn tenant_error(err: TenantError) -> Response {
    use TenantError as E;
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

pub(crate) fn recall_error(err: RecallError, tenant: &str) -> Response {
    match err {
        RecallError::Invalid(e) => error(StatusCode::BAD_REQUEST, &e.field, &e.reason),
        err => {
            tracing::error!(%err, tenant = %tenant, "recall failed");
            error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
        }
    }
}

pub(crate) fn prompt_error(err: PromptError, tenant: &str) -> Response {
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

pub(crate) fn gdpr_error(err: GdprError) -> Response {
    tracing::error!(%err, "export or erase failed");
    error(StatusCode::INTERNAL_SERVER_ERROR, "$", err)
}

pub(crate) fn memory_edit_error(err: MemoryEditError) -> Response {
    use MemoryEditError as E;
    match err {
        E::NotFound { .. } => error(StatusCode::NOT_FOUND, "id", err),
        E::NotCurrent { .. } => error(StatusCode::CONFLICT, "id", err),
        E::SameValue { .. } => error(StatusCode::UNPROCESSABLE_ENTITY, "value", err),
        E::Invalid { ref field, .. } => {
            let field = field.clone();
            error(StatusCode::UNPROCESSABLE_ENTITY, &field, err)
        }
        E::Gdpr(err) => gdpr_error(err),
        E::ViewsLate(_) => {
            tracing::error!(%err, "rectification");
            error(StatusCode::SERVICE_UNAVAILABLE, "$", err)
        }
    }
}
