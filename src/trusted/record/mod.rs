//! What the orchestrator writes down and reads back: the verdict commit on main, the
//! history of trailers, transcripts, `.longrun/` state, the run lock, the run's event
//! stream (the reporter) and git itself.

pub(crate) mod history;
pub(crate) mod lock;
pub mod repo;
pub(crate) mod reporter;
pub mod state;
pub mod transcript;
pub(crate) mod verdict;
