//! Entities: deterministic extraction of the things a message mentions, the `MENTIONS` and
//! `CO_MENTIONED` edges, and per-entity first/last-seen times and mention counts.

use differential_dataflow::lattice::Lattice;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::sync::{Arc, LazyLock};
use timely::progress::Timestamp;

use crate::episodes::{episode_key, key_halves, Episode, SessionKey};
use crate::facts::{sentences, Sentence, Token, Word};
use crate::keyed_state::{fold_per_key_and_time, key_fingerprint, KeyedStates, Multiset};

/// How an entity was found. `Named` orders first: a name found both ways is `Named`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EntityKind {
    /// A capitalised span: a person, place, organisation, product.
    Named,
    /// The words after a determiner ("my *sister*", "the *new laptop*").
    NounPhrase,
}

/// `(tenant, user, entity name)`: entities are per user, identified by their normalised name.
pub type EntityKey = (String, String, String);

/// `(tenant, user, entity_a, entity_b)` with `entity_a < entity_b`.
pub type CoMentionKey = (String, String, String, String);

/// What [`entity_stats`] maintains per entity.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EntityStats {
    /// Event time of the earliest mentioning episode, microseconds since the Unix epoch.
    pub first_seen_micros: i64,
    /// Event time of the latest mentioning episode.
    pub last_seen_micros: i64,
    /// Number of distinct episodes mentioning the entity.
    pub mention_count: u64,
    /// `Named` when any mention is named.
    pub kind: EntityKind,
}

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

/// Lowercase words that may join the capitalised words of one name: "Bank *of* America", "Lord
/// *of the* Rings", "Ludwig *van* Beethoven", "Johnson *&* Johnson".
#[rustfmt::skip]
const NAME_CONNECTORS: &[&str] = &[
    "of", "the", "de", "da", "del", "der", "di", "du", "la", "le", "van", "von", "&",
];

/// Capitalised words that are not names: sentence openers, greetings, pronouns. Dropped from
/// the start of a capitalised span ("*Yesterday* Alice called" → "alice").
#[rustfmt::skip]
const NOT_NAMES: &[&str] = &[
    "the", "a", "an", "this", "that", "these", "those", "my", "our", "your", "his", "her", "their",
    "its", "yesterday", "today", "tomorrow", "tonight", "then", "now", "also", "but", "and", "or",
    "so", "when", "if", "after", "before", "while", "since", "last", "next", "please", "hi",
    "hello", "hey", "thanks", "thank", "dear", "yes", "no", "well", "oh", "ok", "okay", "what",
    "how", "why", "where", "who", "which", "can", "could", "would", "should", "do", "does", "did",
    "is", "are", "was", "were", "will", "we", "you", "he", "she", "they", "it", "there", "here",
    "maybe", "actually", "just", "sure", "great", "good", "sorry", "let's", "let", "as", "at", "in",
    "on", "for", "with", "from", "to", "by", "about", "all", "some", "every", "each", "not", "it's",
    "that's", "there's", "what's", "however", "anyway",
    // imperatives that open requests: "Ask Maria" is not a name
    "ask", "tell", "call", "remind", "send", "show", "give", "find", "help", "write", "make",
    "check", "look", "note", "remember", "book", "email", "text",
];

/// Capitalised but never part of a name: the first person, and days and months (times, not
/// things).
#[rustfmt::skip]
const NEVER_NAMES: &[&str] = &[
    "i", "i'm", "i've", "i'd", "i'll", "monday", "tuesday", "wednesday", "thursday", "friday",
    "saturday", "sunday", "january", "february", "march", "april", "may", "june", "july", "august",
    "september", "october", "november", "december",
];

/// Words after which a noun phrase starts.
const DETERMINERS: &[&str] = &["my", "the", "a", "an", "our", "his", "her", "their"];

