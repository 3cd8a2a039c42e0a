//! The session transcript: `.longrun/sessions/NNNN/transcript.jsonl`.
//!
//! Written only by the orchestrator, one JSON object a line: every model
//! request as sent, every response, the worker's events and the verdict.
//! The worker cannot edit it.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::broker::{SessionEvent, WorkerReport};
use crate::model::{ChatRequest, ChatResponse, ModelErrorKind};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Entry {
    SessionStarted {
        session: u32,
        role: String,
        feature: Option<String>,
        model: String,
        base: String,
    },
    Request {
        index: u32,
        request: ChatRequest,
        /// The model that served it, when a subagent asked.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    Response {
        index: u32,
        response: ChatResponse,
    },
    /// A model request failed for good (after any retries).
    ModelError {
        index: u32,
        message: String,
        #[serde(default)]
        kind: ModelErrorKind,
    },
    /// One try of a model request failed and is tried again after `wait_ms`.
    Retry {
        index: u32,
        attempt: u32,
        reason: String,
        wait_ms: u64,
    },
    Event {
        event: SessionEvent,
    },
    /// The worker broke the broker protocol; what it sent was not acted on.
    ProtocolViolation {
        what: String,
    },
    WorkerFinished {
        report: Option<WorkerReport>,
        exit: String,
    },
    Check {
        name: String,
        command: String,
        passed: bool,
        output_tail: String,
    },
    /// The hosts a confined run (`during`: the session, or a verification
    /// step) asked the registries proxy for, allowed or refused.
    Network {
        during: String,
        contacts: Vec<crate::sandbox::proxy::Contact>,
    },
    Verdict {
        verdict: String,
        reasons: Vec<String>,
        commit: String,
    },
}

pub struct Transcript {
    path: PathBuf,
    file: File,
}

impl Transcript {
    pub fn open(path: &Path) -> anyhow::Result<Transcript> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("failed to open the transcript {}", path.display()))?;
        Ok(Transcript {
            path: path.to_path_buf(),
            file,
        })
    }

    pub fn append(&mut self, entry: &Entry) -> anyhow::Result<()> {
        self.append_all(std::slice::from_ref(entry))
    }

    /// Append `entries` with one write and one sync: a verification's
    /// check results cost one fdatasync, not one per passing feature.
    pub fn append_all(&mut self, entries: &[Entry]) -> anyhow::Result<()> {
        let mut lines = Vec::new();
        for entry in entries {
            serde_json::to_writer(&mut lines, entry)?;
            lines.push(b'\n');
        }
        self.file
            .write_all(&lines)
            .and_then(|()| self.file.sync_data())
            .with_context(|| format!("failed to write the transcript {}", self.path.display()))
    }
}

/// Read a transcript back, skipping a torn last line.
pub fn read(path: &Path) -> anyhow::Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read the transcript {}", path.display()))?;
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect())
}

/// Every host the transcript at `path` says a registries proxy was asked
/// for, across the session's confined runs.
pub fn contacts(path: &Path) -> Vec<crate::sandbox::proxy::Contact> {
    read(path)
        .unwrap_or_default()
        .into_iter()
        .flat_map(|e| match e {
            Entry::Network { contacts, .. } => contacts,
            _ => Vec::new(),
        })
        .collect()
}
