//! Configuration: defaults, then a TOML file, then `ENGRAM_*` environment variables, then
//! command-line flags (each overriding the one before).

use engram_connectors::kafka::KafkaConfig;
use engram_connectors::{EmbedderConfig, IndexPolicy};
use engram_dataflows::{EngineClock, HierarchyParams, RetentionParams, SkillParams};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

mod traversal;
pub use traversal::{EdgeKind, TraversalConfig, TraversalRequest, VertexKind, Walk};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the embedded log, the reject log and the Lance datasets live.
    pub data_dir: PathBuf,
    /// HTTP listen address.
    pub http_addr: SocketAddr,
    /// Timely workers.
    pub workers: usize,
    /// Most threads the server's blocking pool keeps (Lance's file reads, the embedder's calls,
    /// event appends). Tokio's default, 512, let the pool grow to hundreds of mostly idle threads
    /// under a mixed load, and memory the allocator had handed to an idle thread stayed with it:
    /// the soak's server reached 5.4 GiB in ten minutes, against 1.1 GiB with 32, at similar
    /// latencies (docs/benchmarks.md, the soak).
    pub blocking_threads: usize,
    /// Folder the set-up script fills with the ONNX Runtime library, model and tokenizer.
    pub models_dir: PathBuf,
    /// Explicit embedder paths; when absent they are derived from `models_dir`.
    pub embedder: Option<EmbedderConfig>,
    /// Load the bundled demo conversation on start (idempotent: its event ids are fixed).
    pub demo: bool,
    pub index: IndexPolicy,
    pub recall: RecallConfig,
    pub passages: PassageConfig,
    /// What moves engine time, by which preferences decay: `wall` (serving) or `events` (the
    /// latest event time read; `replay` and the benchmarks always use it).
    pub clock: EngineClock,
    /// The Kafka source (off while `kafka.brokers` is empty).
    pub kafka: KafkaConfig,
    /// Key of the admin API (`/v1/admin/…`: create tenants, issue and revoke their keys); the
    /// admin API is off while it is unset. Prefer `ENGRAM_ADMIN_KEY` to writing it in a file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_key: Option<String>,
    pub prompt: PromptConfig,
    /// The OpenAI-compatible chat server `/v1/chat` forwards prompts to.
    pub llm: LlmConfig,
    /// The asynchronous enrichment job (on when a model server is configured).
    pub enrich: EnrichConfig,
    /// When a team, and an organisation, hold a preference their members hold.
    pub hierarchy: HierarchyParams,
    /// How skill feedback is weighed: `skills.feedback_half_life_days` discounts old votes.
    pub skills: SkillParams,
    /// How a correction's raw multimodal `signals` fuse into its confidence.
    pub fusion: FusionConfig,
    /// How memories (episodes, facts, summaries) fade and are archived.
    pub retention: RetentionParams,
    pub log: LogConfig,
    /// Bounds on what clients may take of the HTTP server: per-tenant rates, timeouts, caps on
    /// connections and dashboard streams.
    pub limits: LimitsConfig,
}

/// Modality weights wᵢ of the confidence fusion C = Σ wᵢ·cᵢ·aᵢ (SPEC §4.6) for corrections
/// that carry raw `signals` instead of a confidence, and the floor below which a correction is
/// held for clarification instead of learned from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FusionConfig {
    pub voice: f64,
    pub screen: f64,
    pub video: f64,
    /// Any other modality name.
    pub other: f64,
    /// A correction whose confidence (stated or fused) is below this is held as needing
    /// clarification: never clustered, asked about in the next prompts of its session.
    pub clarify_below: f64,
}

impl Default for FusionConfig {
    fn default() -> Self {
        let w = engram_operators::math::fusion::ModalityWeights::default();
        FusionConfig {
            voice: w.voice,
            screen: w.screen,
            video: w.video,
            other: w.other,
            clarify_below: engram_dataflows::input::DEFAULT_CLARIFY_BELOW,
        }
    }
}

impl FusionConfig {
    /// What the log source reads corrections' confidence with.
    pub fn confidence(&self) -> engram_dataflows::input::CorrectionConfidence {
        engram_dataflows::input::CorrectionConfidence {
            weights: engram_operators::math::fusion::ModalityWeights {
                voice: self.voice,
                screen: self.screen,
                video: self.video,
                other: self.other,
            },
            clarify_below: self.clarify_below,
        }
    }
}

