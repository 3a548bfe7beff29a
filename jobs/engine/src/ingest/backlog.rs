//! The ingest backlog: events accepted (appended to the log, from HTTP or Kafka) that are not
//! yet recallable. Both ends are log offsets, so the backlog is one subtraction: the ingestor
//! moves `accepted_end` on every append, the episode writer moves `recallable_end` once the
//! views hold everything below a frontier and its episodes are embedded and staged in the
//! episode store (recall finds them; their Lance commit follows within a fraction of a
//! second). Over `limit`, writers are pushed back
//! (HTTP `429`, Kafka consumers waiting) until it falls to `resume_below` ([`next_over_limit`]).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Appends remembered for the oldest pending event's age; beyond, newer appends are not noted
/// (the age then reads older than it is until the noted ones are recallable).
const MAX_NOTED_APPENDS: usize = 65_536;

/// Whether writers are pushed back after seeing `backlog`: from `limit` on, until it falls to
/// `resume_below` or under (hysteresis, so a paused Kafka consumer does not flap at the
/// limit). A `limit` of 0 never pushes back.
pub fn next_over_limit(over: bool, backlog: u64, limit: u64, resume_below: u64) -> bool {
    if limit == 0 {
        return false;
    }
    if over {
        backlog > resume_below
    } else {
        backlog >= limit
    }
}

/// Seconds a pushed-back writer should wait: the time to drain down to `resume_below` at
/// `drain_per_s` events a second, whole, between 1 and 30 (1 while the rate is unknown).
pub fn retry_after_secs(backlog: u64, resume_below: u64, drain_per_s: f64) -> u64 {
    let excess = backlog.saturating_sub(resume_below) as f64;
    if drain_per_s <= 0.0 || !drain_per_s.is_finite() {
        return 1;
    }
    ((excess / drain_per_s).ceil() as u64).clamp(1, 30)
}

pub struct Backlog {
    accepted_end: AtomicU64,
    recallable_end: AtomicU64,
    /// Push back from this backlog on (0: never).
    limit: AtomicU64,
    over: AtomicBool,
    /// `(first offset, end offset, when)` of appends not yet recallable, oldest first.
    appends: Mutex<VecDeque<(u64, u64, Instant)>>,
    /// When the backlog was opened: the time of the events the log held then.
    opened: Instant,
    /// `(when, recallable_end)` at the last drain-rate sample, and the rate it gave.
    drain: Mutex<(Instant, u64, f64)>,
    /// Writes refused (HTTP `429`) and Kafka pauses, since the start.
    pub refused_requests: AtomicU64,
    pub kafka_pauses: AtomicU64,
    /// Kafka consumers paused right now.
    pub kafka_paused: AtomicU64,
    /// Kafka messages that waited for their tenant's limits, since the start
    /// ([`super::kafka_throttle`]).
    pub kafka_throttled: AtomicU64,
    /// Kafka messages waiting for their tenant's limits now, by tenant (only tenants with some).
    pub kafka_waiting_by_tenant: Mutex<BTreeMap<String, u64>>,
}

/// The backlog as `/v1/status` and `/metrics` show it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BacklogStatus {
    /// Events accepted and not yet recallable.
    pub events: u64,
    /// Seconds since the oldest of them was accepted (0 with none).
    pub oldest_age_seconds: f64,
    /// Writers are pushed back from this backlog on (0: never).
    pub limit: u64,
    /// Whether writers are pushed back now.
    pub over_limit: bool,
    pub refused_requests: u64,
    pub kafka_pauses: u64,
    pub kafka_paused: u64,
    pub kafka_throttled: u64,
    pub kafka_waiting: u64,
}

impl Backlog {
    /// A backlog of the `end` events a log already holds (none recallable yet).
    pub fn new(end: u64) -> Self {
        let now = Instant::now();
        Backlog {
            accepted_end: AtomicU64::new(end),
            recallable_end: AtomicU64::new(0),
            limit: AtomicU64::new(0),
            over: AtomicBool::new(false),
            appends: Mutex::new(VecDeque::new()),
            opened: now,
            drain: Mutex::new((now, 0, 0.0)),
            refused_requests: AtomicU64::new(0),
            kafka_pauses: AtomicU64::new(0),
            kafka_paused: AtomicU64::new(0),
            kafka_throttled: AtomicU64::new(0),
            kafka_waiting_by_tenant: Mutex::new(BTreeMap::new()),
        }
    }

