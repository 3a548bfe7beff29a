//! Records the audited requests of tenant keys in the audit log
//! ([`engram_engine::audit_log`]): reads of a user's memory (recall, memory, prompt, chat, the
//! dashboard stream), exports, erasures, deletions and rectifications of one memory, and
//! restrict / unrestrict / erase / forget control events sent to `POST /v1/events`. One record per request (per control event), written after the
//! handler answered, with its status. Only ids are recorded: the user id when it is a valid
//! name, never the body.

use crate::auth::{AuthKeyId, AuthTenant};
use crate::error::error;
use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Extension;
use engram_engine::audit_log::{AuditAction, AuditEntry, AuditLog};
use serde_json::Value;
use std::sync::Arc;

/// The action a tenant route performs on a user's data, if it is audited.
fn audited_action(method: &Method, path: &str) -> Option<AuditAction> {
    Some(match (method.as_str(), path) {
        ("POST", "/v1/recall") => AuditAction::Recall,
        ("POST", "/v1/memory") => AuditAction::Memory,
        ("POST", "/v1/prompt") => AuditAction::Prompt,
        ("POST", "/v1/chat") | ("POST", "/v1/chat/completions") => AuditAction::Chat,
        ("POST", "/v1/export") => AuditAction::Export,
        ("POST", "/v1/erase") => AuditAction::Erase,
        ("GET", "/v1/dashboard/stream") => AuditAction::DashboardStream,
        ("DELETE", p) if p.starts_with("/v1/memories/") => AuditAction::Forget,
        ("PATCH", p) if p.starts_with("/v1/memories/") => AuditAction::Rectify,
        ("GET", p) if p.starts_with("/v1/messages/") => AuditAction::Provenance,
        _ => return None,
    })
}

/// `user` when it is a valid name (anything else could be content: it is not recorded).
fn user_id(user: Option<&str>) -> Option<String> {
    user.filter(|u| engram_schemas::validate_name(u).is_ok())
        .map(str::to_string)
}

/// The `user` field of a JSON body.
fn body_user(body: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct UserField {
        user: Option<String>,
    }
    let parsed: UserField = serde_json::from_slice(body).ok()?;
    user_id(parsed.user.as_deref())
}

/// The restrict, unrestrict, erase and forget control events of an events body: (action, user; `None`
/// for the whole tenant). Parsed only when the body mentions `control`.
fn control_actions(body: &[u8]) -> Vec<(AuditAction, Option<String>)> {
    if !body.windows(9).any(|w| w == b"\"control\"") {
        return Vec::new();
    }
    let Ok(parsed) = serde_json::from_slice::<Value>(body) else {
        return Vec::new();
    };
    let items = match &parsed {
        Value::Array(items) => items.iter().collect(),
        one => vec![one],
    };
    items
        .into_iter()
        .filter(|item| item.get("kind").and_then(Value::as_str) == Some("control"))
        .filter_map(|item| {
            let action = match item.get("action").and_then(Value::as_str)? {
                "restrict" => AuditAction::Restrict,
                "unrestrict" => AuditAction::Unrestrict,
                "erase" => AuditAction::Erase,
                "forget" => AuditAction::Forget,
                _ => return None,
            };
            let whole_tenant = item.get("scope").and_then(Value::as_str) == Some("tenant");
            let user = if whole_tenant {
                None
            } else {
                user_id(item.get("user").and_then(Value::as_str))
            };
            Some((action, user))
        })
        .collect()
}

/// The user of a dashboard stream or a memory's deletion: its `user` query parameter.
fn query_user(req: &Request) -> Option<String> {
    let query = req.uri().query()?;
    let user = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("user="))?;
    user_id(Some(user))
}

/// The middleware: runs the handler, then appends one record per audited action. A failed
/// append of an export's record withholds the export (500); other failures are logged.
pub(crate) async fn audit_tenant_requests(
    Extension(audit): Extension<Arc<AuditLog>>,
    req: Request,
    next: Next,
) -> Response {
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    let is_events = method == Method::POST && path == "/v1/events";
    let action = audited_action(&method, &path);
    if action.is_none() && !is_events {
        return next.run(req).await;
    }
    let tenant = req.extensions().get::<AuthTenant>().map(|t| t.0.clone());
    let key_id = req.extensions().get::<AuthKeyId>().map(|k| k.0.clone());
    let (Some(tenant), Some(key_id)) = (tenant, key_id) else {
        return next.run(req).await;
    };
    let (req, actions) = if method == Method::GET || method == Method::DELETE {
        let user = query_user(&req);
        (req, vec![(action.expect("audited"), user)])
    } else {
        let (parts, body) = req.into_parts();
        let bytes: Bytes = match axum::body::to_bytes(body, crate::MAX_BODY_BYTES).await {
            Ok(b) => b,
            Err(e) => return error(StatusCode::PAYLOAD_TOO_LARGE, "$", e),
        };
        let actions = match action {
            Some(action) => vec![(action, body_user(&bytes))],
            None => control_actions(&bytes),
        };
        (Request::from_parts(parts, Body::from(bytes)), actions)
    };
    let response = next.run(req).await;
    let route = format!("{method} {path}");
    for (action, user) in actions {
        let entry = AuditEntry {
            tenant: &tenant,
            key_id: &key_id,
            action,
            user: user.as_deref(),
            route: &route,
            status: response.status().as_u16(),
        };
        if let Err(err) = audit.append(entry) {
            tracing::error!(%err, %tenant, ?action, "could not write the audit record");
            if action == AuditAction::Export {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "$",
                    "the export was not handed out: its audit record could not be written",
                );
            }
        }
    }
    response
}
