//! What a clause of a chat message is about, as far as stated preferences care: the words as
//! people type them, quotes of pasted text, wishes said without a directive, one thing to work
//! on, someone else's wishes, and requests about whenever something happens
//! ([`super::stated`]).

use super::reading::matches_at;

/// Words that may come before a directive without making it something else.
pub(super) const LEAD_INS: &[&str] = &[
    "please",
    "ok",
    "okay",
    "so",
    "and",
    "also",
    "oh",
    "hey",
    "hi",
    "just",
    "actually",
    "btw",
    "again",
    "but",
    "now",
    "then",
    "yes",
    "yeah",
    "thanks",
    "only",
    "honestly",
    "seriously",
    "tbh",
    "kindly",
];

/// Phrases that say a request holds from now on; said first, they lead in to it ("from now on,
/// answer in German").
pub(super) const FROM_NOW_ON: &[&[&str]] = &[
    &["from", "now", "on"],
    &["going", "forward"],
    &["in", "future"],
    &["in", "the", "future"],
];

/// How many words a quote after "with", "saying" or "like" may have and still name what the
/// assistant says ("don't end every message with 'Would you like me to…?'").
const INTRODUCED_PHRASE_WORDS: usize = 8;

/// How many words a quote in the flow of a sentence may have and still name a phrase.
pub(super) const NAMED_PHRASE_WORDS: usize = 3;

/// The text without what it quotes as pasted text: spans in double quotes (straight or curly),
/// and in single quotes that open after a space or a colon and close before a space or
/// punctuation, when they open at the start or after punctuation ("is this correct? 'Please
/// respond in English only.'", "proofread this: '…'") or hold more than
/// [`NAMED_PHRASE_WORDS`] words. A short quote in the flow of a sentence names a phrase and
/// stays ("stop hedging with 'it depends'"), as do apostrophes in words.
pub(super) fn without_quotes(text: &str) -> String {
    // most messages quote nothing: no tables for them (this runs on every user message)
    let may_open = text.contains(['"', '\u{201c}'])
        || text
            .match_indices(['\'', '\u{2018}'])
            .any(|(i, _)| text[..i].ends_with(|c: char| c.is_whitespace() || c == ':') || i == 0);
    if !may_open {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    // the next closing quote of each kind at or after each position, found from the end, so
    // that the whole text is read a fixed number of times however many quotes it holds
    let (mut double, mut curly, mut single) = (vec![n; n + 1], vec![n; n + 1], vec![n; n + 1]);
    for j in (0..n).rev() {
        double[j] = if chars[j] == '"' { j } else { double[j + 1] };
        curly[j] = if chars[j] == '\u{201d}' {
            j
        } else {
            curly[j + 1]
        };
        let closes = matches!(chars[j], '\'' | '\u{2019}')
            && chars.get(j + 1).is_none_or(|c| !c.is_alphanumeric());
        single[j] = if closes { j } else { single[j + 1] };
    }
    let mut out = String::with_capacity(text.len());
    // the last character before `i` that is not white space
    let mut last: Option<char> = None;
    let mut i = 0;
    while i < n {
        let c = chars[i];
        let opens_single = matches!(c, '\'' | '\u{2018}')
            && (i == 0 || chars[i - 1].is_whitespace() || chars[i - 1] == ':');
        let inches = c == '"' && i > 0 && chars[i - 1].is_ascii_digit();
        let end = match c {
            '"' if inches => n,
            '"' => double[i + 1],
            '\u{201c}' => curly[i + 1],
            _ if opens_single => single[i + 1],
            _ => n,
        };
        let pasted = last.is_none_or(|p| !p.is_alphanumeric());
        // "don't end every message with 'Would you like me to…?'": what the assistant says,
        // named after "with" or "saying", whatever its length
        let introduced = || {
            matches!(
                out.trim_end().rsplit(|c: char| !c.is_alphanumeric()).next(),
                Some("with" | "saying" | "like")
            )
        };
        // a quote of a few words in the flow of a sentence names a phrase ("stop hedging with
        // 'it depends'"); a longer one is pasted text
        if end < n
            && (pasted
                || (more_words_than(&chars[i + 1..end], NAMED_PHRASE_WORDS)
                    && (more_words_than(&chars[i + 1..end], INTRODUCED_PHRASE_WORDS)
                        || !introduced())))
        {
            // what was pasted ends a sentence: the text around it is not one
            out.push('\n');
            last = Some(chars[end]);
            i = end + 1;
        } else if end < n {
            // a phrase named ("stop with the 'great question!' stuff") ends no sentence
            out.extend(chars[i..=end].iter().map(|&c| match c {
                '.' | '!' | '?' | ';' => ' ',
                c => c,
            }));
            last = Some(chars[end]);
            i = end + 1;
        } else {
            out.push(c);
            if !c.is_whitespace() {
                last = Some(c);
            }
            i += 1;
        }
    }
    out
}

/// Whether `chars` hold more than `k` words (runs of what is not white space), read only as
/// far as the word after the `k`-th.
fn more_words_than(chars: &[char], k: usize) -> bool {
    let mut words = 0;
    let mut in_word = false;
    for c in chars {
        if c.is_whitespace() {
            in_word = false;
        } else if !in_word {
            in_word = true;
            words += 1;
            if words > k {
                return true;
            }
        }
    }
    false
}

/// The words of `text`, lowercase, apostrophes dropped, chat spellings read as words ("u" →
/// "you", "ur" → "your", "pls" and "plz" → "please", "im" → "i am").
pub(super) fn chat_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text
        .split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
    {
        let w = w.replace(['\'', '\u{2019}'], "");
        match w.as_str() {
            "u" => out.push("you".to_string()),
            "ur" => out.push("your".to_string()),
            "pls" | "plz" => out.push("please".to_string()),
            "im" => out.extend(["i".to_string(), "am".to_string()]),
            _ => out.push(w),
        }
    }
    out
}

