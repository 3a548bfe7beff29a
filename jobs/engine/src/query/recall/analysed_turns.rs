//! The analysed words ([`super::bm25::analyse`]) of each user's turns, kept between recalls.
//!
//! When recall scores every turn of a user in process ([`super::bm25`]), each turn's text is
//! split, lower-cased and stemmed; without this cache that is done again for every turn at every
//! recall (about a third of a recall's time on LoCoMo). An entry is keyed by the episode id and
//! holds a hash of the text it was made from, so a rectified turn is analysed anew.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Turns held before the cache starts over (an entry is the turn's stemmed words, a few
/// hundred bytes).
const MAX_TURNS: usize = 200_000;

type Words = Arc<[String]>;

/// `(tenant, user)` → episode id → (hash of the text, its analysed words). Per user, so that an
/// erasure forgets a user's words and no tenant's recall is faster for another's texts.
#[derive(Default)]
pub struct AnalysedTurns {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    users: HashMap<(String, String), HashMap<String, (u64, Words)>>,
    turns: usize,
}

impl AnalysedTurns {
    /// The analysed words of each of the user's `(episode id, text)` turns, in order: from the
    /// cache where it holds that text, else analysed by `analyse` now and kept.
    pub fn words<'a>(
        &self,
        tenant: &str,
        user: &str,
        turns: impl IntoIterator<Item = (&'a str, &'a str)>,
        analyse: impl Fn(&str) -> Vec<String>,
    ) -> Vec<Words> {
        let turns: Vec<(&str, &str)> = turns.into_iter().collect();
        let key = (tenant.to_string(), user.to_string());
        let mut found: Vec<Option<Words>> = {
            let state = self.state.lock().unwrap();
            let held = state.users.get(&key);
            turns
                .iter()
                .map(|(id, text)| {
                    let (hash, words) = held?.get(*id)?;
                    (*hash == text_hash(text)).then(|| words.clone())
                })
                .collect()
        };
        // analysed outside the lock: recalls of other users go on meanwhile
        let mut fresh: Vec<(String, u64, Words)> = Vec::new();
        for ((id, text), slot) in turns.iter().zip(found.iter_mut()) {
            if slot.is_none() {
                let words: Words = analyse(text).into();
                fresh.push((id.to_string(), text_hash(text), words.clone()));
                *slot = Some(words);
            }
        }
        if !fresh.is_empty() {
            let mut state = self.state.lock().unwrap();
            if state.turns + fresh.len() > MAX_TURNS {
                state.users.clear();
                state.turns = 0;
            }
            let held = state.users.entry(key).or_default();
            let before = held.len();
            for (id, hash, words) in fresh {
                held.insert(id, (hash, words));
            }
            let added = held.len() - before;
            state.turns += added;
        }
        found
            .into_iter()
            .map(|w| w.expect("filled above"))
            .collect()
    }

    /// Forgets a user's words, or with no user every user's of the tenant (erasure: no erased
    /// text stays in memory, not even stemmed).
    pub fn forget(&self, tenant: &str, user: Option<&str>) {
        let mut state = self.state.lock().unwrap();
        let mut removed = 0;
        state.users.retain(|(t, u), turns| {
            let erased = t == tenant && user.is_none_or(|user| user == u);
            if erased {
                removed += turns.len();
            }
            !erased
        });
        state.turns -= removed;
    }

    /// Turns held, for tests.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.state.lock().unwrap().turns
    }
}

fn text_hash(text: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn a_turn_is_analysed_once_until_its_text_changes() {
        let cache = AnalysedTurns::default();
        let calls = Cell::new(0);
        let analyse = |t: &str| {
            calls.set(calls.get() + 1);
            t.split(' ').map(str::to_string).collect()
        };
        let first = cache.words("t", "u", [("e1", "a b"), ("e2", "c")], analyse);
        assert_eq!(calls.get(), 2);
        assert_eq!(&*first[0], ["a", "b"]);
        assert_eq!(&*first[1], ["c"]);
        let again = cache.words("t", "u", [("e2", "c"), ("e1", "a b")], analyse);
        assert_eq!(calls.get(), 2, "both held");
        assert_eq!(&*again[0], ["c"]);
        // a rectified text is analysed anew; another user's or tenant's turns are their own
        let changed = cache.words("t", "u", [("e1", "a d")], analyse);
        assert_eq!(&*changed[0], ["a", "d"]);
        assert_eq!(calls.get(), 3);
        cache.words("t", "v", [("e1", "a d")], analyse);
        cache.words("s", "u", [("e1", "a d")], analyse);
        assert_eq!(calls.get(), 5);
        assert_eq!(cache.held(), 4);
    }

    #[test]
    fn erasure_forgets_the_users_words() {
        let cache = AnalysedTurns::default();
        let analyse = |t: &str| vec![t.to_string()];
        cache.words("t", "u", [("e1", "x"), ("e2", "y")], analyse);
        cache.words("t", "v", [("e1", "x")], analyse);
        cache.words("s", "u", [("e1", "x")], analyse);
        cache.forget("t", Some("u"));
        assert_eq!(cache.held(), 2);
        cache.forget("t", None);
        assert_eq!(cache.held(), 1, "another tenant is kept");
        let calls = Cell::new(0);
        cache.words("t", "u", [("e1", "x")], |t: &str| {
            calls.set(calls.get() + 1);
            vec![t.to_string()]
        });
        assert_eq!(calls.get(), 1, "analysed again after the erasure");
    }

    #[test]
    fn the_cache_starts_over_when_full() {
        let cache = AnalysedTurns::default();
        let ids: Vec<String> = (0..MAX_TURNS).map(|i| format!("e{i}")).collect();
        cache.words("t", "u", ids.iter().map(|i| (i.as_str(), "x")), |_| vec![]);
        assert_eq!(cache.held(), MAX_TURNS);
        cache.words("t", "v", [("e", "y")], |_| vec![]);
        assert_eq!(cache.held(), 1);
    }
}
