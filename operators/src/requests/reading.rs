//! Reading what a text asks for: cues matched in its clauses, and turned by the words around
//! them (see the parent module).

use super::circumstances::CIRCUMSTANCE_CUES;
use super::layout_cues::LAYOUT_CUES;
use super::lexicon::*;
use super::not_cues::NOT_CUES;
use super::sentence_tone::{sentence_tones, turned_by_quote};
use super::settling::{applies_here, described, names_spelling, settle, Reading};
use super::tone_cues::TONE_CUES;
use super::turning_words::*;
use super::value_cues::VALUE_CUES;
use super::words::sentence_texts;
use super::{Aspect, Request, RequestSet, Way};

/// How many words before a cue can turn it.
pub const FLIP_WINDOW: usize = 6;

/// What `text` asks for (module docs). Were the reading ever to fail on a text (a bug: the
/// random-text test guards against it), the text asks for nothing recognised, so it is linked
/// by its embedding alone, and the panic's message is on stderr; consolidation goes on for
/// every other correction instead of stopping with the dataflow worker.
pub fn requests_of(text: &str) -> RequestSet {
    std::panic::catch_unwind(|| read_requests(text)).unwrap_or_default()
}

/// [`requests_of`] without its guard (the tests call it, so that a panic fails them).
pub(super) fn read_requests(text: &str) -> RequestSet {
    let mut readings = Vec::new();
    let sentences = sentence_texts(text);
    let talks_of_spelling = sentences
        .iter()
        .flat_map(|s| &s.words)
        .any(|w| names_spelling(w));
    let tones = sentence_tones(&sentences);
    for (n, read) in sentences.iter().enumerate() {
        let sentence = read.words.as_slice();
        let mut clause_start = 0;
        // "it's not that I hate emojis, but …": what is conceded asks nothing
        let mut i = conceded(sentence, n + 1 < sentences.len());
        // where the last cue ended, and whether it was turned
        let mut last: Option<(usize, bool, CueKind)> = None;
        while i < sentence.len() {
            let word = sentence[i].as_str();
            if word == "," || word == "but" {
                clause_start = i + 1;
                i += 1;
                continue;
            }
            if let Some(len) = NOT_CUES
                .iter()
                .filter(|p| matches_at(&sentence, i, p))
                .map(|p| p.len())
                .max()
            {
                i += len;
                continue;
            }
            let Some(found) = CUES
                .iter()
                .chain(LAYOUT_CUES)
                .chain(TONE_CUES)
                .chain(VALUE_CUES)
                .chain(CIRCUMSTANCE_CUES)
                .filter(|c| matches_at(&sentence, i, c.words))
                .max_by_key(|c| c.words.len())
                .filter(|c| !assumes_something_named(&sentence, i, c))
                .filter(|c| applies_here(&sentence, i, c))
            else {
                i += 1;
                continue;
            };
            let end = i + found.words.len();
            // "I switched from Windows", "switched back from macOS": the value left behind
            if matches!(found.way, Way::Value(_)) && left_behind(&sentence[..i]) {
                i = end;
                continue;
            }
            // "skip the caveats and hedging", "stop asking me follow-up questions": a cue
            // joined to the one before by connectors only is turned as that one is
            let joined = |last_end: usize| {
                last_end >= clause_start
                    && sentence[last_end..i]
                        .iter()
                        .all(|w| CONNECTORS.contains(&w.as_str()))
            };
            let turned = match last {
                Some((last_end, last_turned, last_kind))
                    if last_kind != CueKind::Complaint && joined(last_end) =>
                {
                    last_turned
                }
                // "too chatty and casual": what is joined to a complaint is complained of
                Some((last_end, _, CueKind::Complaint))
                    if found.kind == CueKind::Gradable && joined(last_end) =>
                {
                    true
                }
                _ => turned(&sentence, clause_start, i, end, found),
            };
            let turned = tones[n].turn(found, turned);
            let turned = turned_by_quote(
                sentence,
                &read.quoted,
                clause_start,
                (i, end),
                found,
                turned,
            );
            last = Some((end, turned, found.kind));
            // "I no longer eat gluten-free": the allergy changed, it is not one to respect
            // "I'm not allergic to peanuts" either
            let allergy_ended = found.aspect == Aspect::Allergy
                && turned
                && (sentence
                    .iter()
                    .any(|w| matches!(w.as_str(), "longer" | "anymore"))
                    || sentence.windows(2).any(|p| {
                        matches!(p[0].as_str(), "not" | "isnt" | "arent" | "never")
                            && p[1].starts_with("allerg")
                    }));
            if let Some(request) = directed(found, turned).filter(|_| !allergy_ended) {
                // "convert the dollars to euros": the value asked for follows "to" or "in"
                let target = i > 0
                    && matches!(
                        sentence[i - 1].as_str(),
                        "to" | "in" | "into" | "as" | "use"
                    );
                readings.push(Reading {
                    request,
                    cue: found.words,
                    described: described(&sentence, i, end),
                    target,
                });
            }
            i = end;
        }
    }
    let requests = settle(readings, talks_of_spelling);
    RequestSet::from_requests(requests)
}