/// Phrases that make a sentence about one answer or one thing, not a standing wish.
pub(super) const ONE_OFF: &[&[&str]] = &[
    // the answer just given ("make that last answer more formal", "a shorter version of that")
    &["last", "answer"],
    &["that", "answer"],
    &["version", "of", "that"],
    &["version", "of", "this"],
    &["explain", "that", "again"],
    &["that", "again", "but"],
    // what might be ("hypothetically, could you …", "if i wanted answers in french, …")
    &["hypothetically"],
    &["if", "i", "wanted"],
    &["would", "you", "be", "able"],
    &["are", "you", "able"],
    &["this", "time"],
    &["tonight"],
    &["for", "today"],
    &["this", "once"],
    &["for", "this", "answer"],
    &["for", "this", "one"],
    &["this", "answer", "only"],
    &["for", "now"],
    &["just", "for", "this"],
];

/// Words of politeness that make a clause a wish when it names what it wishes ("British
/// spelling please", "24h clock for me").
pub(super) const POLITE: &[&[&str]] = &[&["please"], &["for", "me"]];

/// Phrases by which a clause says it wishes something of the answers, without a directive.
pub(super) const WISHES: &[&[&str]] = &[
    &["wouldnt", "hurt"],
    &["would", "be"],
    &["welcome"],
    &["work", "best"],
    &["works", "best"],
    &["help", "me"],
    &["helps", "me"],
    &["more", "of", "a"],
    &["feel", "free"],
    &["appreciate", "it"],
    &["no", "need"],
    &["dont", "have", "to"],
    &["dont", "need", "to"],
    &["i", "just", "need"],
    &["i", "just", "want"],
    &["you", "can"],
    &["keep", "doing"],
];

/// Verbs after "can you" that ask what the assistant can do, not how it should answer ("Can
/// you speak Korean?").
pub(super) const CAPABILITIES: &[&str] = &["speak", "understand", "read", "do", "handle", "see"];

/// Whether a question `head` asks what the assistant can do.
pub(super) fn capability(head: &[String], question: bool) -> bool {
    question
        && head.windows(3).any(|w| {
            matches!(w[0].as_str(), "can" | "could" | "do")
                && w[1] == "you"
                && CAPABILITIES.contains(&w[2].as_str())
        })
}

/// How many of `words`' first words are lead-ins ("ok", "please", "btw", …).
pub(super) fn past_lead_ins(words: &[String]) -> usize {
    words
        .iter()
        .take_while(|w| LEAD_INS.contains(&w.as_str()))
        .count()
}

