//! Loop detection: the signs that a session is going round in circles.
//!
//! Four triggers: the same tool call (name and normalized arguments) N times
//! in a row; a file written back to a content it already had; an A/B
//! alternation of two calls for N cycles; the same failing check output
//! after K edits. The detector only observes and names what repeats; the
//! agent loop decides what to tell the model and when to stop.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

pub struct LoopDetector {
    repeats: usize,
    edits_limit: u32,
    /// The normalized keys of the latest calls, newest last.
    recent: Vec<(String, String)>,
    /// Every content each written file has had after a write by the model.
    file_states: HashMap<String, HashSet<u64>>,
    edits: u32,
    /// Per failing command: its output's hash and the edit count when first seen.
    failing: HashMap<String, (u64, u32)>,
}

impl LoopDetector {
    pub fn new(repeats: u32, edits_limit: u32) -> LoopDetector {
        LoopDetector {
            repeats: repeats.max(2) as usize,
            edits_limit: edits_limit.max(1),
            recent: Vec::new(),
            file_states: HashMap::new(),
            edits: 0,
            failing: HashMap::new(),
        }
    }

    /// Forget what was seen: after a loop notice the model gets a clean slate.
    pub fn reset(&mut self) {
        *self = LoopDetector::new(self.repeats as u32, self.edits_limit);
    }

    /// A tool call was made. Returns what repeats, if this makes a loop.
    pub fn call(&mut self, name: &str, arguments: &str, summary: &str) -> Option<String> {
        self.recent.push((
            format!("{name} {}", normalize(arguments)),
            summary.to_string(),
        ));
        let keep = self.repeats * 2;
        if self.recent.len() > keep {
            self.recent.drain(..self.recent.len() - keep);
        }
        self.same_call(name).or_else(|| self.alternation())
    }

    fn same_call(&self, name: &str) -> Option<String> {
        let tail = self.recent.len().checked_sub(self.repeats)?;
        let last = &self.recent[self.recent.len() - 1];
        self.recent[tail..].iter().all(|k| k.0 == last.0).then(|| {
            format!(
                "the same `{name}` call {} times in a row ({})",
                self.repeats, last.1
            )
        })
    }

    fn alternation(&self) -> Option<String> {
        let n = self.repeats * 2;
        let tail = self.recent.len().checked_sub(n)?;
        let window = &self.recent[tail..];
        let (a, b) = (&window[0], &window[1]);
        let alternates = a.0 != b.0
            && window
                .iter()
                .enumerate()
                .all(|(i, k)| k.0 == window[i % 2].0);
        alternates.then(|| {
            format!(
                "the same two calls alternating {} times ({} / {})",
                self.repeats, a.1, b.1
            )
        })
    }

    /// The model changed `path`, which now holds `content`.
    pub fn wrote(&mut self, path: &str, content: &[u8]) -> Option<String> {
        self.edits += 1;
        let states = self.file_states.entry(path.to_string()).or_default();
        (!states.insert(hash(content)))
            .then(|| format!("`{path}` written back to a content it already had in this session"))
    }

    /// A check (a command the model ran, or a harness check) failed with `output`.
    pub fn failed(&mut self, command: &str, output: &str) -> Option<String> {
        let h = hash(normalize_output(output).as_bytes());
        let edits = self.edits;
        match self.failing.get(command) {
            Some((seen, at)) if *seen == h && edits - at >= self.edits_limit => Some(format!(
                "`{command}` failing with the same output after {} edits",
                edits - at
            )),
            Some((seen, _)) if *seen == h => None,
            _ => {
                self.failing.insert(command.to_string(), (h, edits));
                None
            }
        }
    }

    /// A check passed: its earlier failures no longer count.
    pub fn passed(&mut self, command: &str) {
        self.failing.remove(command);
    }
}

/// Arguments as canonical JSON (keys sorted, no spacing), so that formatting
/// differences do not hide a repeat.
fn normalize(arguments: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(v) => v.to_string(),
        Err(_) => arguments.trim().to_string(),
    }
}

/// Digits vary between runs of the same failure (timings, pids, ports), so they do not count.
fn normalize_output(output: &str) -> String {
    output
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

fn hash(bytes: &[u8]) -> u64 {
    let mut h = DefaultHasher::new();
    bytes.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_identical_calls_in_a_row_are_a_loop_whatever_the_spacing() {
        let mut d = LoopDetector::new(3, 3);
        assert_eq!(d.call("bash", r#"{"command":"ls"}"#, "ls"), None);
        assert_eq!(d.call("bash", r#"{ "command": "ls" }"#, "ls"), None);
        let what = d.call("bash", r#"{"command":"ls"}"#, "ls").unwrap();
        assert_eq!(what, "the same `bash` call 3 times in a row (ls)");
    }

    #[test]
    fn different_calls_between_repeats_break_the_run() {
        let mut d = LoopDetector::new(3, 3);
        for cmd in ["ls", "ls", "pwd", "ls", "ls"] {
            let args = format!(r#"{{"command":"{cmd}"}}"#);
            assert_eq!(d.call("bash", &args, cmd), None, "{cmd}");
        }
    }

    #[test]
    fn an_ab_alternation_for_three_cycles_is_a_loop() {
        let mut d = LoopDetector::new(3, 3);
        let mut found = None;
        for i in 0..6 {
            let cmd = if i % 2 == 0 { "make" } else { "cat log" };
            found = d.call("bash", &format!(r#"{{"command":"{cmd}"}}"#), cmd);
            if i < 5 {
                assert_eq!(found, None, "call {i}");
            }
        }
        assert_eq!(
            found.as_deref(),
            Some("the same two calls alternating 3 times (make / cat log)")
        );
    }

    #[test]
    fn writing_a_file_back_to_an_earlier_content_is_a_loop() {
        let mut d = LoopDetector::new(3, 3);
        assert_eq!(d.wrote("a.rs", b"one"), None);
        assert_eq!(d.wrote("a.rs", b"two"), None);
        assert_eq!(d.wrote("b.rs", b"one"), None);
        assert!(d
            .wrote("a.rs", b"one")
            .unwrap()
            .contains("`a.rs` written back"));
    }

    #[test]
    fn the_same_failure_after_k_edits_is_a_loop_but_a_new_failure_is_not() {
        let mut d = LoopDetector::new(3, 3);
        assert_eq!(d.failed("cargo test", "test x ... FAILED in 0.12s"), None);
        d.wrote("a", b"1");
        d.wrote("a", b"2");
        assert_eq!(d.failed("cargo test", "test x ... FAILED in 0.31s"), None);
        d.wrote("a", b"3");
        let what = d
            .failed("cargo test", "test x ... FAILED in 0.05s")
            .unwrap();
        assert!(what.contains("after 3 edits"), "{what}");
        assert_eq!(d.failed("cargo test", "test y ... FAILED"), None);
        d.passed("cargo test");
        assert_eq!(d.failed("cargo test", "test y ... FAILED"), None);
    }
}
