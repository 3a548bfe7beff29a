//! The HTTP listener: an accept loop over [`crate::router`] that bounds what a client can hold
//! (`[limits]` in the configuration) where a plain `axum::serve` bounds nothing:
//!
//! - a request's head must arrive within `header_read_timeout_s` of the server starting to
//!   wait for it, so a client that sends part of its headers and then nothing (slowloris) is
//!   disconnected, and a kept-alive connection without a next request is closed after as long;
//! - an answer's bytes must keep leaving: a write that makes no progress for `write_timeout_s`
//!   (the client stopped reading) ends the connection ([`crate::write_deadline`]);
//! - at most `max_connections` connections are served at once. One beyond the cap is not
//!   accepted until another closes: it waits in the kernel's backlog (its connect succeeds, its
//!   request is answered once a slot frees), so a burst is delayed rather than refused, and the
//!   server never holds more sockets than the cap.
//!
//! Shutdown is graceful, as with `axum::serve(…).with_graceful_shutdown`: when `shutdown`
//! completes no connection is accepted any more, idle connections close, and requests in
//! progress finish before [`serve_bounded`] returns.

use crate::write_deadline::WriteDeadline;
use axum::Router;
use engram_engine::config::LimitsConfig;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

/// What one connection may hold, and how many are served at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// See the module documentation; `None`: no bound.
    pub header_read_timeout: Option<Duration>,
    /// See the module documentation; `None`: no bound.
    pub write_timeout: Option<Duration>,
    /// Connections served at once; `None`: no cap.
    pub max_connections: Option<usize>,
}

impl ConnectionLimits {
    /// From `[limits]`: `header_read_timeout_s`, `write_timeout_s` and `max_connections`
    /// (`0`: none).
    pub fn from_config(config: &LimitsConfig) -> Self {
        ConnectionLimits {
            header_read_timeout: (config.header_read_timeout_s > 0)
                .then(|| Duration::from_secs(config.header_read_timeout_s)),
            write_timeout: (config.write_timeout_s > 0)
                .then(|| Duration::from_secs(config.write_timeout_s)),
            max_connections: (config.max_connections > 0).then_some(config.max_connections),
        }
    }
}

/// Serves `router` on `listener` within `limits` until `shutdown` completes, then closes
/// gracefully (see the module documentation).
pub async fn serve_bounded(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let slots = limits
        .max_connections
        .map(|n| Arc::new(Semaphore::new(n.min(Semaphore::MAX_PERMITS))));
    // every connection task holds a receiver: `closed()` is when the last one has ended
    let (closing_tx, closing_rx) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        // take a slot before accepting: beyond the cap, connections wait in the backlog
        let slot = match &slots {
            Some(slots) => tokio::select! {
                _ = &mut shutdown => break,
                slot = slots.clone().acquire_owned() => Some(slot.expect("the semaphore is never closed")),
            },
            None => None,
        };
        let stream = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => stream,
                Err(err) => {
                    accept_failed(err).await;
                    continue;
                }
            },
        };
        let connection = serve_connection(stream, router.clone(), limits, closing_rx.clone(), slot);
        tokio::spawn(connection);
    }
    drop(listener);
    drop(closing_rx);
    let _ = closing_tx.send(true);
    closing_tx.closed().await;
    Ok(())
}

/// After a failed accept: errors of one connection are passed over; others (out of file
/// descriptors) get a pause first, so the loop does not spin while they last.
async fn accept_failed(err: std::io::Error) {
    use std::io::ErrorKind as K;
    if matches!(
        err.kind(),
        K::ConnectionAborted | K::ConnectionReset | K::ConnectionRefused | K::Interrupted
    ) {
        return;
    }
    tracing::error!(%err, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// Serves one connection (HTTP/1.1, as `axum::serve` does without its `http2` feature) until
/// it closes; on `closing`, finishes the request in progress and closes. `_slot` is given back
/// when the connection ends.
async fn serve_connection(
    stream: TcpStream,
    router: Router,
    limits: ConnectionLimits,
    mut closing: watch::Receiver<bool>,
    _slot: Option<OwnedSemaphorePermit>,
) {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    let stream = WriteDeadline::new(stream, limits.write_timeout);
    let connection =
        builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router));
    tokio::pin!(connection);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(err) = result {
                    // a client that went away or timed out: nothing the server did wrong
                    tracing::debug!(%err, "connection ended with an error");
                }
                return;
            }
            _ = closing.wait_for(|closing| *closing), if !shutting_down => {
                shutting_down = true;
                connection.as_mut().graceful_shutdown();
            }
        }
    }
}
