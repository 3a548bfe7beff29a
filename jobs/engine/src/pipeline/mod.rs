//! What the dataflow's output becomes in Lance: episodes with their embeddings and side tables
//! ([`episode_writer`]), passages of long episodes ([`passages`]), and the accepted events
//! themselves ([`archiver`]).

pub mod archiver;
pub mod episode_writer;
pub mod passages;
