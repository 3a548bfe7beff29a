//! Facts: deterministic extraction of first-person statements from a message, and the validity
//! intervals of each `(tenant, user, subject, attribute)` as new values supersede old ones.
//!
//! Extraction runs on the ingest path, so it is rule-based and cheap: no model, no I/O. It aims
//! for precision over recall — a missed fact costs little (the optional asynchronous LLM
//! extractor can publish it later), a wrong fact pollutes every later prompt.

use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------------------------------------
// Text: sentences and words. Shared with `entities`.
// ---------------------------------------------------------------------------------------------

/// A word as written, with its lowercase form for matching.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    pub text: String,
    pub lower: String,
}

impl Word {
    fn new(text: &str) -> Word {
        Word {
            text: text.to_string(),
            lower: text.to_lowercase(),
        }
    }

    /// The word without a trailing possessive `'s` (`"Alice's"` → `"Alice"`).
    pub fn without_possessive(&self) -> &str {
        if self.is_possessive() {
            &self.text[..self.text.len() - 2]
        } else {
            &self.text
        }
    }

    /// Ends in `'s` and is not a contraction of "is" with a pronoun ("it's", "that's", …).
    pub fn is_possessive(&self) -> bool {
        self.lower.len() > 2
            && self.lower.ends_with("'s")
            && !IS_CONTRACTIONS.contains(&self.lower.as_str())
    }
}

/// Words ending in `'s` that are "… is", not possessives.
#[rustfmt::skip]
const IS_CONTRACTIONS: &[&str] = &[
    "it's", "that's", "there's", "what's", "he's", "she's", "who's", "here's", "let's", "where's",
    "how's", "when's", "why's",
];

/// A word or a single punctuation character (a clause boundary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Word(Word),
    Punct(char),
}

/// The tokens of one sentence, without its terminator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sentence {
    pub tokens: Vec<Token>,
    /// Ended with `?`: a question states nothing about the speaker.
    pub is_question: bool,
}

/// Splits `text` into sentences of words and punctuation.
///
/// A word is a run of alphanumeric characters, joined across a single `'`, `-`, `.` or `&`
/// between two alphanumerics (`don't`, `e-mail`, `3.5`, `AT&T`); a lone `&` is a word too (it joins
/// names: "Johnson & Johnson"). Curly apostrophes count as `'`. Sentences end at `.`, `!`, `?`
/// and line breaks, except a `.` right after a known abbreviation ("Dr. Smith").
pub(crate) fn sentences(text: &str) -> Vec<Sentence> {
    let mut result = Vec::new();
    let mut tokens: Vec<Token> = Vec::new();
    // the byte where the current word starts; words are cut from `text`, not built a char at
    // a time
    let mut word_start: Option<usize> = None;
    let mut end_sentence = |tokens: &mut Vec<Token>, is_question: bool| {
        if tokens.iter().any(|t| matches!(t, Token::Word(_))) {
            result.push(Sentence {
                tokens: std::mem::take(tokens),
                is_question,
            });
        }
        tokens.clear();
    };
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let c = if c == '\u{2019}' { '\'' } else { c };
        let joins_word = matches!(c, '\'' | '-' | '.' | '&')
            && word_start.is_some()
            && chars.peek().is_some_and(|(_, n)| n.is_alphanumeric());
        if c.is_alphanumeric() || joins_word {
            word_start.get_or_insert(at);
            continue;
        }
        let word = word_start.take().map(|start| &text[start..at]);
        // only a full stop asks (lowercasing every word for it cost an allocation a word)
        let after_abbreviation =
            c == '.' && word.is_some_and(crate::english_terms::is_abbreviation);
        if let Some(word) = word {
            tokens.push(Token::Word(word_of(word)));
        }
        match c {
            '.' if after_abbreviation => {}
            '.' | '!' | '\n' => end_sentence(&mut tokens, false),
            '?' => end_sentence(&mut tokens, true),
            '&' => tokens.push(Token::Word(Word::new("&"))),
            c if c.is_whitespace() => {}
            c => tokens.push(Token::Punct(c)),
        }
    }
    if let Some(start) = word_start {
        tokens.push(Token::Word(word_of(&text[start..])));
    }
    end_sentence(&mut tokens, false);
    result
}

