//! `.longrun/state.json`: a cache of what git already records.
//!
//! Git is the source of truth. The state file only remembers the highest
//! session number handed out (so numbers never repeat, even for sessions that
//! never reached a verdict) and is rebuilt when missing or corrupt.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fsutil::write_atomic;

pub const DIR: &str = ".longrun";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// The highest session number handed out so far.
    pub last_session: u32,
}

pub fn longrun_dir(project: &Path) -> PathBuf {
    project.join(DIR)
}

pub fn sessions_dir(project: &Path) -> PathBuf {
    longrun_dir(project).join("sessions")
}

fn state_path(project: &Path) -> PathBuf {
    longrun_dir(project).join("state.json")
}

impl State {
    /// Load the state, reconciled with the log and the session directories.
    /// `from_log` is the highest session number recorded on main.
    pub fn load(project: &Path, from_log: u32) -> State {
        let cached: State = std::fs::read_to_string(state_path(project))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let from_dirs = session_dir_numbers(project).into_iter().max().unwrap_or(0);
        State {
            last_session: cached.last_session.max(from_log).max(from_dirs),
        }
    }

    pub fn save(&self, project: &Path) -> anyhow::Result<()> {
        let text = serde_json::to_vec_pretty(self)?;
        write_atomic(&state_path(project), &text)
    }
}

/// Numbers of the session directories that exist under `.longrun/sessions`.
pub fn session_dir_numbers(project: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(sessions_dir(project)) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}
