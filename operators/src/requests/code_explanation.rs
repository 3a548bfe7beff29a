//! Explaining the code given, an aspect of its own ("just the code, no explanation" / "walk me
//! through the snippet"): read only where code is asked about, so "explain it simply" asks for
//! no such thing.

use super::settling::Reading;
use super::{Aspect, Way};

/// What "explain" is followed by when it is the code that is explained ("explain the code",
/// "explain what it does", "explain every line", "no need to explain,").
const EXPLAINED_CODE: &[&str] = &[
    "code",
    "snippet",
    "snippets",
    "function",
    "functions",
    "script",
    "it",
    "this",
    "that",
    "them",
    "what",
    "how",
    "why",
    "line",
    "lines",
    "logic",
    "part",
    "parts",
    "step",
    "steps",
    ",",
    "but",
    "more",
    "stuff",
    "wat",
];

/// Whether "explain" at `at` of `sentence` is about the code: what follows it, past "the",
/// "every", …, is [`EXPLAINED_CODE`] or nothing ("explain the code", "don't explain every
/// line", "explain it"), not what the code is for ("when explaining APIs").
pub(super) fn explains_code(sentence: &[String], at: usize) -> bool {
    sentence[at + 1..]
        .iter()
        .map(String::as_str)
        .find(|w| {
            !matches!(
                *w,
                "the" | "your" | "my" | "a" | "each" | "every" | "to" | "me"
            )
        })
        .is_none_or(|w| EXPLAINED_CODE.contains(&w))
}

/// Settles [`Aspect::CodeExplanation`] among a text's readings: "walk me
/// through" a snippet is its explanation; explaining is dropped where no code is named, or where
/// code is turned away and explaining asked for ("no code, just explain it in words").
pub(super) fn settle_code_explanation(readings: &mut Vec<Reading>) {
    // explaining is about code only where code is asked about; where code is turned away and
    // explaining asked for, it is the words instead of code ("no code, just explain it")
    let code_named = |readings: &[Reading], way: Option<Way>| {
        readings.iter().any(|r| {
            matches!(
                r.request.aspect,
                Aspect::Code | Aspect::CodeComments | Aspect::CodeBlocks | Aspect::WholeCode
            ) && way.is_none_or(|w| r.request.way == w)
        })
    };
    // "walk me through the snippet": through the code is its explanation
    if code_named(readings, Some(Way::More)) {
        for r in readings.iter_mut() {
            if r.cue == ["walk", "me", "through"] {
                r.request.aspect = Aspect::CodeExplanation;
            }
        }
    }
    let explained_in_words = code_named(readings, Some(Way::Less))
        && !code_named(readings, Some(Way::More))
        && readings
            .iter()
            .any(|r| r.request.aspect == Aspect::CodeExplanation && r.request.way == Way::More);
    let code_asked = code_named(readings, None)
        || readings
            .iter()
            .any(|r| r.request.aspect == Aspect::CodeExplanation && r.cue.contains(&"code"));
    if !code_asked || explained_in_words {
        readings.retain(|r| r.request.aspect != Aspect::CodeExplanation);
    }
}

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn explaining_code_is_its_own_aspect_where_code_is_asked_about() {
        assert_eq!(
            asked("just the code, no explanation"),
            ["CodeExplanationLess"]
        );
        assert_eq!(
            asked("I'd rather you didn't explain every line after showing code, I'm a dev"),
            ["CodeExplanationLess"]
        );
        assert_eq!(
            asked("can you explain the code after you write it? I don't get what it does"),
            ["CodeExplanationMore"]
        );
        assert_eq!(
            asked("pls walk me through the snippet step by step"),
            ["CodeExplanationMore"]
        );
        // no code asked about: "explain" is a plain verb
        assert_eq!(asked("explain it simply please"), ["TechnicalLess"]);
        assert_eq!(
            asked("Always include example code when explaining APIs"),
            ["CodeMore"]
        );
        assert_eq!(
            asked("no code please, just explain it in words"),
            ["CodeLess"]
        );
        assert_eq!(
            asked("Please give the code snippet at the top, before any explanation."),
            ["CommandFirstMore"]
        );
    }
}