/// The word of `text`'s slice, with curly apostrophes as `'`.
fn word_of(slice: &str) -> Word {
    if slice.contains('\u{2019}') {
        Word::new(&slice.replace('\u{2019}', "'"))
    } else {
        Word::new(slice)
    }
}

// ---------------------------------------------------------------------------------------------
// Extraction
// ---------------------------------------------------------------------------------------------

/// The subject of every first-person fact.
pub const USER_SUBJECT: &str = "user";

/// Whether a new value of an attribute replaces the old one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Cardinality {
    /// One value at a time (`lives_in`, `name`, `age`): a new value supersedes the old.
    One,
    /// Values accumulate (`likes`, `allergic_to`): liking jazz does not stop when one says one
    /// likes pizza. Key such facts by attribute *and* value ([`ExtractedFact::key_attribute`]) so
    /// that a new value does not close the old one.
    Many,
}

/// A `(subject, attribute, value)` statement found in a message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ExtractedFact {
    /// [`USER_SUBJECT`] for first-person statements.
    pub subject: String,
    /// Lowercase, words joined by `_` (see [`normalise_attribute`]).
    pub attribute: String,
    /// As written, words separated by single spaces.
    pub value: String,
    pub cardinality: Cardinality,
}

impl ExtractedFact {
    /// The attribute to key the fact by in [`facts_over_time`]: the attribute itself for
    /// [`Cardinality::One`]; `attribute:value` (value lowercased) for [`Cardinality::Many`], so
    /// each liked thing has its own timeline.
    pub fn key_attribute(&self) -> String {
        match self.cardinality {
            Cardinality::One => self.attribute.clone(),
            Cardinality::Many => format!(
                "{}:{}",
                self.attribute,
                value_identity(&self.value).join(" ")
            ),
        }
    }
}

/// The attribute of a fact key ([`ExtractedFact::key_attribute`]): a many-valued key without
/// its `:value` (a colon no space follows; "preference: units" is an attribute of its own).
pub fn attribute_of_key(key: &str) -> &str {
    let keyed = key
        .match_indices(':')
        .find(|(at, _)| !key[at + 1..].starts_with(' '));
    keyed.map_or(key, |(at, _)| &key[..at])
}

/// Lowercase; a possessive `'s` dropped; every run of other characters than letters and digits
/// becomes one `_`, none at either end. `"Dog's Name"` → `"dog_name"`, `"favorite  color"` →
/// `"favorite_color"`.
pub fn normalise_attribute(attribute: &str) -> String {
    let lower = attribute
        .replace('\u{2019}', "'")
        .to_lowercase()
        .replace("'s", "");
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join("_")
}

/// Contractions expanded before matching, so "I'm" matches the rules written for "I am".
const CONTRACTIONS: &[(&str, &[&str])] = &[
    ("i'm", &["I", "am"]),
    ("i've", &["I", "have"]),
    ("i'd", &["I", "would"]),
    ("i'll", &["I", "will"]),
    ("don't", &["do", "not"]),
    ("doesn't", &["does", "not"]),
    ("didn't", &["did", "not"]),
    ("can't", &["can", "not"]),
    ("cannot", &["can", "not"]),
    ("won't", &["will", "not"]),
    ("isn't", &["is", "not"]),
    ("wasn't", &["was", "not"]),
    ("aren't", &["are", "not"]),
    ("haven't", &["have", "not"]),
];

/// Adverbs that may sit inside a pattern ("I *just* moved to", "I *really* like"); at most two.
#[rustfmt::skip]
const ADVERBS: &[&str] = &[
    "really", "just", "recently", "now", "currently", "also", "still", "actually", "definitely",
    "generally", "usually", "always", "strongly", "totally", "absolutely", "finally", "officially",
    "much", "truly", "honestly",
];

