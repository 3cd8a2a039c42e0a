//! Making session-made text safe to print and record.
//!
//! Anything a session produced (feature ids, file names, tool and check
//! output, commit messages, the worker's reports) may hold terminal escape
//! sequences, carriage returns or NUL bytes meant to forge what a user or a
//! parser reads. Before such text reaches a trailer, a console line, a log
//! line or a transcript summary it goes through [`line`] or [`text`]. This
//! module decides what is safe; it does not decide what to print.

/// Whether `c` is a control character: C0 (NUL, ESC, CR, ...), DEL, or C1.
fn is_control(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
}

/// Characters that move or reorder what a terminal shows without being
/// controls: bidirectional overrides and isolates, and line/paragraph
/// separators (which some readers take as line breaks).
fn is_layout(c: char) -> bool {
    matches!(
        c,
        '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// One line: every control character removed (tabs and line breaks become
/// spaces first), runs of whitespace collapsed to one space, trimmed. For a
/// trailer value, a console line or a log line.
pub fn line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut space = false;
    for c in s.chars() {
        let c = match c {
            '\t' | '\n' | '\r' | '\u{b}' | '\u{c}' | '\u{85}' | '\u{2028}' | '\u{2029}' => ' ',
            c if is_control(c) || is_layout(c) => continue,
            c => c,
        };
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// Several lines: every control character removed but line feeds and tabs
/// (a CR LF pair keeps its LF). For output shown as a block.
pub fn text(s: &str) -> String {
    s.chars()
        .filter(|c| matches!(c, '\n' | '\t') || !(is_control(*c) || is_layout(*c)))
        .collect()
}

/// The longest safe id.
pub const MAX_ID_LEN: usize = 64;

/// A feature id that is safe everywhere it is written: 1 to 64 of
/// `A-Z a-z 0-9 . _ -`.
pub fn is_safe_id(id: &str) -> bool {
    (1..=MAX_ID_LEN).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `s` as an escaped, quoted string for an error message that names a bad
/// value without printing its control characters.
pub fn quoted(s: &str) -> String {
    let cut: String = s.chars().take(2 * MAX_ID_LEN).collect();
    let more = if cut.len() < s.len() { "..." } else { "" };
    format!("\"{}{more}\"", cut.escape_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_loses_every_control_character_and_keeps_words() {
        assert_eq!(line("plain text"), "plain text");
        assert_eq!(
            line("a\nLongrun-Verdict: accepted"),
            "a Longrun-Verdict: accepted"
        );
        assert_eq!(line("\x1b[2K\x1b[1Gaccepted\r"), "[2K[1Gaccepted");
        assert_eq!(line("nul\0byte"), "nulbyte");
        assert_eq!(line("del\x7f c1\u{9b}31m"), "del c131m");
        assert_eq!(line("  tabs\tand\r\n  spaces  "), "tabs and spaces");
        assert_eq!(line("bidi \u{202e}desrever"), "bidi desrever");
        assert_eq!(line("é ü 漢字"), "é ü 漢字");
        assert_eq!(line(""), "");
        assert_eq!(line("\x1b\r\n\0"), "");
    }

    #[test]
    fn text_keeps_line_feeds_and_tabs_only() {
        assert_eq!(text("a\r\nb\tc\x1b[31m\0d\n"), "a\nb\tc[31md\n");
        assert_eq!(text("\u{85}x\u{2028}"), "x");
    }

    #[test]
    fn safe_ids_are_short_and_plain() {
        for ok in ["F001", "a", "user.login-2_x", &"x".repeat(64)] {
            assert!(is_safe_id(ok), "{ok}");
        }
        for bad in [
            "",
            &"x".repeat(65),
            "a b",
            "a\nLongrun-Verdict: accepted",
            "x\x1b[31m",
            "é",
            "a/b",
            "a:b",
        ] {
            assert!(!is_safe_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn quoted_escapes_and_cuts() {
        assert_eq!(quoted("a\nb\x1b"), "\"a\\nb\\u{1b}\"");
        assert!(quoted(&"y".repeat(500)).ends_with("...\""));
    }
}
