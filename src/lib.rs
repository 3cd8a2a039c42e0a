//! longrun: builds software overnight with a coding agent, safely.
//!
//! The orchestrator (`init`, `continue`) holds the model key, brokers every
//! model call and records each session's verdict on the main branch. Each
//! session runs in a confined child process (the worker) that has no network
//! and no key. See `DESIGN.md` in the README for the architecture.

pub mod broker;
pub mod cli;
pub mod config;
pub mod error;
pub mod features;
pub mod fsutil;
pub mod logging;
pub mod model;
pub mod orchestrator;
pub mod permissions;
pub mod progress;
pub mod repo;
pub mod sandbox;
pub mod session;
pub mod state;
pub mod templates;
pub mod tools;
pub mod transcript;
pub mod view;
