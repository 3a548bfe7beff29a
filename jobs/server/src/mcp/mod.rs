//! The MCP server at `/mcp`, over MCP's streamable HTTP transport: a client POSTs JSON-RPC
//! messages and gets each answer as `application/json` (engram sends no server-initiated
//! messages, so `GET /mcp`, the stream for them, answers 405). The route sits with the tenant
//! routes: the same API key, limits and audit. `initialize` opens a session whose id comes back
//! in `Mcp-Session-Id`; every later message carries it (400 without, 404 for an unknown or
//! ended one) and `DELETE /mcp` ends it. [`protocol`]: the JSON-RPC messages; [`tools`]: the
//! tool list; [`calls`]: what each tool does; [`sessions`]: the open sessions.

pub mod calls;
pub mod protocol;
pub mod sessions;
pub mod tools;

use crate::auth::{AuthKeyId, AuthTenant};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use calls::ToolContext;
use engram_engine::audit_log::AuditLog;
use engram_engine::Engine;
use protocol::{Incoming, RpcError, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use serde_json::{json, Value};
use sessions::McpSessions;
use std::sync::Arc;

pub const SESSION_HEADER: &str = "mcp-session-id";
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// A JSON-RPC error for the whole HTTP request (no message of it is answered), with `status`.
fn refuse(status: StatusCode, code: i64, message: impl Into<String>) -> Response {
    let body = RpcError::new(code, message).to_response(Value::Null);
    (status, Json(body)).into_response()
}

/// `POST /mcp`: one JSON-RPC message (or a batch of them).
pub(crate) async fn post_mcp(
    State(engine): State<Arc<Engine>>,
    Extension(auth): Extension<AuthTenant>,
    Extension(key_id): Extension<AuthKeyId>,
    Extension(sessions): Extension<Arc<McpSessions>>,
    Extension(audit): Extension<Arc<AuditLog>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Err(refused) = check_origin(&headers) {
        return refused;
    }
    if let Some(version) = header_str(&headers, VERSION_HEADER) {
        if !protocol::is_supported(version) {
            return refuse(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!(
                    "unsupported MCP-Protocol-Version {version:?}: engram speaks {:?}",
                    protocol::SUPPORTED_VERSIONS
                ),
            );
        }
    }
    let message: Value = match serde_json::from_slice(&body) {
        Ok(message) => message,
        Err(err) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                PARSE_ERROR,
                format!("the body is not JSON: {err}"),
            )
        }
    };
    let ctx = ToolContext {
        engine,
        auth,
        key_id,
        audit,
    };
    if let Some(params) = initialize_params(&message) {
        return initialize(&ctx, &sessions, &message["id"], params);
    }
    let Some(session) = header_str(&headers, SESSION_HEADER) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "no Mcp-Session-Id header: send `initialize` first and then its session id with every message",
        );
    };
    if sessions.touch(session, &ctx.auth.0).is_none() {
        return refuse(
            StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            "unknown or ended MCP session: send `initialize` again",
        );
    }
    let answers = match &message {
        Value::Array(batch) if batch.is_empty() => {
            return refuse(StatusCode::BAD_REQUEST, INVALID_REQUEST, "an empty batch")
        }
        Value::Array(batch) => {
            let mut answers = Vec::new();
            for message in batch {
                answers.extend(handle(&ctx, message).await);
            }
            (!answers.is_empty()).then_some(Value::Array(answers))
        }
        message => handle(&ctx, message).await,
    };
    match answers {
        Some(answers) => Json(answers).into_response(),
        // only notifications or responses: nothing to answer
        None => StatusCode::ACCEPTED.into_response(),
    }
}

/// The params of an `initialize` request (alone, not in a batch).
fn initialize_params(message: &Value) -> Option<&Value> {
    match Incoming::classify(message) {
        Incoming::Request { method, .. } if method == "initialize" => {
            Some(message.get("params").unwrap_or(&Value::Null))
        }
        _ => None,
    }
}

/// Answers `initialize`: the version both speak, a new session in `Mcp-Session-Id`.
fn initialize(ctx: &ToolContext, sessions: &McpSessions, id: &Value, params: &Value) -> Response {
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = protocol::negotiate(requested);
    let session = sessions.open(&ctx.auth.0, version);
    let body = protocol::result_response(id.clone(), protocol::initialize_result(version));
    let mut resp = Json(body).into_response();
    resp.headers_mut().insert(
        SESSION_HEADER,
        HeaderValue::from_str(&session).expect("a session id is visible ASCII"),
    );
    resp
}

/// The answer to one message of a session: `None` for a notification or a response.
async fn handle(ctx: &ToolContext, message: &Value) -> Option<Value> {
    match Incoming::classify(message) {
        Incoming::Request { id, method, params } => {
            Some(match answer(ctx, &method, &params).await {
                Ok(result) => protocol::result_response(id, result),
                Err(err) => err.to_response(id),
            })
        }
        Incoming::Notification { .. } | Incoming::Response => None,
        Incoming::Invalid { id, reason } => {
            Some(RpcError::new(INVALID_REQUEST, reason).to_response(id))
        }
    }
}

/// The result of request `method` in an open session.
async fn answer(ctx: &ToolContext, method: &str, params: &Value) -> Result<Value, RpcError> {
    match method {
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::definitions()})),
        "tools/call" => calls::call_tool(ctx, params).await,
        "initialize" => Err(RpcError::new(
            INVALID_REQUEST,
            "this session is already initialized (an `initialize` in a batch is refused too)",
        )),
        other => Err(RpcError::new(
            METHOD_NOT_FOUND,
            format!("engram's MCP server has no method {other:?}: it offers ping, tools/list and tools/call"),
        )),
    }
}

/// `DELETE /mcp`: ends the session named by `Mcp-Session-Id` (404 when there is none such).
pub(crate) async fn delete_mcp(
    Extension(auth): Extension<AuthTenant>,
    Extension(sessions): Extension<Arc<McpSessions>>,
    headers: HeaderMap,
) -> Response {
    match header_str(&headers, SESSION_HEADER) {
        Some(session) if sessions.close(session, &auth.0) => StatusCode::NO_CONTENT.into_response(),
        Some(_) => refuse(
            StatusCode::NOT_FOUND,
            INVALID_REQUEST,
            "unknown or ended MCP session",
        ),
        None => refuse(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "no Mcp-Session-Id header: which session to end?",
        ),
    }
}

/// `GET /mcp`: engram sends no messages of its own, so there is no stream to open.
pub(crate) async fn get_mcp() -> Response {
    let mut resp = refuse(
        StatusCode::METHOD_NOT_ALLOWED,
        INVALID_REQUEST,
        "engram's MCP server sends no server-initiated messages: POST JSON-RPC messages to /mcp",
    );
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    resp
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// A browser page of another site must not drive the MCP server (DNS rebinding): a request
/// with an `Origin` must come from the host it is sent to. Clients that are not browsers send
/// no `Origin`.
fn check_origin(headers: &HeaderMap) -> Result<(), Response> {
    let Some(origin) = header_str(headers, "origin") else {
        return Ok(());
    };
    let origin_host = origin.split("://").nth(1).unwrap_or(origin);
    match header_str(headers, "host") {
        Some(host) if host.eq_ignore_ascii_case(origin_host) => Ok(()),
        _ => Err(refuse(
            StatusCode::FORBIDDEN,
            INVALID_REQUEST,
            format!("requests from origin {origin:?} are refused: it is not this server"),
        )),
    }
}
