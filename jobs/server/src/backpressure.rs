//! Push-back under overload: while the ingest backlog (events accepted and not yet recallable,
//! [`engram_engine::ingest::backlog`]) is over `limits.max_backlog_events`, the routes that
//! write events answer `429` with `Retry-After` before reading anything, so the client keeps
//! what it would have sent and the backlog stays bounded. Reads, exports, erasures and
//! forgets are always served. The MCP tools that write (`remember`, `feedback`) ask
//! [`refusal`] themselves: `/mcp` carries reads too.

use crate::error::too_many_requests;
use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use engram_engine::Engine;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The routes (method, matched path) that add events to the log for a tenant's clients.
const WRITE_ROUTES: &[(Method, &str)] = &[
    (Method::POST, "/v1/events"),
    (Method::POST, "/v1/feedback"),
    (Method::POST, "/v1/chat"),
    (Method::POST, "/v1/chat/completions"),
    (Method::PATCH, "/v1/memories/{id}"),
];

/// Whether the request is one of [`WRITE_ROUTES`].
fn writes_events(method: &Method, matched: Option<&str>) -> bool {
    matched.is_some_and(|path| WRITE_ROUTES.iter().any(|(m, p)| m == method && *p == path))
}

/// Middleware: refuses [`WRITE_ROUTES`] with `429` while the backlog is over its limit.
pub async fn refuse_writes_when_backlogged(
    State(engine): State<Arc<Engine>>,
    request: Request,
    next: Next,
) -> Response {
    let matched = request
        .extensions()
        .get::<MatchedPath>()
        .map(|m| m.as_str());
    if writes_events(request.method(), matched) {
        if let Some(refused) = refusal(&engine) {
            return refused;
        }
    }
    next.run(request).await
}

/// The `429` a write gets while the backlog is over its limit (counted in
/// `refused_requests`); `None` while writes are taken.
pub fn refusal(engine: &Engine) -> Option<Response> {
    let backlog = engine.ingestor.backlog();
    if !backlog.over_limit() {
        return None;
    }
    backlog.refused_requests.fetch_add(1, Ordering::Relaxed);
    Some(too_many_requests(
        format!(
            "engram is behind: {} events accepted are not yet recallable (limit {}); \
             nothing of this request was stored, send it again after Retry-After",
            backlog.events(),
            backlog.limit()
        ),
        backlog.retry_after_secs(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_routes_that_write_events_are_pushed_back() {
        assert!(writes_events(&Method::POST, Some("/v1/events")));
        assert!(writes_events(&Method::PATCH, Some("/v1/memories/{id}")));
        assert!(writes_events(&Method::POST, Some("/v1/chat/completions")));
        assert!(!writes_events(&Method::DELETE, Some("/v1/memories/{id}")));
        assert!(!writes_events(&Method::POST, Some("/v1/recall")));
        assert!(!writes_events(&Method::POST, Some("/v1/erase")));
        assert!(!writes_events(&Method::POST, None));
    }
}
