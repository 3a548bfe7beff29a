//! The memory dataflow's entry point: [`run_memory_dataflow`] starts the timely workers
//! ([`crate::worker`]), each running the memory model ([`crate::model`]), and the publisher
//! thread ([`crate::publish`]) that applies what they capture ([`crate::capture`]) to the views.

use crate::captured::CapturedOutputs;
use crate::clock::{EngineClock, EngineTime};
use crate::input::InputSource;
use crate::params::DataflowParams;
use crate::publish::{publish_until_closed, EpisodeBatch, Frontiers};
use crate::views::SharedViews;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};

/// A running dataflow. Dropping it does not stop it; call [`DataflowHandle::stop`].
pub struct DataflowHandle {
    stop: Arc<AtomicBool>,
    as_of: Arc<AtomicU64>,
    guards: Option<timely::communication::WorkerGuards<()>>,
    publisher: Option<std::thread::JoinHandle<()>>,
}

impl DataflowHandle {
    /// The offset below which all input is reflected in the views.
    pub fn as_of(&self) -> u64 {
        self.as_of.load(Ordering::Acquire)
    }

    /// Stops the workers and waits for them.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(g) = self.guards.take() {
            let _ = g.join();
        }
        // worker 0 has dropped its end of the publisher's channel: the publisher finishes
        if let Some(p) = self.publisher.take() {
            let _ = p.join();
        }
    }
}

impl Drop for DataflowHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// Starts `workers` timely workers running the memory dataflow.
///
/// Each worker reads its share of the input through the source `make_source(index, peers)`
/// gives it. After every step, worker 0 tells a publisher thread how far the whole dataflow
/// has got; the publisher applies all view updates at timestamps before that to `views` (one
/// write lock per publication), and sends the episodes that became visible, in log order, to
/// `episodes_out`. (Publication on a thread of its own, not on worker 0, lets the operating
/// system share it out over the cores: worker 0 would otherwise do a share of the dataflow and
/// all of the publishing, while the other workers waited for it.)
///
/// Preference lifecycles run in a second dataflow per worker whose timestamps are engine time
/// (`clock`, whole seconds): the preference traces the memory dataflow derives enter it at the
/// engine time they are seen, and the transitions it schedules become visible as engine time
/// passes them, also while no input arrives.
pub fn run_memory_dataflow<F>(
    workers: usize,
    make_source: F,
    clock: EngineClock,
    params: DataflowParams,
    views: Arc<SharedViews>,
    episodes_out: Sender<EpisodeBatch>,
) -> Result<DataflowHandle, String>
where
    F: Fn(usize, usize) -> Box<dyn InputSource> + Send + Sync + 'static,
{
    // the views compute the traces of memories no recall reinforced with the same parameters
    views.set_retention(params.retention);
    let stop = Arc::new(AtomicBool::new(false));
    let as_of = Arc::new(AtomicU64::new(0));
    let captured = CapturedOutputs::default();
    let engine_time = Arc::new(EngineTime::new(clock));
    let (frontiers_out, frontiers_in) = std::sync::mpsc::channel::<Frontiers>();
    let publisher = {
        let captured = captured.clone();
        let as_of = as_of.clone();
        std::thread::Builder::new()
            .name("engram-publish".into())
            .spawn(move || {
                publish_until_closed(frontiers_in, &captured, &views, &episodes_out, &as_of)
            })
            .map_err(|e| format!("cannot start the publisher thread: {e}"))?
    };
    let frontiers_out = Mutex::new(Some(frontiers_out));
    let stop2 = stop.clone();
    let mut config = timely::Config::process(workers.max(1));
    // Arrangements finish their merges while a worker has no input (a burst leaves them
    // half-merged, holding both inputs of each merge), not only as further updates arrive.
    differential_dataflow::configure(
        &mut config.worker,
        &differential_dataflow::Config::default().idle_merge_effort(Some(IDLE_MERGE_EFFORT)),
    );
    let guards = timely::execute(config, move |worker| {
        let source = make_source(worker.index(), worker.peers());
        // worker 0 tells the publisher; the others' ends are None
        let frontiers_out = if worker.index() == 0 {
            frontiers_out.lock().unwrap().take()
        } else {
            None
        };
        crate::worker::run_worker(
            worker,
            source,
            &captured,
            &engine_time,
            params,
            frontiers_out,
            &stop2,
        );
    })?;
    Ok(DataflowHandle {
        stop,
        as_of,
        guards: Some(guards),
        publisher: Some(publisher),
    })
}

/// Updates' worth of merging an idle arrangement does per step.
const IDLE_MERGE_EFFORT: isize = 10_000;
