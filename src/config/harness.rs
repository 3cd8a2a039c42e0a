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
        }
    }
}

impl HarnessSettings {
    /// The estimated prompt size, in tokens, past which the harness compacts.
    pub fn compact_threshold(&self) -> u64 {
        (self.context_window as f64 * self.compact_at.clamp(0.05, 1.0)) as u64
    }
}
