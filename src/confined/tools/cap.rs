//! Cutting a long tool output to its head and tail.
//!
//! The model sees the first and last part with one line in between saying
//! how much was cut and where the whole output was saved (in the session
//! tmp), so it can read or grep the rest instead of running the command again.

use std::path::{Path, PathBuf};

/// `text` if it fits in `cap` characters; else its head and tail, the whole
/// text saved to `save_to` (when that works; the note says so when it does not).
pub fn cap_output(text: String, cap: usize, save_to: &Path) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text;
    }
    let saved = save(&text, save_to);
    let head_len = cap / 2;
    let tail_len = cap - head_len;
    let head = cut_head(&text, head_len);
    let tail = cut_tail(&text, tail_len);
    let middle = &text[head.len()..text.len() - tail.len()];
    let cut_chars = middle.chars().count();
    let cut_lines = middle.matches('\n').count();
    let whereabouts = match saved {
        Some(path) => format!(
            "the full output ({total} characters) is saved in {}; read parts of it with read_file (offset, limit) or search it with grep",
            path.display()
        ),
        None => "the full output could not be saved".to_string(),
    };
    format!("{head}\n[... {cut_chars} characters ({cut_lines} lines) cut here; {whereabouts} ...]\n{tail}")
}

fn save(text: &str, path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    std::fs::write(path, text).ok()?;
    Some(path.to_path_buf())
}

/// At most `n` characters from the start, ending at a line break when one is near.
fn cut_head(text: &str, n: usize) -> &str {
    let end = text
        .char_indices()
        .nth(n)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let head = &text[..end];
    match head.rfind('\n') {
        Some(i) if i * 5 >= end * 4 => &head[..i],
        _ => head,
    }
}

/// At most `n` characters from the end, starting after a line break when one is near.
fn cut_tail(text: &str, n: usize) -> &str {
    let total = text.chars().count();
    let start = text
        .char_indices()
        .nth(total.saturating_sub(n))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let tail = &text[start..];
    match tail.find('\n') {
        Some(i) if i * 5 <= tail.len() => &tail[i + 1..],
        _ => tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_untouched() {
        let d = tempfile::tempdir().unwrap();
        let out = cap_output("hello\n".into(), 100, &d.path().join("o.txt"));
        assert_eq!(out, "hello\n");
        assert!(!d.path().join("o.txt").exists());
    }

    #[test]
    fn long_output_keeps_head_and_tail_and_saves_the_whole() {
        let d = tempfile::tempdir().unwrap();
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        let path = d.path().join("outputs/0001-bash.txt");
        let out = cap_output(text.clone(), 1000, &path);
        assert!(out.chars().count() < 1300, "{}", out.len());
        assert!(out.starts_with("line 1\nline 2\n"));
        assert!(out.ends_with("line 5000\n"));
        assert!(out.contains("characters ("), "{out}");
        assert!(out.contains(&path.display().to_string()));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn counts_characters_not_bytes() {
        let d = tempfile::tempdir().unwrap();
        let text = "é".repeat(3000);
        let out = cap_output(text, 1000, &d.path().join("o.txt"));
        assert!(out.starts_with(&"é".repeat(500)));
        assert!(out.contains("2000 characters"), "{out}");
    }
}
