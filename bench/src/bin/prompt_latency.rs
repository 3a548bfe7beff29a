//! Prompt assembly latency, in one run: the real engine (embedded log, dataflow, Lance,
//! embedder, Qwen3 tokenizer) over users with conversations, facts, session summaries and
//! corrections (three similar ones over days per user, so each has an active preference and
//! few-shot examples).
//!
//!     prompt_latency [users] [turns_per_user] [prompts] [budget_tokens]
//!
//! Prints p50/p95/p99 of `/v1/prompt`'s work (`Engine::assemble_prompt`), of the recall inside
//! it, and the prompt sizes, measured in the same run.

use engram_bench::{numeric_args, percentile, question, sentence};
use engram_engine::prompt::PromptRequest;
use engram_engine::{Config, Engine};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = numeric_args();
    let users = args.first().copied().unwrap_or(20);
    let turns = args.get(1).copied().unwrap_or(100);
    let prompts = args.get(2).copied().unwrap_or(300);
    let budget = args.get(3).copied().unwrap_or(4096);
    let dir = tempfile::tempdir()?;
    let mut config = Config::load(None)?;
    config.data_dir = dir.path().to_path_buf();
    config.demo = false;
    let engine = Engine::start(config).await?;

    let mut rng = StdRng::seed_from_u64(3);
    let now = chrono::Utc::now();
    let mut events = Vec::new();
    for u in 0..users {
        let user = format!("user{u}");
        for t in 0..turns {
            let ts = now - chrono::Duration::minutes(((turns - t) * 30) as i64);
            events.push(json!({"kind": "interaction", "event_id": format!("{user}-{t}"),
                "tenant": "bench", "user": user, "session": format!("s{}", t / 20), "ts": ts,
                "role": if t % 2 == 0 { "user" } else { "assistant" }, "content": sentence(&mut rng)}));
        }
        events.push(
            json!({"kind": "fact", "event_id": format!("{user}-f"), "tenant": "bench",
            "user": user, "ts": now, "subject": "user", "attribute": "city", "value": "Lisbon"}),
        );
        // a reflection's summary of each session
        for session in 0..turns.div_ceil(20) {
            let covers: Vec<String> = (session * 20..(session * 20 + 20).min(turns))
                .map(|t| format!("{user}-{t}"))
                .collect();
            events.push(
                json!({"kind": "summary", "event_id": format!("{user}-sum{session}"),
                "tenant": "bench", "user": user, "ts": now,
                "content": format!("In this session: {}", sentence(&mut rng)), "covers": covers}),
            );
        }
        for (i, days) in [5, 3, 1].into_iter().enumerate() {
            events.push(
                json!({"kind": "correction", "event_id": format!("{user}-c{i}"),
                "tenant": "bench", "user": user, "session": "s0",
                "ts": now - chrono::Duration::days(days), "target_event_id": format!("{user}-1"),
                "correction_type": "LENGTH", "original": sentence(&mut rng),
                "corrected": "Shorter.", "expected_behavior": "Keep answers short."}),
            );
        }
    }
    let t = Instant::now();
    for chunk in events.chunks(1000) {
        let report = engine
            .ingestor
            .ingest_body("bench", &serde_json::to_vec(chunk)?)?;
        anyhow::ensure!(report.rejected.is_empty(), "{:?}", report.rejected);
    }
    engine.wait_caught_up().await;
    println!(
        "ingested {} events ({users} users × {turns} turns) in {:.1} s",
        events.len(),
        t.elapsed().as_secs_f64()
    );

    let requests: Vec<PromptRequest> = (0..prompts)
        .map(|i| PromptRequest {
            tenant: "bench".into(),
            user: format!("user{}", rng.gen_range(0..users)),
            session: Some(format!("s{}", rng.gen_range(0..(turns / 20).max(1)))),
            // each query distinct, so none is served from the embedding cache when it comes in
            query: format!("{} (question {i})", question(&mut rng)),
            context: None,
            skill_id: None,
            budget_tokens: Some(budget),
            as_of: None,
            seed: Some(i as u64),
            enable_thinking: None,
            situation: None,
        })
        .collect();
    for r in requests.iter().take(10) {
        engine.assemble_prompt(r).await?; // warm-up
    }
    let (mut total, mut tokens, mut prefs, mut summaries) = (Vec::new(), Vec::new(), 0, 0);
    for r in &requests {
        let t = Instant::now();
        let p = engine.assemble_prompt(r).await?;
        total.push(t.elapsed().as_secs_f64() * 1000.0);
        tokens.push(p.tokens.total as f64);
        prefs += p.provenance.preferences.len();
        summaries += p.provenance.summaries.len();
    }
    let mut recall = Vec::new();
    for r in &requests {
        let req = engram_engine::query::recall::RecallRequest {
            tenant: r.tenant.clone(),
            user: r.user.clone(),
            query: r.query.clone(),
            k: Some(engine.config.prompt.memories),
            as_of: None,
            include_domain: true,
            include_archived: false,
            traversal: None,
        };
        let t = Instant::now();
        engine.recall.recall(&req).await?;
        recall.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "prompt assembly, {prompts} prompts, budget {budget} tokens ({:.0} tokens on average, {:.2} preferences and {:.2} summaries each):\n  assemble: p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms\n  of which recall (alone): p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms",
        tokens.iter().sum::<f64>() / tokens.len() as f64,
        prefs as f64 / prompts as f64,
        summaries as f64 / prompts as f64,
        percentile(&mut total, 50.0), percentile(&mut total, 95.0), percentile(&mut total, 99.0),
        percentile(&mut recall, 50.0), percentile(&mut recall, 95.0), percentile(&mut recall, 99.0),
    );
    engine.stop().await?;
    tokio::time::sleep(Duration::from_millis(10)).await;
    Ok(())
}
