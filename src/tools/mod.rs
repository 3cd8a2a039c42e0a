//! The tools the model can call inside a session, and the defensive dispatcher.
//!
//! Every failure of a tool call (bad JSON, unknown tool, wrong arguments, an
//! I/O error, a panic) becomes an `Error: ...` result the model can act on.

mod bash;
mod dispatcher;
mod files;

use std::path::PathBuf;

pub use bash::{run_shell, ShellOutcome};
pub use dispatcher::Registry;

use crate::model::ToolSpec;

/// Where a tool runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session workspace; every path argument is relative to it.
    pub workspace: PathBuf,
    /// The session's private tmp.
    pub tmp: PathBuf,
}

/// The result handed back to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

/// A tool: its schema and how to run it.
pub trait Tool: Send + Sync {
    fn spec(&self) -> ToolSpec;
    /// Run with already-parsed arguments. An `Err` becomes an `Error: ...` result.
    fn run(&self, ctx: &ToolContext, args: &serde_json::Value) -> anyhow::Result<String>;
}
