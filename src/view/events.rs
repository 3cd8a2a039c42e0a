//! What a run reports while it goes, as one event type with two plain
//! renderings: a JSON object a line (`continue --json`, for scripts) and a
//! plain text line (when stdout is not a terminal, or with `--quiet`).

use serde::Serialize;

use super::text::{count, duration, tokens};

/// One thing that happened during a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RunEvent {
    SessionStarted {
        session: u32,
        role: String,
        feature: Option<String>,
        /// This run's worker sessions, counted from 1 (absent for the initializer).
        index: Option<u32>,
        /// How many worker sessions this run was asked for, when it was.
        of: Option<u32>,
    },
    InitScript {
        session: u32,
        exit_code: Option<i32>,
    },
    ToolCall {
        session: u32,
        step: u32,
        name: String,
        summary: String,
        is_error: bool,
    },
    Notice {
        session: u32,
        text: String,
    },
    /// The loop detector fired; `ending` when it ends the session.
    LoopDetected {
        session: u32,
        what: String,
        ending: bool,
    },
    /// The context was compacted into a handoff summary (estimated tokens).
    Compacted {
        session: u32,
        tokens_before: u64,
        tokens_after: u64,
    },
    /// A check: `phase` is `session` (the harness, inside the session) or
    /// `verify` (the orchestrator, in a fresh checkout afterwards).
    CheckResult {
        session: u32,
        phase: CheckPhase,
        name: String,
        passed: bool,
    },
    Verdict {
        session: u32,
        feature: Option<String>,
        verdict: String,
        reasons: Vec<String>,
        commit: String,
        tokens_in: u64,
        tokens_out: u64,
        cost_usd: f64,
        elapsed_s: u64,
    },
    /// The session moved on: `working`, `checking round 2/3`, `verifying`, `recording`.
    Phase {
        session: u32,
        phase: String,
    },
    /// A model request failed and is tried again after `wait_ms`.
    Retry {
        session: u32,
        /// The request's index in the session.
        index: u32,
        attempt: u32,
        reason: String,
        wait_ms: u64,
    },
    /// A line the run says that belongs to no session (stopping, what is stuck).
    Message {
        text: String,
    },
    /// The provider stayed unavailable: no session starts until it answers.
    /// Sent when the pause starts, then at most every ten minutes.
    Paused {
        reason: String,
        /// Seconds until the provider is asked again.
        retry_in_s: f64,
        /// Seconds paused so far, and the most the run waits (`--max-wait`).
        waited_s: u64,
        max_wait_s: u64,
    },
    /// The provider answered again; the run goes on.
    Resumed {
        /// Seconds the run was paused.
        paused_s: f64,
    },
    RunFinished {
        outcome: String,
        exit_code: u8,
        sessions: u32,
        accepted: u32,
        passing: usize,
        total: usize,
        tokens_in: u64,
        tokens_out: u64,
        cost_usd: f64,
        elapsed_s: u64,
        /// Set when the run ended with an error rather than an outcome.
        error: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckPhase {
    Session,
    Verify,
}

impl RunEvent {
    /// The event with every string in it made one safe line (session-made
    /// text may carry escape sequences, carriage returns or NULs meant to
    /// rewrite what the console shows).
    pub fn sanitized(&self) -> RunEvent {
        use crate::sanitize::line;
        let opt = |s: &Option<String>| s.as_deref().map(line);
        let mut e = self.clone();
        match &mut e {
            RunEvent::SessionStarted { role, feature, .. } => {
                *role = line(role);
                *feature = opt(feature);
            }
            RunEvent::InitScript { .. } | RunEvent::Compacted { .. } | RunEvent::Resumed { .. } => {
            }
            RunEvent::Phase { phase, .. } => *phase = line(phase),
            RunEvent::Retry { reason, .. } => *reason = line(reason),
            // The provider's words.
            RunEvent::Paused { reason, .. } => *reason = line(reason),
            RunEvent::ToolCall { name, summary, .. } => {
                *name = line(name);
                *summary = line(summary);
            }
            RunEvent::Notice { text, .. } | RunEvent::Message { text } => *text = line(text),
            RunEvent::LoopDetected { what, .. } => *what = line(what),
            RunEvent::CheckResult { name, .. } => *name = line(name),
            RunEvent::Verdict {
                feature,
                verdict,
                reasons,
                commit,
                ..
            } => {
                *feature = opt(feature);
                *verdict = line(verdict);
                *commit = line(commit);
                for r in reasons.iter_mut() {
                    *r = line(r);
                }
            }
            RunEvent::RunFinished { outcome, error, .. } => {
                *outcome = line(outcome);
                *error = opt(error);
            }
        }
        e
    }

    /// The session the event belongs to, if any.
    pub fn session(&self) -> Option<u32> {
        match self {
            RunEvent::SessionStarted { session, .. }
            | RunEvent::InitScript { session, .. }
            | RunEvent::ToolCall { session, .. }
            | RunEvent::Notice { session, .. }
            | RunEvent::LoopDetected { session, .. }
            | RunEvent::Compacted { session, .. }
            | RunEvent::CheckResult { session, .. }
            | RunEvent::Verdict { session, .. }
            | RunEvent::Phase { session, .. }
            | RunEvent::Retry { session, .. } => Some(*session),
            RunEvent::Message { .. }
            | RunEvent::RunFinished { .. }
            | RunEvent::Paused { .. }
            | RunEvent::Resumed { .. } => None,
        }
    }

    /// The event as one line of JSON with the time it happened.
    pub fn json_line_at(&self, time: &str) -> String {
        let mut value = serde_json::to_value(self).unwrap_or_default();
        if let serde_json::Value::Object(map) = &mut value {
            map.insert("time".into(), serde_json::Value::from(time));
        }
        value.to_string()
    }

    /// The event as one line of JSON.
    pub fn json_line(&self) -> String {
        // Serializing plain data to a String cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The event as plain text lines, for logs and pipes.
    pub fn plain_lines(&self) -> Vec<String> {
        match self {
            RunEvent::SessionStarted {
                session,
                role,
                feature,
                ..
            } => vec![match feature {
                Some(f) => format!("session {session} ({role}, {f}): started"),
                None => format!("session {session} ({role}): started"),
            }],
            RunEvent::InitScript { exit_code, .. } => vec![format!(
                "  init.sh: {}",
                exit_code
                    .map(|c| format!("exit {c}"))
                    .unwrap_or_else(|| "killed".into())
            )],
            RunEvent::ToolCall {
                step,
                name,
                summary,
                is_error,
                ..
            } => vec![format!(
                "  step {step}: {name} {summary}{}",
                if *is_error { "  [error]" } else { "" }
            )],
            RunEvent::Notice { text, .. } => vec![format!("  {text}")],
            RunEvent::LoopDetected { what, ending, .. } => vec![format!(
                "  loop detected: {what}{}",
                if *ending { " (ending the session)" } else { "" }
            )],
            RunEvent::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => vec![format!(
                "  context compacted: ~{tokens_before} -> ~{tokens_after} tokens"
            )],
            RunEvent::CheckResult {
                phase,
                name,
                passed,
                ..
            } => vec![match phase {
                // The harness's own checks, before the session may end.
                CheckPhase::Session => {
                    format!(
                        "  harness: {name} {}",
                        if *passed { "passed" } else { "failed" }
                    )
                }
                CheckPhase::Verify => {
                    format!(
                        "  verify: {name} {}",
                        if *passed { "passed" } else { "FAILED" }
                    )
                }
            }],
            RunEvent::Verdict {
                session,
                verdict,
                reasons,
                tokens_in,
                tokens_out,
                cost_usd,
                elapsed_s,
                ..
            } => {
                let mut lines = vec![format!(
                    "session {session}: {verdict} ({} in / {} out tokens, ${cost_usd:.4}, {})",
                    tokens(*tokens_in),
                    tokens(*tokens_out),
                    duration(*elapsed_s)
                )];
                lines.extend(reasons.iter().map(|r| format!("  - {r}")));
                lines
            }
            RunEvent::Phase { phase, .. } => vec![format!("  {phase}")],
            RunEvent::Retry {
                index,
                attempt,
                reason,
                wait_ms,
                ..
            } => vec![format!(
                "  model request {index}: try {attempt} failed ({reason}); trying again in {:.1} s",
                *wait_ms as f64 / 1000.0
            )],
            RunEvent::Message { text } => vec![text.clone()],
            RunEvent::Paused {
                reason,
                retry_in_s,
                waited_s,
                max_wait_s,
            } => vec![format!(
                "paused: {reason}; no session starts until the provider answers. \
                 Asking again in {}, paused {} of at most {} (--max-wait); Ctrl-C stops",
                duration(retry_in_s.ceil() as u64),
                duration(*waited_s),
                duration(*max_wait_s)
            )],
            RunEvent::Resumed { paused_s } => vec![format!(
                "resumed: the provider answered after {} paused",
                duration(paused_s.round() as u64)
            )],
            RunEvent::RunFinished { .. } => vec![self.summary()],
        }
    }

    /// The one-line account of a finished run; empty for other events.
    pub fn summary(&self) -> String {
        let RunEvent::RunFinished {
            outcome,
            sessions,
            accepted,
            passing,
            total,
            tokens_in,
            tokens_out,
            cost_usd,
            elapsed_s,
            error,
            ..
        } = self
        else {
            return String::new();
        };
        let how = match (error, outcome.as_str()) {
            (Some(_), _) | (None, "run_failed") => "failed",
            (None, "done") => "done",
            (None, "stopped_early") => "stopped early",
            (None, "interrupted") => "interrupted",
            (None, _) => "ended",
        };
        format!(
            "run {how}: {} this run ({accepted} accepted), {passing}/{total} features passing, \
             {} in / {} out tokens, ${cost_usd:.4}, {}",
            count(u64::from(*sessions), "session"),
            tokens(*tokens_in),
            tokens(*tokens_out),
            duration(*elapsed_s)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_carry_their_type() {
        let e = RunEvent::ToolCall {
            session: 2,
            step: 1,
            name: "bash".into(),
            summary: "ls".into(),
            is_error: false,
        };
        assert_eq!(
            e.json_line(),
            r#"{"type":"tool_call","session":2,"step":1,"name":"bash","summary":"ls","is_error":false}"#
        );
        assert_eq!(e.plain_lines(), ["  step 1: bash ls"]);
    }

    #[test]
    fn the_end_of_a_run_reads_without_doubled_words_or_a_plural_of_one() {
        let end = |outcome: &str, sessions: u32| RunEvent::RunFinished {
            outcome: outcome.into(),
            exit_code: 1,
            sessions,
            accepted: 0,
            passing: 0,
            total: 2,
            tokens_in: 0,
            tokens_out: 0,
            cost_usd: 0.0,
            elapsed_s: 5,
            error: None,
        };
        assert_eq!(
            end("run_failed", 1).summary(),
            "run failed: 1 session this run (0 accepted), 0/2 features passing, 0 in / 0 out tokens, $0.0000, 5s"
        );
        assert!(end("stopped_early", 4)
            .summary()
            .starts_with("run stopped early: 4 sessions this run"));
        let check = RunEvent::CheckResult {
            session: 1,
            phase: CheckPhase::Session,
            name: "check 1".into(),
            passed: true,
        };
        assert_eq!(check.plain_lines(), ["  harness: check 1 passed"]);
    }

    #[test]
    fn sanitized_events_carry_no_control_characters() {
        let e = RunEvent::Verdict {
            session: 3,
            feature: Some("f\x1b[2K".into()),
            verdict: "rejected".into(),
            reasons: vec!["check failed: \x1b[1A\x1b[2K\rsession 3: accepted\0".into()],
            commit: "abc".into(),
            tokens_in: 1,
            tokens_out: 1,
            cost_usd: 0.0,
            elapsed_s: 1,
        }
        .sanitized();
        for line in e.plain_lines() {
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
        assert!(!e.json_line().contains("\\u001b"), "{}", e.json_line());
        let tool = RunEvent::ToolCall {
            session: 1,
            step: 1,
            name: "bash".into(),
            summary: "ls\n\u{9b}31m".into(),
            is_error: false,
        };
        assert_eq!(tool.sanitized().plain_lines(), ["  step 1: bash ls 31m"]);
    }

    #[test]
    fn a_verdict_reads_with_its_usage_and_reasons() {
        let e = RunEvent::Verdict {
            session: 3,
            feature: Some("f1".into()),
            verdict: "rejected".into(),
            reasons: vec!["check failed".into()],
            commit: "abc".into(),
            tokens_in: 12_345,
            tokens_out: 150,
            cost_usd: 0.5,
            elapsed_s: 65,
        };
        assert_eq!(
            e.plain_lines(),
            [
                "session 3: rejected (12.3k in / 150 out tokens, $0.5000, 1m05s)",
                "  - check failed"
            ]
        );
    }
}
