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

use super::text_calls::{fences, Fence};

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
    let blocks = headed_blocks(text);
    if blocks.is_empty() {
        return fenced_path_then_code(text);
    }
    blocks
}

/// Blocks headed by their path, before the fence or in its info string.
fn headed_blocks(text: &str) -> Vec<FileBlock> {
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

/// A path fenced on its own with the code right after it, as Qwen2.5-Coder
/// 1.5B sometimes answers: "```\nduration.py\n```python\n<code>\n```". The
/// fence that closes the path opens the code (a language word after it),
/// and the code runs to the next fence at a line's start.
fn fenced_path_then_code(text: &str) -> Vec<FileBlock> {
    let mut found = Vec::new();
    for b in fences(text).into_iter().filter(|b| b.closed) {
        let named = b.body.trim();
        let Some(path) = as_path(named).filter(|_| !named.contains('\n')) else {
            continue;
        };
        let rest = &text[b.span.end..];
        let Some(line_end) = rest.find('\n') else {
            continue;
        };
        let lang = rest[..line_end].trim();
        let a_word =
            !lang.is_empty() && lang.chars().all(|c| c.is_ascii_alphanumeric() || c == '+');
        if !a_word {
            continue;
        }
        let start = b.span.end + line_end + 1;
        let Some(close) = text[start..].find("\n```").map(|i| start + i + 1) else {
            continue;
        };
        let content = text[start..close].to_string();
        if content.trim().is_empty() {
            continue;
        }
        found.push(FileBlock {
            path,
            elided: ELISION.as_ref().is_some_and(|re| re.is_match(&content)),
            content,
            span: b.span.start..close + 3,
        });
    }
    found
}

/// The one file a session has to change, written in a block without its
/// path (```` ```python ```` and the code, as Qwen2.5-Coder answers when asked
/// for a file): the longest closed block whose language is that file's.
/// None when the answer holds a path-headed block, or no block in the
/// file's language (a ```` ```bash ```` command is never taken for a
/// Python file), or the file's extension names no language.
pub fn unnamed_block_for(text: &str, file: &str) -> Option<FileBlock> {
    let languages = languages_of(file)?;
    if !file_blocks(text).is_empty() {
        return None;
    }
    let block = fences(text)
        .into_iter()
        .filter(|b| b.closed)
        .filter(|b| {
            let lang = b.info.split_whitespace().next().unwrap_or("");
            languages.contains(&lang.to_ascii_lowercase().as_str())
        })
        .max_by_key(|b| b.body.len())?;
    let mut content = block.body;
    if content.trim().is_empty() {
        return None;
    }
    if !content.ends_with('\n') {
        content.push('\n');
    }
    Some(FileBlock {
        path: file.to_string(),
        elided: ELISION.as_ref().is_some_and(|re| re.is_match(&content)),
        content,
        span: block.span,
    })
}

/// The session's files to change written in blocks not headed the usual
/// way, for an answer in which [`file_blocks`] and [`unnamed_block_for`]
/// found none. In the lift runs a fifth of the small models' answers had
/// their code in such blocks and wrote nothing:
///
/// - the path on the block's first line, bare, bracketed or as a comment
///   (```` ``` ````, `# duration.py`, code; or `[duration.py]`, code): that
///   line is left out;
/// - a line before the fence naming exactly one file to change among other
///   words, as the model copies the prompt's own headers (`[duration.py],
///   read-only:`, `Here is the new `duration.py`:`);
/// - with one file to change, the longest block with no language at all
///   (a block in another language, a ```` ```bash ```` command, never).
///
/// A block in another file's language is never taken; the longest block per
/// file counts. Each is still written as a `write_file` call, under the
/// same permissions as any other.
pub fn loose_blocks(text: &str, files: &[String]) -> Vec<FileBlock> {
    let fits = |file: &str, info: &str| {
        let lang = info
            .split_whitespace()
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        lang.is_empty() || languages_of(file).is_some_and(|l| l.contains(&lang.as_str()))
    };
    let mut found: Vec<FileBlock> = Vec::new();
    let closed: Vec<Fence> = fences(text).into_iter().filter(|b| b.closed).collect();
    for b in &closed {
        let named = first_line_names(&b.body, files)
            .map(|(file, rest)| (file, rest.to_string()))
            .or_else(|| {
                Some((
                    line_before_names(&text[..b.span.start], files)?,
                    b.body.clone(),
                ))
            });
        if let Some((file, body)) = named.filter(|(f, _)| fits(f, &b.info)) {
            keep(&mut found, block_of(file, body, b.span.clone()));
        }
    }
    for (header, b) in opened_after_a_header(text) {
        let mut named = files.iter().filter(|f| names_word(header, f));
        if let (Some(file), None) = (named.next(), named.next()) {
            if fits(file, &b.info) {
                keep(&mut found, block_of(file, b.body, b.span));
            }
        }
    }
    if let ([file], true) = (files, found.is_empty()) {
        let plain = closed
            .iter()
            .filter(|b| {
                b.info.is_empty() && b.body.lines().filter(|l| !l.trim().is_empty()).count() >= 2
            })
            .max_by_key(|b| b.body.len());
        if let Some(b) = plain {
            keep(&mut found, block_of(file, b.body.clone(), b.span.clone()));
        }
    }
    found
}

/// Blocks whose fence opens at the end of a line of text, after a header
/// (`[slugify.js] ```javascript`, `[wordfreq.py]:```python`, as the 0.5B
/// model writes them), each with that header; closed ones only.
fn opened_after_a_header(text: &str) -> Vec<(&str, Fence)> {
    static OPEN: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?m)^([^\n`]*[^\s`])[ \t]*```([A-Za-z0-9_+-]*)[ \t]*$").ok());
    let Some(re) = OPEN.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(text)
        .filter_map(|c| {
            let (all, header) = (c.get(0)?, c.get(1)?.as_str());
            let body_start = (all.end() + 1).min(text.len());
            let close = text[body_start..]
                .match_indices("```")
                .map(|(i, _)| body_start + i)
                .find(|&i| i == body_start || text[..i].ends_with('\n'))?;
            let body = text[body_start..close].to_string();
            let fence = Fence {
                info: c.get(2).map_or("", |m| m.as_str()).to_string(),
                body: body.strip_suffix('\n').unwrap_or(&body).to_string(),
                span: all.start()..close + 3,
                closed: true,
            };
            Some((header, fence))
        })
        .collect()
}

