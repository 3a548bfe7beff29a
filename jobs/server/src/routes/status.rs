//! `GET /v1/status`, `GET /metrics` and `GET /v1/openapi.json`. What status and metrics show
//! depends on the key presented ([`Viewer`]): the admin key sees the whole engine and every
//! tenant's counts, a tenant's key only its own tenant's counts, no key only that the server
//! is up. Engine-wide figures (log offsets, rejections, indexes) are never shown to a tenant:
//! they grow with every tenant's traffic.

use crate::auth::{viewer, Viewer};
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Json;
use engram_engine::engine::tenant_status::TenantCounts;
use engram_engine::Engine;
use serde_json::json;
use std::fmt::Write;
use std::sync::Arc;

pub(crate) async fn get_status(State(engine): State<Arc<Engine>>, headers: HeaderMap) -> Response {
    let uptime_seconds = engine.status_uptime_seconds();
    match viewer(&engine, &headers) {
        Err(refused) => refused,
        Ok(Viewer::Anonymous) => {
            Json(json!({"view": "public", "up": true, "uptime_seconds": uptime_seconds}))
                .into_response()
        }
        Ok(Viewer::Tenant(tenant)) => {
            let counts = engine.tenant_counts(&tenant);
            let mut body = json!({"view": "tenant", "tenant": tenant, "up": true,
                "uptime_seconds": uptime_seconds});
            merge(&mut body, &counts);
            Json(body).into_response()
        }
        Ok(Viewer::Operator) => {
            let mut body = serde_json::to_value(engine.status().await).expect("status serialises");
            merge(&mut body, &json!({"view": "operator", "up": true}));
            body["tenants"] = json!(engine.counts_by_tenant());
            Json(body).into_response()
        }
    }
}

/// Adds the fields of `more` (an object once serialised) to the object `body`.
fn merge(body: &mut serde_json::Value, more: &impl serde::Serialize) {
    if let (Some(body), serde_json::Value::Object(more)) = (
        body.as_object_mut(),
        serde_json::to_value(more).expect("serialises"),
    ) {
        body.extend(more);
    }
}

pub(crate) async fn get_metrics(State(engine): State<Arc<Engine>>, headers: HeaderMap) -> Response {
    let mut body = String::from(
        "# HELP engram_up 1 while the server answers.\n# TYPE engram_up gauge\nengram_up 1\n",
    );
    match viewer(&engine, &headers) {
        Err(refused) => return refused,
        Ok(Viewer::Anonymous) => {}
        Ok(Viewer::Tenant(tenant)) => {
            write_tenant_metrics(&mut body, [(tenant.clone(), engine.tenant_counts(&tenant))]);
        }
        Ok(Viewer::Operator) => {
            write_engine_metrics(&mut body, &engine).await;
            write_tenant_metrics(&mut body, engine.counts_by_tenant());
        }
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body).into_response()
}

/// The engine-wide metrics (the operator's).
async fn write_engine_metrics(body: &mut String, engine: &Engine) {
    let s = engine.status().await;
    let _ = write!(
        body,
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
         # TYPE engram_unreadable_records_total counter\nengram_unreadable_records_total {}\n\
         # HELP engram_embedding_cache_hits_total Texts whose vector came from the embedder's per-tenant cache.\n\
         # TYPE engram_embedding_cache_hits_total counter\nengram_embedding_cache_hits_total {}\n\
         # HELP engram_embedder_texts_total Texts run through the embedding model (cache hits not counted).\n\
         # TYPE engram_embedder_texts_total counter\nengram_embedder_texts_total {}\n\
         # HELP engram_embedder_seconds_total Seconds the embedder spent on those texts (tokenizing, inference, pooling); texts/seconds is its throughput.\n\
         # TYPE engram_embedder_seconds_total counter\nengram_embedder_seconds_total {:.6}\n",
        s.log_end,
        s.views_as_of,
        s.log_end.saturating_sub(s.views_as_of),
        s.episodes,
        s.rejected,
        s.unindexed_rows,
        s.failures.corrections_not_embedded,
        s.failures.unreadable_records,
        engine.recall.embedder.cache_hits(),
        engine.recall.embedder.model_texts(),
        engine.recall.embedder.model_seconds(),
    );
    write_backlog_metrics(body, &s.backlog);
    for (name, help, value) in engine.enrich_stats.metrics() {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        let _ = write!(
            body,
            "# HELP {name} {help}.\n# TYPE {name} {kind}\n{name} {value}\n"
        );
    }
}

