//! The HTTP API of engram (docs/http-api.md) over [`engram_engine::Engine`]: one module per route
//! group in [`routes`], API keys in [`auth`], every error's HTTP status in [`error`], the
//! dashboard page and stream in [`dashboard`].

pub mod audit;
pub mod auth;
pub mod backpressure;
pub mod dashboard;
pub mod error;
pub mod listener;
pub mod mcp;
pub mod openapi;
pub mod request;
pub mod request_limits;
pub mod routes;
pub mod stream_slots;
pub mod write_deadline;

use auth::{require_admin_key, require_tenant_key};
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{delete, get, post};
use axum::{Extension, Router};
use engram_engine::Engine;
use routes::{admin, chat, events, gdpr, memories, memory, openai, prompt, status};
use std::sync::Arc;

/// Largest request body accepted (an array of events).
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The routes. Tenant routes need a tenant's API key (`Authorization: Bearer …` or
/// `X-API-Key`); admin routes need the admin key; health, status and metrics (no tenant data)
/// need none. Tenant-key requests are charged to the tenant's limits ([`request_limits`]).
pub fn router(engine: Arc<Engine>) -> Router {
    let request_limits = Arc::new(request_limits::RequestLimits::from_config(
        &engine.config.limits,
        engine.tenant_limits.clone(),
        MAX_BODY_BYTES,
    ));
    let tenant_routes = Router::new()
        .route("/v1/events", post(events::post_events))
        .route("/v1/recall", post(memory::post_recall))
        .route("/v1/memory", post(memory::post_memory))
        .route("/v1/prompt", post(prompt::post_prompt))
        .route("/v1/chat", post(chat::post_chat))
        .route("/v1/chat/completions", post(openai::post_chat_completions))
        .route("/v1/models", get(openai::get_models))
        .route("/v1/feedback", post(events::post_feedback))
        .route("/v1/export", post(gdpr::post_export))
        .route("/v1/erase", post(gdpr::post_erase))
        .route(
            "/v1/memories/{id}",
            delete(memories::delete_memory).patch(memories::patch_memory),
        )
        .route(
            "/v1/messages/{id}/provenance",
            get(routes::messages::get_provenance),
        )
        .route("/v1/dashboard/stream", get(dashboard::get_stream))
        .route("/v1/audit", get(routes::audit::get_own_audit))
        .route(
            "/mcp",
            post(mcp::post_mcp)
                .get(mcp::get_mcp)
                .delete(mcp::delete_mcp),
        )
        // innermost: records what the handler answered, with the key the outer layers checked
        .route_layer(middleware::from_fn(audit::audit_tenant_requests))
        // writes wait while the pipeline is behind (after the key and the tenant's limits)
        .route_layer(middleware::from_fn_with_state(
            engine.clone(),
            backpressure::refuse_writes_when_backlogged,
        ))
        // the later layer runs first: the key names the tenant, then its limits apply
        .route_layer(middleware::from_fn_with_state(
            request_limits,
            request_limits::limit_tenant_requests,
        ))
        .route_layer(middleware::from_fn_with_state(
            engine.clone(),
            require_tenant_key,
        ));
    let admin_routes = Router::new()
        .route(
            "/v1/admin/tenants",
            post(admin::create_tenant).get(admin::list_tenants),
        )
        .route("/v1/admin/tenants/{tenant}", delete(admin::erase_tenant))
        .route(
            "/v1/admin/tenants/{tenant}/audit",
            get(routes::audit::get_tenant_audit),
        )
        .route("/v1/admin/events", post(events::post_admin_events))
        .route("/v1/admin/tenants/{tenant}/keys", post(admin::issue_key))
        .route(
            "/v1/admin/tenants/{tenant}/keys/{key_id}",
            delete(admin::revoke_key),
        )
        .route_layer(middleware::from_fn_with_state(
            engine.clone(),
            require_admin_key,
        ));
    Router::new()
        .merge(tenant_routes)
        .merge(admin_routes)
        .route("/v1/status", get(status::get_status))
        .route("/v1/openapi.json", get(status::get_openapi))
        .route("/healthz", get(|| async { "ok" }))
        .route("/dashboard", get(dashboard::get_page))
        .route("/metrics", get(status::get_metrics))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // errors of the OpenAI-compatible routes in OpenAI's shape, whichever layer answered
        .layer(middleware::from_fn(openai::openai_error_shape))
        .layer(Extension(Arc::new(
            engram_engine::audit_log::AuditLog::new(
                &engine.config.data_dir.join("audit"),
                Default::default(),
            ),
        )))
        .layer(Extension(Arc::new(stream_slots::StreamSlots::from_config(
            &engine.config.limits,
        ))))
        .layer(Extension(Arc::new(mcp::sessions::McpSessions::default())))
        .with_state(engine)
}