/// `block` among `found`: the longest block per file counts. Not one that
/// imports the very file it would be written to: that is the file's test
/// (the 0.5B model headed a copy of `slugify.test.js` "slugify.js, read-only:").
fn keep(found: &mut Vec<FileBlock>, block: FileBlock) {
    let imports_itself = super::test_imports::imports(&block.path, &block.content)
        .iter()
        .any(|i| i.candidates.first() == Some(&block.path));
    if block.content.trim().is_empty() || imports_itself {
        return;
    }
    match found.iter_mut().find(|b| b.path == block.path) {
        Some(b) if b.content.len() < block.content.len() => *b = block,
        Some(_) => {}
        None => found.push(block),
    }
}

/// A [`FileBlock`] of `file` holding `body` (a newline put at its end).
fn block_of(file: &str, mut body: String, span: Range<usize>) -> FileBlock {
    if !body.is_empty() && !body.ends_with('\n') {
        body.push('\n');
    }
    FileBlock {
        path: file.to_string(),
        elided: ELISION.as_ref().is_some_and(|re| re.is_match(&body)),
        content: body,
        span,
    }
}

/// When the first non-blank line of `body` is one of `files` and nothing
/// else (`duration.py`, `[duration.py]`, `# duration.py`, `// slug.js`):
/// that file and the body after the line.
fn first_line_names<'f, 'b>(body: &'b str, files: &'f [String]) -> Option<(&'f str, &'b str)> {
    let start = body.len() - body.trim_start().len();
    let line_end = body[start..].find('\n').map_or(body.len(), |i| start + i);
    let line = body[start..line_end].trim();
    let bare = line
        .trim_start_matches(['#', '/', '*', '-', ';'])
        .trim_end_matches(['*', '/'])
        .trim()
        .trim_matches(['[', ']', '(', ')', '`', '*', '"', '\''])
        .trim_end_matches(':');
    let file = files.iter().find(|f| f.as_str() == bare)?;
    Some((file, body[line_end..].trim_start_matches('\n')))
}

