//! Small text helpers shared by the terminal views: cutting long text,
//! aligned tables, and numbers people read at a glance.

/// `s` cut to `max` characters, with an ellipsis when it was longer.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!(
            "{}…",
            s.chars().take(max.saturating_sub(1)).collect::<String>()
        )
    }
}

/// The first `max_lines` lines of `text`, each cut to `width`, and a line
/// saying how many more there were.
pub fn cut_lines(text: &str, max_lines: usize, width: usize) -> Vec<String> {
    let lines: Vec<&str> = text.trim_end().lines().collect();
    let mut out: Vec<String> = lines
        .iter()
        .take(max_lines)
        .map(|l| truncate(l, width))
        .collect();
    if lines.len() > max_lines {
        out.push(format!("… {} more lines", lines.len() - max_lines));
    }
    out
}

/// Left-aligned columns, two spaces apart, no trailing spaces.
pub fn render_table(rows: &[Vec<String>]) -> String {
    let cols = rows.first().map(Vec::len).unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| format!("{cell:<width$}", width = widths[c]))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// A token count as people say it: 950, 12.3k, 4.1M.
pub fn tokens(n: u64) -> String {
    match n {
        0..=999 => n.to_string(),
        1_000..=999_999 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// Seconds as `42s`, `3m05s`, `1h02m`.
pub fn duration(secs: u64) -> String {
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// The short form of a commit id.
pub fn short_id(id: &str) -> String {
    id.chars().take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_lines_says_what_it_left_out() {
        let text = "a\nbbbbbb\nc\nd\n";
        assert_eq!(cut_lines(text, 2, 4), ["a", "bbb…", "… 2 more lines"]);
        assert_eq!(cut_lines("x", 2, 4), ["x"]);
    }

    #[test]
    fn numbers_read_at_a_glance() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(4_100_000), "4.1M");
        assert_eq!(duration(42), "42s");
        assert_eq!(duration(185), "3m05s");
        assert_eq!(duration(3720), "1h02m");
    }

    #[test]
    fn tables_align_and_do_not_trail() {
        let rows = vec![
            vec!["ID".to_string(), "X".into()],
            vec!["long-id".into(), "".into()],
        ];
        assert_eq!(render_table(&rows), "ID       X\nlong-id\n");
    }
}