/// Whether `words` say one of `phrases`.
pub(super) fn says_any(words: &[String], phrases: &[&[&str]]) -> bool {
    (0..words.len()).any(|i| phrases.iter().any(|p| matches_at(words, i, p)))
}

/// Whether a directive `head` has no verb ("no regrets", "less fluff", "more examples"): it
/// must name what it asks for itself.
pub(super) fn elliptical(head: &[String]) -> bool {
    let start = past_lead_ins(head);
    head.get(start)
        .is_some_and(|w| matches!(w.as_str(), "no" | "less" | "more" | "fewer"))
}

/// Phrases that make a clause habitual: a request about whenever something happens
/// ("whenever you explain something", "every time", "with any code you give me"); not
/// "every" alone ("explain every step of the proof").
const HABITUAL: &[&[&str]] = &[
    &["whenever"],
    &["when", "you"],
    &["when", "it"],
    &["if", "you"],
    &["every", "time"],
    &["each", "time"],
    &["any", "time"],
    &["always"],
    &["never"],
    &["anymore"],
    &["usually"],
    &["generally"],
    &["in", "general"],
    &["any", "code"],
    &["with", "me"],
    &["in", "every"],
    &["on", "every"],
    &["every", "answer"],
    &["every", "reply"],
    &["all", "your", "replies"],
    &["future", "replies"],
    &["future", "answers"],
    &["all", "your", "answers"],
    &["when", "theres"],
];

/// Phrases by which a sentence says its wish stands ("in general", "going forward", "whenever
/// you …", "in all your replies"): narrower than [`habitual`], whose "always", "never" and "if
/// you" people say of themselves too ("I never use bullet points in my own notes").
const STANDING: &[&[&str]] = &[
    &["whenever"],
    &["generally"],
    &["in", "general"],
    &["all", "your", "replies"],
    &["all", "your", "answers"],
    &["future", "replies"],
    &["future", "answers"],
    &["every", "answer"],
    &["every", "reply"],
    &["in", "every"],
    &["on", "every"],
];

/// Whether a sentence's `words` say its wish stands ([`STANDING`], or from now on).
pub(super) fn standing(words: &[String]) -> bool {
    says_any(words, STANDING) || says_any(words, FROM_NOW_ON)
}

/// Whether a clause's `words` make its request habitual.
pub(super) fn habitual(words: &[String]) -> bool {
    says_any(words, HABITUAL) || says_any(words, FROM_NOW_ON)
}

/// Verbs of working on one thing: with a thing after them ("translate it", "write a toast",
/// "keep the report short"), the clause is about that thing.
pub(super) const TASK_VERBS: &[&str] = &[
    "write",
    "rewrite",
    "translate",
    "convert",
    "summarise",
    "summarize",
    "proofread",
    "check",
    "draft",
    "redo",
    "list",
    "number",
    "make",
    "put",
    "add",
    "give",
    "create",
    "compose",
    "fix",
    "explain",
    "turn",
    "edit",
    "shorten",
    "format",
    "keep",
    "describe",
    "tidy",
    "clean",
    "polish",
    "reword",
    "rephrase",
    "plan",
    "organise",
    "organize",
    "recommend",
    "find",
    "book",
    "choose",
    "tell",
    "quiz",
];

/// Verbs of writing: a thing right after them is what is to be written ("explain black holes
/// like I'm five", "translate it").
pub(super) const WRITING_VERBS: &[&str] = &[
    "write",
    "rewrite",
    "translate",
    "summarise",
    "summarize",
    "draft",
    "compose",
    "explain",
    "describe",
    "reword",
    "rephrase",
    "proofread",
];

/// Words after a verb of writing that do not name what is written ("explain your reasoning",
/// "write in prose", "explain things simply").
pub(super) const NOT_A_THING: &[&str] = &[
    "your",
    "me",
    // quantities: "a few options", "a couple of practice questions"
    "few",
    "couple",
    "bit",
    "lot",
    "to",
    "in",
    "with",
    "like",
    "more",
    "less",
    "simply",
    "briefly",
    "clearly",
    "properly",
    "better",
    "shorter",
    "longer",
    "out",
    "up",
    "back",
    "why",
    "how",
    "what",
    "everything",
    "anything",
    "things",
    "stuff",
    "normally",
    "please",
    "again",
    "case",
    "matter",
    "note",
    "regard",
    "sense",
    "moment",
    "concepts",
    "ideas",
    "terms",
    "topics",
];

