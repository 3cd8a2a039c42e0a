//! The project's history read back from main's first-parent trailers.
//!
//! This is what `status`, `log` and `continue` decide from; `.longrun/` is
//! never consulted for it.

use crate::schema::{trailer, Fault};

/// How a `Longrun-Sandbox` trailer says what was not enforced.
const NOT_ENFORCED: &str = "not enforced: ";
use std::collections::BTreeMap;

use serde::Serialize;

use git2::{Oid, Repository};

use super::repo::{self, LogEntry};
use crate::trusted::Verdict;

/// One session, from its verdict commit's trailers.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SessionRow {
    pub session: u32,
    pub role: String,
    pub feature: Option<String>,
    pub verdict: String,
    pub reasons: Vec<String>,
    pub model: String,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    pub steps: u32,
    pub duration_s: u64,
    pub work_ref: Option<String>,
    pub commit: String,
    pub time: i64,
    /// `work` or `run` for a session not accepted: only the work's failures
    /// count against its feature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<Fault>,
    /// What the sandbox could not enforce on the machine that ran it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_enforced: Vec<String>,
    /// Whether its commit says what the sandbox enforced at all.
    #[serde(skip)]
    pub sandbox_recorded: bool,
}

impl SessionRow {
    fn from_entry(e: &LogEntry) -> Option<SessionRow> {
        let session = e.trailer(trailer::SESSION)?.parse().ok()?;
        let num = |k: &str| {
            e.trailer(k)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        Some(SessionRow {
            session,
            role: e.trailer(trailer::ROLE).unwrap_or("").to_string(),
            feature: e.trailer(trailer::FEATURE).map(str::to_string),
            verdict: e.trailer(trailer::VERDICT).unwrap_or("").to_string(),
            reasons: e
                .trailers_all(trailer::REASON)
                .map(str::to_string)
                .collect(),
            model: e.trailer(trailer::MODEL).unwrap_or("").to_string(),
            tokens_in: num(trailer::TOKENS_IN),
            tokens_out: num(trailer::TOKENS_OUT),
            cost_usd: e
                .trailer(trailer::COST_USD)
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            steps: num(trailer::STEPS) as u32,
            duration_s: num(trailer::DURATION_S),
            work_ref: e.trailer(trailer::WORK_REF).map(str::to_string),
            commit: e.id.to_string(),
            time: e.time,
            fault: match e.trailer(trailer::FAULT) {
                Some(f) => Fault::parse(f),
                None => Verdict::parse(e.trailer(trailer::VERDICT).unwrap_or(""))
                    .and_then(Fault::of_legacy),
            },
            not_enforced: e
                .trailers_all(trailer::SANDBOX)
                .filter_map(|l| l.strip_prefix(NOT_ENFORCED))
                .map(str::to_string)
                .collect(),
            sandbox_recorded: e.trailer(trailer::SANDBOX).is_some(),
        })
    }

    pub fn verdict(&self) -> Option<Verdict> {
        Verdict::parse(&self.verdict)
    }
}

/// Per-feature counts.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FeatureStats {
    /// Sessions that worked on it and failed by their work (not by the
    /// run: a provider outage, a limit, an interruption), since the last `retry`.
    pub failed_attempts: u32,
    /// Sessions that worked on it and ended by the run's fault.
    pub run_faults: u32,
    /// All sessions that worked on it.
    pub attempts: u32,
    pub last_verdict: Option<String>,
    pub last_reasons: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct History {
    pub sessions: Vec<SessionRow>,
    pub features: BTreeMap<String, FeatureStats>,
    /// The commit of main this history was read up to.
    pub tip: Option<Oid>,
    /// The highest session number on main.
    pub last_session: u32,
    initialized: bool,
}

impl History {
    pub fn from_log(log: &[LogEntry]) -> History {
        let mut history = History::default();
        for entry in log {
            history.push(entry);
        }
        history
    }

    /// Read main's first-parent history from scratch.
    pub fn read(repo: &Repository) -> anyhow::Result<History> {
        let mut history = History::default();
        history.catch_up(repo)?;
        Ok(history)
    }

    /// Bring the history up to main's tip, reading only the commits added
    /// since it was last read; a main whose earlier history changed (a user
    /// rewrote it) is read again from the start.
    pub fn catch_up(&mut self, repo: &Repository) -> anyhow::Result<()> {
        let head = repo::main_head(repo)?;
        if head == self.tip {
            return Ok(());
        }
        let Some(head) = head else {
            *self = History::default();
            return Ok(());
        };
        let mut added = Vec::new();
        let mut next = Some(repo.find_commit(head)?);
        while let Some(commit) = next {
            if Some(commit.id()) == self.tip {
                break;
            }
            next = commit.parents().next();
            if next.is_none() && self.tip.is_some() {
                // The old tip is not on main's first-parent line any more.
                *self = History::default();
            }
            added.push(repo::log_entry(&commit));
        }
        for entry in added.iter().rev() {
            self.push(entry);
        }
        self.tip = Some(head);
        Ok(())
    }

    /// Add the next commit of main's first-parent history.
    pub fn push(&mut self, entry: &LogEntry) {
        self.tip = Some(entry.id);
        if let Some(id) = entry.trailer(trailer::RETRY) {
            self.features
                .entry(id.to_string())
                .or_default()
                .failed_attempts = 0;
            return;
        }
        let Some(row) = SessionRow::from_entry(entry) else {
            return;
        };
        if let Some(feature) = &row.feature {
            let stats = self.features.entry(feature.clone()).or_default();
            stats.attempts += 1;
            match row.fault {
                _ if row.verdict() == Some(Verdict::Accepted) => {}
                Some(Fault::Run) => stats.run_faults += 1,
                _ => stats.failed_attempts += 1,
            }
            stats.last_verdict = Some(row.verdict.clone());
            stats.last_reasons = row.reasons.clone();
        }
        self.last_session = self.last_session.max(row.session);
        self.initialized |= row.role == "initializer" && row.verdict() == Some(Verdict::Accepted);
        self.sessions.push(row);
    }

    /// True once an initializer session has been accepted.
    pub fn initialized(&self) -> bool {
        self.initialized
    }

    pub fn stats(&self, feature: &str) -> FeatureStats {
        self.features.get(feature).cloned().unwrap_or_default()
    }

    pub fn is_stuck(&self, feature: &str, max_attempts: u32) -> bool {
        self.stats(feature).failed_attempts >= max_attempts
    }

    /// What the sandbox of the latest session that recorded its sandbox did not enforce.
    pub fn not_enforced(&self) -> &[String] {
        self.sessions
            .iter()
            .rev()
            .find(|s| s.sandbox_recorded)
            .map_or(&[], |s| s.not_enforced.as_slice())
    }

    pub fn tokens(&self) -> (u64, u64) {
        self.sessions
            .iter()
            .fold((0, 0), |(i, o), s| (i + s.tokens_in, o + s.tokens_out))
    }

    pub fn cost(&self) -> f64 {
        self.sessions.iter().map(|s| s.cost_usd).sum()
    }
}
