//! The tools the model can call inside a session, and the defensive dispatcher.
//!
//! Every failure of a tool call (bad JSON, unknown tool, wrong arguments, an
//! I/O error, a panic) becomes an `Error: ...` result the model can act on.
//! Every path argument stays inside the workspace.

mod args;
mod bash;
mod cap;
mod dispatcher;
mod edit_file;
mod grep;
mod list_files;
mod paths;
mod read_file;
mod walk;
mod write_file;

use std::path::PathBuf;

pub use crate::config::DEFAULT_OUTPUT_CAP;
pub use bash::{run_shell, ShellOutcome};

/// The output cap when worker.json does not say (serde default).
pub fn default_output_cap() -> usize {
    DEFAULT_OUTPUT_CAP
}
pub use dispatcher::Registry;

use crate::model::ToolSpec;

/// Where a tool runs.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session workspace; every path argument is relative to it.
    pub workspace: PathBuf,
    /// The session's private tmp; cut outputs are saved here.
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
    /// Run with arguments that parsed as JSON and passed the schema's
    /// required and type checks. An `Err` becomes an `Error: ...` result.
    fn run(&self, ctx: &ToolContext, args: &serde_json::Value) -> anyhow::Result<String>;
}
