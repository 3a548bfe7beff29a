//! How a sentence turns the cues it holds, beyond the words around each cue (`reading.rs`):
//! rhetorical questions, fed-up openers, sarcasm over a count, mock praise, a value questioned,
//! and words quoted from the assistant.

use super::lexicon::{Cue, CueKind};
use super::reading::matches_at;
use super::turning_words::{negates, FED_UP, QUESTION_WORDS};
use super::words::SentenceWords;
use super::Way;

/// What a sentence does to every cue in it.
pub(super) struct SentenceTone {
    /// "Fahrenheit? I'm in Germany": a short question, then the user: it turns the value or
    /// circumstance it names.
    questioned: bool,
    /// "why so formal??", "no comments in the snippet??": it complains of what it names.
    rhetorical: bool,
    /// It holds a negation ("why no examples?" asks for them).
    negated: bool,
    /// "ugh, another list of sources", "…, seriously?".
    fed_up: bool,
    /// "oh cool, 14 bullet points".
    counted_sarcasm: bool,
    /// Mock praise in it or after it turns what it names ([`mock_praise`]).
    mocked: bool,
}

/// Each sentence's tone, in order.
pub(super) fn sentence_tones(sentences: &[SentenceWords]) -> Vec<SentenceTone> {
    // "Great, one sentence. Super helpful for a 2000-word assignment.": mock praise turns what
    // the sentences up to it name
    let mocked_until = sentences
        .iter()
        .enumerate()
        .rev()
        .find_map(|(n, s)| mock_praise(&s.words).map(|strong| (n, strong)));
    (0..sentences.len())
        .map(|n| {
            let mocked = mocked_until.is_some_and(|(m, strong)| n < m || (n == m && strong));
            sentence_tone(sentences, n, mocked)
        })
        .collect()
}

fn sentence_tone(sentences: &[SentenceWords], n: usize, mock_praised: bool) -> SentenceTone {
    let (sentence, question) = (sentences[n].words.as_slice(), sentences[n].question);
    // "Fahrenheit? I'm in Germany", "Commute tips? I work from home now": a thing
    // questioned, then why it is wrong for the user, turns what it names
    let questioned = question
        && sentence.len() <= 4
        && !sentence
            .iter()
            .any(|w| QUESTION_WORDS.contains(&w.as_str()))
        && sentences
            .get(n + 1)
            .and_then(|next| next.words.first())
            .is_some_and(|w| matches!(w.as_str(), "i" | "im" | "ive" | "my" | "we" | "were"));
    // "why is everything a bullet list??" complains about what it names
    // "no comments in the snippet??" misses what it names, as "why no examples?" does (and
    // "zero comments in 80 lines, really?")
    // ("so there's no downside at all?" misses it too)
    let missed = sentence.first().is_some_and(|w| w == "no" || w == "zero")
        && sentence.get(1).is_some_and(|w| {
            !matches!(
                w.as_str(),
                "," | "could" | "can" | "would" | "will" | "please" | "pls" | "i" | "you" | "u"
            )
        })
        || sentence
            .windows(2)
            .any(|p| p[0] == "theres" && p[1] == "no");
    // ("why are there 4 headings in a 3-line answer" asks as much without its "?", and so
    // does a habit asked about: "why does every answer turn into a list", "why do you
    // keep saying my name")
    let habit = |w: &String| matches!(w.as_str(), "every" | "everything" | "always" | "keep");
    let why_is = sentence.first().is_some_and(|w| w == "why")
        && sentence.get(1).is_some_and(|w| match w.as_str() {
            "are" | "is" => true,
            // "why am I getting British English"
            "am" => matches!(
                sentence.get(3).map(String::as_str),
                Some("getting" | "seeing" | "reading" | "given")
            ),
            // "why does a 3 paragraph answer need headers": what a thing needs is questioned
            // ("why do I need a visa" asks)
            "do" | "does" => {
                sentence.iter().skip(2).take(2).any(habit)
                    || (sentence.iter().any(|w| w == "need")
                        && !sentence
                            .get(2)
                            .is_some_and(|w| matches!(w.as_str(), "i" | "we" | "you" | "u")))
            }
            _ => false,
        });
    let rhetorical = why_is
        || (question
            && (sentence.first().is_some_and(|w| w == "why")
                || missed
                || matches_at(sentence, 0, &["whats", "with"])
                || matches_at(sentence, 0, &["what", "is", "with"])));
    // "why no examples?" asks for them as "why don't you give examples?" does
    let negated = sentence
        .iter()
        .any(|w| negates(w) || matches!(w.as_str(), "without" | "zero"));
    // "ugh, another list of sources", "ugh 'I apologise for the confusion' again": a
    // sentence that opens fed up and says "again" complains about what it names
    let fed_up = (sentence
        .first()
        .is_some_and(|w| FED_UP.contains(&w.as_str()))
        || matches_at(sentence, 0, &["oh", "great"]))
        && sentence
            .iter()
            .any(|w| matches!(w.as_str(), "again" | "another"))
        // "half the answer was warnings and caveats, seriously?" ("no sources again,
        // seriously?" misses them)
        || (question && sentence.last().is_some_and(|w| w == "seriously") && !negated);
    // "oh cool, 14 bullet points with 3 words each": what is counted is complained of
    let counted_sarcasm = sarcastic_opener(sentence) && sentence.iter().any(|w| is_count(w));
    SentenceTone {
        questioned,
        rhetorical,
        negated,
        fed_up,
        counted_sarcasm,
        // (once: a sentence fed up already turned it; a sentence that asks is as it says)
        mocked: mock_praised
            && !fed_up
            && !counted_sarcasm
            && !sentence.iter().any(|w| ASKING.contains(&w.as_str())),
    }
}

