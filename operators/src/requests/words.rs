//! The words of a text as the reading sees them: sentences, clause breaks, emoji and currency
//! signs (see the parent module).

/// The lowercase words of one sentence ([`sentence_spans`], its clock times already read by
/// [`sentence_texts`]), with "," standing for every clause break (`,` `:` `(` `)` quotes and
/// dashes between words); the mark that ends it, and a dot inside a word ("dd.mm.yyyy"), only
/// break words.
/// With each word, whether it is inside quotes (the quotes marked by [`mark_quotes`];
/// `in_quote` carries a quote over from the sentence before: "'Certainly! Happy to help'").
fn words_of(text: &str, in_quote: &mut bool) -> Vec<(String, bool)> {
    // (already lowercase, "tl;dr" already one word, curly apostrophes straight and quotes
    // marked: `sentence_texts`)
    let lower = currency_words(&text.replace("c++", " cpp ").replace("c#", " csharp "))
        .replace("tl dr", "tldr");
    let mut sentence = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, sentence: &mut Vec<String>| {
        if !word.is_empty() {
            sentence.push(std::mem::take(word));
        }
    };
    let chars: Vec<char> = lower.chars().collect();
    let mut quoted: Vec<bool> = Vec::new();
    for (i, &ch) in chars.iter().enumerate() {
        if matches!(ch, QUOTE_OPEN | QUOTE_CLOSE | DOUBLE_OPEN | DOUBLE_CLOSE) {
            flush(&mut word, &mut sentence);
            quoted.resize(sentence.len(), *in_quote);
            *in_quote = matches!(ch, QUOTE_OPEN | DOUBLE_OPEN);
            // double quotes break clauses, as they did before quotes were marked
            if matches!(ch, DOUBLE_OPEN | DOUBLE_CLOSE) && sentence.last().is_some_and(|w| w != ",")
            {
                sentence.push(",".to_string());
                quoted.push(false);
            }
            continue;
        }
        quoted.resize(sentence.len(), *in_quote);
        let sentence = &mut sentence;
        match ch {
            // "a ## for every paragraph" names headings; " // notes" names code comments
            '#' | '/' if spaced_run(&chars, i) => {
                flush(&mut word, sentence);
                let named = if ch == '#' { "headings" } else { "comments" };
                sentence.push(named.to_string());
            }
            c if c.is_alphanumeric() => word.push(c),
            '\'' => {}
            // emoji: a warning sign is a word for warnings, a prohibition sign for "no", and
            // the others one word for a run of them, settled by `emojis_named` below
            '\u{26a0}' => {
                flush(&mut word, sentence);
                sentence.push("warnings".to_string());
            }
            // a bullet written out ("drop the • points") is a word for bullets
            '\u{2022}' => {
                flush(&mut word, sentence);
                sentence.push("bullets".to_string());
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
            ',' | ':' | '(' | ')' | '"' | '\u{201c}' | '\u{201d}' | '\u{2014}' | '\u{2013}' => {
                flush(&mut word, sentence);
                if sentence.last().is_some_and(|w| w != ",") {
                    sentence.push(",".to_string());
                }
            }
            _ => flush(&mut word, sentence),
        }
    }
    flush(&mut word, &mut sentence);
    quoted.resize(sentence.len(), *in_quote);
    let mut sentence: Vec<(String, bool)> = sentence.into_iter().zip(quoted).collect();
    emojis_named(&mut sentence);
    sentence
}

/// Private-use characters standing for an opening and a closing single quote.
const QUOTE_OPEN: char = '\u{e000}';
const QUOTE_CLOSE: char = '\u{e001}';
/// The same for double quotes ("\"Since you don't have a car...\" I do now").
const DOUBLE_OPEN: char = '\u{e002}';
const DOUBLE_CLOSE: char = '\u{e003}';

/// `text` with its quotes marked: an apostrophe that opens a word ("'it depends'") and the
/// next one within 100 characters that closes one are [`QUOTE_OPEN`] and [`QUOTE_CLOSE`]
/// (double quotes, straight or curly, [`DOUBLE_OPEN`] and [`DOUBLE_CLOSE`]);
/// apostrophes inside words ("don't", "I'm") and unpaired ones ("users' data") stay as they are.
fn mark_quotes(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let opens = |i: usize| {
        (i == 0 || chars[i - 1].is_whitespace() || "([{\"".contains(chars[i - 1]))
            && chars.get(i + 1).is_some_and(|c| !c.is_whitespace())
    };
    let closes = |i: usize| {
        i > 0
            && !chars[i - 1].is_whitespace()
            && chars
                .get(i + 1)
                .is_none_or(|c| c.is_whitespace() || ".,!?;:)]".contains(*c))
    };
    let mut out = chars.clone();
    let mut i = 0;
    while i < chars.len() {
        let (open, close_char, marks) = match chars[i] {
            '\'' if opens(i) => (true, '\'', (QUOTE_OPEN, QUOTE_CLOSE)),
            '"' if opens(i) => (true, '"', (DOUBLE_OPEN, DOUBLE_CLOSE)),
            '\u{201c}' => (true, '\u{201d}', (DOUBLE_OPEN, DOUBLE_CLOSE)),
            _ => (false, ' ', (' ', ' ')),
        };
        if open {
            let close = (i + 2..chars.len().min(i + 100))
                .find(|&j| chars[j] == close_char && (close_char == '\u{201d}' || closes(j)));
            if let Some(j) = close {
                out[i] = marks.0;
                out[j] = marks.1;
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out.into_iter().collect()
}

/// Whether a run of two or more of the character at `at` stands alone between spaces (or the
/// ends of the text): "## Overview", " // note"; not "https://".
fn spaced_run(chars: &[char], at: usize) -> bool {
    let run = chars[at..].iter().take_while(|&&c| c == chars[at]).count();
    run >= 2
        && (at == 0 || chars[at - 1].is_whitespace())
        && chars.get(at + run).is_none_or(|c| c.is_whitespace())
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
fn emojis_named(sentence: &mut Vec<(String, bool)>) {
    for k in 0..sentence.len() {
        if sentence[k].0 != PICTOGRAPHS {
            continue;
        }
        let before = k.checked_sub(1).map(|j| sentence[j].0.as_str());
        let after = sentence.get(k + 1).map(|w| w.0.as_str());
        let named = matches!(
            before,
            Some(
                "the"
                    | "a"
                    | "or"
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
                    | "want"
                    | "need"
                    | "hate"
            )
        ) || matches!(
            after,
            Some("stuff" | "again" | "everywhere" | "things" | "thing" | "everything" | "spam")
        );
        sentence[k].0 = if named { "emojis" } else { "," }.to_string();
    }
    sentence.dedup_by(|a, b| a.0 == "," && b.0 == ",");
    while sentence.first().is_some_and(|w| w.0 == ",") {
        sentence.remove(0);
    }
    while sentence.last().is_some_and(|w| w.0 == ",") {
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

/// `text` with the clock times it writes as the words for their format ("18:00 not 6pm" → "24h
/// not 12h"), where it speaks of how times are written: it writes times both ways, or names
/// times, a format or a clock. Elsewhere a time is only when something happens ("i work
/// 10pm-8am") and stays as it is. A time with am or pm is 12-hour; one with minutes and an
/// hour from 13 or written with a leading zero ("15:00", "08:30") is 24-hour; "3:00" could be
/// either and stays.
fn clock_words(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    // (start, end, "12h" | "24h") of each clock time
    let mut times: Vec<(usize, usize, &str)> = Vec::new();
    let mut k = 0;
    while k < chars.len() {
        let starts = chars[k].is_ascii_digit() && (k == 0 || !chars[k - 1].is_alphanumeric());
        if !starts {
            k += 1;
            continue;
        }
        let mut end = k;
        while end < chars.len() && chars[end].is_ascii_digit() && end - k < 3 {
            end += 1;
        }
        let hour: String = chars[k..end].iter().collect();
        let with_minutes = end - k <= 2
            && chars.get(end) == Some(&':')
            && chars.get(end + 1).is_some_and(char::is_ascii_digit)
            && chars.get(end + 2).is_some_and(char::is_ascii_digit)
            && !chars.get(end + 3).is_some_and(|c| c.is_ascii_digit());
        let mut after = if with_minutes { end + 3 } else { end };
        if chars.get(after) == Some(&' ') {
            after += 1;
        }
        let meridiem = ["am", "pm", "a.m.", "p.m."].iter().find_map(|m| {
            let m: Vec<char> = m.chars().collect();
            let ends = after + m.len();
            (chars.get(after..ends) == Some(&m[..])
                && !chars.get(ends).is_some_and(|c| c.is_alphanumeric()))
            .then_some(ends)
        });
        let h: u32 = hour.parse().unwrap_or(99);
        let format = match meridiem {
            Some(_) if end - k <= 2 && (1..=12).contains(&h) => Some("12h"),
            None if with_minutes && (h >= 13 && h <= 23 || hour.len() == 2 && h < 10) => {
                Some("24h")
            }
            _ => None,
        };
        match format {
            Some(f) => {
                let stop = meridiem.unwrap_or(if with_minutes { end + 3 } else { end });
                times.push((k, stop, f));
                k = stop;
            }
            None => k = end.max(k + 1),
        }
    }
    let both = times.iter().any(|t| t.2 == "12h") && times.iter().any(|t| t.2 == "24h");
    let about_times = ["times", "format", "clock"]
        .iter()
        .any(|w| text.split(|c: char| !c.is_alphanumeric()).any(|x| x == *w));
    if times.is_empty() || !(both || about_times) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, stop, format) in times {
        out.extend(&chars[at..start]);
        out.push_str(&format!(" {format} "));
        at = stop;
    }
    out.extend(&chars[at..]);
    out
}

/// Where the first sentence of `text` ends: its first `. ! ? ;` or line break, but not a dot
/// between letters or digits ("dd.mm.yyyy", "node.js").
fn sentence_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    text.char_indices()
        .find(|&(i, c)| match c {
            '.' => {
                let inner = i > 0
                    && bytes[i - 1].is_ascii_alphanumeric()
                    && bytes.get(i + 1).is_some_and(u8::is_ascii_alphanumeric);
                !inner
            }
            '!' | '?' | ';' | '\n' => true,
            _ => false,
        })
        .map(|(i, _)| i)
}

/// The sentences of `text`, each with the mark that ends it (see [`sentence_end`]).
pub(super) fn sentence_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let end = sentence_end(rest).map_or(rest.len(), |i| i + 1);
        let (sentence, tail) = rest.split_at(end);
        spans.push(sentence);
        rest = tail;
    }
    spans
}

/// One sentence as the reading sees it.
pub(super) struct SentenceWords {
    /// Its words, clause breaks as ",".
    pub(super) words: Vec<String>,
    /// Whether it ends in "?".
    pub(super) question: bool,
    /// For each word, whether it is inside single quotes: words the user quotes, mostly the
    /// assistant's own ("'I apologize for the confusion' x4").
    pub(super) quoted: Vec<bool>,
}

/// The sentences of `text` as words.
pub(super) fn sentence_texts(text: &str) -> Vec<SentenceWords> {
    let mut out = Vec::new();
    // "tl;dr" is one word, not two sentences
    // clock times are read in the whole text, whose other sentences may say the other format
    // (curly single quotes as apostrophes first, so that they are marked as quotes too)
    let text = text.replace(['\u{2019}', '\u{2018}'], "'");
    let text = mark_quotes(&clock_words(&text.to_lowercase().replace("tl;dr", "tldr")));
    let mut in_quote = false;
    for sentence in sentence_spans(&text) {
        let question = sentence
            .trim_end_matches([QUOTE_CLOSE, DOUBLE_CLOSE])
            .ends_with('?');
        let (words, quoted) = words_of(sentence, &mut in_quote).into_iter().unzip();
        let words: Vec<String> = words;
        if !words.is_empty() {
            out.push(SentenceWords {
                words,
                question,
                quoted,
            });
        }
    }
    out
}