/// Words that, earlier in the same clause, make a statement hypothetical, negated or reported
/// rather than a fact: "*if* I moved to Paris", "it's *not* true my name is Bob".
#[rustfmt::skip]
const NON_FACT_CUES: &[&str] = &[
    "if", "whether", "unless", "suppose", "supposing", "imagine", "pretend", "maybe", "perhaps",
    "wonder", "wish", "what", "how", "why", "not", "never", "let's", "hypothetically", "would",
    "could", "should", "might",
];

/// Ends a value wherever it occurs after the value's first word: a new clause starts.
#[rustfmt::skip]
const CLAUSE_BOUNDARIES: &[&str] = &[
    "and", "but", "or", "because", "so", "since", "although", "though", "while", "whereas", "when",
    "where", "which", "who", "whose", "that", "if", "unless", "until", "than", "rather", "instead",
    "over", "now", "anymore", "too", "also", "again", "lately", "nowadays", "currently", "today",
    "yesterday", "tomorrow", "originally", "these", "this", "last", "next", "every", "ago", "very",
    "either", "lol", "lmao", "haha", "hahaha", "rofl", "tbh", "btw", "imo", "imho", "fyi", "jk",
];

/// Also ends a value of a place, an employer or an occupation: "Berlin *in* 2019", "Google *as*
/// an engineer". Opinions keep them ("I prefer answers *with* examples").
#[rustfmt::skip]
const PREPOSITIONS: &[&str] = &[
    "in", "on", "at", "to", "from", "with", "as", "by", "near", "for", "after", "before", "during",
    "around",
];

/// A value starting with one of these refers to something else, or negates: "I like *it*",
/// "my name is *not* Bob", "I like *how* you answered".
#[rustfmt::skip]
const NON_VALUE_STARTS: &[&str] = &[
    "not", "no", "never", "it", "that", "this", "these", "those", "them", "him", "her", "you",
    "your", "yours", "what", "how", "why", "where", "when", "who", "which", "whether", "there",
    "here", "something", "anything", "nothing", "same", "one", "me", "myself", "so", "such",
];

/// "I like *to think*…" is a figure of speech, not a liking.
#[rustfmt::skip]
const FIGURES_OF_SPEECH_AFTER_TO: &[&str] = &[
    "think", "know", "say", "believe", "ask", "hear", "imagine", "point", "mention",
];

/// "my X is Y" where X is one of these is conversation, not a fact about the user.
#[rustfmt::skip]
const NON_FACT_ATTRIBUTES: &[&str] = &[
    "question", "point", "guess", "bad", "pleasure", "understanding", "fault", "mistake", "concern",
    "issue", "problem", "request", "answer", "thought", "thoughts", "bet", "hope", "worry",
    "apologies", "turn", "take", "excuse", "reason", "idea", "suggestion", "feeling", "impression",
    "opinion", "advice", "experience",
];

/// Words that cannot be part of an attribute in "my X is Y".
#[rustfmt::skip]
const ATTRIBUTE_STOP_WORDS: &[&str] = &[
    "and", "or", "but", "the", "a", "an", "to", "that", "which", "who", "it", "i", "you", "he",
    "she", "we", "they", "is", "am", "are", "was", "were", "be", "not", "my", "your", "if", "when",
    "in", "on", "at", "with", "for", "so",
];

/// Adjectives that say "this is the value now"; dropped from attributes so that "my new
/// address is X" updates `address`.
const CURRENTNESS_ADJECTIVES: &[&str] = &["new", "current", "present", "actual"];

/// Values are cut after this many words: a longer run means the rule went past the fact.
const MAX_VALUE_WORDS: usize = 8;

