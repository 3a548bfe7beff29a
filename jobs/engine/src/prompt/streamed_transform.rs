//! An answer transformed as it streams: the mechanical transforms of [`super::transforms`]
//! applied a paragraph at a time, so a streamed answer follows the user's preferences as a
//! relayed one does.

use super::transforms::transform_into;
use super::{AppliedTransform, PreferenceUsed};

/// [`transform_answer`] of an answer that arrives in pieces, shown as it comes: each piece is
/// held until a paragraph ends (a blank line outside code, followed by more text), and the
/// paragraphs are transformed as they complete; the end is transformed without its trailing
/// whitespace. Every transform works on lines, list runs and code spans, none of which crosses
/// a blank line outside code, so what is shown, joined, equals [`transform_answer`] of the
/// whole answer without its trailing whitespace (as a relayed answer is, trimmed).
#[derive(Debug, Default)]
pub struct StreamedTransform {
    preferences: Vec<PreferenceUsed>,
    held: String,
    /// How far `held` has been read, and whether that point is in a fenced block or an inline
    /// code span: each piece is read once.
    scanned: usize,
    in_fence: bool,
    in_span: bool,
    applied: Vec<AppliedTransform>,
    /// The untransformed text of the paragraphs shown while none showed more than whitespace,
    /// to show at the end if the transforms would leave the whole answer empty.
    raw_while_blank: Option<String>,
}

impl StreamedTransform {
    pub fn new(preferences: Vec<PreferenceUsed>) -> Self {
        Self {
            preferences,
            raw_while_blank: Some(String::new()),
            ..Self::default()
        }
    }

    /// What to show now of `piece`: the transformed paragraphs it completes (often nothing).
    pub fn push(&mut self, piece: &str) -> String {
        self.held.push_str(piece);
        let Some(cut) = self.last_paragraph_end() else {
            return String::new();
        };
        let rest = self.held.split_off(cut);
        let done = std::mem::replace(&mut self.held, rest);
        self.scanned -= cut;
        let shown = transform_into(&done, &self.preferences, &mut self.applied);
        if let Some(raw) = &mut self.raw_while_blank {
            raw.push_str(&done);
        }
        if !shown.trim().is_empty() {
            self.raw_while_blank = None;
        }
        shown
    }

    /// The rest, transformed, once the answer is complete. When the transforms would leave the
    /// whole answer empty, the answer untransformed instead, none listed (as
    /// [`transform_answer`] keeps it); only whitespace was shown before.
    pub fn finish(&mut self) -> String {
        let done = std::mem::take(&mut self.held);
        let shown = transform_into(done.trim_end(), &self.preferences, &mut self.applied);
        if let Some(mut raw) = self
            .raw_while_blank
            .take()
            .filter(|_| shown.trim().is_empty())
        {
            raw.push_str(done.trim_end());
            if !raw.trim().is_empty() {
                self.applied.clear();
                return raw;
            }
        }
        shown
    }

    /// The transforms that changed something so far, in the order first applied.
    pub fn applied(&self) -> &[AppliedTransform] {
        &self.applied
    }

