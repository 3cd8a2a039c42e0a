//! `list_files {path?, pattern?}`: the files of the workspace, as git sees them.

use anyhow::bail;
use serde_json::{json, Value};

use super::args::Args;
use super::paths::{self, Roots};
use super::walk::{self, NameFilter};
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

const MAX_FILES: usize = 1000;

pub struct ListFiles;

impl Tool for ListFiles {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "list_files".into(),
            description: format!(
                "List the files under a workspace directory (default: the whole workspace), one path per line, sorted, \
                 relative to the workspace root. Files ignored by .gitignore and the .git directory are left out. \
                 `pattern` is a glob: without `/` it matches file names (`*.rs`), with `/` the path below `path` \
                 (`src/**/test_*.py`). At most {MAX_FILES} files are listed."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Directory relative to the workspace root (default `.`)."},
                    "pattern": {"type": "string", "description": "Glob the files must match, e.g. `*.rs` or `tests/**/*.py`."}
                },
                "required": []
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("list_files", args)?;
        let raw = args.opt_string("path")?.unwrap_or(".");
        let filter = args
            .opt_string("pattern")?
            .map(|p| NameFilter::new("pattern", p))
            .transpose()?;
        let roots = Roots {
            workspace: &ctx.workspace,
            extra: &[],
        };
        let start = paths::resolve(&roots, "path", raw)?;
        if !start.exists() {
            bail!("`{raw}` does not exist; list `.` to see the workspace");
        }
        let (found, more) = walk::files(&start, filter.as_ref(), MAX_FILES);
        if found.is_empty() {
            return Ok(format!("no files under `{raw}` match"));
        }
        let mut out: String = found
            .iter()
            .map(|p| paths::display(&ctx.workspace, p) + "\n")
            .collect();
        if more {
            out.push_str(&format!(
                "[only the first {MAX_FILES} files are listed; narrow the listing with `path` or `pattern`]\n"
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        for f in [
            "src/main.rs",
            "src/lib.rs",
            "src/a/b.rs",
            "README.md",
            "target/x.rs",
            ".env",
            ".git/config",
        ] {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(d.path().join(".gitignore"), "target/\n").unwrap();
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        (d, ctx)
    }

    fn list(ctx: &ToolContext, v: Value) -> String {
        ListFiles
            .run(ctx, &v)
            .unwrap_or_else(|e| format!("Error: {e}"))
    }

    #[test]
    fn lists_sorted_and_honours_gitignore() {
        let (_d, ctx) = setup();
        assert_eq!(
            list(&ctx, json!({})),
            ".env\n.gitignore\nREADME.md\nsrc/a/b.rs\nsrc/lib.rs\nsrc/main.rs\n"
        );
    }

    #[test]
    fn filters_by_name_or_path_glob() {
        let (_d, ctx) = setup();
        assert_eq!(
            list(&ctx, json!({"pattern": "*.rs"})),
            "src/a/b.rs\nsrc/lib.rs\nsrc/main.rs\n"
        );
        assert_eq!(
            list(&ctx, json!({"path": "src", "pattern": "a/*.rs"})),
            "src/a/b.rs\n"
        );
        assert_eq!(
            list(&ctx, json!({"pattern": "*.py"})),
            "no files under `.` match"
        );
        assert!(list(&ctx, json!({"pattern": "[x"})).contains("not a valid glob"));
    }

    #[test]
    fn refuses_missing_and_outside_paths() {
        let (_d, ctx) = setup();
        assert!(list(&ctx, json!({"path": "nope"})).contains("does not exist"));
        assert!(list(&ctx, json!({"path": ".."})).contains("outside the workspace"));
    }

    #[test]
    fn caps_the_listing() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..(MAX_FILES + 5) {
            std::fs::write(d.path().join(format!("f{i:05}")), "").unwrap();
        }
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        let out = list(&ctx, json!({}));
        assert_eq!(out.lines().count(), MAX_FILES + 1);
        assert!(out.contains("only the first 1000 files"));
    }
}
