//! Kernel confinement of sessions and of verification runs.
//!
//! A [`Profile`] says what a confined process may read, write and reach and
//! its limits; a [`SandboxSpec`] adds the session's own directories. [`confine`]
//! is called at the very start of a freshly executed process, before any
//! thread exists; [`command`] builds the command that re-executes longrun to
//! confine itself and then exec a program. Only this module makes
//! confinement syscalls.

mod caps;
mod cgroup;
mod command;
mod confine;
mod doctor;
mod env;
mod exec;
mod hint;
mod landlock;
mod lifetime;
mod limits;
mod mounts;
mod network;
mod profile;
pub mod proxy;
mod proxy_bridge;
mod registries;
mod seccomp;
mod spec;

pub use command::{command, EXEC_SUBCOMMAND};
pub use confine::{confine, no_filesystem_boundary, Enforcement};
pub use doctor::{doctor, preflight};
pub use env::session_env;
pub use exec::{exec_confined, run_sandbox, SandboxCmd};
pub use hint::denial_hint;
pub use lifetime::{bind_to_parent, own_exe, Bound};
pub use profile::{bundled_names, Filesystem, LandlockMode, Limits, Network, Profile};
pub use proxy_bridge::{PROXY_FD, PROXY_ON_STDIN_ENV, PROXY_PORT, PROXY_URL};
pub use registries::{
    normalize as normalize_host, split_host_port, AllowList, Registries, DEFAULT_HOSTS,
};
pub use spec::{Layers, SandboxSpec};
