//! `/v1/admin/tenants…`: tenants and their API keys (admin key).

use crate::error::{error, gdpr_error, tenant_error};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::audit_log::{AuditAction, AuditEntry, AuditLog};
use engram_engine::Engine;
use serde_json::json;
use std::sync::Arc;

#[derive(serde::Deserialize)]
struct CreateTenant {
    tenant: String,
}

pub(crate) async fn create_tenant(State(engine): State<Arc<Engine>>, body: Bytes) -> Response {
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

pub(crate) async fn list_tenants(State(engine): State<Arc<Engine>>) -> Response {
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

pub(crate) async fn issue_key(
    State(engine): State<Arc<Engine>>,
    Path(tenant): Path<String>,
) -> Response {
    match engine.tenants.issue_key(&tenant) {
        Ok(key) => (
            StatusCode::CREATED,
            Json(json!({"tenant": tenant, "api_key": key})),
        )
            .into_response(),
        Err(e) => tenant_error(e),
    }
}

pub(crate) async fn revoke_key(
    State(engine): State<Arc<Engine>>,
    Path((tenant, key_id)): Path<(String, String)>,
) -> Response {
    match engine.tenants.revoke_key(&tenant, &key_id) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(e) => tenant_error(e),
    }
}

/// Erases a whole tenant (its users' data and its keys). The tenant's audit log keeps the
/// erase's record (key id `admin`).
pub(crate) async fn erase_tenant(
    State(engine): State<Arc<Engine>>,
    Extension(audit): Extension<Arc<AuditLog>>,
    Path(tenant): Path<String>,
) -> Response {
    if let Err(reason) = engram_schemas::validate_name(&tenant) {
        return error(StatusCode::BAD_REQUEST, "tenant", reason);
    }
    let response = match engine.erase(&tenant, None).await {
        Ok(receipt) => Json(receipt).into_response(),
        Err(e) => gdpr_error(e),
    };
    let entry = AuditEntry {
        tenant: &tenant,
        key_id: "admin",
        action: AuditAction::Erase,
        user: None,
        route: "DELETE /v1/admin/tenants/{tenant}",
        status: response.status().as_u16(),
    };
    if let Err(err) = audit.append(entry) {
        tracing::error!(%err, %tenant, "could not write the audit record of a tenant erase");
    }
    response
}
