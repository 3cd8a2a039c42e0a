//! `read_file {path, offset?, limit?}`: a text file with numbered lines.

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::args::Args;
use super::paths::{self, Roots};
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut, so one minified file cannot fill the context.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes looked at to tell a binary file.
const SNIFF_BYTES: usize = 8192;

pub struct ReadFile;

impl Tool for ReadFile {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "read_file".into(),
            description: format!(
                "Read a text file from the workspace. Lines come numbered (`   12\\tline`); the numbers are not part of the file. \
                 Reads up to {DEFAULT_LIMIT} lines from `offset` (1-based, default 1); the output ends with a note when more lines follow. \
                 Also reads the files where cut tool outputs were saved (their absolute path is given in the cut note)."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File path relative to the workspace root, e.g. `src/main.rs`."},
                    "offset": {"type": "integer", "description": "First line to read, 1-based (default 1)."},
                    "limit": {"type": "integer", "description": "How many lines to read (default 2000)."}
                },
                "required": ["path"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("read_file", args)?;
        let raw = args.string("path")?;
        let offset = args.opt_u64("offset")?.unwrap_or(1).max(1);
        let limit = args.opt_u64("limit")?.unwrap_or(DEFAULT_LIMIT);
        if limit == 0 {
            bail!("argument `limit` must be at least 1");
        }
        let tmp = ctx.tmp.as_path();
        let roots = Roots {
            workspace: &ctx.workspace,
            extra: &[tmp],
        };
        let path = paths::resolve(&roots, "path", raw)?;
        let text = read_text(&path, raw)?;
        Ok(number_lines(&text, raw, offset, limit))
    }
}

/// The file's text, or an error saying why it cannot be shown.
pub fn read_text(path: &std::path::Path, raw: &str) -> anyhow::Result<String> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            bail!("`{raw}` does not exist; use list_files to see which files there are")
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read `{raw}`")),
    };
    if meta.is_dir() {
        bail!("`{raw}` is a directory, not a file; use list_files to see what it holds");
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read `{raw}`"))?;
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        bail!(
            "`{raw}` is a binary file ({} bytes) and cannot be shown as text; inspect it with bash (`file`, `xxd | head`)",
            bytes.len()
        );
    }
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "`{raw}` is not UTF-8 text (invalid byte at offset {}); it may be binary; inspect it with bash (`file`, `iconv`)",
            e.utf8_error().valid_up_to()
        )
    })
}

fn number_lines(text: &str, raw: &str, offset: u64, limit: u64) -> String {
    if text.is_empty() {
        return format!("(`{raw}` is empty)");
    }
    let total = text.lines().count() as u64;
    if offset > total {
        return format!("(`{raw}` has {total} lines; offset {offset} is past the end)");
    }
    let last = (offset + limit - 1).min(total);
    let mut out = String::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .skip((offset - 1) as usize)
        .take(limit as usize)
    {
        out.push_str(&format!("{:>6}\t{}\n", i + 1, cut_line(line)));
    }
    if last < total {
        out.push_str(&format!(
            "[lines {offset}-{last} of {total}; read on with offset={}]\n",
            last + 1
        ));
    }
    out
}

fn cut_line(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_string();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}… [line cut at {MAX_LINE_CHARS} characters]")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &[u8])], args: Value) -> String {
        let d = tempfile::tempdir().unwrap();
        for (p, c) in files {
            let f = d.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, c).unwrap();
        }
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().join("tmp-none"),
        };
        ReadFile
            .run(&ctx, &args)
            .unwrap_or_else(|e| format!("Error: {e}"))
    }

    #[test]
    fn numbers_lines() {
        let out = read(&[("a.txt", b"one\ntwo\n")], json!({"path": "a.txt"}));
        assert_eq!(out, "     1\tone\n     2\ttwo\n");
    }

    #[test]
    fn pages_with_offset_and_limit() {
        let text: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let out = read(
            &[("a.txt", text.as_bytes())],
            json!({"path": "a.txt", "offset": 4, "limit": 2}),
        );
        assert_eq!(
            out,
            "     4\tl4\n     5\tl5\n[lines 4-5 of 10; read on with offset=6]\n"
        );
        let past = read(
            &[("a.txt", text.as_bytes())],
            json!({"path": "a.txt", "offset": 11}),
        );
        assert!(past.contains("past the end"), "{past}");
    }

    #[test]
    fn clear_errors_for_missing_directory_and_binary() {
        assert!(read(&[], json!({"path": "nope.txt"})).contains("`nope.txt` does not exist"));
        assert!(read(&[("d/x", b"x")], json!({"path": "d"})).contains("is a directory"));
        let bin = read(&[("b.bin", b"\x7fELF\x00\x01")], json!({"path": "b.bin"}));
        assert!(bin.contains("binary file (6 bytes)"), "{bin}");
        let latin = read(&[("l.txt", b"caf\xe9\n")], json!({"path": "l.txt"}));
        assert!(latin.contains("not UTF-8"), "{latin}");
        assert!(read(&[], json!({"path": "../x"})).contains("outside the workspace"));
    }

    #[test]
    fn says_when_a_file_is_empty() {
        assert_eq!(read(&[("e", b"")], json!({"path": "e"})), "(`e` is empty)");
    }
}
