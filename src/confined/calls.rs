//! A tool call as the loop sees it: its arguments, its one-line summary,
//! whether its command failed, and what it tells the loop detector.

use std::path::Path;

use super::loops::LoopDetector;
use crate::confined::tools::ToolOutput;
use crate::model::ToolCall;

/// Feed the loop detector; returns what repeats when a loop is found.
pub fn observe(
    loops: &mut LoopDetector,
    workspace: &Path,
    call: &ToolCall,
    out: &ToolOutput,
) -> Option<String> {
    let args = parse_args(&call.arguments).ok();
    let arg = |k: &str| {
        args.as_ref()
            .and_then(|a| a.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_string)
    };
    let mut found = loops.call(&call.name, &call.arguments, &summarize(&call.arguments));
    match call.name.as_str() {
        "write_file" | "edit_file" if !out.is_error => {
            if let Some(path) = arg("path") {
                let content = std::fs::read(workspace.join(&path));
                let seen = loops.wrote(&path, &content.unwrap_or_default());
                found = found.or(seen);
            }
        }
        "bash" => {
            let command = arg("command").unwrap_or_default();
            if out.is_error || command_failed(&out.content) {
                found = found.or(loops.failed(&command, &out.content));
            } else {
                loops.passed(&command);
            }
        }
        _ => {}
    }
    found
}

/// A bash result whose command exited non-zero, timed out or was killed.
pub fn command_failed(content: &str) -> bool {
    let last = content.lines().last().unwrap_or("");
    last.starts_with("[exit code ")
        || last.starts_with("[timed out")
        || last == "[killed by a signal]"
}

pub fn parse_args(raw: &str) -> Result<serde_json::Value, String> {
    let text = if raw.trim().is_empty() { "{}" } else { raw };
    serde_json::from_str(text)
        .map_err(|e| format!("the arguments are not valid JSON ({e}); send a JSON object"))
}

pub fn error(message: String) -> ToolOutput {
    ToolOutput {
        content: format!("Error: {message}"),
        is_error: true,
    }
}

/// `name summary`, how a call is named in stubs and fallback summaries.
pub fn describe(call: &ToolCall) -> String {
    format!("{} {}", call.name, summarize(&call.arguments))
}

/// A one-line view of a call's arguments, for progress and the transcript:
/// the command or the path when there is one, else the raw arguments.
pub fn summarize(arguments: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    let key = parsed.as_ref().and_then(|v| {
        ["command", "path", "pattern", "name", "description"]
            .iter()
            .find_map(|k| v.get(*k).and_then(|x| x.as_str()).map(str::to_string))
    });
    let text = key.unwrap_or_else(|| arguments.to_string());
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 120 {
        format!("{}…", one_line.chars().take(120).collect::<String>())
    } else {
        one_line
    }
}
