//! Mechanical post-processing of an answer by the user's active preferences (Yellowsys §4.3):
//! what a rule can do without a model, applied to the model's answer before the user sees and
//! engram stores it. Each transform says which preference asked for it.
//!
//! | preference (aspect, way) | transform | what it does |
//! | --- | --- | --- |
//! | emoji, less | `no_emoji` | removes emoji (pictographs, dingbats, flags, their joiners) |
//! | bullets, less | `prose_not_bullets` | list items (`- `, `* `, `• `, `1. `, `1) `) become sentences of one paragraph |
//! | bold, less | `no_bold` | `**x**` and `__x__` become `x` |
//! | headings, less | `no_headings` | `# Title` lines become `Title` |
//! | markdown, less | `plain_text` | all three above, code left alone |
//! | titles, less | `no_titles` | "sir", "madam", "ma'am" as a form of address go |
//! | units, metric | `metric_units` | "5 miles" becomes "5 miles (8 km)"; feet, inches, yards, pounds (lb), ounces, gallons, mph, °F likewise |
//! | units, imperial | `imperial_units` | "8 km" becomes "8 km (5 miles)"; metres, centimetres, kilograms, litres, km/h, °C likewise |
//!
//! Code (fenced blocks and `inline code`) is never changed. Length is not cut: an answer cut
//! by rule loses what the model put last; the length preference acts in the prompt.

use super::PreferenceUsed;
use engram_operators::requests::{requests_of, Aspect, Way};
use serde::Serialize;

/// A transform applied to an answer, and the preference that asked for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AppliedTransform {
    pub kind: &'static str,
    /// The preference's cluster id (as in `provenance.preferences`).
    pub preference: String,
}

/// The answer after the mechanical transforms the active `preferences` ask for, and those that
/// changed it (in the order applied). A transform that changes nothing is not listed. An answer
/// the transforms would leave empty ("👍" without emoji) is kept as it was, none listed: an
/// empty answer serves nobody, and cannot be stored.
pub fn transform_answer(
    answer: &str,
    preferences: &[PreferenceUsed],
) -> (String, Vec<AppliedTransform>) {
    let mut applied = Vec::new();
    let text = transform_into(answer, preferences, &mut applied);
    if text.trim().is_empty() && !answer.trim().is_empty() {
        return (answer.to_string(), Vec::new());
    }
    (text, applied)
}

/// Whether any of `preferences` asks for a transform (whatever the answer turns out to be).
pub fn transforms_asked(preferences: &[PreferenceUsed]) -> bool {
    preferences.iter().any(|p| {
        let requests = requests_of(&p.instruction).0;
        requests
            .iter()
            .any(|r| transform_for(r.aspect, r.way).is_some())
    })
}

/// `answer` after the transforms `preferences` ask for; those that changed it are added to
/// `applied` (each kind once).
pub(super) fn transform_into(
    answer: &str,
    preferences: &[PreferenceUsed],
    applied: &mut Vec<AppliedTransform>,
) -> String {
    let mut text = answer.to_string();
    for p in preferences {
        for r in requests_of(&p.instruction).0 {
            let Some((kind, apply)) = transform_for(r.aspect, r.way) else {
                continue;
            };
            let changed = apply(&text);
            if changed != text {
                text = changed;
                if !applied.iter().any(|a: &AppliedTransform| a.kind == kind) {
                    applied.push(AppliedTransform {
                        kind,
                        preference: p.cluster_id.clone(),
                    });
                }
            }
        }
    }
    text
}

type Apply = fn(&str) -> String;

/// The transform a request asks for: words and characters change outside all code (fenced
/// blocks and inline spans); lines (lists, headings) outside fenced blocks.
fn transform_for(aspect: Aspect, way: Way) -> Option<(&'static str, Apply)> {
    Some(match (aspect, way) {
        (Aspect::Emoji, Way::Less) => ("no_emoji", |t| outside_code(t, no_emoji)),
        (Aspect::Bullets, Way::Less) => ("prose_not_bullets", |t| {
            outside_fences(t, prose_not_bullets)
        }),
        (Aspect::Bold, Way::Less) => ("no_bold", |t| outside_code(t, no_bold)),
        (Aspect::Headings, Way::Less) => ("no_headings", |t| outside_fences(t, no_headings)),
        (Aspect::Markdown, Way::Less) => ("plain_text", |t| {
            outside_fences(&outside_code(t, no_bold), |b| {
                prose_not_bullets(&no_headings(b))
            })
        }),
        (Aspect::Titles, Way::Less) => ("no_titles", |t| outside_code(t, no_titles)),
        (Aspect::Units, Way::Value(0)) => ("metric_units", |t| outside_code(t, to_metric)),
        (Aspect::Units, Way::Value(1)) => ("imperial_units", |t| outside_code(t, to_imperial)),
        _ => return None,
    })
}

