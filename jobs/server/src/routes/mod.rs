//! The routes, one module per group; [`crate::router`] wires them.

pub mod admin;
pub mod audit;
pub mod chat;
pub mod events;
pub mod gdpr;
pub mod memories;
pub mod memory;
pub mod messages;
pub mod openai;
pub mod prompt;
pub mod status;
