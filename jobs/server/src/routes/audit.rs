//! `GET /v1/audit` (a tenant key: its own tenant's records) and
//! `GET /v1/admin/tenants/{tenant}/audit` (the admin key): the audit log, oldest first, paged
//! by sequence number.

use crate::auth::AuthTenant;
use crate::error::error;
use axum::extract::{Path, Query};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use engram_engine::audit_log::{AuditLog, MAX_READ};
use serde_json::json;
use std::sync::Arc;

/// `?since=N&limit=M`: records with a sequence number above `since` (default 0), at most
/// `limit` (default 100, at most [`MAX_READ`]).
#[derive(serde::Deserialize)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    since: u64,
    #[serde(default = "default_limit")]
    limit: usize,
}

fn default_limit() -> usize {
    100
}

pub(crate) async fn get_own_audit(
    Extension(audit): Extension<Arc<AuditLog>>,
    Extension(auth): Extension<AuthTenant>,
    Query(query): Query<AuditQuery>,
) -> Response {
    audit_page(&audit, &auth.0, &query)
}

pub(crate) async fn get_tenant_audit(
    Extension(audit): Extension<Arc<AuditLog>>,
    Path(tenant): Path<String>,
    Query(query): Query<AuditQuery>,
) -> Response {
    if let Err(reason) = engram_schemas::validate_name(&tenant) {
        return error(StatusCode::BAD_REQUEST, "tenant", reason);
    }
    audit_page(&audit, &tenant, &query)
}

/// `{tenant, records, next_since}`: `next_since` is the `since` of the next page.
fn audit_page(audit: &AuditLog, tenant: &str, query: &AuditQuery) -> Response {
    if query.limit == 0 || query.limit > MAX_READ {
        return error(
            StatusCode::BAD_REQUEST,
            "limit",
            format!("must be 1 to {MAX_READ}"),
        );
    }
    match audit.read(tenant, query.since, query.limit) {
        Ok(records) => {
            let next_since = records.last().map_or(query.since, |r| r.seq);
            Json(json!({"tenant": tenant, "records": records, "next_since": next_since}))
                .into_response()
        }
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "$", e),
    }
}
