//! The `engram` jobs: `serve` (ingest, maintain the views, store in Lance, answer over HTTP) and
//! the pieces it is made of.

pub mod config;
pub mod engine;
pub mod episode_writer;
pub mod ingest;
pub mod log_source;
pub mod longmemeval;
pub mod recall;
pub mod server;

pub use config::Config;
pub use engine::Engine;
