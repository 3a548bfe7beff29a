//! How recall scores a user's turns for a question, as pure functions.
//!
//! A turn's evidence is fused at the level of scores, not ranks: its cosine to the question
//! (the best of the turn's and its sentences') and its BM25 score, each divided by the best of
//! the candidates, so the two retrievers count alike whatever their scales. Then what a memory
//! knows and a retriever does not:
//! - **who speaks**: a question naming exactly one of the conversation's speakers favours that
//!   speaker's turns;
//! - **the turn's neighbourhood**: an answer often spans a turn and its reply, so a turn gains a
//!   share of its better neighbour's score (the turn before or after it in its session, by
//!   another speaker);
//! - **the session**: a turn in a session that holds the best match gains a share of that
//!   session's best score;
//! - **time**: a question naming a calendar day favours turns of that day and the week around;
//!   one that places its event relatively ("10 days ago", "last month", "in the past three
//!   months", from the moment it is asked) favours turns inside that window;
//! - **events**: a turn in which the speaker reports doing something ("I adopted…") is
//!   slightly favoured, as questions ask about events;
//! - **the kind of question**: a question asking for an amount of money ("how much did I
//!   spend…", "the total cost of…") favours turns that state one ("$40", "25 dollars"); a "how many" question, or one comparing or collecting events
//!   ("which did I do first", "the order of", "both"), wants evidence from several sessions, so
//!   its top turns are spread over sessions.
//!
//! Measured on LoCoMo and LongMemEval (`engram bench locomo`, `engram bench longmemeval`); the
//! weights are round values from flat regions, one set for everything.

use chrono::{DateTime, NaiveDate, Utc};

use crate::query::time_window::TimeWindow;

/// What recall knows of one candidate turn.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEvidence {
    /// Best cosine of the turn's and its passages' vectors to the question (for a turn no
    /// vector search returned: the lowest cosine it did return).
    pub cosine: f64,
    /// BM25 of the turn for the question's words (0 when it matched none).
    pub bm25: f64,
    /// BM25 of the turn for the entities the graph expansion reached (0 when none).
    pub graph_bm25: f64,
    /// The traversal walk's score of the turn (0 when no walk reached it).
    pub walk: f64,
    /// Who speaks: the speaker prefix, or the role when there is none.
    pub speaker: String,
    pub session: Option<String>,
    pub ts: DateTime<Utc>,
    /// Indexes (in the same list) of the turn just before and just after it in its session,
    /// when spoken by someone else: its prompt and its reply.
    pub prev: Option<usize>,
    pub next: Option<usize>,
    /// The speaker reports an event of their own ([`engram_operators::turn_text::reports_own_event`]).
    pub own_event: bool,
    /// The turn states an amount of money ([`states_amount_of_money`]; read only for a question
    /// that asks for one).
    pub money: bool,
    /// The turn's retention R at the recall's moment (issue 33: e^(−t/S)).
    pub retention: f64,
    /// What the user's retrieval preferences make of the turn's kind: the product of its
    /// traits' boosts (1 without feedback; [`super::learned::LearnedBoosts`]).
    pub learned: f64,
}

/// What the question asks, read from its words.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuestionSignals {
    /// The one known speaker the question names (none when it names none or several).
    pub speaker: Option<String>,
    /// The calendar day the question names ("on 8 May, 2023").
    pub date: Option<NaiveDate>,
    /// Where its relative time expressions point ("10 days ago", read from the moment it is
    /// asked: [`crate::query::time_window::time_window`]); unused when it names a day.
    pub window: Option<TimeWindow>,
    /// "How many …", "how much …", "… in total", "both", "order", "first … or …"
    /// ([`is_aggregation`]): evidence spread over sessions.
    pub aggregation: bool,
    /// It asks for an amount of money ([`asks_amount_of_money`]).
    pub money: bool,
}

