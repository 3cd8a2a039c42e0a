//! The command that starts a program confined: longrun itself, re-executed
//! with the hidden exec subcommand (`exec.rs` runs it).

use super::{session_env, SandboxSpec};

/// The hidden subcommand that confines itself, then execs its arguments.
pub const EXEC_SUBCOMMAND: &str = "__exec";

/// A command that runs `argv` confined by `spec`: longrun re-executes itself
/// with the hidden exec subcommand, confines itself, then execs `argv`.
pub fn command(spec: &SandboxSpec, argv: &[String]) -> anyhow::Result<std::process::Command> {
    let exe = super::own_exe();
    let mut cmd = std::process::Command::new(exe);
    cmd.arg(EXEC_SUBCOMMAND)
        .arg("--spec")
        .arg(serde_json::to_string(spec)?)
        .arg("--");
    cmd.args(argv);
    cmd.env_clear();
    cmd.envs(session_env(spec));
    cmd.current_dir(&spec.workspace);
    Ok(cmd)
}
