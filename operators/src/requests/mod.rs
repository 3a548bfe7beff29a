//! What a correction, or a preference stated in an ordinary message, asks of the assistant, in
//! a normalised form: a set of [`Request`]s, each an [`Aspect`] of answers and the way the user
//! wants it to go ("shorter", "no bullet points", "in German").
//!
//! Sentence embeddings place a request close to its own opposite ("use bullet points" and
//! "don't use bullet points" are nearer than "use bullet points" and "put it in a list"), and a
//! small model places paraphrases with few words in common far apart ("way too wordy" and "be
//! more concise"). So clustering compares what is asked first, and falls back on the
//! embedding only for corrections this normaliser finds nothing in ([`RequestSet::is_empty`]).
//!
//! # How a text is read
//!
//! The text is lowercased, apostrophes dropped ("don't" → "dont"), hyphens and other punctuation
//! split words, "tl;dr" kept as one word, and cut into clauses at `. ! ? ; , :` and "but". In each
//! clause, [`CUES`] are matched longest first, word by word (a cue word ending in `*` matches any
//! word it begins). A cue names an aspect and the way its words point when they are asked for
//! ("short" → [`Way::Less`] length, "bullet points" → [`Way::More`] bullets). The way turns around
//! for each **flip** among the up to [`FLIP_WINDOW`] words before the cue in its clause: a negation
//! ([`FLIPS`]: "no", "don't", "stop", "without", "less", "instead of", "no need to", …, or a word
//! ending in "nt"), or "too" / "so" / "overly" before a gradable cue ("too long" asks for shorter).
//! A complaint after the cue in its clause ("emojis are annoying") turns it too, and a removal
//! anywhere after it in its sentence ("…, remove them") leaves it turned, however it was turned
//! before ("too many comments, strip them"). Complaint cues ("wordy", "wall of text",
//! "stiff") already point the way they are meant, and nothing turns them ("less rambling" and
//! "don't ramble" ask for shorter too). A cue joined to the one before it by connectors only ("the
//! caveats and hedging") is turned as that one is. Negations that ask all the same (`KEEPS`: "don't
//! forget", "wouldn't mind", "not enough") turn nothing; a clause opening with "enough" ("ENOUGH
//! bullet points") turns; a negated wish ("don't need", "no need") turns its whole clause, past the
//! window; a negated approval after the cue ("the jokes aren't landing") or "too much" ending its
//! clause turns it; and no negation before "just" or "only" reaches a cue after it ("no fluff, only
//! bullet points").
//!
//! Aspects with named values ([`Aspect::Language`], [`Aspect::Units`], [`Aspect::Spelling`])
//! take the values asked for; a value turned away ("not English", "instead of miles") is
//! dropped, except for two-valued aspects (units, spelling, the phone, a car, …), where it asks
//! for the other value, a diet without meat (turned, it eats meat) and an allergy (turned, it is
//! still the allergy: "never anything with peanuts").
//! Emoji that a sentence names ("stop with the 🎉🔥 stuff", "more 😂 pls") read as the word
//! "emojis", a warning sign as "warnings" and a prohibition sign as "no"; other emoji end a
//! clause, as people use them ("just the number isn't helpful 🤔 show me the steps"). A currency
//! sign on an amount ("a $300 gadget") asks for no currency.
//!
//! A cue is skipped where its word is about something else (`settling.rs`, `other_senses.rs`:
//! a number and its unit, the user's weight, "a qualified professional", "protein sources"): a
//! style word before
//! the user's own question ("I asked a simple question"), "simple" before another noun ("a
//! simple sorry"), "steps" after a tool's name ("Windows steps"), a language's name before a
//! country's things ("German laws"), a length in a sentence about cooking, a trip or a meeting
//! and no answer ("too long to cook"). The requests read are then settled: an aspect read both
//! ways keeps the way asked for when the other only describes what the user got ("paragraphs
//! are hard to skim, use bullets"); a table settles bullets, reasoning settles steps, a summary
//! asked for settles how short it is ("sum it up in one line"), humour settles "lighten up"; one
//! example spelling word in a text that says nothing of spelling ("don't rely on colour")
//! asks for no spelling.
//!
//! An aspect asked both ways in one text (or for two values) is dropped as ambiguous.

