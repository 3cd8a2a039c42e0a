//! The confined side of the trust boundary: everything that runs inside a
//! session's sandbox. The worker side of a session: the agent loop, its budgets, the loop
//! detector, context management, the harness's own checks and tools, and
//! the prompts.
//!
//! Runs in the confined child. It talks to the model only through the
//! broker socket and never holds provider settings or keys.

mod agent;
mod budget;
mod calls;
mod checks;
mod commit;
mod context;
mod edit_check;
mod export;
mod files_to_change;
mod finish;
mod index_stat;
mod initializer;
mod loops;
mod prompt;
mod recovery;
mod skills;
mod strategy;
mod subagent;
mod test_imports;
mod text_calls;
mod text_edits;
mod todos;
pub mod tools;
mod worker;

pub use agent::{AgentLoop, Harness, Outcome};
pub use budget::Budget;
pub use export::{run_export, ExportCaps};
pub use strategy::{Strategy, Tools};
pub use worker::run_worker;
