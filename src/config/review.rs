//! `[review]`: an optional reviewer model that reads a verified worker
//! session's feature, diff and check output and answers accept or a reason.

use serde::{Deserialize, Serialize};

/// What the reviewer's answer does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewMode {
    /// No review.
    #[default]
    Off,
    /// The answer is recorded (a trailer), the verdict stands.
    Advisory,
    /// A refusal is a rejection with the reviewer's reason.
    Required,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewSection {
    #[serde(default)]
    pub mode: ReviewMode,
    /// Bytes of the diff the reviewer reads; the rest is cut with a note.
    #[serde(default = "default_diff_bytes")]
    pub max_diff_bytes: usize,
}

fn default_diff_bytes() -> usize {
    60_000
}

impl Default for ReviewSection {
    fn default() -> Self {
        ReviewSection {
            mode: ReviewMode::Off,
            max_diff_bytes: default_diff_bytes(),
        }
    }
}