/// Words that end a noun phrase (and cannot start one): function words, pronouns, auxiliaries,
/// frequent verbs and adverbs, and nouns too vague to be things ("a *lot*", "the *way*").
#[rustfmt::skip]
const NOUN_PHRASE_STOP_WORDS: &[&str] = &[
    // determiners and pronouns
    "my", "the", "a", "an", "our", "his", "her", "their", "your", "its", "this", "that", "these",
    "those", "i", "me", "you", "he", "him", "she", "it", "we", "us", "they", "them", "myself",
    "yourself", "mine", "yours", "ours", "theirs", "some", "any", "all", "each", "every", "both",
    "either", "neither", "other", "another", "such", "same", "own", "more", "most", "less", "least",
    "much", "many", "few", "several", "no", "none",
    // auxiliaries and frequent verbs
    "is", "am", "are", "was", "were", "be", "been", "being", "have", "has", "had", "having", "do",
    "does", "did", "doing", "will", "would", "shall", "should", "can", "could", "may", "might",
    "must", "get", "gets", "got", "go", "goes", "went", "gone", "going", "make", "makes", "made",
    "say", "says", "said", "know", "knows", "knew", "think", "thinks", "thought", "want", "wants",
    "wanted", "need", "needs", "needed", "like", "likes", "liked", "love", "loves", "loved", "live",
    "lives", "lived", "work", "works", "worked", "seem", "seems", "seemed", "feel", "feels", "felt",
    "look", "looks", "looked", "come", "comes", "came", "take", "takes", "took", "give", "gives",
    "gave", "tell", "tells", "told", "keep", "keeps", "kept", "start", "starts", "started", "use",
    "uses", "used", "try", "tries", "tried", "call", "calls", "called", "named", "find", "finds",
    "found", "see", "sees", "saw", "run", "runs", "ran", "help", "helps", "helped", "moved",
    "became", "becomes", "let",
    // prepositions and conjunctions
    "of", "in", "on", "at", "to", "for", "with", "from", "by", "about", "as", "into", "onto",
    "over", "under", "after", "before", "between", "through", "during", "without", "within",
    "against", "among", "around", "near", "than", "and", "or", "but", "nor", "so", "yet", "because",
    "although", "though", "while", "if", "unless", "until", "since", "when", "where", "whether",
    "which", "who", "whom", "whose", "what", "why", "how",
    // adverbs
    "not", "never", "very", "really", "just", "also", "too", "only", "even", "still", "already",
    "always", "often", "sometimes", "usually", "now", "then", "here", "there", "again", "ever",
    "quite", "rather", "almost", "yesterday", "today", "tomorrow", "tonight", "soon", "later",
    "yes", "ok", "okay", "please", "thanks",
    // vague nouns
    "lot", "bit", "couple", "kind", "sort", "way", "thing", "things", "something", "anything",
    "everything", "nothing", "one", "ones",
];

/// A word list as a set, for the long lists every word of every episode is looked up in (a
/// scan of [`NOUN_PHRASE_STOP_WORDS`] compared each word with three hundred).
type WordSet = LazyLock<HashSet<&'static str, foldhash::fast::FixedState>>;

static NOUN_PHRASE_STOP_SET: WordSet =
    LazyLock::new(|| NOUN_PHRASE_STOP_WORDS.iter().copied().collect());
static NOT_NAMES_SET: WordSet = LazyLock::new(|| NOT_NAMES.iter().copied().collect());

/// Noun phrases are cut after this many words: a longer run has usually run into a verb.
const MAX_NOUN_PHRASE_WORDS: usize = 3;