/// Whether the words before a value say it is the one the user left: "switched from",
/// "moved back from", "changed away from".
fn left_behind(before: &[String]) -> bool {
    match before {
        [.., change, from] if from == "from" => matches!(
            change.as_str(),
            "switched"
                | "switching"
                | "moved"
                | "moving"
                | "changed"
                | "back"
                | "away"
                | "migrated"
        ),
        _ => false,
    }
}

/// How sentences that concede something open ("it's not that I hate emojis, but …", "I'm not
/// saying paragraphs are bad, but …").
const CONCESSIONS: &[&[&str]] = &[
    &["its", "not", "that"],
    &["it", "is", "not", "that"],
    &["not", "that"],
    &["im", "not", "saying"],
    &["i", "am", "not", "saying"],
];

/// "it's not like …" concedes only before a "but": alone it is what the user says ("it's not
/// like I need a pat on the back").
const CONCESSIONS_BEFORE_BUT: &[&[&str]] = &[&["its", "not", "like"], &["it", "is", "not", "like"]];

/// Where a sentence's reading starts: past what it concedes, at the clause break that ends it
/// ("it's not that I hate emojis, but I don't need three in every paragraph" reads from "but";
/// "it's not that I don't trust your pick, I just want to see more" from the comma), or past
/// the whole sentence when it concedes without a break and another sentence follows ("It's not
/// that emphasis is bad. Half the paragraph in bold is a lot."); 0 otherwise.
fn conceded(sentence: &[String], more_follow: bool) -> usize {
    // a clause follows the opening ("not that I mind", "it's not that the prose is wrong";
    // "not that many emojis" concedes nothing)
    let concedes = |openings: &[&[&str]]| {
        openings.iter().any(|c| {
            matches_at(sentence, 0, c)
                && sentence.get(c.len()).is_some_and(|w| {
                    matches!(
                        w.as_str(),
                        "i" | "im"
                            | "ive"
                            | "id"
                            | "you"
                            | "youre"
                            | "it"
                            | "its"
                            | "the"
                            | "this"
                            | "that"
                            | "these"
                            | "my"
                            | "your"
                            | "we"
                            | "they"
                            | "there"
                            | "theres"
                    )
                })
        })
    };
    if concedes(CONCESSIONS_BEFORE_BUT) {
        return sentence.iter().position(|w| w == "but").unwrap_or(0);
    }
    if !concedes(CONCESSIONS) {
        return 0;
    }
    match sentence.iter().position(|w| w == "but" || w == ",") {
        Some(end) => end,
        None if more_follow => sentence.len(),
        None => 0,
    }
}