mod chat_clauses;
mod circumstances;
mod code_explanation;
mod instructions;
mod layout_cues;
mod lexicon;
mod not_cues;
mod other_senses;
mod reading;
#[cfg(test)]
mod reading_tests;
mod sentence_tone;
mod settling;
mod stated;
mod tone_cues;
mod turning_words;
/// How a fed-up sentence opens, and the negated verbs: topic terms read them as requests do.
pub(crate) use turning_words::{FED_UP, NEGATED_VERBS};
mod value_cues;
mod words;

pub use reading::{requests_of, FLIP_WINDOW};

/// What `text` asks for, as "AspectWay" strings (the reading's unit tests).
#[cfg(test)]
fn asked(text: &str) -> Vec<String> {
    requests_of(text)
        .0
        .iter()
        .map(|r| format!("{:?}{:?}", r.aspect, r.way))
        .collect()
}
pub use stated::{stated_requests, PREFERENCE_ATTRIBUTE_PREFIX};

use crate::math::skills::{style_dimension_index, StyleVector};
use serde::{Deserialize, Serialize};

/// What about an answer a request is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aspect {
    /// More: longer and more detailed; less: shorter, more concise.
    Length,
    /// More: more formal; less: more casual.
    Formality,
    /// More: bullet points and lists; less: prose.
    Bullets,
    /// Emojis.
    Emoji,
    /// More: more technical; less: simpler words, less jargon.
    Technical,
    /// Code snippets.
    Code,
    /// Examples.
    Examples,
    /// Tables.
    Table,
    /// Numbered, step-by-step instructions.
    Steps,
    /// Headings and sections.
    Headings,
    /// Citing sources.
    Sources,
    /// Asking the user questions (clarifying or follow-up).
    Questions,
    /// Apologising.
    Apologies,
    /// Disclaimers, caveats, warnings.
    Disclaimers,
    /// Restating the user's question.
    Restating,
    /// Addressing the user as "sir" or "madam".
    Titles,
    /// More: straight to the point, the answer first; less: preamble.
    Directness,
    /// Enthusiasm, excitement, exclamation marks.
    Enthusiasm,
    /// Humour and jokes.
    Humour,
    /// Markdown formatting; less: plain text.
    Markdown,
    /// The language to answer in ([`Way::Value`]: a [`LANGUAGES`] index).
    Language,
    /// Units of measure ([`Way::Value`]: 0 metric, 1 imperial).
    Units,
    /// Spelling ([`Way::Value`]: 0 British, 1 American).
    Spelling,
    /// Comments in code.
    CodeComments,
    /// Code in fenced code blocks.
    CodeBlocks,
    /// The programming language of code ([`Way::Value`]: a [`PROGRAMMING_LANGUAGES`] index).
    ProgrammingLanguage,
    /// A summary or TL;DR before the answer.
    Summary,
    /// More: several options; less: one recommendation.
    Options,
    /// Compliments and flattery.
    Flattery,
    /// Bold text.
    Bold,
    /// More: emotional support; less: practical advice only.
    Empathy,
    /// More: hints to work it out; less: the full solution.
    Hints,
    /// More: paid, premium; less: free or cheap only.
    Cost,
    /// Calling the user by name.
    UsingName,
    /// Time of day ([`Way::Value`]: 0 24-hour, 1 12-hour).
    TimeFormat,
    /// Dates ([`Way::Value`]: 0 ISO year-month-day, 1 day-month-year, 2 month-day-year).
    DateFormat,
    /// Currency ([`Way::Value`]: 0 euro, 1 US dollar, 2 pound sterling).
    Currency,
    /// The user's pronouns ([`Way::Value`]: 0 they/them, 1 she/her, 2 he/him).
    Pronouns,
    /// Offers and questions at the end ("Would you like me to …?").
    FollowUps,
    /// Practice questions and quizzes.
    Quiz,
    /// More: show the reasoning behind an answer; less: the result alone.
    Reasoning,
    /// More: say how sure an answer is, flag uncertainty; less: commit to an answer.
    Hedging,
    /// More: the whole code (file, function); less: only the lines that changed.
    WholeCode,
    /// More: say bad news plainly, without softening; less: break it gently, with tact.
    Bluntness,
    /// How identifiers in code are named ([`Way::Value`]: 0 snake_case, 1 camelCase, 2
    /// PascalCase, 3 kebab-case).
    Naming,
    /// Tests with code (unit tests, test cases, asserts).
    Tests,
    /// Moral commentary on what the user asked ("drink responsibly", "I didn't ask for an
    /// ethics lecture").
    Moralising,
    /// Tasks as a checklist of boxes to tick ("- [ ]").
    Checklist,
    /// More: the command or code to run first, the explanation after it.
    CommandFirst,
    /// More: explain by analogy, comparing with everyday things; less: literally, without
    /// analogies or metaphors.
    Analogies,
    /// What the user eats ([`Way::Value`]: a [`DIETS`] index).
    Diet,
    /// What the user (or their household) is allergic to ([`Way::Value`]: an [`ALLERGIES`] index).
    Allergy,
    /// The user's pets ([`Way::Value`]: 0 cats, 1 dogs).
    Pets,
    /// How the user reads and hears ([`Way::Value`]: 0 a screen reader, 1 dyslexia, 2 colour
    /// blindness, 3 hearing loss).
    Accessibility,
    /// The user's operating system ([`Way::Value`]: 0 Linux, 1 macOS, 2 Windows).
    OperatingSystem,
    /// Where the user works ([`Way::Value`]: 0 from home, 1 at an office or site).
    Work,
    /// Whether the user smokes ([`Way::Value`]: 0 a smoker, 1 a non-smoker).
    Smoking,
    /// The user is pregnant ([`Way::Value`] 0).
    Pregnancy,
    /// The user has an injury that limits what they can do ([`Way::Value`] 0).
    Injury,
    /// Whether the user has a car ([`Way::Value`]: 0 has one, 1 has none).
    Car,
    /// When the user works ([`Way::Value`]: 0 nights, 1 days).
    Shift,
    /// What the user cooks with ([`Way::Value`] 0: no oven).
    Kitchen,
    /// More: explain the code given (what it does, why); less: the code alone.
    CodeExplanation,
    /// The user's phone ([`Way::Value`]: 0 an iPhone, 1 an Android phone).
    Phone,
    /// Whether the user drinks alcohol ([`Way::Value`]: 0 not at all, 1 does).
    Alcohol,
    /// The user has young children at home ([`Way::Value`] 0).
    Children,
}

