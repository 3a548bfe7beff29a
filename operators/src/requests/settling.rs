//! Where a cue is about the answer at all, and how the requests read in one text are settled
//! before they become its [`RequestSet`](super::RequestSet).
//!
//! A cue word names an aspect of answers only in some places: "simple" in "a simple sorry" or
//! "I asked a simple question" is about the apology or the user's question, "Windows steps"
//! are instructions for a tool, "German laws" are the country's. And a text that names one
//! aspect twice often says which one it means by how it names each: "paragraphs are hard to
//! skim, put it in bullets" describes what it got and asks for the other.

use super::code_explanation::{explains_code, settle_code_explanation};
use super::lexicon::Cue;
use super::{Aspect, Request, Way};

/// One request as read from a text, with what it was read from.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reading {
    pub(super) request: Request,
    /// The words of the cue it was read from.
    pub(super) cue: &'static [&'static str],
    /// Whether the cue names what the user got rather than what they want ("paragraphs are
    /// hard to skim", "that was one giant paragraph").
    pub(super) described: bool,
    /// Whether the cue names a value asked for ("to euros", "in German").
    pub(super) target: bool,
}

/// Nouns for what the user sends, not for answers: a style word before one describes the
/// user's question ("a simple question", "for casual questions"), not the answer wanted.
const USER_INPUT: &[&str] = &[
    "question",
    "questions",
    "q",
    "qs",
    "query",
    "queries",
    "chat",
    "chats",
    "conversation",
    "conversations",
    "topic",
    "topics",
    "request",
    "requests",
];

/// What may follow "simple" when it asks for plainer answers ("keep it simple", "simple words");
/// before any other word it describes that thing ("a simple sorry", "simple recipes").
const SIMPLE_ABOUT_ANSWERS: &[&str] = &[
    ",",
    "but",
    "words",
    "word",
    "language",
    "terms",
    "english",
    "vocabulary",
    "vocab",
    "explanation",
    "explanations",
    "way",
    "version",
    "please",
    "pls",
    "plz",
    "and",
    "enough",
    "for",
    "stupid",
];

/// Words that may come before "steps" when they are the answer's steps ("in clear steps",
/// "the steps"), beside adjectives by their endings ("ordered", "logical"); another word
/// before it names whose steps they are ("Windows steps", "Jira steps").
const BEFORE_ANSWER_STEPS: &[&str] = &[
    ",",
    "but",
    "the",
    "in",
    "into",
    "as",
    "with",
    "numbered",
    "clear",
    "simple",
    "small",
    "individual",
    "separate",
    "all",
    "each",
    "every",
    "of",
    "more",
    "fewer",
    "less",
    "no",
    "any",
    "some",
    "few",
    "by",
    "these",
    "those",
    "your",
    "easy",
    "baby",
    "exact",
    "detailed",
    "concrete",
    "actionable",
    "logical",
    "and",
    "or",
    "me",
    "show",
    "list",
    "give",
    "skip",
    "explain",
    "numbering",
];

/// Words before a language that make it one being learnt ("learning Japanese").
const LEARNING: &[&str] = &[
    "learning",
    "learn",
    "studying",
    "study",
    "practising",
    "practicing",
    "practice",
    "practise",
    "teach",
    "teaching",
];

/// Words before "in" and a language that make it one being learnt ("a beginner in Spanish").
const LEARNERS: &[&str] = &[
    "beginner",
    "beginners",
    "lessons",
    "classes",
    "class",
    "course",
    "courses",
    "fluent",
    "exam",
    "test",
];

