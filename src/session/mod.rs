//! The worker side of a session: the agent loop, its budgets, the loop
//! detector, context management, the harness's own checks and tools, and
//! the prompts.
//!
//! Runs in the confined child. It talks to the model only through the
//! broker socket and never holds provider settings or keys.

mod agent;
mod budget;
mod checks;
mod config;
mod context;
mod loops;
mod prompt;
mod settings;
mod skills;
mod subagent;
mod todos;
mod worker;

pub use agent::{AgentLoop, Harness, Outcome};
pub use budget::Budget;
pub use config::{FeatureBrief, Role, WorkerConfig};
pub use settings::HarnessSettings;
pub use skills::{load_user_skills, SkillDoc};
pub use worker::run_worker;