/// The entities `text` mentions: each normalised name once, in order of first appearance, with
/// the kind it was found as (`Named` when found both ways).
///
/// Names are normalised to their lowercase words, joined by single spaces, without a possessive
/// `'s` ("Alice's" → "alice"). Text is split into sentences at `.`, `!`, `?` and line breaks
/// (not after "Dr.", "Mr.", "St.", …), and into words and punctuation, as for
/// [`crate::facts::extract_facts`]. Two rules, applied to every sentence:
///
/// - **Named**: a maximal span of capitalised words, which may be joined by lowercase name
///   connectors ("of", "the", "van", "&", …; "Bank of America"), ended by punctuation, any other
///   word, or a possessive ("*Alice's* dog"). Leading sentence openers and greetings ("The",
///   "Yesterday", "Hi", …) are dropped from the span, "I" and days and months never belong to
///   one. A span that then starts the sentence counts only when it has at least two capitalised
///   words ("*New York* is big" counts, "*Paris* is big" does not: every sentence starts with a
///   capital).
/// - **NounPhrase**: after a determiner ("my", "the", "a", "an", "our", "his", "her", "their")
///   or a possessive ("Alice's"), the following words up to a stop word (a closed list of
///   function words, pronouns, auxiliaries, frequent verbs, adverbs, vague nouns) or
///   punctuation, at most three ("the *new laptop*"); a possessive word ends the phrase and acts
///   as a determiner for the next ("my *sister*'s *car*"). Words followed by a capitalised word
///   modify a name and are no phrase ("a new *Surface*"). A phrase of digits only is not an
///   entity.
///
/// No part-of-speech tagging: a verb outside the stop list can end up in a phrase ("the *dog
/// barks*"), plural and singular are different names.
pub fn extract_entities(text: &str) -> Vec<(String, EntityKind)> {
    text_entities(text).entities
}

/// The pairs of entities `text` mentions in one sentence: every `(a, b)` with `a < b` such that
/// some sentence of `text` mentions both (as [`extract_entities`] finds them), each pair once,
/// sorted.
///
/// Co-mention is counted within a sentence, not a whole message: a long answer listing forty
/// things does not relate each of them to every other (and would cost 780 pairs).
pub fn sentence_pairs(text: &str) -> Vec<(String, String)> {
    let found = text_entities(text);
    let name = |i: u32| found.entities[i as usize].0.clone();
    let mut pairs: Vec<(String, String)> = found
        .pairs
        .iter()
        .map(|&(a, b)| (name(a), name(b)))
        .collect();
    pairs.sort();
    pairs
}

/// The entities of one text and which of them share a sentence, from one pass of extraction.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TextEntities {
    /// What [`extract_entities`] gives.
    pub entities: Vec<(String, EntityKind)>,
    /// What [`sentence_pairs`] gives, as indices into `entities`: each `(a, b)` once, with
    /// `entities[a]`'s name before `entities[b]`'s.
    pub pairs: Vec<(u32, u32)>,
}

