//! Question words a user misspelled, read as the word of their memory they most likely meant.
//!
//! People type questions fast: "What fields would Caroline pursue in her educaton?", "the pride
//! fesetival", "the shelter funraiser". A misspelled word matches no turn, so the full-text score
//! loses the one word that named the subject. A word is taken as misspelled only when it is
//! neither a word of the user's turns nor a whole word of the embedding model's vocabulary (a
//! word English text uses often enough to have its own token): then the word one edit away
//! (a letter deleted, inserted, replaced, or two neighbours swapped) that the user's turns use
//! most stands for it. A real word the user never said ("house" when they said "horse") is
//! never changed, nor a short one (under five letters, where one edit reaches too many words),
//! nor a number; a rare name is a word like any other ("Carolin" is read as the user's
//! "Caroline"). The work is bounded: at most [`MAX_RESPELLED`] words of at most
//! [`MAX_LETTERS`] letters, about 1,350 candidate words each. For a user too large to score
//! whole (`recall.scored_turns`), "the user's turns" are the candidates the searches found.

use super::bm25::analyse;
use std::collections::HashMap;

/// Words shorter than this are left as typed.
const MIN_LETTERS: usize = 5;
/// Longer words are left as typed (no English word a person types is longer, and the
/// candidates grow with the length).
const MAX_LETTERS: usize = 24;
/// Question words respelled at most (the first ones, in alphabetical order).
const MAX_RESPELLED: usize = 8;

/// What a question's misspelled word was read as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Respelling {
    /// The word as the question has it, lower-cased.
    pub asked: String,
    /// The analysed term of the user's turns it was read as ([`analyse`]).
    pub meant: String,
}