impl SentenceTone {
    /// The way of `cue` once this sentence's tone is applied to `turned` (the way the words
    /// around it gave).
    pub(super) fn turn(&self, cue: &Cue, turned: bool) -> bool {
        // "why so formal??" complains; "why don't you use bullets?" asks
        // (a value or a circumstance questioned: "Why no examples?" stays rhetorical)
        let questioned = self.questioned
            && !self.rhetorical
            && (cue.aspect.is_circumstance() || matches!(cue.way, Way::Value(_)));
        // (a complaint cue already points the way it is meant: "why is it always so wordy?")
        let not_complaint = cue.kind != CueKind::Complaint;
        let turned = if self.rhetorical && not_complaint {
            !self.negated
        } else {
            turned
        } != questioned;
        let turned = turned || (self.fed_up && not_complaint);
        // (the user's own circumstances are no answer mocked: "oh great, 3 steak recipes
        // and I'm vegetarian"; "Ah, ounces and Fahrenheit. Very helpful." mocks the units)
        let of_answers = !cue.aspect.is_circumstance() && not_complaint;
        let turned = turned || (self.counted_sarcasm && of_answers);
        turned != (self.mocked && of_answers)
    }
}

/// The way of the cue at `at` (start, end) once the quotes of `sentence` are applied: "'I
/// apologize for the confusion' x4... lol", "half of it was 'it depends'": words quoted are the
/// assistant's own, complained of ("just say 'in my view'" asks).
pub(super) fn turned_by_quote(
    sentence: &[String],
    quoted: &[bool],
    clause_start: usize,
    (start, end): (usize, usize),
    cue: &Cue,
    turned: bool,
) -> bool {
    match quote_start(quoted, start, end) {
        // (a value quoted is only named, "it's 'colour' not 'color'")
        Some(quote) if !matches!(cue.way, Way::Value(_)) => {
            turned || !asked_to_say(sentence, clause_start, quote)
        }
        // the user's circumstance quoted is the assistant's assumption, negations and all,
        // disputed: "\"Since you don't have a car...\" I do now" (one turned away is not: "no
        // 'grab a beer' ideas")
        Some(quote) if cue.aspect.is_circumstance() => {
            turned != !negated_before(sentence, clause_start, quote)
        }
        _ => turned,
    }
}

/// Where the quote holding the words `start..end` begins, when they are all quoted.
fn quote_start(quoted: &[bool], start: usize, end: usize) -> Option<usize> {
    quoted[start..end].iter().all(|q| *q).then(|| {
        (0..start)
            .rev()
            .take_while(|&k| quoted[k])
            .last()
            .unwrap_or(start)
    })
}

/// Where the clause holding the quote that begins at `quote` begins: a quote with a clause
/// break inside ("'Sure, happy to help!'") begins before the clause of its cue, and the clause
/// break a double quote opens with is not the clause's ("add a \"next steps\" part").
fn clause_before_quote(sentence: &[String], clause_start: usize, quote: usize) -> usize {
    let start = clause_start.min(quote);
    if start == quote && quote > 0 && sentence[quote - 1] == "," {
        sentence[..quote - 1]
            .iter()
            .rposition(|w| w == "," || w == "but")
            .map_or(0, |k| k + 1)
    } else {
        start
    }
}

