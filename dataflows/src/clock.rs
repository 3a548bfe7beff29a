//! Engine time: the clock of preference lifecycles (decay happens in engine time), the wall
//! clock or the latest event time read, shared by the workers.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// What moves engine time, the clock of preference lifecycles (decay happens in engine time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineClock {
    /// The wall clock: live serving, where memories fade while nobody writes.
    #[default]
    Wall,
    /// The latest event time read so far: replays and benchmarks, so a replay is deterministic
    /// and history decays as it did when it happened.
    Events,
}

impl std::str::FromStr for EngineClock {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "wall" => Ok(EngineClock::Wall),
            "events" => Ok(EngineClock::Events),
            other => Err(format!("expected \"wall\" or \"events\", got {other:?}")),
        }
    }
}

/// Engine time in whole seconds since the Unix epoch, shared by the workers: the wall clock,
/// or the latest event time any worker has read.
pub(crate) struct EngineTime {
    clock: EngineClock,
    latest_event_secs: AtomicU64,
    /// The least second not yet closed by any worker's lifecycle input.
    closed_before: AtomicU64,
}

impl EngineTime {
    pub(crate) fn new(clock: EngineClock) -> Self {
        EngineTime {
            clock,
            latest_event_secs: AtomicU64::new(0),
            closed_before: AtomicU64::new(0),
        }
    }

    pub(crate) fn saw_event_at(&self, micros: i64) {
        let secs = micros.div_euclid(1_000_000).max(0) as u64;
        self.latest_event_secs.fetch_max(secs, Ordering::AcqRel);
    }

    /// Records that a worker closes every second before `secs`; returns the latest such bound
    /// of all workers, to which every worker advances.
    pub(crate) fn close_before(&self, secs: u64) -> u64 {
        self.closed_before
            .fetch_max(secs, Ordering::AcqRel)
            .max(secs)
    }

    pub(crate) fn now_secs(&self) -> u64 {
        match self.clock {
            EngineClock::Wall => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
            EngineClock::Events => self.latest_event_secs.load(Ordering::Acquire),
        }
    }
}