/// Bounds on the HTTP server's resources. For each rate, `0` turns it off.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Requests a second per tenant (every request with a tenant key; admin-key requests are
    /// not limited): beyond, `429` with `Retry-After`.
    pub requests_per_s: u64,
    /// Events a second per tenant, in `POST /v1/events` bodies (each element of an array) and
    /// from Kafka (each message): one budget for both routes.
    pub events_per_s: u64,
    /// Request body bytes, and Kafka message bytes, a second per tenant.
    pub bytes_per_s: u64,
    /// Each per-tenant bucket holds this many seconds of its rate (the burst a quiet tenant may
    /// send at once; at least one unit).
    pub burst_s: f64,
    /// A request's head must arrive within this many seconds of the server starting to wait for
    /// it (on a new connection, or on a kept-alive one after its last answer): a client that
    /// never finishes its headers is disconnected. `0`: no bound.
    pub header_read_timeout_s: u64,
    /// A request body (of a tenant route) that pauses this many seconds between two pieces is
    /// refused (`408`). `0`: no bound. (A kept-alive connection waiting for its next request
    /// is bounded by `header_read_timeout_s`: the wait counts as reading that request's head.)
    pub idle_timeout_s: u64,
    /// A write to a client that has made no progress for this many seconds (the client stopped
    /// reading: a stalled dashboard stream, pipelined requests whose answers are never read)
    /// ends the connection, so it cannot hold a connection slot and its buffers forever. `0`:
    /// no bound.
    pub write_timeout_s: u64,
    /// Connections served at once; further ones wait, unaccepted, until one closes. `0`: no cap.
    pub max_connections: usize,
    /// Open dashboard streams (`GET /v1/dashboard/stream`) per tenant; beyond, `429`. `0`: no cap.
    pub dashboard_streams_per_tenant: usize,
    /// Open dashboard streams in all; beyond, `429`. `0`: no cap.
    pub dashboard_streams: usize,
    /// Events accepted and not yet recallable (the ingest backlog) from which writers are
    /// pushed back: `POST /v1/events`, `/v1/feedback`, `/v1/chat` and rectifications answer
    /// `429` with `Retry-After`, and Kafka consumers take no more messages, until the backlog
    /// falls to half of this. `0`: never.
    pub max_backlog_events: u64,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        LimitsConfig {
            requests_per_s: 2000,
            events_per_s: 20_000,
            bytes_per_s: 64 << 20,
            burst_s: 1.0,
            header_read_timeout_s: 10,
            idle_timeout_s: 60,
            write_timeout_s: 30,
            max_connections: 1024,
            dashboard_streams_per_tenant: 16,
            dashboard_streams: 256,
            // about half a minute of the embedder's pace on two cores
            max_backlog_events: 10_000,
        }
    }
}

/// The embedded log, the write-ahead buffer in front of the Lance `events` table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// Once this many bytes of the log file are in the `events` table and read by the views,
    /// they leave the file (reads below it go to the table). `0` keeps everything in the file.
    pub discard_after_bytes: u64,
    /// Events dated more than this many seconds after the server's clock are rejected (field
    /// `ts`); `0` accepts any date.
    pub max_future_skew_s: u64,
    /// Each reject file (one per tenant, and `_unknown`) is rotated before a record would take
    /// it past this many bytes.
    pub reject_max_bytes: u64,
    /// Rotated reject files kept per tenant (older ones are deleted); `0` keeps none.
    pub reject_keep_files: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            discard_after_bytes: 64 << 20,
            max_future_skew_s: 300,
            reject_max_bytes: 16 << 20,
            reject_keep_files: 3,
        }
    }
}