/// How a value of a rule ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueShape {
    /// A place, an employer, an occupation: ends at a clause boundary or a preposition.
    Place,
    /// An opinion or a description: ends at a clause boundary only.
    Phrase,
    /// A name: ends like a place, and must start with a capital letter — "call me *back*" is
    /// not a name.
    Name,
    /// A number of years: digits only.
    Years,
}

/// A first-person rule: after "I", the words of `verb` (adverbs allowed between them), then
/// the value.
struct FirstPersonRule {
    verb: &'static [&'static str],
    attribute: &'static str,
    shape: ValueShape,
    cardinality: Cardinality,
}

const fn rule(
    verb: &'static [&'static str],
    attribute: &'static str,
    shape: ValueShape,
    cardinality: Cardinality,
) -> FirstPersonRule {
    FirstPersonRule {
        verb,
        attribute,
        shape,
        cardinality,
    }
}

use Cardinality::{Many, One};
use ValueShape::{Name, Phrase, Place, Years};

/// The first-person rules, tried in this order. Only present-tense statements and moves: "I
/// lived in Paris" says nothing about now, "I moved to Paris" does.
#[rustfmt::skip]
const FIRST_PERSON_RULES: &[FirstPersonRule] = &[
    rule(&["moved", "to"], "lives_in", Place, One),
    rule(&["have", "moved", "to"], "lives_in", Place, One),
    rule(&["relocated", "to"], "lives_in", Place, One),
    rule(&["have", "relocated", "to"], "lives_in", Place, One),
    rule(&["live", "in"], "lives_in", Place, One),
    rule(&["am", "living", "in"], "lives_in", Place, One),
    rule(&["am", "based", "in"], "lives_in", Place, One),
    rule(&["work", "at"], "works_at", Place, One),
    rule(&["work", "for"], "works_at", Place, One),
    rule(&["am", "working", "at"], "works_at", Place, One),
    rule(&["am", "working", "for"], "works_at", Place, One),
    rule(&["started", "working", "at"], "works_at", Place, One),
    rule(&["started", "working", "for"], "works_at", Place, One),
    rule(&["have", "started", "working", "at"], "works_at", Place, One),
    rule(&["have", "started", "working", "for"], "works_at", Place, One),
    rule(&["am", "employed", "at"], "works_at", Place, One),
    rule(&["am", "employed", "by"], "works_at", Place, One),
    rule(&["work", "as"], "occupation", Place, One),
    rule(&["am", "working", "as"], "occupation", Place, One),
    rule(&["am", "from"], "origin", Place, One),
    rule(&["come", "from"], "origin", Place, One),
    rule(&["was", "born", "in"], "birthplace", Place, One),
    rule(&["am", "called"], "name", Name, One),
    rule(&["go", "by"], "name", Name, One),
    rule(&["am", "allergic", "to"], "allergic_to", Phrase, Many),
    rule(&["prefer"], "prefers", Phrase, Many),
    rule(&["would", "prefer"], "prefers", Phrase, Many),
    rule(&["like"], "likes", Phrase, Many),
    rule(&["love"], "likes", Phrase, Many),
    rule(&["enjoy"], "likes", Phrase, Many),
    rule(&["do", "not", "like"], "dislikes", Phrase, Many),
    rule(&["do", "not", "enjoy"], "dislikes", Phrase, Many),
    rule(&["dislike"], "dislikes", Phrase, Many),
    rule(&["hate"], "dislikes", Phrase, Many),
    rule(&["can", "not", "stand"], "dislikes", Phrase, Many),
    rule(&["am"], "age", Years, One),
    rule(&["turned"], "age", Years, One),
    rule(&["have", "turned"], "age", Years, One),
];

