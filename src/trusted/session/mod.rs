//! One session from plan to verdict, on the orchestrator's side: its workspace and
//! checkouts, dependencies, confinement, the served worker and its registries proxy, the
//! import of its work, and crash recovery of sessions left unrecorded.

pub(crate) mod checkout;
pub(crate) mod confinement;
pub(crate) mod dependencies;
pub(crate) mod failpoint;
pub(crate) mod import;
pub(crate) mod in_progress;
pub(crate) mod lifecycle;
pub mod proxy;
pub(crate) mod recover;
pub(crate) mod serve;
pub(crate) mod timing;
pub(crate) mod upper;
pub(crate) mod workspace;
