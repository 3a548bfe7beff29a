//! The maintained views as the serving side reads them: one consistent snapshot at one
//! timestamp (an input-log offset), never a mix of two.

use engram_operators::SessionKey;
use std::collections::HashMap;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Every view, as of `as_of`: all input below that log offset is reflected, none above.
#[derive(Debug, Clone, Default)]
pub struct MemoryViews {
    pub as_of: u64,
    /// `NEXT` edges: episode id → the next episode of its session.
    pub next: HashMap<String, String>,
    /// The reverse of `next`.
    pub prev: HashMap<String, String>,
    /// Episodes per session.
    pub session_sizes: HashMap<SessionKey, usize>,
}

/// A change to the views, produced by the dataflow.
#[derive(Debug, Clone)]
pub enum ViewUpdate {
    NextEdge(SessionKey, (String, String)),
    SessionEpisode(SessionKey),
}

impl MemoryViews {
    pub(crate) fn apply(&mut self, update: ViewUpdate, diff: isize) {
        match update {
            ViewUpdate::NextEdge(_, (from, to)) => {
                if diff > 0 {
                    self.next.insert(from.clone(), to.clone());
                    self.prev.insert(to, from);
                } else {
                    // An edge retracted and its replacement inserted at the same time may come
                    // in either order: remove only the edge that is being retracted.
                    if self.next.get(&from) == Some(&to) {
                        self.next.remove(&from);
                    }
                    if self.prev.get(&to) == Some(&from) {
                        self.prev.remove(&to);
                    }
                }
            }
            ViewUpdate::SessionEpisode(key) => {
                let n = self.session_sizes.entry(key.clone()).or_insert(0);
                *n = (*n as isize + diff).max(0) as usize;
                if *n == 0 {
                    self.session_sizes.remove(&key);
                }
            }
        }
    }

    /// Episodes held for a user, over all sessions.
    pub fn user_episode_count(&self, tenant: &str, user: &str) -> usize {
        self.session_sizes
            .iter()
            .filter(|((t, u, _), _)| t == tenant && u == user)
            .map(|(_, n)| n)
            .sum()
    }
}

/// The views shared between the dataflow and readers. The dataflow applies all updates of a
/// timestamp under one write lock; a reader holds the read guard for its whole request, so it
/// sees every view at one timestamp.
#[derive(Default)]
pub struct SharedViews {
    current: RwLock<MemoryViews>,
}

impl SharedViews {
    pub fn read(&self) -> RwLockReadGuard<'_, MemoryViews> {
        self.current.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, MemoryViews> {
        self.current.write().unwrap_or_else(|p| p.into_inner())
    }
}
