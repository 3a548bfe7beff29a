//! Cues for the aspects whose way is a named value ([`Way::Value`](super::Way::Value)):
//! units, spelling, the programming language, time and date formats, currency, pronouns and the
//! language to answer in. Matched with [`CUES`](super::lexicon::CUES), as one list.

use super::lexicon::{cue, Cue, CueKind::Thing as T};
use super::Aspect as A;
use super::Way::Value as V;

pub(super) const VALUE_CUES: &[Cue] = &[
    // units
    cue(&["metric"], A::Units, V(0), T),
    cue(&["kilomet*"], A::Units, V(0), T),
    cue(&["km"], A::Units, V(0), T),
    cue(&["kg"], A::Units, V(0), T),
    cue(&["kilo*"], A::Units, V(0), T),
    cue(&["celsius"], A::Units, V(0), T),
    cue(&["centigrade"], A::Units, V(0), T),
    cue(&["metres"], A::Units, V(0), T),
    cue(&["meters"], A::Units, V(0), T),
    cue(&["litres"], A::Units, V(0), T),
    cue(&["liters"], A::Units, V(0), T),
    cue(&["gram"], A::Units, V(0), T),
    cue(&["grams"], A::Units, V(0), T),
    cue(&["millilit*"], A::Units, V(0), T),
    cue(&["ml"], A::Units, V(0), T),
    cue(&["cm"], A::Units, V(0), T),
    cue(&["centimet*"], A::Units, V(0), T),
    cue(&["centimetre*"], A::Units, V(0), T),
    cue(&["inches"], A::Units, V(1), T),
    cue(&["imperial"], A::Units, V(1), T),
    cue(&["miles"], A::Units, V(1), T),
    cue(&["pounds"], A::Units, V(1), T),
    cue(&["lbs"], A::Units, V(1), T),
    cue(&["ounce*"], A::Units, V(1), T),
    cue(&["fahrenheit"], A::Units, V(1), T),
    cue(&["feet"], A::Units, V(1), T),
    cue(&["gallons"], A::Units, V(1), T),
    cue(&["us", "customary"], A::Units, V(1), T),
    cue(&["si", "system"], A::Units, V(0), T),
    cue(&["si", "units"], A::Units, V(0), T),
    cue(&["cups"], A::Units, V(1), T),
    cue(&["tablespoon*"], A::Units, V(1), T),
    // spelling (before languages: "british english" is spelling, not a language)
    cue(&["british", "english"], A::Spelling, V(0), T),
    cue(&["uk", "english"], A::Spelling, V(0), T),
    cue(&["british", "spelling*"], A::Spelling, V(0), T),
    cue(&["uk", "spelling*"], A::Spelling, V(0), T),
    cue(&["british", "way"], A::Spelling, V(0), T),
    cue(&["colour"], A::Spelling, V(0), T),
    cue(&["favour*"], A::Spelling, V(0), T),
    cue(&["organise"], A::Spelling, V(0), T),
    cue(&["realise"], A::Spelling, V(0), T),
    cue(&["analyse"], A::Spelling, V(0), T),
    cue(&["centre"], A::Spelling, V(0), T),
    cue(&["american", "english"], A::Spelling, V(1), T),
    cue(&["us", "english"], A::Spelling, V(1), T),
    cue(&["american", "spelling*"], A::Spelling, V(1), T),
    cue(&["us", "spelling*"], A::Spelling, V(1), T),
    cue(&["american", "way"], A::Spelling, V(1), T),
    cue(&["color"], A::Spelling, V(1), T),
    cue(&["favor"], A::Spelling, V(1), T),
    cue(&["favorite"], A::Spelling, V(1), T),
    cue(&["organize"], A::Spelling, V(1), T),
    cue(&["realize"], A::Spelling, V(1), T),
    cue(&["analyze"], A::Spelling, V(1), T),
    cue(&["center"], A::Spelling, V(1), T),
    cue(&["americani*"], A::Spelling, V(1), T),
    cue(&["en", "gb"], A::Spelling, V(0), T),
    cue(&["en", "us"], A::Spelling, V(1), T),
    cue(&["uk", "variant*"], A::Spelling, V(0), T),
    cue(&["us", "variant*"], A::Spelling, V(1), T),
    cue(&["javascript"], A::ProgrammingLanguage, V(1), T),
    cue(&["js"], A::ProgrammingLanguage, V(1), T),
    cue(&["typescript"], A::ProgrammingLanguage, V(2), T),
    cue(&["ts"], A::ProgrammingLanguage, V(2), T),
    cue(&["java"], A::ProgrammingLanguage, V(3), T),
    cue(&["rust"], A::ProgrammingLanguage, V(4), T),
    cue(&["golang"], A::ProgrammingLanguage, V(5), T),
    cue(&["csharp"], A::ProgrammingLanguage, V(6), T),
    cue(&["cpp"], A::ProgrammingLanguage, V(7), T),
    cue(&["ruby"], A::ProgrammingLanguage, V(8), T),
    cue(&["php"], A::ProgrammingLanguage, V(9), T),
    cue(&["swift"], A::ProgrammingLanguage, V(10), T),
    cue(&["kotlin"], A::ProgrammingLanguage, V(11), T),
    cue(&["sql"], A::ProgrammingLanguage, V(12), T),
    cue(&["bash"], A::ProgrammingLanguage, V(13), T),
    // time, dates, currency, pronouns
    cue(&["24", "hour"], A::TimeFormat, V(0), T),
    cue(&["24h"], A::TimeFormat, V(0), T),
    cue(&["24hr"], A::TimeFormat, V(0), T),
    cue(&["military", "time"], A::TimeFormat, V(0), T),
    cue(&["12", "hour"], A::TimeFormat, V(1), T),
    cue(&["12h"], A::TimeFormat, V(1), T),
    cue(&["12hr"], A::TimeFormat, V(1), T),
    cue(&["am", "pm"], A::TimeFormat, V(1), T),
    cue(&["am", "and", "pm"], A::TimeFormat, V(1), T),
    cue(&["military", "format"], A::TimeFormat, V(0), T),
    cue(&["military", "clock"], A::TimeFormat, V(0), T),
    cue(&["iso"], A::DateFormat, V(0), T),
    cue(&["yyyy", "mm", "dd"], A::DateFormat, V(0), T),
    cue(&["dd", "mm", "yyyy"], A::DateFormat, V(1), T),
    cue(&["day", "month", "year"], A::DateFormat, V(1), T),
    cue(&["year", "month", "day"], A::DateFormat, V(0), T),
    cue(&["mm", "dd", "yyyy"], A::DateFormat, V(2), T),
    cue(&["month", "day", "year"], A::DateFormat, V(2), T),
    cue(&["day", "first"], A::DateFormat, V(1), T),
    cue(&["day", "before", "month"], A::DateFormat, V(1), T),
    cue(&["day", "before", "the", "month"], A::DateFormat, V(1), T),
    cue(&["month", "first"], A::DateFormat, V(2), T),
    cue(&["euro"], A::Currency, V(0), T),
    cue(&["euros"], A::Currency, V(0), T),
    cue(&["eur"], A::Currency, V(0), T),
    cue(&["dollar*"], A::Currency, V(1), T),
    cue(&["usd"], A::Currency, V(1), T),
    cue(&["gbp"], A::Currency, V(2), T),
    cue(&["sterling"], A::Currency, V(2), T),
    // "prices in pounds": money, where pounds alone weigh (`settling::applies_here`)
    cue(&["in", "pounds"], A::Currency, V(2), T),
    cue(&["use", "pounds"], A::Currency, V(2), T),
    cue(&["to", "pounds"], A::Currency, V(2), T),
    cue(&["they", "them"], A::Pronouns, V(0), T),
    cue(&["she", "her"], A::Pronouns, V(1), T),
    cue(&["he", "him"], A::Pronouns, V(2), T),
    // languages
    cue(&["english"], A::Language, V(0), T),
    cue(&["englisch"], A::Language, V(0), T),
    cue(&["german"], A::Language, V(1), T),
    cue(&["deutsch"], A::Language, V(1), T),
    cue(&["french"], A::Language, V(2), T),
    cue(&["francais"], A::Language, V(2), T),
    cue(&["fran\u{e7}ais"], A::Language, V(2), T),
    cue(&["spanish"], A::Language, V(3), T),
    cue(&["espanol"], A::Language, V(3), T),
    cue(&["castellano"], A::Language, V(3), T),
    cue(&["espa\u{f1}ol"], A::Language, V(3), T),
    cue(&["italian"], A::Language, V(4), T),
    cue(&["portuguese"], A::Language, V(5), T),
    cue(&["dutch"], A::Language, V(6), T),
    cue(&["polish"], A::Language, V(7), T),
    cue(&["russian"], A::Language, V(8), T),
    cue(&["japanese"], A::Language, V(9), T),
    cue(&["chinese"], A::Language, V(10), T),
    cue(&["mandarin"], A::Language, V(10), T),
    cue(&["korean"], A::Language, V(11), T),
    cue(&["arabic"], A::Language, V(12), T),
    cue(&["turkish"], A::Language, V(13), T),
    cue(&["swedish"], A::Language, V(14), T),
    cue(&["hindi"], A::Language, V(15), T),
];

#[cfg(test)]
mod tests {
    use super::super::asked;

    #[test]
    fn a_currency_sign_on_an_amount_asks_for_no_currency() {
        // the amount asks for no currency; being broke asks for cheap options
        assert_eq!(asked("ugh, a $300 gadget? i'm broke"), ["CostLess"]);
        assert_eq!(
            asked("hotels under \u{a3}100 a night please"),
            Vec::<String>::new()
        );
        assert_eq!(asked("prices in \u{20ac} please"), ["CurrencyValue(0)"]);
    }

    #[test]
    fn named_values_are_kept_and_turned_away_ones_dropped_or_swapped() {
        assert_eq!(
            asked("I want the answers in German, not English"),
            ["LanguageValue(1)"]
        );
        assert_eq!(
            asked("Reply in English, I don't speak German"),
            ["LanguageValue(0)"]
        );
        assert_eq!(
            asked("Give me miles instead of kilometers"),
            ["UnitsValue(1)"]
        );
        assert_eq!(asked("not metric"), ["UnitsValue(1)"]);
        assert_eq!(asked("Use UK English"), ["SpellingValue(0)"]);
        assert_eq!(asked("answer in German or in French"), Vec::<String>::new());
    }
}