/// The weights of [`score_turns`] and [`order_turns`].
#[derive(Debug, Clone, PartialEq)]
pub struct TurnWeights {
    /// BM25's weight against cosine's 1 (both max-normalised).
    pub bm25: f64,
    /// Graph expansion's weight (max-normalised BM25 for the entities it reached), when the
    /// expansion is on (`recall.graph`).
    pub graph: f64,
    /// Traversal's weight (max-normalised walk score), when a walk runs
    /// (`recall.traversal.weight`).
    pub walk: f64,
    /// A turn of the named speaker scores `1 + speaker` times as much.
    pub speaker: f64,
    /// Share of the better neighbour's score a turn gains.
    pub neighbour: f64,
    /// Share of its session's best score (max-normalised) a turn gains.
    pub session: f64,
    /// A turn on the question's day scores up to `1 + date` times as much, …
    pub date: f64,
    /// … falling off as e^(−days / date_scale_days).
    pub date_scale_days: f64,
    /// A turn inside the question's relative time window scores up to `1 + window` times as
    /// much, falling off outside it ([`TimeWindow::proximity`]).
    pub window: f64,
    /// A turn reporting its speaker's own event scores `1 + own_event` times as much.
    pub own_event: f64,
    /// For a question asking an amount of money, a turn stating one scores `1 + money` times
    /// as much.
    pub money: f64,
    /// For aggregation questions: the k-th turn taken from one session counts `(1 − diversity)^k`.
    pub diversity: f64,
    /// … among the best `diversity_depth` turns.
    pub diversity_depth: usize,
    /// A turn's score is multiplied by `1 − retention + retention · R` (`recall.retention_weight`).
    pub retention: f64,
}

impl Default for TurnWeights {
    fn default() -> Self {
        TurnWeights {
            bm25: 1.0,
            graph: 0.5,
            walk: 0.5,
            speaker: 0.7,
            neighbour: 0.4,
            session: 0.5,
            date: 1.0,
            date_scale_days: 7.0,
            window: 1.0,
            own_event: 0.1,
            money: 0.5,
            diversity: 0.1,
            diversity_depth: 50,
            retention: 0.0,
        }
    }
}

/// A turn's score and what made it.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TurnScore {
    /// `cosine / max cosine + bm25 · bm25 / max bm25 + graph · graph / max graph
    /// + walk · walk / max walk`.
    pub fused: f64,
    /// The neighbour's share added.
    pub neighbour: f64,
    /// The session's share added.
    pub session: f64,
    /// The product of the date (or time window), event, money and retention factors.
    pub factor: f64,
    /// The final score.
    pub score: f64,
}

