//! engram's event contract (SPEC §2) and the Arrow schemas of its Lance tables.
//!
//! This crate depends on no other crate of the workspace.

pub mod body;
pub mod event;
pub mod tables;
pub mod validate;

/// The user whose memories are the tenant's domain-wide ones: what a tenant writes for this
/// user is shared with all its users (never with other tenants).
pub const DOMAIN_USER: &str = "_domain";

pub use body::{parse_body, validate_item, MAX_EVENTS_PER_BODY};
pub use event::*;
pub use validate::{
    check_event_size, parse_event, parse_event_value, validate_name, EventError, MAX_EVENT_BYTES,
    MAX_RELATION_EVIDENCE, MAX_SUMMARY_COVERS,
};

/// The stable UUID of the node an event creates (an episode for an interaction): the same
/// `(tenant, event_id)` always yields the same id, so replays and redeliveries converge.
pub fn node_id(tenant: &str, event_id: &str) -> uuid::Uuid {
    const NAMESPACE: uuid::Uuid = uuid::Uuid::from_u128(0x6f1c_2a57_93d4_4e0b_a1c8_5b7e_0d2f_9a31);
    let mut name = Vec::with_capacity(tenant.len() + event_id.len() + 1);
    name.extend_from_slice(tenant.as_bytes());
    name.push(0);
    name.extend_from_slice(event_id.as_bytes());
    uuid::Uuid::new_v5(&NAMESPACE, &name)
}
