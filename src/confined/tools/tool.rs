//! What a tool is: its schema, where it runs, and the result the model sees.

use std::path::PathBuf;

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
