//! What the orchestrator records and reads back: the verdict commit on main, the
//! history of trailers, transcripts, `.longrun/` state, the run lock and git itself.

pub(crate) mod history;
pub(crate) mod lock;
pub mod repo;
pub mod state;
pub mod transcript;
pub(crate) mod verdict;