/// Whether the cue at `start..end` of `sentence` (its clause beginning at `clause_start`) is
/// turned around by the words around it.
fn turned(sentence: &[String], clause_start: usize, start: usize, end: usize, cue: &Cue) -> bool {
    let kind = cue.kind;
    // a complaint ("wordy", "rambling") asks for the same whether it is negated or not: "less
    // rambling", "don't ramble" and "so rambly" all ask for shorter
    if kind == CueKind::Complaint {
        return false;
    }
    // "I don't want a lecture, just the code": a cue that says "just" or "only" itself asks for
    // what it names, whatever was negated before it ("not just the code" aside)
    if cue.aspect == Aspect::CodeExplanation
        && matches!(cue.words.first(), Some(&("just" | "only")))
    {
        // "don't give me just the code", "I don't want just the code"
        return sentence[clause_start.max(start.saturating_sub(3))..start]
            .iter()
            .any(|w| matches!(w.as_str(), "not" | "dont" | "no" | "never" | "didnt"));
    }
    let from = clause_start.max(start.saturating_sub(FLIP_WINDOW));
    // "no fluff just bullet points", "I don't want a lecture only the code": what follows "just"
    // or "only" is what is asked for, whatever was negated before it ("not just" aside)
    let asked_after = (clause_start..start).rev().find(|&k| {
        matches!(sentence[k].as_str(), "just" | "only")
            && !(k > 0 && matches!(sentence[k - 1].as_str(), "not" | "dont" | "no"))
    });
    // "I don't need you to tell me every little thing that could go wrong": a negated wish
    // turns its whole clause, however far the cue is
    let mut flips = usize::from(
        asked_after.is_none() && negated_wish(&sentence[clause_start..(from + 1).min(start)]),
    );
    // "everything is a list with you": a complaint about what it names, however negated
    // ("I hate when everything is chopped into bullets")
    let clause = &sentence[clause_start..start];
    // (the cue close after it: "everything is great so keep the examples coming" asks)
    let everything_is = (0..clause.len()).any(|k| {
        let end = if clause[k] == "everythings" {
            k + 1
        } else if clause[k] == "everything" && clause.get(k + 1).is_some_and(|w| w == "is") {
            k + 2
        } else {
            return false;
        };
        clause.len() - end <= 3
    });
    let from = asked_after.map_or(from, |k| from.max(k + 1));
    let before = &sentence[from..start];
    let mut j = 0;
    while j < before.len() {
        if let Some(len) = KEEPS
            .iter()
            .filter(|k| matches_at(before, j, k))
            .map(|k| k.len())
            .max()
        {
            j += len;
            continue;
        }
        if let Some(len) = FLIPS
            .iter()
            .filter(|f| matches_at(before, j, f))
            .map(|f| f.len())
            .max()
        {
            flips += 1;
            j += len;
            continue;
        }
        let w = before[j].as_str();
        // "I'd rather see several choices than be told what to do": "than" apart from "rather";
        // "I'd prefer centimetres over inches"
        if (w == "than" && sentence[..from + j].iter().any(|w| w == "rather"))
            || (w == "over" && sentence[..from + j].iter().any(|w| w.starts_with("prefer")))
        {
            flips += 1;
            j += 1;
            continue;
        }
        // "enough bullet points", "ENOUGH sorry sorry": a clause that opens with "enough"
        let negation = (w.len() > 2 && w.ends_with("nt") && NEGATED_VERBS.contains(&w))
            || (w == "enough" && from + j == clause_start);
        // an intensifier qualifies the word right after it ("too long", "way too many")
        let intensified = kind != CueKind::Complaint
            && j + 2 >= before.len()
            && (INTENSIFIERS.contains(&w)
                || (matches!(w, "many" | "much") && kind == CueKind::Thing))
            && !(w == "so" && j > 0 && before[j - 1] == "not")
            // "so" qualifies after a verb of being ("it's so long", "why so formal"); elsewhere
            // it joins ("I'm studying for an exam so expand on everything")
            && !(w == "so"
                && !(j > 0
                    && matches!(
                        before[j - 1].as_str(),
                        "is" | "are" | "was" | "were" | "be" | "its" | "why" | "always" | "just"
                            | "really" | "sound" | "sounds" | "feel" | "feels" | "look" | "looks"
                    )));
        if intensified && !(kind == CueKind::Thing && !matches!(w, "many" | "much")) {
            // "don't be so concise", "not too formal", "stop using so many emojis": what is
            // negated is the excess, and that asks for less all the same
            flips = 1;
        } else if negation {
            flips += 1;
        }
        j += 1;
    }
    let clause_end = end + clause_length(&sentence[end..]);
    // "emojis are annoying, remove them" complains once, not twice; "keep the jokes out of it"
    let after = &sentence[end..clause_end];
    // "every emoji, it's painful": the next clause, when it opens with what it points back to
    let next_clause = sentence.get(clause_end + 1..).unwrap_or(&[]);
    let pointed_back = next_clause.first().is_some_and(|w| {
        matches!(
            w.as_str(),
            "its" | "it" | "theyre" | "they" | "thats" | "which" | "this"
        )
    });
    let complained_next = pointed_back
        && next_clause[..clause_length(next_clause)]
            .iter()
            .any(|w| COMPLAINTS.contains(&w.as_str()));
    // ("the puns are getting old"; "my iPhone is five years old" complains of nothing)
    let complained = after.iter().any(|w| COMPLAINTS.contains(&w.as_str()))
        || after.windows(2).any(|p| p[0] == "getting" && p[1] == "old")
        // "keep the jargon to a minimum"; "miles mean nothing to me"
        || after.windows(3).any(|p| p == ["to", "a", "minimum"])
        || after
            .windows(2)
            .any(|p| matches!(p[0].as_str(), "mean" | "means") && p[1] == "nothing")
        || disapproved(after)
        || (sentence[clause_start..start]
            .iter()
            .any(|w| matches!(w.as_str(), "keep" | "leave" | "keeping" | "leaving"))
            && sentence[end..clause_end.min(end + 3)]
                .iter()
                .any(|w| w == "out"));
    // "too many comments, strip them": a removal later in the sentence turns what it names,
    // once, however it was turned before; "I'm remote now, so stop planning my day around the
    // train": what is removed later is not the circumstance
    // ("american spellings, so pls dont": a bare "don't" closing the sentence refuses it too)
    let refused_later = {
        let rest: Vec<&str> = sentence[clause_end..]
            .iter()
            .map(String::as_str)
            .filter(|w| !matches!(*w, "," | "so" | "pls" | "plz" | "please" | "just" | "then"))
            .collect();
        rest == ["dont"]
    };
    let removed_later = !cue.aspect.is_circumstance()
        && (refused_later
            || sentence[clause_end..]
                .iter()
                .any(|w| REMOVALS.contains(&w.as_str())));
    // "my vegetarian phase is over", "my remote days are over": a circumstance that ended
    // ("my cat is over 15" is no end: "over" closes the clause, chat fillers aside)
    let closing: Vec<&str> = after
        .iter()
        .map(String::as_str)
        .filter(|w| !matches!(*w, "lol" | "now" | "tbh" | "haha" | "finally"))
        .collect();
    let ended = cue.aspect.is_circumstance()
        && ((closing.len() >= 2
            && matches!(closing[closing.len() - 1], "over" | "done")
            && matches!(closing[closing.len() - 2], "is" | "are" | "thats"))
            || (cue.aspect == Aspect::Pets
                && closing
                    .iter()
                    .any(|w| matches!(*w, "died" | "passed" | "rehomed" | "gone")))
            || (cue.aspect == Aspect::Injury && healed(&sentence[start..])));
    // a complaint after the cue, in its clause or the next, turns it once, however it was
    // turned before ("no emojis pls its lowkey cringe", "lose the emoji, it's unprofessional");
    // a negation inside the cue is not turned back by the next clause ("no tl;dr, it's
    // redundant")
    let negated_cue = matches!(cue.words.first(), Some(&("no" | "dont" | "avoid")));
    // "this snippet is impossible to follow, not a single comment in it": what is missing
    if describes_absence(sentence, clause_start, start) {
        return false;
    }
    // a complaint that describes the cue's thing ("skipping the examples is annoying") or
    // the user's own view of it ("I don't find the emojis annoying") turns as a negation does
    let described_complaint = after
        .first()
        .is_some_and(|w| matches!(w.as_str(), "is" | "are" | "was" | "were"))
        || sentence[clause_start..start]
            .windows(2)
            .any(|p| p[0] == "dont" && matches!(p[1].as_str(), "find" | "think"));
    if complained && described_complaint {
        return (flips + 1) % 2 == 1 || removed_later || everything_is;
    }
    flips % 2 == 1
        || complained
        || ended
        || removed_later
        || everything_is
        || (complained_next && !negated_cue)
}

