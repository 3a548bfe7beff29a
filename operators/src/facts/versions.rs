//! Validity intervals: each `(tenant, user, subject, attribute)`'s values, each current from
//! its assertion until the next one supersedes it, maintained in the dataflow, with the
//! non-incremental [`fact_versions`] beside it.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

/// `(tenant, user, subject, attribute)`: the facts that supersede one another.
pub type FactKey = (String, String, String, String);

/// One statement of a value for a [`FactKey`]. The derived order — valid-from time, then
/// input-log offset (the order engram learned it), then fact id — is the order of assertions
/// in [`facts_over_time`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FactAssertion {
    /// When the value became true (event time), microseconds since the Unix epoch.
    pub valid_from_micros: i64,
    pub log_offset: u64,
    /// Stable UUID of the fact node.
    pub fact_id: String,
    pub value: String,
    /// The event the value was learned from (`EVIDENCE_FOR`): the message it was said in, or
    /// the fact event's `source_event_id`; empty when none was named.
    pub evidence: String,
}

/// One value of a [`FactKey`] and the interval it was the current value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct FactVersion {
    pub fact_id: String,
    /// As first asserted.
    pub value: String,
    /// Microseconds since the Unix epoch, inclusive.
    pub valid_from: i64,
    /// Exclusive; `None` while current.
    pub valid_to: Option<i64>,
    /// The fact that closed this one (`SUPERSEDED_BY`); `None` while current.
    pub superseded_by: Option<String>,
    /// The event the value was learned from ([`FactAssertion::evidence`]).
    #[serde(default)]
    pub evidence: String,
}

/// Whether two values are the same fact: equal ignoring case and how whitespace is laid out
/// ("New York" = "new  york").
pub fn same_fact_value(a: &str, b: &str) -> bool {
    value_identity(a) == value_identity(b)
}

pub(super) fn value_identity(value: &str) -> Vec<String> {
    value.split_whitespace().map(str::to_lowercase).collect()
}

/// The versions of one key from its assertions, which must be in [`FactAssertion`] order and
/// free of duplicates.
fn versions_of_ordered<'a>(
    assertions: impl IntoIterator<Item = &'a FactAssertion>,
) -> Vec<FactVersion> {
    let mut versions: Vec<FactVersion> = Vec::new();
    for assertion in assertions {
        if let Some(current) = versions.last_mut() {
            // A repeated value reinforces the current version; it does not start a new one.
            if same_fact_value(&current.value, &assertion.value) {
                continue;
            }
            current.valid_to = Some(assertion.valid_from_micros);
            current.superseded_by = Some(assertion.fact_id.clone());
        }
        versions.push(FactVersion {
            fact_id: assertion.fact_id.clone(),
            value: assertion.value.clone(),
            valid_from: assertion.valid_from_micros,
            valid_to: None,
            superseded_by: None,
            evidence: assertion.evidence.clone(),
        });
    }
    versions
}

/// The versions of one key, computed from its assertions in any order (as [`facts_over_time`]
/// maintains them; identical assertions count once).
pub fn fact_versions(assertions: &[FactAssertion]) -> Vec<FactVersion> {
    let mut ordered: Vec<&FactAssertion> = assertions.iter().collect();
    ordered.sort();
    ordered.dedup();
    versions_of_ordered(ordered)
}

/// The validity intervals of every fact key.
///
/// Input: assertions keyed by [`FactKey`]; an assertion counts (once) when its accumulated
/// multiplicity is positive. Output: for every key whose counted assertions, in
/// [`FactAssertion`] order, are `a1 < a2 < … < an`, one record `(key, version)` with
/// multiplicity 1 per *version*: the versions are the assertions that start a run of equal values
/// ([`same_fact_value`]) — `a1`, and each `ai` whose value differs from `a(i-1)`'s. A repeated
/// value is a reinforcement of the current version, not a supersession. A version holds its
/// first assertion's id and value, `valid_from` = its `valid_from_micros`, and, when a later
/// version exists, `valid_to` = the next version's `valid_from_micros` and `superseded_by` = its
/// id; the last version has `valid_to` and `superseded_by` `None`. Two versions may share a
/// valid-from time, the later-learned one wins: the earlier gets the empty interval `[t, t)`.
///
/// A late assertion (earlier valid-from than ones already present) or a retraction replaces
/// the versions around it, so the output always equals this definition over the current input.
///
/// Cost: a change to a key re-derives that key's versions (linear in its assertions).
pub fn facts_over_time<'scope, T>(
    facts: VecCollection<'scope, T, (FactKey, FactAssertion)>,
) -> VecCollection<'scope, T, (FactKey, FactVersion)>
where
    T: Timestamp + Lattice + Ord,
{
    facts.reduce(|_key, assertions, output| {
        // `reduce` presents the assertions in order, each once with its accumulated multiplicity.
        let present = assertions.iter().filter(|(_, m)| *m > 0).map(|(a, _)| *a);
        for version in versions_of_ordered(present) {
            output.push((version, 1));
        }
    })
}

/// The versions of [`facts_over_time`] that are current (`valid_to` is `None`): at most one per
/// key, the value of the key now.
pub fn current_facts<'scope, T>(
    versions: VecCollection<'scope, T, (FactKey, FactVersion)>,
) -> VecCollection<'scope, T, (FactKey, FactVersion)>
where
    T: Timestamp,
{
    versions.filter(|(_, version)| version.valid_to.is_none())
}

/// The version of one key valid at `t` (microseconds): the one with `valid_from ≤ t` and
/// `t < valid_to` (or no `valid_to`). `None` before the first version. `versions` are the
/// versions of a single key, in any order.
pub fn fact_as_of(versions: &[FactVersion], t: i64) -> Option<&FactVersion> {
    versions
        .iter()
        .find(|v| v.valid_from <= t && v.valid_to.is_none_or(|to| t < to))
}
