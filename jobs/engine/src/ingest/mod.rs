//! Events in: validated and appended to the log ([`ingestor`]), and the log read into the
//! dataflow ([`log_source`]); Kafka topics feed the same ingestor ([`kafka`]); where each
//! user's events are in the log ([`user_offsets`]); what is accepted and not yet recallable
//! ([`backlog`]).

pub mod backlog;
pub mod ingestor;
pub mod kafka;
pub mod kafka_throttle;
pub mod log_source;
pub mod user_offsets;

pub use ingestor::*;