/// Whether the words from an injury's cue to the end of its clause, or of the next, say it has
/// healed ("the knee is fully recovered", "my knee's been fine for weeks", "good again"; not
/// "I'm recovering from an injury", "it hasn't healed yet", "no running until it has healed").
fn healed(rest: &[String]) -> bool {
    let first = clause_length(rest);
    let end =
        (first + 1 + clause_length(rest.get(first + 1..).unwrap_or_default())).min(rest.len());
    let rest = &rest[..end];
    let unsure = |k: usize| {
        rest[k.saturating_sub(4)..k].iter().any(|w| {
            negates(w)
                || matches!(
                    w.as_str(),
                    "yet" | "until" | "till" | "once" | "when" | "will" | "ill" | "want" | "be"
                )
        })
    };
    (0..rest.len()).any(|k| {
        let word = matches!(rest[k].as_str(), "healed" | "recovered");
        let pair = k >= 1
            && matches!(
                (rest[k - 1].as_str(), rest[k].as_str()),
                ("been" | "feels", "fine") | ("fine" | "good" | "better" | "ok", "again")
            );
        (word && !unsure(k)) || (pair && !unsure(k - 1))
    })
}

/// How many of `words` come before the clause break ("," or "but") that ends their clause.
fn clause_length(words: &[String]) -> usize {
    words
        .iter()
        .position(|w| w == "," || w == "but")
        .unwrap_or(words.len())
}

