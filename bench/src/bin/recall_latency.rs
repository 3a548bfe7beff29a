//! Recall latency over N episodes (default 10,000) and embedding throughput, in one run.
//!
//!     recall_latency [episodes] [users] [queries] [distinct_texts]
//!
//! Prints p50/p95/p99 of: the whole recall (query embedding + vector + full-text + fusion), the
//! search alone (query pre-embedded), and the embedder's throughput on the same machine.
//! Embedding a million texts would take hours here, so at most `distinct_texts` (default
//! 20,000) sentences are embedded; episode i is sentence i mod that with its own words added
//! ("note i") and its vector with a little noise of its own, so no two rows are the same.
//!
//! With `ENGRAM_BENCH_DIR` set, the table is kept in that folder, and a later run with the same
//! arguments searches it again instead of loading it anew (a million rows take ten minutes).

use engram_bench::{numeric_args, percentile, question, sentence};
use engram_connectors::{Embedder, EmbedderConfig, EpisodeRow, EpisodeStore, IndexPolicy};
use engram_dataflows::SharedViews;
use engram_engine::config::RecallConfig;
use engram_engine::query::recall::{Recall, RecallRequest};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::sync::Arc;
use std::time::Instant;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = numeric_args();
    let episodes = args.first().copied().unwrap_or(10_000);
    let users = args.get(1).copied().unwrap_or(20);
    let queries = args.get(2).copied().unwrap_or(300);
    let distinct = args.get(3).copied().unwrap_or(20_000).min(episodes).max(1);
    let embedder = Arc::new(Embedder::load(&EmbedderConfig::from_models_dir(
        &models_dir(),
    ))?);
    let mut rng = StdRng::seed_from_u64(11);

    let texts: Vec<String> = (0..distinct).map(|_| sentence(&mut rng)).collect();
    let t = Instant::now();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder.embed("bench", &refs)?;
    let embed_secs = t.elapsed().as_secs_f64();
    println!(
        "embedding: {} sentences in {:.1} s = {:.0} sentences/s",
        distinct,
        embed_secs,
        distinct as f64 / embed_secs
    );

    let temporary = tempfile::tempdir()?;
    let table = match std::env::var_os("ENGRAM_BENCH_DIR") {
        Some(kept) => std::path::PathBuf::from(kept)
            .join(format!("recall-{episodes}-{users}-{distinct}"))
            .join("episodes.lance"),
        None => temporary.path().join("episodes.lance"),
    };
    let policy = IndexPolicy::default();
    let store = Arc::new(EpisodeStore::open(&table, embedder.dim(), policy.clone()).await?);
    let kept = store.row_count();
    anyhow::ensure!(
        kept == 0 || kept == episodes,
        "{} holds {kept} rows, not {episodes}: remove it to load anew",
        table.display()
    );
    load_episodes(&store, kept, episodes, users, &texts, &vectors, &mut rng).await?;

    let t = Instant::now();
    let warmed = store.warm_vector_cache().await?;
    println!(
        "vector cache: {warmed} users' vectors loaded in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let recall = Recall {
        store: store.clone(),
        passages: None,
        facts: None,
        summaries: None,
        embedder: embedder.clone(),
        views: Arc::new(SharedViews::default()),
        config: RecallConfig::default(),
        speakers: Default::default(),
        analysed: Default::default(),
        embedding_calls: Default::default(),
    };
    let qs = questions(queries, users);
    let ask = |user: &str, q: &str| RecallRequest {
        tenant: "bench".into(),
        user: user.to_string(),
        query: q.to_string(),
        k: Some(10),
        as_of: None,
        include_domain: false,
        include_archived: false,
        traversal: None,
    };
    // warm-up: caches and index files
    for (user, q) in qs.iter().take(10) {
        recall.recall(&ask(user, q)).await?;
    }
    let mut full = Vec::new();
    for (user, q) in &qs {
        let t = Instant::now();
        let r = recall.recall(&ask(user, q)).await?;
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(!r.results.is_empty());
    }
    let qvecs = embedder.embed(
        "bench",
        &qs.iter().map(|(_, q)| q.as_str()).collect::<Vec<_>>(),
    )?;
    let mut search = Vec::new();
    for ((user, q), v) in qs.iter().zip(&qvecs) {
        let t = Instant::now();
        let fused = recall
            .fused_candidates_for(
                "bench",
                user,
                q,
                v.clone(),
                None,
                40,
                None,
                false,
                &Default::default(),
                &Default::default(),
            )
            .await?;
        search.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(!fused.is_empty());
    }
    // Each search alone, to show where the time goes.
    let (mut vector_only, mut text_only) = (Vec::new(), Vec::new());
    for ((user, q), v) in qs.iter().zip(&qvecs) {
        let t = Instant::now();
        store.search_vector("bench", user, v, 40, None).await?;
        vector_only.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        store.search_text("bench", user, q, 40, None).await?;
        text_only.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    print_exact_search_agreement(&table, embedder.dim(), &policy, &store, &qs, &qvecs).await?;
    println!(
        "  vector search alone: p50 {:.2} ms  p95 {:.2} ms; full-text alone: p50 {:.2} ms  p95 {:.2} ms",
        percentile(&mut vector_only, 50.0), percentile(&mut vector_only, 95.0),
        percentile(&mut text_only, 50.0), percentile(&mut text_only, 95.0),
    );
    println!(
        "recall over {episodes} episodes ({users} users), {queries} queries, k=10:\n  with query embedding: p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms\n  search + fusion only: p50 {:.2} ms  p95 {:.2} ms  p99 {:.2} ms",
        percentile(&mut full, 50.0), percentile(&mut full, 95.0), percentile(&mut full, 99.0),
        percentile(&mut search, 50.0), percentile(&mut search, 95.0), percentile(&mut search, 99.0),
    );
    Ok(())
}

