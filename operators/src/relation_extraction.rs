//! Relations read from a turn without a model: what its speaker reports having done ("I went
//! to a LGBTQ support group last Saturday" → Caroline — went to → LGBTQ support group,
//! 2023-05-06). Runs on the ingest path, so it is rules, and it favours precision: only a first
//! person ("I", "we") followed, at most through a few adverbs, by a verb of a reported event;
//! no questions, no negations; the object up to the first clause break or time phrase, at most
//! six words. The enrichment job, when a model server is configured, finds the rest.

use crate::said_days::{days_named, number_word};
use chrono::{DateTime, Utc};

/// One relation read from a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedRelation {
    pub subject: String,
    pub relation: String,
    pub object: String,
    /// An ISO date when the sentence fixes a day relative to when it was said ("yesterday",
    /// "last Saturday", "3 days ago"), else the time words it has ("last week"), else none.
    pub time: Option<String>,
}

/// Verb phrases of reported events, as said in the past tense, longest first where one begins
/// another.
#[rustfmt::skip]
const VERBS: &[&str] = &[
    "went to see", "went to visit", "went to watch", "went to", "went on", "signed up for",
    "moved to", "moved into", "travelled to", "traveled to", "graduated from", "volunteered at",
    "visited", "joined", "adopted", "started", "finished", "bought", "attended", "met",
    "painted", "booked", "learned", "received", "completed", "planted", "won", "ran",
    "quit", "married", "hosted", "organized", "organised", "launched", "published", "built",
    "wrote", "baked", "cooked", "got married to", "got a", "got an", "got my", "got our",
];

/// Words allowed between the first person and the verb.
const ADVERBS: &[&str] = &[
    "just", "recently", "finally", "also", "actually", "have", "had", "even", "already", "once",
];

/// Words that end an object (a new clause, a time phrase, a place or company phrase).
#[rustfmt::skip]
const OBJECT_STOPS: &[&str] = &[
    "and", "but", "because", "so", "with", "which", "that", "when", "while", "since", "after",
    "before", "yesterday", "today", "tonight", "last", "this", "ago", "on", "in", "at", "for",
    "during", "where", "who", "as", "to", "from", "then", "and", "or", "it", "was", "is",
    "recently", "too", "again", "earlier", "next", "here", "there", "about", "together",
    "what", "how", "into", "like",
];

/// Units of "3 days ago", "two weeks ago": such a phrase ends an object.
const TIME_UNITS: &[&str] = &[
    "minutes", "hours", "day", "days", "week", "weeks", "month", "months", "year", "years",
];

/// Gerunds too light to name what was started on their own.
const LIGHT_GERUNDS: &[&str] = &[
    "doing", "going", "looking", "getting", "helping", "caring", "thinking", "trying", "being",
    "having", "making", "taking", "feeling", "working",
];

/// Words that make a phrasal verb of the verb before them.
const PARTICLES: &[&str] = &[
    "up", "out", "off", "over", "down", "back", "away", "around", "by", "into", "onto", "through",
];

/// Objects that name nothing on their own.
const EMPTY_OBJECTS: &[&str] = &[
    "it",
    "that",
    "this",
    "there",
    "them",
    "one",
    "some",
    "something",
    "home",
    "back",
    "up",
    "out",
    "a",
    "an",
    "the",
    "my",
    "our",
    "lot",
    "bit",
];

/// The relations `speaker` reports in `text`, said at `said`.
pub fn extract_relations(speaker: &str, text: &str, said: DateTime<Utc>) -> Vec<ExtractedRelation> {
    let mut out = Vec::new();
    for sentence in text.split_inclusive(['.', '!', '?', ';', '\n']) {
        if sentence.trim_end().ends_with('?') {
            continue; // a question reports nothing
        }
        let words = words_of(sentence);
        let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
        let time = time_of(sentence, &lower, said);
        let mut i = 0;
        while i < lower.len() {
            if let Some(r) = relation_at(speaker, &words, &lower, i, &time) {
                if !out.contains(&r) {
                    out.push(r);
                }
            }
            i += 1;
        }
    }
    out
}

