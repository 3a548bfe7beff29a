//! The separate things a question asks about, each to be recalled on its own: "Which did I start
//! first, 'The Crown' or 'Game of Thrones'?" needs the conversation about each show, and one
//! query for both tends to find only the one that matches best. Deterministic English patterns.

/// The parts of `question` that name separate things: quoted titles, the alternatives of a
/// trailing "A or B", and the two ends of "between A and B". Empty when the question names one
/// thing. Parts are trimmed of punctuation and lead words ("the", "my"), and are never the
/// whole question.
pub fn query_parts(question: &str) -> Vec<String> {
    let mut parts = quoted(question);
    if parts.len() < 2 {
        parts.clear();
        let body = question.trim().trim_end_matches(['?', '.', '!']);
        let lower = body.to_lowercase();
        if let Some(at) = lower.rfind(" between ") {
            let rest = &body[at + " between ".len()..];
            if let Some((a, b)) = split_once_ci(rest, " and ") {
                parts = vec![a.to_string(), b.to_string()];
            }
        }
        if parts.is_empty() {
            // the alternatives after the last comma (or after a colon): "…, A or B?"
            let tail = match body.rfind([',', ':']) {
                Some(at) => &body[at + 1..],
                None => "",
            };
            let alternatives: Vec<&str> = split_all_ci(tail, " or ");
            if alternatives.len() >= 2 {
                parts = alternatives.into_iter().map(str::to_string).collect();
            }
        }
    }
    parts
        .into_iter()
        .map(|p| clean(&p))
        .filter(|p| !p.is_empty() && p.len() < question.len())
        .collect()
}

/// Spans in matching quotes ('…', "…", ‘…’, “…”); an apostrophe inside a word ("friend's") does
/// not open or close one.
fn quoted(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let close = match chars[i] {
            '"' => '"',
            '“' => '”',
            '‘' => '’',
            '\'' => '\'',
            _ => {
                i += 1;
                continue;
            }
        };
        let opens = i == 0 || !chars[i - 1].is_alphanumeric();
        if !opens {
            i += 1;
            continue;
        }
        let end = (i + 1..chars.len())
            .find(|&j| chars[j] == close && chars.get(j + 1).is_none_or(|c| !c.is_alphanumeric()));
        match end {
            Some(j) if j > i + 1 => {
                out.push(chars[i + 1..j].iter().collect());
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

fn split_once_ci<'a>(text: &'a str, sep: &str) -> Option<(&'a str, &'a str)> {
    let at = text.to_lowercase().find(sep)?;
    Some((&text[..at], &text[at + sep.len()..]))
}

fn split_all_ci<'a>(text: &'a str, sep: &str) -> Vec<&'a str> {
    let lower = text.to_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = lower[from..].find(sep) {
        out.push(&text[from..from + at]);
        from += at + sep.len();
    }
    out.push(&text[from..]);
    out
}

fn clean(part: &str) -> String {
    let mut p = part
        .trim()
        .trim_matches(|c: char| c.is_ascii_punctuation() || c.is_whitespace());
    for lead in ["the ", "my ", "a ", "an ", "either "] {
        if p.len() > lead.len() && p[..lead.len()].eq_ignore_ascii_case(lead) {
            p = &p[lead.len()..];
        }
    }
    p.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_titles_are_parts() {
        assert_eq!(
            query_parts("Which show did I start watching first, 'The Crown' or 'Game of Thrones'?"),
            vec!["Crown", "Game of Thrones"]
        );
        assert_eq!(
            query_parts("Did I read “Dune” before \"Emma\"?"),
            vec!["Dune", "Emma"]
        );
    }

    #[test]
    fn apostrophes_do_not_open_quotes() {
        assert_eq!(
            query_parts("Which happened first, my cousin's wedding or Michael's engagement party?"),
            vec!["cousin's wedding", "Michael's engagement party"]
        );
    }

    #[test]
    fn between_a_and_b_gives_both_ends() {
        assert_eq!(
            query_parts(
                "How many days passed between the day I fixed my mountain bike and the day I upgraded my pedals?"
            ),
            vec!["day I fixed my mountain bike", "day I upgraded my pedals"]
        );
    }

    #[test]
    fn alternatives_after_the_last_comma() {
        assert_eq!(
            query_parts("Who did I meet first, Mark and Sarah or Tom?"),
            vec!["Mark and Sarah", "Tom"]
        );
    }

    #[test]
    fn a_question_about_one_thing_has_no_parts() {
        assert!(query_parts("What breed is my new puppy?").is_empty());
        assert!(query_parts("Should I take the bus or walk to work").is_empty());
        assert!(query_parts("Which book did I finish, 'Dune'?").is_empty());
    }
}