/// Each turn's score, in order:
/// 1. `f = cos/max cos + w.bm25 · bm25/max bm25 + w.graph · graph/max graph
///    + w.walk · walk/max walk`, a negative cosine counting as 0 and a maximum below 1e-9 as
///    1e-9;
/// 2. `s = f · (1 + w.speaker)` for a turn of the question's speaker, else `f`;
/// 3. `s' = s + w.neighbour · max(s of prev, s of next)` (0 without neighbours);
/// 4. `s'' = s' + w.session · S(session) / max S`, where `S` is the best `s'` of a session (no
///    session: the turn alone);
/// 5. `score = s'' · (1 + w.date · e^(−|days between the turn's day and the question's|/scale))
///    · (1 + w.own_event · [own event])`; without a named day but with a time window, the
///    date factor is `1 + w.window · proximity(turn's time)` instead; for a question asking an
///    amount of money, a turn stating one is multiplied by `1 + w.money`; and every turn by
///    `1 − w.retention + w.retention · R`, R its retention (clamped to [0, 1]), and by its
///    learned boost.
pub fn score_turns(turns: &[TurnEvidence], q: &QuestionSignals, w: &TurnWeights) -> Vec<TurnScore> {
    let max = |f: fn(&TurnEvidence) -> f64| turns.iter().map(f).fold(1e-9, f64::max);
    let (max_cos, max_bm25, max_graph, max_walk) = (
        max(|t| t.cosine.max(0.0)),
        max(|t| t.bm25),
        max(|t| t.graph_bm25),
        max(|t| t.walk),
    );
    let mut out: Vec<TurnScore> = turns
        .iter()
        .map(|t| {
            let fused = t.cosine.max(0.0) / max_cos
                + w.bm25 * t.bm25 / max_bm25
                + w.graph * t.graph_bm25 / max_graph
                + w.walk * t.walk / max_walk;
            let speaker = if q.speaker.as_deref() == Some(t.speaker.as_str()) {
                1.0 + w.speaker
            } else {
                1.0
            };
            TurnScore {
                fused,
                factor: 1.0,
                score: fused * speaker,
                ..TurnScore::default()
            }
        })
        .collect();
    let with_speaker: Vec<f64> = out.iter().map(|s| s.score).collect();
    for (t, s) in turns.iter().zip(out.iter_mut()) {
        let of = |i: Option<usize>| i.and_then(|i| with_speaker.get(i)).copied().unwrap_or(0.0);
        s.neighbour = w.neighbour * of(t.prev).max(of(t.next));
        s.score += s.neighbour;
    }
    let mut best_of_session: std::collections::HashMap<&str, f64> = Default::default();
    for (t, s) in turns.iter().zip(&out) {
        if let Some(session) = t.session.as_deref() {
            let best = best_of_session.entry(session).or_insert(f64::MIN);
            *best = best.max(s.score);
        }
    }
    let max_session = out.iter().map(|s| s.score).fold(1e-9, f64::max);
    for (t, s) in turns.iter().zip(out.iter_mut()) {
        let best = t
            .session
            .as_deref()
            .and_then(|k| best_of_session.get(k))
            .copied()
            .unwrap_or(s.score);
        s.session = w.session * best / max_session;
        s.score += s.session;
        if let Some(day) = q.date {
            let days = (t.ts.date_naive() - day).num_days().abs() as f64;
            s.factor *= 1.0 + w.date * (-days / w.date_scale_days).exp();
        } else if let Some(window) = &q.window {
            s.factor *= 1.0 + w.window * window.proximity(t.ts);
        }
        if t.own_event {
            s.factor *= 1.0 + w.own_event;
        }
        if q.money && t.money {
            s.factor *= 1.0 + w.money;
        }
        s.factor *= 1.0 - w.retention + w.retention * t.retention.clamp(0.0, 1.0);
        s.factor *= t.learned;
        s.score *= s.factor;
    }
    out
}

/// The turns' order, best first: by score (ties: the order `scores` gives them in); for an
/// aggregation question the best `w.diversity_depth` are then taken greedily, each time the
/// one with the largest `score · (1 − w.diversity)^m`, `m` being the turns of its session
/// already taken (turns without a session count as sessions of their own). The rest follow
/// by score.
pub fn order_turns(
    scores: &[f64],
    sessions: &[Option<&str>],
    aggregation: bool,
    w: &TurnWeights,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
    if !aggregation || w.diversity <= 0.0 {
        return order;
    }
    let rest = order.split_off(w.diversity_depth.min(order.len()));
    let mut top = order;
    let mut taken: std::collections::HashMap<&str, i32> = Default::default();
    let mut out = Vec::with_capacity(scores.len());
    while !top.is_empty() {
        let discounted = |i: usize| {
            let m = sessions[i].map_or(0, |s| taken.get(s).copied().unwrap_or(0));
            scores[i] * (1.0 - w.diversity).powi(m)
        };
        let (pos, _) = top
            .iter()
            .enumerate()
            .fold((0, f64::NEG_INFINITY), |best, (p, &i)| {
                let v = discounted(i);
                if v > best.1 {
                    (p, v)
                } else {
                    best
                }
            });
        let i = top.remove(pos);
        if let Some(s) = sessions[i] {
            *taken.entry(s).or_default() += 1;
        }
        out.push(i);
    }
    out.extend(rest);
    out
}

