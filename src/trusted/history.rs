//! The project's history read back from main's first-parent trailers.
//!
//! This is what `status`, `log` and `continue` decide from; `.longrun/` is
//! never consulted for it.

use crate::schema::trailer;
use std::collections::BTreeMap;

use serde::Serialize;

use super::Verdict;
use crate::trusted::repo::LogEntry;

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
        })
    }

    pub fn verdict(&self) -> Option<Verdict> {
        Verdict::parse(&self.verdict)
    }
}

/// Per-feature counts.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FeatureStats {
    /// Sessions that worked on it and were not accepted, since the last `retry`.
    pub failed_attempts: u32,
    /// All sessions that worked on it.
    pub attempts: u32,
    pub last_verdict: Option<String>,
    pub last_reasons: Vec<String>,
}

#[derive(Debug, Clone, Default)]
pub struct History {
    pub sessions: Vec<SessionRow>,
    pub features: BTreeMap<String, FeatureStats>,
}

impl History {
    pub fn from_log(log: &[LogEntry]) -> History {
        let mut history = History::default();
        for entry in log {
            if let Some(id) = entry.trailer(trailer::RETRY) {
                history
                    .features
                    .entry(id.to_string())
                    .or_default()
                    .failed_attempts = 0;
                continue;
            }
            let Some(row) = SessionRow::from_entry(entry) else {
                continue;
            };
            if let Some(feature) = &row.feature {
                let stats = history.features.entry(feature.clone()).or_default();
                stats.attempts += 1;
                if row.verdict() != Some(Verdict::Accepted) {
                    stats.failed_attempts += 1;
                }
                stats.last_verdict = Some(row.verdict.clone());
                stats.last_reasons = row.reasons.clone();
            }
            history.sessions.push(row);
        }
        history
    }

    /// True once an initializer session has been accepted.
    pub fn initialized(&self) -> bool {
        self.sessions
            .iter()
            .any(|s| s.role == "initializer" && s.verdict() == Some(Verdict::Accepted))
    }

    pub fn stats(&self, feature: &str) -> FeatureStats {
        self.features.get(feature).cloned().unwrap_or_default()
    }

    pub fn is_stuck(&self, feature: &str, max_attempts: u32) -> bool {
        self.stats(feature).failed_attempts >= max_attempts
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
