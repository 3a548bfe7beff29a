//! API keys: the tenant routes need a tenant's key, the admin routes the admin key.

use crate::error::{error, unauthorized};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use engram_engine::Engine;
use std::sync::Arc;

/// The tenant the request's API key belongs to.
#[derive(Debug, Clone)]
pub struct AuthTenant(pub String);

/// The id of the request's tenant key ([`engram_engine::tenants::key_id`]: never the secret),
/// for the audit log.
#[derive(Debug, Clone)]
pub struct AuthKeyId(pub String);

/// Who reads `/v1/status` and `/metrics`, by the key the request presents.
#[derive(Debug, Clone, PartialEq)]
pub enum Viewer {
    /// The admin key: the operator's view of the whole engine.
    Operator,
    /// A tenant's key: that tenant's counts only.
    Tenant(String),
    /// No key: health only.
    Anonymous,
}

/// The [`Viewer`] of a request; `401` for a key that is neither the admin key nor a live
/// tenant key (a wrong key is an error, not a silent downgrade to the public view).
pub(crate) fn viewer(engine: &Engine, headers: &HeaderMap) -> Result<Viewer, Response> {
    let Some(key) = presented_key(headers) else {
        return Ok(Viewer::Anonymous);
    };
    let admin = engine.config.admin_key.as_deref();
    if admin.is_some_and(|admin| engram_engine::tenants::same_secret(key, admin)) {
        return Ok(Viewer::Operator);
    }
    match engine.tenants.authenticate(key) {
        Some(tenant) => Ok(Viewer::Tenant(tenant)),
        None => Err(unauthorized("unknown or revoked API key")),
    }
}

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

pub(crate) async fn require_tenant_key(
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
            let key_id = AuthKeyId(engram_engine::tenants::key_id(key));
            req.extensions_mut().insert(AuthTenant(tenant));
            req.extensions_mut().insert(key_id);
            next.run(req).await
        }
        None => unauthorized("unknown or revoked API key"),
    }
}

pub(crate) async fn require_admin_key(
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
        Some(key) if engram_engine::tenants::same_secret(key, admin) => next.run(req).await,
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
pub(crate) fn check_tenant(body_tenant: &str, auth: &AuthTenant) -> Result<(), Response> {
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
