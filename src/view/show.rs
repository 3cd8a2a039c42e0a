//! `longrun show SESSION`: one session, pretty-printed from its transcript
//! (or as JSON with `--json`). Long texts are cut to a few lines; the whole
//! record stays in `.longrun/sessions/NNNN/transcript.jsonl`.

use std::path::{Path, PathBuf};

use super::session_view::{Call, Check, SessionView, Turn};
use super::text::{cut_lines, short_id, tokens, truncate};
use crate::error::bad_input;
use crate::trusted::Project;

/// Lines of a tool result or harness message shown before cutting.
const RESULT_LINES: usize = 6;
const WIDTH: usize = 160;

pub fn show(dir: &Path, session: &str, as_json: bool) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let number = resolve_number(&project, session)?;
    let path = transcript_path(&project, number);
    if !path.is_file() {
        return Err(missing_transcript(&project, number, &path));
    }
    let view = SessionView::from_entries(&crate::trusted::transcript::read(&path)?);
    if as_json {
        return Ok(serde_json::to_string_pretty(&view)? + "\n");
    }
    Ok(render(&view))
}

fn parse_number(text: &str) -> anyhow::Result<u32> {
    text.trim_start_matches('#').parse().map_err(|_| {
        bad_input(format!(
            "`{text}` is not a session number; give the number `longrun log` lists (for example `longrun show 2`), `last`, or -N"
        ))
    })
}

/// A session number as given: `7`, `#7`, `last`, or `-N` for the Nth from
/// the last among the sessions on record or with a transcript here.
fn resolve_number(project: &Project, text: &str) -> anyhow::Result<u32> {
    let back = match text {
        "last" => Some(Some(1)),
        _ => text
            .strip_prefix('-')
            .map(|n| n.parse::<usize>().ok().filter(|n| *n > 0)),
    }
    .map(|n| {
        n.ok_or_else(|| {
            bad_input(format!(
                "`{text}` is not a session; give a number `longrun log` lists, `last`, or -N (-1 is the last)"
            ))
        })
    })
    .transpose()?;
    let Some(back) = back else {
        return parse_number(text);
    };
    let mut numbers: Vec<u32> = crate::trusted::state::session_dir_numbers(&project.dir);
    if let Ok(history) = project.history() {
        numbers.extend(history.sessions.iter().map(|s| s.session));
    }
    numbers.sort_unstable();
    numbers.dedup();
    match numbers.iter().rev().nth(back - 1) {
        Some(n) => Ok(*n),
        None => Err(bad_input(format!(
            "`{text}`: {} has {} so far",
            project.dir.display(),
            super::text::count(numbers.len() as u64, "session")
        ))),
    }
}

fn transcript_path(project: &Project, number: u32) -> PathBuf {
    crate::trusted::state::sessions_dir(&project.dir)
        .join(format!("{number:04}"))
        .join("transcript.jsonl")
}

fn missing_transcript(project: &Project, number: u32, path: &Path) -> anyhow::Error {
    let recorded = project
        .history()
        .ok()
        .and_then(|h| h.sessions.iter().find(|s| s.session == number).cloned());
    match recorded {
        Some(row) => bad_input(format!(
            "session {number} is recorded on main ({}, commit {}) but its transcript {} is not here: \
             transcripts stay in .longrun/ on the machine that ran the session; `git show {}` shows the record",
            row.verdict,
            short_id(&row.commit),
            path.display(),
            short_id(&row.commit)
        )),
        None => bad_input(format!(
            "there is no session {number} in {}; `longrun log --dir {}` lists the sessions",
            project.dir.display(),
            project.dir.display()
        )),
    }
}

/// The whole session as text.
pub fn render(view: &SessionView) -> String {
    let mut out = Vec::new();
    out.push(header(view));
    out.push(format!("model     {}", view.model));
    out.push(format!("base      {}", short_id(&view.base)));
    out.push(format!(
        "usage     {} turns, {} in / {} out tokens, ${:.4}",
        view.turns.len(),
        tokens(view.usage.input_tokens),
        tokens(view.usage.output_tokens),
        view.cost_usd
    ));
    for n in &view.notices {
        out.push(format!("notice    {n}"));
    }
    if let Some(init) = &view.init_script {
        let status = init
            .exit_code
            .map(|c| format!("exit {c}"))
            .unwrap_or_else(|| "killed".into());
        out.push(format!("init.sh   {status}"));
        out.extend(indented(&init.output_tail, 10, 3));
    }
    for turn in &view.turns {
        out.push(String::new());
        out.extend(render_turn(turn));
    }
    for host in &view.network {
        out.push(format!("network   {host}"));
    }
    out.push(String::new());
    out.extend(render_end(view));
    out.join("\n") + "\n"
}

fn header(view: &SessionView) -> String {
    let mut parts = vec![format!("session {}", view.session), view.role.clone()];
    if let Some(f) = &view.feature {
        parts.push(format!("feature {f}"));
    }
    parts.push(
        view.verdict
            .as_ref()
            .map(|v| v.verdict.clone())
            .unwrap_or_else(|| "no verdict yet".into()),
    );
    parts.join(" · ")
}

