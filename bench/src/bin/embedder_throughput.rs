//! The embedder's throughput on the shipped and the prepared model, and ONNX Runtime's own on
//! the prepared one, in one run on the same sentences.
//!
//!     embedder_throughput [sentences] [rounds] [threads] [batch]
//!
//! Defaults: 3,000 sentences, 2 rounds, 2 intra-op threads, batches of 32. The sentences are
//! real conversation turns: every distinct LoCoMo dev turn (1,451), then distinct LongMemEval
//! dev user turns until there are enough (`ENGRAM_LOCOMO`, `ENGRAM_LONGMEMEVAL` name the files;
//! by default those under /work/shared). Each round runs, one after the other on the same
//! sentences: the shipped model through engram's embedder, the prepared model through engram's
//! embedder, and the prepared model through ONNX Runtime's Python API
//! (`bench/embedder_reference.py`, with the Python packages the set-up script installs, doing
//! the same tokenizing, length sorting and pooling). The machine is shared, so the variants are
//! interleaved and the ratios are what to read. It prints sentences/s per round and variant,
//! the ratios prepared/shipped and engram/ONNX Runtime (best round of each), and the cosine
//! between the shipped and the prepared model's embeddings of each sentence (mean, min), and
//! between engram's and ONNX Runtime's embeddings with the prepared model (they should agree).

use anyhow::Context;
use engram_bench::numeric_args;
use engram_connectors::embedder::{cosine, PREPARED_MODEL, SHIPPED_MODEL};
use engram_connectors::{Embedder, EmbedderConfig};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() -> anyhow::Result<()> {
    let args = numeric_args();
    let count = args.first().copied().unwrap_or(3000);
    let rounds = args.get(1).copied().unwrap_or(2).max(1);
    let threads = args.get(2).copied().unwrap_or(2);
    let batch = args.get(3).copied().unwrap_or(32);
    let models = models_dir();
    let sentences = conversation_turns(count)?;
    let work = tempfile::tempdir()?;
    let sentences_file = work.path().join("sentences.json");
    std::fs::write(&sentences_file, serde_json::to_vec(&sentences)?)?;
    let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
    let mean_chars = refs.iter().map(|s| s.len()).sum::<usize>() as f64 / refs.len() as f64;
    println!(
        "{} sentences (mean {mean_chars:.0} characters), {threads} threads, batches of {batch}",
        refs.len()
    );

    let config = |model: &str| EmbedderConfig {
        model: models.join(model),
        threads,
        batch_size: batch,
        ..EmbedderConfig::from_models_dir(&models)
    };
    let shipped = Embedder::load(&config(SHIPPED_MODEL))?;
    let prepared_config = config(PREPARED_MODEL);
    let prepared = Embedder::load(&prepared_config)?;
    let reference = Reference {
        models: models.clone(),
        config: prepared_config,
        sentences: sentences_file,
        vectors: work.path().join("vectors.f32"),
    };

    let names = [
        "shipped model, engram's embedder",
        "prepared model, engram's embedder",
        "prepared model, onnxruntime (Python)",
    ];
    let mut rates = vec![Vec::new(); names.len()];
    let mut vectors = Vec::new();
    for round in 0..rounds {
        let (shipped_vectors, rate) = timed(|| shipped.embed_uncached(&refs))?;
        rates[0].push(rate);
        let (prepared_vectors, rate) = timed(|| prepared.embed_uncached(&refs))?;
        rates[1].push(rate);
        rates[2].push(reference.run(refs.len())?);
        if round == 0 {
            let reference_vectors = reference.read_vectors(prepared.dim())?;
            vectors = vec![shipped_vectors, prepared_vectors, reference_vectors];
        }
    }

    println!("\n{:<40} {:>14}  {}", "variant", "best sent/s", "rounds");
    let best: Vec<f64> = rates
        .iter()
        .map(|r| r.iter().copied().fold(0.0, f64::max))
        .collect();
    for ((name, r), b) in names.iter().zip(&rates).zip(&best) {
        let each: Vec<String> = r.iter().map(|x| format!("{x:.0}")).collect();
        println!("{name:<40} {b:>14.0}  {}", each.join(", "));
    }
    println!(
        "\nprepared / shipped, through engram's embedder: {:.2}x (goal >= 1.5)",
        best[1] / best[0]
    );
    println!(
        "engram's embedder / onnxruntime, prepared model: {:.0}% (goal >= 90%)",
        100.0 * best[1] / best[2]
    );
    let (mean, min) = cosine_stats(&vectors[0], &vectors[1]);
    println!("cosine shipped vs prepared: mean {mean:.4} (goal >= 0.99), min {min:.4}");
    let (mean, min) = cosine_stats(&vectors[1], &vectors[2]);
    println!("cosine engram vs onnxruntime, prepared model: mean {mean:.5}, min {min:.5}");
    Ok(())
}

