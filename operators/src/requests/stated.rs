//! Preferences stated in ordinary messages, and the facts that remember them.

use super::reading::matches_at;
use super::words::sentence_texts;
use super::{requests_of, value_names, Aspect, Request, RequestSet, Way};

/// Words a request to the assistant starts with (after "please", "ok", "and", …).
const DIRECTIVE_STARTS: &[&str] = &[
    "keep", "be", "use", "answer", "reply", "respond", "write", "give", "make", "stop", "dont",
    "never", "always", "avoid", "skip", "talk", "speak", "call", "address", "switch", "include",
    "add", "put", "format", "explain", "cut", "no", "less", "more", "quit", "drop", "start",
    "lead", "get", "send", "show", "tell", "try", "limit", "stick",
];

/// Words that may come before a directive without making it something else.
const LEAD_INS: &[&str] = &[
    "please", "pls", "plz", "ok", "okay", "so", "and", "also", "oh", "hey", "hi", "just",
    "actually", "btw", "again", "but", "now", "then", "yes", "yeah", "thanks",
];

/// Phrases that make a statement about the user's own liking: "I prefer …", "I'd like …".
const LIKINGS: &[&[&str]] = &[
    &["i", "prefer"],
    &["id", "prefer"],
    &["i", "would", "prefer"],
    &["id", "rather"],
    &["i", "would", "rather"],
    &["i", "like", "it", "when"],
    &["id", "like"],
    &["i", "would", "like"],
    &["i", "want"],
    &["i", "need"],
    &["i", "like"],
    &["i", "love"],
    &["i", "hate"],
    &["i", "dont", "like"],
    &["i", "dont", "want"],
    &["i", "dont", "need"],
    &["can", "you"],
    &["could", "you"],
    &["would", "you"],
    &["will", "you"],
];

/// Words that make a request a standing one, not one about the answer at hand.
const STANDING: &[&[&str]] = &[
    &["from", "now", "on"],
    &["going", "forward"],
    &["in", "future"],
    &["in", "the", "future"],
    &["always"],
    &["never"],
    &["anymore"],
    &["any", "more"],
    &["every", "time"],
    &["answers"],
    &["answer"],
    &["responses"],
    &["replies"],
    &["reply"],
    &["respond"],
    &["with", "me"],
    &["to", "me"],
    &["me"],
];

/// What an ordinary message states as a standing preference about how to be answered: the
/// [`requests_of`] its sentences that are requests to the assistant and standing ones.
///
/// A sentence counts when it
/// - is a directive: it starts, after lead-ins such as "please" or "ok", with an imperative
///   ("keep", "use", "answer", "don't", …) or with "I prefer", "I'd like", "I want", "can you",
///   …; a question counts only in that last form ("Can you keep it short?");
/// - and is a standing request: it names answers or the user ("answers", "replies", "me"), or
///   says "from now on", "always", "never", "in future", …, or asks for a language, units,
///   spelling or form of address (which only ever stand).
///
/// So "Please keep answers short, I read them on my phone." and "answer in German from now
/// on" state preferences; "My boss wants short reports", "I read short stories" and "Is the
/// metric system used in the US?" do not.
pub fn stated_requests(text: &str) -> RequestSet {
    let mut requests = Vec::new();
    // "tl;dr" is one word, not two sentences
    let lower = text.to_lowercase().replace("tl;dr", "tldr");
    for sentence in lower.split_inclusive(['.', '!', '?', ';', '\n']) {
        let question = sentence.trim_end().ends_with('?');
        // Most sentences people write are not requests to the assistant: their first words
        // tell, before the sentence is read for cues (this runs on every message the user
        // sends).
        let head = head_words(sentence);
        let first_clause = sentence.split([',', ':']).next().unwrap_or_default();
        if is_directive(&head, question) || asks_for_answers(&head_words(first_clause)) {
            requests.extend(standing_requests(sentence, false));
            continue;
        }
        // "I read your answers on my phone, so keep them short": a directive after a comma or
        // a colon, standing by its own words or by the sentence naming the answers; not after
        // words that report speech ("my boss says, keep it short")
        let has = |text: &str, names: &[&str]| {
            let mut words = text.split(|c: char| !c.is_alphanumeric());
            words.any(|x| names.contains(&x))
        };
        let names_answers = has(sentence, ANSWERS_NAMED);
        let mut before = String::new();
        for clause in sentence.split_inclusive([',', ':']) {
            if !before.is_empty()
                && !has(&before, REPORTED)
                && is_directive(&head_words(clause), question)
            {
                requests.extend(standing_requests(clause, names_answers));
            }
            before.push_str(clause);
        }
    }
    RequestSet::from_requests(requests)
}