fn to_metric(text: &str) -> String {
    units(text, &TO_METRIC)
}

fn to_imperial(text: &str) -> String {
    units(text, &TO_IMPERIAL)
}

/// `apply` to the text between fenced code blocks; the blocks unchanged.
fn outside_fences(text: &str, apply: Apply) -> String {
    let mut out = String::new();
    for (i, block) in text.split("```").enumerate() {
        if i > 0 {
            out.push_str("```");
        }
        out.push_str(&if i % 2 == 1 {
            block.to_string()
        } else {
            apply(block)
        });
    }
    out
}

/// `apply` to the prose between fenced code blocks and inline code spans; code unchanged.
fn outside_code(text: &str, apply: Apply) -> String {
    let mut out = String::new();
    for (i, block) in text.split("```").enumerate() {
        if i > 0 {
            out.push_str("```");
        }
        if i % 2 == 1 {
            out.push_str(block);
            continue;
        }
        for (j, span) in block.split('`').enumerate() {
            if j > 0 {
                out.push('`');
            }
            out.push_str(&if j % 2 == 1 {
                span.to_string()
            } else {
                apply(span)
            });
        }
    }
    out
}

fn is_emoji(c: char) -> bool {
    matches!(c as u32,
        0x1F000..=0x1FAFF | 0x2600..=0x27BF | 0x2B00..=0x2BFF | 0xFE0F | 0x200D | 0x20E3 | 0xE0020..=0xE007F)
}

/// Emoji removed; on a line that had some, a space they leave doubled is closed and none is
/// left before punctuation (other lines keep their spacing).
fn no_emoji(text: &str) -> String {
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| {
            if !line.chars().any(is_emoji) {
                return line.to_string();
            }
            let indent = &line[..line.len() - line.trim_start_matches(' ').len()];
            let kept: String = line.chars().filter(|c| !is_emoji(*c)).collect();
            let mut out = indent.to_string();
            for word in kept.split(' ').filter(|w| !w.is_empty()) {
                if out.len() > indent.len() && !word.starts_with(['.', ',', '!', '?', ';', ':']) {
                    out.push(' ');
                }
                out.push_str(word);
            }
            // a space that ended the line stays (inline code may follow it)
            if line.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
            out
        })
        .collect();
    lines.join("\n")
}

/// The item of a list line ("- x", "* x", "• x", "1. x", "1) x"), if it is one.
fn list_item(line: &str) -> Option<&str> {
    let t = line.trim_start();
    for marker in ["- ", "* ", "• "] {
        if let Some(rest) = t.strip_prefix(marker) {
            return Some(rest.trim());
        }
    }
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && digits <= 3 {
        let rest = &t[digits..];
        if let Some(item) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return Some(item.trim());
        }
    }
    None
}

/// Each run of list lines becomes one paragraph of sentences.
fn prose_not_bullets(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut items: Vec<String> = Vec::new();
    let flush = |items: &mut Vec<String>, out: &mut Vec<String>| {
        if !items.is_empty() {
            out.push(items.join(" "));
            items.clear();
        }
    };
    for line in text.split('\n') {
        match list_item(line) {
            Some(item) if !item.is_empty() => {
                let mut sentence = item.to_string();
                if let Some(first) = sentence.chars().next() {
                    let upper: String = first.to_uppercase().collect();
                    sentence.replace_range(..first.len_utf8(), &upper);
                }
                if !sentence.ends_with(['.', '!', '?', ':']) {
                    sentence.push('.');
                }
                items.push(sentence);
            }
            _ => {
                flush(&mut items, &mut out);
                out.push(line.to_string());
            }
        }
    }
    flush(&mut items, &mut out);
    out.join("\n")
}

