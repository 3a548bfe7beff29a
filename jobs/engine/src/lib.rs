//! The engram engine: ingest, maintain the views, store in Lance, recall and assemble prompts,
//! export and erase. `engram serve` is this plus HTTP (`engram-server`); `replay` runs
//! historical files through the same path.
//!
//! Modules are layered; each uses only those above it in this list (no cycles):
//! - [`config`] (and its [`config_reference`]), [`llm`], [`tenants`], [`read_model`]: leaves;
//! - [`pipeline`]: what the dataflow's output becomes in Lance (episodes, passages, events);
//! - [`ingest`]: validated events into the log, and the log (or Kafka) into the dataflow;
//! - [`query`]: recall over Lance and the views, session ranking, time windows;
//! - [`enrich`]: the asynchronous enrichment job (a model server's reading of sessions,
//!   published back into the log);
//! - [`engine`]: the running [`Engine`] (start, status, shutdown, export and erase);
//! - [`prompt`], [`replay`], [`longmemeval`]: what uses a running engine.

pub mod audit_log;
pub mod config;
pub mod config_reference;
pub mod engine;
pub mod enrich;
pub mod ingest;
pub mod llm;
pub mod locomo;
pub mod longmemeval;
pub mod pipeline;
pub mod prompt;
pub mod query;
pub mod read_model;
pub mod replay;
pub mod tenant_limits;
pub mod tenants;

pub use config::Config;
pub use engine::Engine;
