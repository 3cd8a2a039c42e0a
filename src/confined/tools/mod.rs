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
mod tool;
mod walk;
mod write_file;

pub use crate::config::DEFAULT_OUTPUT_CAP;
pub use bash::{run_shell, ShellOutcome};
pub use dispatcher::Registry;
pub use tool::{Tool, ToolContext, ToolOutput};
