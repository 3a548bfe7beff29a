//! Caps on open dashboard streams (`GET /v1/dashboard/stream`), per tenant and in all
//! (`limits.dashboard_streams_per_tenant`, `limits.dashboard_streams`): each open stream holds a
//! [`StreamSlot`], given back when the stream ends (closed by the client, the server, or a
//! revoked key), since the slot lives in the stream's state.

use engram_engine::config::LimitsConfig;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The open streams, counted per tenant and in all.
pub struct StreamSlots {
    /// `None`: no cap.
    per_tenant: Option<usize>,
    total: Option<usize>,
    open: Mutex<OpenStreams>,
}

#[derive(Default)]
struct OpenStreams {
    total: usize,
    by_tenant: HashMap<String, usize>,
}

/// Which cap refused a stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamCapReached {
    /// The tenant has this many streams open already.
    Tenant(usize),
    /// The server has this many streams open already.
    Total(usize),
}

impl std::fmt::Display for StreamCapReached {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            StreamCapReached::Tenant(n) => write!(
                f,
                "this tenant has {n} dashboard streams open, the most it may \
                 (limits.dashboard_streams_per_tenant): close one first"
            ),
            StreamCapReached::Total(n) => write!(
                f,
                "the server has {n} dashboard streams open, the most it serves \
                 (limits.dashboard_streams): try again later"
            ),
        }
    }
}

/// One open stream's place; dropping it frees the place.
pub struct StreamSlot {
    slots: Arc<StreamSlots>,
    tenant: String,
}

impl StreamSlots {
    /// `0` in either cap: no cap.
    pub fn new(per_tenant: usize, total: usize) -> Self {
        StreamSlots {
            per_tenant: (per_tenant > 0).then_some(per_tenant),
            total: (total > 0).then_some(total),
            open: Mutex::new(OpenStreams::default()),
        }
    }

    pub fn from_config(config: &LimitsConfig) -> Self {
        Self::new(
            config.dashboard_streams_per_tenant,
            config.dashboard_streams,
        )
    }

    fn open(&self) -> std::sync::MutexGuard<'_, OpenStreams> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for one more stream of `tenant`, unless the tenant's cap or the total cap is
    /// reached.
    pub fn try_open(self: &Arc<Self>, tenant: &str) -> Result<StreamSlot, StreamCapReached> {
        let mut open = self.open();
        let of_tenant = open.by_tenant.get(tenant).copied().unwrap_or(0);
        if self.per_tenant.is_some_and(|cap| of_tenant >= cap) {
            return Err(StreamCapReached::Tenant(of_tenant));
        }
        if self.total.is_some_and(|cap| open.total >= cap) {
            return Err(StreamCapReached::Total(open.total));
        }
        open.total += 1;
        *open.by_tenant.entry(tenant.to_string()).or_insert(0) += 1;
        Ok(StreamSlot {
            slots: self.clone(),
            tenant: tenant.to_string(),
        })
    }

    /// Open streams: `(of tenant, in all)`.
    pub fn open_streams(&self, tenant: &str) -> (usize, usize) {
        let open = self.open();
        let of_tenant = open.by_tenant.get(tenant).copied().unwrap_or(0);
        (of_tenant, open.total)
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open();
        open.total -= 1;
        if let Some(n) = open.by_tenant.get_mut(&self.tenant) {
            *n -= 1;
            if *n == 0 {
                // tenants with no stream leave no entry behind
                open.by_tenant.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tenant_and_the_server_have_a_cap_and_a_dropped_slot_frees_its_place() {
        let slots = Arc::new(StreamSlots::new(2, 3));
        let a1 = slots.try_open("acme").unwrap();
        let _a2 = slots.try_open("acme").unwrap();
        assert_eq!(
            slots.try_open("acme").err(),
            Some(StreamCapReached::Tenant(2))
        );
        let _g1 = slots.try_open("globex").unwrap();
        assert_eq!(
            slots.try_open("initech").err(),
            Some(StreamCapReached::Total(3))
        );
        assert_eq!(slots.open_streams("acme"), (2, 3));
        drop(a1);
        assert_eq!(slots.open_streams("acme"), (1, 2));
        let _i1 = slots.try_open("initech").unwrap();
        assert_eq!(slots.open_streams("initech"), (1, 3));
    }

    #[test]
    fn zero_is_no_cap_and_a_tenant_without_streams_leaves_no_entry() {
        let slots = Arc::new(StreamSlots::new(0, 0));
        let held: Vec<StreamSlot> = (0..100).map(|_| slots.try_open("acme").unwrap()).collect();
        assert_eq!(slots.open_streams("acme"), (100, 100));
        drop(held);
        assert_eq!(slots.open_streams("acme"), (0, 0));
        assert!(slots.open().by_tenant.is_empty());
    }
}