impl Aspect {
    /// Every aspect.
    pub const ALL: [Aspect; 66] = [
        Aspect::Length,
        Aspect::Formality,
        Aspect::Bullets,
        Aspect::Emoji,
        Aspect::Technical,
        Aspect::Code,
        Aspect::Examples,
        Aspect::Table,
        Aspect::Steps,
        Aspect::Headings,
        Aspect::Sources,
        Aspect::Questions,
        Aspect::Apologies,
        Aspect::Disclaimers,
        Aspect::Restating,
        Aspect::Titles,
        Aspect::Directness,
        Aspect::Enthusiasm,
        Aspect::Humour,
        Aspect::Markdown,
        Aspect::Language,
        Aspect::Units,
        Aspect::Spelling,
        Aspect::CodeComments,
        Aspect::CodeBlocks,
        Aspect::ProgrammingLanguage,
        Aspect::Summary,
        Aspect::Options,
        Aspect::Flattery,
        Aspect::Bold,
        Aspect::Empathy,
        Aspect::Hints,
        Aspect::Cost,
        Aspect::UsingName,
        Aspect::TimeFormat,
        Aspect::DateFormat,
        Aspect::Currency,
        Aspect::Pronouns,
        Aspect::FollowUps,
        Aspect::Quiz,
        Aspect::Reasoning,
        Aspect::Hedging,
        Aspect::WholeCode,
        Aspect::Bluntness,
        Aspect::Naming,
        Aspect::Tests,
        Aspect::Moralising,
        Aspect::Checklist,
        Aspect::CommandFirst,
        Aspect::Analogies,
        Aspect::Diet,
        Aspect::Allergy,
        Aspect::Pets,
        Aspect::Accessibility,
        Aspect::OperatingSystem,
        Aspect::Work,
        Aspect::Smoking,
        Aspect::Pregnancy,
        Aspect::Injury,
        Aspect::Car,
        Aspect::Shift,
        Aspect::Kitchen,
        Aspect::CodeExplanation,
        Aspect::Phone,
        Aspect::Alcohol,
        Aspect::Children,
    ];

