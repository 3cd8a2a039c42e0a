//! What the orchestrator shows while it runs. Every happening becomes one
//! [`RunEvent`]; the reporter keeps the session's and the run's tallies
//! (tokens, cost, steps, time) and renders each event the way the user asked:
//! a live status on a terminal, plain lines in a pipe or with `--quiet`, or
//! JSON lines with `--json`. Every event also goes to the log.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::Instant;

use crate::broker::SessionEvent;
use crate::error::Outcome;
use crate::model::Usage;
use crate::view::events::{CheckPhase, RunEvent};
use crate::view::live::{Live, Status};

/// How the run is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A status that redraws in place (stdout is a terminal).
    Live,
    /// One plain line per event.
    Plain,
    /// One JSON object per event, one a line.
    Json,
}

impl Mode {
    /// The mode the flags ask for: live only on a terminal.
    pub fn pick(quiet: bool, json: bool) -> Mode {
        if json {
            Mode::Json
        } else if quiet || !std::io::stdout().is_terminal() {
            Mode::Plain
        } else {
            Mode::Live
        }
    }
}

/// One session in flight, as the display follows it.
#[derive(Debug, Default)]
struct SessionTally {
    /// `session 7 (worker, F002)`: what its lines are headed with.
    header: String,
    feature: Option<String>,
    status: Status,
    started: Option<Instant>,
    /// The harness's rounds of checks so far.
    round: u32,
}

/// Running totals: the sessions in flight, by number, and the whole run.
#[derive(Debug, Default)]
struct Tally {
    sessions_in_flight: std::collections::BTreeMap<u32, SessionTally>,
    /// The session the last printed line belonged to, for headers.
    last_printed: Option<u32>,
    /// Worker sessions started by this run.
    workers: u32,
    sessions: u32,
    accepted: u32,
    usage: Usage,
    cost_usd: f64,
    /// What the sandbox did not enforce, as last said.
    not_enforced: Vec<String>,
}

pub struct Reporter {
    mode: Mode,
    /// How many worker sessions this run was asked for, when it was.
    planned: Option<u32>,
    /// The harness's rounds of checks per session, for `checking round N/M`.
    check_rounds: u32,
    started: Instant,
    live: Option<Live>,
    tally: Mutex<Tally>,
}

impl Reporter {
    pub fn new(mode: Mode) -> Reporter {
        Reporter {
            mode,
            planned: None,
            check_rounds: 0,
            started: Instant::now(),
            live: (mode == Mode::Live).then(Live::new),
            tally: Mutex::new(Tally::default()),
        }
    }

    /// Say how many worker sessions the run means to do: "session i of N".
    pub fn planning(mut self, sessions: Option<u32>) -> Reporter {
        self.planned = sessions;
        self
    }

    /// Say how many rounds of checks a session gets, for `checking round N/M`.
    pub fn with_check_rounds(mut self, rounds: u32) -> Reporter {
        self.check_rounds = rounds;
        self
    }

    fn tally(&self) -> std::sync::MutexGuard<'_, Tally> {
        // A panic elsewhere must not silence the progress display.
        self.tally.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A line that belongs to no session.
    pub fn line(&self, text: &str) {
        self.emit(&RunEvent::Message {
            text: text.to_string(),
        });
    }

    pub fn session_started(&self, number: u32, role: &str, feature: Option<&str>) {
        let feature = feature.map(crate::sanitize::line);
        let index = {
            let mut t = self.tally();
            let index = (role == "worker").then(|| {
                t.workers += 1;
                t.workers
            });
            let label = match (index, self.planned) {
                (Some(i), Some(n)) => format!("session {number} ({i} of {n})"),
                (Some(_), None) => format!("session {number}"),
                (None, _) => format!("session {number} ({role})"),
            };
            let header = match &feature {
                Some(f) => format!("session {number} ({role}, {f})"),
                None => format!("session {number} ({role})"),
            };
            let status = Status {
                label,
                feature: feature.clone(),
                phase: "working".into(),
                doing: "starting the confined worker".into(),
                ..Status::default()
            };
            t.sessions_in_flight.insert(
                number,
                SessionTally {
                    header,
                    feature: feature.clone(),
                    status,
                    started: Some(Instant::now()),
                    round: 0,
                },
            );
            if let (Some(live), Some(s)) = (&self.live, t.sessions_in_flight.get(&number)) {
                live.start(number, &s.status);
            }
            index
        };
        self.emit(&RunEvent::SessionStarted {
            session: number,
            role: role.to_string(),
            feature,
            index,
            of: index.and(self.planned),
        });
    }