/// [`extract_entities`] and [`sentence_pairs`] of `text` at the cost of one.
pub fn text_entities(text: &str) -> TextEntities {
    let occurrences = entity_occurrences(text);
    let mut entities: Vec<(String, EntityKind)> = Vec::new();
    // the index in `entities` of each occurrence
    let mut index: Vec<u32> = Vec::with_capacity(occurrences.len());
    for (_, _, name, kind) in &occurrences {
        let i = match entities.iter().position(|(seen, _)| seen == name) {
            Some(i) => {
                entities[i].1 = entities[i].1.min(*kind);
                i
            }
            None => {
                entities.push((name.clone(), *kind));
                entities.len() - 1
            }
        };
        index.push(i as u32);
    }
    let mut pairs = Vec::new();
    let mut start = 0;
    for sentence in occurrences.chunk_by(|x, y| x.0 == y.0) {
        let mut names: Vec<u32> = index[start..start + sentence.len()].to_vec();
        start += sentence.len();
        names.sort_unstable_by(|&a, &b| entities[a as usize].0.cmp(&entities[b as usize].0));
        names.dedup();
        for (i, &a) in names.iter().enumerate() {
            for &b in &names[i + 1..] {
                pairs.push((a, b));
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    TextEntities { entities, pairs }
}

/// Every entity occurrence in `text` as `(sentence number, word slot, name, kind)`, in order.
fn entity_occurrences(text: &str) -> Vec<(usize, usize, String, EntityKind)> {
    let mut found: Vec<(usize, usize, String, EntityKind)> = Vec::new();
    for (sentence_number, sentence) in sentences(text).iter().enumerate() {
        let slots = word_slots(sentence);
        for (slot, name, kind) in named_spans(&slots).into_iter().chain(noun_phrases(&slots)) {
            found.push((sentence_number, slot, name, kind));
        }
    }
    found.sort();
    found
}

/// The tokens of a sentence as slots: `Some(word)`, or `None` for punctuation.
fn word_slots(sentence: &Sentence) -> Vec<Option<&Word>> {
    sentence
        .tokens
        .iter()
        .map(|token| match token {
            Token::Word(word) => Some(word),
            Token::Punct(_) => None,
        })
        .collect()
}

fn is_name_word(word: &Word) -> bool {
    word.text.starts_with(|c: char| c.is_uppercase()) && !NEVER_NAMES.contains(&word.lower.as_str())
}

fn normalised_name(words: &[&Word]) -> String {
    let mut name = String::with_capacity(words.iter().map(|w| w.lower.len() + 1).sum());
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            name.push(' ');
        }
        if word.text.is_ascii() {
            // the lowercase word is at hand, and for ASCII the possessive is its last two bytes
            let lower = word.lower.as_str();
            name.push_str(if word.is_possessive() {
                &lower[..lower.len() - 2]
            } else {
                lower
            });
        } else {
            // lowercasing can depend on the end of the word (a final sigma): cut it first
            name.push_str(&word.without_possessive().to_lowercase());
        }
    }
    name
}

/// The named spans of a sentence's [`word_slots`] as `(slot of their first word, name, Named)`.
fn named_spans(slots: &[Option<&Word>]) -> Vec<(usize, String, EntityKind)> {
    let first_word_slot = slots.iter().position(Option::is_some);
    let mut spans = Vec::new();
    // (slot, word) of the current span; connectors are only kept once a name word follows them
    let mut span: Vec<(usize, &Word)> = Vec::new();
    let mut pending_connectors: Vec<(usize, &Word)> = Vec::new();
    for (slot, word) in slots.iter().enumerate() {
        let continues_span = match word {
            Some(word) if is_name_word(word) => {
                span.append(&mut pending_connectors);
                span.push((slot, word));
                !word.is_possessive()
            }
            Some(word) if !span.is_empty() && NAME_CONNECTORS.contains(&word.lower.as_str()) => {
                pending_connectors.push((slot, word));
                true
            }
            _ => false,
        };
        if !continues_span {
            pending_connectors.clear();
            if let Some(named) = finish_span(std::mem::take(&mut span), first_word_slot) {
                spans.push(named);
            }
        }
    }
    spans.extend(finish_span(span, first_word_slot));
    spans
}

fn finish_span(
    span: Vec<(usize, &Word)>,
    first_word_slot: Option<usize>,
) -> Option<(usize, String, EntityKind)> {
    let not_a_name_start = |(_, w): &(usize, &Word)| {
        NOT_NAMES_SET.contains(w.lower.as_str()) || NAME_CONNECTORS.contains(&w.lower.as_str())
    };
    let span: Vec<(usize, &Word)> = span.into_iter().skip_while(not_a_name_start).collect();
    let (start_slot, _) = *span.first()?;
    let capitalised_words = span.iter().filter(|(_, w)| is_name_word(w)).count();
    if Some(start_slot) == first_word_slot && capitalised_words < 2 {
        return None;
    }
    let words: Vec<&Word> = span.iter().map(|(_, w)| *w).collect();
    Some((start_slot, normalised_name(&words), EntityKind::Named))
}

/// The noun phrases of a sentence's [`word_slots`] as `(slot of their first word, name,
/// NounPhrase)`.
fn noun_phrases(slots: &[Option<&Word>]) -> Vec<(usize, String, EntityKind)> {
    let mut phrases = Vec::new();
    let mut phrase: Vec<(usize, &Word)> = Vec::new();
    let mut after_determiner = false;
    let mut emit = |phrase: &mut Vec<(usize, &Word)>| {
        let words: Vec<&Word> = phrase.iter().map(|(_, w)| *w).collect();
        let all_digits = words
            .iter()
            .all(|w| w.lower.chars().all(|c| c.is_ascii_digit()));
        if let Some((start_slot, _)) = phrase.first() {
            if !all_digits {
                phrases.push((*start_slot, normalised_name(&words), EntityKind::NounPhrase));
            }
        }
        phrase.clear();
    };
    for (slot, word) in slots.iter().enumerate() {
        let Some(word) = word else {
            emit(&mut phrase);
            after_determiner = false;
            continue;
        };
        let is_stop_word = NOUN_PHRASE_STOP_SET.contains(word.lower.as_str());
        if after_determiner && !is_stop_word {
            if is_name_word(word) {
                // "a new Surface": the words so far modify a name, which `named_spans` finds
                phrase.clear();
            } else {
                phrase.push((slot, word));
                if word.is_possessive() {
                    // "my sister's car": "sister", then "car" as if after a determiner
                    emit(&mut phrase);
                } else if phrase.len() == MAX_NOUN_PHRASE_WORDS {
                    emit(&mut phrase);
                    after_determiner = false;
                }
                continue;
            }
        }
        emit(&mut phrase);
        after_determiner = DETERMINERS.contains(&word.lower.as_str()) || word.is_possessive();
    }
    emit(&mut phrase);
    phrases
}

// ---------------------------------------------------------------------------------------------
// Operators
// ---------------------------------------------------------------------------------------------

/// Each entity an episode mentions, with the episode's time, id and the entity's kind.
fn episode_mentions(
    (tenant, user, _session): &SessionKey,
    episode: &Episode,
) -> Vec<(EntityKey, EntityKind)> {
    extract_entities(&episode.content)
        .into_iter()
        .map(|(name, kind)| ((tenant.clone(), user.clone(), name), kind))
        .collect()
}

/// The `MENTIONS` edges.
///
/// Input: episodes keyed by their session, as for [`crate::episodes::next_edges`]. Output: one
/// record `((tenant, user, entity), episode_id)`, with multiplicity 1, for every entity that
/// [`extract_entities`] finds in the content of an episode, with the episode's tenant, user and
/// id. A record is present when the summed multiplicity of the input episodes that produce it
/// is positive: an episode present more than once counts once, a retracted one not at all. The
/// session plays no part. Episodes of every role are read; filter them beforehand to restrict
/// that.
///
/// Cost: extraction is per episode and stateless; the output is kept in one arrangement.
pub fn mentions<'scope, T>(
    episodes: VecCollection<'scope, T, (SessionKey, Episode)>,
) -> VecCollection<'scope, T, (EntityKey, String)>
where
    T: Timestamp + Lattice + Ord,
{
    episodes
        .flat_map(|(session, episode)| {
            episode_mentions(&session, &episode)
                .into_iter()
                .map(|(entity, _kind)| (entity, episode.id.clone()))
                .collect::<Vec<_>>()
        })
        .threshold(|_mention, multiplicity| if *multiplicity > 0 { 1 } else { 0 })
}