    /// Whether the aspect is a circumstance of the user's that answers must respect (what they
    /// eat, their pets, how they read, their computer) rather than a way of answering.
    pub fn is_circumstance(self) -> bool {
        matches!(
            self,
            Aspect::Diet
                | Aspect::Allergy
                | Aspect::Pets
                | Aspect::Accessibility
                | Aspect::OperatingSystem
                | Aspect::Work
                | Aspect::Smoking
                | Aspect::Pregnancy
                | Aspect::Injury
                | Aspect::Car
                | Aspect::Shift
                | Aspect::Kitchen
                | Aspect::Phone
                | Aspect::Alcohol
                | Aspect::Children
        )
    }

    /// The aspect's name, as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Aspect::Length => "length",
            Aspect::Formality => "formality",
            Aspect::Bullets => "bullets",
            Aspect::Emoji => "emoji",
            Aspect::Technical => "technical",
            Aspect::Code => "code",
            Aspect::Examples => "examples",
            Aspect::Table => "table",
            Aspect::Steps => "steps",
            Aspect::Headings => "headings",
            Aspect::Sources => "sources",
            Aspect::Questions => "questions",
            Aspect::Apologies => "apologies",
            Aspect::Disclaimers => "disclaimers",
            Aspect::Restating => "restating",
            Aspect::Titles => "titles",
            Aspect::Directness => "directness",
            Aspect::Enthusiasm => "enthusiasm",
            Aspect::Humour => "humour",
            Aspect::Markdown => "markdown",
            Aspect::Language => "language",
            Aspect::Units => "units",
            Aspect::Spelling => "spelling",
            Aspect::CodeComments => "code_comments",
            Aspect::CodeBlocks => "code_blocks",
            Aspect::ProgrammingLanguage => "programming_language",
            Aspect::Summary => "summary",
            Aspect::Options => "options",
            Aspect::Flattery => "flattery",
            Aspect::Bold => "bold",
            Aspect::Empathy => "empathy",
            Aspect::Hints => "hints",
            Aspect::Cost => "cost",
            Aspect::UsingName => "using_name",
            Aspect::TimeFormat => "time_format",
            Aspect::DateFormat => "date_format",
            Aspect::Currency => "currency",
            Aspect::Pronouns => "pronouns",
            Aspect::FollowUps => "follow_ups",
            Aspect::Quiz => "quiz",
            Aspect::Reasoning => "reasoning",
            Aspect::Hedging => "hedging",
            Aspect::WholeCode => "whole_code",
            Aspect::Bluntness => "bluntness",
            Aspect::Naming => "naming",
            Aspect::Tests => "tests",
            Aspect::Moralising => "moralising",
            Aspect::Checklist => "checklist",
            Aspect::CommandFirst => "command_first",
            Aspect::Analogies => "analogies",
            Aspect::Diet => "diet",
            Aspect::Allergy => "allergy",
            Aspect::Pets => "pets",
            Aspect::Accessibility => "accessibility",
            Aspect::OperatingSystem => "operating_system",
            Aspect::Work => "work",
            Aspect::Smoking => "smoking",
            Aspect::Pregnancy => "pregnancy",
            Aspect::Injury => "injury",
            Aspect::Car => "car",
            Aspect::Shift => "shift",
            Aspect::Kitchen => "kitchen",
            Aspect::CodeExplanation => "code_explanation",
            Aspect::Phone => "phone",
            Aspect::Alcohol => "alcohol",
            Aspect::Children => "children",
        }
    }
}

/// Which way a request wants its aspect to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Way {
    /// Less of it, or none.
    Less,
    /// More of it, or to use it.
    More,
    /// One of the aspect's named values.
    Value(u8),
}

/// One thing asked: an aspect and the way it should go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Request {
    pub aspect: Aspect,
    pub way: Way,
}

impl Request {
    /// Whether `self` and `other` ask for different things of one aspect.
    pub fn conflicts_with(&self, other: &Request) -> bool {
        self.aspect == other.aspect && self.way != other.way
    }

