//! `[harness]` in longrun.toml: how the harness runs a session's loop — loop
//! detection, context management, checks before the end, subagents.
//!
//! Budgets live in `[budget]` ([`crate::config::BudgetSection`]); these are
//! the knobs of the harness itself, each with a default that works unset.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HarnessSettings {
    /// Rounds in which the harness runs the checks and sends the model back
    /// to work before the session may end.
    pub check_rounds: u32,
    /// The same tool call this many times in a row is a loop (and an A/B
    /// alternation of this many cycles).
    pub loop_repeats: u32,
    /// The same failing check output after this many edits is a loop.
    pub loop_edits: u32,
    /// Stub old tool results and compact near the window; off only to measure.
    pub manage_context: bool,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Compact when the estimated prompt passes this share of the window.
    pub compact_at: f64,
    /// Tool results older than this many turns become a one-line stub.
    pub keep_turns: u32,
    /// Turns kept verbatim after a compaction, besides the summary.
    pub compact_keep_turns: u32,
    /// Steps a `task` subagent may take.
    pub subagent_steps: u32,
    /// Bytes of each of AGENTS.md and CLAUDE.md put in the system prompt.
    pub agents_md_bytes: usize,
    /// How the model changes files; unset, the model family's default, else `tools`.
    pub edit_format: Option<EditFormat>,
    /// Find and run tool calls the model wrote in its text (a ```json block,
    /// `<tool_call>` tags, ...) when its answer has no structured ones;
    /// unset, the model family's default, else on.
    pub text_calls: Option<bool>,
    /// Run the assigned feature's check after every turn that changed files,
    /// tell the model how it went, and keep the best state if the session
    /// ends with the check failing.
    pub check_after_edit: bool,
    /// When the check run after edits passes, the harness sets the feature's
    /// `passes`, notes it in progress.md and commits, so the model need not.
    /// Unset: on for a local model family (small models write working code
    /// and stop), off for the rest (they do their own bookkeeping, and a
    /// commit in the middle of their work would surprise them).
    pub commit_when_passing: Option<bool>,
    /// Whole-file sessions: once an attempt leaves the feature's check
    /// failing, the conversation starts again from the files and what the
    /// best attempt so far failed, and the next answer is sampled at this
    /// temperature, so that a small model writes a different file instead
    /// of the same one again (at its usual temperature it copies what it
    /// wrote). Unset: [`DEFAULT_RETRY_TEMPERATURE`] for a local model
    /// family, else off (the conversation goes on as usual).
    pub retry_temperature: Option<f64>,
    /// How the initializer works: `open` (the agent loop with tools) or
    /// `guided` (the harness asks for the plan, then each feature's test,
    /// and writes the checks itself). Unset: guided for whole-file models
    /// (they do not drive tools well enough to leave a features.json),
    /// open for the rest.
    pub initializer: Option<InitializerMode>,
    /// Whole-file sessions with attempts (a retry temperature set): answers
    /// asked for attempt 1 at once, the first at the session's temperature
    /// and the rest at the retry temperature; the harness writes each, runs
    /// the feature's check on it and keeps the best, and the next attempt
    /// repairs that one. 1: one answer per attempt.
    pub candidates: u32,
    /// The same for every later attempt: the repairs of the best state so far.
    pub repair_candidates: u32,
}

/// The most candidates one attempt may ask for (`[harness] candidates`,
/// `repair_candidates`): a local server serves as many slots as it was
/// started with, and each candidate is a check run.
pub const MAX_CANDIDATES: u32 = 16;

/// How the initializer session works ([`HarnessSettings::initializer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum InitializerMode {
    Open,
    Guided,
}

/// The temperature of a local model's later attempts when longrun.toml sets none.
pub const DEFAULT_RETRY_TEMPERATURE: f64 = 0.8;

/// How the model changes files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EditFormat {
    /// `write_file` and `edit_file` calls: for models that call tools reliably.
    Tools,
    /// The whole new file in a fenced code block with its path on the line
    /// before, which the harness writes: for small models whose exact-text
    /// edits and JSON-escaped file contents break.
    WholeFile,
}

impl Default for HarnessSettings {
    fn default() -> Self {
        HarnessSettings {
            check_rounds: 3,
            loop_repeats: 3,
            loop_edits: 3,
            manage_context: true,
            context_window: 128_000,
            compact_at: 0.7,
            keep_turns: 10,
            compact_keep_turns: 4,
            subagent_steps: 25,
            agents_md_bytes: 16 * 1024,
            edit_format: None,
            text_calls: None,
            check_after_edit: true,
            commit_when_passing: None,
            retry_temperature: None,
            initializer: None,
            candidates: 1,
            repair_candidates: 1,
        }
    }
}

impl HarnessSettings {
    pub fn edit_format(&self) -> EditFormat {
        self.edit_format.unwrap_or(EditFormat::Tools)
    }

    pub fn initializer(&self) -> InitializerMode {
        match (self.initializer, self.edit_format()) {
            (Some(mode), _) => mode,
            (None, EditFormat::WholeFile) => InitializerMode::Guided,
            (None, EditFormat::Tools) => InitializerMode::Open,
        }
    }

    /// The most candidates any attempt asks for: what the orchestrator serves at once.
    pub fn max_candidates(&self) -> u32 {
        self.candidates
            .max(self.repair_candidates)
            .clamp(1, MAX_CANDIDATES)
    }

    /// Whether attempts ask for several candidates, and so repair the best one.
    pub fn searches(&self) -> bool {
        self.max_candidates() > 1
    }

    pub fn commit_when_passing(&self) -> bool {
        self.commit_when_passing.unwrap_or(false)
    }

    pub fn text_calls(&self) -> bool {
        self.text_calls.unwrap_or(true)
    }

    /// The estimated prompt size, in tokens, past which the harness compacts.
    pub fn compact_threshold(&self) -> u64 {
        (self.context_window as f64 * self.compact_at.clamp(0.05, 1.0)) as u64
    }
}
