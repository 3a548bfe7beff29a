//! A user's `CO_MENTIONED` edges as the views hold them: each edge once, with its weight.

use crate::keyed_view::{KeyedView, ViewMap};
use std::sync::Arc;

/// A user's weighted `CO_MENTIONED` edges: `(a, b)` with `a < b` → the number of episodes
/// mentioning both. Each edge is held once, in `a`'s list, sorted by `b`: 24 bytes an edge,
/// where a hash map of pairs took 86 (a pair of shared names and a weight, 40 bytes, in a table
/// at 44-87% load). Readers go through [`CoMentions::weight`] and [`CoMentions::iter`].
#[derive(Debug, Clone, Default)]
pub struct CoMentions {
    by_first: ViewMap<Arc<str>, Vec<(Arc<str>, u64)>>,
    len: usize,
}

impl CoMentions {
    /// Number of edges.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The weight of the edge between `x` and `y`, named in either order.
    pub fn weight(&self, x: &str, y: &str) -> Option<u64> {
        let (a, b) = ordered(x, y);
        let list = self.by_first.get(a)?;
        let at = list.binary_search_by(|(n, _)| (**n).cmp(b)).ok()?;
        Some(list[at].1)
    }

    /// Every edge as `(a, b, weight)` with `a < b`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, &Arc<str>, u64)> {
        self.by_first
            .iter()
            .flat_map(|(a, list)| list.iter().map(move |(b, w)| (a, b, *w)))
    }

    /// Sets the weight of the edge between `x` and `y`, named in either order.
    pub fn insert(&mut self, x: Arc<str>, y: Arc<str>, weight: u64) {
        let (a, b) = ordered(x, y);
        let list = self.by_first.entry(a).or_default();
        match list.binary_search_by(|(n, _)| n.cmp(&b)) {
            Ok(at) => list[at].1 = weight,
            Err(at) => {
                // most entities are first in a few edges: grow by a quarter, not to four
                // then double
                if list.len() == list.capacity() {
                    list.reserve_exact(1 + list.len() / 4);
                }
                list.insert(at, (b, weight));
                self.len += 1;
            }
        }
    }

    /// Removes the edge between `x` and `y` if its weight is `weight`.
    pub fn remove_if(&mut self, x: &str, y: &str, weight: u64) {
        let (a, b) = ordered(x, y);
        let Some(list) = self.by_first.get_mut(a) else {
            return;
        };
        if let Ok(at) = list.binary_search_by(|(n, _)| (**n).cmp(b)) {
            if list[at].1 == weight {
                list.remove(at);
                self.len -= 1;
                if list.is_empty() {
                    self.by_first.remove(a);
                }
            }
        }
    }
}

/// Two names of an edge, the lesser first: edges are kept as `(a, b)` with `a < b`.
fn ordered<T: Ord>(x: T, y: T) -> (T, T) {
    if x <= y {
        (x, y)
    } else {
        (y, x)
    }
}

impl KeyedView for CoMentions {
    type Key = (Arc<str>, Arc<str>);
    type Value = u64;
    fn put(&mut self, (a, b): Self::Key, weight: u64) {
        self.insert(a, b, weight);
    }
    fn clear_if(&mut self, (a, b): &Self::Key, weight: &u64) {
        self.remove_if(a, b, *weight);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn co_mentions_are_found_by_either_name_and_removed_only_at_their_weight() {
        let mut edges = CoMentions::default();
        edges.insert("lisbon".into(), "alice".into(), 2);
        edges.insert("alice".into(), "bob".into(), 1);
        edges.insert("alice".into(), "carol".into(), 5);
        assert_eq!(edges.len(), 3);
        assert_eq!(edges.weight("alice", "lisbon"), Some(2));
        assert_eq!(edges.weight("lisbon", "alice"), Some(2));
        assert_eq!(edges.weight("bob", "carol"), None);
        // setting an edge again replaces its weight
        edges.insert("bob".into(), "alice".into(), 4);
        assert_eq!((edges.len(), edges.weight("alice", "bob")), (3, Some(4)));
        // a retraction of an older weight leaves the edge
        edges.remove_if("alice", "bob", 1);
        assert_eq!(edges.weight("alice", "bob"), Some(4));
        edges.remove_if("bob", "alice", 4);
        edges.remove_if("alice", "zed", 1);
        let mut all: Vec<(String, String, u64)> = edges
            .iter()
            .map(|(a, b, w)| (a.to_string(), b.to_string(), w))
            .collect();
        all.sort();
        assert_eq!(
            all,
            vec![
                ("alice".to_string(), "carol".to_string(), 5),
                ("alice".to_string(), "lisbon".to_string(), 2)
            ]
        );
        edges.remove_if("alice", "carol", 5);
        edges.remove_if("lisbon", "alice", 2);
        assert!(edges.is_empty());
        assert!(edges.by_first.is_empty(), "no empty lists are left behind");
    }
}
