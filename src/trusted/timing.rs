//! Where a session's time goes on the orchestrator's side, phase by phase.
//! One debug line per session in `.longrun/longrun.log`
//! (`session 12 phases: prepare 21.0 ms, worker 130.2 ms, ...`), which the
//! scale benchmark (`benches/scale.rs`) reads back.

use std::fmt::Write;
use std::time::{Duration, Instant};

pub struct Phases {
    session: u32,
    last: Instant,
    spent: Vec<(&'static str, Duration)>,
}

impl Phases {
    pub fn start(session: u32) -> Phases {
        Phases {
            session,
            last: Instant::now(),
            spent: Vec::new(),
        }
    }

    /// The time since the previous mark was spent in `phase`.
    pub fn mark(&mut self, phase: &'static str) {
        let now = Instant::now();
        self.spent.push((phase, now - self.last));
        self.last = now;
    }

    /// Log the phases.
    pub fn finish(mut self, last_phase: &'static str) {
        self.mark(last_phase);
        let mut line = String::new();
        for (i, (phase, took)) in self.spent.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(line, "{sep}{phase} {:.1} ms", took.as_secs_f64() * 1000.0);
        }
        tracing::debug!("session {} phases: {line}", self.session);
    }
}