/// The entities of one episode, extracted once for every view that needs them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct EpisodeEntities {
    /// The episode's [`episode_key`], in [`key_halves`] as the mention states keep it.
    pub key: [u64; 2],
    pub ts_micros: i64,
    /// Shared: both entity views read it (a copy for each was four or five strings).
    #[serde(
        serialize_with = "serialize_found",
        deserialize_with = "deserialize_found"
    )]
    pub found: Arc<TextEntities>,
}

// By hand: serde's `Arc` impls need its `rc` feature.
fn serialize_found<S: serde::Serializer>(
    found: &Arc<TextEntities>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    found.as_ref().serialize(serializer)
}

fn deserialize_found<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Arc<TextEntities>, D::Error> {
    TextEntities::deserialize(deserializer).map(Arc::new)
}

/// Each episode's entities, for [`entity_stats_of`] and [`co_mentions_of`].
///
/// Input: episodes keyed by their session, as for [`mentions`]. Output: for each input record,
/// with its multiplicity, `((tenant, user), entities)` where `entities` holds the episode's
/// [`episode_key`], `ts_micros` and [`text_entities`] of its content. Episodes with no entity
/// give no record. Stateless: extraction runs once per episode update, however many views
/// read the result (instead of once per view).
pub fn episode_entities<'scope>(
    episodes: VecCollection<'scope, u64, (SessionKey, Episode)>,
) -> VecCollection<'scope, u64, ((String, String), EpisodeEntities)> {
    episodes.flat_map(|((tenant, user, _session), episode)| {
        let found = text_entities(&episode.content);
        (!found.entities.is_empty()).then(|| {
            let entities = EpisodeEntities {
                key: key_halves(episode_key(&episode.id)),
                ts_micros: episode.ts_micros,
                found: Arc::new(found),
            };
            ((tenant, user), entities)
        })
    })
}

