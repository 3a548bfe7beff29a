//! engram's connections to the outside: the embedded event log (and its reject log), the Lance
//! events table behind it, the Lance episode store, the embedder (ONNX Runtime + tokenizers),
//! historical event files, and the Kafka client.

pub mod chat_template;
pub mod durable_commits;
pub mod embedder;
pub mod embedding_cache;
pub mod episode_store;
pub mod event_files;
pub mod event_log;
pub mod event_table;
pub mod held_table;
pub mod kafka;
pub mod log_records;
pub mod own_runtime;
pub mod reject_log;
pub mod table_archive;
pub mod vector_cache;

pub use chat_template::{ChatTemplateError, Qwen3Chat, TemplateMessage};
pub use embedder::{Embedder, EmbedderConfig, EmbedderError};
pub use episode_store::{EpisodeHit, EpisodeRow, EpisodeStore, IndexPolicy, StoreError};
pub use event_files::{EventFile, EventFileError, EventFileFormat, FileRecord};
pub mod event_log_check;
pub use event_log::{ArchivedRecords, EventLog, LogError};
pub use event_table::EventTable;
pub use held_table::HeldTable;
pub use reject_log::{RejectLimits, RejectLog, RejectRecord, Rejection};
pub use table_archive::TableArchive;