    /// The session's usage so far, after each model response.
    pub fn model_usage(&self, number: u32, usage: Usage, cost_usd: f64) {
        let mut t = self.tally();
        if let Some(s) = t.sessions_in_flight.get_mut(&number) {
            s.status.tokens_in = usage.input_tokens;
            s.status.tokens_out = usage.output_tokens;
            s.status.cost_usd = cost_usd;
        }
        self.redraw(&t, number);
    }

    /// Session `number` waits for the model's answer to request `index`.
    pub fn model_asked(&self, number: u32, index: u32) {
        self.doing(number, format!("waiting for the model (request {index})"));
    }

    /// What session `number`'s status says it is doing, from now.
    fn doing(&self, number: u32, doing: String) {
        let mut t = self.tally();
        if let Some(s) = t.sessions_in_flight.get_mut(&number) {
            s.status.doing = doing;
            s.status.since = Some(Instant::now());
        }
        self.redraw(&t, number);
    }

    /// The model answered with tool calls: the worker is running them now.
    pub fn tools_requested(&self, number: u32, calls: &[crate::model::ToolCall]) {
        let Some(first) = calls.first() else {
            return;
        };
        let more = match calls.len() {
            1 => String::new(),
            n => format!(" (+{} more)", n - 1),
        };
        let doing = format!(
            "running {} {}{more}",
            first.name,
            crate::view::text::truncate(&call_summary(&first.arguments), 100)
        );
        self.doing(number, crate::sanitize::line(&doing));
    }

    /// The session moved on to `phase` (`verifying`, `recording`).
    pub fn phase(&self, number: u32, phase: &str) {
        {
            let mut t = self.tally();
            if let Some(s) = t.sessions_in_flight.get_mut(&number) {
                s.status.phase = phase.to_string();
                s.status.doing = String::new();
                s.status.since = Some(Instant::now());
            }
        }
        // Drawn with the event.
        self.emit(&RunEvent::Phase {
            session: number,
            phase: phase.to_string(),
        });
    }

    /// A model request of session `number` failed and is tried again.
    pub fn retry(&self, number: u32, index: u32, attempt: u32, reason: &str, wait_ms: u64) {
        self.doing(
            number,
            format!(
                "waiting for the model (request {index}, try {})",
                attempt + 1
            ),
        );
        self.emit(&RunEvent::Retry {
            session: number,
            index,
            attempt,
            reason: reason.to_string(),
            wait_ms,
        });
    }

    /// Session `number`'s status line, drawn again after a change.
    fn redraw(&self, t: &Tally, number: u32) {
        if let (Some(live), Some(s)) = (&self.live, t.sessions_in_flight.get(&number)) {
            live.update(number, &s.status);
        }
    }

    pub fn event(&self, number: u32, event: &SessionEvent) {
        let run_event = match event {
            SessionEvent::InitScript { exit_code, .. } => RunEvent::InitScript {
                session: number,
                exit_code: *exit_code,
            },
            SessionEvent::ToolCall {
                step,
                name,
                summary,
                is_error,
                ..
            } => RunEvent::ToolCall {
                session: number,
                step: *step,
                name: name.clone(),
                summary: summary.clone(),
                is_error: *is_error,
            },
            SessionEvent::CheckResult { name, passed, .. } => {
                // Every round of the harness's checks starts with the session rules.
                if name == crate::protocol::SESSION_RULES {
                    self.next_check_round(number);
                }
                RunEvent::CheckResult {
                    session: number,
                    phase: CheckPhase::Session,
                    name: name.clone(),
                    passed: *passed,
                }
            }
            SessionEvent::Notice { text } => RunEvent::Notice {
                session: number,
                text: text.clone(),
            },
            SessionEvent::LoopDetected { what, ending } => RunEvent::LoopDetected {
                session: number,
                what: what.clone(),
                ending: *ending,
            },
            SessionEvent::Compacted {
                tokens_before,
                tokens_after,
            } => RunEvent::Compacted {
                session: number,
                tokens_before: *tokens_before,
                tokens_after: *tokens_after,
            },
            // Measurements for the transcript and benchmarks, not progress.
            SessionEvent::WorkerStats { .. } => return,
            // Said once per run (the trailers record it for every session),
            // and again only if another session's sandbox lacks something else.
            SessionEvent::Sandbox { enforcement } => {
                let Some(notice) = self.not_enforced(number, &enforcement.warnings) else {
                    return;
                };
                notice
            }
        };
        self.emit(&run_event);
    }

