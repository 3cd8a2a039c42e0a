//! `progress.md`: the notes each session leaves for the next.

pub const FILE_NAME: &str = "progress.md";

/// The last `max_lines` lines of the notes, for the worker's first message.
pub fn tail(text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(max_lines);
    let mut out = String::new();
    if start > 0 {
        out.push_str(&format!("[... {start} earlier lines not shown ...]\n"));
    }
    out.push_str(&lines[start..].join("\n"));
    out
}
