//! Topic links: corrections that ask for nothing [`requests_of`](crate::requests::requests_of)
//! recognises ("we're vegetarian, stop suggesting chicken", "no meat in the meal plans please")
//! are about something the user named. On the shipped MiniLM their paraphrases lie at a median
//! cosine of 0.56 and unrelated corrections of the same user reach 0.60, so no cosine threshold
//! links the one without the other; a word in common ("vegetarian", "meat", "allergy") does,
//! but the object a constraint applies to is shared too ("recipes" in "veggie recipes only"
//! and "quick recipes only"). So each such correction links to its **nearest** correction
//! among those that share a topic term with it, when that one is close enough: on the labelled
//! sets (`tests/data/correction_requests*.json`) this raised pairwise link recall on the held-out
//! set d from 0.42 to 0.62 and kept precision (0.89 → 0.92).

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::LazyLock;

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use timely::progress::Timestamp;

use super::{QuantisedEmbedding, UserKey};
use crate::english_terms::analyse;
use crate::requests::{FED_UP, NEGATED_VERBS};

/// The cosine at which a correction links to its nearest topic neighbour, calibrated for the
/// shipped all-MiniLM-L6-v2 (int8) on the labelled sets a to c (0.3 to 0.5 give the same
/// figures within 0.02; 0.4 is the middle). It belongs to the model, as
/// [`LINK_COSINE_THRESHOLD`](super::LINK_COSINE_THRESHOLD) does.
pub const TOPIC_LINK_COSINE: f64 = 0.4;

/// A term links only among the first this many of a user's corrections that hold it (by time,
/// then id): it bounds the pairs a term makes (32² cosines at most), and a term that many of a
/// user's corrections name says little about which of them belong together.
pub const TOPIC_TERM_HOLDERS: usize = 32;

/// Words that say how a correction is made, not what it is about ("stop suggesting", "remember",
/// "again", "my replies"): contractions as they are written without their apostrophe, the verbs
/// and nouns of asking, "more" and "less" (they say which way, not about what), chat
/// interjections ("ugh", "tbh") and vague words ("something", "a bit", "from now on"): a fed-up
/// "ugh, … again" is how a user complains, not what about. Compared by stem.
const CORRECTION_WORDS: &[&str] = &[
    "actually",
    "already",
    "always",
    "answer",
    "anymore",
    "anything",
    "anyway",
    "arent",
    "bit",
    "btw",
    "cant",
    "didnt",
    "doesnt",
    "dont",
    "enough",
    "ever",
    "every",
    "everything",
    "fine",
    "forward",
    "fyi",
    "get",
    "give",
    "go",
    "hey",
    "honestly",
    "id",
    "im",
    "instead",
    "isnt",
    "ive",
    "keep",
    "kind",
    "know",
    "less",
    "lets",
    "like",
    "literally",
    "little",
    "lol",
    "lot",
    "make",
    "mean",
    "message",
    "mind",
    "need",
    "next",
    "nothing",
    "now",
    "ok",
    "okay",
    "omg",
    "one",
    "please",
    "pls",
    "plz",
    "possible",
    "put",
    "really",
    "remember",
    "reply",
    "response",
    "right",
    "said",
    "say",
    "seriously",
    "something",
    "start",
    "stop",
    "stuff",
    "suggest",
    "suggestion",
    "sure",
    "ta",
    "tbh",
    "tell",
    "thank",
    "thanks",
    "thats",
    "thing",
    "thx",
    "time",
    "told",
    "u",
    "ugh",
    "ur",
    "use",
    "want",
    "wasnt",
    "way",
    "werent",
    "whats",
    "wont",
    "wrong",
    "yeah",
    "youre",
    "youve",
];

static CORRECTION_STEMS: LazyLock<BTreeSet<String>> =
    LazyLock::new(|| CORRECTION_WORDS.iter().flat_map(|w| analyse(w)).collect());

/// Words that turn away, or end, what the rest of their clause names ("I'm not vegetarian
/// anymore", "I quit smoking", "skip the chicken"), besides the [`NEGATED_VERBS`] ("don't",
/// "won't"), written without apostrophes ("sold the car", "got rid of the honda"); "gave", "give", "given" and "giving" only one or two
/// words before "up" ("given it up").
const TURNING_WORDS: &[&str] = &[
    "avoid", "avoiding", "drop", "dropped", "neither", "never", "no", "none", "nor", "not",
    "nothing", "quit", "quitting", "skip", "skipped", "stop", "stopped", "stopping", "without",
    "hate", "hates", "dislike", "dislikes", "detest", "detests", "sold", "rid",
];

/// Verbs that, with "out" after what they name, turn it away ("keep politics out of it", "leave
/// the onions out").
const OUT_VERBS: &[&str] = &["keep", "leave", "cut", "take", "left", "kept"];

/// Words that make a text tell of a change in the user's life ("not vegetarian anymore", "I eat
/// meat again", "I quit", "working from home ended").
const CHANGE_WORDS: &[&str] = &[
    "anymore", "again", "longer", "ended", "quit", "quitting", "relapsed", "used",
];