    /// A session's harness starts its next round of checks: the phase says which.
    fn next_check_round(&self, number: u32) {
        let round = {
            let mut t = self.tally();
            t.sessions_in_flight.get_mut(&number).map(|s| {
                s.round += 1;
                s.round
            })
        };
        if let Some(round) = round {
            let of = match self.check_rounds {
                0 => String::new(),
                n => format!("/{n}"),
            };
            self.phase(number, &format!("checking round {round}{of}"));
        }
    }

    /// The notice of what a session's sandbox lacks on this machine, unless
    /// nothing or the same as last said.
    fn not_enforced(&self, number: u32, warnings: &[String]) -> Option<RunEvent> {
        let mut t = self.tally();
        if warnings.is_empty() || t.not_enforced == warnings {
            return None;
        }
        t.not_enforced = warnings.to_vec();
        Some(RunEvent::Notice {
            session: number,
            text: format!(
                "sandbox: on this machine, not enforced (recorded in each session's \
                 Longrun-Sandbox trailers): {}",
                warnings.join("; ")
            ),
        })
    }

    /// The run pauses: `reason`, asking again in `retry_in`.
    pub fn paused(
        &self,
        reason: &str,
        retry_in: std::time::Duration,
        waited: std::time::Duration,
        max_wait: std::time::Duration,
    ) {
        self.emit(&RunEvent::Paused {
            reason: reason.to_string(),
            retry_in_s: retry_in.as_secs_f64(),
            waited_s: waited.as_secs(),
            max_wait_s: max_wait.as_secs(),
        });
    }

    /// The provider answered after `paused`.
    pub fn resumed(&self, paused: std::time::Duration) {
        self.emit(&RunEvent::Resumed {
            paused_s: paused.as_secs_f64(),
        });
    }

    /// A check the orchestrator ran while verifying session `number`.
    pub fn check(&self, number: u32, name: &str, passed: bool) {
        self.emit(&RunEvent::CheckResult {
            session: number,
            phase: CheckPhase::Verify,
            name: name.to_string(),
            passed,
        });
    }

    pub fn verdict(&self, number: u32, verdict: &str, reasons: &[String], commit: &str) {
        let event = {
            let mut t = self.tally();
            let s = t.sessions_in_flight.remove(&number).unwrap_or_default();
            t.sessions += 1;
            if verdict == "accepted" {
                t.accepted += 1;
            }
            t.usage.input_tokens += s.status.tokens_in;
            t.usage.output_tokens += s.status.tokens_out;
            t.cost_usd += s.status.cost_usd;
            RunEvent::Verdict {
                session: number,
                feature: s.feature.clone(),
                verdict: verdict.to_string(),
                reasons: reasons.to_vec(),
                commit: commit.to_string(),
                tokens_in: s.status.tokens_in,
                tokens_out: s.status.tokens_out,
                cost_usd: s.status.cost_usd,
                elapsed_s: s.started.map_or(0, |s| s.elapsed().as_secs()),
            }
        };
        // The status goes first, so that the verdict is not drawn beside it.
        if let Some(live) = &self.live {
            live.end(number);
        }
        self.emit(&event);
    }

    /// The run is over: one last event with its outcome and totals.
    pub fn run_finished(&self, result: &anyhow::Result<Outcome>, passing: usize, total: usize) {
        let (outcome, exit_code, error) = match result {
            Ok(o) => (o.name().to_string(), o.code(), None),
            Err(e) => (
                "error".to_string(),
                crate::error::code_for(e),
                Some(format!("{e:#}")),
            ),
        };
        let event = {
            let t = self.tally();
            RunEvent::RunFinished {
                outcome,
                exit_code,
                sessions: t.sessions,
                accepted: t.accepted,
                passing,
                total,
                tokens_in: t.usage.input_tokens,
                tokens_out: t.usage.output_tokens,
                cost_usd: t.cost_usd,
                elapsed_s: self.started.elapsed().as_secs(),
                error,
            }
        };
        self.emit(&event);
        if let Some(live) = &self.live {
            live.finish();
        }
    }

