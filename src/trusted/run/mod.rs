//! The top of the orchestrator: `longrun init` and `continue`'s loop of sessions (pausing
//! while the provider is away, notifications, the user's work tree, compaction), and the
//! commands that steer or read a project between runs: features and amend, stop and retry,
//! gc, status and log, the demo.

pub(crate) mod amend;
pub(crate) mod compact;
pub(crate) mod continue_run;
pub(crate) mod control;
pub(crate) mod demo;
pub(crate) mod gc;
pub(crate) mod init;
pub(crate) mod notify;
pub(crate) mod pause;
pub(crate) mod status;
pub(crate) mod worktree;
