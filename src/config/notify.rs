//! `[notify]`: a command the run tells about the events a person cares about.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotifySection {
    /// A shell command; it gets the event as one JSON object on stdin and a
    /// one-line summary in `LONGRUN_SUMMARY`. `--notify` overrides it.
    pub command: Option<String>,
    /// Seconds it may run before it is killed.
    #[serde(default = "default_timeout")]
    pub timeout_secs: u64,
    /// Tell after this many sessions in a row ended without acceptance (0: never).
    #[serde(default = "default_after_rejections")]
    pub after_rejections: u32,
    /// Variables passed through from longrun's environment (a webhook URL, say).
    #[serde(default)]
    pub env: Vec<String>,
    /// Paths it may write besides its own scratch directories (a log file, a
    /// D-Bus socket for notify-send).
    #[serde(default)]
    pub writable: Vec<PathBuf>,
}

fn default_timeout() -> u64 {
    30
}

fn default_after_rejections() -> u32 {
    3
}

impl Default for NotifySection {
    fn default() -> Self {
        NotifySection {
            command: None,
            timeout_secs: default_timeout(),
            after_rejections: default_after_rejections(),
            env: Vec::new(),
            writable: Vec::new(),
        }
    }
}
