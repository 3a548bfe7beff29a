//! The memory dataflow: composes the operators of `engram-operators` into the maintained views,
//! and runs it on timely workers.
//!
//! No I/O happens here. Input arrives through an [`InputSource`] (the embedded log or Kafka,
//! implemented by the caller); results leave as consistent [`views::MemoryViews`] snapshots and as
//! batches of new episodes for the caller to store.

mod capture;
mod captured;
pub mod clock;
mod co_mentions;
pub mod input;
mod keyed_view;
pub mod memory;
mod mentions;
pub mod model;
pub mod params;
mod publish;
pub mod views;
mod worker;

pub use clock::EngineClock;
pub use input::{clustered_text, correction_text, InputRecord, InputSource};
pub use memory::{run_memory_dataflow, DataflowHandle};
pub use model::{memory_model, MemoryInputs, MemoryModel};
pub use params::{CorrectionParams, DataflowParams, HierarchyParams, RetentionParams, SkillParams};
pub use publish::EpisodeBatch;
pub use views::{MemoryViews, SharedViews};
