//! Passages: the sentences of a long episode, each embedded on its own at ingest.
//!
//! An episode's embedding is the mean over its first 256 tokens, so a remark made in passing
//! ("…By the way, I just got a smoker today.") is drowned by the rest of the turn, or cut off.
//! Recall also searches these passage vectors and credits the episode they belong to.

/// Passages shorter than this are joined to the next sentence (a lone "Thanks!" says little).
const MIN_PASSAGE_CHARS: usize = 40;
/// Longer sentences are cut at a word boundary near this length.
const MAX_PASSAGE_CHARS: usize = 400;

/// The passages of `content`, in order: sentences (split after `.`, `!`, `?` followed by
/// whitespace, but not after an abbreviation or an initial, and at line breaks), short ones joined to the next, long ones cut; at most
/// `max` of them. Empty when the whole content is a single passage: the episode's own vector
/// already stands for it.
pub fn passages(content: &str, max: usize) -> Vec<String> {
    let mut sentences: Vec<&str> = Vec::new();
    for line in content.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, c) in line.char_indices() {
            let ends = matches!(c, '.' | '!' | '?')
                && bytes.get(i + 1).is_some_and(|b| b.is_ascii_whitespace())
                && !(c == '.' && shortens_a_word(&line[start..i]));
            if ends {
                sentences.push(&line[start..=i]);
                start = i + 1;
            }
        }
        sentences.push(&line[start..]);
    }
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    for s in sentences
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(s);
        if current.len() >= MIN_PASSAGE_CHARS {
            out.extend(cut(&current));
            current.clear();
        }
    }
    if !current.is_empty() {
        match out.last_mut() {
            Some(last) if current.len() < MIN_PASSAGE_CHARS => {
                last.push(' ');
                last.push_str(&current);
            }
            _ => out.extend(cut(&current)),
        }
    }
    if out.len() < 2 {
        return Vec::new();
    }
    out.truncate(max);
    out
}

/// Whether the `.` after `before` ends an abbreviation ("Dr.", "e.g.") or an initial ("J. K."),
/// not a sentence: "my physician, Dr. Patel, referred me" is one passage.
fn shortens_a_word(before: &str) -> bool {
    let word = before
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '.'))
        .next()
        .unwrap_or("");
    let mut letters = word.chars();
    let initial = letters.next().is_some_and(char::is_uppercase) && letters.next().is_none();
    initial || engram_operators::english_terms::is_abbreviation(word)
}

/// `text` in pieces of at most about [`MAX_PASSAGE_CHARS`], cut at spaces.
fn cut(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while rest.len() > MAX_PASSAGE_CHARS {
        let mut at = MAX_PASSAGE_CHARS;
        while !rest.is_char_boundary(at) {
            at -= 1;
        }
        let at = rest[..at].rfind(' ').filter(|&a| a > 0).unwrap_or(at);
        out.push(rest[..at].trim().to_string());
        rest = rest[at..].trim_start();
    }
    if !rest.is_empty() {
        out.push(rest.to_string());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remark_in_passing_becomes_its_own_passage() {
        let turn = "I'm looking for some new BBQ sauce recipes to try out this summer. I've been \
                    experimenting with making my own from scratch. By the way, I just got a smoker \
                    today and I'm excited to try it.";
        let p = passages(turn, 16);
        assert_eq!(p.len(), 3, "{p:?}");
        assert_eq!(
            p[2],
            "By the way, I just got a smoker today and I'm excited to try it."
        );
    }

    #[test]
    fn a_title_or_an_initial_does_not_end_a_sentence() {
        let turn = "By the way, my primary care physician, Dr. Smith, referred me to an ENT \
                    specialist last week. I just finished a novel by J. K. Rowling on the train, \
                    e.g. on my commute home.";
        let p = passages(turn, 16);
        assert_eq!(
            p,
            [
                "By the way, my primary care physician, Dr. Smith, referred me to an ENT \
                 specialist last week.",
                "I just finished a novel by J. K. Rowling on the train, e.g. on my commute home."
            ],
        );
    }

    #[test]
    fn short_sentences_join_the_next_and_a_short_tail_joins_the_last() {
        let p = passages(
            "Thanks! That helps a lot with the garden planning for next spring. Bye.",
            16,
        );
        assert_eq!(
            p,
            Vec::<String>::new(),
            "one passage in all: the episode vector covers it"
        );
        let p = passages(
            "Thanks! That helps a lot with the garden planning for next spring.\nAlso, my sister Ana moved to Porto last week, so I will visit. Bye.",
            16,
        );
        assert_eq!(
            p,
            vec![
                "Thanks! That helps a lot with the garden planning for next spring.",
                "Also, my sister Ana moved to Porto last week, so I will visit. Bye."
            ]
        );
    }

    #[test]
    fn decimals_and_abbreviations_without_a_space_do_not_split() {
        let p = passages(
            "The price went from 3.50 to 4.25 this month, which is a lot. I paid it anyway because I really needed it for work.",
            16,
        );
        assert_eq!(p.len(), 2);
        assert!(p[0].starts_with("The price went from 3.50 to 4.25"));
    }

    #[test]
    fn long_sentences_are_cut_at_spaces_and_the_count_is_capped() {
        let long = "word ".repeat(300);
        let p = passages(&long, 16);
        assert!(p.len() >= 3);
        assert!(p
            .iter()
            .all(|s| s.len() <= MAX_PASSAGE_CHARS && !s.starts_with(' ')));
        assert_eq!(passages(&long, 2).len(), 2);
    }
}
