//! Memories as the views that judge them see them (issue 33): each episode, fact version and
//! summary once, keyed by its id, with whose it is, when it was made, how important it is and —
//! for an episode — its traits; and the uses answers made of them, joined to the memories they
//! name. `memory_retention` (how memories fade) and `retrieval_preferences`
//! (which kinds of memory serve a user) both read [`used_memories`], so every memory is
//! arranged once for both, and only the few that answers used go further.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;
use crate::keyed_state::key_fingerprint;

/// A memory: the 128 bits of its id ([`crate::episode_key`]; episode, fact and summary ids are
/// UUIDs, so one key space holds all three without collisions).
pub type MemoryId = u128;

/// The importance of a memory stated without one, in thousandths.
pub const UNSTATED_IMPORTANCE_MILLI: u16 = 500;

/// Whose a memory is: [`owner_key`] of its tenant and user.
pub type OwnerKey = u64;

/// The owner key of `(tenant, user)`: 64 bits of its fingerprint.
pub fn owner_key(tenant: &str, user: &str) -> OwnerKey {
    key_fingerprint(&(tenant, user)) as u64
}

/// One memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Memory {
    /// [`owner_key`] of the tenant and user whose memory it is.
    pub owner: OwnerKey,
    /// When it was made: event time, seconds since the Unix epoch.
    pub created_secs: i64,
    /// How important it is, in thousandths (0..=1000).
    pub importance_milli: u16,
    /// An episode's traits ([`RetrievalTrait::of`]); facts and summaries have none.
    pub traits: Option<MemoryTraits>,
}

/// One answer's use of a memory, as [`crate::memory_marks::judged_uses`] gives it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JudgedUse {
    /// The user the answer was given to, `(tenant, user)`.
    pub user: UserKey,
    /// The answer's message id.
    pub message: String,
    /// When the answer was given: event time, seconds since the Unix epoch.
    pub at_secs: i64,
    /// The sign of the answer's counting vote, 0 when it has none.
    pub reward: i8,
}

/// The uses of memories joined to the memories they name.
///
/// Input: `memories`, `(id, memory)`, a set with one record per id (what the log gives: one
/// episode per event, one version per fact id, one summary per id); and `uses`, `(id, use)`.
/// Output: `(id, (memory, use))` for every present memory and every use of its id by its owner
/// or, for a memory of the tenant's [`engram_schemas::DOMAIN_USER`], by any user of that
/// tenant, with multiplicity the memory's times the use's where the use's is positive (a use
/// counted twice counts twice), and nothing for a use whose multiplicity is not positive. A use
/// by anyone else names a memory that is not theirs: it counts for nothing.
///
/// Cost: every memory is arranged once (about 50 bytes); a change to a use touches its memory.
pub fn used_memories<'scope, T>(
    memories: VecCollection<'scope, T, (MemoryId, Memory)>,
    uses: VecCollection<'scope, T, (MemoryId, JudgedUse)>,
) -> VecCollection<'scope, T, (MemoryId, (Memory, JudgedUse))>
where
    T: Timestamp + Lattice + Ord,
{
    // uses are few: counting only positive ones costs an arrangement of them, not of memories
    let uses = uses.threshold(|_, m: &isize| (*m).max(0)).arrange_by_key();
    memories
        .arrange_by_key()
        .join_core(uses, |id, memory, used| {
            let (tenant, user) = &used.user;
            let owned = memory.owner == owner_key(tenant, user)
                || memory.owner == owner_key(tenant, engram_schemas::DOMAIN_USER);
            owned.then(|| (*id, (*memory, used.clone())))
        })
}

/// What a memory's text is, read deterministically from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentType {
    Prose,
    /// Ends with a question mark.
    Question,
    /// Two lines or more that are list items ("- ", "* ", "• ", "1. ", "2) ").
    List,
    /// A fenced block (```) or two lines or more that end in `;`, `{` or `}`.
    Code,
    /// Names an http(s) address.
    Link,
}

impl ContentType {
    /// The content type of `text`, the first that applies of code, link, list, question,
    /// prose.
    pub fn of(text: &str) -> ContentType {
        let lines = || text.lines().map(str::trim);
        let code_lines = lines()
            .filter(|l| l.ends_with(';') || l.ends_with('{') || l.ends_with('}'))
            .count();
        if text.contains("```") || code_lines >= 2 {
            return ContentType::Code;
        }
        if text.contains("http://") || text.contains("https://") {
            return ContentType::Link;
        }
        if lines().filter(|l| is_list_item(l)).count() >= 2 {
            return ContentType::List;
        }
        if text.trim_end().ends_with('?') {
            return ContentType::Question;
        }
        ContentType::Prose
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContentType::Prose => "prose",
            ContentType::Question => "question",
            ContentType::List => "list",
            ContentType::Code => "code",
            ContentType::Link => "link",
        }
    }
}