/// Words that end a clause for [`TURNING_WORDS`] as punctuation does.
const CLAUSE_WORDS: &[&str] = &["but", "so", "because", "since", "though", "although"];

/// The topic terms of a correction's text, sorted and distinct: its [`analyse`]d terms, with
/// apostrophes dropped first ("don't" is "dont"), without [`CORRECTION_WORDS`], the
/// [`TURNING_WORDS`] and one-letter terms, each marked by which way the text names it. A term is
/// turned when its clause turns it an odd number of times after a turning word, or names it
/// before "ended" ("working from home ended") or between "keep", "leave" … and "out" ("keep
/// politics out of it"); in a fed-up text (opening with one of [`FED_UP`]), every term is.
/// - In a text that tells of a change ([`CHANGE_WORDS`], "gave up"), a turned term is written
///   `-term` and another `+term`: "I'm not vegetarian anymore" (`-vegetarian`), "I eat meat
///   again" (`+eat`, `+meat`).
/// - Elsewhere a term is written plainly, a turned one as `-term`: "no meat in the recipes"
///   (`-meat`, `-recip`) is found by "I don't eat meat anymore" (`-meat`), never by "I eat meat
///   again" (`+meat`) nor by "more meat please" (`meat`). Turned and not, one request is
///   sometimes said both ways ("keep politics out of it", "no politics"): on the labelled sets
///   marking turned terms everywhere merged fewer opposite requests (211 pairs against 232 on
///   the six held-out sets) for less recall (0.459 against 0.478 on average).
pub fn topic_terms(text: &str) -> Vec<String> {
    let text = text.to_lowercase().replace(['\'', '\u{2019}'], "");
    let words_of_text: Vec<&str> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let fed_up = words_of_text.first().is_some_and(|w| FED_UP.contains(w));
    let tells_a_change = !fed_up
        && words_of_text.iter().enumerate().any(|(k, w)| {
            CHANGE_WORDS.contains(w)
                || (matches!(*w, "gave" | "give" | "given" | "giving")
                    && words_of_text[k + 1..].iter().take(2).any(|&u| u == "up"))
        });
    let mut terms = BTreeSet::new();
    for clause in text.split([
        ',', '.', ';', ':', '!', '?', '(', ')', '\n', '\u{2014}', '\u{2013}',
    ]) {
        let words: Vec<&str> = clause
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        // each word with whether it is turned; a clause word starts a new clause
        let mut turned_words: Vec<(&str, bool)> = Vec::new();
        let mut turned = false;
        // where the words after the last of the OUT_VERBS begin in `turned_words`
        let mut out_from: Option<usize> = None;
        for (k, &w) in words.iter().enumerate() {
            let gives_up = matches!(w, "gave" | "give" | "given" | "giving")
                && words[k + 1..].iter().take(2).any(|&u| u == "up");
            if CLAUSE_WORDS.contains(&w) {
                turned = false;
            } else if TURNING_WORDS.contains(&w) || NEGATED_VERBS.contains(&w) || gives_up {
                turned = !turned;
            } else if w == "ended" {
                for (_, t) in &mut turned_words {
                    *t = !*t;
                }
            } else if w == "out" && out_from.is_some() {
                for (_, t) in &mut turned_words[out_from.take().unwrap_or(0)..] {
                    *t = !*t;
                }
            } else if OUT_VERBS.contains(&w) {
                out_from = Some(turned_words.len());
            } else if !FED_UP.contains(&w) {
                turned_words.push((w, turned || fed_up));
            }
        }
        for (w, turned) in turned_words {
            for term in analyse(w) {
                if term.chars().count() < 2 || CORRECTION_STEMS.contains(&term) {
                    continue;
                }
                match (tells_a_change, turned) {
                    (true, true) => terms.insert(format!("-{term}")),
                    (true, false) => terms.insert(format!("+{term}")),
                    (false, true) => terms.insert(format!("-{term}")),
                    (false, false) => terms.insert(term),
                };
            }
        }
    }
    terms.into_iter().collect()
}

/// A correction as topic linking sees it: `(id, event time, embedding, topic terms, seeks)`;
/// `seeks`: it links to its own nearest topic neighbour (a correction that asks for nothing
/// recognised). One that only names a circumstance ("I'm vegetarian") is already linked to the
/// others that name it, and its own terms ("recipes") would reach other requests; it is only
/// there to be found.
pub type TopicHolder = (String, i64, QuantisedEmbedding, Vec<String>, bool);

