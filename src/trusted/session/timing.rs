//! Where a session's time goes on the orchestrator's side, phase by phase.
//! One debug line per session in `.longrun/longrun.log`
//! (`session 12 phases: prepare 21.0 ms, worker 130.2 ms, ...`), which the
//! scale benchmark (`benches/scale.rs`) reads back; and one line of the
//! orchestrator's descriptors and memory after each session.

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
        tracing::debug!("session {} resources: {}", self.session, resources());
    }
}

/// The orchestrator's open descriptors and resident memory now, from
/// /proc/self: what a long run must keep flat.
fn resources() -> String {
    let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    let mb = |k: u64| k as f64 / 1024.0;
    format!(
        "fds {fds}, rss {:.1} MB (anon {:.1} MB, file {:.1} MB)",
        mb(kib("VmRSS:")),
        mb(kib("RssAnon:")),
        mb(kib("RssFile:"))
    )
}
