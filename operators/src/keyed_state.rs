//! Per-key state folded over a totally ordered time, for operators whose output for a key can
//! be corrected from the key's previous state and one input update.
//!
//! A differential `reduce` hands its logic the whole accumulated input of a key on every change
//! to it, so a key with n values costs O(n) per update (O(n²) to build up): an entity mentioned
//! in thousands of episodes, a session thousands of turns long. Here the logic keeps what it
//! needs per key (counts, an ordered map) and turns each update into the changes of the
//! output, typically in O(log n).

use differential_dataflow::consolidation::consolidate;
use differential_dataflow::{AsCollection, Data, ExchangeData, Hashable, VecCollection};
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

/// The changes of a maintained output, given one input update at a time.
///
/// Input: updates `((key, value), t, diff)` at times `t: u64`. `update(key, state, value, diff,
/// out)` folds one update into the key's state (created by `S::default()` at the key's first
/// update) and pushes onto `out` the changes `(output, diff)` that update makes to the key's
/// output. Output: at each time t, for each key, the sum of the changes pushed for that key's
/// updates at t (without those that cancel out), as `((key, output), t, diff)`.
///
/// So if `update` pushes exactly the difference between `f(key, state after)` and
/// `f(key, state before)` for some function `f` of the state, the output as of any time equals
/// `f` applied to the state folded from all input up to that time: updates are folded in time
/// order (those of one time in the order they arrived, which does not matter when the state is
/// a function of the accumulated input, as for counts and multisets). Keys are spread over the
/// workers by hash; each key's state lives on one worker, found by a 128-bit
/// [`key_fingerprint`] of the key (not a copy of it). A time is processed once the input
/// frontier has passed it, key by key: a key updated many times at one time (an entity
/// mentioned all through a bulk load's batch) is looked up once and emits its net change, not
/// a retraction and an insertion per update. State is never dropped: a key whose input is all
/// retracted keeps its (empty) state.
pub fn fold_per_key<'scope, K, V, S, O, L>(
    input: VecCollection<'scope, u64, (K, V)>,
    name: &str,
    mut update: L,
) -> VecCollection<'scope, u64, (K, O)>
where
    K: ExchangeData + Hashable + Hash + Eq,
    V: ExchangeData,
    S: Default + 'static,
    O: Data,
    L: FnMut(&K, &mut S, &V, isize, &mut Vec<(O, isize)>) + 'static,
{
    fold_per_key_and_time(input, name, move |key, state, updates, out| {
        for &(value, diff) in updates {
            update(key, state, value, diff, out);
        }
    })
}