/// Whether the question wants evidence from several places: it asks to count or add up (it
/// starts with "how many" or "how much", or says "total", "combined" or "altogether"), or to
/// gather or compare events (it says "both" or "order", or "first" together with "or": "the
/// order of the three trips", "which did I do first, A or B?"; "first" alone is often a rank,
/// "won first place").
pub fn is_aggregation(question: &str) -> bool {
    let lower = question.to_lowercase();
    let words = alphanumeric_words(&lower);
    let says = |word: &str| words.contains(&word);
    matches!(words.as_slice(), ["how", "many" | "much", ..])
        || ["total", "combined", "altogether", "both", "order"]
            .into_iter()
            .any(says)
        || (says("first") && says("or"))
}

/// The runs of letters and digits of a text.
fn alphanumeric_words(text: &str) -> Vec<&str> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Whether the question asks for an amount of money: it asks for an amount ("how much …", "…
/// total …", "… amount …", not "how many", "the number of" or "how much time") and speaks of money ("money",
/// "cost", "price", "spend", "pay", "earn", "save", "raise", "donate", "dollars", "budget" and
/// their forms). "What is the total number of days I spent in Japan?" does not.
pub fn asks_amount_of_money(question: &str) -> bool {
    let lower = question.to_lowercase();
    let words = alphanumeric_words(&lower);
    let says = |word: &str| words.contains(&word);
    let amount = matches!(words.as_slice(), ["how", "much", ..]) || says("total") || says("amount");
    let counted = lower.contains("how many")
        || lower.contains("number of")
        || lower.contains("how much time");
    const MONEY: [&str; 27] = [
        "money", "cost", "costs", "price", "prices", "spend", "spent", "spending", "pay", "paid",
        "paying", "earn", "earned", "earning", "save", "saved", "saving", "raise", "raised",
        "donate", "donated", "dollars", "budget", "fee", "fees", "charge", "charged",
    ];
    amount && !counted && MONEY.into_iter().any(says)
}

/// Whether the text states an amount of money: a currency sign before a number ("$40", "€ 12",
/// "£1,200") or a number before "dollars", "bucks", "euros" or "pounds" ("25 dollars").
pub fn states_amount_of_money(text: &str) -> bool {
    let sign_then_digit = text.match_indices(['$', '€', '£']).any(|(i, sign)| {
        text[i + sign.len()..]
            .trim_start_matches(' ')
            .starts_with(|c: char| c.is_ascii_digit())
    });
    if sign_then_digit {
        return true;
    }
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | '.' | ';' | ':' | '!' | '?' | ')'))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(2).any(|w| {
        w[0].chars().next().is_some_and(|c| c.is_ascii_digit())
            && matches!(w[1], "dollars" | "bucks" | "euros" | "pounds")
    })
}

/// The one of `known` speakers the question names as a whole word (case-sensitive: names are
/// capitalised; "Caroline's" names Caroline); `None` when it names none or several.
pub fn named_speaker<'a>(
    question: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let mut named = known.into_iter().filter(|name| names(question, name));
    let first = named.next()?;
    named.next().is_none().then(|| first.to_string())
}

/// The speakers of a conversation: the speaker prefixes ([`engram_operators::turn_text::speaker_prefix`])
/// of at least two of `contents`, sorted.
pub fn known_speakers<'a>(contents: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut counts: std::collections::BTreeMap<&str, usize> = Default::default();
    for content in contents {
        if let Some((name, _)) = engram_operators::turn_text::speaker_prefix(content) {
            *counts.entry(name).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= 2)
        .map(|(name, _)| name.to_string())
        .collect()
}

