//! `write_file {path, content}`: create or replace a file, with its parent directories.

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::args::Args;
use super::paths::{self, Roots};
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

pub struct WriteFile;

impl Tool for WriteFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "write_file".into(),
            description: "Create a file in the workspace, or replace its whole content, creating parent directories as needed. \
                          To change part of an existing file, edit_file is safer."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. `src/lib.rs`."},
                    "content": {"type": "string", "description": "The complete new content of the file."}
                },
                "required": ["path", "content"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("write_file", args)?;
        let raw = args.string("path")?;
        let content = args.string("content")?;
        let roots = Roots {
            workspace: &ctx.workspace,
            extra: &[],
        };
        let path = paths::resolve(&roots, "path", raw)?;
        if path.is_dir() {
            bail!("`{raw}` is a directory; give the path of a file inside it");
        }
        let existed = path.exists();
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create the directories of `{raw}`"))?;
        }
        std::fs::write(&path, content).with_context(|| format!("cannot write `{raw}`"))?;
        Ok(format!(
            "{} `{raw}` ({} bytes, {} lines)",
            if existed { "replaced" } else { "created" },
            content.len(),
            content.lines().count()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_parents_then_replaces() {
        let d = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        let args = json!({"path": "a/b/c.txt", "content": "hi\n"});
        assert_eq!(
            WriteFile.run(&ctx, &args).unwrap(),
            "created `a/b/c.txt` (3 bytes, 1 lines)"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("a/b/c.txt")).unwrap(),
            "hi\n"
        );
        assert!(WriteFile.run(&ctx, &args).unwrap().starts_with("replaced"));
    }

    #[test]
    fn refuses_directories_and_escapes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("dir")).unwrap();
        let ctx = ToolContext {
            workspace: d.path().join("."),
            tmp: d.path().to_path_buf(),
        };
        let err = |v: Value| WriteFile.run(&ctx, &v).unwrap_err().to_string();
        assert!(err(json!({"path": "dir", "content": ""})).contains("is a directory"));
        assert!(err(json!({"path": "../x", "content": ""})).contains("outside the workspace"));
        assert!(err(json!({"path": "/tmp/x", "content": ""})).contains("outside the workspace"));
    }
}
