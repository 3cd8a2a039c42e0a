//! The live progress display on a terminal (indicatif): for each session in
//! flight, a two-line status that redraws in place — session i of N, the
//! feature, the phase, the step, tokens, cost, elapsed time, and the tool
//! running with its own time — with verdicts, warnings and notices printed
//! above the statuses as permanent lines, whole.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use console::style;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// The status area: one two-line status per session in flight, in the
/// order they started (under `--parallel` there are several), with lines
/// printed above them kept on screen.
pub struct Live {
    area: MultiProgress,
    /// Each running session's status, by session number.
    sessions: std::sync::Mutex<BTreeMap<u32, SessionLine>>,
    keys: std::sync::Mutex<QuietKeys>,
}

/// Keys typed while the status area is drawn are not echoed: indicatif
/// leaves the cursor at the right edge of its last line, so an echoed `^C`
/// (or Enter) would start a line it does not know of, and a status line would
/// be left behind on the screen. The terminal's settings are put back when
/// the area goes.
struct QuietKeys {
    saved: Option<nix::sys::termios::Termios>,
}

impl QuietKeys {
    fn on() -> QuietKeys {
        use nix::sys::termios::{tcgetattr, tcsetattr, LocalFlags, SetArg};
        let out = std::io::stdout();
        // A run in the background must not touch the terminal (that would stop it).
        let foreground =
            nix::unistd::tcgetpgrp(&out).is_ok_and(|group| group == nix::unistd::getpgrp());
        let saved = tcgetattr(&out).ok().filter(|_| foreground);
        if let Some(settings) = &saved {
            let mut quiet = settings.clone();
            quiet.local_flags.remove(LocalFlags::ECHO);
            let _ = tcsetattr(&out, SetArg::TCSANOW, &quiet);
        }
        QuietKeys { saved }
    }

    fn off(&mut self) {
        use nix::sys::termios::{tcsetattr, SetArg};
        if let Some(settings) = self.saved.take() {
            let _ = tcsetattr(std::io::stdout(), SetArg::TCSANOW, &settings);
        }
    }
}

/// One session's status in the area.
struct SessionLine {
    bar: ProgressBar,
    /// When the thing on its second line started; the template ticks it.
    since: Arc<std::sync::Mutex<Option<Instant>>>,
}

/// The status area on screen, if any: whatever else writes to the terminal
/// (warnings, the Ctrl-C acknowledgement) goes above it instead of being
/// drawn over.
static ACTIVE: std::sync::Mutex<Option<MultiProgress>> = std::sync::Mutex::new(None);

fn active() -> Option<MultiProgress> {
    ACTIVE.lock().ok().and_then(|a| a.clone())
}

/// Whether the status area is on screen (it then shows each retry itself).
pub fn drawing() -> bool {
    active().is_some()
}

/// Run `write` (to stderr, say) with the status area hidden, then draw it again.
pub fn suspend<R>(write: impl FnOnce() -> R) -> R {
    match active() {
        Some(area) => area.suspend(write),
        None => write(),
    }
}

/// One whole line on stderr, above the status area when there is one.
pub fn eprint_line(text: &str) {
    suspend(|| {
        use std::io::Write;
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{text}");
        let _ = err.flush();
    });
}

impl SessionLine {
    fn new() -> SessionLine {
        let bar = ProgressBar::hidden();
        let since = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let ticking = Arc::clone(&since);
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
        SessionLine { bar, since }
    }

    fn show(&self, status: &Status) {
        if let Ok(mut since) = self.since.lock() {
            *since = status.since;
        }
        self.bar.set_prefix(status.headline());
        self.bar.set_message(status.doing.clone());
    }
}

impl Live {
    pub fn new() -> Live {
        let area = MultiProgress::with_draw_target(ProgressDrawTarget::stdout());
        if let Ok(mut a) = ACTIVE.lock() {
            *a = Some(area.clone());
        }
        Live {
            area,
            sessions: std::sync::Mutex::new(BTreeMap::new()),
            keys: std::sync::Mutex::new(QuietKeys::on()),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, SessionLine>> {
        // A panic elsewhere must not silence the display.
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Session `number` starts: its status joins the area, below the others,
    /// its clock at zero and its spinner turning.
    pub fn start(&self, number: u32, status: &Status) {
        let line = SessionLine::new();
        let mut sessions = self.sessions();
        // Kept in session order: a later number goes below.
        let bar = match sessions.range(number..).next() {
            Some((_, after)) => self.area.insert_before(&after.bar, line.bar.clone()),
            None => self.area.add(line.bar.clone()),
        };
        bar.enable_steady_tick(Duration::from_millis(120));
        line.show(status);
        if let Some(old) = sessions.insert(number, line) {
            self.area.remove(&old.bar);
        }
    }

    /// Session `number`'s status says `status` now.
    pub fn update(&self, number: u32, status: &Status) {
        if let Some(line) = self.sessions().get(&number) {
            line.show(status);
        }
    }

    /// Session `number` has its verdict: its status leaves the area.
    pub fn end(&self, number: u32) {
        if let Some(line) = self.sessions().remove(&number) {
            line.bar.finish_and_clear();
            self.area.remove(&line.bar);
        }
    }

    /// Lines printed above the status area, kept on screen, after `header`
    /// when given (another session's lines came last). Whether anything was printed.
    pub fn print(&self, event: &RunEvent, header: Option<&str>) -> bool {
        let lines = permanent_lines(event);
        if lines.is_empty() {
            return false;
        }
        let text = header
            .map(str::to_string)
            .into_iter()
            .chain(lines)
            .collect::<Vec<_>>()
            .join("\n");
        // One call: the lines of one event stay together.
        let _ = self.area.println(text);
        true
    }

    pub fn finish(&self) {
        let numbers: Vec<u32> = self.sessions().keys().copied().collect();
        for n in numbers {
            self.end(n);
        }
        let _ = self.area.clear();
        if let Ok(mut a) = ACTIVE.lock() {
            *a = None;
        }
        if let Ok(mut keys) = self.keys.lock() {
            keys.off();
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
