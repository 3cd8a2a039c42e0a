//! The worker side of a session: the agent loop, its budgets and prompts.
//!
//! Runs in the confined child. It talks to the model only through the
//! broker socket and never holds provider settings or keys.

mod agent;
mod config;
mod prompt;
mod worker;

pub use agent::AgentLoop;
pub use config::{FeatureBrief, Role, WorkerConfig};
pub use worker::run_worker;
