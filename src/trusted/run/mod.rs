//! The run: `longrun continue`'s loop of sessions and what surrounds it (pausing on
//! provider faults, notifications, signals, stop and retry, the reporter, gc and compaction,
//! the user's work tree, the demo, status and log).

pub(crate) mod compact;
pub(crate) mod continue_run;
pub(crate) mod control;
pub(crate) mod demo;
pub(crate) mod fault;
pub(crate) mod gc;
pub(crate) mod notify;
pub(crate) mod pause;
pub(crate) mod reporter;
pub(crate) mod signals;
pub(crate) mod status;
pub(crate) mod worktree;