/// The `MENTIONS` edges of the episodes whose [`episode_entities`] are given.
///
/// Input: `((tenant, user), entities)` records. Output: for each input record and each entity
/// [`extract_entities`] found in its episode, the record `((tenant, user, entity), key)` (`key`:
/// the episode's [`episode_key`] in [`key_halves`]) with the input's multiplicity: an episode
/// present twice mentions its entities twice, a retracted one retracts them.
///
/// Cost: stateless, one record per mention; nothing is arranged (the views count the edges).
pub fn mention_edges_of<'scope>(
    episode_entities: VecCollection<'scope, u64, ((String, String), EpisodeEntities)>,
) -> VecCollection<'scope, u64, (EntityKey, [u64; 2])> {
    episode_entities.flat_map(|((tenant, user), e)| {
        let key = e.key;
        e.found
            .entities
            .iter()
            .map(|(name, _)| ((tenant.clone(), user.clone(), name.clone()), key))
            .collect::<Vec<_>>()
    })
}

/// The `CO_MENTIONED` edges and their weights.
///
/// Input: episodes keyed by their session, as for [`mentions`]. Output: for every tenant, user
/// and pair of entities `a < b` that one sentence of at least one episode of that tenant and
/// user mentions together ([`sentence_pairs`]), the record `((tenant, user, a, b), weight)`
/// with multiplicity 1, where `weight` is the number of distinct episode ids with such a
/// sentence. An episode counts when the summed multiplicity of the input episodes with its id
/// and content is positive (present more than once: once; retracted: not at all).
///
/// Cost: pairs are derived per episode and stateless (quadratic in the entities of one
/// sentence); each pair mention then costs a hash lookup and O(log n) in the pair's n mentions
/// ([`fold_per_key_and_time`] per user). State: per pair, its episodes' 16-byte
/// [`episode_key`]s (so "distinct episode ids" holds up to a 128-bit hash collision of two
/// non-UUID ids), found by a 16-byte [`key_fingerprint`] of the pair's names.
pub fn co_mentions<'scope>(
    episodes: VecCollection<'scope, u64, (SessionKey, Episode)>,
) -> VecCollection<'scope, u64, (CoMentionKey, u64)> {
    co_mentions_of(episode_entities(episodes))
}

/// [`co_mentions`] of the episodes whose [`episode_entities`] are given.
///
/// State per user (each user's episodes go to one worker): per pair of names, its episodes. A
/// time's episodes of a user are folded at once, so a pair mentioned often in a batch emits
/// its net change once.
pub fn co_mentions_of<'scope>(
    episode_entities: VecCollection<'scope, u64, ((String, String), EpisodeEntities)>,
) -> VecCollection<'scope, u64, (CoMentionKey, u64)> {
    fold_per_key_and_time(
        episode_entities,
        "CoMentions",
        |_user, pairs: &mut UserCoMentions, updates, out| {
            fold_user_co_mentions(pairs, updates, out)
        },
    )
    .map(|((tenant, user), ((a, b), weight))| ((tenant, user, a, b), weight))
}

/// What [`co_mentions_of`] keeps per user: per pair of names (by [`key_fingerprint`]), the
/// distinct episodes mentioning both.
type UserCoMentions = KeyedStates<CountedSet<[u64; 2]>, 0>;

/// `((a, b), weight)`: a pair of entity names and how many episodes mention both.
type PairWeight = ((String, String), u64);