/// [`fold_per_key`], where `update(key, state, updates, out)` folds all of a key's updates at
/// one time at once: `updates` holds them as `(value, diff)`, in the order they arrived, and
/// `out` takes the changes they make together to the key's output. The output is the same as
/// [`fold_per_key`]'s for an `update` that folds the updates one by one; a key whose state holds
/// many parts (a user's entities) can find each part once a time and push only its net change.
pub fn fold_per_key_and_time<'scope, K, V, S, O, L>(
    input: VecCollection<'scope, u64, (K, V)>,
    name: &str,
    mut update: L,
) -> VecCollection<'scope, u64, (K, O)>
where
    K: ExchangeData + Hashable + Hash + Eq,
    V: ExchangeData,
    S: Default + 'static,
    O: Data,
    L: FnMut(&K, &mut S, &[(&V, isize)], &mut Vec<(O, isize)>) + 'static,
{
    let exchange = Exchange::new(|((key, _), _, _): &((K, V), u64, isize)| key.hashed().into());
    input
        .inner
        .unary_frontier(exchange, name, move |_, _| {
            // each time's updates, in chunks of PENDING_CHUNK: one growing vector per time
            // would be reallocated (and fresh pages zeroed) ever larger through a bulk load
            let mut pending: BTreeMap<u64, (Capability<u64>, Vec<Vec<((K, V), isize)>>)> =
                BTreeMap::new();
            // emptied chunks, for the next updates to fill
            let mut spare: Vec<Vec<((K, V), isize)>> = Vec::new();
            let mut states: KeyedStates<S> = KeyedStates::default();
            let mut changes: Vec<(O, isize)> = Vec::new();
            // a time's updates by key: (fingerprint, position), sorted
            let mut by_key: Vec<(u128, usize)> = Vec::new();
            move |(input, frontier), output| {
                input.for_each_stamp(|capability, batches| {
                    for batch in batches {
                        for (record, time, diff) in batch.drain(..) {
                            let chunks = &mut pending
                                .entry(time)
                                .or_insert_with(|| {
                                    (capability.delayed(&time, output.output_index()), Vec::new())
                                })
                                .1;
                            if chunks.last().is_none_or(|c| c.len() == PENDING_CHUNK) {
                                chunks.push(
                                    spare
                                        .pop()
                                        .unwrap_or_else(|| Vec::with_capacity(PENDING_CHUNK)),
                                );
                            }
                            chunks.last_mut().unwrap().push((record, diff));
                        }
                    }
                });
                while let Some(entry) = pending.first_entry() {
                    let time = *entry.key();
                    if frontier.frontier().less_equal(&time) {
                        break;
                    }
                    let (capability, mut chunks) = entry.remove();
                    // the position breaks ties: a key's updates keep their order
                    by_key.clear();
                    for (c, chunk) in chunks.iter().enumerate() {
                        for (i, ((key, _), _)) in chunk.iter().enumerate() {
                            by_key.push((key_fingerprint(key), c * PENDING_CHUNK + i));
                        }
                    }
                    by_key.sort_unstable();
                    let record = |at: usize| &chunks[at / PENDING_CHUNK][at % PENDING_CHUNK];
                    let mut session = output.session(&capability);
                    let mut from = 0;
                    let mut updates: Vec<(&V, isize)> = Vec::new();
                    for group in by_key.chunk_by(|a, b| a.0 == b.0) {
                        let state = states.get_or_default(group[0].0, &mut from);
                        updates.clear();
                        updates.extend(group.iter().map(|&(_, at)| {
                            let ((_, value), diff) = record(at);
                            (value, *diff)
                        }));
                        let ((key, _), _) = record(group[0].1);
                        update(key, state, &updates, &mut changes);
                        consolidate(&mut changes);
                        for (out, d) in changes.drain(..) {
                            session.give(((key.clone(), out), time, d));
                        }
                    }
                    states.settle();
                    for mut chunk in chunks.drain(..) {
                        if spare.len() < SPARE_CHUNKS {
                            chunk.clear();
                            spare.push(chunk);
                        }
                    }
                    // after a bulk load's batch this is as long as the batch: let it go rather
                    // than hold that much between batches
                    if by_key.capacity() > SPARE_CHUNKS * PENDING_CHUNK {
                        by_key = Vec::new();
                    }
                }
            }
        })
        .as_collection()
}

/// States by key fingerprint: those of [`fold_per_key`], and per-key parts of a state (a user's
/// entities).
///
/// Most keys live in a vector sorted by fingerprint, of exactly their number: a hash map of
/// states that doubles when 7/8 full sits at 44-87% load, and its empty slots cost as much as
/// full ones (a million co-mention pairs: 100 MB, where their states are 48 MB). Keys new since
/// the last [`KeyedStates::settle`] that moved them into the vector are in a hash map, kept to
/// an eighth of the vector plus `RECENT` so that each move costs O(1) per key, amortised.
/// (`RECENT` spares a large vector a move for only a few new keys; many small `KeyedStates`,
/// one per user, want none: each would hold a hash map of that many.)
#[derive(Debug)]
pub(crate) struct KeyedStates<S, const RECENT: usize = SETTLED_RECENT> {
    sorted: Vec<(u128, S)>,
    recent: HashMap<u128, S, BuildHasherDefault<FingerprintHasher>>,
}

impl<S, const RECENT: usize> Default for KeyedStates<S, RECENT> {
    fn default() -> Self {
        KeyedStates {
            sorted: Vec::new(),
            recent: HashMap::default(),
        }
    }
}

