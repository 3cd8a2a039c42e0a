//! Starting a program under confinement: the hidden `__exec` helper that
//! verification uses, and `longrun sandbox -- CMD`. Both confine the
//! freshly executed longrun process itself and then exec the program, so
//! the program's exit status is the command's, and nothing is printed
//! unless something fails.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::{confine, session_env, Network, Profile, SandboxSpec};
use crate::error::{bad_input, exit_code_for};

// `longrun sandbox`'s arguments (its about text is on the variant and in sandbox_command).
#[derive(Debug, Args)]
pub struct SandboxCmd {
    /// A bundled profile (default, loopback, strict) or a path to a profile file.
    #[arg(long, value_name = "NAME|PATH", default_value = "default")]
    pub profile: String,
    /// The writable workspace (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Override the profile's network mode.
    #[arg(long, value_name = "MODE", value_parser = ["none", "loopback", "registries", "host"])]
    pub network: Option<String>,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub argv: Vec<String>,
}

/// The hidden `__exec` subcommand: confine, then exec `argv`. Returns only on failure.
pub fn exec_confined(spec_json: &str, argv: &[String]) -> ExitCode {
    let spec: SandboxSpec = match serde_json::from_str(spec_json) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("longrun: bad sandbox spec: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = super::proxy_bridge::take_channel_from_stdin() {
        eprintln!("longrun: {e:#}");
        return ExitCode::from(1);
    }
    if let Err(e) = confine(&spec) {
        eprintln!("longrun: cannot confine: {e:#}");
        return ExitCode::from(1);
    }
    exec(argv, None)
}

/// `longrun sandbox`: run `argv` under exactly the confinement a session gets,
/// with the workspace writable. Returns only on failure.
pub fn run_sandbox(args: SandboxCmd) -> ExitCode {
    let spec = match sandbox_spec(&args) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("error: {e:#}");
            return exit_code_for(&e);
        }
    };
    if spec.profile.network == Network::Registries {
        // Someone must run the proxy outside: this process, supervising.
        return super::proxy::supervise(&spec, &args.argv);
    }
    let env = session_env(&spec);
    match confine(&spec) {
        Ok(enforcement) => {
            for warning in &enforcement.warnings {
                eprintln!("longrun sandbox: not enforced: {warning}");
            }
        }
        Err(e) => {
            eprintln!("longrun sandbox: cannot confine: {e:#}");
            return ExitCode::from(1);
        }
    }
    exec(&args.argv, Some(env))
}

fn sandbox_spec(args: &SandboxCmd) -> anyhow::Result<SandboxSpec> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let mut profile = Profile::resolve(&args.profile, &cwd)?;
    if let Some(mode) = &args.network {
        profile.network = Network::parse(mode)?;
    }
    let workspace = args.workspace.clone().unwrap_or(cwd);
    let workspace = workspace
        .canonicalize()
        .map_err(|e| bad_input(format!("--workspace {}: {e}", workspace.display())))?;
    if !workspace.is_dir() {
        return Err(bad_input(format!(
            "--workspace {}: not a directory",
            workspace.display()
        )));
    }
    std::env::set_current_dir(&workspace)
        .with_context(|| format!("cannot enter {}", workspace.display()))?;
    let (tmp, home) = private_dirs()?;
    Ok(SandboxSpec::new(profile, workspace, tmp, home))
}

/// The private TMPDIR and HOME of `longrun sandbox`: one pair per user,
/// under the system temp dir, readable by that user only.
fn private_dirs() -> anyhow::Result<(PathBuf, PathBuf)> {
    let uid = nix::unistd::getuid().as_raw();
    let base = std::env::temp_dir().join(format!("longrun-sandbox-{uid}"));
    make_private(&base)?;
    let (tmp, home) = (base.join("tmp"), base.join("home"));
    make_private(&tmp)?;
    make_private(&home)?;
    Ok((tmp, home))
}

fn make_private(dir: &Path) -> anyhow::Result<()> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta = std::fs::symlink_metadata(dir)?;
            let uid = nix::unistd::getuid().as_raw();
            anyhow::ensure!(
                meta.is_dir() && meta.uid() == uid,
                "{} is not a directory of yours; remove it and run again",
                dir.display()
            );
            Ok(())
        }
        Err(e) => Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
}

/// Exec `argv` (with `env` replacing the environment, when given).
fn exec(argv: &[String], env: Option<Vec<(String, String)>>) -> ExitCode {
    let Some((program, args)) = argv.split_first() else {
        eprintln!("longrun: nothing to run");
        return ExitCode::from(2);
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args);
    if let Some(env) = env {
        cmd.env_clear().envs(env);
    }
    let err = cmd.exec();
    eprintln!("longrun: cannot run {program}: {err}");
    match err.kind() {
        std::io::ErrorKind::NotFound => ExitCode::from(127),
        _ => ExitCode::from(126),
    }
}
