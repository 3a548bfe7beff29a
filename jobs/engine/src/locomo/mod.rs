//! `engram bench locomo`: each LoCoMo conversation becomes one user's memory, ingested through
//! the same path as `engram serve` (log → dataflow → Lance) and as the LongMemEval job; each
//! question of categories 1–4 is one recall exactly as `POST /v1/recall` performs it
//! ([`Recall::recall`](crate::query::recall::Recall::recall) with a [`RecallRequest`]); a hit
//! is a returned event id among the question's evidence turns. The protocol is the one of
//! `../shared/locomo/README.md`.

pub mod metrics;

use crate::config::Config;
use crate::engine::Engine;
use crate::query::recall::RecallRequest;
use anyhow::Context;
use chrono::{DateTime, NaiveDateTime, TimeZone, Utc};
use engram_schemas::{Body, Event, Header, Interaction, Role};
use metrics::{category_name, evidence_ids, hits_at, Hits, Tally, KS};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::Instant;

/// The tenant every conversation's memory lives in; each conversation is one user.
pub const TENANT: &str = "locomo";

#[derive(Debug, Deserialize)]
pub struct Sample {
    pub sample_id: String,
    /// `speaker_a`, `speaker_b`, `session_N` (turns) and `session_N_date_time`.
    pub conversation: Map<String, Value>,
    pub qa: Vec<Qa>,
}

#[derive(Debug, Deserialize)]
pub struct Qa {
    pub question: String,
    #[serde(default)]
    pub evidence: Vec<String>,
    pub category: u8,
}

#[derive(Debug, Deserialize)]
pub struct Turn {
    pub speaker: String,
    pub dia_id: String,
    pub text: String,
    #[serde(default)]
    pub blip_caption: Option<String>,
}

pub struct BenchOptions {
    pub data: std::path::PathBuf,
    pub json: Option<std::path::PathBuf>,
    /// Write each question's k = 50 results and its evidence ids as JSON lines (error analysis).
    pub dump: Option<std::path::PathBuf>,
    /// The results per question `dump` writes (the k = 50 recall's when 50; otherwise one more
    /// recall at this k, `recall.max_k` raised to it if below).
    pub dump_k: usize,
}

/// "1:56 pm on 8 May, 2023" → UTC.
pub fn parse_date(s: &str) -> anyhow::Result<DateTime<Utc>> {
    let cleaned = s.split_whitespace().collect::<Vec<_>>().join(" ");
    let naive = NaiveDateTime::parse_from_str(&cleaned, "%I:%M %P on %d %B, %Y")
        .or_else(|_| NaiveDateTime::parse_from_str(&cleaned, "%I:%M %p on %d %B, %Y"))
        .with_context(|| format!("unreadable LoCoMo date {s:?}"))?;
    Ok(Utc.from_utc_datetime(&naive))
}

/// The conversation's sessions in order: (N, date-time, turns).
fn sessions(sample: &Sample) -> anyhow::Result<Vec<(u32, DateTime<Utc>, Vec<Turn>)>> {
    let mut out = Vec::new();
    for (key, value) in &sample.conversation {
        let Some(n) = key
            .strip_prefix("session_")
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let date = sample
            .conversation
            .get(&format!("session_{n}_date_time"))
            .and_then(Value::as_str)
            .with_context(|| format!("{}: session_{n} has no date", sample.sample_id))?;
        let turns: Vec<Turn> = serde_json::from_value(value.clone())
            .with_context(|| format!("{}: session_{n}", sample.sample_id))?;
        out.push((n, parse_date(date)?, turns));
    }
    out.sort_by_key(|(n, _, _)| *n);
    Ok(out)
}

