//! The maps the views are kept in, and how one keyed update applies to them.

use std::collections::{BTreeMap, HashMap};

/// The hash maps of the views: foldhash, seeded per process. Every update looks a key up here
/// (a user's two strings, an episode's 128 bits), and SipHash cost more than the lookup.
pub type ViewMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Applies one update of a keyed view: `value` is the key's value from now on when `diff` is
/// positive; a retraction removes the key only if it still holds `value` (a replacement made at
/// the same time may already have been inserted, in either order).
pub(crate) fn set_or_clear<M: KeyedView>(map: &mut M, key: M::Key, value: M::Value, diff: isize) {
    if diff > 0 {
        map.put(key, value);
    } else {
        map.clear_if(&key, &value);
    }
}

/// The maps the views are kept in.
pub(crate) trait KeyedView {
    type Key;
    type Value;
    fn put(&mut self, key: Self::Key, value: Self::Value);
    fn clear_if(&mut self, key: &Self::Key, value: &Self::Value);
}

impl<K: Ord, V: PartialEq> KeyedView for BTreeMap<K, V> {
    type Key = K;
    type Value = V;
    fn put(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
    fn clear_if(&mut self, key: &K, value: &V) {
        if self.get(key) == Some(value) {
            self.remove(key);
        }
    }
}

impl<K: std::hash::Hash + Eq, V: PartialEq, S: std::hash::BuildHasher> KeyedView
    for HashMap<K, V, S>
{
    type Key = K;
    type Value = V;
    fn put(&mut self, key: K, value: V) {
        self.insert(key, value);
    }
    fn clear_if(&mut self, key: &K, value: &V) {
        if self.get(key) == Some(value) {
            self.remove(key);
        }
    }
}
