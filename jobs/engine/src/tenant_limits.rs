//! Per-tenant rate limits (`[limits]` in the configuration): requests, events and bytes per
//! second, each a token bucket per tenant, one set of buckets per tenant whatever the route. Over
//! HTTP a request over any of them is refused whole with `429` and `Retry-After`, and takes
//! nothing from the others; from Kafka, where nobody can be answered, the tenant's messages wait
//! in the consumer until the buckets admit them (the Kafka source's throttle).
//!
//! Everything here is pure: the caller passes the time, so the tests use known instants.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A token bucket: holds at most `burst` tokens, refilled at `rate` tokens a second, starting
/// full.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    /// A full bucket. `rate` and `burst` must be positive.
    pub fn new(rate: f64, burst: f64, now: Instant) -> Self {
        assert!(
            rate > 0.0 && burst > 0.0,
            "a bucket needs a positive rate and burst"
        );
        TokenBucket {
            rate,
            burst,
            tokens: burst,
            refilled_at: now,
        }
    }

    /// Adds what accrued since the last refill, up to `burst`. A `now` earlier than the last
    /// refill adds nothing.
    fn refill(&mut self, now: Instant) {
        let elapsed = now
            .saturating_duration_since(self.refilled_at)
            .as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate).min(self.burst);
        self.refilled_at = self.refilled_at.max(now);
    }

    /// How long until `cost` tokens could be taken: zero when they can be now. A cost above
    /// `burst` can be taken once the bucket is full (leaving it in debt, so the average rate
    /// still holds): otherwise a large request would never be served.
    pub fn wait_for(&mut self, cost: f64, now: Instant) -> Duration {
        self.refill(now);
        let needed = cost.min(self.burst);
        if self.tokens >= needed {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((needed - self.tokens) / self.rate)
        }
    }

    /// Takes `cost` tokens (call after [`TokenBucket::wait_for`] answered zero at `now`).
    fn take(&mut self, cost: f64) {
        self.tokens -= cost;
    }

    /// Takes `cost` tokens when [`TokenBucket::wait_for`] allows it now; else how long to wait.
    pub fn try_take(&mut self, cost: f64, now: Instant) -> Result<(), Duration> {
        match self.wait_for(cost, now) {
            Duration::ZERO => {
                self.take(cost);
                Ok(())
            }
            wait => Err(wait),
        }
    }
}

/// The per-tenant limits: each a rate per second, `0` for no limit; each bucket holds
/// `burst_s` seconds of its rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    pub requests_per_s: u64,
    pub events_per_s: u64,
    pub bytes_per_s: u64,
    pub burst_s: f64,
}

/// What one request costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub requests: u64,
    pub events: u64,
    pub bytes: u64,
}

/// Which limit refused a request and when to try again.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// `requests`, `events` or `bytes`.
    pub limit: &'static str,
    pub per_second: u64,
    pub retry_after: Duration,
}

impl Refusal {
    /// `Retry-After` in whole seconds: the wait rounded up, at least 1.
    pub fn retry_after_secs(&self) -> u64 {
        (self.retry_after.as_secs_f64().ceil() as u64).max(1)
    }
}

/// One tenant's buckets, in the order of [`RateLimits`] (`None`: that limit is off).
struct TenantBuckets([Option<TokenBucket>; 3]);

/// Every tenant's buckets, created on the tenant's first request.
pub struct TenantLimits {
    limits: RateLimits,
    tenants: Mutex<HashMap<String, TenantBuckets>>,
}

impl TenantLimits {
    /// The limits `[limits]` sets.
    pub fn from_config(config: &crate::config::LimitsConfig) -> Self {
        TenantLimits::new(RateLimits {
            requests_per_s: config.requests_per_s,
            events_per_s: config.events_per_s,
            bytes_per_s: config.bytes_per_s,
            burst_s: config.burst_s,
        })
    }

