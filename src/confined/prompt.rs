//! The system prompt and the first message, built by the harness so the model
//! does not spend turns getting its bearings.

use std::path::Path;

use super::context::head;
use super::edit_check::BestFiles;
use super::files_to_change::{can_be_written, files_to_change, mentioned_paths};
use super::skills::{self, Skill};
use crate::config::EditFormat;
use crate::protocol::WorkerConfig;
use crate::schema::Role;
use crate::templates::{render, INITIALIZER_PROMPT, WORKER_PROMPT};

/// The harness notes on earlier attempts, as a paragraph (empty when there are none).
fn earlier_attempts(config: &WorkerConfig) -> String {
    if config.notes.is_empty() {
        return String::new();
    }
    let mut text =
        String::from("Earlier attempts at this feature (this session starts fresh from main):\n");
    for note in &config.notes {
        text.push_str(&format!("- {note}\n"));
    }
    text.push('\n');
    text
}

/// The project's instructions for agents: each of these that exists is put in.
const AGENT_FILES: &[&str] = &["AGENTS.md", "CLAUDE.md"];

/// The system prompt: the role's template, the repo's AGENTS.md and
/// CLAUDE.md (each capped) and the skills. Built once per session, so it is
/// the same in every request.
pub fn system_prompt(config: &WorkerConfig, workspace: &Path, skills: &[Skill]) -> String {
    let mut text = match config.role {
        Role::Initializer => INITIALIZER_PROMPT.to_string(),
        Role::Worker => WORKER_PROMPT.to_string(),
    };
    text.push_str(&harness_help(config, &files_to_change(config, workspace)));
    text.push_str(&agents_md(workspace, config.harness.agents_md_bytes));
    text.push_str(&skills::prompt_section(skills));
    text
}

/// The form of a file block, in words, with the session's first file to
/// change. An example block misled the 1.5B model every way it was
/// written: a stub of another task's function turned up in `roman.py`, a
/// made-up path was copied as the header (`path/to/roman.py`), and a
/// placeholder for the content was copied as the content, at temperature
/// 0 every time. The message shows the files in this form anyway.
pub(super) fn block_form(files: &[String]) -> String {
    let path = files.first().map(String::as_str).unwrap_or("src/app.py");
    let fence = super::text_edits::languages_of(path)
        .and_then(|l| l.first())
        .unwrap_or(&"");
    format!(
        "in the form the files are shown in: the file's path alone on one line (for example `{path}`), \
         then a fenced code block (```{fence}) holding the whole file"
    )
}

/// How this session's harness settings change the work: whole-file edits,
/// the check run after edits.
fn harness_help(config: &WorkerConfig, files: &[String]) -> String {
    let mut text = String::new();
    if config.harness.edit_format() == EditFormat::WholeFile {
        text.push_str(&format!(
            "\n\n## Editing files\n\n\
             To create or change a file, write its whole new content {}. \
             The harness writes every such block to its path, replacing the whole file: never leave parts out. \
             Use the tools (`bash`) to run commands and to commit.\n",
            block_form(files)
        ));
    }
    let has_check = config.feature.as_ref().is_some_and(|f| f.check.is_some());
    if config.role == Role::Worker && config.harness.check_after_edit && has_check {
        text.push_str(
            "\n\nAfter every turn in which files changed, the harness runs your feature's check itself and tells you \
             how it went: the tests passing, the ones failing, the last lines of output. You need not run it yourself. \
             If the session ends with the check failing, the harness keeps the state in which most tests passed.\n",
        );
    }
    text
}

/// AGENTS.md and CLAUDE.md at the repo root, each cut to `max` bytes with a
/// note when cut. A CLAUDE.md that says the same as AGENTS.md (a copy or a
/// link to it) is put in once.
pub(super) fn agents_md(workspace: &Path, max: usize) -> String {
    let mut text = String::new();
    let mut bodies: Vec<String> = Vec::new();
    for name in AGENT_FILES {
        let Ok(body) = std::fs::read_to_string(workspace.join(name)) else {
            continue;
        };
        let body = body.trim_end().to_string();
        if body.is_empty() || bodies.contains(&body) {
            continue;
        }
        let cut = head(&body, max);
        let note = if cut.len() < body.len() {
            format!(
                "\n\n({name} is longer than {max} bytes and was cut here; read the file for the rest.)"
            )
        } else {
            String::new()
        };
        text.push_str(&format!(
            "\n\n## The project's instructions ({name})\n\n{cut}{note}\n"
        ));
        bodies.push(body);
    }
    text
}

/// The initializer's task when it writes the feature list.
const NEW_LIST_TASK: &str = "Write features.json (every feature `\"passes\": false`, every feature with a `check`), \
     the acceptance tests those checks run (under `tests/`: fast, deterministic, each one failing now, before its feature \
     exists), an executable init.sh and progress.md, then commit. Once you are accepted the acceptance tests are frozen: \
     no later session can change them.";