/// The words of `sentence` (letters, digits, apostrophes, hyphens), punctuation between them
/// kept as a `,` word so that it ends an object.
fn words_of(sentence: &str) -> Vec<String> {
    let sentence = sentence.replace('’', "'");
    let mut words = Vec::new();
    let mut word = String::new();
    for c in sentence.chars() {
        if c.is_alphanumeric() || c == '\'' || c == '-' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if matches!(c, ',' | ':' | '(' | ')' | '"' | '!' | '.' | ';' | '—' | '–') {
            words.push(",".to_string());
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    // a dash between spaces is a clause break, not a word
    for w in words.iter_mut() {
        if w.chars().all(|c| c == '-') {
            *w = ",".to_string();
        }
    }
    words
}

/// The relation whose first person is at `i`, if the words from there say one.
fn relation_at(
    speaker: &str,
    words: &[String],
    lower: &[String],
    i: usize,
    time: &Option<String>,
) -> Option<ExtractedRelation> {
    let first = lower[i].as_str();
    if !matches!(first, "i" | "we" | "i've" | "we've") {
        return None;
    }
    let mut at = i + 1;
    while lower.get(at).is_some_and(|w| ADVERBS.contains(&w.as_str())) && at < i + 3 {
        at += 1;
    }
    // light verbs ("got", "made", "took") say too little alone: only "got a …" is kept
    let verb = VERBS.iter().find(|v| {
        let parts: Vec<&str> = v.split(' ').collect();
        parts
            .iter()
            .enumerate()
            .all(|(k, p)| lower.get(at + k).is_some_and(|w| w == p))
    })?;
    // "got a new job": the relation is "got", the article starts the object
    let (verb, object_from) = match verb.strip_prefix("got ") {
        Some("married to") | None => (*verb, at + verb.split(' ').count()),
        Some(_) => ("got", at + 1),
    };
    at = object_from;
    if lower
        .get(at)
        .is_some_and(|w| PARTICLES.contains(&w.as_str()))
    {
        return None; // "made up my mind": a phrasal verb, not an object
    }
    let mut object: Vec<String> = Vec::new();
    while let Some(w) = lower.get(at) {
        let unit_next = lower
            .get(at + 1)
            .is_some_and(|u| TIME_UNITS.contains(&u.as_str()));
        let starts_time = unit_next && number_word(w).is_some();
        if w == "," || OBJECT_STOPS.contains(&w.as_str()) || object.len() == 6 || starts_time {
            break;
        }
        object.push(if w == "my" || w == "our" {
            format!("{speaker}'s")
        } else {
            words[at].clone()
        });
        at += 1;
    }
    // a leading article says nothing about the thing
    if object
        .first()
        .is_some_and(|w| matches!(w.to_lowercase().as_str(), "a" | "an" | "the"))
    {
        object.remove(0);
    }
    // "started doing", "started looking into …": a light verb says nothing of what was started
    if object
        .first()
        .is_some_and(|w| LIGHT_GERUNDS.contains(&w.to_lowercase().as_str()))
    {
        return None;
    }
    let object = object.join(" ");
    if object.is_empty() || EMPTY_OBJECTS.contains(&object.to_lowercase().as_str()) {
        return None;
    }
    Some(ExtractedRelation {
        subject: speaker.to_string(),
        relation: verb.to_string(),
        object,
        time: time.clone(),
    })
}

/// When the sentence says the event happened: the first day it names relative to `said`
/// ([`days_named`]), else the words of a time it names that is no one day ("last week", "a
/// year ago").
fn time_of(sentence: &str, lower: &[String], said: DateTime<Utc>) -> Option<String> {
    if let Some((_, day)) = days_named(sentence, said).first() {
        return Some(day.format("%Y-%m-%d").to_string());
    }
    for (i, w) in lower.iter().enumerate() {
        let next = lower.get(i + 1).map(String::as_str);
        match (w.as_str(), next) {
            (
                "last",
                Some(
                    unit @ ("week" | "weekend" | "month" | "year" | "summer" | "winter" | "spring"
                    | "fall" | "autumn"),
                ),
            ) => return Some(format!("last {unit}")),
            ("ago", _) if i >= 2 => return Some(lower[i - 2..=i].join(" ")),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    /// Monday 8 May 2023, 13:56 UTC (LoCoMo's first session).
    fn said() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2023, 5, 8, 13, 56, 0).unwrap()
    }

    fn read(text: &str) -> Vec<(String, String, String, Option<String>)> {
        extract_relations("Caroline", text, said())
            .into_iter()
            .map(|r| (r.subject, r.relation, r.object, r.time))
            .collect()
    }

    fn rel(
        relation: &str,
        object: &str,
        time: Option<&str>,
    ) -> (String, String, String, Option<String>) {
        (
            "Caroline".into(),
            relation.into(),
            object.into(),
            time.map(str::to_string),
        )
    }

    #[test]
    fn reported_events_with_days_said_relatively() {
        assert_eq!(
            read("I went to a LGBTQ support group last Saturday, it was so powerful."),
            [rel("went to", "LGBTQ support group", Some("2023-05-06"))]
        );
        assert_eq!(
            read("Yesterday we adopted a puppy named Oscar!"),
            [rel("adopted", "puppy named Oscar", Some("2023-05-07"))]
        );
        assert_eq!(
            read("I just signed up for a pottery class 3 days ago"),
            [rel("signed up for", "pottery class", Some("2023-05-05"))]
        );
        assert_eq!(
            read("I went to see my mom in Ohio last week."),
            [rel("went to see", "Caroline's mom", Some("last week"))]
        );
        assert_eq!(
            read("We've finally moved to Austin"),
            [rel("moved to", "Austin", None)]
        );
        // curly apostrophes and two events in one message
        assert_eq!(
            read("I’ve joined a running club. Then I ran my first 5k on Sunday"),
            [
                rel("joined", "running club", None),
                rel("ran", "Caroline's first 5k", None)
            ]
        );
    }

    #[test]
    fn questions_negations_third_persons_and_empty_objects_report_nothing() {
        for text in [
            "Did you go to the concert?",
            "Have I visited Lisbon before?",
            "I never went to college.",
            "I didn't adopt the cat after all.",
            "Melanie went to the pottery workshop.",
            "She adopted a dog last week.",
            "I got it!",
            "We went to there",
            "I made up my mind",
            "I took a while to answer, sorry",
            "I ran out of time",
        ] {
            assert_eq!(read(text), [], "{text}");
        }
        assert_eq!(
            read("I got a new job at Google"),
            [rel("got", "new job", None)]
        );
        // from LoCoMo's transcripts
        assert_eq!(
            read("I ran into a group of religious conservatives on a hike"),
            []
        );
        assert_eq!(
            read("I just started going to boot camps with my fam last month."),
            []
        );
        assert_eq!(read("I started - it's tricky, but fun"), []);
        assert_eq!(
            read("I started volunteering here about a year ago after seeing a family struggle."),
            [rel("started", "volunteering", Some("a year ago"))]
        );
        assert_eq!(
            read("My colleagues and I went to a convention together last month."),
            [rel("went to", "convention", Some("last month"))]
        );
    }
}