/// Nouns that name what answers are made of, not one thing to work on ("keep the answers
/// short", "drop the jokes", "all these lists").
pub(super) const ANSWER_PARTS: &[&str] = &[
    "answer",
    "answers",
    "reply",
    "replies",
    "response",
    "responses",
    "explanation",
    "explanations",
    "jokes",
    "emojis",
    "emoji",
    "headings",
    "bullets",
    "bullet",
    "lists",
    "sources",
    "caveats",
    "warnings",
    "disclaimers",
    "enthusiasm",
    "jargon",
    "preamble",
    "intro",
    "intros",
    "fluff",
    "code",
    "lines",
    "whole",
    "point",
    "first",
    "end",
    "top",
    "beginning",
    "start",
    "rest",
    "final",
    "tone",
    "way",
    "same",
    "reasoning",
    "working",
    "details",
    "detail",
    "examples",
    "questions",
    "apologies",
    "formatting",
    "language",
    "words",
    "things",
    "stuff",
    "tldr",
    "summary",
    "summaries",
    "comments",
];

/// Whether a clause's `words` name one thing to work on:
/// - a task verb and then, within two words, "a", "the", "my", "this", "that", … and a noun
///   that is not part of answers ("give me a bulleted packing list", "keep the report short");
/// - "I need / want / like / love" and "my", "a", "the", … and such a noun ("I need my CV");
/// - a verb of writing and right after it a word that is not part of answers, a kind (a bare
///   plural: "explain concepts") or "your", "me", "simply", … ("explain black holes like I'm
///   five"), or "it" ("translate it");
/// - "to", "in", "of", … and "this" or "that" and such a noun ("the costs in that plan"), or
///   "the", "my" or "our" when the clause has a task verb ("add comments to the script");
/// - or "this", "these" or "those" and such a noun anywhere ("this instagram caption").
pub(super) fn names_one_thing(words: &[String]) -> bool {
    let is = |list: &[&str], w: &str| list.contains(&w);
    // "a professional tone" is part of answers: a word or the next is
    let part = |i: usize| words.get(i).is_some_and(|w| is(ANSWER_PARTS, w));
    let thing_at =
        |i: usize| i < words.len() && !part(i) && !part(i + 1) && !is(NOT_A_THING, &words[i]);
    let writing = |w: &str| is(WRITING_VERBS, w);
    let wanted = (0..words.len()).any(|i| {
        words[i] == "i"
            && words
                .get(i + 1)
                .is_some_and(|w| matches!(w.as_str(), "need" | "want" | "like" | "love"))
            && words
                .get(i + 2)
                .is_some_and(|w| matches!(w.as_str(), "my" | "our" | "a" | "an" | "the" | "this"))
            && thing_at(i + 3)
    });
    // "everything you write for me" names what the assistant writes, not a thing to work on
    let written = (0..words.len()).any(|i| {
        writing(&words[i])
            && !(i > 0 && matches!(words[i - 1].as_str(), "you" | "u"))
            // "write for me", "explain for a beginner"
            && words.get(i + 1).is_none_or(|w| w != "for")
            && words.get(i + 1).is_some_and(|w| {
                !is(NOT_A_THING, w)
                    && !is(ANSWER_PARTS, w)
                    // a bare plural is a kind, not one thing ("explain concepts simply")
                    && !(w.ends_with('s') && !w.ends_with("ss"))
                    && !matches!(
                        w.as_str(),
                        "a" | "an" | "the" | "my" | "our" | "this" | "that" | "it"
                    )
            })
    });
    let task = words.iter().any(|w| is(TASK_VERBS, w));
    // "add comments to the script", "the costs in that plan"
    // ("instead of the full solution" names what is not to be done)
    let placed = (0..words.len()).any(|i| {
        matches!(
            words[i].as_str(),
            "to" | "into" | "in" | "on" | "for" | "of"
        ) && !(i > 0 && words[i - 1] == "instead")
            && words.get(i + 1).is_some_and(|w| match w.as_str() {
                "the" | "my" | "our" => task,
                "this" | "that" => true,
                _ => false,
            })
            && thing_at(i + 2)
    });
    wanted
        || written
        || placed
        || (0..words.len()).any(|i| {
            let w = words[i].as_str();
            let deictic = matches!(w, "this" | "these" | "those")
                && thing_at(i + 1)
                && !words
                    .get(i + 1)
                    .is_some_and(|n| matches!(n.as_str(), "is" | "are" | "was"));
            let after_task = is(TASK_VERBS, w)
                && (i + 1..words.len().min(i + 3)).any(|j| match words[j].as_str() {
                    "a" | "an" | "the" | "my" | "our" | "this" | "that" => thing_at(j + 1),
                    // "put these in a table": what the user gave ("keep those jokes coming"
                    // asks for more of them)
                    "these" | "those" => words
                        .get(j + 1)
                        .is_some_and(|n| matches!(n.as_str(), "in" | "into" | "as" | "to")),
                    "it" => writing(w),
                    _ => false,
                });
            deictic || after_task
        })
}

