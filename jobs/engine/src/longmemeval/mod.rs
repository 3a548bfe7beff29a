//! `engram bench longmemeval`: ingests each question's haystack as one user's memory through
//! the same path as `engram serve` (log → dataflow → Lance), recalls for the question, and
//! reports the official retrieval metrics at session and turn granularity.

pub mod metrics;

use crate::config::Config;
use crate::engine::Engine;
use crate::llm::{ChatClient, ChatMessage};
use crate::query::recall::RecallHit;
use crate::query::session_ranking::rank_sessions;
use crate::query::time_window::{midnight, time_window, TimeWindow};
use anyhow::Context;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use engram_schemas::{Body, Event, Header, Interaction, Role};
use metrics::{evaluate, KS};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

/// The tenant every benchmark question's memory lives in; each question is one user.
const TENANT: &str = "longmemeval";

#[derive(Debug, Deserialize)]
pub struct Question {
    pub question_id: String,
    pub question_type: String,
    pub question: String,
    pub question_date: String,
    pub haystack_session_ids: Vec<String>,
    pub haystack_dates: Vec<String>,
    pub haystack_sessions: Vec<Vec<Turn>>,
    pub answer_session_ids: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct Turn {
    pub role: String,
    pub content: String,
    #[serde(default)]
    pub has_answer: bool,
}

/// "2023/05/30 (Tue) 23:40" → UTC.
pub fn parse_date(s: &str) -> anyhow::Result<DateTime<Utc>> {
    let cleaned: String = match (s.find('('), s.find(')')) {
        (Some(a), Some(b)) if b > a => format!("{}{}", &s[..a], &s[b + 1..]),
        _ => s.to_string(),
    };
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    let naive = NaiveDateTime::parse_from_str(&cleaned, "%Y/%m/%d %H:%M")
        .with_context(|| format!("unreadable LongMemEval date {s:?}"))?;
    Ok(Utc.from_utc_datetime(&naive))
}

/// Rankings of one question, best first.
struct Ranked {
    sessions: Vec<String>,
    user_turns: Vec<String>,
    /// What the retrievers returned, for `--dump`.
    candidates: Vec<RecallHit>,
    window: Option<TimeWindow>,
}

pub struct BenchOptions {
    pub data: std::path::PathBuf,
    pub json: Option<std::path::PathBuf>,
    pub limit: Option<usize>,
    /// Keep the ingested memory in this folder; a rerun with the same folder stores nothing
    /// twice and embeds nothing again (event ids dedupe, Lance skips committed offsets).
    pub work_dir: Option<std::path::PathBuf>,
    /// Write each question's retrieved candidates (ranks and raw scores per retriever) and gold
    /// ids as JSON lines, for error analysis.
    pub dump: Option<std::path::PathBuf>,
    /// Answer each question through this OpenAI-compatible server and write the official
    /// `{question_id, hypothesis}` lines to `answers`.
    pub llm: Option<LlmOptions>,
}

pub struct LlmOptions {
    pub url: String,
    pub model: String,
    pub answers: std::path::PathBuf,
    /// Characters of recalled memory put into each prompt.
    pub context_chars: usize,
}

pub async fn run(mut config: Config, opts: BenchOptions) -> anyhow::Result<()> {
    let questions = load_questions(&opts)?;
    let _temp_dir;
    config.data_dir = match &opts.work_dir {
        Some(dir) => dir.clone(),
        None => {
            let t = tempfile::tempdir()?;
            let path = t.path().to_path_buf();
            _temp_dir = t;
            path
        }
    };
    config.demo = false;
    config.clock = engram_dataflows::EngineClock::Events;
    let mut emb = config.embedder_config();
    emb.cache_entries = 1_000_000;
    config.embedder = Some(emb);
    let engine = Engine::start(config).await?;

    let started = Instant::now();
    let mut accepted = 0;
    // Event ids are unique per tenant, and the same session appears in several questions'
    // haystacks: its first appearance keeps the plain id, later ones are qualified by the
    // question, so every question's user gets every session of its haystack.
    let mut ids_taken: HashSet<String> = HashSet::new();
    for q in &questions {
        let events = haystack_events(q, &mut ids_taken)?;
        let n = events.len();
        let report = engine.ingestor.ingest_parsed(
            "longmemeval",
            events.into_iter().map(Ok).collect(),
            &[],
        )?;
        anyhow::ensure!(
            report.rejected.is_empty(),
            "{}: rejected {:?}",
            q.question_id,
            report.rejected
        );
        accepted += n;
    }
    engine.wait_caught_up().await;
    let ingest_seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "ingested {} questions, {accepted} turns in {ingest_seconds:.1} s ({:.0} turns/s)",
        questions.len(),
        accepted as f64 / ingest_seconds
    );