/// The first-person facts stated in `text`, a message written by the user, in order of
/// appearance, without duplicates.
///
/// The rules, matched case-insensitively within one clause (a stretch between punctuation) of
/// a sentence that is not a question, "I'm"/"don't"/… expanded, up to two adverbs ("just",
/// "really", …) allowed inside the verb:
///
/// | statement | attribute | cardinality |
/// | --- | --- | --- |
/// | my X is Y · my X's Y · my X is called/named Y (→ `X_name`) | X, normalised | one |
/// | I moved/relocated to Y · I live/am living/am based in Y | `lives_in` | one |
/// | I work at/for Y · I am working at/for Y · I started working at/for Y · I am employed at/by Y | `works_at` | one |
/// | I work as Y · I am working as Y | `occupation` | one |
/// | I am / come from Y | `origin` | one |
/// | I was born in Y | `birthplace`, or `birth_year` when Y is a year | one |
/// | I am called Y · I go by Y · call me Y (Y capitalised) | `name` | one |
/// | I am N years old · I (have) turned N | `age` | one |
/// | I have (got) a/an X named/called Y | `X_name` | one |
/// | my R Name (R a relation: sister, boss, …; [`kin`]) | R | many |
/// | I prefer Y · I'd prefer Y | `prefers` | many |
/// | I like/love/enjoy Y | `likes` | many |
/// | I don't like/enjoy Y · I dislike/hate Y · I can't stand Y | `dislikes` | many |
/// | I'm allergic to Y | `allergic_to` | many |
///
/// X is one to four words ("favorite color", "dog's name"), none of them a function word, and
/// not conversational ("my question is …", "my point is …"); "new"/"current" are dropped from it.
/// Y starts after the pattern, without a leading "a"/"an"/"the" (and, after "my X is", without
/// a leading "in"/"on"/"at"), and ends at punctuation, at a clause word ("and", "but",
/// "because", "which", "now", "anymore", "a lot", …), for places, employers and names also at a
/// preposition ("in", "at", "with", …), and after eight words. No fact is produced when Y is
/// empty or starts with a pronoun or negation ("I like *it*", "my name is *not* Bob"), or when
/// the clause has a hypothetical, negating or questioning word before the pattern ("if",
/// "maybe", "not", "would", "what", …).
pub fn extract_facts(text: &str) -> Vec<ExtractedFact> {
    let mut facts: Vec<ExtractedFact> = Vec::new();
    for sentence in sentences(text) {
        if sentence.is_question {
            continue;
        }
        for clause in clauses(&sentence) {
            for start in 0..clause.len() {
                if clause[..start]
                    .iter()
                    .any(|w| NON_FACT_CUES.contains(&w.lower.as_str()))
                {
                    break;
                }
                let found = match clause[start].lower.as_str() {
                    "my" => kin::named_relation(&clause, start + 1)
                        .or_else(|| my_statement(&clause, start + 1)),
                    "i" => first_person_statement(&clause, start + 1),
                    "call" => call_me_statement(&clause, start + 1),
                    _ => None,
                };
                if let Some(fact) = found {
                    if !facts.contains(&fact) {
                        facts.push(fact);
                    }
                }
            }
        }
    }
    facts
}

/// The clauses of a sentence: its words between punctuation, contractions expanded.
fn clauses(sentence: &Sentence) -> Vec<Vec<Word>> {
    let mut clauses = vec![Vec::new()];
    for token in &sentence.tokens {
        match token {
            Token::Punct(_) => clauses.push(Vec::new()),
            Token::Word(word) => {
                let current = clauses.last_mut().expect("starts with one clause");
                match CONTRACTIONS
                    .iter()
                    .find(|(contracted, _)| *contracted == word.lower)
                {
                    Some((_, expanded)) => current.extend(expanded.iter().map(|w| Word::new(w))),
                    None => current.push(word.clone()),
                }
            }
        }
    }
    clauses.retain(|c| !c.is_empty());
    clauses
}