/// The question's misspelled words and what each was read as. `terms` are the analysed words
/// of every turn of the user ([`analyse`]); `known_word` says whether a lower-case word is a
/// word of the language (the embedding model's vocabulary). A word is misspelled when it has [`MIN_LETTERS`] to
/// [`MAX_LETTERS`] ASCII letters and nothing else, is not `known_word`, and its analysed form
/// is not among `terms`; it is read as the term, among the analysed forms of the words one
/// edit away (optimal string alignment distance 1), that occurs most often in `terms` (ties:
/// the smaller term); with none, it is left out. A stop word is never respelled. The distinct
/// misspelled words are taken in alphabetical order, at most [`MAX_RESPELLED`] of them, and
/// the answer is in that order. Without `terms`, nothing is respelled.
pub fn respell<D: AsRef<[String]>>(
    question: &str,
    terms: &[D],
    known_word: impl Fn(&str) -> bool,
) -> Vec<Respelling> {
    let asked: Vec<String> = {
        let mut words: Vec<String> = question
            .to_lowercase()
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| (MIN_LETTERS..=MAX_LETTERS).contains(&w.len()))
            .filter(|w| w.bytes().all(|b| b.is_ascii_lowercase()))
            .filter(|w| !known_word(w))
            .map(str::to_string)
            .collect();
        words.sort_unstable();
        words.dedup();
        words.truncate(MAX_RESPELLED);
        words
    };
    if asked.is_empty() || terms.is_empty() {
        return Vec::new();
    }
    let mut used: HashMap<&str, usize> = HashMap::new();
    for turn in terms {
        for term in turn.as_ref() {
            *used.entry(term.as_str()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for word in asked {
        let analysed = analyse(&word);
        if analysed.is_empty() || analysed.iter().any(|t| used.contains_key(t.as_str())) {
            continue;
        }
        let best = one_edit_away(&word)
            .into_iter()
            .filter_map(|edit| {
                let term = analyse(&edit).into_iter().next()?;
                let n = *used.get(term.as_str())?;
                Some((n, term))
            })
            .max_by(|(n, a), (m, b)| n.cmp(m).then(b.cmp(a)));
        if let Some((_, meant)) = best {
            out.push(Respelling { asked: word, meant });
        }
    }
    out
}

/// Every distinct ASCII lower-case word one edit from `word` (a letter deleted, inserted or
/// replaced, or two neighbouring letters swapped), `word` itself excluded.
fn one_edit_away(word: &str) -> Vec<String> {
    let letters: Vec<u8> = word.bytes().collect();
    let mut out: Vec<Vec<u8>> = Vec::with_capacity(54 * letters.len() + 26);
    for i in 0..letters.len() {
        let mut deleted = letters.clone();
        deleted.remove(i);
        out.push(deleted);
        if i + 1 < letters.len() {
            let mut swapped = letters.clone();
            swapped.swap(i, i + 1);
            out.push(swapped);
        }
        for c in b'a'..=b'z' {
            let mut replaced = letters.clone();
            replaced[i] = c;
            out.push(replaced);
        }
    }
    for i in 0..=letters.len() {
        for c in b'a'..=b'z' {
            let mut inserted = letters.clone();
            inserted.insert(i, c);
            out.push(inserted);
        }
    }
    let mut words: Vec<String> = out
        .into_iter()
        .filter(|w| w.as_slice() != letters.as_slice())
        .map(|w| String::from_utf8(w).expect("ASCII letters"))
        .collect();
    words.sort_unstable();
    words.dedup();
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turns(texts: &[&str]) -> Vec<Vec<String>> {
        texts.iter().map(|t| analyse(t)).collect()
    }

    /// A small dictionary standing in for the model's vocabulary.
    fn known(word: &str) -> bool {
        [
            "fields",
            "would",
            "caroline",
            "likely",
            "pursue",
            "education",
            "house",
            "where",
            "festival",
            "pride",
            "melanie",
        ]
        .contains(&word)
    }

    #[test]
    fn a_misspelled_word_is_read_as_the_users_word_one_edit_away() {
        let memory = turns(&[
            "Caroline: Gonna continue my education and check out career options.",
            "Melanie: We went to the pride festival last weekend!",
            "Caroline: The fundraiser for the shelter raised $2,000.",
        ]);
        let got = respell(
            "What fields would Caroline pursue in her educaton? And the fesetival, the funraiser?",
            &memory,
            known,
        );
        let read: Vec<(&str, &str)> = got
            .iter()
            .map(|r| (r.asked.as_str(), r.meant.as_str()))
            .collect();
        // deletion, insertion and insertion; the meant terms are the turns' analysed words
        assert_eq!(
            read,
            [
                ("educaton", "educ"),
                ("fesetival", "festiv"),
                ("funraiser", "fundrais")
            ]
        );
    }

    #[test]
    fn a_swap_of_neighbouring_letters_is_one_edit() {
        let memory = turns(&["Melanie: my daughter loves painting"]);
        let got = respell("what does her duaghter love?", &memory, known);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].meant, "daughter");
    }

    #[test]
    fn real_words_short_words_names_and_used_words_are_left_alone() {
        let memory = turns(&["I ride my horse every day", "Kyoto in 2023, with Jo"]);
        // "house" is a known word: never turned into "horse"
        assert!(respell("where is my house", &memory, known).is_empty());
        // "kyot" is too short; "2024" is not letters; "rides" is the user's ("ride")
        assert!(respell("kyot 2024 rides", &memory, |_| false).is_empty());
        // a word with nothing one edit away in the memory
        assert!(respell("vivaldi", &memory, |_| false).is_empty());
    }

    #[test]
    fn the_most_used_word_wins_and_ties_take_the_smaller_term() {
        let memory = turns(&[
            "the lake was calm",
            "cakes for the party",
            "more cakes",
            "lake again",
        ]);
        // "caeks": "cakes" is one swap away
        assert_eq!(respell("caeks", &memory, |_| false)[0].meant, "cake");
        // "lcake" is one edit from "cake" and from "lake", each used twice: the smaller wins
        assert_eq!(respell("lcake", &memory, |_| false)[0].meant, "cake");
        let memory = turns(&["the lake was calm", "lake again", "lake once more", "cakes"]);
        let got = respell("lcake", &memory, |_| false);
        assert_eq!(got[0].meant, "lake", "used three times against once");
    }

    #[test]
    fn long_words_many_words_and_an_empty_memory_are_bounded() {
        let memory = turns(&["we planned the fundraiser and the festival"]);
        // 25 letters: left as typed, though one edit from nothing the user said anyway
        let long = format!("fundraiser{}", "x".repeat(15));
        assert!(respell(&long, &memory, |_| false).is_empty());
        // a hostile question of many misspellings: only the first eight (alphabetically)
        let many: Vec<String> = (0..2000)
            .map(|i| format!("funraiser{}", char::from(b'a' + (i % 26) as u8)))
            .chain(["aaaa funraiser fesetival".to_string()])
            .collect();
        let got = respell(&many.join(" "), &memory, |_| false);
        assert!(got.len() <= MAX_RESPELLED);
        assert_eq!(got[0].asked, "fesetival");
        assert_eq!(got[0].meant, "festiv");
        // a user without turns: nothing to read the words as
        let none: Vec<Vec<String>> = Vec::new();
        assert!(respell("funraiser", &none, |_| false).is_empty());
    }

    #[test]
    fn the_edits_are_every_single_edit_once() {
        let edits = one_edit_away("ab");
        // deletions "a" "b"; swap "ba"; replacements 2·25; insertions 3·26, less duplicates
        for w in ["a", "b", "ba", "bb", "aa", "zb", "az", "cab", "acb", "abc"] {
            assert!(edits.contains(&w.to_string()), "{w}");
        }
        assert!(!edits.contains(&"ab".to_string()));
        let mut sorted = edits.clone();
        sorted.dedup();
        assert_eq!(sorted.len(), edits.len());
        // |{deletions}| 2 + swap 1 + replacements 50 + insertions 78 − duplicates: "aab"
        // (insert a at 0 or 1), "abb" (at 1 or 2) → 129
        assert_eq!(edits.len(), 129);
    }
}
