//! `POST /v1/prompt`: the assembled prompt with its provenance.

use crate::auth::{check_not_restricted, AuthTenant};
use crate::error::prompt_error;
use crate::request::parse_for_tenant;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::prompt::PromptRequest;
use engram_engine::Engine;
use std::sync::Arc;

/// Assembles the Qwen3 prompt for a query (see `prompt.rs`), with its provenance.
pub(crate) async fn post_prompt(
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
