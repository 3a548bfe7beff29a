//! The `engram` jobs: `serve` (ingest, maintain the views, store in Lance, answer over HTTP),
//! `replay` (historical files through the same path) and the pieces they are made of.

pub mod config;
pub mod dashboard;
pub mod engine;
pub mod episode_writer;
pub mod event_archive;
pub mod gdpr;
pub mod ingest;
pub mod kafka;
pub mod llm;
pub mod log_source;
pub mod longmemeval;
pub mod openapi;
pub mod passages;
pub mod prompt;
pub mod recall;
pub mod replay;
pub mod server;
pub mod session_ranking;
pub mod tenants;
pub mod time_window;

pub use config::Config;
pub use engine::Engine;
