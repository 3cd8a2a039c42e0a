//! `grep {pattern, path?, glob?}`: regex search over workspace files, as `file:line: text`.

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::args::Args;
use super::paths::{self, Roots};
use super::walk::{self, NameFilter};
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

const MAX_MATCHES: usize = 200;
const MAX_LINE_CHARS: usize = 300;
/// Files searched per call; beyond this the search stops and says so.
const MAX_FILES: usize = 20_000;
const MAX_FILE_BYTES: u64 = 10 << 20;

pub struct Grep;

impl Tool for Grep {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "grep".into(),
            description: format!(
                "Search file contents with a regular expression (Rust regex syntax, like ripgrep: `fn \\w+_test`, `(?i)todo`). \
                 Returns matching lines as `path:line: text`, paths relative to the workspace root, at most {MAX_MATCHES} matches. \
                 Searches the whole workspace by default, skipping .gitignore'd and binary files; `path` narrows it to a directory \
                 or one file, `glob` to file names such as `*.py` or paths such as `src/**/*.rs`."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "Regular expression to search for."},
                    "path": {"type": "string", "description": "File or directory relative to the workspace root (default `.`)."},
                    "glob": {"type": "string", "description": "Only search files matching this glob, e.g. `*.rs`."}
                },
                "required": ["pattern"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("grep", args)?;
        let pattern = args.string("pattern")?;
        let regex = regex::Regex::new(pattern)
            .with_context(|| format!("argument `pattern` is not a valid regular expression (`{pattern}`); escape special characters such as `(` or `[` with `\\`"))?;
        let raw = args.opt_string("path")?.unwrap_or(".");
        let filter = args
            .opt_string("glob")?
            .map(|g| NameFilter::new("glob", g))
            .transpose()?;
        let tmp = ctx.tmp.as_path();
        let roots = Roots {
            workspace: &ctx.workspace,
            extra: &[tmp],
        };
        let start = paths::resolve(&roots, "path", raw)?;
        if !start.exists() {
            bail!("`{raw}` does not exist; use list_files to see which files there are");
        }
        let (files, too_many) = walk::files(&start, filter.as_ref(), MAX_FILES);
        let mut hits = Vec::new();
        let mut more = false;
        for file in &files {
            if !search_file(&ctx.workspace, file, &regex, &mut hits) {
                more = true;
                break;
            }
        }
        Ok(render(hits, more, too_many, pattern, raw))
    }
}

/// Append the matches in `file` to `hits`; false once the match cap is reached.
fn search_file(
    workspace: &std::path::Path,
    file: &std::path::Path,
    regex: &regex::Regex,
    hits: &mut Vec<String>,
) -> bool {
    if std::fs::metadata(file)
        .map(|m| m.len() > MAX_FILE_BYTES)
        .unwrap_or(true)
    {
        return true;
    }
    let Ok(bytes) = std::fs::read(file) else {
        return true;
    };
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return true;
    }
    let text = String::from_utf8_lossy(&bytes);
    let shown = paths::display(workspace, file);
    for (i, line) in text.lines().enumerate() {
        if !regex.is_match(line) {
            continue;
        }
        if hits.len() == MAX_MATCHES {
            return false;
        }
        hits.push(format!("{shown}:{}: {}", i + 1, cut(line)));
    }
    true
}

fn cut(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    format!("{}…", line.chars().take(MAX_LINE_CHARS).collect::<String>())
}

fn render(hits: Vec<String>, more: bool, too_many: bool, pattern: &str, raw: &str) -> String {
    if hits.is_empty() {
        return format!("no matches for `{pattern}` under `{raw}`");
    }
    let mut out = hits.join("\n");
    out.push('\n');
    if more {
        out.push_str(&format!(
            "[stopped at {MAX_MATCHES} matches; narrow the search with a more precise pattern, `path` or `glob`]\n"
        ));
    } else if too_many {
        out.push_str(&format!(
            "[only the first {MAX_FILES} files were searched; narrow with `path` or `glob`]\n"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let d = tempfile::tempdir().unwrap();
        let files: [(&str, &[u8]); 5] = [
            ("src/main.rs", b"fn main() {\n    run();\n}\n"),
            ("src/lib.rs", b"pub fn run() {}\n"),
            ("notes.md", b"run the tests\n"),
            ("build/out.rs", b"fn run() {}\n"),
            ("blob.bin", b"run\x00run"),
        ];
        for (f, c) in files {
            let p = d.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, c).unwrap();
        }
        std::fs::write(d.path().join(".gitignore"), "build/\n").unwrap();
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        (d, ctx)
    }

    fn grep(ctx: &ToolContext, v: Value) -> String {
        Grep.run(ctx, &v).unwrap_or_else(|e| format!("Error: {e}"))
    }

    #[test]
    fn finds_lines_as_file_and_line() {
        let (_d, ctx) = setup();
        assert_eq!(
            grep(&ctx, json!({"pattern": r"run\("})),
            "src/lib.rs:1: pub fn run() {}\nsrc/main.rs:2:     run();\n"
        );
    }

    #[test]
    fn narrows_by_glob_and_path() {
        let (_d, ctx) = setup();
        assert_eq!(
            grep(&ctx, json!({"pattern": "run", "glob": "*.md"})),
            "notes.md:1: run the tests\n"
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "run", "path": "src/lib.rs"})),
            "src/lib.rs:1: pub fn run() {}\n"
        );
        assert_eq!(
            grep(&ctx, json!({"pattern": "zzz"})),
            "no matches for `zzz` under `.`"
        );
    }

    #[test]
    fn reports_a_bad_regex() {
        let (_d, ctx) = setup();
        assert!(grep(&ctx, json!({"pattern": "run("})).contains("not a valid regular expression"));
    }

    #[test]
    fn caps_the_matches() {
        let (d, ctx) = setup();
        std::fs::write(d.path().join("many.txt"), "hit\n".repeat(500)).unwrap();
        let out = grep(&ctx, json!({"pattern": "hit"}));
        assert_eq!(out.lines().count(), MAX_MATCHES + 1);
        assert!(out.contains("stopped at 200 matches"));
    }
}
