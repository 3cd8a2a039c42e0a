//! What the orchestrator tells a worker when it starts it: written to
//! `worker.json` in the session directory, read by the worker. With the
//! broker's messages, the only thing the two sides share.

use serde::{Deserialize, Serialize};

use crate::config::BudgetSection;
use crate::config::HarnessSettings;
use crate::sandbox::SandboxSpec;
use crate::schema::Role;
use crate::skill_files::SkillDoc;

/// The feature a worker session is assigned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureBrief {
    pub id: String,
    pub description: String,
    /// The feature's JSON object as written in features.json.
    pub json: String,
    pub check: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerConfig {
    pub session: u32,
    pub role: Role,
    pub feature: Option<FeatureBrief>,
    pub sandbox: SandboxSpec,
    /// What this session may spend: steps, tokens, wall time, cost.
    pub budget: BudgetSection,
    /// How the harness runs the loop: loops, context, checks, subagents.
    #[serde(default)]
    pub harness: HarnessSettings,
    /// Global checks from longrun.toml, shown to the model and run by the harness before the end.
    pub checks: Vec<String>,
    /// Seconds each check may run.
    #[serde(default = "default_check_timeout")]
    pub check_timeout_secs: u64,
    /// `[run] protected`: glob patterns of paths the session may not change.
    #[serde(default)]
    pub protected: Vec<String>,
    /// `[run] frozen`: glob patterns of the acceptance tests, read-only here.
    #[serde(default)]
    pub frozen: Vec<String>,
    /// Skills from the user's `~/.config/longrun/skills`, read by the
    /// orchestrator because the confined worker cannot see that directory.
    #[serde(default)]
    pub user_skills: Vec<SkillDoc>,
    /// Features passing and in all, at the session's base.
    pub passing: usize,
    pub total: usize,
    /// `[tools] output_cap` of longrun.toml.
    #[serde(default = "crate::config::default_output_cap")]
    pub tool_output_cap: usize,
    /// `[permissions]` of longrun.toml.
    #[serde(default)]
    pub permissions: crate::permissions::PermissionsConfig,
    /// What the harness knows that the model should (earlier attempts and where their work is).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Whole-file sessions where the harness commits for the model: what
    /// the latest sessions not accepted changed from main (their best work,
    /// at their refs), newest first, for the harness to try before it asks
    /// the model. Untrusted data: the worker writes only the files its
    /// feature names, and verification is unchanged.
    #[serde(default)]
    pub earlier_work: Vec<EarlierWork>,
}

/// One earlier session's changed files ([`WorkerConfig::earlier_work`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlierWork {
    pub session: u32,
    /// Path and text of each small text file it added or changed.
    pub files: Vec<(String, String)>,
}

fn default_check_timeout() -> u64 {
    600
}

/// What `longrun __export` writes before the pack of a session's work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportHeader {
    /// The session's HEAD after the WIP commit, if one was made.
    pub head: String,
    /// Uncommitted changes were committed as WIP.
    pub wip: bool,
    /// Uncommitted files left out of the WIP commit for their size, with it.
    #[serde(default)]
    pub dropped: Vec<String>,
}

/// The exit status of `__export` when the pack is over its byte cap.
pub const EXPORT_OVER_CAP: u8 = 3;

/// The name of the harness's first check of every round (the session's own
/// rules), which the orchestrator counts rounds by.
pub const SESSION_RULES: &str = "session rules";
