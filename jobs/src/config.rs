//! Configuration: defaults, then a TOML file, then `ENGRAM_*` environment variables, then
//! command-line flags (each overriding the one before).

use crate::kafka::KafkaConfig;
use engram_connectors::{EmbedderConfig, IndexPolicy};
use engram_dataflows::EngineClock;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Where the embedded log, the reject log and the Lance datasets live.
    pub data_dir: PathBuf,
    /// HTTP listen address.
    pub http_addr: SocketAddr,
    /// Timely workers.
    pub workers: usize,
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
}

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
    /// Reciprocal-rank-fusion constant.
    pub rrf_k: f32,
}

impl Default for RecallConfig {
    fn default() -> Self {
        RecallConfig {
            default_k: 10,
            max_k: 200,
            candidates_per_k: 4,
            rrf_k: 60.0,
        }
    }
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
            models_dir: default_models_dir(),
            embedder: None,
            demo: true,
            index: IndexPolicy::default(),
            recall: RecallConfig::default(),
            passages: PassageConfig::default(),
            clock: EngineClock::Wall,
            kafka: KafkaConfig::default(),
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
        Ok(cfg)
    }

    /// Applies `ENGRAM_DATA_DIR`, `ENGRAM_HTTP_ADDR`, `ENGRAM_WORKERS`, `ENGRAM_MODELS_DIR`,
    /// `ENGRAM_DEMO`, `ENGRAM_CLOCK`, `ENGRAM_KAFKA_BROKERS`, `ENGRAM_KAFKA_GROUP` as read by
    /// `get`.
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
        Ok(())
    }

    pub fn embedder_config(&self) -> EmbedderConfig {
        self.embedder
            .clone()
            .unwrap_or_else(|| EmbedderConfig::from_models_dir(&self.models_dir))
    }

    pub fn log_dir(&self) -> PathBuf {
        self.data_dir.join("log")
    }

    pub fn episodes_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("episodes.lance")
    }

    pub fn passages_dir(&self) -> PathBuf {
        self.data_dir.join("lance").join("passages.lance")
    }
}