    /// Sets the limit writers are pushed back from (0: never).
    pub fn set_limit(&self, limit: u64) {
        self.limit.store(limit, Ordering::Relaxed);
    }

    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Relaxed)
    }

    /// Writers pushed back resume once the backlog is at most this: half the limit.
    pub fn resume_below(&self) -> u64 {
        self.limit() / 2
    }

    /// Events at offsets `first..end` were appended to the log.
    pub fn accepted(&self, first: u64, end: u64) {
        self.accepted_end.fetch_max(end, Ordering::AcqRel);
        let mut appends = self.appends.lock().unwrap_or_else(|p| p.into_inner());
        if appends.len() < MAX_NOTED_APPENDS {
            appends.push_back((first, end, Instant::now()));
        }
    }

    /// Every event below `end` is recallable.
    pub fn recallable(&self, end: u64) {
        self.recallable_end.fetch_max(end, Ordering::AcqRel);
        let mut appends = self.appends.lock().unwrap_or_else(|p| p.into_inner());
        while appends.front().is_some_and(|(_, e, _)| *e <= end) {
            appends.pop_front();
        }
    }

    /// Events below this offset are recallable.
    pub fn recallable_end(&self) -> u64 {
        self.recallable_end.load(Ordering::Acquire)
    }

    /// Events accepted and not yet recallable.
    pub fn events(&self) -> u64 {
        let recallable = self.recallable_end.load(Ordering::Acquire);
        self.accepted_end
            .load(Ordering::Acquire)
            .saturating_sub(recallable)
    }

    /// How long the oldest event not yet recallable has waited (zero with none).
    pub fn oldest_age(&self) -> Duration {
        let recallable = self.recallable_end();
        if self.events() == 0 {
            return Duration::ZERO;
        }
        let appends = self.appends.lock().unwrap_or_else(|p| p.into_inner());
        match appends.front() {
            // an event the log held at the start, before any noted append
            Some((first, _, _)) if *first > recallable => self.opened.elapsed(),
            Some((_, _, at)) => at.elapsed(),
            None => self.opened.elapsed(),
        }
    }

    /// Whether writers are pushed back now (updates the hysteresis state).
    pub fn over_limit(&self) -> bool {
        let (limit, resume) = (self.limit(), self.resume_below());
        let was = self.over.load(Ordering::Acquire);
        let now = next_over_limit(was, self.events(), limit, resume);
        if now != was {
            self.over.store(now, Ordering::Release);
        }
        now
    }

    /// Seconds a refused writer should wait ([`retry_after_secs`]), by the drain rate over
    /// the last second or more.
    pub fn retry_after_secs(&self) -> u64 {
        let recallable = self.recallable_end();
        let rate = {
            let mut drain = self.drain.lock().unwrap_or_else(|p| p.into_inner());
            let elapsed = drain.0.elapsed().as_secs_f64();
            if elapsed >= 1.0 {
                let rate = recallable.saturating_sub(drain.1) as f64 / elapsed;
                *drain = (Instant::now(), recallable, rate);
            }
            drain.2
        };
        retry_after_secs(self.events(), self.resume_below(), rate)
    }

    /// The Kafka messages of `tenant` waiting for its limits now.
    pub fn kafka_waiting_for(&self, tenant: &str) -> u64 {
        self.waiting_by_tenant().get(tenant).copied().unwrap_or(0)
    }

    fn waiting_by_tenant(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, u64>> {
        self.kafka_waiting_by_tenant
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> BacklogStatus {
        BacklogStatus {
            events: self.events(),
            oldest_age_seconds: self.oldest_age().as_secs_f64(),
            limit: self.limit(),
            over_limit: self.over_limit(),
            refused_requests: self.refused_requests.load(Ordering::Relaxed),
            kafka_pauses: self.kafka_pauses.load(Ordering::Relaxed),
            kafka_paused: self.kafka_paused.load(Ordering::Relaxed),
            kafka_throttled: self.kafka_throttled.load(Ordering::Relaxed),
            kafka_waiting: self.waiting_by_tenant().values().sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_counts_accepted_events_until_they_are_recallable() {
        let b = Backlog::new(3); // three events in the log at the start
        assert_eq!(b.events(), 3);
        b.accepted(3, 10);
        assert_eq!(b.events(), 10);
        b.recallable(4);
        assert_eq!(b.events(), 6);
        // a frontier never moves back
        b.recallable(2);
        assert_eq!(b.events(), 6);
        b.recallable(10);
        assert_eq!(b.events(), 0);
        assert_eq!(b.oldest_age(), Duration::ZERO);
    }

    #[test]
    fn the_oldest_age_is_that_of_the_append_holding_the_first_pending_event() {
        let b = Backlog::new(0);
        b.accepted(0, 2);
        let after_first = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let before_second = Instant::now();
        b.accepted(2, 5);
        // at least as old as the first append
        let lower = after_first.elapsed();
        assert!(b.oldest_age() >= lower, "{:?} < {lower:?}", b.oldest_age());
        b.recallable(2);
        // the first append is recallable: the age is the second's, younger than 30 ms ago
        let age = b.oldest_age();
        let upper = before_second.elapsed();
        assert!(age <= upper, "{age:?} > {upper:?}");
    }

    #[test]
    fn writers_are_pushed_back_from_the_limit_until_half_of_it() {
        // limit 10, resume at 5 or less
        let seen: Vec<bool> = [0, 9, 10, 7, 6, 5, 6, 9, 10, 11]
            .iter()
            .scan(false, |over, &backlog| {
                *over = next_over_limit(*over, backlog, 10, 5);
                Some(*over)
            })
            .collect();
        assert_eq!(
            seen,
            [false, false, true, true, true, false, false, false, true, true]
        );
        // no limit: never
        assert!(!next_over_limit(true, 1_000_000, 0, 0));
    }

    #[test]
    fn the_backlog_applies_its_limit_with_hysteresis() {
        let b = Backlog::new(0);
        b.set_limit(4);
        b.accepted(0, 3);
        assert!(!b.over_limit());
        b.accepted(3, 4);
        assert!(b.over_limit());
        b.recallable(1); // 3 pending: above half of 4
        assert!(b.over_limit());
        b.recallable(2); // 2 pending: resumed
        assert!(!b.over_limit());
        assert!(b.status().events == 2 && !b.status().over_limit);
    }

    #[test]
    fn retry_after_is_the_time_to_drain_to_the_resume_mark() {
        assert_eq!(retry_after_secs(1000, 500, 100.0), 5);
        assert_eq!(retry_after_secs(1001, 500, 100.0), 6);
        assert_eq!(retry_after_secs(600, 500, 1000.0), 1); // at least 1
        assert_eq!(retry_after_secs(100_000, 0, 10.0), 30); // at most 30
        assert_eq!(retry_after_secs(1000, 500, 0.0), 1); // rate unknown
    }
}