/// Prompt assembly (`/v1/prompt`, `/v1/chat`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PromptConfig {
    /// The procedural memory at the top of every system message.
    pub persona: String,
    /// Budget of a prompt whose request names none, in Qwen3 tokens.
    pub default_budget_tokens: usize,
    pub max_budget_tokens: usize,
    /// Preferences below this confidence are not instructions.
    pub min_preference_confidence: f64,
    /// Few-shot correction examples, at most.
    pub few_shot: usize,
    /// Episodes recalled into the memory part, at most.
    pub memories: usize,
    /// Current facts in the memory part, at most.
    pub facts: usize,
    /// Characters of one recalled episode shown, at most.
    pub max_memory_chars: usize,
    /// The session's last turns shown verbatim.
    pub recent_turns: usize,
    /// How long a prompt waits for what was accepted before it to reach the views and Lance.
    pub consistency_wait_ms: u64,
    /// Recall the tenant's domain-wide memories (those of user `_domain`) into prompts too.
    pub domain_memories: bool,
    /// The operator's default preferences for every tenant and user, worded as instructions;
    /// any preference of the user, their team or organisation on the same aspect replaces one.
    pub global_preferences: Vec<String>,
    /// Post-process answers relayed by `/v1/chat` and `/v1/chat/completions` (streamed ones a
    /// paragraph at a time) by the active preferences a rule can follow: no emoji, prose for
    /// bullets, no bold or headings or markdown, no "sir", metric or imperial units.
    pub answer_transforms: bool,
}

impl Default for PromptConfig {
    fn default() -> Self {
        PromptConfig {
            persona: "You are a helpful assistant with a long-term memory of this user. Use what \
                      you remember when it helps, and follow the user's preferences."
                .into(),
            default_budget_tokens: 4096,
            max_budget_tokens: 131_072,
            min_preference_confidence: 0.75,
            few_shot: 4,
            memories: 12,
            facts: 20,
            max_memory_chars: 1200,
            recent_turns: 6,
            consistency_wait_ms: 2000,
            domain_memories: true,
            global_preferences: Vec::new(),
            answer_transforms: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Base URL (e.g. `http://127.0.0.1:8000/v1`); `/v1/chat` answers 503 while unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub model: String,
    pub timeout_secs: u64,
    /// Largest answer, in tokens (`max_tokens`).
    pub max_tokens: u32,
}

impl Default for LlmConfig {
    fn default() -> Self {
        LlmConfig {
            url: None,
            model: "Qwen/Qwen3-8B".into(),
            timeout_secs: 120,
            max_tokens: 1024,
        }
    }
}

/// The enrichment job: which model server it asks, how it batches and retries.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EnrichConfig {
    /// The model server's base URL; unset, the job is off (it may name the same server as
    /// `llm.url`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The model asked; unset, `llm.model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Off turns the job off even with a model server configured.
    pub enabled: bool,
    /// A session nothing was added to for this long is finished and sent.
    pub session_idle_secs: u64,
    /// Most turns one request carries (a longer session goes in several).
    pub max_turns_per_request: usize,
    /// Requests to the model server at once.
    pub concurrency: usize,
    /// Retries of a request the server failed (connection, 408, 429, 5xx), with doubling waits from
    /// 1 s; after them the batch waits `retry_after_secs` (doubling, at most an hour) and is
    /// asked again: nothing is dropped because the server is down.
    pub retries: u32,
    pub retry_after_secs: u64,
    pub timeout_secs: u64,
    /// Largest answer, in tokens.
    pub max_tokens: u32,
    /// A file holding the system prompt (`{schema}` is replaced by the schema); unset, the
    /// shipped one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt_file: Option<PathBuf>,
    /// A file holding the JSON schema of the answer; unset, the shipped one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_file: Option<PathBuf>,
    /// Send the schema as `response_format` (servers that support it keep to it).
    pub constrain_output: bool,
    /// Dollars per million prompt and answer tokens, for the cost counter in `/metrics`.
    pub prompt_usd_per_mtok: f64,
    pub completion_usd_per_mtok: f64,
}

impl Default for EnrichConfig {
    fn default() -> Self {
        EnrichConfig {
            url: None,
            model: None,
            enabled: true,
            session_idle_secs: 1_800,
            max_turns_per_request: 60,
            concurrency: 2,
            retries: 3,
            retry_after_secs: 30,
            timeout_secs: 120,
            max_tokens: 2_048,
            prompt_file: None,
            schema_file: None,
            constrain_output: true,
            prompt_usd_per_mtok: 0.0,
            completion_usd_per_mtok: 0.0,
        }
    }
}

/// The environment variables of `[limits]`, one per key: `ENGRAM_LIMIT_` and the key in capitals.
pub const LIMITS_ENV: [&str; 11] = [
    "ENGRAM_LIMIT_REQUESTS_PER_S",
    "ENGRAM_LIMIT_EVENTS_PER_S",
    "ENGRAM_LIMIT_BYTES_PER_S",
    "ENGRAM_LIMIT_BURST_S",
    "ENGRAM_LIMIT_HEADER_READ_TIMEOUT_S",
    "ENGRAM_LIMIT_IDLE_TIMEOUT_S",
    "ENGRAM_LIMIT_WRITE_TIMEOUT_S",
    "ENGRAM_LIMIT_MAX_CONNECTIONS",
    "ENGRAM_LIMIT_DASHBOARD_STREAMS_PER_TENANT",
    "ENGRAM_LIMIT_DASHBOARD_STREAMS",
    "ENGRAM_LIMIT_MAX_BACKLOG_EVENTS",
];

/// Texts whose vectors `serve` keeps (about 1.6 KiB each).
pub const SERVE_EMBEDDING_CACHE: usize = 20_000;

/// Sentences of long episodes embedded on their own (see `passages.rs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PassageConfig {
    pub enabled: bool,
    /// Roles whose episodes get passages (what the user said is what memory is asked about).
    pub roles: Vec<String>,
    /// The most passages one episode gets.
    pub max_per_episode: usize,
}

