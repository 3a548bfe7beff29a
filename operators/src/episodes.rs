//! Episodes and the `NEXT` edges between consecutive episodes of a session.

use crate::keyed_state::{fold_per_key, key_fingerprint, Multiset};
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};

/// `(tenant, user, session)`; messages without a session share the session `""` of their user.
pub type SessionKey = (String, String, String);

/// One message as the dataflow sees it. Field order is the order of episodes within a session:
/// event time, then turn, then input-log offset (the arrival order), then id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Episode {
    /// Event time, microseconds since the Unix epoch.
    pub ts_micros: i64,
    pub turn: Option<u32>,
    pub log_offset: u64,
    /// Stable UUID of the episode node.
    pub id: String,
    pub event_id: String,
    pub role: String,
    pub content: String,
    /// Importance in thousandths (0..=1000), kept integral so episodes are totally ordered.
    pub importance_milli: Option<u16>,
}

impl Episode {
    /// What ordering within a session needs: everything but the message itself.
    pub fn node(&self) -> EpisodeNode {
        EpisodeNode {
            ts_micros: self.ts_micros,
            turn: self.turn,
            log_offset: self.log_offset,
            key: episode_key(&self.id),
        }
    }
}

/// An episode id in 16 bytes, for arrangements that keep one record per mention of an episode
/// (a `String` id costs 24 bytes plus its heap block there). An id in the lowercase hyphenated
/// UUID form — every id the engine gives an episode — becomes that UUID's 128 bits, so two
/// such ids never share a key; any other id becomes a 128-bit hash of it (two different ids
/// share one with probability about 2⁻¹²⁸).
pub fn episode_key(id: &str) -> u128 {
    uuid_bits(id).unwrap_or_else(|| key_fingerprint(&id))
}

/// An [`episode_key`] as two 8-byte halves, high first (so they order as the key does), for
/// states kept per mention: a `u128`'s 16-byte alignment pads a (key, time, kind, count) entry
/// to 48 bytes and a (key, count) entry to 32; in halves they take 40 and 24.
pub fn key_halves(key: u128) -> [u64; 2] {
    [(key >> 64) as u64, key as u64]
}

/// The 128 bits of `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lowercase hex; `None` for any other
/// text (an uppercase UUID is another id, so it must not map to the same bits).
pub fn uuid_bits(id: &str) -> Option<u128> {
    let b = id.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut bits = 0u128;
    for (i, &c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if c != b'-' {
                return None;
            }
            continue;
        }
        let digit = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        bits = (bits << 4) | digit as u128;
    }
    Some(bits)
}

/// The id whose [`uuid_bits`] are `bits`: lowercase hyphenated hex.
pub fn uuid_text(bits: u128) -> String {
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        bits >> 96,
        (bits >> 80) & 0xffff,
        (bits >> 64) & 0xffff,
        (bits >> 48) & 0xffff,
        bits & 0xffff_ffff_ffff
    )
}

/// An episode without its message: enough to order a session. Ordered like [`Episode`] (for
/// UUID ids the key orders as the id does).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EpisodeNode {
    pub ts_micros: i64,
    pub turn: Option<u32>,
    pub log_offset: u64,
    /// [`episode_key`] of the id.
    pub key: u128,
}

/// The `NEXT` edges of each session.
///
/// Input: episode nodes keyed by their session ([`Episode::node`]: the edges need no message
/// text). Output: for every session whose nodes, in [`EpisodeNode`] order, are
/// `e1 < e2 < … < en`, the records `(session, (e_i.key, e_{i+1}.key))` for `i` in `1..n`, each
/// with multiplicity 1 (the ids as [`episode_key`]s: 32 bytes an edge). An episode present with
/// multiplicity m > 1 counts once; one with multiplicity ≤ 0 does not count. When an episode
/// arrives out of order (an earlier timestamp than episodes already present) or is retracted,
/// the edge around it is retracted and replaced, so the output always equals this definition
/// over the current input.
///
/// Cost: O(log n) for an episode of a session of n ([`fold_per_key`]: the session's nodes in a
/// sorted vector, so an episode arriving in order is appended); an episode that starts or stops
/// counting changes at most three edges. State: each present node once (48 bytes).
pub fn next_edges<'scope>(
    episodes: VecCollection<'scope, u64, (SessionKey, EpisodeNode)>,
) -> VecCollection<'scope, u64, (SessionKey, (u128, u128))> {
    fold_per_key(
        episodes,
        "NextEdges",
        |_session, nodes: &mut Multiset<EpisodeNode>, node: &EpisodeNode, diff, out| {
            let Some(now_present) = nodes.update(node.clone(), diff) else {
                return;
            };
            let sign = if now_present { 1 } else { -1 };
            let before = nodes.present_before(node).map(|p| p.key);
            let after = nodes.present_after(node).map(|s| s.key);
            if let (Some(p), Some(s)) = (before, after) {
                out.push(((p, s), -sign));
            }
            if let Some(p) = before {
                out.push(((p, node.key), sign));
            }
            if let Some(s) = after {
                out.push(((node.key, s), sign));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::{episode_key, uuid_bits, uuid_text};

    #[test]
    fn a_uuid_id_is_its_own_bits() {
        assert_eq!(episode_key("00000000-0000-0000-0000-000000000001"), 1);
        assert_eq!(
            episode_key("0123abcd-4567-89ef-0123-456789abcdef"),
            0x0123abcd_4567_89ef_0123_456789abcdef
        );
        assert_eq!(
            episode_key("ffffffff-ffff-ffff-ffff-ffffffffffff"),
            u128::MAX
        );
    }

    #[test]
    fn uuid_bits_print_back_as_the_id() {
        for id in [
            "00000000-0000-0000-0000-000000000001",
            "0123abcd-4567-89ef-0123-456789abcdef",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
        ] {
            assert_eq!(uuid_text(uuid_bits(id).unwrap()), id);
        }
        assert_eq!(uuid_bits("ep1"), None);
    }

    #[test]
    fn other_ids_are_hashed_and_stay_apart() {
        let lower = "0123abcd-4567-89ef-0123-456789abcdef";
        let upper = lower.to_uppercase();
        // another id, so another key (were it parsed, both would be the same bits)
        assert_ne!(episode_key(&upper), episode_key(lower));
        assert_eq!(episode_key(&upper), episode_key(&upper));
        // misplaced hyphens, a non-hex digit, one character short: hashed
        for id in [
            "0123abcd4-567-89ef-0123-456789abcdef",
            "0123abcg-4567-89ef-0123-456789abcdef",
            "0123abcd-4567-89ef-0123-456789abcde",
        ] {
            assert_ne!(episode_key(id), episode_key(lower), "{id}");
        }
        let keys: std::collections::BTreeSet<u128> = (0..10_000)
            .map(|i| episode_key(&format!("ep{i}")))
            .collect();
        assert_eq!(keys.len(), 10_000);
    }
}