/// The question without the speakers' names (each whole-word occurrence, with a following
/// "'s"), spaces collapsed: what it asks of their turns, whose bodies are embedded without
/// the speaker (a name in the question would only pull towards turns that mention it).
pub fn without_speakers(question: &str, speakers: &[String]) -> String {
    let mut text = question.to_string();
    for name in speakers {
        let mut out = String::with_capacity(text.len());
        let mut copied = 0;
        for at in whole_word_matches(&text, name) {
            if at < copied {
                continue; // inside the "'s" just dropped
            }
            out.push_str(&text[copied..at]);
            let rest = &text[at + name.len()..];
            let possessive = ["'s", "’s"].into_iter().find(|p| {
                rest.strip_prefix(p)
                    .is_some_and(|after| !after.chars().next().is_some_and(char::is_alphanumeric))
            });
            copied = at + name.len() + possessive.map_or(0, str::len);
        }
        out.push_str(&text[copied..]);
        text = out;
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The question to embed for searching turns: [`without_speakers`], when that differs from
/// the question (beyond spacing) and still has a word; `None` to embed the question as it is.
pub fn speaker_free(question: &str, speakers: &[String]) -> Option<String> {
    let asked = without_speakers(question, speakers);
    let unchanged = asked == question.split_whitespace().collect::<Vec<_>>().join(" ");
    (!unchanged && asked.chars().any(char::is_alphanumeric)).then_some(asked)
}

/// Whether `name` occurs in `text` as a whole word.
fn names(text: &str, name: &str) -> bool {
    whole_word_matches(text, name).next().is_some()
}

/// Where `name` occurs in `text` (byte offsets, in order) with no letter or digit on either
/// side; nowhere for an empty name.
fn whole_word_matches<'a>(text: &'a str, name: &'a str) -> impl Iterator<Item = usize> + 'a {
    text.match_indices(name)
        .filter(move |(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            !name.is_empty()
                && !before.is_some_and(char::is_alphanumeric)
                && !after.is_some_and(char::is_alphanumeric)
        })
        .map(|(at, _)| at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(cosine: f64, bm25: f64, speaker: &str, session: &str) -> TurnEvidence {
        TurnEvidence {
            cosine,
            bm25,
            graph_bm25: 0.0,
            walk: 0.0,
            speaker: speaker.into(),
            session: Some(session.into()),
            ts: "2023-05-08T13:56:00Z".parse().unwrap(),
            prev: None,
            next: None,
            own_event: false,
            money: false,
            retention: 1.0,
            learned: 1.0,
        }
    }

    /// The default weights without the neighbour's and the session's shares: a turn's score is
    /// its fused evidence times its factors.
    fn only_factors() -> TurnWeights {
        TurnWeights {
            neighbour: 0.0,
            session: 0.0,
            ..TurnWeights::default()
        }
    }

    fn only_fusion() -> TurnWeights {
        TurnWeights {
            speaker: 0.0,
            neighbour: 0.0,
            session: 0.0,
            date: 0.0,
            own_event: 0.0,
            ..TurnWeights::default()
        }
    }

    #[test]
    fn cosine_and_bm25_are_fused_as_shares_of_their_best() {
        let turns = [
            turn(0.8, 0.0, "A", "s1"),
            turn(0.4, 6.0, "B", "s1"),
            turn(0.2, 3.0, "A", "s2"),
        ];
        let s = score_turns(&turns, &QuestionSignals::default(), &only_fusion());
        let fused: Vec<f64> = s.iter().map(|s| s.score).collect();
        // 0.8/0.8 + 0; 0.4/0.8 + 6/6; 0.2/0.8 + 3/6
        for (got, want) in fused.iter().zip([1.0, 1.5, 0.75]) {
            assert!((got - want).abs() < 1e-12, "{fused:?}");
        }
        // no BM25 match anywhere: cosine alone, not a division by zero
        let turns = [turn(0.5, 0.0, "A", "s1"), turn(0.25, 0.0, "A", "s1")];
        let s = score_turns(&turns, &QuestionSignals::default(), &only_fusion());
        assert_eq!((s[0].score, s[1].score), (1.0, 0.5));
    }

    #[test]
    fn the_named_speaker_neighbour_and_session_add_as_documented() {
        let mut turns = [
            turn(0.8, 0.0, "Caroline", "s1"), // 1.0
            turn(0.4, 0.0, "Melanie", "s1"),  // 0.5, the reply to turn 0
            turn(0.6, 0.0, "Melanie", "s2"),  // 0.75
        ];
        turns[0].next = Some(1);
        turns[1].prev = Some(0);
        let q = QuestionSignals {
            speaker: Some("Melanie".into()),
            ..Default::default()
        };
        let w = TurnWeights {
            date: 0.0,
            own_event: 0.0,
            ..TurnWeights::default()
        };
        let s = score_turns(&turns, &q, &w);
        // speaker: 1.0, 0.5·1.7 = 0.85, 0.75·1.7 = 1.275
        // neighbour: 1.0 + 0.4·0.85 = 1.34, 0.85 + 0.4·1.0 = 1.25, 1.275
        // session: s1's best 1.34, s2's 1.275, max 1.34: + 0.5, + 0.5, + 0.5·1.275/1.34
        let want = [1.34 + 0.5, 1.25 + 0.5, 1.275 + 0.5 * 1.275 / 1.34];
        for (got, want) in s.iter().zip(want) {
            assert!((got.score - want).abs() < 1e-12, "{s:?}");
        }
        assert!((s[1].neighbour - 0.4).abs() < 1e-12);
    }

    #[test]
    fn a_named_day_and_an_own_event_multiply() {
        let mut turns = [
            turn(1.0, 0.0, "A", "s1"),
            turn(1.0, 0.0, "A", "s2"),
            turn(1.0, 0.0, "A", "s3"),
        ];
        turns[1].ts = "2023-05-15T09:00:00Z".parse().unwrap(); // 7 days after the question's day
        turns[2].own_event = true;
        let q = QuestionSignals {
            date: NaiveDate::from_ymd_opt(2023, 5, 8),
            ..Default::default()
        };
        let w = only_factors();
        let s = score_turns(&turns, &q, &w);
        let e_minus_1 = 0.367_879_441_171_442_3;
        assert!((s[0].score - 2.0).abs() < 1e-12);
        assert!((s[1].score - (1.0 + e_minus_1)).abs() < 1e-12);
        assert!((s[2].score - 2.0 * 1.1).abs() < 1e-12);
    }

    #[test]
    fn a_relative_time_window_favours_the_turns_inside_it() {
        // "What kitchen appliance did I buy 10 days ago?", asked on 25 March: a turn of 15 March
        // is inside the window, one of 23 February is a window's width before it, one of
        // 15 March but on a question that names a day follows the day instead.
        let mut turns = [turn(1.0, 0.0, "A", "s1"), turn(1.0, 0.0, "A", "s2")];
        turns[0].ts = "2023-03-15T11:56:00Z".parse().unwrap();
        turns[1].ts = "2023-02-23T00:00:00Z".parse().unwrap();
        let window = TimeWindow {
            start: "2023-03-05T00:00:00Z".parse().unwrap(),
            end: "2023-03-25T00:00:00Z".parse().unwrap(),
            phrase: "10 days ago".into(),
        };
        let q = QuestionSignals {
            window: Some(window.clone()),
            ..Default::default()
        };
        let w = only_factors();
        let s = score_turns(&turns, &q, &w);
        // inside: 1 · (1 + 1); 10 days before a 20-day window: 1 · (1 + e^(−1/2))
        assert!((s[0].score - 2.0).abs() < 1e-12, "{s:?}");
        assert!(
            (s[1].score - (1.0 + (-0.5f64).exp())).abs() < 1e-12,
            "{s:?}"
        );
        let named = QuestionSignals {
            date: NaiveDate::from_ymd_opt(2023, 2, 23),
            window: Some(window),
            ..Default::default()
        };
        let s = score_turns(&turns, &named, &w);
        // the named day wins: 23 February is that day (× 2), 15 March 20 days off
        assert!((s[1].score - 2.0).abs() < 1e-12, "{s:?}");
        assert!(
            (s[0].score - (1.0 + (-20.0f64 / 7.0).exp())).abs() < 1e-6,
            "{s:?}"
        );
    }

    #[test]
    fn questions_asking_an_amount_of_money_and_turns_stating_one() {
        for q in [
            "How much total money have I spent on bike-related expenses since the start of the year?",
            "What is the total cost of Lola's vet visit and flea medication?",
            "How much will I save by taking the train from the airport to my hotel instead of a taxi?",
            "What is the total amount of money I earned from selling my products at the markets?",
            "how much did the tickets cost us",
        ] {
            assert!(asks_amount_of_money(q), "{q}");
        }
        for q in [
            "What is the total number of days I spent in Japan and Chicago?",
            "How many dollars' worth of coins did I buy?", // counted, not an amount
            "Who gave Maria's family money when she was younger?",
            "How much time did I spend on the puzzle?",
        ] {
            assert!(!asks_amount_of_money(q), "{q}");
        }
        for t in [
            "I got a new set of bike lights installed, which were $40.",
            "the chain cost me $ 25 and the helmet £1,200",
            "I sold 12 jars for 60 dollars at the market",
            "it was like 30 bucks",
        ] {
            assert!(states_amount_of_money(t), "{t}");
        }
        for t in [
            "I've clocked 347 miles since the start of the year.",
            "Dollars or euros, whichever you prefer",
            "I lost 10 kilos",
            "costs a lot of money",
        ] {
            assert!(!states_amount_of_money(t), "{t}");
        }
        let turns = [turn(1.0, 0.0, "A", "s1"), turn(1.0, 0.0, "A", "s2")];
        let mut money_turns = turns.clone();
        money_turns[1].money = true;
        let w = only_factors();
        let asks = QuestionSignals {
            money: true,
            ..Default::default()
        };
        let s = score_turns(&money_turns, &asks, &w);
        assert!((s[0].score - 1.0).abs() < 1e-12 && (s[1].score - 1.5).abs() < 1e-12);
        // a question that does not ask an amount leaves the turns as they are
        let s = score_turns(&money_turns, &QuestionSignals::default(), &w);
        assert!((s[1].score - 1.0).abs() < 1e-12);
    }

    #[test]
    fn retention_weighs_as_configured() {
        let mut turns = [turn(1.0, 0.0, "A", "s1"), turn(1.0, 0.0, "A", "s2")];
        turns[1].retention = 0.2;
        let q = QuestionSignals::default();
        // weight 0 (the default): retention changes nothing
        let s = score_turns(&turns, &q, &only_factors());
        assert_eq!((s[0].score, s[1].score), (1.0, 1.0));
        // weight 0.5: 1 − 0.5 + 0.5·0.2 = 0.6
        let w = TurnWeights {
            retention: 0.5,
            ..only_factors()
        };
        let s = score_turns(&turns, &q, &w);
        assert!((s[0].score - 1.0).abs() < 1e-12);
        assert!((s[1].score - 0.6).abs() < 1e-12 && (s[1].factor - 0.6).abs() < 1e-12);
        // weight 1: the score is R times what it was
        let w = TurnWeights {
            retention: 1.0,
            ..only_factors()
        };
        assert!((score_turns(&turns, &q, &w)[1].score - 0.2).abs() < 1e-12);
        // a learned boost multiplies like the other factors
        turns[0].learned = 1.25;
        let s = score_turns(&turns, &q, &only_factors());
        assert_eq!((s[0].score, s[0].factor), (1.25, 1.25));
    }

    #[test]
    fn aggregation_questions_spread_their_top_turns_over_sessions() {
        let scores = [1.0, 0.95, 0.9, 0.5];
        let sessions = [Some("s1"), Some("s1"), Some("s1"), Some("s2")];
        let w = TurnWeights {
            diversity: 0.3,
            ..TurnWeights::default()
        };
        assert_eq!(order_turns(&scores, &sessions, false, &w), vec![0, 1, 2, 3]);
        // second from s1: 0.95·0.7 = 0.665 > 0.5; third: 0.9·0.49 = 0.441 < 0.5
        assert_eq!(order_turns(&scores, &sessions, true, &w), vec![0, 1, 3, 2]);
        // only the best `diversity_depth` are re-ordered
        let w = TurnWeights {
            diversity: 0.3,
            diversity_depth: 2,
            ..TurnWeights::default()
        };
        assert_eq!(order_turns(&scores, &sessions, true, &w), vec![0, 1, 2, 3]);
        // the default discount, 0.9 per turn taken: a second turn of s1 at 0.95·0.9 = 0.855
        // yields to s2's 0.88, a third at 0.9·0.9 = 0.81 does not
        let scores = [1.0, 0.95, 0.9, 0.88];
        let w = TurnWeights::default();
        assert_eq!(order_turns(&scores, &sessions, true, &w), vec![0, 3, 1, 2]);
    }

    #[test]
    fn questions_are_read_for_counts_and_speakers() {
        assert!(is_aggregation("How many times has Melanie gone camping?"));
        assert!(is_aggregation("how much did I spend on bikes in total?"));
        // the word alone counts, whatever the question
        assert!(is_aggregation(
            "What did Melanie buy with her total savings?"
        ));
        // comparing or gathering events
        assert!(is_aggregation(
            "Who did I meet first, Mark and Sarah or Tom?"
        ));
        assert!(is_aggregation(
            "What is the order of the three trips I took, from earliest to latest?"
        ));
        assert!(is_aggregation("How many fish are in both of my aquariums?"));
        assert!(!is_aggregation("What did I learn firsthand?"));
        assert!(!is_aggregation("What dance won first place?"));
        assert!(!is_aggregation("Why did Caroline move?"));
        assert!(!is_aggregation("Who is somehow many things?"));
        let known = ["Caroline", "Melanie"];
        assert_eq!(
            named_speaker("What is Caroline's identity?", known),
            Some("Caroline".into())
        );
        assert_eq!(named_speaker("Did Caroline and Melanie meet?", known), None);
        assert_eq!(named_speaker("What did Carolines say?", known), None);
        assert_eq!(named_speaker("What did she say?", known), None);
        let known = vec!["Caroline".to_string(), "Melanie".to_string()];
        assert_eq!(
            without_speakers("What is Caroline's identity?", &known),
            "What is identity?"
        );
        assert_eq!(
            without_speakers("When did Melanie  meet Caroline, and Carolines?", &known),
            "When did meet , and Carolines?"
        );
        assert_eq!(without_speakers("How are you?", &known), "How are you?");
        assert_eq!(speaker_free("How  are you?", &known), None);
        assert_eq!(
            speaker_free("Caroline?", &known),
            None,
            "nothing left to ask"
        );
        assert_eq!(
            speaker_free("Where is Melanie?", &known).as_deref(),
            Some("Where is ?")
        );
    }

    #[test]
    fn speakers_are_prefixes_of_two_turns_or_more() {
        let turns = [
            "Caroline: Hi!",
            "Melanie: Hey Caroline",
            "Caroline: I went to a support group.",
            "Note: only once",
            "no prefix here",
        ];
        assert_eq!(known_speakers(turns), ["Caroline"]);
        assert!(known_speakers(["plain", "text"]).is_empty());
    }
}
