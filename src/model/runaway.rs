//! A runaway answer: one that has stopped saying anything new and repeats
//! the same few lines over and over until the output cap ends it. Small
//! local models do this at temperature 0 (a table of `if n == 10003:`
//! branches, the same blank line, the same call), and at ten tokens a
//! second the cap is minutes away. While an answer streams, the HTTP side
//! asks [`repeating`] about its end and stops reading once it says yes: the
//! server stops generating when the connection closes, and the answer comes
//! back marked as cut ([`super::ChatResponse::cut`]).
//!
//! Lines are compared by shape: runs of digits count as one digit and runs
//! of one character as one character, so `if n == 10003:` and `return
//! "MMMMMMMM"` repeat however the numbers and letters grow. Real code
//! repeats shapes too (a table of numerals, a column of asserts), so the
//! bar is high: a block of at most [`PERIOD`] lines repeated back to back at
//! least [`TIMES`] times and over at least [`LINES`] lines, a longer block
//! (a whole file written again and again) repeated as written
//! [`BLOCK_TIMES`] times over as many lines, or one line that has run past
//! [`LONG_LINE`] bytes repeating a short unit.

/// The longest repeated block looked for, in lines.
const PERIOD: usize = 4;
/// How many times the block must repeat.
const TIMES: usize = 16;
/// The longest repeated block looked for, in lines: a block longer than
/// [`PERIOD`] must repeat exactly, [`BLOCK_TIMES`] times (the 0.5B model
/// wrote the same 45-line file over and over in one answer).
const BLOCK: usize = 200;
/// How many times a long block must repeat.
const BLOCK_TIMES: usize = 3;
/// How many lines the repetition must cover.
const LINES: usize = 64;
/// A line this long (no newline yet) is looked at on its own.
const LONG_LINE: usize = 2000;
/// The unfinished line's last bytes that must be one unit repeated.
const LONG_TAIL: usize = 600;
/// The longest unit a long line may repeat.
const LONG_UNIT: usize = 24;
/// How much of the answer's end is looked at.
const WINDOW: usize = 16 * 1024;

/// A runaway found at the end of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runaway {
    /// What repeats, for the transcript and the model.
    pub why: String,
    /// How much of the answer to keep: up to the end of the repetition's
    /// first round.
    pub keep: usize,
}

/// Whether `text`, an answer so far, ends in a runaway repetition.
pub fn repeating(text: &str) -> Option<Runaway> {
    let start = floor_char_boundary(text, text.len().saturating_sub(WINDOW));
    let window = &text[start..];
    let (done, open) = match window.rfind('\n') {
        Some(i) => (&window[..i], &window[i + 1..]),
        None => ("", window),
    };
    if let Some(why) = long_line(open) {
        let keep = floor_char_boundary(text, text.len() - open.len() + LONG_UNIT * 4);
        return Some(Runaway { why, keep });
    }
    // The first line of the window may be cut: leave it out. Each line
    // with where it ends in `text` (its newline included).
    let mut ends = Vec::new();
    let mut at = start;
    for line in done.split('\n') {
        at += line.len() + 1;
        ends.push((line, at));
    }
    let ends = &ends[1.min(ends.len())..];
    let shapes: Vec<u64> = ends.iter().map(|(l, _)| hash(&shape(l))).collect();
    let exact: Vec<u64> = ends.iter().map(|(l, _)| hash(l.trim_end())).collect();
    for period in 1..=BLOCK.min(shapes.len() / 2) {
        // Short blocks by shape, long ones as written.
        let (lines, times_needed) = match period <= PERIOD {
            true => (&shapes, TIMES),
            false => (&exact, BLOCK_TIMES),
        };
        let mut same = 0;
        for i in (period..lines.len()).rev() {
            if lines[i] != lines[i - period] {
                break;
            }
            same += 1;
        }
        let covered = same + period;
        let times = covered / period;
        if times >= times_needed && covered >= LINES {
            let unit = match period {
                1 => "the same line".to_string(),
                n => format!("the same {n} lines"),
            };
            let first = lines.len() - covered;
            return Some(Runaway {
                why: format!("it repeated {unit} {times} times over its last {covered} lines"),
                keep: ends[first + period - 1].1.min(text.len()),
            });
        }
    }
    None
}

fn hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut h);
    h.finish()
}

/// A line with no newline yet that has grown past [`LONG_LINE`] bytes and
/// whose end is one short unit over and over.
fn long_line(open: &str) -> Option<String> {
    if open.len() < LONG_LINE {
        return None;
    }
    let tail = open.as_bytes();
    let tail = &tail[tail.len() - LONG_TAIL..];
    (1..=LONG_UNIT)
        .find(|&unit| (unit..tail.len()).all(|i| tail[i] == tail[i - unit]))
        .map(|_| format!("it wrote one line of more than {LONG_LINE} bytes repeating the same few characters"))
}