    pub fn new(limits: RateLimits) -> Self {
        TenantLimits {
            limits,
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// Whether any limit is on.
    pub fn enabled(&self) -> bool {
        self.limits_by_name().iter().any(|(_, rate)| *rate > 0)
    }

    fn limits_by_name(&self) -> [(&'static str, u64); 3] {
        let l = &self.limits;
        [
            ("requests", l.requests_per_s),
            ("events", l.events_per_s),
            ("bytes", l.bytes_per_s),
        ]
    }

    /// Charges `cost` to `tenant` when every limit admits it now; otherwise charges nothing and
    /// names the limit that must wait longest.
    pub fn admit(&self, tenant: &str, cost: Cost, now: Instant) -> Result<(), Refusal> {
        self.charge(tenant, cost, now, true)
    }

    /// Like [`TenantLimits::admit`] but charges nothing either way: a request whose cost is
    /// partly known (its body not read yet) can be refused early.
    pub fn check(&self, tenant: &str, cost: Cost, now: Instant) -> Result<(), Refusal> {
        self.charge(tenant, cost, now, false)
    }

    fn charge(&self, tenant: &str, cost: Cost, now: Instant, take: bool) -> Result<(), Refusal> {
        if !self.enabled() {
            return Ok(());
        }
        let limits = self.limits_by_name();
        let mut tenants = self.tenants.lock().unwrap_or_else(|e| e.into_inner());
        let buckets = tenants.entry(tenant.to_string()).or_insert_with(|| {
            TenantBuckets(limits.map(|(_, rate)| {
                (rate > 0).then(|| {
                    let rate = rate as f64;
                    TokenBucket::new(rate, (rate * self.limits.burst_s).max(1.0), now)
                })
            }))
        });
        let costs = [cost.requests, cost.events, cost.bytes].map(|c| c as f64);
        let mut refusal: Option<Refusal> = None;
        for (i, bucket) in buckets.0.iter_mut().enumerate() {
            let Some(bucket) = bucket else { continue };
            if costs[i] == 0.0 {
                continue;
            }
            let wait = bucket.wait_for(costs[i], now);
            if wait > refusal.as_ref().map_or(Duration::ZERO, |r| r.retry_after) {
                refusal = Some(Refusal {
                    limit: limits[i].0,
                    per_second: limits[i].1,
                    retry_after: wait,
                });
            }
        }
        if let Some(refusal) = refusal {
            return Err(refusal);
        }
        if take {
            for (bucket, cost) in buckets.0.iter_mut().zip(costs) {
                if let Some(bucket) = bucket {
                    bucket.take(cost);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: Duration = Duration::from_secs(1);

    #[test]
    fn a_bucket_of_10_per_s_admits_10_then_refuses_for_a_tenth_of_a_second() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 10.0, t0);
        for i in 0..10 {
            assert_eq!(bucket.try_take(1.0, t0), Ok(()), "take {i}");
        }
        let wait = bucket.try_take(1.0, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 0.1).abs() < 1e-9, "{wait:?}");
        let refusal = Refusal {
            limit: "requests",
            per_second: 10,
            retry_after: wait,
        };
        assert_eq!(refusal.retry_after_secs(), 1);
    }

    #[test]
    fn half_a_second_of_refill_admits_5() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 10.0, t0);
        assert_eq!(bucket.try_take(10.0, t0), Ok(()));
        let later = t0 + SECOND / 2;
        for i in 0..5 {
            assert_eq!(bucket.try_take(1.0, later), Ok(()), "take {i}");
        }
        assert!(bucket.try_take(1.0, later).is_err());
        // refill stops at the burst: a long pause admits 10, not more
        let much_later = later + 100 * SECOND;
        assert_eq!(bucket.try_take(10.0, much_later), Ok(()));
        assert!(bucket.try_take(1.0, much_later).is_err());
    }

    #[test]
    fn a_cost_above_the_burst_is_taken_from_a_full_bucket_and_repaid() {
        let t0 = Instant::now();
        let mut bucket = TokenBucket::new(10.0, 10.0, t0);
        assert_eq!(bucket.try_take(30.0, t0), Ok(()));
        // 20 in debt: a single token is 2.1 s away
        let wait = bucket.try_take(1.0, t0).unwrap_err();
        assert!((wait.as_secs_f64() - 2.1).abs() < 1e-9, "{wait:?}");
        assert_eq!(bucket.try_take(1.0, t0 + 3 * SECOND), Ok(()));
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        let refusal = |ms| Refusal {
            limit: "bytes",
            per_second: 1,
            retry_after: Duration::from_millis(ms),
        };
        assert_eq!(refusal(1).retry_after_secs(), 1);
        assert_eq!(refusal(1000).retry_after_secs(), 1);
        assert_eq!(refusal(1001).retry_after_secs(), 2);
        assert_eq!(refusal(29_500).retry_after_secs(), 30);
    }

    fn limits(requests: u64, events: u64, bytes: u64) -> TenantLimits {
        TenantLimits::new(RateLimits {
            requests_per_s: requests,
            events_per_s: events,
            bytes_per_s: bytes,
            burst_s: 1.0,
        })
    }

    fn cost(requests: u64, events: u64, bytes: u64) -> Cost {
        Cost {
            requests,
            events,
            bytes,
        }
    }

    #[test]
    fn tenants_have_their_own_buckets() {
        let (limits, t0) = (limits(2, 0, 0), Instant::now());
        assert!(limits.admit("acme", cost(1, 0, 0), t0).is_ok());
        assert!(limits.admit("acme", cost(1, 0, 0), t0).is_ok());
        let refusal = limits.admit("acme", cost(1, 0, 0), t0).unwrap_err();
        assert_eq!((refusal.limit, refusal.per_second), ("requests", 2));
        assert_eq!(refusal.retry_after, SECOND / 2);
        assert!(limits.admit("globex", cost(1, 0, 0), t0).is_ok());
    }

    #[test]
    fn a_refused_request_charges_no_limit() {
        let (limits, t0) = (limits(100, 10, 0), Instant::now());
        assert!(limits.admit("acme", cost(1, 8, 0), t0).is_ok());
        let refusal = limits.admit("acme", cost(1, 5, 0), t0).unwrap_err();
        assert_eq!(refusal.limit, "events");
        assert!((refusal.retry_after.as_secs_f64() - 0.3).abs() < 1e-9);
        // the refused request took no request token: 99 more fit in this instant
        for _ in 0..99 {
            assert!(limits.admit("acme", cost(1, 0, 0), t0).is_ok());
        }
        assert_eq!(
            limits.admit("acme", cost(1, 0, 0), t0).unwrap_err().limit,
            "requests"
        );
    }

    #[test]
    fn the_longest_wait_is_named_and_check_charges_nothing() {
        let (limits, t0) = (limits(10, 10, 1000), Instant::now());
        assert!(limits.admit("acme", cost(10, 10, 1000), t0).is_ok());
        // requests wait 0.1 s, bytes 0.5 s: bytes are named
        let refusal = limits.check("acme", cost(1, 0, 500), t0).unwrap_err();
        assert_eq!((refusal.limit, refusal.retry_after), ("bytes", SECOND / 2));
        let later = t0 + SECOND;
        for _ in 0..3 {
            assert!(limits.check("acme", cost(10, 10, 1000), later).is_ok());
        }
        assert!(limits.admit("acme", cost(10, 10, 1000), later).is_ok());
    }

    #[test]
    fn zero_turns_a_limit_off() {
        let (limits, t0) = (limits(0, 0, 0), Instant::now());
        assert!(!limits.enabled());
        for _ in 0..1000 {
            assert!(limits.admit("acme", cost(1, 1000, 1 << 30), t0).is_ok());
        }
    }
}
