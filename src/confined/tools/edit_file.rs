//! `edit_file {path, old_string, new_string, replace_all?}`: replace exact text in a file.
//!
//! Exact matching keeps edits predictable; when the text is not found once,
//! the error says how often it was found so the model can widen or fix it.

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::args::Args;
use super::paths::{self, Roots};
use super::read_file::read_text;
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

pub struct EditFile;

impl Tool for EditFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace exact text in an existing workspace file. `old_string` must match the file exactly, \
                          whitespace and indentation included (copy it from read_file output without the line-number prefix), \
                          and must occur exactly once unless `replace_all` is true; include surrounding lines to make it unique."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root."},
                    "old_string": {"type": "string", "description": "The exact text to replace."},
                    "new_string": {"type": "string", "description": "The text to put in its place."},
                    "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)."}
                },
                "required": ["path", "old_string", "new_string"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("edit_file", args)?;
        let raw = args.string("path")?;
        let old = args.string("old_string")?;
        let new = args.string("new_string")?;
        let all = args.opt_bool("replace_all")?.unwrap_or(false);
        if old.is_empty() {
            bail!("`old_string` is empty; give the exact text to replace (use write_file to create a file)");
        }
        if old == new {
            bail!("`old_string` and `new_string` are the same; nothing would change");
        }
        let roots = Roots {
            workspace: &ctx.workspace,
            extra: &[],
        };
        let path = paths::resolve(&roots, "path", raw)?;
        let text = read_text(&path, raw)?;
        let count = text.matches(old).count();
        match (count, all) {
            (0, _) => bail!("{}", not_found(&text, old, raw)),
            (1, _) | (_, true) => {}
            (n, false) => bail!(
                "`old_string` occurs {n} times in `{raw}`; include more surrounding text so it matches exactly once, or set `replace_all` to true"
            ),
        }
        let updated = text.replace(old, new);
        std::fs::write(&path, &updated).with_context(|| format!("cannot write `{raw}`"))?;
        Ok(format!(
            "replaced {count} occurrence{} in `{raw}`",
            if count == 1 { "" } else { "s" }
        ))
    }
}

/// The not-found error, with a hint when only whitespace differs.
fn not_found(text: &str, old: &str, raw: &str) -> String {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let hint = if squash(text).contains(&squash(old)) {
        "the text is there with different whitespace or indentation; read the file again and copy it exactly"
    } else {
        "read the file again and copy the text exactly"
    };
    format!("`old_string` was not found in `{raw}` (0 matches); {hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(text: &str) -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.rs"), text).unwrap();
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        (d, ctx)
    }

    fn edit(ctx: &ToolContext, old: &str, new: &str, all: bool) -> String {
        let v = json!({"path": "f.rs", "old_string": old, "new_string": new, "replace_all": all});
        EditFile
            .run(ctx, &v)
            .unwrap_or_else(|e| format!("Error: {e}"))
    }

    #[test]
    fn replaces_one_exact_match() {
        let (d, ctx) = setup("fn a() {}\nfn b() {}\n");
        assert_eq!(
            edit(&ctx, "fn b", "fn c", false),
            "replaced 1 occurrence in `f.rs`"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("f.rs")).unwrap(),
            "fn a() {}\nfn c() {}\n"
        );
    }

    #[test]
    fn counts_matches_when_not_exactly_one() {
        let (d, ctx) = setup("x x x\n");
        assert!(edit(&ctx, "x", "y", false).contains("occurs 3 times"));
        assert!(edit(&ctx, "z", "y", false).contains("0 matches"));
        assert_eq!(
            edit(&ctx, "x", "y", true),
            "replaced 3 occurrences in `f.rs`"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("f.rs")).unwrap(),
            "y y y\n"
        );
    }

    #[test]
    fn hints_at_whitespace_differences() {
        let (_d, ctx) = setup("    let a = 1;\n");
        assert!(edit(&ctx, "let  a = 1;", "let a = 2;", false).contains("different whitespace"));
    }

    #[test]
    fn rejects_empty_and_identical_strings() {
        let (_d, ctx) = setup("a\n");
        assert!(edit(&ctx, "", "b", false).contains("is empty"));
        assert!(edit(&ctx, "a", "a", false).contains("the same"));
    }
}
