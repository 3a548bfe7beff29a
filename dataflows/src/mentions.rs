//! A user's `MENTIONS` edges (episode → entity) as the views hold them, readable both ways:
//! the episodes that mention an entity, and the entities an episode mentions.

use crate::keyed_view::ViewMap;
use std::sync::Arc;

/// A user's `MENTIONS` edges. Each edge is counted (an episode present twice in the input
/// mentions its entities twice) and is present while its count is positive; a retraction that
/// arrives before its insertion counts below zero until the insertion comes. Episodes are held
/// as the two halves of their [`engram_operators::episode_key`].
#[derive(Debug, Clone, Default)]
pub struct Mentions {
    /// Entity name → the episodes mentioning it, with their counts.
    by_entity: ViewMap<Arc<str>, EpisodeCounts>,
    /// Episode → the entities it mentions (present edges only), in the order they arrived.
    by_episode: ViewMap<[u64; 2], Vec<Arc<str>>>,
    len: usize,
}

/// Up to this many episodes an entity's counts are a list searched in order (24 bytes an
/// episode); beyond, a hash map, so a name in every turn (a speaker's) costs O(1) an update,
/// not a shift of the whole list.
const LIST_MAX: usize = 32;

/// One entity's episodes and their counts, and how many of them are present.
#[derive(Debug, Clone)]
struct EpisodeCounts {
    present: usize,
    entries: Entries,
}

#[derive(Debug, Clone)]
enum Entries {
    Few(Vec<([u64; 2], i32)>),
    Many(ViewMap<[u64; 2], i32>),
}

impl EpisodeCounts {
    fn new() -> Self {
        EpisodeCounts {
            present: 0,
            entries: Entries::Few(Vec::new()),
        }
    }

    /// Adds `diff` to `episode`'s count; returns the count before and after.
    fn add(&mut self, episode: [u64; 2], diff: i32) -> (i32, i32) {
        let (before, after) = match &mut self.entries {
            Entries::Few(list) => match list.iter_mut().find(|(e, _)| *e == episode) {
                Some((_, n)) => {
                    *n += diff;
                    (*n - diff, *n)
                }
                None => {
                    list.push((episode, diff));
                    (0, diff)
                }
            },
            Entries::Many(map) => {
                let n = map.entry(episode).or_insert(0);
                *n += diff;
                (*n - diff, *n)
            }
        };
        if after == 0 {
            match &mut self.entries {
                Entries::Few(list) => list.retain(|(e, _)| *e != episode),
                Entries::Many(map) => {
                    map.remove(&episode);
                }
            }
        }
        if let Entries::Few(list) = &mut self.entries {
            if list.len() > LIST_MAX {
                self.entries = Entries::Many(list.drain(..).collect());
            }
        }
        match (before > 0, after > 0) {
            (false, true) => self.present += 1,
            (true, false) => self.present -= 1,
            _ => {}
        }
        (before, after)
    }

    fn is_empty(&self) -> bool {
        match &self.entries {
            Entries::Few(list) => list.is_empty(),
            Entries::Many(map) => map.is_empty(),
        }
    }

    /// The episodes with a positive count, in no particular order.
    fn present(&self) -> Box<dyn Iterator<Item = [u64; 2]> + '_> {
        match &self.entries {
            Entries::Few(list) => Box::new(list.iter().filter(|(_, n)| *n > 0).map(|(e, _)| *e)),
            Entries::Many(map) => Box::new(map.iter().filter(|(_, n)| **n > 0).map(|(e, _)| *e)),
        }
    }
}

impl Mentions {
    /// Number of edges.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every edge as `(entity, episode key)`, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Arc<str>, u128)> {
        self.by_entity
            .iter()
            .flat_map(|(name, counts)| counts.present().map(move |e| (name, join(e))))
    }

    /// The episodes mentioning `entity`, as [`engram_operators::episode_key`]s, in no
    /// particular order.
    pub fn episodes_of<'a>(&'a self, entity: &str) -> impl Iterator<Item = u128> + 'a {
        self.by_entity
            .get(entity)
            .into_iter()
            .flat_map(|counts| counts.present().map(join))
    }

    /// Number of episodes mentioning `entity`.
    pub fn episode_count(&self, entity: &str) -> usize {
        self.by_entity
            .get(entity)
            .map_or(0, |counts| counts.present)
    }

    /// The entities episode `episode` (an [`engram_operators::episode_key`]) mentions.
    pub fn entities_of(&self, episode: u128) -> &[Arc<str>] {
        self.by_episode
            .get(&halves(episode))
            .map_or(&[], |names| names.as_slice())
    }

    /// The name held for `entity`, if any edge names it (for the entities view to share).
    pub fn held_name(&self, entity: &str) -> Option<Arc<str>> {
        self.by_entity.get_key_value(entity).map(|(n, _)| n.clone())
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
        let name = match self.by_entity.get_key_value(entity) {
            Some((held, _)) => held.clone(),
            None => shared(),
        };
        let counts = self
            .by_entity
            .entry(name.clone())
            .or_insert_with(EpisodeCounts::new);
        let (before, after) = counts.add(episode, diff.clamp(-1 << 20, 1 << 20) as i32);
        if counts.is_empty() {
            self.by_entity.remove(entity);
        }
        if before <= 0 && after > 0 {
            self.by_episode.entry(episode).or_default().push(name);
            self.len += 1;
        } else if before > 0 && after <= 0 {
            self.len -= 1;
            if let Some(names) = self.by_episode.get_mut(&episode) {
                names.retain(|n| &**n != entity);
                if names.is_empty() {
                    self.by_episode.remove(&episode);
                }
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
        let mut alice: Vec<u128> = m.episodes_of("alice").collect();
        alice.sort();
        assert_eq!(alice, vec![7, 1 << 70]);
        assert_eq!(m.episode_count("berlin"), 1);
        let of_e1: Vec<&str> = m.entities_of(7).iter().map(|n| &**n).collect();
        assert_eq!(of_e1, vec!["alice", "berlin"]);
        m.apply("alice", e2, -1, name("alice"));
        assert_eq!(m.episode_count("alice"), 2, "one of two copies retracted");
        m.apply("alice", e2, -1, name("alice"));
        assert_eq!(m.episodes_of("alice").collect::<Vec<_>>(), vec![7]);
        assert!(m.entities_of(1 << 70).is_empty());
        // a retraction before its insertion: nothing is there until the insertion comes
        m.apply("zed", e1, -1, name("zed"));
        assert_eq!((m.len(), m.episode_count("zed")), (2, 0));
        assert!(!m.entities_of(7).iter().any(|n| &**n == "zed"));
        m.apply("zed", e1, 1, name("zed"));
        assert_eq!(
            (m.len(), m.episode_count("zed")),
            (2, 0),
            "the two cancel out"
        );
        m.apply("alice", e1, -1, name("alice"));
        m.apply("berlin", e1, -1, name("berlin"));
        assert!(m.is_empty());
        // a name in many episodes moves to a map and back out
        for i in 0..100u64 {
            m.apply("carol", [0, i], 1, name("carol"));
        }
        assert_eq!((m.len(), m.episode_count("carol")), (100, 100));
        assert_eq!(m.entities_of(42).len(), 1);
        for i in 0..100u64 {
            m.apply("carol", [0, i], -1, name("carol"));
        }
        assert!(
            m.by_entity.is_empty() && m.by_episode.is_empty(),
            "nothing left behind"
        );
    }
}
