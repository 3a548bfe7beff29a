//! When a question is about: the time window its relative expressions ("two weeks ago", "last
//! month", "in March", "in the past three months", "last Saturday") point at, measured from the
//! moment the question is asked. Deterministic English patterns, no model.
//!
//! The window is where the *conversation* that mentions the event is expected to be. People
//! tell of an event on the day or some days after it, so every window is widened by
//! [`TELLING_SLACK_DAYS`] after its end and by a tolerance that grows with the distance named
//! ("ten days ago" is less exact than "yesterday").

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use engram_operators::said_days::{
    last_weekday, lower_words as question_words, number_word as number, weekday_of,
};
use serde::Serialize;

/// Days a conversation may come after the event it tells of.
pub const TELLING_SLACK_DAYS: i64 = 7;

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TimeWindow {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    /// The words of the question the window was read from.
    pub phrase: String,
}

impl TimeWindow {
    /// 1 inside the window, falling off exponentially with the distance outside it, in units of
    /// the window's own width (at least a week): near misses still count a little.
    pub fn proximity(&self, t: DateTime<Utc>) -> f64 {
        let width = (self.end - self.start).num_seconds().max(7 * 86_400) as f64;
        let outside = if t < self.start {
            (self.start - t).num_seconds()
        } else if t > self.end {
            (t - self.end).num_seconds()
        } else {
            return 1.0;
        };
        (-(outside as f64) / width).exp()
    }
}

fn unit_days(word: &str) -> Option<f64> {
    Some(match word.trim_end_matches('s') {
        "day" | "night" => 1.0,
        "week" | "weekend" => 7.0,
        "month" => 30.44,
        "year" => 365.25,
        _ => return None,
    })
}

/// The first calendar day the question names, as "8 May, 2023", "8 May 2023" or "May 8, 2023"
/// (month names in full, any case).
pub fn named_day(question: &str) -> Option<NaiveDate> {
    let words = question_words(question);
    let day = |w: &str| {
        w.parse::<u32>()
            .ok()
            .filter(|d| (1..=31).contains(d) && w.len() <= 2)
    };
    let year = |w: &str| w.parse::<i32>().ok().filter(|_| w.len() == 4);
    words.windows(3).find_map(|w| {
        let (d, m) = match (day(&w[0]), month(&w[1]), month(&w[0]), day(&w[1])) {
            (Some(d), Some(m), _, _) => (d, m),
            (_, _, Some(m), Some(d)) => (d, m),
            _ => return None,
        };
        NaiveDate::from_ymd_opt(year(&w[2])?, m, d)
    })
}

fn month(word: &str) -> Option<u32> {
    const NAMES: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    NAMES.iter().position(|m| *m == word).map(|i| i as u32 + 1)
}

/// The first moment of day `d`, in UTC.
pub fn midnight(d: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).expect("midnight exists"))
}

fn days(d: f64) -> Duration {
    Duration::seconds((d * 86_400.0) as i64)
}