    /// The style dimension ([`crate::math::skills::STYLE_DIMENSION_NAMES`]) this request sets,
    /// and whether it wants it high (true) or low: what a skill's style must not contradict.
    pub fn style_dimension(&self) -> Option<(&'static str, bool)> {
        let high = match self.way {
            Way::More => true,
            Way::Less => false,
            Way::Value(_) => return None,
        };
        let dimension = match self.aspect {
            Aspect::Length => "verbosity",
            Aspect::Formality => "formality",
            Aspect::Technical => "technical_depth",
            Aspect::Bullets => "structure",
            Aspect::Examples => "example_usage",
            Aspect::Questions | Aspect::FollowUps => "question_asking",
            Aspect::Enthusiasm => "enthusiasm",
            Aspect::Directness => "directness",
            _ => return None,
        };
        Some((dimension, high))
    }
}

/// How far from neutral (0.5) a style must lean against a request, on the dimension it sets,
/// to contradict it ([`Request::contradicts_style`]).
pub const STYLE_CONTRADICTION_MARGIN: f64 = 0.15;

impl Request {
    /// Whether `style` ([`crate::math::skills::STYLE_DIMENSION_NAMES`] order) leans against this request: on the
    /// dimension it sets ([`Request::style_dimension`]), below 0.5 − the margin when it wants it
    /// high, above 0.5 + the margin when it wants it low. A skill whose style contradicts an
    /// active preference is not one to choose ("Detailed", verbosity 0.9, for "keep it short").
    pub fn contradicts_style(&self, style: &StyleVector) -> bool {
        let Some((name, high)) = self.style_dimension() else {
            return false;
        };
        let Some(i) = style_dimension_index(name) else {
            return false;
        };
        if high {
            style[i] < 0.5 - STYLE_CONTRADICTION_MARGIN
        } else {
            style[i] > 0.5 + STYLE_CONTRADICTION_MARGIN
        }
    }
}

/// Languages a request can name, by [`Way::Value`] index.
pub const LANGUAGES: [&str; 16] = [
    "English",
    "German",
    "French",
    "Spanish",
    "Italian",
    "Portuguese",
    "Dutch",
    "Polish",
    "Russian",
    "Japanese",
    "Chinese",
    "Korean",
    "Arabic",
    "Turkish",
    "Swedish",
    "Hindi",
];

/// Programming languages a request can name, by [`Way::Value`] index.
pub const PROGRAMMING_LANGUAGES: [&str; 14] = [
    "Python",
    "JavaScript",
    "TypeScript",
    "Java",
    "Rust",
    "Go",
    "C#",
    "C++",
    "Ruby",
    "PHP",
    "Swift",
    "Kotlin",
    "SQL",
    "Bash",
];

/// Diets a request can name, by [`Way::Value`] index.
pub const DIETS: [&str; 7] = [
    "vegetarian",
    "vegan",
    "pescatarian",
    "halal",
    "kosher",
    "low-sugar",
    // eating meat again, or not avoiding it: "not vegetarian anymore", "back on meat"
    "meat-eating",
];

/// Allergies a request can name, by [`Way::Value`] index.
pub const ALLERGIES: [&str; 5] = ["nuts", "gluten", "dairy", "shellfish", "eggs"];

/// The names of the values of an aspect with named values, by [`Way::Value`] index (empty for
/// the others).
pub fn value_names(aspect: Aspect) -> &'static [&'static str] {
    match aspect {
        Aspect::Language => &LANGUAGES,
        Aspect::ProgrammingLanguage => &PROGRAMMING_LANGUAGES,
        Aspect::Units => &["metric", "imperial"],
        Aspect::Spelling => &["British", "American"],
        Aspect::TimeFormat => &["24-hour", "12-hour"],
        Aspect::DateFormat => &["year-month-day", "day-month-year", "month-day-year"],
        Aspect::Currency => &["euros", "US dollars", "pounds sterling"],
        Aspect::Pronouns => &["they/them", "she/her", "he/him"],
        Aspect::Diet => &DIETS,
        Aspect::Allergy => &ALLERGIES,
        Aspect::Pets => &["cats", "dogs"],
        Aspect::Accessibility => &[
            "a screen reader",
            "dyslexia",
            "colour blindness",
            "hearing loss",
        ],
        Aspect::OperatingSystem => &["Linux", "macOS", "Windows"],
        Aspect::Naming => &["snake_case", "camelCase", "PascalCase", "kebab-case"],
        Aspect::Work => &["from home", "at an office or site"],
        Aspect::Smoking => &["a smoker", "a non-smoker"],
        Aspect::Pregnancy => &["pregnant"],
        Aspect::Injury => &["an injury"],
        Aspect::Car => &["a car", "no car"],
        Aspect::Shift => &["nights", "days"],
        Aspect::Kitchen => &["no oven"],
        Aspect::Phone => &["an iPhone", "an Android phone"],
        Aspect::Alcohol => &["no alcohol", "alcohol"],
        Aspect::Children => &["young children"],
        _ => &[],
    }
}