/// Matches `phrase` at `words[start..]`, skipping up to two [`ADVERBS`] before any of its words;
/// returns the index just after it.
fn match_phrase(words: &[Word], start: usize, phrase: &[&str]) -> Option<usize> {
    let mut at = start;
    let mut adverbs_skipped = 0;
    for expected in phrase {
        while at < words.len()
            && words[at].lower != *expected
            && adverbs_skipped < 2
            && ADVERBS.contains(&words[at].lower.as_str())
        {
            at += 1;
            adverbs_skipped += 1;
        }
        if at < words.len() && words[at].lower == *expected {
            at += 1;
        } else {
            return None;
        }
    }
    Some(at)
}

fn user_fact(attribute: String, value: String, cardinality: Cardinality) -> ExtractedFact {
    ExtractedFact {
        subject: USER_SUBJECT.to_string(),
        attribute,
        value,
        cardinality,
    }
}

/// "I …" with the words after "I" starting at `after_i`.
fn first_person_statement(words: &[Word], after_i: usize) -> Option<ExtractedFact> {
    if let Some(fact) = pet_name_statement(words, after_i) {
        return Some(fact);
    }
    for rule in FIRST_PERSON_RULES {
        let Some(value_start) = match_phrase(words, after_i, rule.verb) else {
            continue;
        };
        let fact = match rule.shape {
            Years => years_old(words, value_start, rule.verb)
                .map(|years| user_fact(rule.attribute.to_string(), years, rule.cardinality)),
            shape => value_at(words, value_start, shape).map(|value| {
                let attribute = if rule.attribute == "birthplace" && is_year(&value) {
                    "birth_year"
                } else {
                    rule.attribute
                };
                user_fact(attribute.to_string(), value, rule.cardinality)
            }),
        };
        if fact.is_some() {
            return fact;
        }
    }
    None
}

/// "I am N years old" (after "am") or "I turned N" (after "turned").
fn years_old(words: &[Word], at: usize, verb: &[&str]) -> Option<String> {
    let number = words.get(at)?;
    if !number.lower.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let says_years_old = match_phrase(words, at + 1, &["years", "old"]).is_some()
        || match_phrase(words, at + 1, &["year", "old"]).is_some();
    // "I am 5 minutes late" is not an age; "I turned 30" is.
    if verb.last() == Some(&"am") && !says_years_old {
        return None;
    }
    Some(number.text.clone())
}

fn is_year(value: &str) -> bool {
    value.len() == 4 && value.chars().all(|c| c.is_ascii_digit())
}

/// "I have (got) a/an X named/called Y" → `X_name` = Y.
fn pet_name_statement(words: &[Word], after_i: usize) -> Option<ExtractedFact> {
    let after_have = match_phrase(words, after_i, &["have", "got"])
        .or_else(|| match_phrase(words, after_i, &["have"]))?;
    if !matches!(words.get(after_have)?.lower.as_str(), "a" | "an") {
        return None;
    }
    let noun_start = after_have + 1;
    let naming_verb = (noun_start + 1..words.len().min(noun_start + 4))
        .find(|&k| matches!(words[k].lower.as_str(), "named" | "called"))?;
    let noun = &words[noun_start..naming_verb];
    if noun
        .iter()
        .any(|w| ATTRIBUTE_STOP_WORDS.contains(&w.lower.as_str()))
    {
        return None;
    }
    let value = value_at(words, naming_verb + 1, Name)?;
    let attribute = normalise_attribute(&format!("{} name", joined_text(noun)));
    Some(user_fact(attribute, value, One))
}

/// "call me Y" (at the start of a clause, or after "please"/"just"/"you can").
fn call_me_statement(words: &[Word], after_call: usize) -> Option<ExtractedFact> {
    let before_call = &words[..after_call - 1];
    let allowed_before = |w: &Word| matches!(w.lower.as_str(), "please" | "just" | "you" | "can");
    if !before_call.iter().all(allowed_before) || words.get(after_call)?.lower != "me" {
        return None;
    }
    let value = value_at(words, after_call + 1, Name)?;
    Some(user_fact("name".to_string(), value, One))
}

