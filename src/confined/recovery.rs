//! What the harness reads in an answer without structured tool calls:
//! tool calls written in its text ([`text_calls`]) and the files the
//! model's strategy reads there, as calls to run; and what the model is
//! told when something in it could not be run, or when it ran away.

use super::strategy::Strategy;
use super::text_calls;
use crate::broker::RECOVERED_ID_PREFIX;
use crate::config::HarnessSettings;
use crate::model::ToolCall;

/// What the harness found to run in an answer without structured calls.
pub struct Recovery {
    pub calls: Vec<ToolCall>,
    /// The answer without the parts that became calls.
    pub text: String,
    /// Where the calls were found, for the reminder.
    pub found_in: Vec<&'static str>,
    /// File blocks not written because they leave parts out.
    pub elided: Vec<String>,
}

impl Recovery {
    /// Once per session, after calls were found written in the text (a
    /// file block is how a whole-file model is asked to edit: no reminder
    /// for it).
    pub fn reminder(&self) -> Option<String> {
        let as_text: Vec<&str> = self
            .found_in
            .iter()
            .copied()
            .filter(|f| *f != FILE_BLOCK)
            .collect();
        (!as_text.is_empty()).then(|| reminder(&as_text))
    }
}

/// Tool calls the model wrote in its text, and the files it writes
/// there as the strategy reads them, as calls to run; None when there
/// are none.
pub fn recover(
    text: &str,
    settings: &HarnessSettings,
    tool_names: &[String],
    strategy: &dyn Strategy,
    step: u32,
) -> Option<Recovery> {
    let mut found: Vec<(std::ops::Range<usize>, ToolCall)> = Vec::new();
    let mut found_in = Vec::new();
    if settings.text_calls() {
        let names: Vec<&str> = tool_names.iter().map(String::as_str).collect();
        if let Some(f) = text_calls::recover(text, &names) {
            found_in.push(f.format.describe());
            found.extend(
                f.calls
                    .into_iter()
                    .map(|c| (c.span, call(&c.name, c.arguments))),
            );
        }
    }
    let taken: Vec<std::ops::Range<usize>> = found.iter().map(|(s, _)| s.clone()).collect();
    let files = strategy.file_writes(text, &taken);
    if !files.writes.is_empty() {
        found_in.push(FILE_BLOCK);
    }
    found.extend(files.writes);
    let elided = files.elided;
    if found.is_empty() && elided.is_empty() {
        return None;
    }
    found.sort_by_key(|(span, _)| span.start);
    let spans: Vec<std::ops::Range<usize>> = found.iter().map(|(s, _)| s.clone()).collect();
    let calls = found
        .into_iter()
        .enumerate()
        .map(|(i, (_, mut c))| {
            c.id = format!("{RECOVERED_ID_PREFIX}{step}_{i}");
            c
        })
        .collect();
    Some(Recovery {
        calls,
        text: without(text, &spans),
        found_in,
        elided,
    })
}

/// What to tell the model when its answer held something meant to run
/// that could not be.
pub fn unreadable_note(
    recovery: Option<Recovery>,
    settings: &HarnessSettings,
    text: &str,
) -> Option<String> {
    let elided = recovery.map(|r| r.elided).unwrap_or_default();
    let note = if !elided.is_empty() {
        elided_note(&elided)
    } else if settings.text_calls() && text_calls::looks_like_call(text) {
        MALFORMED_CALL_NOTE.to_string()
    } else {
        return None;
    };
    Some(note)
}

/// Where a whole-file edit was found, as the recovery names it.
const FILE_BLOCK: &str = "a file block headed by its path";

/// A call the harness made from the model's text; its id is set by the caller.
fn call(name: &str, arguments: String) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments,
    }
}

/// `text` without the byte ranges in `spans` (sorted by start, may overlap).
fn without(text: &str, spans: &[std::ops::Range<usize>]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for span in spans {
        if span.start > at {
            out.push_str(&text[at..span.start]);
        }
        at = at.max(span.end);
    }
    out.push_str(&text[at.min(text.len())..]);
    out.trim().to_string()
}

/// A runaway answer as the conversation keeps it: its start and where the
/// harness stopped it, not the repetition (which a small model would take
/// up again).
pub fn shortened(text: &str, why: &str) -> String {
    const KEPT: usize = 600;
    let mut end = text.len().min(KEPT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... the harness stopped this answer here: {why}]",
        &text[..end]
    )
}

pub fn runaway_note(why: &str) -> String {
    format!(
        "[harness] Your last answer was stopped before its end: {why}. Nothing in it after that was used. \
         Answer again without repeating yourself: where many cases are alike, write a loop or a table, not one case each."
    )
}

/// Once per session, after calls were found in the text.
fn reminder(found_in: &[&str]) -> String {
    format!(
        "[harness] Your answer held tool calls as text ({}), not as tool calls; the harness found them and ran them as if you had called the tools. \
         Call tools directly, through the tool-calling format, with JSON arguments.",
        found_in.join(", ")
    )
}

const MALFORMED_CALL_NOTE: &str = "[harness] Your answer seems to hold a tool call, but the harness could not read it: \
its JSON is not valid (quotes inside a string must be escaped as \\\", newlines as \\n). Nothing was run. \
Call the tool directly, or send the call again as one valid JSON object {\"name\": ..., \"arguments\": {...}}.";

/// File blocks that left parts out were not written.
fn elided_note(paths: &[String]) -> String {
    format!(
        "[harness] The code block for {} leaves parts out (a comment such as `# ... rest unchanged`), so the harness did not write it: \
         a block replaces the whole file. Write the complete file, every line of it.",
        paths.join(", ")
    )
}
