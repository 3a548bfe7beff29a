//! The speakers of each user's conversations, kept between recalls.
//!
//! A question naming a speaker is embedded without the name ([`super::turn_scoring::without_speakers`]),
//! and the speakers are only known from the user's turns. Without this cache every such
//! question costs a first vector search to find them, then a second embedding and search.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Users held before the cache starts over (a user's entry is a few names).
const MAX_USERS: usize = 100_000;

/// `(tenant, user)` → the speakers found among all of the user's turns, with the user's episode
/// count then. An entry is used only while the user still has that many episodes, so a new
/// turn (or an erased one) makes the next recall find the speakers again.
#[derive(Default)]
pub struct SpeakerCache {
    users: Mutex<HashMap<(String, String), (usize, Arc<[String]>)>>,
}

impl SpeakerCache {
    /// The speakers of the user when they were found with the user at `episodes` episodes.
    pub fn get(&self, tenant: &str, user: &str, episodes: usize) -> Option<Arc<[String]>> {
        let users = self.users.lock().unwrap();
        let key = (tenant.to_string(), user.to_string());
        users
            .get(&key)
            .filter(|(n, _)| *n == episodes)
            .map(|(_, s)| s.clone())
    }

    /// Forgets a user's speakers, or with no user every user's of the tenant (erasure: no
    /// erased text stays in memory).
    pub fn forget(&self, tenant: &str, user: Option<&str>) {
        let mut users = self.users.lock().unwrap();
        users.retain(|(t, u), _| !(t == tenant && user.is_none_or(|user| user == u)));
    }

    /// Keeps the speakers found among all `episodes` turns of the user.
    pub fn put(&self, tenant: &str, user: &str, episodes: usize, speakers: Vec<String>) {
        let mut users = self.users.lock().unwrap();
        if users.len() >= MAX_USERS {
            users.clear();
        }
        let key = (tenant.to_string(), user.to_string());
        users.insert(key, (episodes, speakers.into()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_holds_while_the_user_has_as_many_episodes() {
        let cache = SpeakerCache::default();
        assert!(cache.get("t", "u", 10).is_none());
        cache.put("t", "u", 10, vec!["Caroline".into(), "Melanie".into()]);
        assert_eq!(cache.get("t", "u", 10).unwrap().len(), 2);
        assert!(cache.get("t", "u", 11).is_none(), "a new turn");
        assert!(cache.get("t", "other", 10).is_none());
        assert!(cache.get("other", "u", 10).is_none());
        // erasure: the user's entry, or the whole tenant's
        cache.put("t", "v", 3, vec!["Ann".into()]);
        cache.put("s", "u", 3, vec!["Bo".into()]);
        cache.forget("t", Some("u"));
        assert!(cache.get("t", "u", 10).is_none());
        assert!(cache.get("t", "v", 3).is_some());
        cache.forget("t", None);
        assert!(cache.get("t", "v", 3).is_none());
        assert!(cache.get("s", "u", 3).is_some(), "another tenant is kept");
    }
}