impl<S: Default, const RECENT: usize> KeyedStates<S, RECENT> {
    /// The state of `key`, created if new. `from`: a position in the sorted vector no greater
    /// than the key's; each call moves it to the key's position, so keys asked for in
    /// ascending order are found by galloping forward from the last (a bulk load's batch
    /// walks the vector once, not a binary search per key). From 0, it is an
    /// exponential search, O(log n).
    pub(crate) fn get_or_default(&mut self, key: u128, from: &mut usize) -> &mut S {
        let rest = &self.sorted[*from..];
        let mut bound = 1;
        while bound < rest.len() && rest[bound].0 < key {
            bound *= 2;
        }
        let window = &rest[bound / 2..rest.len().min(bound + 1)];
        let at = *from + bound / 2 + window.partition_point(|(k, _)| *k < key);
        *from = at;
        if self.sorted.get(at).is_some_and(|(k, _)| *k == key) {
            &mut self.sorted[at].1
        } else {
            self.recent.entry(key).or_default()
        }
    }

    /// Moves the recent keys into the sorted vector once they are more than an eighth of it
    /// (and `RECENT`).
    pub(crate) fn settle(&mut self) {
        if self.recent.len() <= self.sorted.len() / 8 + RECENT {
            return;
        }
        let mut recent: Vec<(u128, S)> = self.recent.drain().collect();
        recent.sort_unstable_by_key(|(k, _)| *k);
        self.recent.shrink_to(RECENT);
        // merge from the back, in place: the vector grows once, to exactly its new length
        let old = self.sorted.len();
        self.sorted.reserve_exact(recent.len());
        self.sorted.extend(recent.iter().map(|_| (0, S::default())));
        let (mut i, mut write) = (old, self.sorted.len());
        while let Some(new) = recent.pop() {
            while i > 0 && self.sorted[i - 1].0 > new.0 {
                i -= 1;
                write -= 1;
                self.sorted.swap(i, write);
            }
            write -= 1;
            self.sorted[write] = new;
        }
    }

    /// Folds updates into the states of their keys and gives each key's net change: the
    /// `i`-th update goes into the state of `keys[i]` by `update(i, state)`, in order; the
    /// result holds `(i, before, after)`, with `i` the first update of a key, for each key whose
    /// `view` of its state differs after all the updates from before them. Settles after.
    ///
    /// For a state kept in parts (a user's entities), so that a part updated many times at one
    /// time emits one change, not one per update.
    pub(crate) fn fold_net_changes<V: PartialEq>(
        &mut self,
        keys: &[u128],
        view: impl Fn(&S) -> V,
        mut update: impl FnMut(usize, &mut S),
    ) -> Vec<(usize, V, V)> {
        // each key once, with its first update: ascending, so lookups gallop forward
        let mut firsts: Vec<(u128, usize)> = keys.iter().copied().zip(0..).collect();
        firsts.sort_unstable();
        firsts.dedup_by_key(|(key, _)| *key);
        let mut from = 0;
        let before: Vec<V> = firsts
            .iter()
            .map(|&(key, _)| view(self.get_or_default(key, &mut from)))
            .collect();
        for (i, &key) in keys.iter().enumerate() {
            update(i, self.get_or_default(key, &mut 0));
        }
        let mut from = 0;
        let changed = firsts
            .into_iter()
            .zip(before)
            .filter_map(|((key, i), before)| {
                let after = view(self.get_or_default(key, &mut from));
                (after != before).then_some((i, before, after))
            })
            .collect();
        self.settle();
        changed
    }
}

/// Recent keys [`KeyedStates`] keeps in its hash map however small its sorted vector.
const SETTLED_RECENT: usize = 1024;

/// Updates per chunk of a time's pending updates in [`fold_per_key`].
const PENDING_CHUNK: usize = 1024;
/// Emptied chunks a [`fold_per_key`] operator keeps for reuse.
const SPARE_CHUNKS: usize = 4;

