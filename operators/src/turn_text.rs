//! What the text of one conversation turn says about itself, read without a model: who speaks
//! in it ("Caroline: …") and whether it reports something the speaker did.
//!
//! Transcripts written by a client often carry the speaker as a prefix of every turn. The
//! prefix matters to recall in two opposite ways: as a key (a question about Caroline favours
//! her turns) and as noise (in a short turn "Caroline: " dominates the embedding, so every
//! turn of hers looks alike). So the store embeds the turn's body and recall keys on the
//! speaker.

/// The speaker prefix of a turn and the rest of it: `Some(("Caroline", "I went…"))` for
/// "Caroline: I went…". A prefix is one to three capitalised words (letters, `'`, `.`, `-`)
/// followed by ": " at the very start; anything else (a lower-case word, a URL's "https:",
/// four words, a colon without a space) is not one, and gives `None`.
pub fn speaker_prefix(content: &str) -> Option<(&str, &str)> {
    let (head, body) = content.split_once(": ")?;
    let words: Vec<&str> = head.split(' ').collect();
    let word_ok = |w: &str| {
        let mut chars = w.chars();
        chars.next().is_some_and(|c| c.is_uppercase())
            && chars.all(|c| c.is_alphabetic() || matches!(c, '\'' | '.' | '-'))
    };
    (words.len() <= 3 && words.iter().all(|w| word_ok(w))).then_some((head, body))
}

/// Who speaks in a user's turn and what they say: the speaker its client named (`meta.speaker`),
/// else its speaker prefix ("Caroline: …"), else "user"; and the turn without the prefix.
pub fn speaker_and_body<'a>(content: &'a str, meta_speaker: Option<&'a str>) -> (&'a str, &'a str) {
    let prefix = speaker_prefix(content);
    let speaker = meta_speaker.or(prefix.map(|(s, _)| s)).unwrap_or("user");
    (speaker, prefix.map_or(content, |(_, body)| body))
}

/// The text a turn is embedded by: its body without the speaker prefix (the whole content when
/// it has none).
pub fn embedding_text(content: &str) -> &str {
    speaker_prefix(content).map_or(content, |(_, body)| body)
}

/// Verbs of events people report about themselves ("I adopted…", "we've finally moved…").
const EVENT_VERBS: &[&str] = &[
    "got",
    "bought",
    "started",
    "finished",
    "went",
    "visited",
    "moved",
    "joined",
    "took",
    "made",
    "spent",
    "paid",
    "adopted",
    "signed",
    "tried",
    "ran",
    "attended",
    "met",
    "received",
    "completed",
    "picked",
    "booked",
    "planted",
    "painted",
    "learned",
    "decided",
];

/// Words allowed between "I"/"we" and the verb.
const EVENT_ADVERBS: &[&str] = &["have", "had", "just", "recently", "finally", "also"];

/// Whether the turn reports an event of its speaker's own: "I" or "we" (also "I've", "we've"),
/// at most one of [`EVENT_ADVERBS`], then one of [`EVENT_VERBS`] ("I just adopted a puppy",
/// "we've moved"), or the phrase "by the way". Case and curly apostrophes aside.
pub fn reports_own_event(content: &str) -> bool {
    let lower = content.to_lowercase().replace('’', "'");
    let words: Vec<&str> = lower
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .collect();
    let verb = |i: usize| words.get(i).is_some_and(|w| EVENT_VERBS.contains(w));
    let adverb = |i: usize| words.get(i).is_some_and(|w| EVENT_ADVERBS.contains(w));
    words.iter().enumerate().any(|(i, w)| match *w {
        "i" | "we" => verb(i + 1) || (adverb(i + 1) && verb(i + 2)),
        "i've" | "we've" => verb(i + 1) || (adverb(i + 1) && verb(i + 2)),
        "by" => words.get(i + 1) == Some(&"the") && words.get(i + 2) == Some(&"way"),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_speaker_prefix_is_up_to_three_capitalised_words_and_a_colon() {
        assert_eq!(
            speaker_prefix("Caroline: I went to a LGBTQ support group yesterday."),
            Some(("Caroline", "I went to a LGBTQ support group yesterday."))
        );
        assert_eq!(
            speaker_prefix("Mary-Jane O'Neil: hi: there"),
            Some(("Mary-Jane O'Neil", "hi: there"))
        );
        assert_eq!(
            speaker_prefix("Dr. Anna Schmidt: ok"),
            Some(("Dr. Anna Schmidt", "ok"))
        );
        // not prefixes
        assert_eq!(speaker_prefix("note: buy milk"), None);
        assert_eq!(speaker_prefix("see https://example.com: it"), None);
        assert_eq!(speaker_prefix("The Four Of Us: a band"), None);
        assert_eq!(speaker_prefix("Time:10am"), None);
        assert_eq!(speaker_prefix("I need help with Rust"), None);
        assert_eq!(speaker_prefix(": empty name"), None);
    }

    #[test]
    fn the_embedding_text_is_the_body() {
        assert_eq!(
            embedding_text("Melanie: Wow, that's great!"),
            "Wow, that's great!"
        );
        assert_eq!(
            embedding_text("how do I sort a vec?"),
            "how do I sort a vec?"
        );
    }

    #[test]
    fn own_events_are_first_person_event_verbs() {
        for yes in [
            "Caroline: I went to a LGBTQ support group yesterday.",
            "We've finally moved into the new flat!",
            "I just adopted a puppy named Oscar",
            "i have started pottery classes",
            "By the way, the dentist called.",
            "I’ve booked the flights",
        ] {
            assert!(reports_own_event(yes), "{yes}");
        }
        for no in [
            "She went to the park.",
            "I think painting is relaxing.",
            "Did you go there?",
            "I really just love it",
            "we have been thinking",
        ] {
            assert!(!reports_own_event(no), "{no}");
        }
    }
}
