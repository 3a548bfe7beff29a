//! Differential-dataflow operators of the memory dataflow, and the pure math under them.
//!
//! Every operator is a plain function from collections to collections, with a doc comment that
//! says exactly what its output holds for a given input, and a test that checks the
//! incrementally maintained output against a from-scratch computation of the same definition.

pub mod correction_clusters;
pub mod correction_notes;
pub mod english_terms;
pub mod entities;
pub mod entity_aliases;
pub mod episodes;
pub mod facts;
pub mod graph_walks;
pub mod keyed_state;
pub mod lifecycle;
pub mod math;
pub mod memories;
pub mod memory_marks;
pub mod memory_retention;
pub mod preference_contradictions;
pub mod relation_extraction;
pub mod relations;
pub mod requests;
pub mod retrieval_preferences;
pub mod said_days;
pub mod skill_confidence;
pub mod skill_feedback;
pub mod style_preferences;
pub mod summaries;
pub mod team_preferences;
pub mod turn_text;

pub use episodes::{
    episode_key, next_edges, uuid_bits, uuid_text, Episode, EpisodeNode, SessionKey,
};
