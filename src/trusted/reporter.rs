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

/// Running totals: the session in flight and the whole run.
#[derive(Debug, Default)]
struct Tally {
    session: u32,
    feature: Option<String>,
    status: Status,
    session_started: Option<Instant>,
    /// Worker sessions started by this run.
    workers: u32,
    sessions: u32,
    accepted: u32,
    usage: Usage,
    cost_usd: f64,
}

pub struct Reporter {
    mode: Mode,
    /// How many worker sessions this run was asked for, when it was.
    planned: Option<u32>,
    started: Instant,
    live: Option<Live>,
    tally: Mutex<Tally>,
}

impl Reporter {
    pub fn new(mode: Mode) -> Reporter {
        Reporter {
            mode,
            planned: None,
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
            t.session = number;
            t.feature = feature.map(crate::sanitize::line);
            t.session_started = Some(Instant::now());
            t.status = Status {
                label,
                feature: t.feature.clone(),
                doing: "starting the confined worker".into(),
                ..Status::default()
            };
            index
        };
        if let Some(live) = &self.live {
            live.start(&self.tally().status);
        }
        self.emit(&RunEvent::SessionStarted {
            session: number,
            role: role.to_string(),
            feature: feature.map(str::to_string),
            index,
            of: index.and(self.planned),
        });
    }

    /// The session's usage so far, after each model response.
    pub fn model_usage(&self, _number: u32, usage: Usage, cost_usd: f64) {
        let mut t = self.tally();
        t.status.tokens_in = usage.input_tokens;
        t.status.tokens_out = usage.output_tokens;
        t.status.cost_usd = cost_usd;
        if let Some(live) = &self.live {
            live.update(&t.status);
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
            SessionEvent::CheckResult { name, passed, .. } => RunEvent::CheckResult {
                session: number,
                phase: CheckPhase::Session,
                name: name.clone(),
                passed: *passed,
            },
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
            SessionEvent::Sandbox { enforcement } => match enforcement.warnings.as_slice() {
                [] => return,
                warnings => RunEvent::Notice {
                    session: number,
                    text: format!("sandbox: not enforced: {}", warnings.join("; ")),
                },
            },
        };
        self.emit(&run_event);
    }

    /// A check the orchestrator ran while verifying.
    pub fn check(&self, name: &str, passed: bool) {
        let session = self.tally().session;
        self.emit(&RunEvent::CheckResult {
            session,
            phase: CheckPhase::Verify,
            name: name.to_string(),
            passed,
        });
    }

    pub fn verdict(&self, number: u32, verdict: &str, reasons: &[String], commit: &str) {
        let event = {
            let mut t = self.tally();
            t.sessions += 1;
            if verdict == "accepted" {
                t.accepted += 1;
            }
            t.usage.input_tokens += t.status.tokens_in;
            t.usage.output_tokens += t.status.tokens_out;
            t.cost_usd += t.status.cost_usd;
            RunEvent::Verdict {
                session: number,
                feature: t.feature.clone(),
                verdict: verdict.to_string(),
                reasons: reasons.to_vec(),
                commit: commit.to_string(),
                tokens_in: t.status.tokens_in,
                tokens_out: t.status.tokens_out,
                cost_usd: t.status.cost_usd,
                elapsed_s: t.session_started.map_or(0, |s| s.elapsed().as_secs()),
            }
        };
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
        match self.mode {
            Mode::Json => print_lines(&[event.json_line()]),
            Mode::Plain => print_lines(&event.plain_lines()),
            Mode::Live => {
                if let Some(live) = &self.live {
                    let mut t = self.tally();
                    follow(&mut t.status, event);
                    live.update(&t.status);
                    live.print(event);
                }
            }
        }
    }
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
        RunEvent::CheckResult {
            phase: CheckPhase::Verify,
            name,
            passed,
            ..
        } => {
            status.doing = format!(
                "verifying: {name} {}",
                if *passed { "passed" } else { "failed" }
            )
        }
        _ => {}
    }
}

fn log(event: &RunEvent) {
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
