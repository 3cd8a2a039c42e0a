//! The live progress display on a terminal (indicatif): a two-line status
//! that redraws in place — session i of N, the feature, the step, tokens,
//! cost, elapsed time, and the last tool call — with finished sessions
//! printed above it as permanent lines.

use std::time::Duration;

use console::style;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::events::RunEvent;
use super::text::{duration, tokens, truncate};

/// What the status line shows about the session in flight.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Status {
    /// `session 7 (2 of 5)`, `session 7` or `session 1 (initializer)`.
    pub label: String,
    pub feature: Option<String>,
    pub step: u32,
    pub tokens_in: u64,
    pub tokens_out: u64,
    pub cost_usd: f64,
    /// `working`, `checking round 2/3`, `verifying`, `recording`.
    pub phase: String,
    /// The tool running now or the last tool call, or what verification is doing.
    pub doing: String,
    /// When what `doing` says started, for its running time.
    pub since: Option<std::time::Instant>,
}

impl Status {
    /// The first line, before the elapsed time that indicatif fills in.
    pub fn headline(&self) -> String {
        let mut parts = vec![self.label.clone()];
        if let Some(f) = &self.feature {
            parts.push(f.clone());
        }
        if !self.phase.is_empty() {
            parts.push(self.phase.clone());
        }
        parts.push(format!("step {}", self.step));
        parts.push(format!(
            "{} in / {} out tokens",
            tokens(self.tokens_in),
            tokens(self.tokens_out)
        ));
        parts.push(format!("${:.4}", self.cost_usd));
        parts.join(" · ")
    }
}

pub struct Live {
    bar: ProgressBar,
    /// When the thing on the second line started; the template ticks it.
    since: std::sync::Arc<std::sync::Mutex<Option<std::time::Instant>>>,
}

/// The live status on screen, if any: whatever else writes to the terminal
/// (warnings, the Ctrl-C acknowledgement) goes above it instead of being
/// drawn over.
static ACTIVE: std::sync::Mutex<Option<ProgressBar>> = std::sync::Mutex::new(None);

fn active() -> Option<ProgressBar> {
    ACTIVE.lock().ok().and_then(|a| a.clone())
}

/// Run `write` (to stderr, say) with the live status hidden, then draw it again.
pub fn suspend<R>(write: impl FnOnce() -> R) -> R {
    match active() {
        Some(bar) => bar.suspend(write),
        None => write(),
    }
}

/// One whole line on stderr, above the live status when there is one.
pub fn eprint_line(text: &str) {
    suspend(|| {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
    });
}

impl Live {
    pub fn new() -> Live {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
        let since = std::sync::Arc::new(std::sync::Mutex::new(None::<std::time::Instant>));
        let ticking = std::sync::Arc::clone(&since);
        let style = ProgressStyle::with_template(
            "{spinner:.cyan} {prefix:.bold} · {elapsed_precise}\n  {running}{wide_msg:.dim}",
        )
        .map(|s| {
            s.with_key(
                "running",
                move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                    let started = ticking.lock().ok().and_then(|s| *s);
                    if let Some(started) = started {
                        let _ = write!(w, "[{}] ", duration(started.elapsed().as_secs()));
                    }
                },
            )
        })
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        if let Ok(mut a) = ACTIVE.lock() {
            *a = Some(bar.clone());
        }
        Live { bar, since }
    }

    /// A session starts: the clock restarts and the spinner turns.
    pub fn start(&self, status: &Status) {
        self.bar.reset_elapsed();
        self.bar.enable_steady_tick(Duration::from_millis(120));
        self.update(status);
    }

    pub fn update(&self, status: &Status) {
        if let Ok(mut since) = self.since.lock() {
            *since = status.since;
        }
        self.bar.set_prefix(status.headline());
        self.bar.set_message(status.doing.clone());
    }

    /// Lines printed above the status, kept on screen, after `header` when
    /// given (another session's lines came last). Whether anything was printed.
    pub fn print(&self, event: &RunEvent, header: Option<&str>) -> bool {
        let lines = permanent_lines(event);
        if lines.is_empty() {
            return false;
        }
        for line in header.map(str::to_string).into_iter().chain(lines) {
            self.bar.println(line);
        }
        true
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
        if let Ok(mut a) = ACTIVE.lock() {
            *a = None;
        }
    }
}

impl Default for Live {
    fn default() -> Self {
        Live::new()
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Which events stay on screen, and how they read there. Tool calls and
/// passing checks only pass through the status line.
fn permanent_lines(event: &RunEvent) -> Vec<String> {
    match event {
        RunEvent::Verdict {
            session,
            feature,
            verdict,
            reasons,
            tokens_in,
            tokens_out,
            cost_usd,
            elapsed_s,
            ..
        } => {
            let mark = if verdict == "accepted" {
                style("✓").green().to_string()
            } else {
                style("✗").red().to_string()
            };
            let what = feature
                .as_ref()
                .map(|f| format!(" · {f}"))
                .unwrap_or_default();
            let mut lines = vec![format!(
                "{mark} session {session}{what} · {} · {} in / {} out tokens · ${cost_usd:.4} · {}",
                style(verdict).bold(),
                tokens(*tokens_in),
                tokens(*tokens_out),
                duration(*elapsed_s)
            )];
            lines.extend(
                reasons
                    .iter()
                    .map(|r| format!("    - {}", truncate(r, 200))),
            );
            lines
        }
        RunEvent::CheckResult { passed: false, .. }
        | RunEvent::Notice { .. }
        | RunEvent::LoopDetected { .. }
        | RunEvent::Compacted { .. }
        | RunEvent::Retry { .. }
        | RunEvent::Paused { .. }
        | RunEvent::Resumed { .. } => event.plain_lines(),
        RunEvent::Phase { phase, .. }
            if phase.starts_with("checking round") && !phase.starts_with("checking round 1") =>
        {
            event.plain_lines()
        }
        RunEvent::Message { text } => vec![text.clone()],
        RunEvent::RunFinished { .. } => vec![style(event.summary()).bold().to_string()],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_says_where_the_session_stands() {
        let status = Status {
            label: "session 7 (2 of 5)".into(),
            feature: Some("F002".into()),
            step: 4,
            tokens_in: 12_345,
            tokens_out: 1_200,
            cost_usd: 0.0123,
            phase: "working".into(),
            doing: "bash cargo test".into(),
            since: None,
        };
        assert_eq!(
            status.headline(),
            "session 7 (2 of 5) · F002 · working · step 4 · 12.3k in / 1.2k out tokens · $0.0123"
        );
    }

    #[test]
    fn tool_calls_stay_off_the_permanent_lines() {
        let call = RunEvent::ToolCall {
            session: 1,
            step: 1,
            name: "bash".into(),
            summary: "ls".into(),
            is_error: false,
        };
        assert!(permanent_lines(&call).is_empty());
    }
}