/// The initializer's task when the list was given (`init --features`).
const GIVEN_LIST_TASK: &str = "features.json is already given (imported by the user): keep its features, their order and every field \
     as they are, `passes` included, and add a `check` to each feature. Your job is the checks, the acceptance tests \
     they run, an executable init.sh, the project's skeleton and progress.md; then commit. A check must fail today \
     for a feature with `\"passes\": false`; a feature given as `\"passes\": true` keeps it only if its check passes \
     on your tree (otherwise the harness resets it to false).";

/// Where the acceptance tests are, and that they cannot be changed.
fn frozen_note(config: &WorkerConfig) -> String {
    if config.frozen.is_empty() {
        return String::new();
    }
    let paths: Vec<String> = config.frozen.iter().map(|p| format!("`{p}`")).collect();
    format!(
        "The acceptance tests are in {} (`[run] frozen` in longrun.toml). They are read-only: you \
         cannot change, add to, delete or rename them, and verification runs them as they are on main. \
         Make the code pass them; put tests of your own elsewhere.\n\n",
        paths.join(", ")
    )
}

/// Largest file shown in the first message, and all of them together, in bytes.
const SHOWN_FILE_BYTES: u64 = 8 * 1024;
const SHOWN_FILES_BYTES: usize = 24 * 1024;

/// The heading of the files a feature names that the session may not change.
pub const READ_ONLY_HEADING: &str = "For reference (the harness takes no change to these):";
/// What follows a file's quoted path when it is shown for reference
/// ([`crate::confined::strategy`]'s messages read it back).
pub const READ_ONLY_SUFFIX: &str = "`, read-only:";
/// The heading of the files it may change.
pub const TO_CHANGE_HEADING: &str = "To change:";

/// The files the feature names (in its description, steps or check) and the
/// acceptance tests, as they are now: a model starts from them instead of
/// spending its first turns reading them (small models seldom read before
/// they write). Small regular files inside the workspace only. `change`:
/// the session's [`files_to_change`].
pub(super) fn named_files(
    config: &WorkerConfig,
    feature: &crate::protocol::FeatureBrief,
    workspace: &Path,
    change: &[String],
) -> String {
    named_files_as(config, feature, workspace, change, &Shown::AsFound)
}

/// How the files to change appear in an attempt's message.
pub enum Shown<'b> {
    /// As the session found them.
    AsFound,
    /// Named, their content left out: the attempt writes them from scratch.
    Anew,
    /// As the best state so far holds them: the attempt builds on it.
    Best(&'b BestFiles),
}

/// [`named_files`]; `anew`: the files to change are named, their content
/// left out (an attempt that writes them from scratch).
pub(super) fn named_files_as(
    config: &WorkerConfig,
    feature: &crate::protocol::FeatureBrief,
    workspace: &Path,
    change: &[String],
    shown: &Shown,
) -> String {
    let names: Vec<String> = mentioned_paths(&feature.json)
        .into_iter()
        .chain(config.frozen.iter().cloned())
        .chain(change.iter().cloned())
        .fold(Vec::new(), |mut all, n| {
            if !all.contains(&n) {
                all.push(n);
            }
            all
        });
    // The files the session may not change come first and are not headed by
    // their path alone, the form a whole-file answer takes: shown the tests
    // in that form, a small model writes them out again before its code.
    let (mut fixed, mut to_change) = (String::new(), String::new());
    for name in names {
        let path = workspace.join(&name);
        let small = std::fs::symlink_metadata(&path)
            .is_ok_and(|m| m.file_type().is_file() && m.len() <= SHOWN_FILE_BYTES);
        let best = match shown {
            Shown::Best(best) if change.contains(&name) => best
                .files
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, body)| body.clone())
                .filter(|b| b.len() as u64 <= SHOWN_FILE_BYTES),
            _ => None,
        };
        let Some(body) =
            best.or_else(|| small.then(|| std::fs::read_to_string(&path).ok()).flatten())
        else {
            if change.contains(&name) && can_be_written(workspace, &name) {
                to_change.push_str(&format!(
                    "`{name}`: it does not exist yet; write it whole.\n\n"
                ));
            }
            continue;
        };
        if fixed.len() + to_change.len() + body.len() > SHOWN_FILES_BYTES {
            break;
        }
        let body = body.trim_end();
        if change.contains(&name) && matches!(shown, Shown::Anew) {
            to_change.push_str(&format!(
                "`{name}`: its content is left out; write it anew, from scratch.\n\n"
            ));
        } else if change.contains(&name) {
            to_change.push_str(&format!("{name}\n```\n{body}\n```\n\n"));
        } else {
            fixed.push_str(&format!("`{name}{READ_ONLY_SUFFIX}\n```\n{body}\n```\n\n"));
        }
    }
    if fixed.is_empty() && to_change.is_empty() {
        return String::new();
    }
    let mut text = match shown {
        Shown::Best(_) => "The files your feature names; the ones to change as the best attempt so far wrote them.\n\n",
        _ => "The files your feature names, as they are now.\n\n",
    }
    .to_string();
    if !fixed.is_empty() {
        text.push_str(&format!("{READ_ONLY_HEADING}\n\n"));
        text.push_str(&fixed);
    }
    if !to_change.is_empty() {
        text.push_str(&format!("{TO_CHANGE_HEADING}\n\n"));
        text.push_str(&to_change);
    }
    text
}