    // sums[granularity][type][metric@k]
    let mut sums: BTreeMap<&str, BTreeMap<String, BTreeMap<String, f64>>> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut dump = match &opts.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    let mut llm = match &opts.llm {
        Some(o) => {
            let client = ChatClient::new(&o.url, &o.model, Duration::from_secs(300))?;
            let out = std::fs::File::create(&o.answers)
                .with_context(|| format!("creating {}", o.answers.display()))?;
            Some((client, std::io::BufWriter::new(out), o.context_chars))
        }
        None => None,
    };
    for q in &questions {
        let (turn_corpus, turn_gold) = turn_corpus(q);
        let ranked = rank(&engine, q, &turn_corpus).await?;
        if let Some((client, out, chars)) = llm.as_mut() {
            use std::io::Write;
            let messages = answer_messages(q, &ranked.candidates, *chars)?;
            let hypothesis = client
                .complete(&messages, 256)
                .await
                .with_context(|| format!("answering {}", q.question_id))?;
            let line = json!({"question_id": q.question_id, "hypothesis": hypothesis});
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        if let Some(out) = dump.as_mut() {
            use std::io::Write;
            let line = json!({
                "question_id": q.question_id,
                "question_type": q.question_type,
                "question": q.question,
                "question_date": q.question_date,
                "haystack_session_ids": q.haystack_session_ids,
                "haystack_dates": q.haystack_dates,
                "answer_session_ids": q.answer_session_ids,
                "turn_gold": turn_gold,
                "candidates": ranked.candidates,
                "window": ranked.window,
                "sessions": ranked.sessions.iter().take(10).collect::<Vec<_>>(),
            });
            writeln!(out, "{line}")?;
        }
        *counts.entry(q.question_type.clone()).or_default() += 1;
        *counts.entry("overall".into()).or_default() += 1;
        let session_corpus = q.haystack_session_ids.clone();
        let session_gold: HashSet<String> = q.answer_session_ids.iter().cloned().collect();
        for (granularity, ranking, corpus, gold) in [
            ("session", &ranked.sessions, &session_corpus, &session_gold),
            ("turn", &ranked.user_turns, &turn_corpus, &turn_gold),
        ] {
            for k in KS {
                let s = evaluate(ranking, corpus, gold, k);
                for group in ["overall", q.question_type.as_str()] {
                    let m = sums
                        .entry(granularity)
                        .or_default()
                        .entry(group.to_string())
                        .or_default();
                    *m.entry(format!("recall_any@{k}")).or_default() += s.recall_any;
                    *m.entry(format!("recall_all@{k}")).or_default() += s.recall_all;
                    *m.entry(format!("ndcg_any@{k}")).or_default() += s.ndcg_any;
                }
            }
        }
    }
    let report = mean_report(&sums, &counts, questions.len(), ingest_seconds);
    print_table(&report, &counts);
    if let Some(path) = &opts.json {
        std::fs::write(path, serde_json::to_vec_pretty(&Value::Object(report))?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    engine.stop().await?;
    Ok(())
}

/// The questions of `opts.data` (abstention questions left out), or `opts.limit` of them evenly
/// spaced through the file.
fn load_questions(opts: &BenchOptions) -> anyhow::Result<Vec<Question>> {
    let text =
        std::fs::read(&opts.data).with_context(|| format!("reading {}", opts.data.display()))?;
    let mut questions: Vec<Question> = serde_json::from_slice(&text)
        .with_context(|| format!("parsing {}", opts.data.display()))?;
    questions.retain(|q| !q.question_id.ends_with("_abs"));
    if let Some(n) = opts.limit.filter(|n| *n > 0 && *n < questions.len()) {
        // evenly spaced, so a sample keeps the file's mix of question types
        let step = questions.len() as f64 / n as f64;
        let keep: HashSet<usize> = (0..n).map(|i| (i as f64 * step) as usize).collect();
        questions = questions
            .into_iter()
            .enumerate()
            .filter(|(i, _)| keep.contains(i))
            .map(|(_, q)| q)
            .collect();
    }
    Ok(questions)
}

/// Each metric's mean per granularity, overall and per question type, with the number of
/// questions and the ingest time.
fn mean_report(
    sums: &BTreeMap<&str, BTreeMap<String, BTreeMap<String, f64>>>,
    counts: &BTreeMap<String, usize>,
    questions: usize,
    ingest_seconds: f64,
) -> Map<String, Value> {
    let mut report = Map::new();
    for (granularity, groups) in sums {
        let mut by_type = Map::new();
        let mut overall = Value::Null;
        for (group, metrics) in groups {
            let n = counts[group] as f64;
            let means: Map<String, Value> = metrics
                .iter()
                .map(|(m, s)| (m.clone(), json!(s / n)))
                .collect();
            if group == "overall" {
                overall = Value::Object(means);
            } else {
                by_type.insert(group.clone(), Value::Object(means));
            }
        }
        report.insert(
            granularity.to_string(),
            json!({"overall": overall, "by_type": by_type}),
        );
    }
    report.insert("n".into(), json!(questions));
    report.insert("ingest_seconds".into(), json!(ingest_seconds));
    report
}

/// The question's haystack as interaction events: sessions in list order, each at its date,
/// turns a second apart so their order is kept.
fn haystack_events(q: &Question, ids_taken: &mut HashSet<String>) -> anyhow::Result<Vec<Event>> {
    let mut events = Vec::new();
    for ((sid, date), turns) in q
        .haystack_session_ids
        .iter()
        .zip(&q.haystack_dates)
        .zip(&q.haystack_sessions)
    {
        let start = parse_date(date)?;
        for (i, t) in turns.iter().enumerate() {
            if t.content.trim().is_empty() {
                continue;
            }
            let role = Role::parse(&t.role).unwrap_or(Role::User);
            let plain = format!("{sid}#{i}");
            let event_id = if ids_taken.insert(plain.clone()) {
                plain
            } else {
                format!("{}:{sid}#{i}", user_of(q))
            };
            events.push(Event {
                header: Header {
                    event_id,
                    tenant: TENANT.into(),
                    user: user_of(q),
                    ts: start + chrono::Duration::seconds(i as i64),
                    session: Some(sid.clone()),
                },
                body: Body::Interaction(Interaction {
                    role,
                    content: t.content.clone(),
                    turn: Some(i as u32),
                    importance: None,
                    skill_id: None,
                    meta: None,
                }),
            });
        }
    }
    Ok(events)
}

fn user_of(q: &Question) -> String {
    // question ids are hex-like; keep them within the user-name alphabet
    q.question_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "_.:@+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The official turn-level corpus: user turns, id `session_id + "_" + (i+1)`.
fn turn_corpus(q: &Question) -> (Vec<String>, HashSet<String>) {
    let mut corpus = Vec::new();
    let mut gold = HashSet::new();
    for (sid, turns) in q.haystack_session_ids.iter().zip(&q.haystack_sessions) {
        for (i, t) in turns.iter().enumerate() {
            if t.role == "user" {
                let id = format!("{sid}_{}", i + 1);
                if t.has_answer {
                    gold.insert(id.clone());
                }
                corpus.push(id);
            }
        }
    }
    (corpus, gold)
}

/// Turn-level hybrid recall (vector, BM25 and passage vectors, reciprocal-rank fused) as of
/// the end of the question's day, then sessions ranked by their turns' evidence and the
/// question's time window ([`rank_sessions`]); sessions and turns not retrieved follow in
/// haystack order so every ranking covers the corpus.
async fn rank(engine: &Engine, q: &Question, turn_corpus: &[String]) -> anyhow::Result<Ranked> {
    let user = user_of(q);
    let asked = parse_date(&q.question_date)?;
    // Haystack sessions can be dated later on the question's own day: the question's date is a
    // day, its time of day is not meaningful.
    let end_of_day = midnight(asked.date_naive() + chrono::Duration::days(1))
        - chrono::Duration::microseconds(1);
    let fused = engine
        .recall
        .fused_candidates(TENANT, &user, &q.question, 1000, Some(end_of_day))
        .await?;
    let window = time_window(&q.question, asked);
    let mut sessions: Vec<String> = rank_sessions(&fused, window.as_ref())
        .into_iter()
        .map(|r| r.session)
        .collect();
    let mut user_turns = Vec::new();
    for hit in fused.iter().filter(|h| h.role == "user") {
        if let Some((sid, i)) = turn_of(hit) {
            user_turns.push(format!("{sid}_{}", i + 1));
        }
    }
    let seen: HashSet<String> = sessions.iter().cloned().collect();
    sessions.extend(
        q.haystack_session_ids
            .iter()
            .filter(|s| !seen.contains(*s))
            .cloned(),
    );
    let seen: HashSet<String> = user_turns.iter().cloned().collect();
    user_turns.extend(turn_corpus.iter().filter(|t| !seen.contains(*t)).cloned());
    Ok(Ranked {
        sessions,
        user_turns,
        candidates: fused,
        window,
    })
}

/// The session of a recalled turn and the turn's index in it (event ids end in `#<index>`).
fn turn_of(hit: &RecallHit) -> Option<(&str, usize)> {
    let session = hit.session.as_deref()?;
    let (_, index) = hit.event_id.rsplit_once('#')?;
    Some((session, index.parse().ok()?))
}

/// The chat messages that answer `q` from memory: the best recalled turns, each with the turn
/// before or after it in its session (a user turn with the answer to it), grouped by session,
/// sessions oldest first with their dates, within `max_chars` of memory; then the question
/// asked on its date.
fn answer_messages(
    q: &Question,
    candidates: &[RecallHit],
    max_chars: usize,
) -> anyhow::Result<Vec<ChatMessage>> {
    let index: HashMap<&str, usize> = q
        .haystack_session_ids
        .iter()
        .enumerate()
        .map(|(i, s)| (s.as_str(), i))
        .collect();
    // (session index, turn index) chosen, best evidence first until the budget is spent
    let mut chosen: BTreeMap<usize, std::collections::BTreeSet<usize>> = BTreeMap::new();
    let mut used = 0;
    'hits: for hit in candidates {
        let Some((sid, ti)) = turn_of(hit) else {
            continue;
        };
        let Some(&si) = index.get(sid) else {
            continue;
        };
        let turns = &q.haystack_sessions[si];
        let partner = if hit.role == "user" {
            ti + 1
        } else {
            ti.saturating_sub(1)
        };
        for t in [ti.min(partner), ti.max(partner)] {
            if t >= turns.len() || chosen.get(&si).is_some_and(|c| c.contains(&t)) {
                continue;
            }
            let len = turns[t].content.len();
            if used + len > max_chars {
                if used > 0 {
                    break 'hits;
                }
                continue;
            }
            used += len;
            chosen.entry(si).or_default().insert(t);
        }
    }
    let mut sessions: Vec<(DateTime<Utc>, usize)> = chosen
        .keys()
        .map(|&si| Ok((parse_date(&q.haystack_dates[si])?, si)))
        .collect::<anyhow::Result<_>>()?;
    sessions.sort();
    let mut memory = String::new();
    for (_, si) in sessions {
        memory.push_str(&format!("\n### Conversation on {}\n", q.haystack_dates[si]));
        for &t in &chosen[&si] {
            let turn = &q.haystack_sessions[si][t];
            memory.push_str(&format!("{}: {}\n", turn.role, turn.content.trim()));
        }
    }
    Ok(vec![
        ChatMessage::new(
            "system",
            format!(
                "You are a helpful assistant with a long-term memory of earlier conversations \
                 with this user. Today is {}. Answer from the memories below; dates tell when \
                 each conversation happened. If they do not contain the answer, say that you \
                 do not know. Answer briefly.\n\n## Memories{memory}",
                q.question_date
            ),
        ),
        ChatMessage::new("user", q.question.clone()),
    ])
}

fn print_table(report: &Map<String, Value>, counts: &BTreeMap<String, usize>) {
    for granularity in ["session", "turn"] {
        let Some(g) = report.get(granularity) else {
            continue;
        };
        println!("\n{granularity} level");
        print!("{:<28} {:>4}", "", "n");
        for k in [1, 5, 10, 50] {
            print!(" {:>9} {:>9}", format!("r_all@{k}"), format!("ndcg@{k}"));
        }
        println!();
        let mut rows: Vec<(&str, &Value)> = vec![("overall", &g["overall"])];
        if let Some(by) = g["by_type"].as_object() {
            rows.extend(by.iter().map(|(t, v)| (t.as_str(), v)));
        }
        for (name, m) in rows {
            print!("{:<28} {:>4}", name, counts.get(name).copied().unwrap_or(0));
            for k in [1, 5, 10, 50] {
                print!(
                    " {:>9.3} {:>9.3}",
                    m[format!("recall_all@{k}")].as_f64().unwrap_or(f64::NAN),
                    m[format!("ndcg_any@{k}")].as_f64().unwrap_or(f64::NAN)
                );
            }
            println!();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse_with_or_without_the_weekday() {
        let t = parse_date("2023/05/30 (Tue) 23:40").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-30T23:40:00+00:00");
        assert_eq!(parse_date("2023/05/30 23:40").unwrap(), t);
        assert!(parse_date("yesterday").is_err());
    }
}
