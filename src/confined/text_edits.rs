//! Whole-file edits written as fenced code blocks headed by a path, the edit
//! format small models manage (`[harness] edit_format = "whole-file"`).
//!
//! A block counts when its path is alone on the line before the fence
//! (`duration.py`, `**duration.py**`, `` `src/a.py`: ``) or in the fence's info
//! string (```` ```python title=duration.py ````). This module only finds
//! them; the agent loop offers each as a `write_file` call, under the same
//! permissions as any other.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

use super::text_calls::fences;

/// A file's whole new content, as the model wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct FileBlock {
    pub path: String,
    pub content: String,
    pub span: Range<usize>,
    /// The block leaves parts out ("# ... rest unchanged"): writing it would lose them.
    pub elided: bool,
}

/// The path-headed blocks of `text`, in order. Blocks cut off by the end of
/// the answer are left out: their content is not whole.
pub fn file_blocks(text: &str) -> Vec<FileBlock> {
    fences(text)
        .into_iter()
        .filter(|b| b.closed)
        .filter_map(|b| {
            let path = path_in_info(&b.info).or_else(|| path_before(&text[..b.span.start]))?;
            let mut content = b.body;
            if !content.is_empty() && !content.ends_with('\n') {
                content.push('\n');
            }
            Some(FileBlock {
                path,
                elided: ELISION.as_ref().is_some_and(|re| re.is_match(&content)),
                content,
                span: b.span,
            })
        })
        .collect()
}

/// Comments that stand for code left out.
static ELISION: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?im)^\s*(?:#|//|/\*|<!--|--)\s*(?:\.\.\.|…|\[?(?:the )?rest of (?:the )?(?:code|file|function|class)|existing code|(?:\w+ )?(?:remains?|stays?) (?:the same|unchanged)|unchanged code)",
    )
    .ok()
});

/// `title=a.py`, `path="a.py"`, `file=a.py`, or a bare path among the words.
fn path_in_info(info: &str) -> Option<String> {
    info.split_whitespace()
        .skip(1)
        .find_map(|word| {
            let value = match word.split_once('=') {
                Some((key, value)) => {
                    let key = key.to_ascii_lowercase();
                    matches!(key.as_str(), "title" | "path" | "file" | "filename")
                        .then_some(value)?
                }
                None => word,
            };
            as_path(value.trim_matches(['"', '\'']))
        })
        .or_else(|| {
            // ```duration.py or ```python:duration.py
            let first = info.split_whitespace().next()?;
            let candidate = first.split_once(':').map_or(first, |(_, p)| p);
            as_path(candidate).filter(|p| p.contains('.') || p.contains('/'))
        })
}

/// The last non-blank line before a fence, when it is a path and nothing else
/// (Markdown emphasis, backticks, a heading mark, a `File:` label and a
/// trailing colon aside). At most one blank line may sit between.
fn path_before(before: &str) -> Option<String> {
    let mut lines = before.lines().rev();
    let mut line = lines.next()?;
    if line.trim().is_empty() && !before.ends_with('\n') {
        return None;
    }
    if line.trim().is_empty() {
        line = lines.next()?;
    }
    let mut t = line.trim().trim_start_matches('#').trim();
    for label in ["file:", "filename:", "path:"] {
        if t.len() >= label.len() && t[..label.len()].eq_ignore_ascii_case(label) {
            t = t[label.len()..].trim();
        }
    }
    let t = t
        .trim_end_matches(':')
        .trim_matches(['*', '`', '_', '"', '\'']);
    let t = t.trim_end_matches(':');
    as_path(t)
}

/// `text` as a workspace-relative path, or None when it cannot be one.
fn as_path(text: &str) -> Option<String> {
    let p = text.strip_prefix("./").unwrap_or(text);
    let inside_git = p == ".git" || p.starts_with(".git/");
    let ok = !p.is_empty() && p.len() <= 200 && !p.starts_with(['/', '-']) && !inside_git;
    let chars = p
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+' | '@'));
    let last = p.rsplit('/').next().unwrap_or("");
    let named = last.contains('.') || KNOWN_NAMES.contains(&last);
    let parts_ok = p.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
    (ok && chars && named && parts_ok && !last.ends_with('.')).then(|| p.to_string())
}

/// File names without a dot that are still files a model writes whole.
const KNOWN_NAMES: &[&str] = &["Makefile", "Dockerfile", "Justfile", "Gemfile", "Rakefile"];

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<(String, bool)> {
        file_blocks(text)
            .into_iter()
            .map(|b| (b.path, b.elided))
            .collect()
    }

    #[test]
    fn a_path_alone_on_the_line_before_heads_a_block() {
        let answer = "Here is the implementation.\n\nduration.py\n```python\ndef parse_duration(s):\n    return 0\n```\n";
        let blocks = file_blocks(answer);
        assert_eq!(blocks.len(), 1);
        assert_eq!(blocks[0].path, "duration.py");
        assert_eq!(blocks[0].content, "def parse_duration(s):\n    return 0\n");
        assert!(answer[blocks[0].span.clone()].starts_with("```python"));
    }

    #[test]
    fn decorated_headers_and_info_strings_name_the_path() {
        let cases = [
            ("**duration.py**\n```python\nx = 1\n```", "duration.py"),
            ("`src/app.js`:\n```js\nx\n```", "src/app.js"),
            ("### File: lib/util.py\n\n```python\nx\n```", "lib/util.py"),
            ("```python title=duration.py\nx = 1\n```", "duration.py"),
            ("```python title=\"a/b.py\"\nx\n```", "a/b.py"),
            ("```duration.py\nx\n```", "duration.py"),
            ("Makefile\n```make\nall:\n```", "Makefile"),
            ("./main.go\n```go\npackage main\n```", "main.go"),
            (".gitignore\n```\n__pycache__/\n```", ".gitignore"),
        ];
        for (text, path) in cases {
            assert_eq!(paths(text), [(path.to_string(), false)], "{text}");
        }
    }

    #[test]
    fn blocks_without_a_path_or_cut_off_are_not_edits() {
        for text in [
            "Run the tests:\n```bash\npython -m unittest\n```",
            "Here is the updated duration.py:\n```python\nx = 1\n```",
            "```python\nx = 1\n```",
            "duration.py\n```python\nx = 1",
            "../etc/passwd\n```\nx\n```",
            "/etc/passwd\n```\nx\n```",
            "e.g.\n```\nx\n```",
            ".git/hooks/pre-commit\n```\nx\n```",
        ] {
            assert_eq!(paths(text), [], "{text}");
        }
    }

    #[test]
    fn elided_blocks_are_marked() {
        let text = "a.py\n```python\ndef f():\n    return 1\n# ... rest of the code unchanged\n```\nb.py\n```python\ndef g():\n    ...\n```";
        assert_eq!(
            paths(text),
            [("a.py".to_string(), true), ("b.py".to_string(), false)]
        );
    }
}
