//! A session's dependencies, installed before its worker starts.
//!
//! `init.sh` installs what the project needs, and runs with the profile's
//! `init_network` (by default the package registries, through the proxy),
//! while the worker keeps its own network (by default none). The worker's
//! harness runs `init.sh` again inside the worker's sandbox (to start what
//! the session needs running); so that its installs are already there, the
//! orchestrator first runs `init.sh` in the session's workspace, with its
//! private tmp and home, confined as the worker will be but for the
//! network. Its output goes to `init-before.log` in the session directory,
//! and the hosts it reached to the transcript. It decides nothing: the
//! worker's own run tells the model how `init.sh` fares.

use std::path::Path;
use std::time::Duration;

use crate::sandbox::SandboxSpec;
use crate::trusted::record::transcript::{Entry, Transcript};

/// What the transcript calls this run.
pub const DURING: &str = "init.sh before the session";

/// Run `init.sh` in the workspace of `spec` with the network `init.sh` is
/// given, when that is wider than the worker's and the session's base
/// holds an `init.sh` file (`init_sh`: from git, since an overlay
/// workspace's directory holds only what differs); the hosts it asked for
/// go to the transcript.
pub async fn install(
    spec: &SandboxSpec,
    init_sh: bool,
    session_dir: &Path,
    timeout: Duration,
    transcript: &mut Transcript,
) -> anyhow::Result<()> {
    let profile = spec.profile.for_init_script();
    if profile.network == spec.profile.network || !init_sh {
        return Ok(());
    }
    let spec = SandboxSpec {
        profile,
        keep_fds: Vec::new(),
        ..spec.clone()
    };
    let argv = ["bash", "-c", "./init.sh"].map(String::from);
    let mut cmd = crate::sandbox::command(&spec, &argv)?;
    let log = std::fs::File::create(session_dir.join("init-before.log"))?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let (mut child, served) = crate::sandbox::proxy::spawn(cmd, &spec)?;
    let pid = child.id();
    let finished = tokio::time::timeout(timeout, child.wait()).await;
    if let Some(pid) = pid {
        // What init.sh left running goes with its process group (and the
        // sandbox's PID namespace with its first process).
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait().await;
    match finished {
        Ok(Ok(status)) if !status.success() => {
            tracing::info!("{DURING}: {status}; see init-before.log")
        }
        Err(_) => tracing::info!("{DURING}: timed out after {} s", timeout.as_secs()),
        _ => {}
    }
    let contacts = served.map(|s| s.finish()).unwrap_or_default();
    transcript.append(&Entry::Network {
        during: DURING.into(),
        contacts,
    })?;
    Ok(())
}