/// Words that name the assistant's answers, making a directive in the same sentence standing
/// even in another clause.
const ANSWERS_NAMED: &[&str] = &["answers", "responses", "replies"];

/// Words that report someone's speech: a directive in a clause after them was said to someone
/// else.
const REPORTED: &[&str] = &[
    "say", "says", "said", "tell", "tells", "told", "ask", "asks", "asked", "write", "writes",
    "wrote", "text", "texted", "yell", "yelled",
];

/// Comparatives a request without a verb starts with: "shorter answers, please".
const COMPARATIVE_STARTS: &[&str] = &["shorter", "longer", "briefer", "simpler", "clearer"];

/// Whether a clause of words `clause` asks for answers of some kind without a verb: past
/// lead-ins, a comparative, at most one more word, answers, replies or responses, and then
/// only "please" or lead-ins ("shorter answers plz" does; "shorter days make me sad" and
/// "longer answers on the exam got better marks" do not).
fn asks_for_answers(clause: &[String]) -> bool {
    let is = |list: &[&str], w: &String| list.contains(&w.as_str());
    let start = clause.iter().take_while(|w| is(LEAD_INS, w)).count();
    if !clause.get(start).is_some_and(|w| is(COMPARATIVE_STARTS, w)) {
        return false;
    }
    let within = start + 1..clause.len().min(start + 3);
    let Some(named) = within.into_iter().find(|&i| is(ANSWERS_NAMED, &clause[i])) else {
        return false;
    };
    clause[named + 1..]
        .iter()
        .all(|w| is(LEAD_INS, w) || w == "plz")
}

/// The first [`HEAD_WORDS`] words of `text`, lowercase, apostrophes dropped.
fn head_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '\u{2019}'))
        .filter(|w| !w.is_empty())
        .take(HEAD_WORDS)
        .map(|w| w.replace(['\'', '\u{2019}'], ""))
        .collect()
}

/// The [`requests_of`] `directive` that stand: all of them when it says so ("from now on",
/// "answers", "me", …) or `standing` already holds, else those that only ever stand
/// (language, units, spelling, form of address).
fn standing_requests(directive: &str, standing: bool) -> Vec<Request> {
    let Some(words) = sentence_texts(directive).into_iter().next().map(|(w, _)| w) else {
        return Vec::new();
    };
    let standing =
        standing || (0..words.len()).any(|i| STANDING.iter().any(|p| matches_at(&words, i, p)));
    let stands_alone = |r: &Request| {
        matches!(
            r.aspect,
            Aspect::Language | Aspect::Units | Aspect::Spelling | Aspect::Titles
        )
    };
    (requests_of(directive).0.into_iter())
        .filter(|r| standing || stands_alone(r))
        .collect()
}

/// How many words of a sentence [`is_directive`] looks at.
const HEAD_WORDS: usize = 10;

/// Whether a sentence starting with `head` (lowercase words, apostrophes dropped) is a request
/// to the assistant: past lead-ins ("please", "ok", "thank you", and "from now on" said
/// first), an imperative, or a liking ("I prefer", "can you"; the only form a question may
/// take).
fn is_directive(head: &[String], question: bool) -> bool {
    let mut start = 0;
    while start < head.len() {
        if matches_at(head, start, &["thank", "you"]) {
            start += 2;
        } else if LEAD_INS.contains(&head[start].as_str()) {
            start += 1;
        } else if let Some(p) = STANDING[..4].iter().find(|p| matches_at(head, start, p)) {
            start += p.len();
        } else {
            break;
        }
    }
    let liking = LIKINGS.iter().any(|p| matches_at(head, start, p));
    let imperative = !question
        && head
            .get(start)
            .is_some_and(|w| DIRECTIVE_STARTS.contains(&w.as_str()));
    liking || imperative
}

impl Request {
    /// The fact attribute a stated preference is remembered under: `preference: <aspect>`, so
    /// that a later statement about the same aspect supersedes it.
    pub fn fact_attribute(&self) -> String {
        format!("{PREFERENCE_ATTRIBUTE_PREFIX}{}", self.aspect.name())
    }