/// Whether the language at `at` is the one the user says they write in ("even when I write in
/// German", "i only wrote in french by mistake", "even if I mix in some Deutsch"), not the one to answer in ("please write in
/// German" asks for it).
fn the_user_writes_in(sentence: &[String], at: usize) -> bool {
    const WRITING: [&str; 7] = [
        "write", "wrote", "writing", "type", "typed", "typing", "mix",
    ];
    // "I write in English", "I write to you in English", "even if I mix in some Deutsch"
    let at = if at >= 1 && sentence[at - 1] == "some" {
        at - 1
    } else {
        at
    };
    at >= 3
        && sentence[at - 1] == "in"
        && (2..=4).filter(|&k| k < at).any(|k| {
            WRITING.contains(&sentence[at - k].as_str())
                && sentence[at.saturating_sub(k + 2)..at - k]
                    .iter()
                    .any(|w| matches!(w.as_str(), "i" | "im"))
        })
}

/// Nouns a language's name describes as a country's ("German laws", "French food"), where it is
/// not the language to answer in.
const NATIONAL_THINGS: &[&str] = &[
    "revolution",
    "history",
    "politics",
    "resident",
    "residents",
    "citizen",
    "citizenship",
    "ones",
    "shops",
    "law",
    "laws",
    "holiday",
    "holidays",
    "store",
    "stores",
    "shop",
    "shops",
    "price",
    "prices",
    "food",
    "recipes",
    "recipe",
    "cuisine",
    "dishes",
    "time",
    "timezone",
    "weather",
    "culture",
    "customs",
    "people",
    "market",
    "products",
    "brands",
    "websites",
    "sites",
    "news",
    "tv",
    "movies",
    "films",
    "books",
    "beer",
    "wine",
    "cars",
    "address",
    "bank",
    "banks",
    "tax",
    "taxes",
    "rules",
    "system",
    "school",
    "schools",
    "standards",
    "keyboard",
    "layout",
    "history",
    "citizen",
    "citizenship",
    "friends",
    "friend",
    "family",
    "partner",
    "wife",
    "husband",
    "mother",
    "father",
    "mom",
    "dad",
    "mum",
    "colleagues",
    "coworkers",
    "team",
    "company",
    "office",
    "healthcare",
    "insurance",
    "doctors",
    "grandmother",
    "grandma",
    "roots",
    "heritage",
    "restaurants",
    "restaurant",
    "neighbours",
    "neighbors",
    "market",
    "holidays",
    "trains",
    "railways",
    "government",
    "politics",
    "version",
    "edition",
];

/// Things in a user's life that are long or short too ("too long to cook", "weekday cooking
/// time: short"): a length said in a sentence about one of them, and about no answer, is theirs.
const TIMED_ACTIVITIES: &[&str] = &[
    "cook",
    "cooking",
    "cooked",
    "meal",
    "meals",
    "dinner",
    "dinners",
    "lunch",
    "lunches",
    "breakfast",
    "recipe",
    "recipes",
    "prep",
    "drive",
    "driving",
    "commute",
    "commutes",
    "trip",
    "trips",
    "flight",
    "flights",
    "layover",
    "layovers",
    "walk",
    "walks",
    "hike",
    "hikes",
    "workout",
    "workouts",
    "run",
    "runs",
    "meeting",
    "meetings",
    "holiday",
    "holidays",
    "vacation",
    "vacations",
    "wait",
    "queue",
    "nap",
    "naps",
    "sleep",
    "shift",
    "shifts",
    "journey",
    "journeys",
    "route",
    "routes",
    "stay",
    "stays",
    "visit",
    "visits",
    "class",
    "classes",
    "lesson",
    "lessons",
    "haircut",
    "hair",
    "nails",
    "sleeves",
    "dress",
    "skirt",
];

/// Words for what the assistant writes: a sentence naming one is about answers, whatever else
/// it names.
const ANSWER_WORDS: &[&str] = &[
    "answer",
    "answers",
    "reply",
    "replies",
    "response",
    "responses",
    "message",
    "messages",
    "text",
    "explanation",
    "explanations",
    "summary",
    "summaries",
    "it",
    "them",
    "this",
    "that",
    "you",
    "u",
    "ur",
    "your",
    "yours",
    "words",
    "sentences",
    "paragraphs",
];