/// The ingest backlog and the push-back on writers.
fn write_backlog_metrics(body: &mut String, b: &engram_engine::ingest::backlog::BacklogStatus) {
    let _ = write!(
        body,
        "# HELP engram_ingest_backlog_events Events accepted (HTTP or Kafka) and not yet recallable.\n\
         # TYPE engram_ingest_backlog_events gauge\nengram_ingest_backlog_events {}\n\
         # HELP engram_ingest_backlog_oldest_seconds Seconds since the oldest event not yet recallable was accepted.\n\
         # TYPE engram_ingest_backlog_oldest_seconds gauge\nengram_ingest_backlog_oldest_seconds {:.3}\n\
         # HELP engram_ingest_backlog_limit Backlog from which writers are pushed back (limits.max_backlog_events; 0: never).\n\
         # TYPE engram_ingest_backlog_limit gauge\nengram_ingest_backlog_limit {}\n\
         # HELP engram_ingest_pushing_back 1 while writers are pushed back (until the backlog falls to half the limit).\n\
         # TYPE engram_ingest_pushing_back gauge\nengram_ingest_pushing_back {}\n\
         # HELP engram_ingest_refused_total Write requests answered 429 for the backlog.\n\
         # TYPE engram_ingest_refused_total counter\nengram_ingest_refused_total {}\n\
         # HELP engram_kafka_pauses_total Times a Kafka consumer paused its partitions for the backlog.\n\
         # TYPE engram_kafka_pauses_total counter\nengram_kafka_pauses_total {}\n\
         # HELP engram_kafka_paused_consumers Kafka consumers paused now.\n\
         # TYPE engram_kafka_paused_consumers gauge\nengram_kafka_paused_consumers {}\n\
         # HELP engram_kafka_throttled_total Kafka messages that waited for their tenant's rate limits.\n\
         # TYPE engram_kafka_throttled_total counter\nengram_kafka_throttled_total {}\n\
         # HELP engram_kafka_waiting_messages Kafka messages waiting for their tenant's rate limits now.\n\
         # TYPE engram_kafka_waiting_messages gauge\nengram_kafka_waiting_messages {}\n",
        b.events,
        b.oldest_age_seconds,
        b.limit,
        u8::from(b.over_limit),
        b.refused_requests,
        b.kafka_pauses,
        b.kafka_paused,
        b.kafka_throttled,
        b.kafka_waiting,
    );
}

/// One labelled series per tenant of each [`TenantCounts`] field.
fn write_tenant_metrics(
    body: &mut String,
    tenants: impl IntoIterator<Item = (String, TenantCounts)>,
) {
    let tenants: Vec<(String, TenantCounts)> = tenants.into_iter().collect();
    let series: [(&str, &str, fn(&TenantCounts) -> usize); 5] = [
        (
            "engram_tenant_users",
            "Users of the tenant with episodes in the views.",
            |c| c.users,
        ),
        (
            "engram_tenant_episodes",
            "The tenant's episodes in the views.",
            |c| c.episodes,
        ),
        (
            "engram_tenant_episodes_stored",
            "The tenant's episodes committed to Lance.",
            |c| c.episodes_stored,
        ),
        (
            "engram_tenant_pending_episodes",
            "The tenant's episodes in the views not yet committed to Lance.",
            |c| c.pending_episodes,
        ),
        (
            "engram_tenant_kafka_waiting_messages",
            "The tenant's Kafka messages waiting for its rate limits.",
            |c| c.kafka_waiting,
        ),
    ];
    for (name, help, value) in series {
        let _ = write!(body, "# HELP {name} {help}\n# TYPE {name} gauge\n");
        for (tenant, counts) in &tenants {
            let _ = writeln!(
                body,
                "{name}{{tenant=\"{}\"}} {}",
                label_value(tenant),
                value(counts)
            );
        }
    }
}

/// `value` escaped for a Prometheus label (backslash, quote and newline).
fn label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The OpenAPI document of this API.
pub(crate) async fn get_openapi() -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        crate::openapi::OPENAPI_JSON,
    )
        .into_response()
}
