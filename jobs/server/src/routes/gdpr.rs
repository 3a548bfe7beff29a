//! `POST /v1/export` and `POST /v1/erase`: a user's data out, or gone.

use crate::auth::AuthTenant;
use crate::error::gdpr_error;
use crate::request::user_request;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::Engine;
use std::sync::Arc;

/// A user's whole subgraph as JSON.
pub(crate) async fn post_export(
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
pub(crate) async fn post_erase(
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