/// The window the question's first relative time expression points at, from `asked`.
pub fn time_window(question: &str, asked: DateTime<Utc>) -> Option<TimeWindow> {
    let words = question_words(question);
    let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
    let slack = days(TELLING_SLACK_DAYS as f64);
    let window = |start: DateTime<Utc>, end: DateTime<Utc>, from: usize, to: usize| {
        Some(TimeWindow {
            start,
            end: (end + slack).min(asked),
            phrase: words[from..to.min(words.len())].join(" "),
        })
    };
    let today = asked.date_naive();
    for i in 0..words.len() {
        // "<n> <unit>s ago", "a couple of days ago", "a few weeks ago"
        if w(i) == "ago" && i >= 2 {
            let Some(unit) = unit_days(w(i - 1)) else {
                continue;
            };
            let mut j = i - 2;
            if w(j) == "of" && j >= 1 {
                j -= 1;
            }
            if matches!(w(j), "many" | "much") {
                continue; // "how many weeks ago": the distance is what is asked
            }
            let n = number(w(j)).unwrap_or(1.0);
            let from = if j >= 1 && matches!(w(j - 1), "a" | "an") {
                j - 1
            } else {
                j
            };
            let back = n * unit;
            // the further back, the less exact: a third of the distance, at least a day
            let tolerance = (back / 3.0).max(1.0);
            let at = asked - days(back);
            return window(at - days(tolerance), at + days(tolerance), from, i + 1);
        }
        match (w(i), w(i + 1)) {
            ("yesterday", _) | ("last", "night") => {
                return window(
                    asked - days(2.0),
                    asked,
                    i,
                    i + 1 + (w(i) == "last") as usize,
                )
            }
            ("today", _) | ("this", "morning") | ("tonight", _) => {
                return window(asked - days(1.0), asked, i, i + 1)
            }
            ("last" | "this" | "past", "week" | "weekend") => {
                let back = if w(i) == "last" && w(i + 1) == "week" {
                    14.0
                } else {
                    9.0
                };
                return window(asked - days(back), asked, i, i + 2);
            }
            ("last", "month") => {
                let first_of_this = today.with_day(1).expect("day 1 exists");
                let first_of_last = (first_of_this - Duration::days(1))
                    .with_day(1)
                    .expect("day 1 exists");
                return window(midnight(first_of_last), asked, i, i + 2);
            }
            ("this", "month") => {
                let first = today.with_day(1).expect("day 1 exists");
                return window(midnight(first), asked, i, i + 2);
            }
            ("last", "year") => {
                let first = NaiveDate::from_ymd_opt(today.year() - 1, 1, 1)?;
                return window(midnight(first), asked, i, i + 2);
            }
            ("this", "year") | ("start", "of") if w(i) == "this" || w(i + 3) == "year" => {
                let first = NaiveDate::from_ymd_opt(today.year(), 1, 1)?;
                return window(midnight(first), asked, i, i + 2);
            }
            ("past" | "last", _) => {
                // "in the past three months", "over the last 2 weeks"
                if let (Some(n), Some(unit)) = (number(w(i + 1)), unit_days(w(i + 2))) {
                    return window(asked - days(n * unit), asked, i, i + 3);
                }
                if let Some(day) = weekday_of(w(i + 1)) {
                    return Some(last_weekday(asked.date_naive(), day)).and_then(|d| {
                        window(midnight(d) - days(1.0), midnight(d) + days(2.0), i, i + 2)
                    });
                }
            }
            _ => {}
        }
        // "in March", "early April", "on June 3rd": that month, in the last twelve months
        if let Some(m) = month(w(i)) {
            let may_is_verb = m == 5
                && !matches!(
                    w(i.wrapping_sub(1)),
                    "in" | "of" | "early" | "late" | "mid" | "since" | "during" | "on"
                );
            if may_is_verb {
                continue;
            }
            let year = if m > today.month() {
                today.year() - 1
            } else {
                today.year()
            };
            let first = NaiveDate::from_ymd_opt(year, m, 1)?;
            let next = if m == 12 {
                NaiveDate::from_ymd_opt(year + 1, 1, 1)?
            } else {
                NaiveDate::from_ymd_opt(year, m + 1, 1)?
            };
            return window(midnight(first), midnight(next), i, i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_calendar_day_is_read_in_either_order() {
        let day = |y, m, d| NaiveDate::from_ymd_opt(y, m, d);
        assert_eq!(
            named_day("What did Caroline do on 8 May, 2023?"),
            day(2023, 5, 8)
        );
        assert_eq!(named_day("what happened on May 25 2023"), day(2023, 5, 25));
        assert_eq!(named_day("When did Melanie paint a sunrise?"), None);
        assert_eq!(named_day("on 31 February, 2023"), None);
        assert_eq!(named_day("in May 2023"), None);
    }

    fn at(s: &str) -> DateTime<Utc> {
        s.parse().unwrap()
    }

    fn window_of(q: &str) -> TimeWindow {
        time_window(q, at("2023-05-24T10:00:00Z")).unwrap_or_else(|| panic!("no window in {q:?}"))
    }

    #[test]
    fn n_units_ago_is_centred_on_the_distance_with_a_tolerance() {
        let w = window_of("What kitchen appliance did I buy 9 days ago?");
        // 9 days back, ±3 days, plus the telling slack (capped at the question's time)
        assert_eq!(w.start, at("2023-05-12T10:00:00Z"));
        assert_eq!(w.end, at("2023-05-24T10:00:00Z"));
        assert_eq!(w.phrase, "9 days ago");
        let w = window_of("I mentioned a sports event two weeks ago. What was it?");
        assert_eq!(w.phrase, "two weeks ago");
        assert_eq!(w.start, at("2023-05-10T10:00:00Z") - days(14.0 / 3.0));
        let w = window_of("I cooked something for a friend a couple of days ago.");
        assert_eq!(w.phrase, "a couple of days ago");
        assert_eq!(w.start, at("2023-05-21T10:00:00Z"));
        let asked = at("2023-05-24T10:00:00Z");
        assert_eq!(
            time_window("How many months ago did I book the Airbnb?", asked),
            None,
            "the distance is the question, not a window"
        );
    }

    #[test]
    fn calendar_expressions_name_calendar_ranges() {
        let w = window_of("Which pair of shoes did I clean last month?");
        assert_eq!(w.start, at("2023-04-01T00:00:00Z"));
        assert_eq!(w.end, at("2023-05-24T10:00:00Z"));
        let w = window_of("What is the order of the sports events I watched in January?");
        assert_eq!(w.start, at("2023-01-01T00:00:00Z"));
        assert_eq!(w.end, at("2023-02-08T00:00:00Z"), "January plus a week");
        let w = window_of("How many doctor's appointments did I go to in August?");
        assert_eq!(
            w.start,
            at("2022-08-01T00:00:00Z"),
            "a month after now is last year's"
        );
        let w = window_of("Which trips did I take in the past three months?");
        assert_eq!(w.start, at("2023-05-24T10:00:00Z") - days(3.0 * 30.44));
        let w = window_of("What did I do last Saturday?");
        assert_eq!(
            w.start,
            at("2023-05-19T00:00:00Z"),
            "Saturday the 20th, a day early"
        );
        assert_eq!(
            w.end,
            at("2023-05-29T00:00:00Z").min(at("2023-05-24T10:00:00Z"))
        );
    }

    #[test]
    fn questions_without_a_time_have_no_window() {
        let asked = at("2023-05-24T10:00:00Z");
        assert_eq!(time_window("What breed is my dog?", asked), None);
        assert_eq!(
            time_window(
                "Which show did I start watching first, The Crown or Friends?",
                asked
            ),
            None
        );
        assert_eq!(
            time_window("May I ask what my sister's name is?", asked),
            None
        );
    }

    #[test]
    fn proximity_is_one_inside_and_decays_outside() {
        let w = TimeWindow {
            start: at("2023-05-01T00:00:00Z"),
            end: at("2023-05-15T00:00:00Z"),
            phrase: String::new(),
        };
        assert_eq!(w.proximity(at("2023-05-10T00:00:00Z")), 1.0);
        let one_width_before = w.proximity(at("2023-04-17T00:00:00Z"));
        assert!((one_width_before - (-1f64).exp()).abs() < 1e-9);
        assert!(w.proximity(at("2023-05-20T00:00:00Z")) > w.proximity(at("2023-05-25T00:00:00Z")));
    }
}