/// A key in 16 bytes: the 128-bit XXH3 of what the key's `Hash` writes (the same on every run
/// and worker); two of n keys share a fingerprint with probability about n²·2⁻¹²⁹ (for keys
/// not crafted to collide: the hash is not keyed). [`fold_per_key`] finds states by it (a
/// state map keyed by the keys themselves held a second copy of every key, four strings for a
/// co-mention pair, besides the one in the output).
pub fn key_fingerprint<K: Hash + ?Sized>(key: &K) -> u128 {
    let mut hasher = xxhash_rust::xxh3::Xxh3Default::new();
    key.hash(&mut hasher);
    hasher.digest128()
}

/// Hashes a [`key_fingerprint`], already uniformly spread, to its low 64 bits.
#[derive(Debug, Default)]
struct FingerprintHasher(u64);

impl Hasher for FingerprintHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        // only u128 fingerprints are hashed here; fold anything else in all the same
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(word);
        }
    }
    fn write_u128(&mut self, fingerprint: u128) {
        self.0 = fingerprint as u64;
    }
}

/// A multiset as a sorted vector of (value, multiplicity), multiplicities non-zero: compact for
/// the few values most keys have, O(log n) to find a value, and values that arrive in order
/// (a session's turns) are appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Multiset<T> {
    items: Vec<(T, isize)>,
}

impl<T> Default for Multiset<T> {
    fn default() -> Self {
        Multiset { items: Vec::new() }
    }
}

impl<T: Ord> Multiset<T> {
    /// Adds `diff` to `value`'s multiplicity (dropping it at 0); returns `Some(true)` when the
    /// value went from absent (multiplicity ≤ 0) to present (> 0), `Some(false)` for the
    /// reverse, `None` otherwise.
    pub fn update(&mut self, value: T, diff: isize) -> Option<bool> {
        let (before, after) = match self.items.binary_search_by(|(v, _)| v.cmp(&value)) {
            Ok(i) => {
                let before = self.items[i].1;
                let after = before + diff;
                if after == 0 {
                    self.items.remove(i);
                } else {
                    self.items[i].1 = after;
                }
                (before, after)
            }
            Err(i) => {
                if diff != 0 {
                    self.grow_for_one();
                    self.items.insert(i, (value, diff));
                }
                (0, diff)
            }
        };
        match (before > 0, after > 0) {
            (false, true) => Some(true),
            (true, false) => Some(false),
            _ => None,
        }
    }

    /// Makes room for one more item. Most keys hold one or two values: a vector's own growth
    /// gives the first one room for four (a 32-byte item: 128 bytes for 32 used), then
    /// doubles. Growing by a quarter keeps the unused room under a quarter, at about four
    /// moves per item over a set's growth.
    fn grow_for_one(&mut self) {
        let len = self.items.len();
        if len == self.items.capacity() {
            self.items.reserve_exact(1 + len / 4);
        }
    }

    /// The greatest present value below `value`.
    pub fn present_before(&self, value: &T) -> Option<&T> {
        let i = self.items.partition_point(|(v, _)| v < value);
        self.items[..i]
            .iter()
            .rev()
            .find(|(_, m)| *m > 0)
            .map(|(v, _)| v)
    }

    /// The least present value above `value`.
    pub fn present_after(&self, value: &T) -> Option<&T> {
        let i = self.items.partition_point(|(v, _)| v <= value);
        self.items[i..].iter().find(|(_, m)| *m > 0).map(|(v, _)| v)
    }

