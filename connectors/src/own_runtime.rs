//! A tokio runtime of its own, for Lance calls made from synchronous code: a timely worker, the
//! ingestor, or a blocking call inside some other runtime's task, where blocking on that
//! runtime's handle would stall it or panic.

use std::future::Future;

/// Such a runtime serves a few callers (the held events, reads of the events archive); tokio's
/// default of 512 blocking threads would let a burst of reads leave dozens of idle threads
/// holding memory, as the server's pool did (`Config::blocking_threads`).
const BLOCKING_THREADS: usize = 4;

pub struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl OwnRuntime {
    /// A runtime with one worker thread named `name`, and a blocking pool (Lance's file reads)
    /// of at most [`BLOCKING_THREADS`].
    pub fn new(name: &str) -> std::io::Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(BLOCKING_THREADS)
            .thread_name(name)
            .enable_all()
            .build()?;
        Ok(OwnRuntime(Some(runtime)))
    }

    /// Runs `future` to completion, on a thread of its own: a caller inside another runtime
    /// neither stalls it on this runtime's work nor panics for blocking inside it.
    pub fn block_on<F>(&self, future: F) -> F::Output
    where
        F: Future + Send,
        F::Output: Send,
    {
        let runtime = self.0.as_ref().expect("the runtime lives until drop");
        std::thread::scope(|s| {
            s.spawn(|| runtime.block_on(future))
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        // dropping a runtime blocks, which an async caller may not do
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}
