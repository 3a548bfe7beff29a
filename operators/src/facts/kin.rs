//! People the user names beside "my": "my sister Mara", "my boss Sarah Jones" — who they are
//! to the user, as a fact of the user (`sister` = "Mara"), so a prompt knows who Mara is.

use super::{Cardinality, ExtractedFact, Word, USER_SUBJECT};

/// Who someone can be to the user, as people say it after "my".
const RELATIONS: &[&str] = &[
    "wife",
    "husband",
    "partner",
    "girlfriend",
    "boyfriend",
    "fiance",
    "fiancee",
    "mom",
    "mum",
    "mother",
    "dad",
    "father",
    "sister",
    "brother",
    "daughter",
    "son",
    "grandma",
    "grandmother",
    "grandpa",
    "grandfather",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "boss",
    "friend",
    "colleague",
    "coworker",
    "roommate",
    "flatmate",
    "neighbor",
    "neighbour",
    "therapist",
    "doctor",
    "dentist",
    "teacher",
    "coach",
];

/// Capitalised words that are no name.
const NOT_NAMES: &[&str] = &["i", "i'm", "i've", "i'd", "i'll"];

/// The fact in "my <relation> <Name>" with "my" just before `words[at]`: the relation as the
/// attribute, the name (one or two capitalised words) as the value. Many-valued: a second
/// sister is another fact, not a correction of the first. `None` when no name follows.
pub(super) fn named_relation(words: &[Word], at: usize) -> Option<ExtractedFact> {
    let relation = words.get(at)?;
    if !RELATIONS.contains(&relation.lower.as_str()) {
        return None;
    }
    let mut name: Vec<&str> = Vec::new();
    for word in words[at + 1..].iter().take(2) {
        if !is_name(word) {
            break;
        }
        name.push(&word.text);
    }
    (!name.is_empty()).then(|| ExtractedFact {
        subject: USER_SUBJECT.to_string(),
        attribute: relation.lower.clone(),
        value: name.join(" "),
        cardinality: Cardinality::Many,
    })
}

/// A capitalised word of letters (hyphens and apostrophes inside allowed), not "I".
fn is_name(word: &Word) -> bool {
    word.text.starts_with(|c: char| c.is_uppercase())
        && word
            .text
            .chars()
            .all(|c| c.is_alphabetic() || c == '-' || c == '\'')
        && !NOT_NAMES.contains(&word.lower.as_str())
}