/// Whether `word` speaks of spelling ("british", "spelt", "en-GB", "americanised"): beside
/// one, a spelling's example word ("colour", "centre") asks for that spelling; alone it is just
/// a word ("don't rely on colour alone").
pub(super) fn names_spelling(word: &str) -> bool {
    matches!(
        word,
        "british" | "american" | "uk" | "us" | "gb" | "english" | "ise" | "ize"
    ) || word.starts_with("spel")
        || word.starts_with("americani")
}

/// Words that count what follows ("8 paragraphs", "several paragraphs").
const COUNTS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several", "multiple",
    "many", "endless", "first", "second", "last", "every", "each",
];

/// Words of exercise, whose intensity "gentle" and "easy" describe.
const EXERCISE: &[&str] = &[
    "exercise",
    "exercises",
    "workout",
    "workouts",
    "training",
    "stretches",
    "stretching",
    "yoga",
    "fitness",
    "cardio",
];

/// Words of money, by which pounds are sterling ("show prices in pounds").
const MONEY: &[&str] = &[
    "price",
    "prices",
    "priced",
    "cost",
    "costs",
    "money",
    "budget",
    "pay",
    "paying",
    "spend",
    "spending",
    "salary",
    "rent",
    "cheap",
    "expensive",
    "currency",
];

/// Words that name a summary ("the summary section").
const SUMMARY_WORDS: &[&str] = &["summary", "sum", "recap", "tldr", "conclusion"];

/// Requests that say what a vaguer one read in the same text is about: the vaguer goes.
const SETTLES: &[(&[Aspect], &[Aspect])] = &[
    // "the proper technical terms instead of analogies": analogies are how it is simplified
    (&[Aspect::Technical], &[Aspect::Analogies]),
    // "tables pls, not paragraphs", "a side-by-side chart, not a list"; "checkbox lists"
    (&[Aspect::Table, Aspect::Checklist], &[Aspect::Bullets]),
    // "walk me through your thinking step by step"
    (&[Aspect::Reasoning], &[Aspect::Steps]),
    // "for coding exercises give me hints": the exercises are where hints go
    (&[Aspect::Hints], &[Aspect::Quiz]),
    (&[Aspect::WholeCode], &[Aspect::Code]),
    // "explain the comments you add": the explaining is the comments
    (&[Aspect::CodeComments], &[Aspect::CodeExplanation]),
    // a specific request about code says what "code" in it is about
    (
        &[
            Aspect::CodeComments,
            Aspect::CodeBlocks,
            Aspect::ProgrammingLanguage,
            Aspect::CodeExplanation,
        ],
        &[Aspect::Code, Aspect::Examples],
    ),
    // "walk me through the logic of the code": the code's explanation
    (
        &[Aspect::CodeExplanation],
        &[Aspect::Steps, Aspect::Reasoning],
    ),
    // "the code first, before any explanation"
    (
        &[Aspect::CommandFirst],
        &[Aspect::CodeExplanation, Aspect::Code],
    ),
    // "stop asking me follow-up questions": the questions are the follow-ups
    (&[Aspect::FollowUps], &[Aspect::Questions]),
];

