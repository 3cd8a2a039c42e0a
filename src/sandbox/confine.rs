//! Applying confinement in a fresh process, before any thread exists.

use serde::{Deserialize, Serialize};

use super::SandboxSpec;

/// What the kernel actually enforced, recorded in the session's trailers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Enforcement {
    /// One line per layer, e.g. "landlock: full (ABI 7)".
    pub layers: Vec<String>,
    /// What could not be enforced (only with a best-effort profile).
    pub warnings: Vec<String>,
}

/// Confine the calling process as `spec` says. Must run before any thread starts.
pub fn confine(_spec: &SandboxSpec) -> anyhow::Result<Enforcement> {
    // Own session and process group, and die with the parent.
    let _ = nix::unistd::setsid();
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    Ok(Enforcement {
        layers: vec!["process: own session, dies with its parent".into()],
        warnings: Vec::new(),
    })
}

/// The hidden `__exec` subcommand: confine, then exec `argv`. Returns only on failure.
pub fn exec_confined(spec_json: &str, argv: &[String]) -> std::process::ExitCode {
    use std::os::unix::process::CommandExt;
    let spec: SandboxSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("longrun: bad sandbox spec: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    if let Err(e) = confine(&spec) {
        eprintln!("longrun: cannot confine: {e:#}");
        return std::process::ExitCode::from(1);
    }
    let Some((program, args)) = argv.split_first() else {
        eprintln!("longrun: nothing to run");
        return std::process::ExitCode::from(2);
    };
    let err = std::process::Command::new(program).args(args).exec();
    eprintln!("longrun: cannot run {program}: {err}");
    std::process::ExitCode::from(127)
}