/// Whether a negation comes before `at` in its clause ("no 'grab a beer' ideas").
fn negated_before(sentence: &[String], clause_start: usize, at: usize) -> bool {
    sentence[clause_before_quote(sentence, clause_start, at)..at]
        .iter()
        .any(|w| negates(w))
}

/// Whether the quote beginning at `quote` is asked for: a verb of asking among the four words
/// before it in its clause ("say 'in my view'", "give me a 'next steps' bit", "finish with a
/// short 'in summary' line", "I wouldn't mind an 'I can also help' at the end"), not negated
/// ("don't say 'Great question!'").
fn asked_to_say(sentence: &[String], clause_start: usize, quote: usize) -> bool {
    let clause_start = clause_before_quote(sentence, clause_start, quote);
    let before = &sentence[clause_start.max(quote.saturating_sub(4))..quote];
    let asks = before.iter().any(|w| {
        matches!(
            w.as_str(),
            "say"
                | "use"
                | "write"
                | "give"
                | "add"
                | "include"
                | "want"
                | "finish"
                | "end"
                | "start"
                | "begin"
                | "open"
                | "put"
        )
    }) || before
        .windows(2)
        .any(|p| matches!(p[0].as_str(), "wouldnt" | "dont" | "not") && p[1] == "mind");
    let negated = negated_before(sentence, clause_start, quote);
    asks && (!negated || before.iter().any(|w| w == "mind"))
}

/// Praise that can only be mockery after a bad answer ("super helpful", "very readable", "love
/// that for me", "my favourite thing"), in a sentence that thanks, asks, contrasts or wants it
/// again nothing ("the bullets were very helpful, keep doing that" is praise).
///
/// `Some(true)` for praise that mocks what its own sentence names too ("love how you assumed
/// everything"), `Some(false)` for praise that mocks only what came before ("Super helpful for a
/// 2000-word assignment."; "the examples were very helpful" alone is praise).
fn mock_praise(sentence: &[String]) -> Option<bool> {
    const MOCK: &[&[&str]] = &[
        &["very", "helpful"],
        &["super", "helpful"],
        &["so", "helpful"],
        &["very", "useful"],
        &["super", "useful"],
        &["very", "readable"],
        &["super", "readable"],
    ];
    const STRONG: &[&[&str]] = &[
        &["love", "that", "for", "me"],
        &["my", "favourite", "thing"],
        &["my", "favorite", "thing"],
        &["just", "what", "i", "needed"],
        &["love", "how", "you"],
    ];
    let says = |list: &[&[&str]]| {
        (0..sentence.len()).any(|i| list.iter().any(|m| matches_at(sentence, i, m)))
    };
    let strong = says(STRONG);
    ((strong || says(MOCK))
        && !sentence.iter().any(|w| {
            matches!(
                w.as_str(),
                "thanks" | "thank" | "thx" | "but" | "keep" | "again" | "more"
            ) || ASKING.contains(&w.as_str())
        }))
    .then_some(strong)
}

/// Words of a sentence that asks for something, which mock praise elsewhere leaves as it is.
const ASKING: &[&str] = &[
    "please", "pls", "plz", "can", "could", "would", "give", "add", "use",
];

/// Whether the sentence opens as sarcasm does: "oh great,", "oh cool,", "oh nice,".
fn sarcastic_opener(sentence: &[String]) -> bool {
    sentence.first().is_some_and(|w| w == "oh")
        && sentence.get(1).is_some_and(|w| {
            matches!(
                w.as_str(),
                "great" | "cool" | "nice" | "wonderful" | "perfect" | "awesome" | "lovely"
            )
        })
}

/// Whether a word counts things: digits, or "two" to "twenty".
fn is_count(word: &str) -> bool {
    const NUMBERS: [&str; 19] = [
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "thirteen",
        "fourteen",
        "fifteen",
        "sixteen",
        "seventeen",
        "eighteen",
        "nineteen",
        "twenty",
    ];
    (!word.is_empty() && word.chars().all(|c| c.is_ascii_digit())) || NUMBERS.contains(&word)
}