/// Every turn of the conversation as an interaction event, as the LoCoMo README says: id
/// `<sample_id>:<dia_id>`, at the session's date-time + 30 s·i, role user for speaker_a and
/// assistant for speaker_b, content "<speaker>: <text>" (+ " [shares a photo: <caption>]").
pub fn conversation_events(sample: &Sample) -> anyhow::Result<Vec<Event>> {
    let speaker = |k: &str| {
        sample
            .conversation
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .with_context(|| format!("{}: no {k}", sample.sample_id))
    };
    let speaker_a = speaker("speaker_a")?;
    let speaker_b = speaker("speaker_b")?;
    let mut events = Vec::new();
    for (n, start, turns) in sessions(sample)? {
        for (i, t) in turns.iter().enumerate() {
            let role = if t.speaker == speaker_a {
                Role::User
            } else if t.speaker == speaker_b {
                Role::Assistant
            } else {
                anyhow::bail!("{}: unknown speaker {:?}", sample.sample_id, t.speaker);
            };
            let mut content = format!("{}: {}", t.speaker, t.text);
            if let Some(caption) = t.blip_caption.as_deref().filter(|c| !c.is_empty()) {
                content.push_str(&format!(" [shares a photo: {caption}]"));
            }
            events.push(Event {
                header: Header {
                    event_id: format!("{}:{}", sample.sample_id, t.dia_id),
                    tenant: TENANT.into(),
                    user: sample.sample_id.clone(),
                    ts: start + chrono::Duration::seconds(30 * i as i64),
                    session: Some(format!("{}:session_{n}", sample.sample_id)),
                },
                body: Body::Interaction(Interaction {
                    role,
                    content,
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

pub async fn run(mut config: Config, opts: BenchOptions) -> anyhow::Result<()> {
    let text =
        std::fs::read(&opts.data).with_context(|| format!("reading {}", opts.data.display()))?;
    let samples: Vec<Sample> = serde_json::from_slice(&text)
        .with_context(|| format!("parsing {}", opts.data.display()))?;
    let temp_dir = tempfile::tempdir()?;
    config.data_dir = temp_dir.path().to_path_buf();
    config.demo = false;
    config.clock = engram_dataflows::EngineClock::Events;
    let mut emb = config.embedder_config();
    emb.cache_entries = 1_000_000;
    config.embedder = Some(emb);
    if opts.dump.is_some() {
        config.recall.max_k = config.recall.max_k.max(opts.dump_k);
    }
    let max_k = config.recall.max_k;
    anyhow::ensure!(
        KS.iter().all(|k| *k <= max_k),
        "recall.max_k {max_k} is below k = {:?}",
        KS
    );
    let engine = Engine::start(config).await?;

    let started = Instant::now();
    let mut turns = 0;
    for sample in &samples {
        let events = conversation_events(sample)?;
        turns += events.len();
        let report =
            engine
                .ingestor
                .ingest_parsed("locomo", events.into_iter().map(Ok).collect(), &[])?;
        anyhow::ensure!(
            report.rejected.is_empty(),
            "{}: rejected {:?}",
            sample.sample_id,
            report.rejected
        );
    }
    engine.wait_caught_up().await;
    let ingest_seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "ingested {} conversations, {turns} turns in {ingest_seconds:.1} s ({:.0} turns/s)",
        samples.len(),
        turns as f64 / ingest_seconds
    );

    let mut groups: BTreeMap<String, Tally> = BTreeMap::new();
    let mut latencies_ms = Vec::new();
    // questions whose k = 50 recall's top 10 is not the k = 10 recall
    let mut top10_differs = 0;
    let mut without_evidence = 0;
    let mut dump = match &opts.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    for sample in &samples {
        for qa in &sample.qa {
            let Some(category) = category_name(qa.category) else {
                continue;
            };
            let evidence = evidence_ids(&sample.sample_id, &qa.evidence);
            if evidence.is_empty() {
                without_evidence += 1;
            }
            let mut ranked_at = vec![Vec::new(); KS.len()];
            // k = 10 first, so that its latency includes embedding the question (the later
            // recalls find the question's vector in the embedder's cache)
            let mut asked: Vec<usize> = (0..KS.len()).collect();
            asked.sort_by_key(|i| KS[*i] != 10);
            for i in asked {
                let k = KS[i];
                let req = RecallRequest {
                    tenant: TENANT.into(),
                    user: sample.sample_id.clone(),
                    query: qa.question.clone(),
                    k: Some(k),
                    as_of: None,
                    include_domain: false,
                    include_archived: false,
                    traversal: None,
                };
                let t = Instant::now();
                let resp = engine.recall.recall(&req).await?;
                if k == 10 {
                    latencies_ms.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                if let (Some(out), 50) = (dump.as_mut(), k) {
                    use std::io::Write;
                    let deeper = if opts.dump_k == 50 {
                        None
                    } else {
                        let req = RecallRequest {
                            k: Some(opts.dump_k),
                            ..req.clone()
                        };
                        Some(engine.recall.recall(&req).await?.results)
                    };
                    let line = json!({
                        "sample_id": sample.sample_id,
                        "question": qa.question,
                        "category": category,
                        "evidence": evidence,
                        "results": deeper.as_ref().unwrap_or(&resp.results),
                    });
                    writeln!(out, "{line}")?;
                }
                ranked_at[i] = resp.results.into_iter().map(|h| h.event_id).collect();
            }
            let i10 = KS
                .iter()
                .position(|k| *k == 10)
                .expect("k = 10 is reported");
            let i50 = KS
                .iter()
                .position(|k| *k == 50)
                .expect("k = 50 is reported");
            if ranked_at[i50].iter().take(10).ne(ranked_at[i10].iter()) {
                top10_differs += 1;
            }
            let per_k: [Hits; KS.len()] =
                std::array::from_fn(|i| hits_at(&ranked_at[i], &evidence, KS[i]));
            groups.entry("overall".into()).or_default().add(&per_k);
            groups.entry(category.into()).or_default().add(&per_k);
        }
    }
    latencies_ms.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if latencies_ms.is_empty() {
            return 0.0;
        }
        let i = ((latencies_ms.len() as f64 * p).ceil() as usize).clamp(1, latencies_ms.len());
        latencies_ms[i - 1]
    };
    let report = report_json(&groups);
    let mut report = report;
    report.insert("conversations".into(), json!(samples.len()));
    report.insert("turns".into(), json!(turns));
    report.insert("ingest_seconds".into(), json!(ingest_seconds));
    report.insert("questions_without_evidence".into(), json!(without_evidence));
    report.insert("top10_of_k50_differs_from_k10".into(), json!(top10_differs));
    report.insert(
        "recall_ms_k10".into(),
        json!({"p50": pct(0.5), "p95": pct(0.95), "max": pct(1.0)}),
    );
    print_table(&groups);
    println!(
        "recall k=10 latency (in process, query embedding included): p50 {:.1} ms, p95 {:.1} ms; \
         top 10 of k=50 differs from k=10 on {top10_differs} questions; \
         {without_evidence} questions without evidence",
        pct(0.5),
        pct(0.95)
    );
    if let Some(path) = &opts.json {
        std::fs::write(path, serde_json::to_vec_pretty(&Value::Object(report))?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    engine.stop().await?;
    Ok(())
}

/// `{"overall": {n, recall_any@k, recall_all@k…}, "by_category": {name: {…}}}`.
fn report_json(groups: &BTreeMap<String, Tally>) -> Map<String, Value> {
    let row = |t: &Tally| {
        let mut m = Map::new();
        m.insert("n".into(), json!(t.questions));
        for (k, (any, all)) in KS.iter().zip(t.means()) {
            m.insert(format!("recall_any@{k}"), json!(any));
            m.insert(format!("recall_all@{k}"), json!(all));
        }
        Value::Object(m)
    };
    let mut report = Map::new();
    let mut by = Map::new();
    for (name, t) in groups {
        if name == "overall" {
            report.insert("overall".into(), row(t));
        } else {
            by.insert(name.clone(), row(t));
        }
    }
    report.insert("by_category".into(), Value::Object(by));
    report
}

fn print_table(groups: &BTreeMap<String, Tally>) {
    print!("{:<12} {:>4}", "", "n");
    for k in KS {
        print!(" {:>9} {:>9}", format!("any@{k}"), format!("all@{k}"));
    }
    println!();
    let order = [
        "overall",
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
    ];
    for name in order {
        let Some(t) = groups.get(name) else { continue };
        print!("{:<12} {:>4}", name, t.questions);
        for (any, all) in t.means() {
            print!(" {any:>9.3} {all:>9.3}");
        }
        println!();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_parse() {
        let t = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-05-08T13:56:00+00:00");
        let t = parse_date("12:48 am on 1 February, 2023").unwrap();
        assert_eq!(t.to_rfc3339(), "2023-02-01T00:48:00+00:00");
        let t = parse_date("11:01 am on 17 December, 2022").unwrap();
        assert_eq!(t.to_rfc3339(), "2022-12-17T11:01:00+00:00");
        assert!(parse_date("yesterday").is_err());
    }

    #[test]
    fn turns_become_events_as_the_readme_says() {
        let sample: Sample = serde_json::from_value(json!({
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bob",
                "session_2_date_time": "7:55 pm on 9 June, 2023",
                "session_2": [{"speaker": "Bob", "dia_id": "D2:1", "text": "Later."}],
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Bob", "dia_id": "D1:1", "text": "Hi Ann!"},
                    {"speaker": "Ann", "dia_id": "D1:2", "text": "Look.",
                     "blip_caption": "a photo of a dog"}
                ]
            },
            "qa": []
        }))
        .unwrap();
        let events = conversation_events(&sample).unwrap();
        let got: Vec<(String, String, String, String, Option<String>)> = events
            .iter()
            .map(|e| {
                let Body::Interaction(i) = &e.body else {
                    panic!()
                };
                (
                    e.header.event_id.clone(),
                    e.header.ts.to_rfc3339(),
                    format!("{:?}", i.role),
                    i.content.clone(),
                    e.header.session.clone(),
                )
            })
            .collect();
        let s1 = Some("conv-x:session_1".to_string());
        let want: Vec<(String, String, String, String, Option<String>)> = vec![
            (
                "conv-x:D1:1".into(),
                "2023-05-08T13:56:00+00:00".into(),
                "Assistant".into(),
                "Bob: Hi Ann!".into(),
                s1.clone(),
            ),
            (
                "conv-x:D1:2".into(),
                "2023-05-08T13:56:30+00:00".into(),
                "User".into(),
                "Ann: Look. [shares a photo: a photo of a dog]".into(),
                s1,
            ),
            (
                "conv-x:D2:1".into(),
                "2023-06-09T19:55:00+00:00".into(),
                "Assistant".into(),
                "Bob: Later.".into(),
                Some("conv-x:session_2".into()),
            ),
        ];
        assert_eq!(got, want);
        assert!(events
            .iter()
            .all(|e| e.header.user == "conv-x" && e.header.tenant == TENANT));
    }
}