/// Whether the cue `cue` found at `at` in `sentence` is about the answer here (module docs).
pub(super) fn applies_here(sentence: &[String], at: usize, cue: &Cue) -> bool {
    let next = sentence.get(at + cue.words.len()).map(String::as_str);
    let previous = at.checked_sub(1).map(|k| sentence[k].as_str());
    use super::lexicon::CueKind;
    if cue.kind == CueKind::Gradable && next.is_some_and(|w| USER_INPUT.contains(&w)) {
        return false;
    }
    if cue.aspect == Aspect::Length
        && sentence
            .iter()
            .any(|w| TIMED_ACTIVITIES.contains(&w.as_str()))
        && !sentence.iter().any(|w| ANSWER_WORDS.contains(&w.as_str()))
    {
        return false;
    }
    // "keep exercise suggestions gentle": how hard the exercise is, not how news is told
    if cue.aspect == Aspect::Bluntness && sentence.iter().any(|w| EXERCISE.contains(&w.as_str())) {
        return false;
    }
    // "it costs 40 euros" names a price, not the currency to use
    if cue.aspect == Aspect::Currency
        && previous.is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
    {
        return false;
    }
    if super::other_senses::names_something_else(sentence, at, cue) {
        return false;
    }
    // "prices in pounds" is money; "my weight in pounds" is units
    let money = || sentence.iter().any(|w| MONEY.contains(&w.as_str()));
    match cue.words {
        ["in" | "use" | "to", "pounds"] if cue.aspect == Aspect::Currency => return money(),
        ["pounds"] if money() => return false,
        _ => {}
    }
    match cue.words {
        // "ask me when you're not sure what I mean": the user's meaning, not the answer's
        [.., "not", "sure"]
            if next == Some("what") || sentence.iter().any(|w| w.starts_with("ask")) =>
        {
            false
        }
        // "the short ones leave me guessing": the user guesses, not the assistant
        ["guess*"] if previous == Some("me") => false,
        // "my kid's name": the apostrophe gone, not children to plan for
        ["kids"] => !next.is_some_and(|w| w.starts_with("name")),
        ["simple"] => next.is_none_or(|w| SIMPLE_ABOUT_ANSWERS.contains(&w)),
        // "8 paragraphs for a yes/no question" counts length, not the layout
        ["paragraph*"] => {
            !previous.is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()) || COUNTS.contains(&w))
        }
        ["explain*"] => explains_code(sentence, at),
        // "the 'to sum up' section", "summary sections": the section is the summary
        ["section*"] => !sentence[at.saturating_sub(3)..at]
            .iter()
            .any(|w| SUMMARY_WORDS.contains(&w.as_str())),
        ["steps"] => previous.is_none_or(|w| {
            BEFORE_ANSWER_STEPS.contains(&w)
                || [
                    "ed", "al", "ic", "ive", "ful", "ous", "ble", "ple", "ly", "est",
                ]
                .iter()
                .any(|suffix| w.ends_with(suffix))
        }),
        // "Spanish food" is not a language to answer in, nor is one being learnt ("I'm
        // learning Japanese", "a beginner in Spanish")
        _ if cue.aspect == Aspect::Language => {
            next.is_none_or(|w| !NATIONAL_THINGS.contains(&w))
                && !previous.is_some_and(|w| LEARNING.contains(&w))
                && !(previous == Some("in")
                    && at >= 2
                    && LEARNERS.contains(&sentence[at - 2].as_str()))
                && !the_user_writes_in(sentence, at)
        }
        _ => true,
    }
}

/// Whether the cue at `at..end` of `sentence` names what the user got rather than asks for it:
/// followed by a verb of being or of its effect ("paragraphs are hard to skim", "dense
/// paragraphs lose me"), after "was" / "giant" / "dense" … ("that was one giant paragraph"), or
/// a past tense after "you" ("you guessed wrong").
pub(super) fn described(sentence: &[String], at: usize, end: usize) -> bool {
    // "the short ones leave me guessing": past the noun the cue qualifies
    let skip = usize::from(
        sentence
            .get(end)
            .is_some_and(|w| matches!(w.as_str(), "ones" | "one" | "answers" | "replies")),
    );
    let after = sentence.get(end + skip).map(String::as_str);
    let being = matches!(
        after,
        Some(
            "is" | "are"
                | "was"
                | "were"
                | "look"
                | "looks"
                | "feel"
                | "feels"
                | "lose"
                | "make"
                | "leave"
                | "leaves"
        )
    );
    let before = &sentence[at.saturating_sub(3)..at];
    // "you guessed wrong", "u assumed": what the assistant did
    let done_by_you =
        at > 0 && matches!(sentence[at - 1].as_str(), "you" | "u") && sentence[at].ends_with("ed");
    // "your code has no comments at all": what the user got
    let had_none = at >= 2
        && sentence[at - 1] == "no"
        && matches!(sentence[at - 2].as_str(), "has" | "had" | "have");
    being
        || done_by_you
        || had_none
        || before.iter().any(|w| {
            matches!(
                w.as_str(),
                "was" | "giant" | "dense" | "huge" | "massive" | "endless" | "wall" | "walls"
            )
        })
}

