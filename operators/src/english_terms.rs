//! The terms of English text as BM25 and topic matching count them: runs of letters and
//! digits, lower-cased, without [`STOP_WORDS`], each stemmed (Snowball English, as Lance and
//! tantivy do). Shared by recall's BM25 over a user's turns and by the topics of corrections
//! (`correction_clusters::topic_terms`).

/// Abbreviations whose trailing `.` does not end a sentence ("Dr. Smith"), lower-case.
#[rustfmt::skip]
const ABBREVIATIONS: &[&str] = &[
    "mr", "mrs", "ms", "dr", "st", "prof", "jr", "sr", "mt", "vs", "e.g", "i.e", "etc",
];

/// Whether `word` (the letters before a `.`, any case) is one of [`ABBREVIATIONS`].
pub fn is_abbreviation(word: &str) -> bool {
    ABBREVIATIONS.iter().any(|a| a.eq_ignore_ascii_case(word))
}

/// English function words, left out of BM25 (they match everything). Sorted: looked up by
/// binary search for every word of every turn scored.
pub const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "also",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// The terms of `text`: runs of letters and digits (an apostrophe splits a word:
/// "Caroline's" is "caroline", "s"), lower-cased, stop words left out, each stemmed.
pub fn analyse(text: &str) -> Vec<String> {
    let stemmer = frostem::Stemmer::new(frostem::Algorithm::English);
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && STOP_WORDS.binary_search(w).is_err())
        .map(|w| stemmer.stem(w).to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(STOP_WORDS.len(), 129);
    }

    #[test]
    fn words_are_lower_cased_stemmed_and_stop_words_dropped() {
        assert_eq!(
            analyse("Caroline's kids were painting Sunsets, and she LOVED it!"),
            ["carolin", "kid", "paint", "sunset", "love"]
        );
        assert_eq!(analyse("what was this?"), Vec::<String>::new());
        assert_eq!(analyse("Café 2023"), ["café", "2023"]);
    }
}
