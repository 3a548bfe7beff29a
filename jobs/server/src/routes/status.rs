//! `GET /v1/status`, `GET /metrics` and `GET /v1/openapi.json`: no tenant data, no key.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use engram_engine::Engine;
use std::sync::Arc;

pub(crate) async fn get_status(State(engine): State<Arc<Engine>>) -> Response {
    Json(engine.status().await).into_response()
}

pub(crate) async fn get_metrics(State(engine): State<Arc<Engine>>) -> Response {
    let s = engine.status().await;
    let body = format!(
        "# HELP engram_log_end_offset Offset the next accepted event will get.\n\
         # TYPE engram_log_end_offset gauge\nengram_log_end_offset {}\n\
         # HELP engram_views_as_of Input-log offset the views reflect.\n\
         # TYPE engram_views_as_of gauge\nengram_views_as_of {}\n\
         # HELP engram_frontier_lag_events Accepted events not yet reflected in the views.\n\
         # TYPE engram_frontier_lag_events gauge\nengram_frontier_lag_events {}\n\
         # HELP engram_episodes_stored Episodes committed to Lance.\n\
         # TYPE engram_episodes_stored gauge\nengram_episodes_stored {}\n\
         # HELP engram_events_rejected_total Inputs rejected to the reject log.\n\
         # TYPE engram_events_rejected_total counter\nengram_events_rejected_total {}\n\
         # HELP engram_unindexed_rows Episodes not yet folded into the indexes.\n\
         # TYPE engram_unindexed_rows gauge\nengram_unindexed_rows {}\n\
         # HELP engram_corrections_not_embedded_total Corrections whose embedding failed (not clustered).\n\
         # TYPE engram_corrections_not_embedded_total counter\nengram_corrections_not_embedded_total {}\n\
         # HELP engram_unreadable_records_total Event-log records that could not be read (skipped).\n\
         # TYPE engram_unreadable_records_total counter\nengram_unreadable_records_total {}\n",
        s.log_end,
        s.views_as_of,
        s.log_end.saturating_sub(s.views_as_of),
        s.episodes,
        s.rejected,
        s.unindexed_rows,
        s.failures.corrections_not_embedded,
        s.failures.unreadable_records,
    );
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// The OpenAPI document of this API.
pub(crate) async fn get_openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::OPENAPI_JSON,
    )
        .into_response()
}