/// The last non-blank line before a fence (at most one blank line between),
/// when of `files` it names exactly one, as a whole word among others.
fn line_before_names<'f>(before: &str, files: &'f [String]) -> Option<&'f str> {
    let mut lines = before.lines().rev();
    let mut line = lines.next()?;
    if line.trim().is_empty() {
        line = lines.next()?;
    }
    let mut named = files.iter().filter(|f| names_word(line, f));
    match (named.next(), named.next()) {
        (Some(f), None) => Some(f),
        _ => None,
    }
}

/// Whether `line` holds `path` as a whole word: not part of a longer name
/// (`test_duration.py` does not name `duration.py`).
fn names_word(line: &str, path: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '/' | '.');
    line.match_indices(path).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + path.len()..].chars().next();
        let after_ok = match after {
            Some('.') => !line[at + path.len() + 1..]
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphanumeric()),
            Some(c) => !part(c),
            None => true,
        };
        !before.is_some_and(part) && after_ok
    })
}

/// The fence languages that name the language of `file`'s extension.
pub fn languages_of(file: &str) -> Option<&'static [&'static str]> {
    let ext = file.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "py" => &["python", "py", "python3"],
        "js" | "mjs" | "cjs" => &["javascript", "js", "node"],
        "ts" => &["typescript", "ts"],
        "rs" => &["rust", "rs"],
        "go" => &["go", "golang"],
        "rb" => &["ruby", "rb"],
        "java" => &["java"],
        "c" | "h" => &["c"],
        "cc" | "cpp" | "hpp" => &["cpp", "c++"],
        "sh" => &["bash", "sh", "shell"],
        _ => return None,
    })
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

    #[test]
    fn a_path_fenced_on_its_own_heads_the_code_after_it() {
        // What Qwen2.5-Coder 1.5B answered to an attempt at temperature 0.8.
        let code = "import re\n\ndef parse_duration(text):\n    return 0\n";
        let answer = format!("```\nduration.py\n```python\n{code}```\n");
        let blocks = file_blocks(&answer);
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        assert_eq!(blocks[0].path, "duration.py");
        assert_eq!(blocks[0].content, code);
        assert_eq!(blocks[0].span, 0..answer.trim_end().len());
        // Not when the code is cut off, nor a fenced word that is no path,
        // nor a fenced path with nothing after it.
        assert!(file_blocks("```\nduration.py\n```python\nx = 1\n").is_empty());
        assert!(file_blocks("```\nhello\n```python\nx = 1\n```\n").is_empty());
        assert!(file_blocks("```\nduration.py\n```\nThat is the file.\n").is_empty());
        // A block headed the usual way is taken as it is.
        let usual = format!("duration.py\n```python\n{code}```\n");
        assert_eq!(file_blocks(&usual)[0].content, code);
    }

    #[test]
    fn a_block_without_its_path_is_the_one_file_when_its_language_is_that_files() {
        let code = "def parse_duration(text):\n    return 0";
        let answer = format!("Here is the code:\n\n```python\n{code}\n```\n");
        let b = unnamed_block_for(&answer, "duration.py").unwrap();
        assert_eq!(b.path, "duration.py");
        assert_eq!(b.content, format!("{code}\n"));
        // The longest of several: the code, not the usage example.
        let two =
            format!("```python\n{code}\n```\nUse it:\n```python\nparse_duration('1h')\n```\n");
        assert_eq!(
            unnamed_block_for(&two, "duration.py").unwrap().content,
            format!("{code}\n")
        );
        // Never a command, another language, an untagged block, or a block cut off.
        assert_eq!(
            unnamed_block_for("```bash\npython3 -m unittest\n```\n", "duration.py"),
            None
        );
        assert_eq!(unnamed_block_for("```js\nx()\n```\n", "duration.py"), None);
        assert_eq!(unnamed_block_for("```\nx = 1\n```\n", "duration.py"), None);
        assert_eq!(unnamed_block_for("```python\nx = 1\n", "duration.py"), None);
        // A path-headed block wins: the unnamed one is not a second guess.
        let named = format!("other.py\n```python\nx = 1\n```\n```python\n{code}\n```\n");
        assert_eq!(unnamed_block_for(&named, "duration.py"), None);
        // A file whose extension names no language: nothing to match.
        assert_eq!(unnamed_block_for(&answer, "notes.txt"), None);
        // Left-out parts are marked, as for a named block.
        let elided = "```python\ndef f():\n    pass\n# ... rest unchanged\n```\n";
        assert!(unnamed_block_for(elided, "m.py").unwrap().elided);
    }
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

    fn loose(text: &str, files: &[&str]) -> Vec<(String, String)> {
        let files: Vec<String> = files.iter().map(|f| f.to_string()).collect();
        loose_blocks(text, &files)
            .into_iter()
            .map(|b| (b.path, b.content))
            .collect()
    }

    #[test]
    fn blocks_headed_the_ways_small_models_head_them_are_the_files_to_change() {
        // Each from the lift runs' transcripts: answers that wrote no file.
        let code = "def f():\n    return 1\n";
        let one = |p: &str| vec![(p.to_string(), code.to_string())];
        let cases = [
            format!("```\n# duration.py\n{code}```"),
            format!("```\nduration.py\n\n{code}```"),
            format!("```\n[duration.py]\n{code}```"),
            format!("[duration.py], read-only:\n```\n{code}```"),
            format!("`duration.py`, read-only:\n```\n{code}```"),
            format!("[duration.py] Read-only:\n\n```\n{code}```"),
            format!("Here is the new `duration.py`:\n```python\n{code}```"),
            format!("Attempt 9. An earlier attempt at `duration.py` failed.\n```\n{code}```"),
            format!("Some text.\n```\n{code}```\nMore text."),
            format!("[duration.py] ```python\n{code}```"),
            format!("[duration.py]:```\n{code}```\n\n[read-only]: ```python\n"),
        ];
        // The path line is left out, a comment naming it too.
        for text in &cases {
            assert_eq!(loose(text, &["duration.py"]), one("duration.py"), "{text}");
        }
        // Two files: each by its own header; the tests named beside one do not count.
        let text = format!(
            "[test_duration.py, duration.py]\n```\n{code}```\n// slug.js\n```javascript\n// slug.js\nx();\n```"
        );
        assert_eq!(
            loose(&text, &["duration.py", "slug.js"]),
            [
                ("duration.py".to_string(), code.to_string()),
                ("slug.js".to_string(), "x();\n".to_string())
            ]
        );
    }

    #[test]
    fn loose_blocks_never_take_another_language_a_bare_path_or_a_guess_between_files() {
        let code = "def f():\n    return 1\n";
        for text in [
            "```bash\npython3 -m unittest\necho done\n```".to_string(),
            "```\nduration.py\n```".to_string(),
            format!("```text\n# duration.py\n{code}```"),
            format!("`test_duration.py`, read-only:\n```python\n{code}```"),
            "```\none line\n```".to_string(),
            format!("duration.py\n```python\n{code}"),
        ] {
            assert_eq!(loose(&text, &["duration.py"]), [], "{text}");
        }
        // A copy of the tests headed as the file is not the file.
        let tests = "import unittest\n\nfrom duration import parse_duration\n\nclass T(unittest.TestCase):\n    pass\n";
        assert_eq!(
            loose(
                &format!("duration.py, read-only:\n```\n{tests}```"),
                &["duration.py"]
            ),
            []
        );
        let js = "const { slugify } = require('./slugify.js');\ntest('x', () => {});\n";
        assert_eq!(loose(&format!("```\n{js}```"), &["slugify.js"]), []);
        // With two files to change, a block naming neither is no one's.
        assert_eq!(loose(&format!("```\n{code}```"), &["a.py", "b.py"]), []);
        // `# a.py` then JavaScript: a block in another file's language is not a.py.
        assert_eq!(loose("```js\n// a.py\nx();\ny();\n```", &["a.py"]), []);
    }
}
