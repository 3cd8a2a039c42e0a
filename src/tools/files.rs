//! File tools: write_file.

use anyhow::Context;
use serde_json::json;

use super::{Tool, ToolContext};
use crate::model::ToolSpec;

pub struct WriteFile;

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Write a file in the workspace, creating parent directories.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &serde_json::Value) -> anyhow::Result<String> {
        let path = args
            .get("path")
            .and_then(|v| v.as_str())
            .context("missing `path` (a string)")?;
        let content = args
            .get("content")
            .and_then(|v| v.as_str())
            .context("missing `content` (a string)")?;
        let full = ctx.workspace.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&full, content).with_context(|| format!("cannot write {path}"))?;
        Ok(format!("wrote {} bytes to {path}", content.len()))
    }
}
