//! The days a message names relative to when it was said ("yesterday", "last Saturday", "three
//! days ago"), and the words they are made of: one vocabulary for recall's time windows
//! (`jobs/engine/src/query/time_window.rs`), the dates a prompt writes beside a memory, and the
//! relations read at ingest.

use chrono::{DateTime, Datelike, Duration, NaiveDate, Utc, Weekday};

/// The words of `text`, lower-cased (letters, digits and apostrophes).
pub fn lower_words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect()
}

/// The count a word says ("three", "a", "12"), for "three days ago" and "the past two weeks".
pub fn number_word(word: &str) -> Option<f64> {
    Some(match word {
        "a" | "an" | "one" | "single" => 1.0,
        "two" | "couple" => 2.0,
        "three" | "few" => 3.0,
        "four" | "several" => 4.0,
        "five" => 5.0,
        "six" => 6.0,
        "seven" => 7.0,
        "eight" => 8.0,
        "nine" => 9.0,
        "ten" => 10.0,
        "eleven" => 11.0,
        "twelve" => 12.0,
        w => return w.parse().ok().filter(|n: &f64| *n > 0.0 && *n < 1000.0),
    })
}

/// The weekday a lowercase word names ("saturday").
pub fn weekday_of(word: &str) -> Option<Weekday> {
    Some(match word {
        "monday" => Weekday::Mon,
        "tuesday" => Weekday::Tue,
        "wednesday" => Weekday::Wed,
        "thursday" => Weekday::Thu,
        "friday" => Weekday::Fri,
        "saturday" => Weekday::Sat,
        "sunday" => Weekday::Sun,
        _ => return None,
    })
}

/// The latest `weekday` strictly before `day` ("last Saturday" said on Monday 8 May 2023 is
/// Saturday 6 May; said on a Saturday it is the Saturday a week before).
pub fn last_weekday(day: NaiveDate, weekday: Weekday) -> NaiveDate {
    let back = (day.weekday().num_days_from_monday() + 7 - weekday.num_days_from_monday()) % 7;
    day - Duration::days(if back == 0 { 7 } else { back as i64 })
}

/// The calendar days a message's relative expressions name, measured from when it was `said`:
/// "yesterday" / "last night", "the day before yesterday", "last Saturday" / "this past
/// Saturday" (the latest Saturday before that day), "three days ago". Each with its words, in
/// order, once each. Weeks and months ("last week") name no one day and are left out.
pub fn days_named(message: &str, said: DateTime<Utc>) -> Vec<(String, NaiveDate)> {
    let words = lower_words(message);
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let today = said.date_naive();
    let mut named: Vec<(String, NaiveDate)> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let found = match (w(i), w(i + 1)) {
            ("day", "before") if w(i + 2) == "yesterday" => Some((3, today - Duration::days(2))),
            ("yesterday", _) if w(i.wrapping_sub(1)) != "before" => {
                Some((1, today - Duration::days(1)))
            }
            ("last", "night") => Some((2, today - Duration::days(1))),
            ("last", d) => weekday_of(d).map(|d| (2, last_weekday(today, d))),
            ("this", "past") => weekday_of(w(i + 2)).map(|d| (3, last_weekday(today, d))),
            // a number of days, not "a few" or "a couple of", which name no one day
            (n, "days" | "day") if w(i + 2) == "ago" && !matches!(n, "few" | "several") => {
                number_word(n)
                    .filter(|n| n.fract() == 0.0)
                    .map(|n| (3, today - Duration::days(n as i64)))
            }
            _ => None,
        };
        match found {
            Some((len, day)) => {
                let phrase = words[i..(i + len).min(words.len())].join(" ");
                if !named.iter().any(|(p, _)| *p == phrase) {
                    named.push((phrase, day));
                }
                i += len;
            }
            None => i += 1,
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn a_message_names_days_relative_to_when_it_was_said() {
        // said on Tuesday 24 Nov 2026
        let said = Utc.with_ymd_and_hms(2026, 11, 24, 8, 0, 0).unwrap();
        let day = |d: u32| NaiveDate::from_ymd_opt(2026, 11, d).unwrap();
        let named = |text: &str| days_named(text, said);
        assert_eq!(
            named("Last saturday my brother Tom visited."),
            [("last saturday".to_string(), day(21))]
        );
        assert_eq!(
            named("I was sick yesterday, and three days ago too"),
            [
                ("yesterday".to_string(), day(23)),
                ("three days ago".to_string(), day(21))
            ]
        );
        assert_eq!(
            named("the day before yesterday, and this past Tuesday"),
            [
                ("day before yesterday".to_string(), day(22)),
                ("this past tuesday".to_string(), day(17)),
            ]
        );
        assert_eq!(
            named("we met last night"),
            [("last night".to_string(), day(23))]
        );
        for text in [
            "last week was busy",
            "a few days ago",
            "I saw the last movie",
        ] {
            assert_eq!(named(text), [], "{text:?}");
        }
    }

    #[test]
    fn last_weekday_is_strictly_before_the_day_said() {
        let monday = NaiveDate::from_ymd_opt(2023, 5, 8).unwrap();
        let day = |d| NaiveDate::from_ymd_opt(2023, 5, d).unwrap();
        assert_eq!(last_weekday(monday, Weekday::Sat), day(6));
        assert_eq!(last_weekday(monday, Weekday::Sun), day(7));
        assert_eq!(last_weekday(monday, Weekday::Mon), day(1));
        assert_eq!(last_weekday(monday, Weekday::Tue), day(2));
    }
}
