//! Cue words used in another sense than the one about answers: a unit that measures something
//! or is the user's weight, "professional" as a person, "sources" of food or energy, a word of a
//! language.

use super::lexicon::Cue;
use super::Aspect;

/// Words before a unit that make it the user's body weight ("my kilos", "lose a few pounds").
const BODY_WEIGHT_BEFORE: &[&str] = &[
    "my", "few", "lose", "losing", "lost", "shed", "shedding", "gain", "gained", "gaining",
];

/// Words before "professional" that make it a person ("a qualified professional").
const PERSON_BEFORE: &[&str] = &[
    "a",
    "an",
    "or",
    "qualified",
    "licensed",
    "consult",
    "medical",
    "another",
    "healthcare",
];

/// What "a professional …" can describe as a register ("a professional tone").
const REGISTER_NOUNS: &[&str] = &[
    "tone", "register", "style", "voice", "manner", "way", "language", "wording", "writing",
    "phrasing", "level", "format", "feel", "look", "sounding",
];

/// Words before "sources" that make them where food or energy comes from, not citations.
const SUPPLY_BEFORE: &[&str] = &[
    "halal", "kosher", "protein", "food", "energy", "light", "heat", "water", "income", "meat",
    "fibre", "fiber", "calcium", "iron", "vitamin", "power",
];

/// Whether the cue, between the words `previous` and `next`, names something other than what
/// its aspect is about.
pub(super) fn names_something_else(cue: &Cue, previous: Option<&str>, next: Option<&str>) -> bool {
    // "16,000 km from Toronto", "a 40 minute drive" measure something; "my kilos", "shedding a
    // few pounds" are the user's weight: neither asks for units
    if cue.aspect == Aspect::Units
        && previous.is_some_and(|w| {
            w.bytes().all(|b| b.is_ascii_digit()) || BODY_WEIGHT_BEFORE.contains(&w)
        })
    {
        return true;
    }
    // "consult a qualified professional", "a doctor or professional": a person, not a register
    if cue.words == ["professional*"]
        && previous.is_some_and(|w| PERSON_BEFORE.contains(&w))
        && next.is_none_or(|w| !REGISTER_NOUNS.contains(&w))
    {
        return true;
    }
    // "meat from halal sources", "protein sources": where food or energy comes from
    if cue.aspect == Aspect::Sources && previous.is_some_and(|w| SUPPLY_BEFORE.contains(&w)) {
        return true;
    }
    // "every time I use one German word": a word of it, not the language to answer in
    if cue.aspect == Aspect::Language
        && next.is_some_and(|w| matches!(w, "word" | "words" | "phrase" | "phrases"))
    {
        return true;
    }
    false
}