/// Folds in a time's updates of a user's episodes and pushes each pair's net change of weight.
fn fold_user_co_mentions(
    pairs: &mut UserCoMentions,
    updates: &[(&EpisodeEntities, isize)],
    out: &mut Vec<(PairWeight, isize)>,
) {
    // every pair mention of the time: (a, b, episode key, diff)
    let mentions: Vec<(&str, &str, [u64; 2], isize)> = updates
        .iter()
        .flat_map(|&(episode, diff)| {
            let entities = &episode.found.entities;
            episode.found.pairs.iter().map(move |&(a, b)| {
                let name = |i: u32| entities[i as usize].0.as_str();
                (name(a), name(b), episode.key, diff)
            })
        })
        .collect();
    let keys: Vec<u128> = mentions
        .iter()
        .map(|(a, b, _, _)| key_fingerprint(&(a, b)))
        .collect();
    let changes = pairs.fold_net_changes(
        &keys,
        |episodes| episodes.present,
        |i, episodes| {
            let (_, _, key, diff) = mentions[i];
            episodes.update(key, diff);
        },
    );
    for (i, before, after) in changes {
        let pair = || (mentions[i].0.to_string(), mentions[i].1.to_string());
        if before > 0 {
            out.push(((pair(), before), -1));
        }
        if after > 0 {
            out.push(((pair(), after), 1));
        }
    }
}

/// A [`Multiset`] that also counts its present values.
#[derive(Debug, Default)]
struct CountedSet<T> {
    values: Multiset<T>,
    present: u64,
}

impl<T: Ord> CountedSet<T> {
    /// Applies the update; returns whether the count of present values changed.
    fn update(&mut self, value: T, diff: isize) -> bool {
        match self.values.update(value, diff) {
            Some(true) => self.present += 1,
            Some(false) => self.present -= 1,
            None => return false,
        }
        true
    }
}

/// What [`entity_stats`] keeps per entity: its mentions, and the aggregates of the present ones.
#[derive(Debug, Default)]
struct EntityMentions {
    /// (episode key, time, kind) of each mention.
    mentions: Multiset<([u64; 2], i64, EntityKind)>,
    /// The least and greatest event time of the present mentions (meaningless while none is
    /// present). Kept, not derived from `mentions` (sorted by episode): a retraction of the
    /// first or last mention looks through the rest, but retractions are rare and a sorted
    /// multiset of the times cost 16 bytes and more per mention.
    first: i64,
    last: i64,
    /// Distinct episodes among the present mentions.
    episodes: u64,
    /// Present mentions found as names.
    named: u64,
}

impl EntityMentions {
    fn stats(&self) -> Option<EntityStats> {
        // every present mention has an episode: none counted, none present
        (self.episodes > 0).then_some(EntityStats {
            first_seen_micros: self.first,
            last_seen_micros: self.last,
            mention_count: self.episodes,
            kind: if self.named > 0 {
                EntityKind::Named
            } else {
                EntityKind::NounPhrase
            },
        })
    }

    /// Whether another present mention has this episode key (mentions sort by key first, so
    /// any such mention is next to it).
    fn episode_has_other(&self, mention: &([u64; 2], i64, EntityKind)) -> bool {
        let same = |m: Option<&([u64; 2], i64, EntityKind)>| m.is_some_and(|m| m.0 == mention.0);
        same(self.mentions.present_before(mention)) || same(self.mentions.present_after(mention))
    }
}

