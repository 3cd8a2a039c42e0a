//! One session from plan to verdict, on the orchestrator's side: its dependencies and
//! confinement, the served worker, who failed when it was not accepted, the import of its
//! work, signals, and crash recovery of sessions left unrecorded.

pub(crate) mod candidates;
pub(crate) mod confinement;
pub(crate) mod dependencies;
pub(crate) mod failpoint;
pub(crate) mod fault;
pub(crate) mod import;
pub(crate) mod in_progress;
pub(crate) mod lifecycle;
pub(crate) mod recover;
pub(crate) mod serve;
pub(crate) mod signals;
pub(crate) mod timing;
pub(crate) mod upper;
