//! The words of a text as the reading sees them: sentences, clause breaks, emoji and currency
//! signs (see the parent module).

/// The sentences of `text`, each a list of lowercase words, with "," standing for every clause
/// break inside a sentence (`,` `:` `(` `)` quotes and dashes between words).
pub(super) fn sentences_of(text: &str) -> Vec<Vec<String>> {
    let lower = currency_words(
        &text
            .to_lowercase()
            .replace("c++", " cpp ")
            .replace("c#", " csharp "),
    )
    .replace(['\u{2019}', '\u{2018}'], "'")
    .replace("tl;dr", "tldr")
    .replace("tl dr", "tldr");
    let mut sentences = vec![Vec::new()];
    let mut word = String::new();
    let flush = |word: &mut String, sentence: &mut Vec<String>| {
        if !word.is_empty() {
            sentence.push(std::mem::take(word));
        }
    };
    for ch in lower.chars() {
        let sentence = sentences.last_mut().expect("one sentence at least");
        match ch {
            c if c.is_alphanumeric() => word.push(c),
            '\'' => {}
            // emoji: a warning sign is a word for warnings, a prohibition sign for "no", and
            // the others one word for a run of them, settled by `emojis_named` below
            '\u{26a0}' => {
                flush(&mut word, sentence);
                sentence.push("warnings".to_string());
            }
            '\u{1f6ab}' | '\u{274c}' | '\u{26d4}' => {
                flush(&mut word, sentence);
                sentence.push("no".to_string());
            }
            '\u{fe0f}' | '\u{200d}' => {}
            c if is_pictograph(c) => {
                flush(&mut word, sentence);
                if sentence.last().is_none_or(|w| w != PICTOGRAPHS) {
                    sentence.push(PICTOGRAPHS.to_string());
                }
            }
            '.' | '!' | '?' | ';' | '\n' => {
                flush(&mut word, sentence);
                sentences.push(Vec::new());
            }
            ',' | ':' | '(' | ')' | '"' | '\u{201c}' | '\u{201d}' | '\u{2014}' | '\u{2013}' => {
                flush(&mut word, sentence);
                if sentence.last().is_some_and(|w| w != ",") {
                    sentence.push(",".to_string());
                }
            }
            _ => flush(&mut word, sentence),
        }
    }
    let last = sentences.last_mut().expect("one sentence at least");
    flush(&mut word, last);
    for sentence in &mut sentences {
        emojis_named(sentence);
    }
    sentences.retain(|s| !s.is_empty());
    sentences
}

/// Stands for a run of emoji in a sentence until [`emojis_named`] settles it.
const PICTOGRAPHS: &str = "\u{1}emoji";

/// Whether `c` is an emoji or pictograph (the Unicode blocks they live in; arrows and other
/// symbols people type as punctuation are not).
fn is_pictograph(c: char) -> bool {
    matches!(c, '\u{1f000}'..='\u{1faff}' | '\u{2600}'..='\u{27bf}' | '\u{2b00}'..='\u{2bff}')
}

/// Emoji that the sentence talks about ("stop with the 🎉🔥 stuff", "more 😂✨ pls") become the
/// word "emojis"; the others ("easier to scan 🙏", "just the number isn't helpful 🤔 show me the
/// steps") end a clause, as people use them.
fn emojis_named(sentence: &mut Vec<String>) {
    for k in 0..sentence.len() {
        if sentence[k] != PICTOGRAPHS {
            continue;
        }
        let before = k.checked_sub(1).map(|j| sentence[j].as_str());
        let after = sentence.get(k + 1).map(String::as_str);
        let named = matches!(
            before,
            Some(
                "the"
                    | "with"
                    | "more"
                    | "less"
                    | "no"
                    | "fewer"
                    | "those"
                    | "these"
                    | "any"
                    | "some"
                    | "all"
                    | "of"
                    | "few"
                    | "many"
                    | "lots"
                    | "too"
                    | "and"
                    | "your"
                    | "use"
                    | "add"
                    | "put"
                    | "stop"
            )
        ) || matches!(
            after,
            Some("stuff" | "again" | "everywhere" | "things" | "thing" | "everything" | "spam")
        );
        sentence[k] = if named { "emojis" } else { "," }.to_string();
    }
    sentence.dedup_by(|a, b| a == "," && b == ",");
    while sentence.first().is_some_and(|w| w == ",") {
        sentence.remove(0);
    }
    while sentence.last().is_some_and(|w| w == ",") {
        sentence.pop();
    }
}

/// `text` with currency signs as words ("in €" → "in eur"), except beside a number, where they
/// only tell an amount's currency ("a $300 gadget", "under £100 a night").
fn currency_words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (k, &c) in chars.iter().enumerate() {
        let word = match c {
            '\u{20ac}' => " eur ",
            '$' => " usd ",
            '\u{a3}' => " gbp ",
            _ => {
                out.push(c);
                continue;
            }
        };
        let amount = chars.get(k + 1).is_some_and(char::is_ascii_digit)
            || k.checked_sub(1).is_some_and(|j| chars[j].is_ascii_digit());
        out.push_str(if amount { " " } else { word });
    }
    out
}

/// The sentences of `text` as words (clause breaks as ","), each with whether it ends in "?".
pub(super) fn sentence_texts(text: &str) -> Vec<(Vec<String>, bool)> {
    let mut out = Vec::new();
    // "tl;dr" is one word, not two sentences
    let text = text.to_lowercase().replace("tl;dr", "tldr");
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let end = rest
            .find(['.', '!', '?', ';', '\n'])
            .map_or(rest.len(), |i| i + 1);
        let (sentence, tail) = rest.split_at(end);
        let question = sentence.ends_with('?');
        if let Some(words) = sentences_of(sentence).into_iter().next() {
            out.push((words, question));
        }
        rest = tail;
    }
    out
}
