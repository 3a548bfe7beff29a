//! The per-tenant limits ([`engram_engine::tenant_limits`]) applied to tenant-key requests, and the
//! reading of their bodies with a bound on size and on how long the client may pause.

use crate::auth::AuthTenant;
use crate::error::{error, too_many_requests};
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use axum::Extension;
use engram_engine::config::LimitsConfig;
use engram_engine::tenant_limits::{Cost, Refusal, TenantLimits};
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the tenant-route middleware enforces.
pub struct RequestLimits {
    /// The engine's, shared with the Kafka source: a tenant has one budget whatever the route.
    pub tenants: Arc<TenantLimits>,
    /// The longest pause between two pieces of a request body (`limits.idle_timeout_s`); `None`:
    /// no bound.
    pub body_idle_timeout: Option<Duration>,
    /// The largest body read ([`crate::MAX_BODY_BYTES`]).
    pub max_body_bytes: usize,
}

impl RequestLimits {
    pub fn from_config(
        config: &LimitsConfig,
        tenants: Arc<TenantLimits>,
        max_body_bytes: usize,
    ) -> Self {
        RequestLimits {
            tenants,
            body_idle_timeout: (config.idle_timeout_s > 0)
                .then(|| Duration::from_secs(config.idle_timeout_s)),
            max_body_bytes,
        }
    }
}

fn refused(tenant: &str, refusal: Refusal) -> Response {
    tracing::debug!(tenant, limit = refusal.limit, "rate limited");
    too_many_requests(
        format!(
            "tenant {tenant:?} is over its limit of {} {} per second (limits.{}_per_s); retry after {} s",
            refusal.per_second,
            refusal.limit,
            refusal.limit,
            refusal.retry_after_secs()
        ),
        refusal.retry_after_secs(),
    )
}

/// Middleware of the tenant routes (after the key is checked): charges the request, its body's
/// bytes and, for `POST /v1/events`, its events to the key's tenant; `429` with `Retry-After`
/// when any limit refuses. The body is read here, whole (`413` past the size bound, `408` when
/// the client pauses longer than the idle timeout), and handed on as it was.
pub(crate) async fn limit_tenant_requests(
    State(limits): State<Arc<RequestLimits>>,
    Extension(auth): Extension<AuthTenant>,
    req: Request,
    next: Next,
) -> Response {
    let tenant = auth.0.as_str();
    let declared_bytes = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
        .unwrap_or(0);
    // refuse before reading a body that would be refused anyway
    let known = Cost {
        requests: 1,
        events: 0,
        bytes: declared_bytes,
    };
    if let Err(refusal) = limits.tenants.check(tenant, known, Instant::now()) {
        return refused(tenant, refusal);
    }
    let (parts, body) = req.into_parts();
    let body = match read_body(body, limits.max_body_bytes, limits.body_idle_timeout).await {
        Ok(body) => body,
        Err(resp) => return resp,
    };
    let events = if parts.method == Method::POST && parts.uri.path() == "/v1/events" {
        events_in_body(&body)
    } else {
        0
    };
    let cost = Cost {
        requests: 1,
        events,
        bytes: body.len() as u64,
    };
    if let Err(refusal) = limits.tenants.admit(tenant, cost, Instant::now()) {
        return refused(tenant, refusal);
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

/// The whole body: at most `max_bytes` (else `413`), no pause between pieces longer than
/// `idle_timeout` (else `408`).
async fn read_body(
    body: Body,
    max_bytes: usize,
    idle_timeout: Option<Duration>,
) -> Result<Bytes, Response> {
    let mut stream = body.into_data_stream();
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    loop {
        let next = match idle_timeout {
            Some(limit) => tokio::time::timeout(limit, stream.next())
                .await
                .map_err(|_| {
                    error(
                        StatusCode::REQUEST_TIMEOUT,
                        "$",
                        format!(
                            "the request body paused for more than {} s (limits.idle_timeout_s)",
                            limit.as_secs()
                        ),
                    )
                })?,
            None => stream.next().await,
        };
        match next {
            None => break,
            Some(Ok(chunk)) => {
                total += chunk.len();
                if total > max_bytes {
                    return Err(error(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        "$",
                        format!("the request body is larger than {max_bytes} bytes"),
                    ));
                }
                chunks.push(chunk);
            }
            Some(Err(err)) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    "$",
                    format!("reading the request body failed: {err}"),
                ))
            }
        }
    }
    Ok(match chunks.len() {
        1 => chunks.pop().expect("one chunk"),
        _ => chunks.concat().into(),
    })
}

/// How many events a `POST /v1/events` body holds: an array's elements (counted without
/// building them), else 1. A body that is not JSON counts 1 (it is refused as one).
pub fn events_in_body(body: &[u8]) -> u64 {
    struct Elements;
    impl<'de> serde::de::Visitor<'de> for Elements {
        type Value = u64;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON array")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
            let mut n = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                n += 1;
            }
            Ok(n)
        }
    }
    struct Count(u64);
    impl<'de> serde::Deserialize<'de> for Count {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_seq(Elements).map(Count)
        }
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return 1;
    }
    serde_json::from_slice::<Count>(body).map_or(1, |c| c.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_counted_per_array_element() {
        assert_eq!(events_in_body(br#"{"kind": "interaction"}"#), 1);
        assert_eq!(events_in_body(br#" [{"a": [1, 2]}, {"b": {}}, 3] "#), 3);
        assert_eq!(events_in_body(b"[]"), 0);
        assert_eq!(events_in_body(b"[1, 2,"), 1);
        assert_eq!(events_in_body(b"not json"), 1);
    }
}