/// Links between a user's corrections by topic.
///
/// Input: `(user, (id, ts, embedding, topic terms, seeks))`, each correction once (the
/// representatives of [`super::similarity_links`] with topic terms), and the model's
/// [`TOPIC_LINK_COSINE`].
///
/// Output: `(user, (id_a, id_b))`, `id_a < id_b`, multiplicity 1, for every correction `a` that
/// seeks and whose **nearest topic neighbour** is `b` (or the reverse) at [`QuantisedEmbedding::cosine`]
/// ≥ `min_cosine`. For each of a user's terms, its **holders** are the first
/// [`TOPIC_TERM_HOLDERS`] corrections holding it in `(ts, id)` order; `b ≠ a` is a topic
/// neighbour of `a` when both are holders of one term and their embeddings have one length;
/// the nearest is the one of greatest cosine, ties to the smallest id.
pub fn topic_links<'scope, T>(
    corrections: VecCollection<'scope, T, (UserKey, TopicHolder)>,
    min_cosine: f64,
) -> VecCollection<'scope, T, (UserKey, (String, String))>
where
    T: Timestamp + Lattice + Ord,
{
    let holders = corrections
        .flat_map(|(user, (id, ts, embedding, terms, seeks))| {
            terms.into_iter().map(move |term| {
                (
                    (user.clone(), term),
                    (ts, id.clone(), embedding.clone(), seeks),
                )
            })
        })
        .reduce(|_term, holders, output| {
            // (ts, id) order: the first ones to name the term
            for (holder, _) in holders
                .iter()
                .filter(|(_, m)| *m > 0)
                .take(TOPIC_TERM_HOLDERS)
            {
                output.push(((*holder).clone(), 1));
            }
        })
        .arrange_by_key();
    holders
        .clone()
        .join_core(
            holders,
            |(user, _term): &(UserKey, String),
             (_, a, embedding_a, seeks): &(i64, String, QuantisedEmbedding, bool),
             (_, b, embedding_b, _): &(i64, String, QuantisedEmbedding, bool)| {
                (*seeks && a != b && embedding_a.dims() == embedding_b.dims()).then(|| {
                    let cosine = embedding_a.cosine(embedding_b);
                    (
                        (user.clone(), a.clone()),
                        (Reverse(cosine_order(cosine)), b.clone()),
                    )
                })
            },
        )
        .reduce(move |_a, neighbours, output| {
            // greatest cosine first, then smallest id; a pair sharing two terms comes twice
            if let Some(((Reverse(order), b), _)) = neighbours.iter().find(|(_, m)| *m > 0) {
                if cosine_from_order(*order) >= min_cosine {
                    output.push(((*b).clone(), 1));
                }
            }
        })
        .map(|((user, a), b)| {
            let pair = if a < b { (a, b) } else { (b, a) };
            (user, pair)
        })
        .distinct()
}

/// An integer in the order of the cosines (IEEE 754's total order), so that a nearest
/// neighbour is the least record of a sorted collection.
fn cosine_order(cosine: f64) -> i64 {
    let bits = cosine.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

fn cosine_from_order(order: i64) -> f64 {
    f64::from_bits((order ^ (((order >> 63) as u64) >> 1) as i64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topic_terms_leave_out_how_a_correction_is_asked() {
        assert_eq!(
            topic_terms("We're vegetarian, STOP suggesting chicken!"),
            ["-chicken", "vegetarian"]
        );
        assert_eq!(
            topic_terms("Please don't bring up my ex-husband, I told you."),
            ["-bring", "-ex", "-husband"]
        );
        assert_eq!(
            topic_terms("no, that's wrong, please remember"),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_change_names_what_it_ends_and_what_it_starts_apart() {
        assert_eq!(
            topic_terms("I quit smoking, 3 weeks today"),
            ["+today", "+week", "-smoke"]
        );
        assert_eq!(
            topic_terms("i started smoking again, not proud of it"),
            ["+smoke", "-proud"]
        );
        assert_eq!(topic_terms("I'm not vegetarian anymore"), ["-vegetarian"]);
        assert_eq!(topic_terms("I've given it up for good"), ["-good"]);
        assert_eq!(
            topic_terms("Working from home ended for me."),
            ["-home", "-work"]
        );
        // twice turned: named as asked for; a clause word ends the turning
        assert_eq!(
            topic_terms("don't skip the safety warnings again"),
            ["+safeti", "+warn"]
        );
        assert_eq!(
            topic_terms("no beef anymore, because we eat chicken"),
            ["+chicken", "+eat", "-beef"]
        );
    }

    #[test]
    fn a_thing_turned_away_and_a_change_are_named_apart() {
        let shares = |a: &str, b: &str| {
            let b = topic_terms(b);
            topic_terms(a).iter().any(|t| b.contains(t))
        };
        assert!(shares(
            "stop using the word 'delve'",
            "ugh, 'let's delve' AGAIN"
        ));
        assert!(shares("no meat in the recipes", "I don't eat meat anymore"));
        assert!(shares("keep politics out of it", "no politics pls"));
        assert!(shares(
            "My kids won't eat anything spicy",
            "the children hate spicy food"
        ));
        assert!(!shares("no meat in the recipes", "i eat meat again"));
        assert!(!shares("no jokes please", "more jokes please"));
        assert!(!shares("I quit smoking", "I started smoking again"));
    }

    #[test]
    fn the_cosine_order_is_the_order_of_cosines_and_reverses() {
        let cosines = [-1.0, -0.5, -1e-300, 0.0, 1e-300, 0.4, 0.41, 1.0];
        for w in cosines.windows(2) {
            assert!(cosine_order(w[0]) < cosine_order(w[1]), "{w:?}");
        }
        for c in cosines {
            assert_eq!(cosine_from_order(cosine_order(c)), c);
        }
    }
}