    /// Reads `held` on from where the last piece left off (two bytes short of its end, which
    /// may begin a fence or a paragraph's end): the end of the last blank line outside code
    /// that more text follows. A span's backticks pair up within the text between fences, as
    /// [`outside_code`] splits it.
    fn last_paragraph_end(&mut self) -> Option<usize> {
        let bytes = self.held.as_bytes();
        let mut last = None;
        let mut i = self.scanned;
        while i + 3 <= bytes.len() {
            if bytes[i..].starts_with(b"```") {
                self.in_fence = !self.in_fence;
                self.in_span = false;
                i += 3;
                continue;
            }
            if !self.in_fence && bytes[i] == b'`' {
                self.in_span = !self.in_span;
            } else if !self.in_fence
                && !self.in_span
                && bytes[i..].starts_with(b"\n\n")
                // ASCII text follows (a character beyond ASCII may be whitespace: no cut)
                && bytes[i + 2].is_ascii()
                && !bytes[i + 2].is_ascii_whitespace()
            {
                last = Some(i + 2);
            }
            i += 1;
        }
        // the byte between a cut and where reading stopped is the blank line's second newline
        self.scanned = last.map_or(i, |cut| i.max(cut));
        last
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::transforms::tests::preference;
    use crate::prompt::transforms::{transform_answer, transforms_asked};

    #[test]
    fn an_answer_transformed_as_it_streams_is_the_answer_transformed_whole() {
        let all: Vec<PreferenceUsed> = [
            "Please stop using emoji.",
            "No bullet points, full sentences.",
            "No bold text.",
            "No headings please.",
            "Don't call me sir.",
            "I prefer metric units.",
        ]
        .iter()
        .enumerate()
        .map(|(i, text)| preference(&format!("c{i}"), text))
        .collect();
        let answers = [
            "Sure, sir! 🎉 Here it is:\n- take the 5 miles trail\n- bring **water** 💧\n\n\
             # Back\nThe loop back is 3 miles.\n\nSir, enjoy 😀",
            "Use this:\n\n```\n- keep 5 miles\n\n# not a heading 🎉\n```\n\n- then `a\n\nb` 🎉\n- done",
            "one paragraph, no breaks, 10 pounds 🎉",
            "\n\n\n- a\n\n\n\n- b\n\n",
            // an odd backtick before a fence: spans pair up again after it
            "a`b\n```\nc\n```\n`\n\n🎉`",
            "Enjoy, sir\n",
            "Take 5 miles 🎉\n\n\n",
            "ends in a wide space\n\n\u{3000}",
            "press the ` key 🎉\n\nthen `x` 🎉\n\n````\n🎉\n````\n\nsir, done 🎉",
        ];
        for answer in answers {
            // as relayed: without trailing whitespace
            let (whole, applied) = transform_answer(answer.trim_end(), &all);
            // every cut into two pieces, and one character at a time
            let bounds: Vec<usize> = (0..=answer.len())
                .filter(|&i| answer.is_char_boundary(i))
                .collect();
            let mut ways: Vec<Vec<&str>> = bounds
                .iter()
                .map(|&i| vec![&answer[..i], &answer[i..]])
                .collect();
            ways.push(bounds.windows(2).map(|w| &answer[w[0]..w[1]]).collect());
            for pieces in ways {
                let mut stream = StreamedTransform::new(all.clone());
                let mut shown: String = pieces.iter().map(|p| stream.push(p)).collect();
                shown.push_str(&stream.finish());
                assert_eq!(shown, whole, "{pieces:?}");
                let kinds = |a: &[AppliedTransform]| {
                    let mut k: Vec<&str> = a.iter().map(|t| t.kind).collect();
                    k.sort_unstable();
                    k
                };
                assert_eq!(kinds(stream.applied()), kinds(&applied), "{pieces:?}");
            }
        }
        // paragraphs are shown as they complete, not held to the end
        let mut stream = StreamedTransform::new(all.clone());
        assert_eq!(stream.push("- a 🎉\n- b"), "");
        assert_eq!(stream.push("\n\nnext"), "A. B.\n\n");
        assert_eq!(
            stream.push(" one\n\n"),
            "",
            "a blank line is an end once text follows"
        );
        assert_eq!(stream.push("two"), "next one\n\n");
        assert_eq!(stream.finish(), "two");
        // an answer the transforms would empty is kept, whole or streamed, none listed
        for answer in ["👍", "🎉🎉\n\n👍 ", "\n\n👍\n\n"] {
            assert_eq!(
                transform_answer(answer, &all),
                (answer.to_string(), Vec::new())
            );
            let mut stream = StreamedTransform::new(all.clone());
            let mut shown: String = answer
                .chars()
                .map(|c| stream.push(&c.to_string()))
                .collect();
            shown.push_str(&stream.finish());
            assert_eq!(shown.trim(), answer.trim(), "{answer:?}");
            assert!(stream.applied().is_empty(), "{answer:?}");
        }
        assert!(transforms_asked(&all));
        assert!(!transforms_asked(&[preference(
            "c9",
            "Keep answers short."
        )]));
    }
}