    /// The fact value of the request: "more", "less", or the value's name.
    pub fn fact_value(&self) -> String {
        match self.way {
            Way::More => "more".into(),
            Way::Less => "less".into(),
            Way::Value(i) => value_names(self.aspect)
                .get(usize::from(i))
                .map_or_else(|| "?".into(), |v| v.to_lowercase()),
        }
    }

    /// The request a fact remembers ([`Request::fact_attribute`], [`Request::fact_value`]),
    /// if it is one.
    pub fn from_fact(attribute: &str, value: &str) -> Option<Request> {
        let aspect = attribute.strip_prefix(PREFERENCE_ATTRIBUTE_PREFIX)?;
        let aspect = *Aspect::ALL.iter().find(|a| a.name() == aspect)?;
        let value = value.trim().to_lowercase();
        let way = match value.as_str() {
            "more" => Way::More,
            "less" => Way::Less,
            v => Way::Value(
                value_names(aspect)
                    .iter()
                    .position(|name| name.to_lowercase() == v)? as u8,
            ),
        };
        let valued = !value_names(aspect).is_empty();
        (valued == matches!(way, Way::Value(_))).then_some(Request { aspect, way })
    }
}

/// Attributes of the facts that remember stated preferences begin with this.
pub const PREFERENCE_ATTRIBUTE_PREFIX: &str = "preference: ";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standing_requests_in_ordinary_messages_are_stated_preferences() {
        let stated = |text: &str| -> Vec<String> {
            stated_requests(text)
                .0
                .iter()
                .map(|r| format!("{:?}{:?}", r.aspect, r.way))
                .collect()
        };
        assert_eq!(
            stated("Please keep answers short, I read them on my phone."),
            ["LengthLess"]
        );
        assert_eq!(stated("I prefer metric units"), ["UnitsValue(0)"]);
        assert_eq!(stated("don't call me Sir"), ["TitlesLess"]);
        assert_eq!(
            stated("Thanks! Answer in German from now on."),
            ["LanguageValue(1)"]
        );
        assert_eq!(stated("Can you always use bullet points?"), ["BulletsMore"]);
        assert_eq!(
            stated("ok so from now on be more casual with me"),
            ["FormalityLess"]
        );
        // a directive after a comma or a colon, standing by the sentence's "answers"
        assert_eq!(
            stated("Hi! Quick thing: I read your answers on my phone, so keep them short please."),
            ["LengthLess"]
        );
        assert_eq!(
            stated("btw, answer in German from now on"),
            ["LanguageValue(1)"]
        );
        assert_eq!(
            stated("Your replies are fine, but skip the emoji"),
            ["EmojiLess"]
        );
        // no verb: a comparative and the answers
        assert_eq!(stated("shorter answers plz, im on mobile"), ["LengthLess"]);
        assert_eq!(stated("pls simpler replies"), ["TechnicalLess"]);
        for text in [
            "My boss wants short reports.",
            "I read short stories on the train",
            "Is the metric system used in the US?",
            "Keep the report short.",
            "We watched a long movie about German history",
            "Why are bullet points popular?",
            "You never know the difference a kind gesture can make.",
            // a directive in another clause, said to someone else or about something else
            "My boss always says, keep it short",
            "The exam answers were long, so keep studying",
            "I told my son, never call me sir",
            "Shorter days make me sad.",
            "Longer answers on the exam got better marks",
        ] {
            assert_eq!(stated(text), Vec::<String>::new(), "{text:?}");
        }
    }

    #[test]
    fn a_stated_preference_is_remembered_as_a_fact_per_aspect() {
        for text in [
            "keep it short",
            "more detail",
            "answer in German",
            "use imperial units",
            "UK spelling",
        ] {
            let request = requests_of(text).0[0];
            assert_eq!(
                Request::from_fact(&request.fact_attribute(), &request.fact_value()),
                Some(request),
                "{text:?}"
            );
        }
        let short = requests_of("keep it short").0[0];
        assert_eq!(
            (short.fact_attribute().as_str(), short.fact_value().as_str()),
            ("preference: length", "less")
        );
        assert_eq!(Request::from_fact("preference: length", "sideways"), None);
        assert_eq!(Request::from_fact("hometown", "less"), None);
    }
}