/// What one text asks for: its requests, sorted, each aspect at most once.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RequestSet(pub Vec<Request>);

impl RequestSet {
    /// Whether nothing was recognised.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether some aspect is asked for differently in the two sets.
    pub fn conflicts_with(&self, other: &RequestSet) -> bool {
        self.0
            .iter()
            .any(|a| other.0.iter().any(|b| a.conflicts_with(b)))
    }

    /// Whether it names circumstances of the user's and nothing else (none: false).
    pub fn only_circumstances(&self) -> bool {
        !self.0.is_empty() && self.0.iter().all(|r| r.aspect.is_circumstance())
    }

    /// Whether a correction that asks for this set is linked by what it names (its topic
    /// terms): it asks for nothing recognised, or only names circumstances ("we're vegetarian").
    pub fn linked_by_topic(&self) -> bool {
        self.is_empty() || self.only_circumstances()
    }

    /// Whether every request of `self` is in `other`.
    pub fn is_subset_of(&self, other: &RequestSet) -> bool {
        self.0.iter().all(|r| other.0.contains(r))
    }

    /// The set from requests in any order: an aspect asked for two ways is dropped, duplicates
    /// count once.
    pub fn from_requests(mut requests: Vec<Request>) -> RequestSet {
        requests.sort();
        requests.dedup();
        let ambiguous = |r: &Request, all: &[Request]| all.iter().any(|o| r.conflicts_with(o));
        let kept = requests
            .iter()
            .filter(|r| !ambiguous(r, &requests))
            .copied()
            .collect();
        RequestSet(kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflicts_are_one_aspect_asked_two_ways() {
        let short = requests_of("keep it short");
        let long = requests_of("more detail please");
        let bullets = requests_of("use bullets");
        assert!(short.conflicts_with(&long));
        assert!(!short.conflicts_with(&bullets));
        assert!(requests_of("short").is_subset_of(&requests_of("short, in bullets")));
        assert!(requests_of("shorter but more detailed").is_empty());
    }

    #[test]
    fn a_skill_leaning_against_a_request_contradicts_it() {
        use crate::math::skills::base_skill;
        let style = |id: &str| base_skill(id).unwrap().style;
        let short = requests_of("please keep it short").0[0];
        // verbosity: detailed 0.9 > 0.65; concise 0.2, technical 0.6 do not
        assert!(short.contradicts_style(&style("detailed")));
        assert!(!short.contradicts_style(&style("concise")));
        assert!(!short.contradicts_style(&style("technical")));
        let casual = requests_of("be more casual").0[0];
        // formality: technical 0.7 > 0.65; casual 0.1 does not
        assert!(casual.contradicts_style(&style("technical")));
        assert!(!casual.contradicts_style(&style("casual")));
        let formal = requests_of("be more formal").0[0];
        assert!(formal.contradicts_style(&style("casual")));
        // a request that sets no style dimension contradicts no skill
        let german = requests_of("answer in German").0[0];
        assert!(!german.contradicts_style(&style("casual")));
    }

    #[test]
    fn requests_read_as_instructions_and_name_the_style_they_set() {
        let short = requests_of("too long");
        assert_eq!(short.0[0].to_string(), "Keep answers short and concise.");
        assert_eq!(short.0[0].style_dimension(), Some(("verbosity", false)));
        assert_eq!(
            requests_of("auf Deutsch bitte").0[0].to_string(),
            "Answer in German."
        );
    }
}