/// First and last time seen, mention count and kind of every entity.
///
/// Input: episodes keyed by their session, as for [`mentions`]. Output: one record
/// `((tenant, user, entity), stats)` with multiplicity 1 for every entity some episode of that
/// tenant and user mentions ([`extract_entities`]), where over those mentioning episodes
/// `first_seen_micros` is the least `ts_micros`, `last_seen_micros` the greatest,
/// `mention_count` the number of distinct episode ids, and `kind` is `Named` when any of them
/// mentions the entity as named. A mention counts when the summed multiplicity of the input
/// episodes giving that same (entity, ts, episode id, kind) is positive (an episode present more
/// than once counts once). Retracting the first or last mention moves `first_seen` or
/// `last_seen` back to the remaining ones.
///
/// Cost: a hash lookup and O(log n) per mention of an entity with n mentions
/// ([`fold_per_key_and_time`] per user). State: per mention (time, [`episode_key`], kind) in a
/// sorted vector, and its time in another; per entity, a 16-byte [`key_fingerprint`] of its
/// name.
pub fn entity_stats<'scope>(
    episodes: VecCollection<'scope, u64, (SessionKey, Episode)>,
) -> VecCollection<'scope, u64, (EntityKey, EntityStats)> {
    entity_stats_of(episode_entities(episodes))
}

/// [`entity_stats`] of the episodes whose [`episode_entities`] are given.
///
/// State per user (each user's episodes go to one worker): each entity's mentions. A time's
/// episodes of a user are folded at once, so an entity mentioned often in a batch emits
/// its net change of stats once.
pub fn entity_stats_of<'scope>(
    episode_entities: VecCollection<'scope, u64, ((String, String), EpisodeEntities)>,
) -> VecCollection<'scope, u64, (EntityKey, EntityStats)> {
    fold_per_key_and_time(
        episode_entities,
        "EntityStats",
        |_user, entities: &mut UserEntityMentions, updates, out| {
            fold_user_entities(entities, updates, out)
        },
    )
    .map(|((tenant, user), (name, stats))| ((tenant, user, name), stats))
}

/// What [`entity_stats_of`] keeps per user: each entity's mentions, by [`key_fingerprint`] of
/// its name.
type UserEntityMentions = KeyedStates<EntityMentions, 0>;

/// Folds in a time's updates of a user's episodes and pushes each entity's net change of
/// stats, `(name, stats)`.
fn fold_user_entities(
    entities: &mut UserEntityMentions,
    updates: &[(&EpisodeEntities, isize)],
    out: &mut Vec<((String, EntityStats), isize)>,
) {
    // every entity mention of the time: (name, mention, diff)
    let mentions: Vec<(&str, ([u64; 2], i64, EntityKind), isize)> = updates
        .iter()
        .flat_map(|&(episode, diff)| {
            let (key, ts) = (episode.key, episode.ts_micros);
            let found = &episode.found.entities;
            found
                .iter()
                .map(move |(name, kind)| (name.as_str(), (key, ts, *kind), diff))
        })
        .collect();
    let keys: Vec<u128> = mentions
        .iter()
        .map(|(name, _, _)| key_fingerprint(name))
        .collect();
    let changes = entities.fold_net_changes(&keys, EntityMentions::stats, |i, mentions_of| {
        let (_, mention, diff) = &mentions[i];
        mentions_of.update(mention, *diff);
    });
    for (i, before, after) in changes {
        let name = mentions[i].0;
        out.extend(before.map(|b| ((name.to_string(), b), -1)));
        out.extend(after.map(|a| ((name.to_string(), a), 1)));
    }
}

impl EntityMentions {
    /// Folds in one update of a mention.
    fn update(&mut self, mention: &([u64; 2], i64, EntityKind), diff: isize) {
        let was_empty = self.episodes == 0;
        let Some(present) = self.mentions.update(*mention, diff) else {
            return;
        };
        let step = |n: &mut u64| if present { *n += 1 } else { *n -= 1 };
        if !self.episode_has_other(mention) {
            step(&mut self.episodes);
        }
        let (_, ts, kind) = *mention;
        if present && was_empty {
            (self.first, self.last) = (ts, ts);
        } else if present {
            (self.first, self.last) = (self.first.min(ts), self.last.max(ts));
        } else if self.episodes > 0 && (ts == self.first || ts == self.last) {
            let times = self.mentions.present().map(|(_, ts, _)| *ts);
            (self.first, self.last) =
                times.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
        }
        if kind == EntityKind::Named {
            step(&mut self.named);
        }
    }
}

#[cfg(test)]
mod tests;