/// The requests of one text, settled:
/// - an aspect read both ways, where every reading of one way describes what the user got and
///   one of the other asks ("can u break that into bullets? paragraphs are hard to skim"),
///   keeps the way asked for;
/// - a request that says what a vaguer one is about settles it ([`SETTLES`]);
/// - a summary asked for settles how short it is ("sum it up in one line at the bottom");
/// - humour asked for settles "lighten up" ("lighten up, a few gags won't kill anyone");
/// - a way of answering asked for settles the circumstances named as its reason ("leave out the
///   emojis, my screen reader reads each one aloud");
/// - one spelling example word, in a text that does not speak of spelling ("don't rely on
///   colour alone"), asks for no spelling;
/// - of two values of one aspect, the one named as the value asked for stays, when only one is
///   ("convert the dollars to euros").
pub(super) fn settle(mut readings: Vec<Reading>, talks_of_spelling: bool) -> Vec<Request> {
    let mut aspects: Vec<Aspect> = readings.iter().map(|r| r.request.aspect).collect();
    aspects.sort();
    aspects.dedup();
    for &aspect in &aspects {
        let ways = |described: Option<bool>| -> Vec<Way> {
            let mut ways: Vec<Way> = readings
                .iter()
                .filter(|r| {
                    r.request.aspect == aspect && described.is_none_or(|d| r.described == d)
                })
                .map(|r| r.request.way)
                .collect();
            ways.sort();
            ways.dedup();
            ways
        };
        let asked = ways(Some(false));
        if ways(None).len() > 1 && asked.len() == 1 {
            readings.retain(|r| r.request.aspect != aspect || r.request.way == asked[0]);
        }
    }
    settle_code_explanation(&mut readings);
    // the aspects read, once what code explanation settles is settled
    let aspects: Vec<Aspect> = readings.iter().map(|r| r.request.aspect).collect();
    let has = |aspect: &Aspect| aspects.contains(aspect);
    for (specific, vaguer) in SETTLES {
        if specific.iter().any(has) {
            readings.retain(|r| !vaguer.contains(&r.request.aspect));
        }
    }
    let summary_asked = readings
        .iter()
        .any(|r| r.request.aspect == Aspect::Summary && r.request.way == Way::More);
    if summary_asked {
        readings.retain(|r| {
            !(r.request.aspect == Aspect::Length
                && matches!(
                    r.cue,
                    ["one", "line"]
                        | ["one", "sentence"]
                        | ["two", "sentences"]
                        | ["few", "sentences"]
                        | ["one", "liner*"]
                        | ["short*"]
                        | ["brief"]
                        | ["in", "a", "nutshell"]
                ))
        });
    }
    if has(&Aspect::Humour) {
        readings.retain(|r| r.cue != ["lighten", "up"]);
    }
    let spellings = readings
        .iter()
        .filter(|r| r.request.aspect == Aspect::Spelling)
        .count();
    if spellings == 1 && !talks_of_spelling {
        readings.retain(|r| r.request.aspect != Aspect::Spelling);
    }
    if readings.iter().any(|r| !r.request.aspect.is_circumstance()) {
        readings.retain(|r| !r.request.aspect.is_circumstance());
    }
    let targets: Vec<Request> = readings
        .iter()
        .filter(|r| r.target)
        .map(|r| r.request)
        .collect();
    readings
        .iter()
        .map(|r| r.request)
        .filter(|r| {
            let named: Vec<&Request> = targets.iter().filter(|t| t.aspect == r.aspect).collect();
            !(matches!(r.way, Way::Value(_)) && named.len() == 1 && named[0] != r)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn counted_paragraphs_summary_sections_and_gentle_exercise_are_not_layout_or_tone() {
        assert_eq!(
            asked("I didn't need 8 paragraphs for a yes/no question. be concise"),
            ["LengthLess"]
        );
        assert_eq!(
            asked("Please skip the summary sections, top or bottom."),
            ["SummaryLess"]
        );
        assert_eq!(
            asked("I have a bad knee, so keep exercise suggestions gentle"),
            ["InjuryValue(0)"]
        );
        assert_eq!(
            asked("your code has no comments at all, please annotate it"),
            ["CodeCommentsMore"]
        );
    }

    #[test]
    fn style_words_about_something_else_ask_nothing_of_answers() {
        for text in [
            "ugh that was a wall of text. i asked a simple question",
            "a simple sorry would be nice",
        ] {
            assert!(
                !asked(text).contains(&"TechnicalLess".to_string()),
                "{text:?}"
            );
        }
        assert_eq!(asked("keep it simple"), ["TechnicalLess"]);
        // the steps are about Windows; the user's own system stays, the one turned away goes
        assert_eq!(
            asked("I'm on Linux, stop giving me Windows steps"),
            ["OperatingSystemValue(0)"]
        );
        assert_eq!(asked("no steps please, just the command"), ["StepsLess"]);
        assert_eq!(asked("break it into ordered steps"), ["StepsMore"]);
        assert_eq!(
            asked("assume german laws and holidays for me"),
            Vec::<String>::new()
        );
        assert_eq!(asked("answer in german please"), ["LanguageValue(1)"]);
        // the language the user writes in is not the one asked for; "please write in" asks
        assert_eq!(
            asked("reply in English even when I write in German"),
            ["LanguageValue(0)"]
        );
        assert_eq!(asked("please write in German"), ["LanguageValue(1)"]);
        assert_eq!(
            asked("weekday cooking time: short. keep that in mind"),
            Vec::<String>::new()
        );
        assert_eq!(
            asked("too long to cook!! fast dinners only"),
            Vec::<String>::new()
        );
        assert_eq!(
            asked("your answers are too long, I read them while cooking"),
            ["LengthLess"]
        );
    }

    #[test]
    fn a_spelling_word_alone_is_a_word() {
        assert_eq!(
            asked("please don't rely on colour alone, I'm colourblind"),
            ["AccessibilityValue(2)"]
        );
        assert_eq!(asked("colour not color please"), ["SpellingValue(0)"]);
        assert_eq!(
            asked("use British spelling, e.g. colour"),
            ["SpellingValue(0)"]
        );
        assert_eq!(asked("spell it colour"), ["SpellingValue(0)"]);
    }

    #[test]
    fn what_the_user_got_gives_way_to_what_they_ask_for() {
        for text in [
            "can u break that into bullets? paragraphs are hard to skim",
            "that was one giant paragraph. put it in a list next time",
        ] {
            assert_eq!(asked(text), ["BulletsMore"], "{text:?}");
        }
        assert_eq!(
            asked("Please answer in full paragraphs, the fragmented lists are hard to follow."),
            ["BulletsLess"]
        );
        // both asked: still ambiguous
        assert_eq!(asked("use bullets, or paragraphs"), Vec::<String>::new());
    }

    #[test]
    fn one_request_settles_the_words_it_is_made_of() {
        assert_eq!(asked("tables pls, not paragraphs"), ["TableMore"]);
        assert_eq!(
            asked("side-by-side chart for stuff like this, not a list"),
            ["TableMore"]
        );
        assert_eq!(
            asked("lay out your reasoning step by step"),
            ["ReasoningMore"]
        );
        assert_eq!(
            asked("can u sum it up in one line at the bottom?"),
            ["SummaryMore"]
        );
        assert_eq!(
            asked("lighten up a little, a few gags won't kill anyone"),
            ["HumourMore"]
        );
        assert_eq!(
            asked("lighten up, talk to me like a normal person"),
            ["FormalityLess"]
        );
    }
}