    fn emit(&self, event: &RunEvent) {
        let event = &event.sanitized();
        log(event);
        let mut t = self.tally();
        // A session's lines after another's start with its header, so that
        // under --parallel every line says whose it is.
        let header = match (event.session(), event) {
            (_, RunEvent::SessionStarted { .. }) | (_, RunEvent::Verdict { .. }) => None,
            (Some(n), _) if t.last_printed != Some(n) => t
                .sessions_in_flight
                .get(&n)
                .map(|s| format!("{}:", s.header)),
            _ => None,
        };
        match self.mode {
            Mode::Json => print_lines(&[event.json_line_at(&super::lock::now_rfc3339())]),
            Mode::Plain => {
                let lines = event.plain_lines();
                if !lines.is_empty() {
                    print_lines(&header.into_iter().chain(lines).collect::<Vec<_>>());
                    t.last_printed = event.session();
                }
            }
            Mode::Live => {
                if let Some(live) = &self.live {
                    if let Some(s) = event
                        .session()
                        .and_then(|n| t.sessions_in_flight.get_mut(&n))
                    {
                        follow(&mut s.status, event);
                    }
                    if let Some(n) = event.session() {
                        self.redraw(&t, n);
                    }
                    if live.print(event, header.as_deref()) {
                        t.last_printed = event.session();
                    }
                }
            }
        }
    }
}

/// A tool call's arguments as a person reads them: the command or the path
/// when there is one, else the arguments as sent.
fn call_summary(arguments: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
    ["command", "path", "pattern", "description"]
        .iter()
        .find_map(|k| value.get(k).and_then(|v| v.as_str()))
        .unwrap_or(arguments)
        .replace('\n', " ")
}

/// What the status line says the session is doing, after `event`.
fn follow(status: &mut Status, event: &RunEvent) {
    match event {
        RunEvent::InitScript { exit_code, .. } => {
            status.doing = format!(
                "init.sh {}",
                exit_code.map_or("killed".into(), |c| format!("exit {c}"))
            )
        }
        RunEvent::ToolCall {
            step,
            name,
            summary,
            is_error,
            ..
        } => {
            status.step = *step;
            status.doing = format!(
                "{name} {summary}{}",
                if *is_error { " [error]" } else { "" }
            );
        }
        // The harness's checks in the session, or verification's.
        RunEvent::CheckResult { name, passed, .. } => {
            status.doing = format!("{name} {}", if *passed { "passed" } else { "failed" })
        }
        _ => {}
    }
}

fn log(event: &RunEvent) {
    // One line per passing check would make the log grow with the passing
    // features every session (the transcript keeps each check).
    if matches!(event, RunEvent::CheckResult { passed: true, .. }) {
        return;
    }
    for line in event.plain_lines() {
        match event {
            RunEvent::SessionStarted { .. }
            | RunEvent::Verdict { .. }
            | RunEvent::RunFinished { .. } => tracing::info!("{}", line.trim_start()),
            _ => tracing::debug!("{}", line.trim_start()),
        }
    }
}

/// Print to stdout; a closed pipe (`| head`) must not stop the run.
fn print_lines(lines: &[String]) {
    let mut out = std::io::stdout().lock();
    for line in lines {
        let _ = writeln!(out, "{line}");
    }
    let _ = out.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_says_the_last_check_of_the_session_and_of_verification() {
        let mut status = Status::default();
        for (phase, name, passed, says) in [
            (CheckPhase::Session, "feature a", false, "feature a failed"),
            (CheckPhase::Verify, "init.sh", true, "init.sh passed"),
        ] {
            let event = RunEvent::CheckResult {
                session: 2,
                phase,
                name: name.into(),
                passed,
            };
            follow(&mut status, &event);
            assert_eq!(status.doing, says);
        }
    }
}