/// `ENGRAM_MODELS_DIR`, else `~/.cache/engram/models`.
fn models_dir() -> std::path::PathBuf {
    std::env::var("ENGRAM_MODELS_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/engram/models")
        })
}

/// Appends `episodes` rows to `store`, unless it `kept` them from an earlier run: episode i is
/// text i mod `texts.len()` with its own words added, and its vector, with noise of its own
/// past the first `texts.len()`; spread over `users` users in sessions of 25.
async fn load_episodes(
    store: &EpisodeStore,
    kept: usize,
    episodes: usize,
    users: usize,
    texts: &[String],
    vectors: &[Vec<f32>],
    rng: &mut StdRng,
) -> anyhow::Result<()> {
    let distinct = texts.len();
    let t = Instant::now();
    let mut appended = kept;
    let mut rows = Vec::with_capacity(8192);
    for i in (0..episodes).filter(|_| kept == 0) {
        let text = format!("{} (note {i})", texts[i % distinct]);
        let mut vector = vectors[i % distinct].clone();
        if i >= distinct {
            for x in vector.iter_mut() {
                *x += rng.gen_range(-0.02..0.02);
            }
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        rows.push(EpisodeRow {
            id: format!("ep-{i}"),
            event_id: format!("e-{i}"),
            tenant: "bench".into(),
            user: format!("user{}", i % users),
            session: Some(format!("s{}", i / 25)),
            role: "user".into(),
            content: text,
            ts: chrono::DateTime::from_timestamp(1_700_000_000 + i as i64 * 60, 0).unwrap(),
            turn: None,
            importance: None,
            log_offset: i as u64,
            vector,
        });
        if rows.len() == 8192 || i + 1 == episodes {
            appended += store.append(std::mem::take(&mut rows)).await?;
        }
    }
    assert_eq!(appended, episodes);
    if kept == 0 {
        println!(
            "lance: {} episodes appended and indexed in {:.1} s",
            episodes,
            t.elapsed().as_secs_f64()
        );
    } else {
        println!("lance: {kept} episodes kept from an earlier run");
    }
    Ok(())
}

/// `n` questions, each of a random one of `users` users. They draw from their own generator,
/// so a run on a kept table asks the same questions.
fn questions(n: usize, users: usize) -> Vec<(String, String)> {
    let mut rng = StdRng::seed_from_u64(12);
    (0..n)
        .map(|_| {
            (
                format!("user{}", rng.gen_range(0..users)),
                question(&mut rng),
            )
        })
        .collect()
}

/// Prints how many of the exact 10 nearest the store's vector search finds, over the first 100
/// questions, and how long the exact search takes (`table` opened again, with vectors of `dim`
/// dimensions).
async fn print_exact_search_agreement(
    table: &std::path::Path,
    dim: usize,
    policy: &IndexPolicy,
    store: &EpisodeStore,
    qs: &[(String, String)],
    qvecs: &[Vec<f32>],
) -> anyhow::Result<()> {
    // How many of the exact 10 nearest the store's search finds (the same rows read through
    // a second handle that always searches exactly).
    let exact = EpisodeStore::open(
        table,
        dim,
        IndexPolicy {
            exact_search_below_user_rows: usize::MAX,
            vector_cache_mib: 0, // Lance's own exact search
            ..policy.clone()
        },
    )
    .await?;
    let (mut found, mut wanted) = (0usize, 0usize);
    let mut exact_only = Vec::new();
    for ((user, _), v) in qs.iter().zip(qvecs).take(100) {
        let t = Instant::now();
        let truth: std::collections::HashSet<String> = exact
            .search_vector("bench", user, v, 10, None)
            .await?
            .into_iter()
            .map(|h| h.episode.id)
            .collect();
        exact_only.push(t.elapsed().as_secs_f64() * 1000.0);
        let got = store.search_vector("bench", user, v, 10, None).await?;
        found += got.iter().filter(|h| truth.contains(&h.episode.id)).count();
        wanted += truth.len();
    }
    println!(
        "  vector search recall@10 against exact search: {:.3}; exact search alone: p50 {:.2} ms  p95 {:.2} ms",
        found as f64 / wanted.max(1) as f64,
        percentile(&mut exact_only, 50.0),
        percentile(&mut exact_only, 95.0),
    );
    Ok(())
}