impl Default for PassageConfig {
    fn default() -> Self {
        PassageConfig {
            enabled: true,
            roles: vec!["user".into()],
            max_per_episode: 16,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecallConfig {
    /// Results when a request gives no `k`.
    pub default_k: usize,
    /// The largest `k` a request may ask for.
    pub max_k: usize,
    /// Candidates taken from each retriever before fusion, as a multiple of `k`.
    pub candidates_per_k: usize,
    /// A user with at most this many episodes has every turn scored (so every turn's
    /// neighbours and session are known, and BM25 uses that user's own statistics).
    pub scored_turns: usize,
    /// For a larger user, the turns scored are the union of each search's best
    /// `candidate_depth` (at least `candidates_per_k · k`): on LoCoMo 200 scored as well as
    /// all of them.
    pub candidate_depth: usize,
    /// Reciprocal-rank-fusion constant.
    pub rrf_k: f32,
    /// Graph expansion's limits: neighbours per query entity (0 turns it off), path depth
    /// and the entity kinds it may go through.
    pub graph: GraphLimits,
    /// Traversal retrieval: the walk over the user's memory graph (`none` by default) and its
    /// limits; a request may change them (`traversal`).
    pub traversal: TraversalConfig,
    /// `fusion` (the turn score of `query::recall::turn_scoring`) or `relevance` (SPEC §5:
    /// 0.7·similarity + 0.2·recency + 0.1·importance); both are reported in every result's
    /// `why`.
    pub rank_by: RankBy,
    /// Recency time scale λ of the §5 score, in days.
    pub recency_scale_days: f64,
    /// The MARK weights `rank_by = "mrs"` uses: one of the paper's presets (`default`,
    /// `core_blend`, `similarity_freshness`, `popularity_similarity`, `feedback_freshness`,
    /// `similarity_feedback`, `balanced`, `similarity_only`).
    pub mrs_weights: String,
    /// How much a turn's retention R weighs in its score: the score is multiplied by
    /// 1 − w + w·R (0: retention only decides what is archived). 0.1 changed no recall@10 on
    /// the LoCoMo and LongMemEval dev sets and raised LoCoMo's @5; 0.3 lowered them.
    pub retention_weight: f64,
    /// Strength s of the retrieval preferences learned from feedback: a turn is multiplied by
    /// 1 + s·(up − down)/(up + down + 2) for each of its traits (role, content type, origin)
    /// the user's voted answers taught; 0 turns it off.
    pub learned_boost: f64,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            default_k: 10,
            max_k: 200,
            candidates_per_k: 4,
            scored_turns: 1000,
            candidate_depth: 200,
            rrf_k: 60.0,
            graph: Default::default(),
            traversal: Default::default(),
            rank_by: RankBy::Fusion,
            recency_scale_days: 7.0,
            mrs_weights: "default".into(),
            retention_weight: 0.1,
            learned_boost: 0.3,
        }
    }
}

/// How far graph expansion may go from the query's entities, and through which vertices.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GraphLimits {
    /// The heaviest co-mentioned neighbours taken per entity of the query (0, the default,
    /// turns the expansion off: on LoCoMo it cost 0.005 to 0.023 of recall_any@10, as the
    /// speakers of a conversation are co-mentioned with everything they talk about).
    pub neighbours: usize,
    /// The longest path followed, in edges: 1 takes the query entities' neighbours; 2 also the
    /// entities joining two query entities (q₁ – c – q₂); 3 also both inner entities of paths
    /// q₁ – x – y – q₂. At most 3.
    pub depth: u8,
    /// The kinds of entity expansion may pass through or add (`named`, `noun_phrase`); empty:
    /// every kind.
    pub entity_kinds: Vec<engram_operators::entities::EntityKind>,
}