/// Whether `words` name a thing that what follows a colon is part of: "my", "our", "this",
/// "that" or "these" and a noun that is not part of answers, or one thing to work on ("I'm
/// writing a style guide for my team:", "proofread this:"); not "just a heads up:".
pub(super) fn mentions_a_thing(words: &[String]) -> bool {
    names_one_thing(words)
        || (0..words.len()).any(|i| {
            matches!(words[i].as_str(), "my" | "our" | "this" | "that" | "these")
                && words.get(i + 1).is_some_and(|w| {
                    !ANSWER_PARTS.contains(&w.as_str()) && !NOT_A_THING.contains(&w.as_str())
                })
        })
}

/// Verbs by which someone else says what they want.
pub(super) const OTHERS_WANTING: &[&str] = &[
    "want", "wants", "wanted", "insist", "insists", "insisted", "say", "says", "said", "tell",
    "tells", "told", "telling", "ask", "asks", "asked", "prefer", "prefers", "like", "likes",
    "hate", "hates", "need", "needs", "use", "uses", "speak", "speaks", "keep", "keeps", "write",
    "writes",
];

/// Whether a clause's `words` tell what someone else wants: past lead-ins it starts with
/// "he", "she", "they", "my …", "our …", "his …", "her …", "their …" or "the …", and a verb of
/// wanting or saying follows within four words ("my boss wants bullet points", "our style
/// guide uses British spelling", "the client insists on US dollars").
pub(super) fn someone_else_wants(words: &[String]) -> bool {
    let start = past_lead_ins(words);
    let subject = match words.get(start).map(String::as_str) {
        Some("he" | "she" | "they") => start + 1,
        Some("my" | "our" | "his" | "her" | "their" | "the") => start + 2,
        _ => return false,
    };
    (subject..words.len().min(subject + 4)).any(|i| OTHERS_WANTING.contains(&words[i].as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pasted_quotes_are_left_out_and_named_phrases_kept() {
        // after punctuation or at the start: pasted
        assert_eq!(
            without_quotes("is this right? 'Please respond in English only.'"),
            "is this right? \n"
        );
        assert_eq!(without_quotes("\"keep it short\" she said"), "\n she said");
        assert_eq!(
            without_quotes("check this: \u{201c}use bullets\u{201d} ok"),
            "check this: \n ok"
        );
        // in the flow of a sentence: a phrase of up to three words stays, more is pasted
        assert_eq!(
            without_quotes("stop hedging with 'it depends'."),
            "stop hedging with 'it depends'."
        );
        assert_eq!(
            without_quotes("my draft says 'we will keep all replies short' today"),
            "my draft says \n today"
        );
        // apostrophes in words, unclosed quotes and a quote at the very end stay as they are
        for text in ["I'm sure it's Sam's", "he said 'hi", "x '", "\"", "'", ""] {
            assert_eq!(without_quotes(text), text, "{text:?}");
        }
    }

    #[test]
    fn chat_spellings_are_read_as_words() {
        assert_eq!(
            chat_words("can u keep ur answers short pls, im on my phone"),
            [
                "can", "you", "keep", "your", "answers", "short", "please", "i", "am", "on", "my",
                "phone"
            ]
        );
    }
}