/// The last line of the first message: what to do now, as this session's
/// harness settings make it.
fn what_to_do(config: &WorkerConfig, id: &str) -> String {
    let h = &config.harness;
    let has_check = config.feature.as_ref().is_some_and(|f| f.check.is_some());
    let how = match h.edit_format() {
        EditFormat::WholeFile => " Write each file you change whole, in a fenced code block with its path alone on the line before.",
        EditFormat::Tools => "",
    };
    if has_check && h.check_after_edit && h.commit_when_passing() {
        return format!(
            "Implement `{id}` now: change the code until its check passes.{how} The harness runs the check after each edit \
             and tells you the result; once it passes, the harness sets `passes`, notes it in progress.md and commits."
        );
    }
    format!(
        "Implement `{id}` now, run its check, set only its `passes` to true, append to progress.md and commit.{how}"
    )
}

/// What the harness found when it ran the feature's check before the first
/// turn (whole-file sessions: small models otherwise spend their first turns
/// running it), for the first message.
fn check_now(failing: Option<&str>) -> String {
    match failing {
        Some(summary) => {
            format!("The harness ran the check before this session's first turn: {summary}\n\n")
        }
        None => String::new(),
    }
}

/// The first user message: the assignment, the recent history, the notes and
/// what `init.sh` said. `failing`: what the feature's check said when the
/// harness ran it before the first turn, when it did and it failed.
pub fn first_message(
    config: &WorkerConfig,
    workspace: &Path,
    init_report: &str,
    failing: Option<&str>,
) -> String {
    let log = crate::git::oneline_log(workspace, 20).unwrap_or_default();
    let notes = std::fs::read_to_string(workspace.join(crate::progress::FILE_NAME))
        .map(|t| crate::progress::tail(&t, 40))
        .unwrap_or_else(|_| "(no progress.md yet)".into());
    let checks = if config.checks.is_empty() {
        "(none besides the feature's own check)".to_string()
    } else {
        config
            .checks
            .iter()
            .map(|c| format!("- `{c}`"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    match (&config.role, &config.feature) {
        (Role::Worker, Some(feature)) => render(
            "This is session {{session}}. Your assignment is feature `{{id}}`:\n\n```json\n{{json}}\n```\n\n\
             Its check: {{check}}\n\nGlobal checks:\n{{checks}}\n\n{{frozen}}\
             Features passing: {{passing}} of {{total}}.\n\n\
             Recent commits (`git log --oneline -20`):\n```\n{{log}}\n```\n\n\
             The end of progress.md:\n```\n{{notes}}\n```\n\n{{init}}\n\n{{files}}{{earlier}}{{now}}{{todo}}",
            &[
                ("session", &config.session.to_string()),
                ("id", &feature.id),
                ("json", &feature.json),
                ("check", &feature.check.as_ref().map(|c| format!("`{c}`")).unwrap_or_else(|| "(none: the global checks decide)".into())),
                ("checks", &checks),
                ("frozen", &frozen_note(config)),
                ("passing", &config.passing.to_string()),
                ("total", &config.total.to_string()),
                ("log", &log),
                ("notes", &notes),
                ("init", init_report),
                ("earlier", &earlier_attempts(config)),
                ("files", &named_files(config, feature, workspace, &files_to_change(config, workspace))),
                ("now", &check_now(failing)),
                ("todo", &what_to_do(config, &feature.id)),
            ],
        ),
        _ => {
            let spec = std::fs::read_to_string(workspace.join("SPEC.md")).unwrap_or_default();
            let given = workspace.join(crate::features::FILE_NAME).exists();
            let task = if given { GIVEN_LIST_TASK } else { NEW_LIST_TASK };
            render(
                "This is session {{session}}, the initializer. The spec (SPEC.md):\n\n{{spec}}\n\n\
                 Recent commits:\n```\n{{log}}\n```\n\n{{task}}",
                &[
                    ("session", &config.session.to_string()),
                    ("spec", &spec),
                    ("log", &log),
                    ("task", task),
                ],
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form of a file block is said in words, with the file to
    /// change: no block to copy, no code.
    #[test]
    fn the_file_block_form_names_the_file_to_change_and_shows_no_block() {
        let form = block_form(&["lib/roman.py".to_string()]);
        assert!(
            form.contains("alone on one line (for example `lib/roman.py`), then a fenced code block (```python)"),
            "{form}"
        );
        assert!(block_form(&["slug.mjs".to_string()]).contains("(```javascript)"));
        assert!(block_form(&[]).contains("`src/app.py`"));
        assert!(!form.contains('\n') && !form.contains("def "), "{form}");
    }
}
