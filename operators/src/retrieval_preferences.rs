//! Retrieval preference learning (seed 000 §4.3; issue 33): per user, which kinds of memory
//! went into answers the user voted up and which into answers voted down, so that recall can
//! boost the kinds that served them and lower the others at the reranking stage. A memory's
//! kind is its traits: who said it (the episode's role), what it is (its content type: prose,
//! a question, a list, code, a link) and where it comes from (the user's own memory or the
//! tenant's shared domain memory).

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use timely::progress::Timestamp;

use crate::correction_clusters::UserKey;
use crate::memory_retention::MemoryId;

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
}

impl RetrievalTrait {
    /// A memory's traits: its role (assistant or not), its content type and its origin.
    pub fn of(role: &str, content: &str, domain: bool) -> [RetrievalTrait; 3] {
        [
            RetrievalTrait::Assistant(role == "assistant"),
            RetrievalTrait::Content(ContentType::of(content)),
            RetrievalTrait::Domain(domain),
        ]
    }

    /// `"assistant"`, `"user"`, `"content:list"`, `"domain"`, `"own"`.
    pub fn label(&self) -> String {
        match self {
            RetrievalTrait::Assistant(true) => "assistant".into(),
            RetrievalTrait::Assistant(false) => "user".into(),
            RetrievalTrait::Content(c) => format!("content:{}", c.as_str()),
            RetrievalTrait::Domain(true) => "domain".into(),
            RetrievalTrait::Domain(false) => "own".into(),
        }
    }
}

/// How a user's answers built with memories of one trait were judged.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct TraitTally {
    /// Answers voted up (latest vote) that used at least one memory of the trait.
    pub up: u64,
    /// Answers voted down that did.
    pub down: u64,
}

impl TraitTally {
    /// The factor recall multiplies a memory of this trait by: 1 + strength·(up − down)/(up +
    /// down + 2), i.e. strength times how far the Beta(1 + up, 1 + down) mean is from ½, twice;
    /// within (1 − strength, 1 + strength), and 1 with no votes.
    pub fn boost(&self, strength: f64) -> f64 {
        let (up, down) = (self.up as f64, self.down as f64);
        1.0 + strength * (up - down) / (up + down + 2.0)
    }
}

/// `((tenant, user), trait)`.
pub type TraitKey = (UserKey, RetrievalTrait);

/// A memory's traits, as [`RetrievalTrait::of`] gives them: one record a memory.
pub type MemoryTraits = [RetrievalTrait; 3];

/// Each user's retrieval preferences.
///
/// Input: each memory's traits `(memory, traits)`, and the judged uses of memories `(memory,
/// ((tenant, user), message id, reward))` — each answer's use of a memory with the sign of the
/// answer's counting vote, as [`crate::memory_marks::judged_uses`] gives them, keyed by memory.
/// A record counts when its multiplicity is positive. Output: `(((tenant, user), trait),
/// tally)`, multiplicity 1, for every user and trait with at least one voted answer (reward ≠
/// 0) that used a memory with that trait: `up` the number of distinct such answers with reward
/// > 0, `down` with reward < 0.
///
/// Cost: a vote or a use re-counts the user's answers of the traits concerned; one record of
/// about 20 bytes a memory is arranged twice (to count it once, and for the join).
pub fn retrieval_preferences<'scope, T>(
    traits: VecCollection<'scope, T, (MemoryId, MemoryTraits)>,
    judged: VecCollection<'scope, T, (MemoryId, (UserKey, String, i8))>,
) -> VecCollection<'scope, T, (TraitKey, TraitTally)>
where
    T: Timestamp + Lattice + Ord,
{
    // a record counts once while its multiplicity is positive (a join would multiply two
    // negative ones into a positive, and a distinct count a negative one)
    let traits = traits.threshold(|_, m: &isize| isize::from(*m > 0));
    judged
        .filter(|(_, (_, _, reward))| *reward != 0)
        .threshold(|_, m: &isize| isize::from(*m > 0))
        .join_map(traits, |_memory, (user, message, reward), traits| {
            (user.clone(), message.clone(), *reward, *traits)
        })
        .flat_map(|(user, message, reward, traits)| {
            traits.map(|t| ((user.clone(), t), (message.clone(), reward)))
        })
        // an answer counts once for a trait, however many of its memories have it
        .distinct()
        .reduce(|_key, answers, output| {
            let mut tally = TraitTally::default();
            for ((_, reward), m) in answers {
                if *m > 0 && *reward > 0 {
                    tally.up += 1;
                } else if *m > 0 && *reward < 0 {
                    tally.down += 1;
                }
            }
            if tally.up + tally.down > 0 {
                output.push((tally, 1));
            }
        })
}

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
    fn boost_is_the_beta_mean_scaled_by_strength() {
        let none = TraitTally::default();
        assert_eq!(none.boost(0.3), 1.0);
        // 3 up, 1 down: (3 − 1)/(4 + 2) = 1/3 → 1 + 0.3/3 = 1.1
        let liked = TraitTally { up: 3, down: 1 };
        assert!((liked.boost(0.3) - 1.1).abs() < 1e-12);
        // 0 up, 4 down: −4/6 → 1 − 0.2
        let disliked = TraitTally { up: 0, down: 4 };
        assert!((disliked.boost(0.3) - 0.8).abs() < 1e-12);
        // bounded by 1 ± strength however many votes
        let many = TraitTally { up: 1000, down: 0 };
        assert!(many.boost(0.3) < 1.3 && many.boost(0.3) > 1.29);
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
    }
}
