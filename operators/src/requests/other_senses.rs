//! Cue words used in another sense than the one about answers: a unit that measures something
//! or is the user's weight, "professional" as a person, "sources" of food or energy, a word of a
//! language, code words in a sentence about no code, "working out" at home.

use super::lexicon::Cue;
use super::Aspect;

/// Words before a weight unit that make it the user's body weight ("my kilos", "lose a few
/// pounds").
const BODY_WEIGHT_BEFORE: &[&str] = &[
    "my", "few", "lose", "losing", "lost", "shed", "shedding", "gain", "gained", "gaining",
];

/// Words before a number that make the number and its unit an example of what is asked ("say
/// 5 km, not 3 miles", "500 grams instead of 2 cups").
const EXAMPLE_BEFORE: &[&str] = &[
    "like", "as", "say", "eg", "write", "use", "not", "instead", "rather", "than", "of",
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

/// What "a professional …" can describe as a register ("a professional tone", "a professional
/// email").
const REGISTER_NOUNS: &[&str] = &[
    "tone",
    "register",
    "style",
    "voice",
    "manner",
    "way",
    "language",
    "wording",
    "writing",
    "phrasing",
    "level",
    "format",
    "feel",
    "look",
    "sounding",
    "answer",
    "answers",
    "response",
    "responses",
    "reply",
    "replies",
    "email",
    "emails",
    "message",
    "messages",
    "letter",
    "text",
];

/// Words before "sources" that make them where food or energy comes from, not citations.
const SUPPLY_BEFORE: &[&str] = &[
    "halal", "kosher", "protein", "food", "energy", "light", "heat", "water", "income", "meat",
    "fibre", "fiber", "calcium", "iron", "vitamin", "power",
];

/// Words that put code in a sentence, for code cues that are common words elsewhere ("the
/// modified parts", "the whole program").
const CODE_WORDS: &[&str] = &[
    "code", "file", "files", "script", "function", "line", "lines", "snippet", "snippets",
    "module", "class", "diff",
];

/// Whether the cue found at `at` in `sentence` names something other than what its aspect is
/// about.
pub(super) fn names_something_else(sentence: &[String], at: usize, cue: &Cue) -> bool {
    let word = |k: Option<usize>| k.and_then(|k| sentence.get(k)).map(String::as_str);
    let previous = word(at.checked_sub(1));
    let before_previous = word(at.checked_sub(2));
    let next = word(Some(at + cue.words.len()));
    let number = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
    if cue.aspect == Aspect::Units {
        // "16,000 km from Toronto" measures something ("say 5 km, not 3 miles" asks)
        if previous.is_some_and(number)
            && !before_previous.is_some_and(|w| EXAMPLE_BEFORE.contains(&w))
            && !sentence.iter().any(|w| w == "instead" || w == "rather")
        {
            return true;
        }
        // "my kilos", "shedding a few pounds": the user's weight
        let weight = matches!(cue.words, ["kg"] | ["kilo*"] | ["pounds"] | ["lbs"]);
        if weight && previous.is_some_and(|w| BODY_WEIGHT_BEFORE.contains(&w)) {
            return true;
        }
    }
    // "consult a qualified professional", "a doctor or professional": a person, not a register
    // ("write like a professional", "a professional but warm tone" ask for one)
    if cue.words == ["professional*"] && sentence[at] != "professionally" {
        let likened = before_previous.is_some_and(|w| matches!(w, "like" | "as"))
            || sentence[..at].iter().any(|w| w.starts_with("sound"));
        let register = sentence[at + 1..]
            .iter()
            .take(3)
            .any(|w| REGISTER_NOUNS.contains(&w.as_str()));
        if previous.is_some_and(|w| PERSON_BEFORE.contains(&w)) && !likened && !register {
            return true;
        }
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
    // "I changed parts of my routine", "the full program for the week": no code
    if matches!(
        cue.words,
        ["modified" | "changed", "parts"]
            | ["what", "is", "different"]
            | ["whats", "different"]
            | ["whole" | "entire" | "full", "program"]
    ) && !sentence.iter().any(|w| CODE_WORDS.contains(&w.as_str()))
    {
        return true;
    }
    // "at home working out with dumbbells"
    cue.words == ["home", "working"] && next == Some("out")
}

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn words_in_another_sense_ask_nothing_of_answers() {
        // a unit measuring something, or the user's weight
        assert_eq!(
            asked("thanks for the link, I'll just fly 16,000 km from Toronto to pick up a hose"),
            Vec::<String>::new()
        );
        assert_eq!(
            asked("please dont talk about my kilos or that i should lose some"),
            Vec::<String>::new()
        );
        assert_eq!(asked("use lbs and inches"), ["UnitsValue(1)"]);
        assert_eq!(asked("say 5 km, not 3 miles"), ["UnitsValue(0)"]);
        assert_eq!(asked("use my imperial units"), ["UnitsValue(1)"]);
        // "professional" as a person; as a register it still asks
        assert_eq!(
            asked("not need every time say talk to doctor or professional i know this already"),
            Vec::<String>::new()
        );
        assert_eq!(asked("please keep a professional tone"), ["FormalityMore"]);
        assert_eq!(
            asked("keep a professional but warm tone"),
            ["FormalityMore"]
        );
        assert_eq!(
            asked("write like a professional, not a buddy"),
            ["FormalityMore"]
        );
        // where food comes from is no citation
        assert_eq!(
            asked("I need more iron sources in my diet"),
            Vec::<String>::new()
        );
        assert_eq!(asked("I need more sources"), ["SourcesMore"]);
    }

    #[test]
    fn choices_and_the_changed_parts_of_code_are_read() {
        assert_eq!(
            asked("not give me many choices just tell me the one best is enough"),
            ["OptionsLess"]
        );
        assert_eq!(
            asked("could you show only the modified parts of the code going forward?"),
            ["WholeCodeLess"]
        );
        assert_eq!(
            asked("please give all the code complete not only part i copy paste it"),
            ["WholeCodeMore"]
        );
        assert_eq!(
            asked("I changed parts of my routine, keep that in mind"),
            Vec::<String>::new()
        );
        assert_eq!(
            asked("you always give me so many choices, just pick one"),
            ["OptionsLess"]
        );
    }
}
