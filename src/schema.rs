//! The record's vocabulary: verdicts, roles and trailer keys, one definition
//! each, used by the writer (the verdict commit) and every reader.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Verified and merged into main.
    Accepted,
    /// The work broke a rule or failed a check.
    Rejected,
    /// A budget or limit ended the session before the work verified.
    Incomplete,
    /// Stopped by a signal or a crash; the work is kept.
    Interrupted,
    /// The model or the harness failed.
    Failed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Accepted => "accepted",
            Verdict::Rejected => "rejected",
            Verdict::Incomplete => "incomplete",
            Verdict::Interrupted => "interrupted",
            Verdict::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<Verdict> {
        [
            Verdict::Accepted,
            Verdict::Rejected,
            Verdict::Incomplete,
            Verdict::Interrupted,
            Verdict::Failed,
        ]
        .into_iter()
        .find(|v| v.as_str() == s)
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a session that was not accepted failed by: only the work's failures
/// count toward a feature's `max_attempts` and the run's
/// `max_consecutive_failures`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The work: rejected by verification, or incomplete within its budget.
    Work,
    /// The run: the provider unreachable or refusing the key, a run limit
    /// (`--max-cost`), an interruption (a signal, a kill -9 of the
    /// orchestrator), or the harness itself.
    Run,
}

impl Fault {
    pub fn as_str(self) -> &'static str {
        match self {
            Fault::Work => "work",
            Fault::Run => "run",
        }
    }

    pub fn parse(s: &str) -> Option<Fault> {
        [Fault::Work, Fault::Run]
            .into_iter()
            .find(|f| f.as_str() == s)
    }

    /// A verdict commit written before the `Longrun-Fault` trailer: an
    /// interruption was the run's, anything else counted as the work's.
    pub fn of_legacy(verdict: Verdict) -> Option<Fault> {
        match verdict {
            Verdict::Accepted => None,
            Verdict::Interrupted => Some(Fault::Run),
            _ => Some(Fault::Work),
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Turns the spec into features.json, init.sh and progress.md.
    Initializer,
    /// Implements one feature.
    Worker,
}

impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        [Role::Initializer, Role::Worker]
            .into_iter()
            .find(|r| r.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Initializer => "initializer",
            Role::Worker => "worker",
        }
    }
}

/// The `Longrun-Role` of a commit a person made through `longrun amend`,
/// `features add`, `features reopen` or `retry`: no session made it, so it
/// is not a [`Role`], and readers of sessions pass over it.
pub const HUMAN: &str = "human";

/// What a person's change to the contract did (`Longrun-Contract`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContractChange {
    /// Files of the contract edited in the work tree (`longrun amend`).
    Amend,
    /// A feature added (`longrun features add`).
    Add,
    /// A passing feature set back to failing (`features reopen`, `retry`).
    Reopen,
}

impl ContractChange {
    pub fn as_str(self) -> &'static str {
        match self {
            ContractChange::Amend => "amend",
            ContractChange::Add => "add",
            ContractChange::Reopen => "reopen",
        }
    }

    pub fn parse(s: &str) -> Option<ContractChange> {
        [
            ContractChange::Amend,
            ContractChange::Add,
            ContractChange::Reopen,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// The trailer keys of a verdict commit, written by `trusted::record` and
/// read back by `trusted::history`.
pub mod trailer {
    pub const SESSION: &str = "Longrun-Session";
    pub const ROLE: &str = "Longrun-Role";
    pub const FEATURE: &str = "Longrun-Feature";
    pub const VERDICT: &str = "Longrun-Verdict";
    /// `work` or `run` (see [`super::Fault`]), on every verdict but `accepted`.
    pub const FAULT: &str = "Longrun-Fault";
    pub const REASON: &str = "Longrun-Reason";
    pub const MODEL: &str = "Longrun-Model";
    pub const TOKENS_IN: &str = "Longrun-Tokens-In";
    pub const TOKENS_OUT: &str = "Longrun-Tokens-Out";
    pub const TOKENS_CACHED: &str = "Longrun-Tokens-Cached";
    pub const COST_USD: &str = "Longrun-Cost-USD";
    pub const STEPS: &str = "Longrun-Steps";
    pub const DURATION_S: &str = "Longrun-Duration-S";
    pub const WORK_REF: &str = "Longrun-Work-Ref";
    pub const LOOP: &str = "Longrun-Loop";
    pub const SANDBOX: &str = "Longrun-Sandbox";
    pub const RETRY: &str = "Longrun-Retry";
    /// A host the session's registries proxy was asked for, with the answer
    /// and the connections: `pypi.org:443 allowed x3`.
    pub const NETWORK: &str = "Longrun-Network";
    /// The reviewer's answer (`[review]`): `accept (MODEL)` or `reject (MODEL): why`.
    pub const REVIEW: &str = "Longrun-Review";
    /// A person's change to the contract: `amend`, `add` or `reopen`
    /// ([`super::ContractChange`]), on a commit whose role is [`super::HUMAN`].
    pub const CONTRACT: &str = "Longrun-Contract";

    /// Every key, in the order a verdict commit writes them.
    pub const ALL: [&str; 20] = [
        SESSION,
        ROLE,
        FEATURE,
        VERDICT,
        FAULT,
        REASON,
        MODEL,
        TOKENS_IN,
        TOKENS_OUT,
        TOKENS_CACHED,
        COST_USD,
        STEPS,
        DURATION_S,
        WORK_REF,
        LOOP,
        SANDBOX,
        RETRY,
        NETWORK,
        REVIEW,
        CONTRACT,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_roles_round_trip_through_their_words() {
        for v in [
            Verdict::Accepted,
            Verdict::Rejected,
            Verdict::Incomplete,
            Verdict::Interrupted,
            Verdict::Failed,
        ] {
            assert_eq!(Verdict::parse(v.as_str()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{v}\""));
        }
        for f in [Fault::Work, Fault::Run] {
            assert_eq!(Fault::parse(f.as_str()), Some(f));
            assert_eq!(serde_json::to_string(&f).unwrap(), format!("\"{f}\""));
        }
        assert_eq!(Fault::of_legacy(Verdict::Accepted), None);
        assert_eq!(Fault::of_legacy(Verdict::Interrupted), Some(Fault::Run));
        assert_eq!(Fault::of_legacy(Verdict::Rejected), Some(Fault::Work));
        for r in [Role::Initializer, Role::Worker] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Verdict::parse("Accepted"), None);
        for c in [
            ContractChange::Amend,
            ContractChange::Add,
            ContractChange::Reopen,
        ] {
            assert_eq!(ContractChange::parse(c.as_str()), Some(c));
        }
        // A person's commit is never read as a session's.
        assert_eq!(Role::parse(HUMAN), None);
    }

    #[test]
    fn trailer_keys_are_distinct_and_git_trailer_shaped() {
        let mut seen = std::collections::HashSet::new();
        for key in trailer::ALL {
            assert!(seen.insert(key), "{key} twice");
            assert!(key.starts_with("Longrun-"));
            assert!(key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
        }
    }
}
