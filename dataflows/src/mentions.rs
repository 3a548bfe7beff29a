//! A user's `MENTIONS` edges (episode → entity) as the views hold them, readable both ways:
//! the episodes that mention an entity, and the entities an episode mentions.

use crate::keyed_view::ViewMap;
use std::sync::Arc;

/// A user's `MENTIONS` edges. Each edge is counted (an episode present twice in the input
/// mentions its entities twice) and is present while its count is positive. Episodes are held
/// as the two halves of their [`engram_operators::episode_key`] (24 bytes an edge with its
/// count, where a `u128` would be padded to 32).
#[derive(Debug, Clone, Default)]
pub struct Mentions {
    /// Entity name → the episodes mentioning it with their counts, sorted by episode.
    by_entity: ViewMap<Arc<str>, Vec<([u64; 2], u32)>>,
    /// Episode → the entities it mentions, in the order they arrived.
    by_episode: ViewMap<[u64; 2], Vec<Arc<str>>>,
    len: usize,
}

impl Mentions {
    /// Number of edges.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The episodes mentioning `entity`, as [`engram_operators::episode_key`]s, in key order.
    pub fn episodes_of<'a>(&'a self, entity: &str) -> impl Iterator<Item = u128> + 'a {
        self.by_entity
            .get(entity)
            .into_iter()
            .flatten()
            .map(|(halves, _)| join(*halves))
    }

    /// Every edge as `(entity, episode key)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, u128)> {
        self.by_entity
            .iter()
            .flat_map(|(name, list)| list.iter().map(move |(e, _)| (name, join(*e))))
    }

    /// Number of episodes mentioning `entity`.
    pub fn episode_count(&self, entity: &str) -> usize {
        self.by_entity.get(entity).map_or(0, Vec::len)
    }

    /// The entities episode `episode` (an [`engram_operators::episode_key`]) mentions.
    pub fn entities_of(&self, episode: u128) -> &[Arc<str>] {
        self.by_episode
            .get(&halves(episode))
            .map_or(&[], |names| names.as_slice())
    }

    /// Counts the edge `episode` → `entity` in (`diff` > 0) or out; `shared` gives the name to
    /// hold (the one the entities view holds, where it does).
    pub fn apply(
        &mut self,
        entity: &str,
        episode: [u64; 2],
        diff: isize,
        shared: impl FnOnce() -> Arc<str>,
    ) {
        if diff > 0 {
            let name = match self.by_entity.get_key_value(entity) {
                Some((held, _)) => held.clone(),
                None => shared(),
            };
            let list = self.by_entity.entry(name.clone()).or_default();
            match list.binary_search_by(|(e, _)| e.cmp(&episode)) {
                Ok(at) => list[at].1 += diff as u32,
                Err(at) => {
                    list.insert(at, (episode, diff as u32));
                    self.by_episode.entry(episode).or_default().push(name);
                    self.len += 1;
                }
            }
            return;
        }
        let Some(list) = self.by_entity.get_mut(entity) else {
            return;
        };
        let Ok(at) = list.binary_search_by(|(e, _)| e.cmp(&episode)) else {
            return;
        };
        let count = &mut list[at].1;
        *count = count.saturating_sub(diff.unsigned_abs() as u32);
        if *count > 0 {
            return;
        }
        list.remove(at);
        self.len -= 1;
        if list.is_empty() {
            self.by_entity.remove(entity);
        }
        if let Some(names) = self.by_episode.get_mut(&episode) {
            names.retain(|n| &**n != entity);
            if names.is_empty() {
                self.by_episode.remove(&episode);
            }
        }
    }
}

fn halves(key: u128) -> [u64; 2] {
    engram_operators::episodes::key_halves(key)
}

fn join([high, low]: [u64; 2]) -> u128 {
    (u128::from(high) << 64) | u128::from(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> impl FnOnce() -> Arc<str> + '_ {
        move || Arc::from(n)
    }

    #[test]
    fn mentions_are_read_both_ways_and_leave_when_their_count_does() {
        let (e1, e2) = (halves(7), halves(1 << 70));
        let mut m = Mentions::default();
        m.apply("alice", e1, 1, name("alice"));
        m.apply("berlin", e1, 1, name("berlin"));
        m.apply("alice", e2, 1, name("alice"));
        // the same episode twice (a duplicate input): one edge, counted twice
        m.apply("alice", e2, 1, name("alice"));
        assert_eq!(m.len(), 3);
        assert_eq!(m.episodes_of("alice").collect::<Vec<_>>(), vec![7, 1 << 70]);
        assert_eq!(m.episode_count("berlin"), 1);
        let of_e1: Vec<&str> = m.entities_of(7).iter().map(|n| &**n).collect();
        assert_eq!(of_e1, vec!["alice", "berlin"]);
        m.apply("alice", e2, -1, name("alice"));
        assert_eq!(m.episode_count("alice"), 2, "one of two copies retracted");
        m.apply("alice", e2, -1, name("alice"));
        assert_eq!(m.episodes_of("alice").collect::<Vec<_>>(), vec![7]);
        assert!(m.entities_of(1 << 70).is_empty());
        // retracting what is not there changes nothing
        m.apply("zed", e1, -1, name("zed"));
        m.apply("alice", e2, -1, name("alice"));
        assert_eq!(m.len(), 2);
        m.apply("alice", e1, -1, name("alice"));
        m.apply("berlin", e1, -1, name("berlin"));
        assert!(m.is_empty());
        assert!(
            m.by_entity.is_empty() && m.by_episode.is_empty(),
            "nothing left behind"
        );
    }
}
