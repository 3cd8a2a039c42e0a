//! The sessions a running `continue` has started and not yet recorded, read
//! back from their transcripts (written by the orchestrator only), for
//! `longrun status` while a run goes.

use std::time::SystemTime;

use serde::Serialize;

use super::lifecycle::session_dir;
use crate::broker::SessionEvent;
use crate::trusted::record::transcript::{self, Entry};
use crate::trusted::{History, Project};

/// One session in flight.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InProgress {
    pub session: u32,
    pub role: String,
    pub feature: Option<String>,
    pub model: String,
    /// The last tool call's step.
    pub step: u32,
    /// `working` while the worker runs, `verifying` once it has ended.
    pub phase: &'static str,
    pub elapsed_s: u64,
}

/// Every unrecorded session that has a transcript, oldest first. Call only
/// while a run holds the lock: otherwise these are interrupted sessions.
pub fn sessions(project: &Project, history: &History) -> Vec<InProgress> {
    super::recover::unrecorded(project, history)
        .into_iter()
        .filter_map(|n| read(project, n))
        .collect()
}

fn read(project: &Project, number: u32) -> Option<InProgress> {
    let dir = session_dir(project, number);
    let entries = transcript::read(&dir.join("transcript.jsonl")).ok()?;
    let mut found = None;
    let mut step = 0;
    let mut phase = "working";
    for entry in &entries {
        match entry {
            Entry::SessionStarted {
                role,
                feature,
                model,
                ..
            } => found = Some((role.clone(), feature.clone(), model.clone())),
            Entry::Event {
                event: SessionEvent::ToolCall { step: s, .. },
            } => step = *s,
            Entry::WorkerFinished { .. } | Entry::Check { .. } => phase = "verifying",
            _ => {}
        }
    }
    let (role, feature, model) = found?;
    let started = std::fs::metadata(dir.join("worker.json"))
        .or_else(|_| std::fs::metadata(&dir))
        .and_then(|m| m.modified())
        .ok()?;
    let elapsed_s = SystemTime::now()
        .duration_since(started)
        .map_or(0, |d| d.as_secs());
    Some(InProgress {
        session: number,
        role,
        feature,
        model,
        step,
        phase,
        elapsed_s,
    })
}