/// "my X is Y", with the words after "my" starting at `after_my`.
fn my_statement(words: &[Word], after_my: usize) -> Option<ExtractedFact> {
    const MAX_ATTRIBUTE_WORDS: usize = 4;
    let window_end = words.len().min(after_my + MAX_ATTRIBUTE_WORDS + 1);
    // "my dog's name is Rex": the 's is possessive when an "is" follows; "my name's Bob": it is
    // the verb.
    let (attribute_words, mut value_start): (Vec<&str>, usize) =
        match (after_my + 1..window_end).find(|&k| words[k].lower == "is") {
            Some(is_at) => (
                words[after_my..is_at]
                    .iter()
                    .map(|w| w.without_possessive())
                    .collect(),
                is_at + 1,
            ),
            None => {
                let verb_at = (after_my..window_end)
                    .take(MAX_ATTRIBUTE_WORDS)
                    .find(|&k| words[k].is_possessive())?;
                (
                    words[after_my..=verb_at]
                        .iter()
                        .map(|w| w.without_possessive())
                        .collect(),
                    verb_at + 1,
                )
            }
        };
    if attribute_words
        .iter()
        .any(|w| ATTRIBUTE_STOP_WORDS.contains(&w.to_lowercase().as_str()))
    {
        return None;
    }
    let mut attribute_words: Vec<&str> = attribute_words
        .into_iter()
        .skip_while(|w| CURRENTNESS_ADJECTIVES.contains(&w.to_lowercase().as_str()))
        .collect();
    if attribute_words.is_empty() {
        return None;
    }
    let mut shape = Phrase;
    match words.get(value_start).map(|w| w.lower.as_str()) {
        Some("called" | "named") => {
            attribute_words.push("name");
            value_start += 1;
            shape = Name;
        }
        // "my office is in Berlin": the place is the value.
        Some("in" | "on" | "at") => {
            value_start += 1;
            shape = Place;
        }
        _ => {}
    }
    let attribute = normalise_attribute(&attribute_words.join(" "));
    if NON_FACT_ATTRIBUTES.contains(&attribute.as_str()) {
        return None;
    }
    // Names are typed in lowercase too, so "my name is bob" still counts; they end like places.
    if shape == Phrase && (attribute == "name" || attribute.ends_with("_name")) {
        shape = Place;
    }
    let value = value_at(words, value_start, shape)?;
    Some(user_fact(attribute, value, One))
}

fn joined_text(words: &[Word]) -> String {
    words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value starting at `words[start]`, cut as its `shape` says; `None` when there is none.
fn value_at(words: &[Word], start: usize, shape: ValueShape) -> Option<String> {
    let mut start = start;
    if words
        .get(start)
        .is_some_and(|w| matches!(w.lower.as_str(), "a" | "an" | "the"))
    {
        start += 1;
    }
    let first = words.get(start)?;
    if NON_VALUE_STARTS.contains(&first.lower.as_str()) || ends_value(words, start, shape) {
        return None;
    }
    if first.lower == "to"
        && words
            .get(start + 1)
            .is_some_and(|w| FIGURES_OF_SPEECH_AFTER_TO.contains(&w.lower.as_str()))
    {
        return None;
    }
    if shape == Name && !first.text.starts_with(|c: char| c.is_uppercase()) {
        return None;
    }
    let mut end = start + 1;
    while end < words.len() && end - start < MAX_VALUE_WORDS && !ends_value(words, end, shape) {
        end += 1;
    }
    Some(joined_text(&words[start..end]))
}

/// Whether the value ends before `words[at]`.
fn ends_value(words: &[Word], at: usize, shape: ValueShape) -> bool {
    let word = words[at].lower.as_str();
    let a_lot = word == "a" && words.get(at + 1).is_some_and(|w| w.lower == "lot");
    a_lot
        || CLAUSE_BOUNDARIES.contains(&word)
        || (matches!(shape, Place | Name) && PREPOSITIONS.contains(&word))
}

mod versions;
use versions::value_identity;
pub use versions::*;

#[cfg(test)]
mod tests;

mod kin;
