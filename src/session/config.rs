//! What the orchestrator tells a worker: written to `worker.json` in the session directory.

use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Turns the spec into features.json, init.sh and progress.md.
    Initializer,
    /// Implements one feature.
    Worker,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Initializer => "initializer",
            Role::Worker => "worker",
        }
    }
}

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
    /// Model turns this session may take.
    pub max_steps: u32,
    /// Seconds this session may run.
    pub wall_time_secs: u64,
    /// Global checks from longrun.toml, shown to the model.
    pub checks: Vec<String>,
    /// Features passing and in all, at the session's base.
    pub passing: usize,
    pub total: usize,
    /// `[tools] output_cap` of longrun.toml.
    #[serde(default = "crate::tools::default_output_cap")]
    pub tool_output_cap: usize,
    /// What the harness knows that the model should (earlier attempts and where their work is).
    #[serde(default)]
    pub notes: Vec<String>,
}
