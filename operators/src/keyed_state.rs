//! Per-key state folded over a totally ordered time, for operators whose output for a key can
//! be corrected from the key's previous state and one input update.
//!
//! A differential `reduce` hands its logic the whole accumulated input of a key on every change
//! to it, so a key with n values costs O(n) per update (O(n²) to build up): an entity mentioned
//! in thousands of episodes, a session thousands of turns long. Here the logic keeps what it
//! needs per key (counts, an ordered map) and turns each update into the changes of the
//! output, typically in O(log n).

use differential_dataflow::{AsCollection, Data, ExchangeData, Hashable, VecCollection};
use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;

/// The changes of a maintained output, given one input update at a time.
///
/// Input: updates `((key, value), t, diff)` at times `t: u64`. `update(key, state, value, diff,
/// out)` folds one update into the key's state (created by `S::default()` at the key's first
/// update) and pushes onto `out` the changes `(output, diff)` that update makes to the key's
/// output. Output: at each time t, every change pushed for the updates at t, as
/// `((key, output), t, diff)`.
///
/// So if `update` pushes exactly the difference between `f(key, state after)` and
/// `f(key, state before)` for some function `f` of the state, the output as of any time equals
/// `f` applied to the state folded from all input up to that time: updates are folded in time
/// order (those of one time in the order they arrived, which does not matter when the state is
/// a function of the accumulated input, as for counts and multisets). Keys are spread over the
/// workers by hash; each key's state lives on one worker. A time is processed once the input
/// frontier has passed it. State is never dropped: a key whose input is all retracted keeps
/// its (empty) state.
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
    let exchange = Exchange::new(|((key, _), _, _): &((K, V), u64, isize)| key.hashed().into());
    input
        .inner
        .unary_frontier(exchange, name, move |_, _| {
            let mut pending: BTreeMap<u64, (Capability<u64>, Vec<((K, V), isize)>)> =
                BTreeMap::new();
            let mut states: HashMap<K, S> = HashMap::new();
            let mut changes: Vec<(O, isize)> = Vec::new();
            move |(input, frontier), output| {
                input.for_each_stamp(|capability, batches| {
                    for batch in batches {
                        for (record, time, diff) in batch.drain(..) {
                            pending
                                .entry(time)
                                .or_insert_with(|| {
                                    (capability.delayed(&time, output.output_index()), Vec::new())
                                })
                                .1
                                .push((record, diff));
                        }
                    }
                });
                while let Some(entry) = pending.first_entry() {
                    let time = *entry.key();
                    if frontier.frontier().less_equal(&time) {
                        break;
                    }
                    let (capability, updates) = entry.remove();
                    let mut session = output.session(&capability);
                    for ((key, value), diff) in updates {
                        let state = match states.get_mut(&key) {
                            Some(state) => state,
                            None => states.entry(key.clone()).or_default(),
                        };
                        update(&key, state, &value, diff, &mut changes);
                        for (out, d) in changes.drain(..) {
                            if d != 0 {
                                session.give(((key.clone(), out), time, d));
                            }
                        }
                    }
                }
            }
        })
        .as_collection()
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
}

#[cfg(test)]
mod tests {
    use super::Multiset;

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
}