/// Sentences per second of one call.
fn timed(
    embed: impl FnOnce() -> Result<Vec<Vec<f32>>, engram_connectors::EmbedderError>,
) -> anyhow::Result<(Vec<Vec<f32>>, f64)> {
    let started = Instant::now();
    let vectors = embed()?;
    let rate = vectors.len() as f64 / started.elapsed().as_secs_f64();
    Ok((vectors, rate))
}

fn cosine_stats(a: &[Vec<f32>], b: &[Vec<f32>]) -> (f64, f64) {
    let cosines: Vec<f64> = a.iter().zip(b).map(|(x, y)| cosine(x, y) as f64).collect();
    let mean = cosines.iter().sum::<f64>() / cosines.len() as f64;
    (mean, cosines.iter().copied().fold(f64::INFINITY, f64::min))
}

/// `bench/embedder_reference.py` run on one model with the embedder's settings.
struct Reference {
    models: PathBuf,
    config: EmbedderConfig,
    sentences: PathBuf,
    vectors: PathBuf,
}

impl Reference {
    /// Runs the script once; its sentences per second (its own timing, Python's start and the
    /// session creation excluded).
    fn run(&self, sentences: usize) -> anyhow::Result<f64> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("embedder_reference.py");
        let python_path = format!(
            "{}:{}",
            self.models.join("ortpy").display(),
            self.models.join("pyref").display()
        );
        let out = std::process::Command::new("python3")
            .env("PYTHONPATH", python_path)
            .arg(&script)
            .arg("--model")
            .arg(&self.config.model)
            .arg("--tokenizer")
            .arg(&self.config.tokenizer)
            .arg("--sentences")
            .arg(&self.sentences)
            .args(["--threads", &self.config.threads.to_string()])
            .args(["--batch", &self.config.batch_size.to_string()])
            .args(["--max-tokens", &self.config.max_tokens.to_string()])
            .arg("--vectors")
            .arg(&self.vectors)
            .output()
            .context("running python3 bench/embedder_reference.py")?;
        anyhow::ensure!(
            out.status.success(),
            "bench/embedder_reference.py failed (run scripts/setup): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        let seconds = report["seconds"].as_f64().context("no seconds")?;
        anyhow::ensure!(report["sentences"].as_u64() == Some(sentences as u64));
        Ok(sentences as f64 / seconds)
    }

    /// The vectors of its last run, one per sentence.
    fn read_vectors(&self, dim: usize) -> anyhow::Result<Vec<Vec<f32>>> {
        let bytes = std::fs::read(&self.vectors)?;
        let floats: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        Ok(floats.chunks(dim).map(<[f32]>::to_vec).collect())
    }
}

/// Up to `count` distinct conversation turns: LoCoMo dev's, then LongMemEval dev's user turns.
fn conversation_turns(count: usize) -> anyhow::Result<Vec<String>> {
    let shared = |var: &str, default: &str| {
        std::env::var(var).map_or_else(|_| PathBuf::from(default), PathBuf::from)
    };
    let read = |path: PathBuf| -> anyhow::Result<serde_json::Value> {
        let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        Ok(serde_json::from_slice(&text)?)
    };
    let locomo = read(shared(
        "ENGRAM_LOCOMO",
        "/work/shared/locomo/locomo_dev.json",
    ))?;
    let longmemeval = read(shared(
        "ENGRAM_LONGMEMEVAL",
        "/work/shared/longmemeval/longmemeval_s_dev.json",
    ))?;
    let mut turns: Vec<&str> = Vec::new();
    for sample in locomo.as_array().into_iter().flatten() {
        for session in sample["conversation"].as_object().into_iter().flatten() {
            for turn in session.1.as_array().into_iter().flatten() {
                turns.extend(turn["text"].as_str());
            }
        }
    }
    for question in longmemeval.as_array().into_iter().flatten() {
        for session in question["haystack_sessions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            for turn in session.as_array().into_iter().flatten() {
                if turn["role"] == "user" {
                    turns.extend(turn["content"].as_str());
                }
            }
        }
    }
    let mut seen = HashSet::new();
    let distinct: Vec<String> = turns
        .into_iter()
        .filter(|t| !t.trim().is_empty() && seen.insert(*t))
        .take(count)
        .map(str::to_string)
        .collect();
    anyhow::ensure!(!distinct.is_empty(), "no conversation turns found");
    Ok(distinct)
}

fn models_dir() -> PathBuf {
    std::env::var("ENGRAM_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/engram/models")
        })
}
