//! Errors in OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, so that OpenAI
//! clients raise their usual exceptions: the route's own errors are written so, and
//! [`openai_error_shape`] rewrites every other error of the OpenAI routes (a bad key, a
//! limit, a malformed body, a failed prompt or chat server) from engram's `{field, reason}`.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// The paths whose errors are in OpenAI's shape.
pub(super) const OPENAI_PATHS: [&str; 2] = ["/v1/chat/completions", "/v1/models"];

/// Largest error body rewritten (engram's are a few hundred bytes).
const MAX_ERROR_BYTES: usize = 64 * 1024;

/// OpenAI's error `type` for an HTTP status.
fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        429 => "rate_limit_error",
        500.. => "server_error",
        _ => "invalid_request_error",
    }
}

/// An error response in OpenAI's shape.
pub(super) fn openai_error(
    status: StatusCode,
    param: Option<&str>,
    code: Option<&str>,
    message: impl Into<String>,
) -> Response {
    (
        status,
        Json(openai_error_body(status, param, code, message)),
    )
        .into_response()
}

fn openai_error_body(
    status: StatusCode,
    param: Option<&str>,
    code: Option<&str>,
    message: impl Into<String>,
) -> Value {
    json!({"error": {"message": message.into(), "type": error_type(status), "param": param,
                     "code": code}})
}

/// An error body in OpenAI's shape: one already so is kept; engram's `{field, reason}` gives
/// the message and param (`$`, the whole request, is none); anything else is the message.
fn reshaped(status: StatusCode, body: &[u8]) -> Value {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().map(|v| &v["error"]);
    if error.is_some_and(|e| e["message"].is_string()) {
        return parsed.unwrap_or_default();
    }
    let code = match status.as_u16() {
        401 => Some("invalid_api_key"),
        429 => Some("rate_limit_exceeded"),
        _ => None,
    };
    match error.and_then(|e| Some((e["reason"].as_str()?, e["field"].as_str()))) {
        Some((reason, field)) => {
            let param = field.filter(|f| *f != "$");
            openai_error_body(status, param, code, reason)
        }
        None => {
            let text = String::from_utf8_lossy(body).trim().to_string();
            let message = if text.is_empty() {
                status.canonical_reason().unwrap_or("error").to_string()
            } else {
                text
            };
            openai_error_body(status, None, code, message)
        }
    }
}

/// Middleware (on the whole router, for [`OPENAI_PATHS`] only): an error response's body in
/// OpenAI's shape, its status and other headers (`Retry-After`, `WWW-Authenticate`) kept.
pub async fn openai_error_shape(req: Request, next: Next) -> Response {
    let openai = OPENAI_PATHS.contains(&req.uri().path());
    let resp = next.run(req).await;
    if !openai || resp.status().is_success() {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = axum::body::to_bytes(body, MAX_ERROR_BYTES)
        .await
        .unwrap_or_default();
    let shaped = reshaped(parts.status, &bytes).to_string();
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Response::from_parts(parts, Body::from(shaped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engram_errors_become_openai_errors_and_openai_ones_stay() {
        let engram = br#"{"error":{"field":"authorization","reason":"unknown API key"}}"#;
        assert_eq!(
            reshaped(StatusCode::UNAUTHORIZED, engram),
            json!({"error": {"message": "unknown API key", "type": "authentication_error",
                             "param": "authorization", "code": "invalid_api_key"}})
        );
        let whole = br#"{"error":{"field":"$","reason":"chat server down"}}"#;
        assert_eq!(
            reshaped(StatusCode::BAD_GATEWAY, whole)["error"],
            json!({"message": "chat server down", "type": "server_error", "param": null,
                   "code": null})
        );
        let openai = openai_error_body(StatusCode::BAD_REQUEST, Some("user"), Some("x"), "m");
        assert_eq!(
            reshaped(StatusCode::BAD_REQUEST, openai.to_string().as_bytes()),
            openai
        );
        // axum's own plain-text rejections, and empty bodies
        let text = reshaped(StatusCode::PAYLOAD_TOO_LARGE, b"length limit exceeded");
        assert_eq!(text["error"]["message"], "length limit exceeded");
        assert_eq!(text["error"]["type"], "invalid_request_error");
        let empty = reshaped(StatusCode::TOO_MANY_REQUESTS, b"");
        assert_eq!(empty["error"]["message"], "Too Many Requests");
        assert_eq!(empty["error"]["code"], "rate_limit_exceeded");
    }
}
