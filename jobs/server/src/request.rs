//! Request bodies: parsed (a 400 names the field), and their `tenant` checked against the key.

use crate::auth::{check_tenant, AuthTenant};
use crate::error::error;
use axum::http::StatusCode;
use axum::response::Response;

/// A JSON body as `T`, or a 400 naming the field serde complained about.
pub(crate) fn parse_body<T: serde::de::DeserializeOwned>(
    body: &[u8],
    what: &str,
) -> Result<T, Response> {
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
pub(crate) fn parse_for_tenant<T: serde::de::DeserializeOwned>(
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

/// A body naming one user of the key's tenant.
#[derive(serde::Deserialize)]
pub(crate) struct UserRequest {
    #[serde(default)]
    pub(crate) tenant: String,
    pub(crate) user: String,
}

pub(crate) fn user_request(
    body: &[u8],
    what: &str,
    auth: &AuthTenant,
) -> Result<UserRequest, Response> {
    let req = parse_for_tenant(body, what, auth, |r: &mut UserRequest| &mut r.tenant)?;
    engram_schemas::validate_name(&req.user)
        .map_err(|reason| error(StatusCode::BAD_REQUEST, "user", reason))?;
    Ok(req)
}