/// Whether `words` (a clause up to a cue's window and its first word) hold a negated wish: "don't need", "don't
/// want", "no need", "do not need", … ("I don't need you to tell me …").
fn negated_wish(words: &[String]) -> bool {
    words.windows(2).any(|pair| {
        matches!(pair[1].as_str(), "need" | "want")
            && matches!(pair[0].as_str(), "dont" | "not" | "no" | "doesnt" | "didnt")
    })
}

/// Whether `after` (the words after a cue, to the end of its clause) disapproves of what the cue
/// names: a negation followed within two words by an [`APPROVALS`] word ("the jokes aren't
/// landing", "sources are not really needed"), or "too much" / "too many" ending the clause
/// ("the emojis are too much").
fn disapproved(after: &[String]) -> bool {
    let negation = |w: &str| NEGATED_VERBS.contains(&w) || matches!(w, "not" | "never");
    let approval_after = |k: usize| {
        after[k + 1..after.len().min(k + 3)]
            .iter()
            .any(|w| APPROVALS.contains(&w.as_str()))
    };
    let too_much = after.len() >= 2
        && after[after.len() - 2] == "too"
        && matches!(after[after.len() - 1].as_str(), "much" | "many");
    too_much || (0..after.len()).any(|k| negation(&after[k]) && approval_after(k))
}

/// Whether the cue at `at` is "assume" followed by what to assume ("assume Linear", "assume I
/// go by train", "stop assuming I'm a doctor"): a fact to remember, not a request about asking
/// ("just assume and go", "don't assume, ask").
fn assumes_something_named(sentence: &[String], at: usize, cue: &Cue) -> bool {
    cue.words == ["assum*"]
        && !sentence[at].starts_with("assumption")
        && sentence.get(at + 1).is_some_and(|next| {
            !matches!(
                next.as_str(),
                "," | "but"
                    | "and"
                    | "then"
                    | "things"
                    | "stuff"
                    | "anything"
                    | "something"
                    | "whatever"
                    | "what"
                    | "if"
                    | "more"
                    | "less"
                    | "so"
                    | "too"
                    | "everything"
            )
        })
}

/// The request a cue makes, turned or not. A turned value of a many-valued aspect asks for
/// nothing; of a two-valued one, for the other value.
fn directed(cue: &Cue, turned: bool) -> Option<Request> {
    let way = match (cue.way, turned) {
        (way, false) => way,
        (Way::Less, true) => Way::More,
        (Way::More, true) => Way::Less,
        (Way::Value(v), true) => match cue.aspect {
            Aspect::Units
            | Aspect::Spelling
            | Aspect::TimeFormat
            | Aspect::Work
            | Aspect::Smoking
            | Aspect::Car
            | Aspect::Shift
            | Aspect::Phone
            | Aspect::Alcohol => Way::Value(1 - v.min(1)),
            // "never anything with peanuts": what is kept out is what the user is allergic to
            // (a change, "I no longer eat gluten-free", is left out before)
            Aspect::Allergy => Way::Value(v),
            // "not vegetarian anymore" eats meat; "stop suggesting meat" eats none
            Aspect::Diet if v <= 2 => Way::Value(6),
            Aspect::Diet if v == 6 => Way::Value(0),
            _ => return None,
        },
    };
    Some(Request {
        aspect: cue.aspect,
        way,
    })
}

/// Whether `pattern` matches `words` at `at` (a pattern word ending in `*` matches a word it
/// begins; a lone `*` matches any word).
pub(super) fn matches_at(words: &[String], at: usize, pattern: &[&str]) -> bool {
    at + pattern.len() <= words.len()
        && pattern
            .iter()
            .zip(&words[at..])
            .all(|(p, w)| match p.strip_suffix('*') {
                Some(prefix) => w.starts_with(prefix) && !matches!(w.as_str(), "," | "but"),
                None => p == w,
            })
}
