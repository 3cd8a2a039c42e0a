//! Kernel confinement of sessions and of verification runs.
//!
//! A [`SandboxSpec`] says what a confined process may touch. [`confine`] is
//! called at the very start of a freshly executed process, before any thread
//! exists; [`command`] builds the command that re-executes longrun to confine
//! itself and then exec a program. Only this module makes confinement syscalls.

mod confine;
mod env;
mod spec;

pub use confine::{confine, exec_confined, Enforcement};
pub use env::session_env;
pub use spec::{command, SandboxSpec, EXEC_SUBCOMMAND};
