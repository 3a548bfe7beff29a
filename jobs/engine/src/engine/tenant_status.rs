//! Counts of one tenant's data, for the `/v1/status` and `/metrics` a tenant's key sees, and
//! their breakdown by tenant for the operator.
//!
//! The engine-wide figures ([`super::Status`]: log offsets, Lance watermark, rows of the
//! events table, rejections, indexes) grow with every tenant's traffic, so a tenant watching
//! them would learn how much the others write. A tenant is shown only the counts below, made
//! from its own users' entries.

use super::Engine;
use engram_dataflows::views::tenant_entries;
use serde::Serialize;
use std::collections::BTreeMap;

/// One tenant's data as the engine holds it now.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TenantCounts {
    /// Users with at least one episode in the views.
    pub users: usize,
    /// The users' episodes in the views (what recall and the prompt can use once stored).
    pub episodes: usize,
    /// The users' episodes committed to Lance.
    pub episodes_stored: usize,
    /// The users' episodes in the views not yet committed to Lance (0 once every accepted
    /// message of the tenant is searchable; events not yet in the views are not counted).
    pub pending_episodes: usize,
    /// The tenant's Kafka messages waiting for its rate limits (not accepted yet).
    pub kafka_waiting: usize,
}

impl TenantCounts {
    fn add_user(&mut self, in_views: usize, stored: usize) {
        self.users += 1;
        self.episodes += in_views;
        self.episodes_stored += stored;
        self.pending_episodes += in_views.saturating_sub(stored);
    }
}

impl Engine {
    /// Seconds since the engine started (shown to every viewer of `/v1/status`).
    pub fn status_uptime_seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The counts of `tenant`'s data only (zeros for a tenant with none). Walks that tenant's
    /// users in the views (one range of the ordered map), under the views' read lock; the Lance
    /// counts are read after it is released.
    pub fn tenant_counts(&self, tenant: &str) -> TenantCounts {
        let users: Vec<(String, usize)> = tenant_entries(&self.views.read().user_episodes, tenant)
            .map(|(user, episodes)| (user.clone(), *episodes))
            .collect();
        let mut counts = TenantCounts {
            kafka_waiting: self.ingestor.backlog().kafka_waiting_for(tenant) as usize,
            ..TenantCounts::default()
        };
        for (user, in_views) in users {
            counts.add_user(in_views, self.store.user_row_count(tenant, &user));
        }
        counts
    }

    /// [`Engine::tenant_counts`] of every tenant with data in the views or a registry entry,
    /// by tenant name (the operator's breakdown).
    pub fn counts_by_tenant(&self) -> BTreeMap<String, TenantCounts> {
        let users: Vec<((String, String), usize)> = self
            .views
            .read()
            .user_episodes
            .iter()
            .map(|(key, episodes)| (key.clone(), *episodes))
            .collect();
        let mut by_tenant: BTreeMap<String, TenantCounts> = self
            .tenants
            .list()
            .into_keys()
            .map(|tenant| (tenant, TenantCounts::default()))
            .collect();
        for ((tenant, user), in_views) in users {
            let stored = self.store.user_row_count(&tenant, &user);
            by_tenant
                .entry(tenant)
                .or_default()
                .add_user(in_views, stored);
        }
        for (tenant, counts) in by_tenant.iter_mut() {
            counts.kafka_waiting = self.ingestor.backlog().kafka_waiting_for(tenant) as usize;
        }
        by_tenant
    }
}
