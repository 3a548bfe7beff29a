//! Reading memory: recall over Lance and the views ([`recall`]), sessions ranked from recalled
//! turns ([`session_ranking`]), and relative time in a question ([`time_window`]).

pub mod recall;
pub mod session_ranking;
pub mod time_window;