    /// The present values, ascending.
    pub fn present(&self) -> impl Iterator<Item = &T> {
        self.items.iter().filter(|(_, m)| *m > 0).map(|(v, _)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::{fold_per_key, KeyedStates, Multiset};
    use differential_dataflow::input::Input;
    use std::cell::RefCell;
    use std::rc::Rc;
    use timely::dataflow::operators::probe::Handle;

    /// What `fold_per_key` emits for a count per key (each update retracts the key's old count
    /// and inserts the new one) given the rounds of updates, round i at time i; sorted.
    fn counts_emitted(rounds: Vec<Vec<(char, isize)>>) -> Vec<((char, isize), u64, isize)> {
        timely::execute_directly(move |worker| {
            let emitted = Rc::new(RefCell::new(Vec::new()));
            let sink = emitted.clone();
            let mut probe = Handle::new();
            let mut input = worker.dataflow::<u64, _, _>(|scope| {
                let (input, updates) = scope.new_collection::<(char, ()), isize>();
                fold_per_key(updates, "Counts", |_, count: &mut isize, _, diff, out| {
                    if *count != 0 {
                        out.push((*count, -1));
                    }
                    *count += diff;
                    if *count != 0 {
                        out.push((*count, 1));
                    }
                })
                .inspect(move |update| sink.borrow_mut().push(*update))
                .probe_with(&mut probe);
                input
            });
            let end = rounds.len() as u64;
            for (time, round) in rounds.into_iter().enumerate() {
                input.advance_to(time as u64);
                for (key, diff) in round {
                    input.update((key, ()), diff);
                }
            }
            input.advance_to(end);
            input.flush();
            worker.step_while(|| probe.less_than(&end));
            let mut emitted = emitted.take();
            emitted.sort();
            emitted
        })
    }

    #[test]
    fn a_key_updated_many_times_at_one_time_emits_its_net_change() {
        let emitted = counts_emitted(vec![
            vec![('a', 1), ('b', 1), ('a', 1), ('a', 1)],
            // a's updates cancel out; b goes from 1 to 2
            vec![('a', -1), ('b', 1), ('a', 1)],
            vec![('a', -3)],
        ]);
        assert_eq!(
            emitted,
            vec![
                (('a', 3), 0, 1),
                (('a', 3), 2, -1),
                (('b', 1), 0, 1),
                (('b', 1), 1, -1),
                (('b', 2), 1, 1),
            ]
        );
    }

    #[test]
    fn a_time_with_more_updates_than_a_chunk_counts_them_all() {
        let keys = ['a', 'b', 'c', 'd', 'e'];
        // 3 chunks and a bit; every fifth update retracted again later in the same time
        let mut round: Vec<(char, isize)> = (0..3 * super::PENDING_CHUNK + 7)
            .map(|i| (keys[i % 5], 1))
            .collect();
        round.extend((0..100).map(|i| (keys[i % 5], -1)));
        let per_key = |k: usize| {
            round
                .iter()
                .filter(|(c, _)| *c == keys[k])
                .map(|(_, d)| d)
                .sum()
        };
        let expected: Vec<_> = (0..5).map(|k| ((keys[k], per_key(k)), 0, 1)).collect();
        assert_eq!(counts_emitted(vec![round.clone()]), expected);
    }

    #[test]
    fn presence_changes_only_when_crossing_zero() {
        let mut set = Multiset::default();
        assert_eq!(set.update("a", 1), Some(true));
        assert_eq!(set.update("a", 1), None);
        assert_eq!(set.update("a", -1), None);
        assert_eq!(set.update("a", -1), Some(false));
        assert_eq!(set, Multiset::default());
        assert_eq!(set.update("b", -1), None);
        assert_eq!(set.update("b", 2), Some(true));
        assert_eq!(set.update("b", -1), Some(false));
        assert_eq!(set.update("c", 0), None);
        assert_eq!(
            set.present_after(&"a"),
            None,
            "c has multiplicity 0, b is not present"
        );
    }

    #[test]
    fn present_lists_only_values_with_positive_multiplicity() {
        let mut set = Multiset::default();
        let present = |set: &Multiset<i32>| set.present().copied().collect::<Vec<_>>();
        assert_eq!(present(&set), Vec::<i32>::new());
        set.update(5, -1);
        set.update(9, 1);
        set.update(7, 2);
        set.update(12, -3);
        assert_eq!(present(&set), vec![7, 9]);
        set.update(9, -1);
        assert_eq!(present(&set), vec![7]);
        set.update(7, -2);
        set.update(5, 1);
        assert_eq!(present(&set), Vec::<i32>::new(), "5 is back at 0");
    }

    #[test]
    fn room_grows_by_a_quarter_not_to_four_then_double() {
        let mut set = Multiset::default();
        set.update(10u128, 1);
        assert_eq!(set.items.capacity(), 1, "one value, room for one");
        for v in 0..1000u128 {
            set.update(v, 1);
            let (len, cap) = (set.items.len(), set.items.capacity());
            assert!(cap <= len + len / 4 + 1, "{len} values, room for {cap}");
        }
        assert_eq!(set.items.len(), 1000, "10 was added twice");
    }

    #[test]
    fn net_changes_name_each_changed_key_once_at_its_first_update() {
        let mut states: KeyedStates<i64, 0> = KeyedStates::default();
        let deltas = [1, 1, 2, 5, -5];
        // key 7 twice, key 3 once, key 9 up and back down
        let changes = states.fold_net_changes(&[7, 3, 7, 9, 9], |n| *n, |i, n| *n += deltas[i]);
        let mut changes = changes;
        changes.sort();
        assert_eq!(
            changes,
            vec![(0, 0, 3), (1, 0, 1)],
            "key 9 ends where it began"
        );
        let changes = states.fold_net_changes(&[3, 7], |n| *n, |i, n| *n -= [1, 0][i]);
        assert_eq!(changes, vec![(0, 1, 0)], "key 7 unchanged");
    }

    #[test]
    fn fingerprints_tell_keys_apart_and_repeat() {
        let key = |a: &str, b: &str| super::key_fingerprint(&(a.to_string(), b.to_string()));
        assert_eq!(key("t", "u"), key("t", "u"));
        assert_ne!(
            key("t", "u"),
            key("tu", ""),
            "the tuple's parts are delimited"
        );
        assert_ne!(key("t", "u"), key("u", "t"));
    }

    #[test]
    fn neighbours_skip_absent_values() {
        let mut set = Multiset::default();
        for (v, m) in [(1, 1), (3, -1), (5, 2), (7, 1), (9, 0)] {
            set.update(v, m);
        }
        assert_eq!(set.present_before(&5), Some(&1), "3 is not present");
        assert_eq!(set.present_after(&5), Some(&7));
        assert_eq!(set.present_after(&4), Some(&5));
        assert_eq!(set.present_before(&1), None);
        assert_eq!(set.present_after(&7), None, "9 was never added");
        assert_eq!(set.present_before(&100), Some(&7));
    }

    #[test]
    fn keyed_states_find_every_key_as_a_map_would_across_settles() {
        use rand::{rngs::StdRng, Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(11);
        let mut states: KeyedStates<u64> = KeyedStates::default();
        let mut expected: std::collections::BTreeMap<u128, u64> = Default::default();
        // rounds of many keys (bulk) and of a few (live), from a small key space so that keys
        // come back after they have settled into the sorted vector
        for round in 0..60 {
            let n = if round % 3 == 0 {
                5_000
            } else {
                rng.gen_range(1..20)
            };
            let mut keys: Vec<u128> = (0..n).map(|_| rng.gen_range(0..20_000u128) << 70).collect();
            keys.sort_unstable();
            keys.dedup();
            let mut from = 0;
            for key in keys {
                let add = rng.gen_range(1..5);
                *states.get_or_default(key, &mut from) += add;
                *expected.entry(key).or_default() += add;
            }
            states.settle();
            assert!(
                states.sorted.windows(2).all(|w| w[0].0 < w[1].0),
                "sorted, no repeats"
            );
            assert!(states
                .recent
                .keys()
                .all(|k| states.sorted.binary_search_by_key(k, |s| s.0).is_err()));
        }
        assert!(
            states.sorted.len() > 10_000,
            "most keys settled: {}",
            states.sorted.len()
        );
        assert_eq!(states.sorted.len() + states.recent.len(), expected.len());
        let mut from = 0;
        for (key, value) in &expected {
            assert_eq!(*states.get_or_default(*key, &mut from), *value, "key {key}");
        }
    }
}