/// A line's shape: trailing space dropped, each run of digits one `0`, each
/// run of one character one character.
fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut last = None;
    for c in line.trim_end().chars() {
        let c = if c.is_ascii_digit() { '0' } else { c };
        if last != Some(c) {
            out.push(c);
        }
        last = Some(c);
    }
    out
}

fn floor_char_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the 1.5B model wrote for a roman numeral stub at temperature 0
    /// (lift benchmark, roman, 2026-12-02): a branch per number, forever.
    fn branches(from: u32, count: u32) -> String {
        let mut text = String::from("```python\ndef to_roman(n: int) -> str:\n");
        for n in from..from + count {
            text.push_str(&format!(
                "    if n == {n}:\n        return \"{}\"\n",
                "M".repeat((n - from + 10) as usize)
            ));
        }
        text
    }

    #[test]
    fn a_branch_per_number_is_a_runaway_once_it_covers_enough_lines() {
        assert_eq!(repeating(&branches(10000, 30)), None);
        let text = branches(10000, 40);
        let found = repeating(&text).expect("a runaway");
        assert!(found.why.contains("the same 2 lines"), "{found:?}");
        // Kept: the answer's start and the first round of the repetition.
        assert_eq!(
            &text[..found.keep],
            "```python\ndef to_roman(n: int) -> str:\n    if n == 10000:\n        return \"MMMMMMMMMM\"\n"
        );
    }

    #[test]
    fn the_same_line_again_and_again_is_a_runaway() {
        let text = format!("def f():\n{}", "    pass\n".repeat(70));
        let found = repeating(&text).unwrap();
        assert!(found.why.contains("the same line"), "{found:?}");
        assert_eq!(&text[..found.keep], "def f():\n    pass\n");
        let blank = format!("x = 1{}", "\n".repeat(80));
        assert!(repeating(&blank).is_some());
    }

    /// What the 0.5B model wrote for the roman stub (lift, 2026-12-02):
    /// the whole file, then the whole file again, and again.
    #[test]
    fn a_whole_file_written_again_and_again_is_a_runaway() {
        let block: String = std::iter::once("[roman.py]\n```\n".to_string())
            .chain((0..40).map(|i| format!("    value_{i} = table[{i}] + {}\n", i * 7)))
            .chain(["```\n\n".to_string()])
            .collect();
        let twice = format!("Here it is.\n{block}{block}");
        assert_eq!(repeating(&twice), None);
        let text = format!("Here it is.\n{block}{block}{block}");
        let found = repeating(&text).expect("a runaway");
        assert!(found.why.contains("the same 44 lines 3 times"), "{found:?}");
        assert_eq!(&text[..found.keep], format!("Here it is.\n{block}"));
        // Three long blocks alike in shape but not as written go on.
        let varied: String = (0..3)
            .map(|n| block.replace("table[", &format!("table{n}[")))
            .collect();
        assert_eq!(repeating(&varied), None);
    }

    #[test]
    fn one_endless_line_is_a_runaway() {
        let text = format!("return \"{}", "MCM".repeat(1000));
        let found = repeating(&text).unwrap();
        assert!(found.why.contains("one line"), "{found:?}");
        assert!(found.keep < 200, "{found:?}");
        let prose = "All work and no play. ".repeat(20);
        assert_eq!(repeating(&prose), None);
    }

    /// Code that repeats a shape for a while is not a runaway: a numeral
    /// table, a column of asserts, a long dict, a file of distinct lines.
    #[test]
    fn real_code_with_repeated_shapes_goes_on() {
        let table = "NUMERALS = [\n    (1000, \"M\"),\n    (900, \"CM\"),\n    (500, \"D\"),\n    (400, \"CD\"),\n    (100, \"C\"),\n    (90, \"XC\"),\n    (50, \"L\"),\n    (40, \"XL\"),\n    (10, \"X\"),\n    (9, \"IX\"),\n    (5, \"V\"),\n    (4, \"IV\"),\n    (1, \"I\"),\n]\n";
        assert_eq!(repeating(table), None);
        let asserts: String = (0..60)
            .map(|i| format!("        self.assertEqual(f({i}), {})\n", i * i))
            .collect();
        assert_eq!(repeating(&asserts), None);
        let dict: String = (0..60).map(|i| format!("    {i}: {},\n", i + 1)).collect();
        assert_eq!(repeating(&format!("T = {{\n{dict}}}\n")), None);
        let source = include_str!("runaway.rs");
        assert_eq!(repeating(source), None);
    }

    #[test]
    fn multibyte_text_at_the_window_edge_is_fine() {
        let text = format!("{}{}", "é".repeat(WINDOW), "ok\n");
        assert_eq!(repeating(&text), None);
    }
}
