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

/// Cells of the last column of `rows` cut so that no line passes `width`
/// columns (the other columns keep their text; the last keeps at least 20).
/// `None` leaves the table whole.
pub fn fit_last_column(rows: &mut [Vec<String>], width: Option<usize>) {
    let Some(width) = width else {
        return;
    };
    let cols = rows.first().map(Vec::len).unwrap_or(0);
    if cols == 0 {
        return;
    }
    let before: usize = (0..cols - 1)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
                + 2
        })
        .sum();
    let room = width.saturating_sub(before).max(20);
    for row in rows.iter_mut() {
        if let Some(last) = row.get_mut(cols - 1) {
            *last = truncate(last, room);
        }
    }
}

/// The width tables are cut to: the terminal's when stdout is one, else
/// `$COLUMNS` when set, else none (a pipe or a file gets whole lines).
/// `--wide` asks for none.
pub fn output_width(wide: bool) -> Option<usize> {
    if wide {
        return None;
    }
    if let Some((_, cols)) = console::Term::stdout().size_checked() {
        return Some(cols as usize);
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0)
}

/// `1 session`, `3 sessions`: a count with its noun, regular plurals only.
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
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

/// A byte count for people: 512 B, 3.4 KB, 12.0 MB, 1.2 GB (powers of 1,000).
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if n < 1000 {
        return format!("{n} B");
    }
    let mut value = n as f64 / 1000.0;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
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
    fn the_last_column_is_cut_to_the_width_and_no_further() {
        let mut rows = vec![
            vec!["ID".to_string(), "DESCRIPTION".into()],
            vec!["F001".into(), "x".repeat(100)],
        ];
        fit_last_column(&mut rows, Some(40));
        assert_eq!(rows[1][1].chars().count(), 34);
        assert!(render_table(&rows).lines().all(|l| l.chars().count() <= 40));
        let mut whole = vec![vec!["F001".to_string(), "x".repeat(100)]];
        fit_last_column(&mut whole, None);
        assert_eq!(whole[0][1].len(), 100);
        fit_last_column(&mut whole, Some(10));
        assert_eq!(whole[0][1].chars().count(), 20, "the last column keeps 20");
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(4, "feature"), "4 features");
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