/// "- x", "* x", "• x", "1. x", "12) x".
fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "• "].iter().any(|p| line.starts_with(p)) {
        return true;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && (line[digits..].starts_with(". ") || line[digits..].starts_with(") "))
}

/// One trait of a memory, the unit preferences are learned for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "trait", content = "value", rename_all = "snake_case")]
pub enum RetrievalTrait {
    /// Said by the user (`false`) or by the assistant (`true`).
    Assistant(bool),
    Content(ContentType),
    /// The tenant's shared domain memory (`true`) or the user's own (`false`).
    Domain(bool),
    /// Made less than [`RECENT_SECS`] before the answer it went into, or the recall that
    /// weighs it (`true`), or longer before (`false`): whether a user is served by fresh
    /// memories or old ones (seed 000 §4.3, recency weighting).
    Recent(bool),
}

/// How old a memory may be and still count as [`RetrievalTrait::Recent`]: a week, the scale of
/// SPEC §5's recency e^(−age/7 days).
pub const RECENT_SECS: i64 = 7 * 86_400;

impl RetrievalTrait {
    /// A memory's traits: its role (assistant or not), its content type and its origin.
    pub fn of(role: &str, content: &str, domain: bool) -> [RetrievalTrait; 3] {
        [
            RetrievalTrait::Assistant(role == "assistant"),
            RetrievalTrait::Content(ContentType::of(content)),
            RetrievalTrait::Domain(domain),
        ]
    }

    /// The age trait of a memory made at `made_secs`, used or weighed at `at_secs` (event
    /// times, seconds): recent when less than [`RECENT_SECS`] lie between (a memory dated after
    /// the moment is recent too).
    pub fn age(made_secs: i64, at_secs: i64) -> RetrievalTrait {
        RetrievalTrait::Recent(at_secs.saturating_sub(made_secs) < RECENT_SECS)
    }

    /// `"assistant"`, `"user"`, `"content:list"`, `"domain"`, `"own"`, `"recent"`, `"older"`.
    pub fn label(&self) -> String {
        match self {
            RetrievalTrait::Assistant(true) => "assistant".into(),
            RetrievalTrait::Assistant(false) => "user".into(),
            RetrievalTrait::Content(c) => format!("content:{}", c.as_str()),
            RetrievalTrait::Domain(true) => "domain".into(),
            RetrievalTrait::Domain(false) => "own".into(),
            RetrievalTrait::Recent(true) => "recent".into(),
            RetrievalTrait::Recent(false) => "older".into(),
        }
    }
}

/// A memory's traits, as [`RetrievalTrait::of`] gives them.
pub type MemoryTraits = [RetrievalTrait; 3];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types_are_read_from_the_text() {
        let cases = [
            ("I moved to Lisbon last spring.", ContentType::Prose),
            ("Where did I park the car?", ContentType::Question),
            (
                "Packing:\n- passport\n- charger\n- socks",
                ContentType::List,
            ),
            ("Steps:\n1. preheat\n2) mix", ContentType::List),
            ("```rust\nfn main() {}\n```", ContentType::Code),
            ("let x = 1;\nlet y = 2;", ContentType::Code),
            (
                "The docs are at https://example.org/guide",
                ContentType::Link,
            ),
            // one dash line is prose, not a list; a question with a link is a link
            ("- just one", ContentType::Prose),
            ("Is it https://example.org?", ContentType::Link),
        ];
        for (text, expected) in cases {
            assert_eq!(ContentType::of(text), expected, "{text}");
        }
    }

    #[test]
    fn traits_and_labels() {
        let t = RetrievalTrait::of("assistant", "- a\n- b", false);
        assert_eq!(
            t.map(|t| t.label()),
            ["assistant", "content:list", "own"].map(String::from)
        );
        let t = RetrievalTrait::of("user", "Hi there", true);
        assert_eq!(
            t.map(|t| t.label()),
            ["user", "content:prose", "domain"].map(String::from)
        );
        // a week is the line: 6 days 23 hours old is recent, 7 days is older
        let made = 1_700_000_000;
        assert_eq!(
            RetrievalTrait::age(made, made + 7 * 86_400 - 3_600).label(),
            "recent"
        );
        assert_eq!(
            RetrievalTrait::age(made, made + 7 * 86_400).label(),
            "older"
        );
        assert_eq!(RetrievalTrait::age(made, made - 86_400).label(), "recent");
    }

    #[test]
    fn owner_keys_tell_tenants_and_users_apart() {
        let a = owner_key("acme", "ann");
        assert_eq!(a, owner_key("acme", "ann"));
        // the two fields are hashed apart, not concatenated
        assert_ne!(a, owner_key("acmea", "nn"));
        assert_ne!(a, owner_key("acme", "bob"));
        assert_ne!(a, owner_key("globex", "ann"));
    }
}
