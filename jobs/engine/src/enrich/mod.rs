//! Enrichment: an asynchronous job that asks an OpenAI-compatible model about what users said,
//! off the ingest path, and publishes what it learns back into the log as events, so that it
//! flows through the dataflow, Lance and recall like everything else and an erase removes it
//! too. Per finished session ([`sessions`]) one request asks for a summary (a `summary` event
//! that `COVERS` the turns), relations (`relation` events with their evidence turns) and the
//! preferences the user stated (`fact` events about the user, attribute `prefers (<topic>)`);
//! [`answer`] reads the model's JSON strictly and rejects what does not hold, with the reason.
//! [`job`] runs it: in `engram serve` while `[enrich]` names a model server, and `engram
//! enrich` for a backlog.

pub mod answer;
pub mod job;
pub mod sessions;

pub use crate::config::EnrichConfig;
use crate::llm::ChatMessage;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system prompt shipped with engram; `{schema}` stands for the JSON schema.
pub const DEFAULT_PROMPT: &str = include_str!("../../enrich/prompt.md");
/// The JSON schema of the answer shipped with engram.
pub const DEFAULT_SCHEMA: &str = include_str!("../../enrich/schema.json");

/// What the job sends: the system prompt with the schema in it, and the schema.
#[derive(Debug, Clone)]
pub struct EnrichPrompt {
    pub system: String,
    pub schema: serde_json::Value,
}

impl EnrichPrompt {
    /// The prompt and schema of `config` (its files, else the shipped ones); a file that cannot
    /// be read, or a schema that is not a JSON object, is an error naming the file.
    pub fn load(config: &EnrichConfig) -> anyhow::Result<Self> {
        let read = |path: &Option<PathBuf>, default: &str| -> anyhow::Result<String> {
            match path {
                Some(p) => std::fs::read_to_string(p)
                    .map_err(|e| anyhow::anyhow!("enrich: cannot read {}: {e}", p.display())),
                None => Ok(default.to_string()),
            }
        };
        let schema_text = read(&config.schema_file, DEFAULT_SCHEMA)?;
        let name = |p: &Option<PathBuf>| {
            p.as_deref()
                .map_or("the shipped schema".into(), |p: &Path| {
                    p.display().to_string()
                })
        };
        let schema: serde_json::Value = serde_json::from_str(&schema_text).map_err(|e| {
            anyhow::anyhow!("enrich: {} is not JSON: {e}", name(&config.schema_file))
        })?;
        if !schema.is_object() {
            anyhow::bail!("enrich: {} is not a JSON object", name(&config.schema_file));
        }
        let system = read(&config.prompt_file, DEFAULT_PROMPT)?.replace("{schema}", &schema_text);
        Ok(EnrichPrompt { system, schema })
    }

    /// The messages asking about `batch`: the system prompt, then the turns, each after its
    /// event id in square brackets, with its date and speaker.
    pub fn messages(&self, batch: &sessions::Batch) -> Vec<ChatMessage> {
        let mut turns = match &batch.session {
            Some(s) => format!("Session {s:?}. The turns, in order:\n"),
            None => "The turns, in order:\n".to_string(),
        };
        for t in &batch.turns {
            let speaker = t.speaker.clone().unwrap_or_else(|| match t.role {
                engram_schemas::Role::User => "user".into(),
                _ => "assistant".into(),
            });
            // the id and speaker are the model's handles: keep them on one line
            let content = t.content.replace(['\n', '\r'], " ");
            turns.push_str(&format!(
                "[{}] {} {}: {}\n",
                t.event_id,
                t.ts.format("%Y-%m-%d %H:%M (%A)"),
                speaker,
                content
            ));
        }
        vec![
            ChatMessage::new("system", self.system.clone()),
            ChatMessage::new("user", turns),
        ]
    }
}

/// What the job has done since the engine started, for `/metrics`.
#[derive(Debug, Default)]
pub struct EnrichStats {
    pub requests: AtomicU64,
    pub failed_requests: AtomicU64,
    pub batches: AtomicU64,
    pub events_published: AtomicU64,
    pub rejected_items: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    /// Cost in millionths of a dollar.
    pub cost_micro_usd: AtomicU64,
    /// The log offset the job has read up to.
    pub read_offset: AtomicU64,
    /// Batches waiting for, or in, a request.
    pub pending_batches: AtomicU64,
    /// 1 while the job runs in `engram serve` (0: off, or restarting after an error).
    pub running: AtomicU64,
}

impl EnrichStats {
    /// `(name, help, value)` of each counter, as `/metrics` shows them.
    pub fn metrics(&self) -> Vec<(&'static str, &'static str, f64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64;
        vec![
            (
                "engram_enrich_requests_total",
                "requests sent to the enrichment model",
                get(&self.requests),
            ),
            (
                "engram_enrich_request_failures_total",
                "enrichment requests that failed (each retry counts)",
                get(&self.failed_requests),
            ),
            (
                "engram_enrich_batches_total",
                "batches of turns the enrichment model answered",
                get(&self.batches),
            ),
            (
                "engram_enrich_events_total",
                "events the enrichment job published",
                get(&self.events_published),
            ),
            (
                "engram_enrich_rejected_items_total",
                "items of the model's answers rejected",
                get(&self.rejected_items),
            ),
            (
                "engram_enrich_prompt_tokens_total",
                "prompt tokens the enrichment model read",
                get(&self.prompt_tokens),
            ),
            (
                "engram_enrich_completion_tokens_total",
                "tokens the enrichment model wrote",
                get(&self.completion_tokens),
            ),
            (
                "engram_enrich_cost_usd_total",
                "what the enrichment requests cost, by the configured prices",
                get(&self.cost_micro_usd) / 1e6,
            ),
            (
                "engram_enrich_read_offset",
                "the log offset the enrichment job has read up to",
                get(&self.read_offset),
            ),
            (
                "engram_enrich_pending_batches",
                "batches waiting for, or in, a request",
                get(&self.pending_batches),
            ),
            (
                "engram_enrich_running",
                "1 while the enrichment job runs (0: off, or restarting after an error)",
                get(&self.running),
            ),
        ]
    }
}