fn render_turn(turn: &Turn) -> Vec<String> {
    let mut out = vec![format!(
        "turn {} · {} in / {} out tokens · ${:.4}",
        turn.number,
        tokens(turn.usage.input_tokens),
        tokens(turn.usage.output_tokens),
        turn.cost_usd
    )];
    for h in &turn.harness {
        out.extend(labelled("harness", h, RESULT_LINES));
    }
    if let Some(e) = &turn.model_error {
        out.push(format!("  model error: {e}"));
    }
    if !turn.text.trim().is_empty() {
        out.extend(labelled("model", &turn.text, RESULT_LINES));
    }
    for call in &turn.tool_calls {
        out.extend(render_call(call));
    }
    for n in &turn.notices {
        out.push(format!("  notice: {n}"));
    }
    for c in &turn.checks {
        out.extend(render_check("harness check", c));
    }
    out
}

/// `label` before the first line of `text`, the rest aligned under it.
fn labelled(label: &str, text: &str, max_lines: usize) -> Vec<String> {
    let lines = cut_lines(text, max_lines, WIDTH);
    lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let head = if i == 0 { label } else { "" };
            format!("  {head:<9}{l}").trim_end().to_string()
        })
        .collect()
}

fn indented(text: &str, indent: usize, max_lines: usize) -> Vec<String> {
    cut_lines(text, max_lines, WIDTH)
        .into_iter()
        .map(|l| format!("{:indent$}{l}", "").trim_end().to_string())
        .collect()
}

fn render_call(call: &Call) -> Vec<String> {
    let from_text = if call.recovered {
        " (found in the text)"
    } else {
        ""
    };
    let mut out = vec![format!(
        "  → {} {}{from_text}",
        call.name,
        arguments(&call.arguments)
    )];
    match &call.result {
        Some(result) if result.trim().is_empty() => out.push("    ← (no output)".into()),
        Some(result) => {
            let mark = if call.is_error { "✗" } else { "←" };
            let lines = cut_lines(result, RESULT_LINES, WIDTH);
            for (i, l) in lines.iter().enumerate() {
                let head = if i == 0 { mark } else { " " };
                out.push(format!("    {head} {l}").trim_end().to_string());
            }
        }
        None => out.push("    (no result was sent back)".into()),
    }
    out
}

/// Tool arguments on one line: commands as they are (lines joined by ⏎),
/// file contents and other long texts by their size.
fn arguments(raw: &str) -> String {
    let Ok(serde_json::Value::Object(map)) = serde_json::from_str::<serde_json::Value>(raw) else {
        return truncate(raw, 100);
    };
    let parts: Vec<String> = map
        .iter()
        .map(|(k, v)| match v {
            serde_json::Value::String(s) if k == "content" || s.lines().count() > 5 => {
                format!(
                    "{k}=({}, {} bytes)",
                    plural(s.lines().count(), "line"),
                    s.len()
                )
            }
            serde_json::Value::String(s) => {
                format!("{k}={}", truncate(&s.trim_end().replace('\n', " ⏎ "), 120))
            }
            other => format!("{k}={}", truncate(&other.to_string(), 80)),
        })
        .collect();
    parts.join(" ")
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

fn render_check(label: &str, c: &Check) -> Vec<String> {
    let result = if c.passed { "passed" } else { "FAILED" };
    let what = match &c.command {
        Some(cmd) => format!("{} `{cmd}`", c.name),
        None => c.name.clone(),
    };
    let mut out = vec![format!("  {label}: {what}: {result}")];
    if !c.passed {
        out.extend(indented(&c.output_tail, 6, RESULT_LINES));
    }
    out
}

fn render_end(view: &SessionView) -> Vec<String> {
    let mut out = Vec::new();
    match &view.worker {
        Some(w) => {
            let how = match &w.report {
                Some(r) => format!(
                    "{} after {} steps{}",
                    serde_json::to_value(r.ended)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    r.steps,
                    r.reason
                        .as_ref()
                        .map(|why| format!(": {why}"))
                        .unwrap_or_default()
                ),
                None => "sent no report".into(),
            };
            out.push(format!("worker    {how} ({})", w.exit));
        }
        None => out.push("worker    still running, or stopped before it finished".into()),
    }
    if let Some(s) = &view.worker_stats {
        out.push(format!(
            "          peak memory {} KiB, {:.1} ms in the harness",
            s.peak_rss_kib,
            s.harness_micros as f64 / 1000.0
        ));
    }
    for c in &view.checks {
        out.extend(render_check("verify", c));
    }
    match &view.verdict {
        Some(v) => {
            out.push(format!("verdict   {}", v.verdict));
            for r in &v.reasons {
                out.push(format!("  - {r}"));
            }
            out.push(format!("commit    {}", v.commit));
        }
        None => out.push("verdict   none recorded yet".into()),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_read_on_one_line() {
        assert_eq!(arguments(r#"{"command":"ls -l"}"#), "command=ls -l");
        assert_eq!(
            arguments(r#"{"path":"a.txt","content":"x\ny\n"}"#),
            "content=(2 lines, 4 bytes) path=a.txt"
        );
        assert_eq!(arguments(r#"{"command":"a\nb\n"}"#), "command=a ⏎ b");
        assert_eq!(arguments("not json"), "not json");
    }

    #[test]
    fn session_numbers_parse_with_or_without_padding() {
        assert_eq!(parse_number("0003").unwrap(), 3);
        assert_eq!(parse_number("#7").unwrap(), 7);
        assert!(parse_number("three").is_err());
    }
}
