//! Fault injection for the crash-recovery and display tests.
//!
//! `LONGRUN_FAILPOINT` names one point or several, comma-separated:
//!
//! - `PHASE:SESSION`: the orchestrator kills itself with SIGKILL when session
//!   SESSION reaches PHASE, exactly as a `kill -9` or a power loss would stop
//!   it there;
//! - `PHASE:SESSION=FIFO`: that session waits at PHASE (once) until the named
//!   pipe FIFO, made by the test, has been opened for writing and closed
//!   again. A test looks at the screen or sends a key while the session
//!   stands still, then lets it go: no race with the clock. The rest of the
//!   run (other sessions, the signal handler, the live display) goes on.
//!
//! Only a build with the `test-hooks` feature reads the variable (the
//! tests' builds: Cargo.toml's dev-dependency on longrun itself turns it on);
//! in any other build `hit` does nothing. Unset, it costs one env lookup.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;

/// Points already held: a point holds once per process.
static HELD: Mutex<Option<HashSet<String>>> = Mutex::new(None);

/// What a point asks for when reached.
#[derive(Debug, PartialEq)]
enum Action {
    Kill,
    Hold(PathBuf),
}

/// The action `spec` (the variable's value) names for `phase` of `session`.
fn action(spec: &str, phase: &str, session: u32) -> Option<Action> {
    let point = format!("{phase}:{session}");
    spec.split(',').find_map(|item| match item.split_once('=') {
        Some((p, fifo)) if p == point => Some(Action::Hold(PathBuf::from(fifo))),
        None if item == point => Some(Action::Kill),
        _ => None,
    })
}

/// Session `session` reached `phase`: die or wait here if the variable says so.
pub async fn hit(phase: &str, session: u32) {
    if !cfg!(feature = "test-hooks") {
        return;
    }
    let Ok(spec) = std::env::var("LONGRUN_FAILPOINT") else {
        return;
    };
    match action(&spec, phase, session) {
        None => {}
        Some(Action::Kill) => {
            tracing::warn!("failpoint {phase}:{session}: killing the orchestrator");
            let _ =
                nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
        }
        Some(Action::Hold(fifo)) => {
            let point = format!("{phase}:{session}");
            let first = HELD
                .lock()
                .map(|mut r| r.get_or_insert_with(HashSet::new).insert(point.clone()))
                .unwrap_or(false);
            if first {
                tracing::debug!(
                    "failpoint {point}: held until {} is written",
                    fifo.display()
                );
                // Opening a FIFO for reading blocks until a writer comes; off
                // the runtime's threads, so that the rest of the run goes on.
                let _ = tokio::task::spawn_blocking(move || {
                    std::fs::read(&fifo)
                        .map_err(|e| tracing::warn!("failpoint {point}: {}: {e}", fifo.display()))
                })
                .await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_point_is_killed_or_held_only_where_named() {
        let spec = "agent-loop:2=/tmp/a,verification:3";
        assert_eq!(
            action(spec, "agent-loop", 2),
            Some(Action::Hold("/tmp/a".into()))
        );
        assert_eq!(action(spec, "verification", 3), Some(Action::Kill));
        assert_eq!(action(spec, "agent-loop", 3), None);
        assert_eq!(action(spec, "verification", 2), None);
        assert_eq!(action("agent-loop:12", "agent-loop", 1), None);
    }
}
