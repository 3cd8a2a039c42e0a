//! The verdict of a session, as recorded in its trailers.

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
