//! One place where tool calls are parsed, routed and made harmless.

use super::{bash::Bash, files::WriteFile, Tool, ToolContext, ToolOutput};
use crate::model::ToolSpec;

pub struct Registry {
    tools: Vec<Box<dyn Tool>>,
}

impl Registry {
    /// The tools every session gets.
    pub fn standard() -> Registry {
        Registry {
            tools: vec![Box::new(Bash), Box::new(WriteFile)],
        }
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec()).collect()
    }

    /// Run one call. Never panics and never fails: every problem is an `Error:` result.
    pub fn dispatch(&self, ctx: &ToolContext, name: &str, raw_args: &str) -> ToolOutput {
        let Some(tool) = self.tools.iter().find(|t| t.spec().name == name) else {
            let names: Vec<String> = self.tools.iter().map(|t| t.spec().name).collect();
            return error(format!(
                "unknown tool `{name}`; the tools are: {}",
                names.join(", ")
            ));
        };
        let args: serde_json::Value = match serde_json::from_str(if raw_args.trim().is_empty() {
            "{}"
        } else {
            raw_args
        }) {
            Ok(v) => v,
            Err(e) => {
                return error(format!(
                    "the arguments of `{name}` are not valid JSON ({e}); send a JSON object"
                ))
            }
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.run(ctx, &args))) {
            Ok(Ok(content)) => ToolOutput {
                content,
                is_error: false,
            },
            Ok(Err(e)) => error(format!("{e:#}")),
            Err(_) => error(format!(
                "the `{name}` tool failed unexpectedly; try the call another way"
            )),
        }
    }
}

fn error(message: String) -> ToolOutput {
    ToolOutput {
        content: format!("Error: {message}"),
        is_error: true,
    }
}
