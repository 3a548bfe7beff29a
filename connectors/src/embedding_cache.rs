//! The embedder's text → vector cache, one namespace per tenant.
//!
//! A cached text answers faster than one run through the model. Were the cache shared, a
//! tenant could time an embedding and learn that another tenant had embedded the same text.
//! Here a text is a hit only for the tenant that embedded it: each tenant's texts live in that
//! tenant's own map, and a lookup never reads another tenant's map.
//!
//! The total is bounded by a number of entries. When an insert would go over it, the whole
//! namespace of the tenant holding the most entries is dropped (usually the tenant that is
//! filling the cache, so one tenant's volume evicts its own texts before anyone else's).

use std::collections::HashMap;

/// Vectors of texts already embedded, by tenant then text, within `capacity` entries in all.
#[derive(Debug, Default)]
pub struct EmbeddingCache {
    capacity: usize,
    by_tenant: HashMap<String, HashMap<String, Vec<f32>>>,
    entries: usize,
    hits: u64,
}

impl EmbeddingCache {
    /// An empty cache of at most `capacity` texts across all tenants (0: nothing is kept).
    pub fn new(capacity: usize) -> Self {
        EmbeddingCache {
            capacity,
            ..Default::default()
        }
    }

    /// The vector `tenant` cached for `text`; a hit is counted in [`EmbeddingCache::hits`].
    /// Another tenant's entry for the same text is never returned.
    pub fn get(&mut self, tenant: &str, text: &str) -> Option<Vec<f32>> {
        let vector = self.by_tenant.get(tenant)?.get(text)?.clone();
        self.hits += 1;
        Some(vector)
    }

    /// Keeps `vector` as `tenant`'s embedding of `text` (nothing with capacity 0). When the
    /// cache is full, the largest tenant namespace is dropped first.
    pub fn insert(&mut self, tenant: &str, text: &str, vector: Vec<f32>) {
        if self.capacity == 0 {
            return;
        }
        let known = self
            .by_tenant
            .get(tenant)
            .is_some_and(|texts| texts.contains_key(text));
        if !known && self.entries >= self.capacity {
            self.drop_largest_tenant();
        }
        let texts = self.by_tenant.entry(tenant.to_string()).or_default();
        if texts.insert(text.to_string(), vector).is_none() {
            self.entries += 1;
        }
    }

    /// Drops every entry of `tenant` (after an erase in that tenant, none of its texts stays
    /// in memory here). Other tenants' entries are kept.
    pub fn forget_tenant(&mut self, tenant: &str) {
        if let Some(texts) = self.by_tenant.remove(tenant) {
            self.entries -= texts.len();
        }
    }

    /// Texts cached, all tenants together.
    pub fn len(&self) -> usize {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Texts `tenant` has cached.
    pub fn tenant_len(&self, tenant: &str) -> usize {
        self.by_tenant.get(tenant).map_or(0, HashMap::len)
    }

    /// Lookups answered from the cache since it was made.
    pub fn hits(&self) -> u64 {
        self.hits
    }

    fn drop_largest_tenant(&mut self) {
        let largest = self
            .by_tenant
            .iter()
            .max_by_key(|(_, texts)| texts.len())
            .map(|(tenant, _)| tenant.clone());
        if let Some(tenant) = largest {
            self.forget_tenant(&tenant);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_a_hit_only_for_the_tenant_that_embedded_it() {
        let mut cache = EmbeddingCache::new(10);
        cache.insert("acme", "my dog is called Rex", vec![1.0, 0.0]);
        assert_eq!(cache.get("globex", "my dog is called Rex"), None);
        assert_eq!(cache.hits(), 0, "a miss in another tenant is not a hit");
        assert_eq!(
            cache.get("acme", "my dog is called Rex"),
            Some(vec![1.0, 0.0])
        );
        assert_eq!(cache.hits(), 1);
        // the other tenant embedding the same text gets its own entry
        cache.insert("globex", "my dog is called Rex", vec![0.0, 1.0]);
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.get("globex", "my dog is called Rex"),
            Some(vec![0.0, 1.0])
        );
    }

    #[test]
    fn forgetting_a_tenant_keeps_the_others() {
        let mut cache = EmbeddingCache::new(10);
        cache.insert("acme", "a", vec![1.0]);
        cache.insert("acme", "b", vec![2.0]);
        cache.insert("globex", "a", vec![3.0]);
        cache.forget_tenant("acme");
        assert_eq!(cache.get("acme", "a"), None);
        assert_eq!(cache.tenant_len("acme"), 0);
        assert_eq!(cache.get("globex", "a"), Some(vec![3.0]));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_total_is_bounded_and_the_largest_tenant_leaves_first() {
        let mut cache = EmbeddingCache::new(4);
        cache.insert("quiet", "q", vec![0.0]);
        for text in ["1", "2", "3"] {
            cache.insert("loud", text, vec![1.0]);
        }
        assert_eq!(cache.len(), 4);
        // re-inserting a known text adds nothing and evicts nothing
        cache.insert("loud", "3", vec![1.5]);
        assert_eq!(cache.len(), 4);
        cache.insert("loud", "4", vec![1.0]);
        assert_eq!(
            cache.tenant_len("quiet"),
            1,
            "the smaller tenant keeps its text"
        );
        assert_eq!(cache.tenant_len("loud"), 1);
        assert!(cache.len() <= 4);
        let mut off = EmbeddingCache::new(0);
        off.insert("t", "x", vec![1.0]);
        assert!(off.is_empty());
    }
}
