//! Fault injection for the crash-recovery tests.
//!
//! With `LONGRUN_FAILPOINT=PHASE:SESSION` set, the orchestrator kills itself
//! with SIGKILL when session SESSION reaches PHASE, exactly as a `kill -9`
//! or a power loss would stop it there. Unset, this costs one env lookup.

pub fn hit(phase: &str, session: u32) {
    let Ok(want) = std::env::var("LONGRUN_FAILPOINT") else {
        return;
    };
    if want == format!("{phase}:{session}") {
        tracing::warn!("failpoint {want}: killing the orchestrator");
        let _ = nix::sys::signal::kill(nix::unistd::getpid(), nix::sys::signal::Signal::SIGKILL);
    }
}