impl Default for GraphLimits {
    fn default() -> Self {
        GraphLimits {
            neighbours: 0,
            depth: 2,
            entity_kinds: Vec::new(),
        }
    }
}

/// How recall orders its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RankBy {
    /// By the turn score: fused cosine and BM25 shares with the speaker, neighbour, session, day
    /// and event signals (`query::recall::turn_scoring`).
    #[default]
    Fusion,
    /// By the SPEC §5 score (similarity, recency, importance), fusion breaking ties.
    Relevance,
    /// By MARK's memory relevance score (recall count, recency, similarity, feedback; weights
    /// `recall.mrs_weights`), min–max normalised over the candidates, fusion breaking ties;
    /// memories the retention policy no longer keeps are left out.
    Mrs,
}

/// Where `scripts/setup` puts the model: `$ENGRAM_MODELS_DIR`, else `~/.cache/engram/models`.
fn default_models_dir() -> PathBuf {
    match std::env::var_os("HOME") {
        Some(home) => PathBuf::from(home).join(".cache/engram/models"),
        None => PathBuf::from(".engram/models"),
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("data"),
            http_addr: "127.0.0.1:8687".parse().unwrap(),
            workers: 1,
            blocking_threads: 32,
            models_dir: default_models_dir(),
            embedder: None,
            demo: true,
            index: IndexPolicy::default(),
            recall: RecallConfig::default(),
            passages: PassageConfig::default(),
            clock: EngineClock::Wall,
            kafka: KafkaConfig::default(),
            admin_key: None,
            prompt: PromptConfig::default(),
            llm: LlmConfig::default(),
            enrich: EnrichConfig::default(),
            hierarchy: HierarchyParams::default(),
            skills: SkillParams::default(),
            fusion: FusionConfig::default(),
            retention: RetentionParams::default(),
            log: LogConfig::default(),
            limits: LimitsConfig::default(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("environment variable {name}={value:?}: {reason}")]
    Env {
        name: &'static str,
        value: String,
        reason: String,
    },
    #[error("{key}: {reason}")]
    Invalid { key: &'static str, reason: String },
}

impl Config {
    /// Defaults, overridden by `file` (if given) and then by the environment.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        let mut cfg = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?;
                toml::from_str(&text).map_err(|e| ConfigError::File {
                    path: path.to_path_buf(),
                    reason: e.to_string(),
                })?
            }
            None => Config::default(),
        };
        cfg.apply_env(|name| std::env::var(name).ok())?;
        cfg.check()?;
        Ok(cfg)
    }

    /// Values the types alone do not rule out.
    pub fn check(&self) -> Result<(), ConfigError> {
        use engram_operators::math::mark::MrsWeights;
        if self.blocking_threads == 0 {
            return Err(ConfigError::Invalid {
                key: "blocking_threads",
                reason: "the blocking pool needs at least 1 thread".into(),
            });
        }
        if MrsWeights::preset(&self.recall.mrs_weights).is_none() {
            let names: Vec<&str> = MrsWeights::PRESETS.iter().map(|(n, _)| *n).collect();
            return Err(ConfigError::Invalid {
                key: "recall.mrs_weights",
                reason: format!(
                    "{:?} is not one of {}",
                    self.recall.mrs_weights,
                    names.join(", ")
                ),
            });
        }
        if !(self.limits.burst_s > 0.0 && self.limits.burst_s.is_finite()) {
            return Err(ConfigError::Invalid {
                key: "limits.burst_s",
                reason: format!(
                    "{} is not a positive number of seconds",
                    self.limits.burst_s
                ),
            });
        }
        let f = &self.fusion;
        for (key, w) in [
            ("fusion.voice", f.voice),
            ("fusion.screen", f.screen),
            ("fusion.video", f.video),
            ("fusion.other", f.other),
            ("fusion.clarify_below", f.clarify_below),
        ] {
            if !(w.is_finite() && (0.0..=1.0).contains(&w)) {
                return Err(ConfigError::Invalid {
                    key,
                    reason: format!("{w} is not a weight between 0 and 1"),
                });
            }
        }
        for (key, w) in [
            ("recall.retention_weight", self.recall.retention_weight),
            ("recall.learned_boost", self.recall.learned_boost),
        ] {
            if !(w.is_finite() && (0.0..=1.0).contains(&w)) {
                return Err(ConfigError::Invalid {
                    key,
                    reason: format!("{w} is not a weight between 0 and 1"),
                });
            }
        }
        if let Err((field, reason)) = self.recall.traversal.check() {
            return Err(ConfigError::Invalid {
                key: "recall.traversal",
                reason: format!("{field} {reason}"),
            });
        }
        let days = self.retention.stability_days;
        if !(days.is_finite() && days > 0.0) {
            return Err(ConfigError::Invalid {
                key: "retention.stability_days",
                reason: format!("{days} is not a positive number of days"),
            });
        }
        Ok(())
    }

    /// Applies `ENGRAM_DATA_DIR`, `ENGRAM_HTTP_ADDR`, `ENGRAM_WORKERS`, `ENGRAM_MODELS_DIR`,
    /// `ENGRAM_DEMO`, `ENGRAM_CLOCK`, `ENGRAM_KAFKA_BROKERS`, `ENGRAM_KAFKA_GROUP`,
    /// `ENGRAM_ADMIN_KEY`, `ENGRAM_LLM_URL`, `ENGRAM_LLM_MODEL`, `ENGRAM_LOG_DISCARD_AFTER_BYTES`
    /// and the `ENGRAM_LIMIT_*` variables of `[limits]` (see [`LIMITS_ENV`]) as read by `get`.
    pub fn apply_env(&mut self, get: impl Fn(&str) -> Option<String>) -> Result<(), ConfigError> {
        fn parse<T: std::str::FromStr>(name: &'static str, value: String) -> Result<T, ConfigError>
        where
            T::Err: std::fmt::Display,
        {
            value.parse().map_err(|e: T::Err| ConfigError::Env {
                name,
                reason: e.to_string(),
                value,
            })
        }
        if let Some(v) = get("ENGRAM_DATA_DIR") {
            self.data_dir = v.into();
        }
        if let Some(v) = get("ENGRAM_HTTP_ADDR") {
            self.http_addr = parse("ENGRAM_HTTP_ADDR", v)?;
        }
        if let Some(v) = get("ENGRAM_WORKERS") {
            self.workers = parse("ENGRAM_WORKERS", v)?;
        }
        if let Some(v) = get("ENGRAM_BLOCKING_THREADS") {
            self.blocking_threads = parse("ENGRAM_BLOCKING_THREADS", v)?;
        }
        if let Some(v) = get("ENGRAM_MODELS_DIR") {
            self.models_dir = v.into();
        }
        if let Some(v) = get("ENGRAM_DEMO") {
            self.demo = parse("ENGRAM_DEMO", v)?;
        }
        if let Some(v) = get("ENGRAM_CLOCK") {
            self.clock = parse("ENGRAM_CLOCK", v)?;
        }
        if let Some(v) = get("ENGRAM_KAFKA_BROKERS") {
            self.kafka.brokers = v;
        }
        if let Some(v) = get("ENGRAM_KAFKA_GROUP") {
            self.kafka.group_id = v;
        }
        if let Some(v) = get("ENGRAM_KAFKA_ALLOW_TENANT_CONTROL") {
            self.kafka.allow_tenant_control = parse("ENGRAM_KAFKA_ALLOW_TENANT_CONTROL", v)?;
        }
        if let Some(v) = get("ENGRAM_ADMIN_KEY") {
            if v.len() < 16 {
                return Err(ConfigError::Env {
                    name: "ENGRAM_ADMIN_KEY",
                    value: "(hidden)".into(),
                    reason: "an admin key needs at least 16 characters".into(),
                });
            }
            self.admin_key = Some(v);
        }
        if let Some(v) = get("ENGRAM_LLM_URL") {
            self.llm.url = Some(v);
        }
        if let Some(v) = get("ENGRAM_LLM_MODEL") {
            self.llm.model = v;
        }
        if let Some(v) = get("ENGRAM_ENRICH_URL") {
            self.enrich.url = Some(v);
        }
        if let Some(v) = get("ENGRAM_ENRICH_ENABLED") {
            self.enrich.enabled = parse("ENGRAM_ENRICH_ENABLED", v)?;
        }
        if let Some(v) = get("ENGRAM_MAX_FUTURE_SKEW_S") {
            self.log.max_future_skew_s = parse("ENGRAM_MAX_FUTURE_SKEW_S", v)?;
        }
        if let Some(v) = get("ENGRAM_LOG_DISCARD_AFTER_BYTES") {
            self.log.discard_after_bytes = parse("ENGRAM_LOG_DISCARD_AFTER_BYTES", v)?;
        }
        if let Some(v) = get("ENGRAM_REJECT_MAX_BYTES") {
            self.log.reject_max_bytes = parse("ENGRAM_REJECT_MAX_BYTES", v)?;
        }
        if let Some(v) = get("ENGRAM_REJECT_KEEP_FILES") {
            self.log.reject_keep_files = parse("ENGRAM_REJECT_KEEP_FILES", v)?;
        }
        for name in LIMITS_ENV {
            if let Some(v) = get(name) {
                let l = &mut self.limits;
                match name {
                    "ENGRAM_LIMIT_REQUESTS_PER_S" => l.requests_per_s = parse(name, v)?,
                    "ENGRAM_LIMIT_EVENTS_PER_S" => l.events_per_s = parse(name, v)?,
                    "ENGRAM_LIMIT_BYTES_PER_S" => l.bytes_per_s = parse(name, v)?,
                    "ENGRAM_LIMIT_BURST_S" => l.burst_s = parse(name, v)?,
                    "ENGRAM_LIMIT_HEADER_READ_TIMEOUT_S" => {
                        l.header_read_timeout_s = parse(name, v)?
                    }
                    "ENGRAM_LIMIT_IDLE_TIMEOUT_S" => l.idle_timeout_s = parse(name, v)?,
                    "ENGRAM_LIMIT_WRITE_TIMEOUT_S" => l.write_timeout_s = parse(name, v)?,
                    "ENGRAM_LIMIT_MAX_CONNECTIONS" => l.max_connections = parse(name, v)?,
                    "ENGRAM_LIMIT_DASHBOARD_STREAMS_PER_TENANT" => {
                        l.dashboard_streams_per_tenant = parse(name, v)?
                    }
                    "ENGRAM_LIMIT_DASHBOARD_STREAMS" => l.dashboard_streams = parse(name, v)?,
                    "ENGRAM_LIMIT_MAX_BACKLOG_EVENTS" => l.max_backlog_events = parse(name, v)?,
                    _ => unreachable!("every name of LIMITS_ENV is matched"),
                }
            }
        }
        Ok(())
    }

    /// The embedder configuration: as given, else derived from `models_dir` with a cache of
    /// [`SERVE_EMBEDDING_CACHE`] texts (a prompt embeds its query, the preferences and the
    /// correction examples it compares, again and again; the recall before it has just
    /// embedded the same query).
    pub fn embedder_config(&self) -> EmbedderConfig {
        self.embedder.clone().unwrap_or_else(|| EmbedderConfig {
            cache_entries: SERVE_EMBEDDING_CACHE,
            ..EmbedderConfig::from_models_dir(&self.models_dir)
        })
    }

    pub fn log_dir(&self) -> PathBuf {
        self.data_dir.join("log")
    }

    pub fn episodes_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("episodes.lance")
    }

    /// The Lance `events` table: every accepted event (the store of record behind the log).
    /// The events of restricted users, until the restriction is lifted.
    pub fn held_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("held.lance")
    }

    pub fn events_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("events.lance")
    }

    pub fn passages_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("passages.lance")
    }

    /// The Lance `facts` table: every fact assertion with its embedding, for recall.
    pub fn facts_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("facts.lance")
    }

    /// The summaries table: one row per summary event, embedded by its content.
    pub fn summaries_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("summaries.lance")
    }
}
