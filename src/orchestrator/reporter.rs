//! What the orchestrator prints while it runs: one plain line per event.

use crate::broker::SessionEvent;

#[derive(Debug, Clone, Copy, Default)]
pub struct Reporter {
    pub quiet: bool,
}

impl Reporter {
    pub fn line(&self, text: &str) {
        // The log file keeps the whole account, whatever the terminal shows.
        tracing::debug!("{}", text.trim_start());
        if !self.quiet {
            println!("{text}");
        }
    }

    pub fn session_started(&self, number: u32, role: &str, feature: Option<&str>) {
        match feature {
            Some(f) => self.line(&format!("session {number} ({role}, {f}): started")),
            None => self.line(&format!("session {number} ({role}): started")),
        }
    }

    pub fn event(&self, number: u32, event: &SessionEvent) {
        let text = match event {
            SessionEvent::InitScript { exit_code, .. } => format!(
                "  init.sh: {}",
                exit_code
                    .map(|c| format!("exit {c}"))
                    .unwrap_or_else(|| "killed".into())
            ),
            SessionEvent::ToolCall {
                step,
                name,
                summary,
                is_error,
            } => format!(
                "  step {step}: {name} {summary}{}",
                if *is_error { "  [error]" } else { "" }
            ),
            SessionEvent::CheckResult { name, passed, .. } => {
                format!(
                    "  check {name}: {}",
                    if *passed { "passed" } else { "failed" }
                )
            }
            SessionEvent::Notice { text } => format!("  {text}"),
            SessionEvent::LoopDetected { what, ending } => format!(
                "  loop detected: {what}{}",
                if *ending { " (ending the session)" } else { "" }
            ),
            SessionEvent::Compacted {
                tokens_before,
                tokens_after,
            } => format!("  context compacted: ~{tokens_before} -> ~{tokens_after} tokens"),
            SessionEvent::WorkerStats { .. } => return,
            SessionEvent::Sandbox { enforcement } => match enforcement.warnings.as_slice() {
                [] => return,
                warnings => format!("  sandbox: not enforced: {}", warnings.join("; ")),
            },
        };
        let _ = number;
        self.line(&text);
    }

    pub fn check(&self, name: &str, passed: bool) {
        self.line(&format!(
            "  verify {name}: {}",
            if passed { "passed" } else { "FAILED" }
        ));
    }

    pub fn verdict(&self, number: u32, verdict: &str, reasons: &[String]) {
        self.line(&format!("session {number}: {verdict}"));
        for r in reasons {
            self.line(&format!("  - {r}"));
        }
    }
}
