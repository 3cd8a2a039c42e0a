//! longrun: builds software overnight with a coding agent, safely.
//!
//! The orchestrator (`init`, `continue`) holds the model key, brokers every
//! model call and records each session's verdict on the main branch. Each
//! session runs in a confined child process (the worker) that has no network
//! and no key. The architecture is in `docs/design.md`.

// The two sides of the trust boundary: code that runs inside a session
// (agent loop, tools) and code that runs trusted (orchestrator,
// verification, git, recording). They meet only in `broker` and `protocol`.
pub mod confined;
pub mod trusted;

pub mod broker;
pub mod cli;
pub mod closure;
pub mod config;
pub mod error;
pub mod features;
pub mod fsutil;
pub mod git;
pub mod logging;
pub mod model;
pub mod permissions;
pub mod progress;
pub mod protocol;
pub mod rules;
pub mod sandbox;
pub mod sanitize;
pub mod schema;
pub mod skill_files;
pub mod templates;
pub mod tripwire;
pub mod view;
