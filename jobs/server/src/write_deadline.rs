//! A connection's socket whose writes give up on a client that stopped reading.
//!
//! hyper bounds how long a request's head may take to arrive, but not how long an answer may
//! take to leave: a client that sends requests (or opens a dashboard stream) and never reads
//! what comes back keeps its connection, its place under `max_connections` and the answer's
//! buffers for ever. [`WriteDeadline`] fails a write with `TimedOut` once the socket has accepted
//! no byte for `limit`; hyper then ends the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// `inner` with its writes bounded: a write, flush or shutdown that stays pending for `limit`
/// without the socket taking any byte meanwhile returns `ErrorKind::TimedOut`. Any progress
/// (a write that completes) restarts the clock. Reads are passed through untouched; with no
/// `limit`, writes too.
pub struct WriteDeadline<S> {
    inner: S,
    limit: Option<Duration>,
    /// Started when a write first found the socket full; cleared by any progress.
    stalled_since: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteDeadline<S> {
    pub fn new(inner: S, limit: Option<Duration>) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled_since: None,
        }
    }

    /// `result` of a write-side poll, turned into a timeout once the socket has been full for
    /// `limit`.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        let Some(limit) = self.limit.filter(|_| result.is_pending()) else {
            self.stalled_since = None;
            return result;
        };
        let timer = self
            .stalled_since
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        if timer.as_mut().poll(cx).is_ready() {
            self.stalled_since = None;
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", limit.as_secs_f64()),
            )));
        }
        Poll::Pending
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.bounded(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.bounded(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.bounded(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.bounded(cx, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn a_peer_that_never_reads_times_the_write_out_and_one_that_reads_does_not() {
        // an in-memory pipe of 64 bytes: the writer fills it, then waits on the reader
        let (client, server) = tokio::io::duplex(64);
        let mut bounded = WriteDeadline::new(server, Some(Duration::from_secs(2)));
        let err = bounded.write_all(&[7u8; 1000]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);

        // a reader that takes 0.1 s per 64 bytes: slow (1.6 s in all), but never 2 s without
        // progress
        let (mut client2, server2) = tokio::io::duplex(64);
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut buf = [0u8; 64];
            while got.len() < 1000 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let n = client2.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            got
        });
        let mut bounded = WriteDeadline::new(server2, Some(Duration::from_secs(2)));
        bounded.write_all(&[7u8; 1000]).await.unwrap();
        assert_eq!(reader.await.unwrap(), vec![7u8; 1000]);
        drop(client);
    }
}