/// `**x**` becomes `x` where `x` is on one line and neither starts nor ends with a space; a
/// lone `**` ("2**10") stays. (`__x__` is left alone: it is far likelier a Python name.)
fn no_bold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("**") {
        let after = &rest[open + 2..];
        let bold = after.find("**").filter(|&close| {
            let inner = &after[..close];
            !inner.is_empty()
                && !inner.starts_with(char::is_whitespace)
                && !inner.ends_with(char::is_whitespace)
                && !inner.contains('\n')
        });
        match bold {
            Some(close) => {
                out.push_str(&rest[..open]);
                out.push_str(&after[..close]);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str(&rest[..open + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn no_headings(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            let hashes = line.len() - line.trim_start_matches('#').len();
            match line[hashes..].strip_prefix(' ') {
                Some(title) if (1..=6).contains(&hashes) => title.to_string(),
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// "Sir" and "madam" as forms of address: ", sir" / ", madam" / ", ma'am" before punctuation or
/// the end, and "Sir, " / "Madam, " opening a sentence.
fn no_titles(text: &str) -> String {
    let mut out = text.to_string();
    for title in ["sir", "Sir", "madam", "Madam", "ma'am", "Ma'am"] {
        for end in ['.', '!', '?', ','] {
            out = out.replace(&format!(", {title}{end}"), &end.to_string());
        }
        if out.ends_with(&format!(", {title}")) {
            out.truncate(out.len() - title.len() - 2);
        }
        for (i, _) in out
            .clone()
            .match_indices(&format!("{title}, "))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let before = out[..i].trim_end_matches(' ');
            let opens = before.is_empty() || before.ends_with(['.', '!', '?', '\n']);
            if opens && title.starts_with(char::is_uppercase) {
                out.replace_range(i..i + title.len() + 2, "");
                let rest = &out[i..];
                if let Some(c) = rest.chars().next() {
                    let upper: String = c.to_uppercase().collect();
                    out.replace_range(i..i + c.len_utf8(), &upper);
                }
            }
        }
    }
    out
}

/// A unit written after a number, and how to say it in the other system: `(words, factor,
/// offset, target)`: value · factor + offset, in `target`.
struct Conversion {
    words: &'static [&'static str],
    factor: f64,
    offset: f64,
    target: &'static str,
}

const fn conv(words: &'static [&'static str], factor: f64, target: &'static str) -> Conversion {
    Conversion {
        words,
        factor,
        offset: 0.0,
        target,
    }
}

const TO_METRIC: [Conversion; 10] = [
    conv(&["miles", "mile", "mi"], 1.609_344, "km"),
    conv(&["mph"], 1.609_344, "km/h"),
    conv(&["feet", "foot", "ft"], 0.3048, "m"),
    conv(&["inches", "inch"], 2.54, "cm"),
    conv(&["yards", "yard", "yd"], 0.9144, "m"),
    conv(&["lbs", "lb"], 0.453_592_37, "kg"),
    conv(&["ounces", "ounce", "oz"], 28.349_523, "g"),
    conv(&["gallons", "gallon", "gal"], 3.785_411_8, "L"),
    Conversion {
        words: &["°F", "degrees Fahrenheit", "F"],
        factor: 5.0 / 9.0,
        offset: -32.0 * 5.0 / 9.0,
        target: "°C",
    },
    conv(&["pounds"], 0.453_592_37, "kg"),
];

const TO_IMPERIAL: [Conversion; 9] = [
    conv(&["kilometres", "kilometers", "km"], 0.621_371, "miles"),
    conv(&["km/h", "kph"], 0.621_371, "mph"),
    conv(&["metres", "meters", "m"], 3.280_84, "ft"),
    conv(&["centimetres", "centimeters", "cm"], 0.393_701, "in"),
    conv(&["kilograms", "kilogram", "kg"], 2.204_62, "lb"),
    conv(&["grams", "gram", "g"], 0.035_274, "oz"),
    conv(
        &["litres", "liters", "litre", "liter", "L"],
        0.264_172,
        "gallons",
    ),
    Conversion {
        words: &["°C", "degrees Celsius", "C"],
        factor: 9.0 / 5.0,
        offset: 32.0,
        target: "°F",
    },
    conv(&["tonnes"], 2_204.62, "lb"),
];

/// A number the way people write it: at most one decimal, without a trailing ".0".
fn round_number(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if (r - r.round()).abs() < 1e-9 {
        format!("{}", r.round() as i64)
    } else {
        format!("{r:.1}")
    }
}

/// Each "<number> <unit>" of `table` (the unit a whole word after at most one space or hyphen,
/// "5 miles", "10-mile", or a degree sign at once, "70°F") gets the other system's value in
/// parentheses, unless a parenthesis follows already. Money is left alone: a number after a
/// currency sign ("£5"), and "pounds" followed by "sterling".
fn units(text: &str, table: &[Conversion]) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 16);
    let mut i = 0;
    while i < text.len() {
        let starts_number = bytes[i].is_ascii_digit()
            && (i == 0
                || !(bytes[i - 1].is_ascii_alphanumeric() || b"._/".contains(&bytes[i - 1])));
        if !starts_number {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        let money = text[..i].trim_end().ends_with(['$', '£', '€']);
        // "-40°F": a minus sign not inside a word ("5-10 miles" is a range)
        let before = &text[..i];
        let negative = before
            .strip_suffix('-')
            .or_else(|| before.strip_suffix('−'))
            .is_some_and(|b| !b.ends_with(char::is_alphanumeric));
        let mut j = i;
        while j < text.len() && (bytes[j].is_ascii_digit() || bytes[j] == b',' || bytes[j] == b'.')
        {
            j += 1;
        }
        let number_text = text[i..j].trim_end_matches(['.', ',']);
        let j = i + number_text.len();
        out.push_str(number_text);
        let value: Option<f64> = number_text.replace(',', "").parse().ok();
        let rest = &text[j..];
        let gap = rest.len() - rest.trim_start_matches([' ', '-']).len();
        let after = &rest[gap..];
        let found = (!money).then(|| {
            table.iter().find_map(|c| {
                c.words.iter().find_map(|w| {
                    let tail = after.strip_prefix(w)?;
                    // the unit ends the word: "50 km/h" is not "50 km", "4 F-16s" no °F
                    let ends = tail.is_empty()
                        || tail.starts_with(|ch: char| {
                            ch.is_whitespace() || ".,;:!?)\"'’".contains(ch)
                        });
                    let sterling = tail.trim_start().starts_with("sterling");
                    // one letter ("5 m", "70 F") only after exactly one space; "70°F" at once
                    let spaced = if w.starts_with('°') {
                        gap == 0
                    } else if w.len() == 1 {
                        gap == 1 && rest.starts_with(' ')
                    } else {
                        gap <= 1
                    };
                    (ends && !sterling && spaced).then_some((c, w.len()))
                })
            })
        });
        match (value, found.flatten()) {
            (Some(v), Some((c, unit_len))) => {
                let end = j + gap + unit_len;
                out.push_str(&text[j..end]);
                let already = text[end..].trim_start().starts_with('(');
                let v = if negative { -v } else { v };
                let converted = v * c.factor + c.offset;
                if !already && v.abs() <= 1e15 && converted.is_finite() {
                    out.push_str(
                        &format!(" ({} {})", round_number(converted), c.target).replace(" °", "°"),
                    );
                }
                i = end;
            }
            _ => i = j,
        }
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A user preference `instruction` of cluster `id` (the streamed transform's tests too).
    pub(crate) fn preference(id: &str, instruction: &str) -> PreferenceUsed {
        PreferenceUsed {
            cluster_id: id.into(),
            level: "user",
            instruction: instruction.into(),
            confidence: 0.9,
            relevance: 0.5,
            corrections: Vec::new(),
            stated_in: None,
            contradiction: None,
            since: None,
        }
    }

    fn kinds(applied: &[AppliedTransform]) -> Vec<(&str, &str)> {
        applied
            .iter()
            .map(|a| (a.kind, a.preference.as_str()))
            .collect()
    }

    #[test]
    fn emoji_go_and_the_spaces_they_leave_close() {
        let (text, applied) = transform_answer(
            "Great question! 🎉 Here is the plan 👍.\nEnjoy 😀",
            &[preference("c1", "Please stop using emoji.")],
        );
        assert_eq!(text, "Great question! Here is the plan.\nEnjoy");
        assert_eq!(kinds(&applied), [("no_emoji", "c1")]);
    }

    #[test]
    fn a_list_becomes_sentences_and_code_is_left_alone() {
        let answer = "Three things:\n- check the oil\n- pump the tyres!\n1. pack water\n\nDone.\n```\n- not a bullet\n```";
        let (text, applied) = transform_answer(
            answer,
            &[preference("c2", "No bullet points, write prose.")],
        );
        assert_eq!(
            text,
            "Three things:\nCheck the oil. Pump the tyres! Pack water.\n\nDone.\n```\n- not a bullet\n```"
        );
        assert_eq!(kinds(&applied), [("prose_not_bullets", "c2")]);
    }

    #[test]
    fn plain_text_drops_bold_headings_and_lists() {
        let (text, applied) = transform_answer(
            "## Plan\n**Go** early.\n* bring `**code**`",
            &[preference("c3", "No markdown, plain text only please.")],
        );
        assert_eq!(text, "Plan\nGo early.\nBring `**code**`.");
        assert_eq!(kinds(&applied), [("plain_text", "c3")]);
    }

    #[test]
    fn forms_of_address_go() {
        let (text, applied) = transform_answer(
            "Sir, the train leaves at 9. Anything else, sir? Happy to help, madam.",
            &[preference("c4", "Don't call me sir.")],
        );
        assert_eq!(text, "The train leaves at 9. Anything else? Happy to help.");
        assert_eq!(kinds(&applied), [("no_titles", "c4")]);
    }

    #[test]
    fn imperial_quantities_get_metric_values_and_money_is_left_alone() {
        let (text, applied) = transform_answer(
            "It is 5 miles away, a 10-mile loop at 70°F; carry 2 lbs, it costs £5 or 3 pounds sterling. Already 3 miles (4.8 km).",
            &[preference("c5", "I prefer metric units.")],
        );
        assert_eq!(
            text,
            "It is 5 miles (8 km) away, a 10-mile (16.1 km) loop at 70°F (21.1°C); carry 2 lbs (0.9 kg), it costs £5 or 3 pounds sterling. Already 3 miles (4.8 km)."
        );
        assert_eq!(kinds(&applied), [("metric_units", "c5")]);
    }

    #[test]
    fn metric_quantities_get_imperial_values() {
        let (text, _) = transform_answer(
            "Walk 8 km, climb 300 m, it is 20°C.",
            &[preference("c6", "Use imperial units please.")],
        );
        assert_eq!(
            text,
            "Walk 8 km (5 miles), climb 300 m (984.3 ft), it is 20°C (68°F)."
        );
    }

    #[test]
    fn hostile_and_edge_inputs_keep_their_meaning() {
        let metric = |t: &str| units(t, &TO_METRIC);
        let imperial = |t: &str| units(t, &TO_IMPERIAL);
        // compound units are not their first part; a minus sign counts; one-letter units need
        // a space; names, file names and huge numbers are left alone
        assert_eq!(
            imperial("Drive at 50 km/h."),
            "Drive at 50 km/h (31.1 mph)."
        );
        assert_eq!(imperial("wind 5 m/s"), "wind 5 m/s");
        assert_eq!(
            metric("It was -40°F, then −4°F."),
            "It was -40°F (-40°C), then −4°F (-20°C)."
        );
        assert_eq!(
            imperial("-10°C and 5-10 km"),
            "-10°C (14°F) and 5-10 km (6.2 miles)"
        );
        assert_eq!(imperial("iPhone 5C"), "iPhone 5C");
        assert_eq!(metric("4 F-16s flew 70 F"), "4 F-16s flew 70 F (21.1°C)");
        assert_eq!(
            imperial("file_5m.csv and /tmp/5g"),
            "file_5m.csv and /tmp/5g"
        );
        let huge = "99999999999999999999999 miles";
        assert_eq!(metric(huge), huge);
        // bold only in pairs around words; Python names and powers stay
        assert_eq!(no_bold("2**10 = 1024, **Go** now"), "2**10 = 1024, Go now");
        assert_eq!(
            no_bold("Python's __init__ and ** spaced **"),
            "Python's __init__ and ** spaced **"
        );
        // the space before inline code stays; "Sir, " opening a line goes
        let (text, _) = transform_answer(
            "Run 🎉 `ls` now",
            &[preference("e", "Please stop using emoji.")],
        );
        assert_eq!(text, "Run `ls` now");
        assert_eq!(no_titles("Hello.\nSir, the train"), "Hello.\nThe train");
        assert_eq!(no_titles("Hello\nSir, the train"), "Hello\nThe train");
        // multi-byte text around everything, nothing panics
        for t in [
            "é°🎉 5 miles é",
            "°F 5°",
            "ŉ 5 m ŉ",
            "5",
            "Sir, ",
            ", sir",
            "**",
            "`",
        ] {
            let all: Vec<PreferenceUsed> = [
                "No emoji.",
                "No markdown.",
                "Don't call me sir.",
                "I prefer metric units.",
            ]
            .iter()
            .map(|i| preference("x", i))
            .collect();
            let _ = transform_answer(t, &all);
        }
    }

    #[test]
    fn nothing_asked_or_nothing_to_change_lists_nothing() {
        let answer = "Plain answer, 5 km.";
        assert_eq!(
            transform_answer(answer, &[]),
            (answer.to_string(), Vec::new())
        );
        let (text, applied) =
            transform_answer(answer, &[preference("c7", "Please stop using emoji.")]);
        assert_eq!((text.as_str(), applied.len()), (answer, 0));
        let (_, applied) = transform_answer(answer, &[preference("c8", "Keep answers short.")]);
        assert!(applied.is_empty());
    }
}
