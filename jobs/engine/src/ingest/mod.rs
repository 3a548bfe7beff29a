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

/// Whether `event` was derived from the event `target` of the same user: a summary that covers
/// it, a relation it is evidence for, a fact learned from it. A forget of `target` takes these
/// with it.
pub fn derived_from(event: &engram_schemas::Event, target: &str) -> bool {
    use engram_schemas::Body;
    match &event.body {
        Body::Summary(s) => s.covers.iter().any(|c| c == target),
        Body::Relation(r) => r.evidence.iter().any(|c| c == target),
        Body::Fact(f) => f.source_event_id.as_deref() == Some(target),
        _ => false,
    }
}
