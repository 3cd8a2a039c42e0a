//! One verification step (`init.sh`, a check) as its own confined process
//! that the orchestrator starts and waits for: the command is an argument
//! of `bash -c`, never a file; HOME and TMPDIR are fresh and empty; the
//! environment is scrubbed of what steers an interpreter; its output comes
//! from a pipe, capped; and its result is its exit status. Nothing the
//! checked code writes anywhere decides it.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxSpec;

/// Bytes of a step's output kept (the tail).
const OUTPUT_CAP: usize = 64 * 1024;
/// Lines of output kept for the transcript and the reasons.
const TAIL_LINES: usize = 40;

/// Variables no step inherits from anywhere (the parent, the profile):
/// each makes an interpreter run code that is not the check's.
const SCRUBBED: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "GLOBIGNORE",
    "SHELLOPTS",
    "BASHOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GIT_CONFIG_PARAMETERS",
];
const SCRUBBED_PREFIXES: &[&str] = &["PYTHON", "NODE_", "LD_", "BASH_FUNC_", "DYLD_"];

/// Told to every interpreter that listens: do not import from the working
/// directory or the script's, nor from the user's site, and write no
/// bytecode into the checkout.
const PYTHON: &[(&str, &str)] = &[
    ("PYTHONSAFEPATH", "1"),
    ("PYTHONNOUSERSITE", "1"),
    ("PYTHONDONTWRITEBYTECODE", "1"),
];

/// How a step ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "ended", content = "detail")]
pub enum Outcome {
    Passed,
    /// It ran and exited with this non-zero status.
    Failed(i32),
    /// Killed by this signal.
    Killed(i32),
    /// Past its time; the whole sandbox was killed.
    TimedOut(u64),
    /// It could not run at all: why.
    CannotRun(String),
}

impl Outcome {
    pub fn passed(&self) -> bool {
        *self == Outcome::Passed
    }

    /// For a reason line: how it ended, in words.
    pub fn describe(&self) -> String {
        match self {
            Outcome::Passed => "passed".into(),
            Outcome::Failed(code) => format!("exit status {code}"),
            Outcome::Killed(sig) => format!("killed by signal {sig}"),
            Outcome::TimedOut(secs) => format!("timed out after {secs} s"),
            Outcome::CannotRun(why) => why.clone(),
        }
    }
}

/// What one step did.
pub struct Ran {
    pub outcome: Outcome,
    /// The last lines of its output, printable.
    pub output_tail: String,
    /// The hosts it asked the registries proxy for.
    pub network: Vec<crate::sandbox::proxy::Contact>,
}

/// Run `command` confined as `spec` says, with HOME and TMPDIR fresh
/// directories made under `scratch` (which must not exist yet and must be
/// somewhere no session can write).
/// `env` is added to the step's environment.
pub async fn run(
    spec: &SandboxSpec,
    scratch: &Path,
    command: &str,
    timeout: Duration,
    env: &[(String, String)],
) -> Ran {
    match start(spec, scratch, command, timeout, env).await {
        Ok(ran) => ran,
        Err(e) => Ran {
            outcome: Outcome::CannotRun(format!("the harness could not start it: {e:#}")),
            output_tail: String::new(),
            network: Vec::new(),
        },
    }
}

async fn start(
    spec: &SandboxSpec,
    scratch: &Path,
    command: &str,
    timeout: Duration,
    env: &[(String, String)],
) -> anyhow::Result<Ran> {
    let (tmp, home) = (scratch.join("tmp"), scratch.join("home"));
    std::fs::create_dir_all(&tmp)?;
    std::fs::create_dir(&home)?;
    let spec = SandboxSpec {
        tmp,
        home,
        keep_fds: Vec::new(),
        ..spec.clone()
    };
    let argv = ["bash".to_string(), "-c".to_string(), command.to_string()];
    let mut cmd = crate::sandbox::command(&spec, &argv)?;
    cmd.env_clear()
        .envs(step_env(&spec))
        .envs(env.iter().cloned());
    let (reader, writer) = std::io::pipe()?;
    cmd.stdin(std::process::Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer);
    // With the registries network, the step gets its proxy (the hosts it
    // asked for come back with it); the parent's copies of the pipe's write
    // end go with the command.
    let (mut child, proxy) = crate::sandbox::proxy::spawn(cmd, &spec)?;
    let output = tokio::task::spawn_blocking(move || read_tail(reader, OUTPUT_CAP));
    let pid = child.id();
    let waited = tokio::time::timeout(timeout, child.wait()).await;
    // Whatever the step left running goes: its process group, and with
    // the sandbox's first process its PID namespace.
    if let Some(pid) = pid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.start_kill();
    let status = child.wait().await;
    let bytes = match tokio::time::timeout(Duration::from_secs(5), output).await {
        Ok(Ok(bytes)) => bytes,
        _ => b"[the output could not be read to its end]".to_vec(),
    };
    let text = printable(&bytes);
    let network = proxy.map(|p| p.finish()).unwrap_or_default();
    let outcome = match (waited, status) {
        (Err(_), _) => Outcome::TimedOut(timeout.as_secs()),
        (Ok(Ok(s)), _) => match (s.code(), s.signal()) {
            (Some(0), _) => Outcome::Passed,
            (Some(code), _) if confinement_failed(&text) => Outcome::CannotRun(format!(
                "the sandbox could not be set up (exit status {code})"
            )),
            (Some(127), _) => {
                Outcome::CannotRun("command not found or missing file (exit status 127)".into())
            }
            (Some(126), _) => Outcome::CannotRun("not executable (exit status 126)".into()),
            (Some(code), _) => Outcome::Failed(code),
            (None, Some(sig)) => Outcome::Killed(sig),
            (None, None) => Outcome::Failed(-1),
        },
        (Ok(Err(e)), _) => Outcome::CannotRun(format!("cannot wait for it: {e}")),
    };
    Ok(Ran {
        outcome,
        output_tail: crate::progress::tail(&text, TAIL_LINES),
        network,
    })
}

/// The sandbox's own refusal, printed by `__exec` before the command ran.
fn confinement_failed(output: &str) -> bool {
    output.lines().next().is_some_and(|l| {
        l.starts_with("longrun: cannot confine:") || l.starts_with("longrun: bad sandbox spec")
    })
}

/// The environment of a step: the session's, without anything that steers
/// an interpreter, with only absolute PATH entries, and Python told not to
/// import from the checkout's working directory or the user site.
pub fn step_env(spec: &SandboxSpec) -> Vec<(String, String)> {
    let mut env = crate::sandbox::session_env(spec);
    env.retain(|(k, _)| {
        !SCRUBBED.contains(&k.as_str()) && !SCRUBBED_PREFIXES.iter().any(|p| k.starts_with(p))
    });
    for (k, v) in env.iter_mut() {
        if k == "PATH" {
            *v = v
                .split(':')
                .filter(|p| p.starts_with('/'))
                .collect::<Vec<_>>()
                .join(":");
        }
    }
    env.extend(PYTHON.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

/// Read to the end, keeping only the last `cap` bytes.
fn read_tail(mut reader: impl Read, cap: usize) -> Vec<u8> {
    let mut kept: Vec<u8> = Vec::new();
    let mut dropped = false;
    let mut buf = [0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > cap * 2 {
                    kept.drain(..kept.len() - cap);
                    dropped = true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    if kept.len() > cap {
        kept.drain(..kept.len() - cap);
        dropped = true;
    }
    if dropped {
        let mut with_note = b"[earlier output cut]\n".to_vec();
        with_note.extend(kept);
        return with_note;
    }
    kept
}

/// Output as text a terminal and a transcript can hold: invalid UTF-8
/// replaced, control characters but newline and tab dropped.
fn printable(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes)
        .chars()
        .filter(|c| *c == '\n' || *c == '\t' || !c.is_control())
        .collect()
}

/// The name prefix of a passing feature's check run again.
pub const REGRESSION: &str = "regression check of";

/// A step run during verification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRun {
    pub name: String,
    pub command: String,
    /// It exited 0.
    pub passed: bool,
    pub output_tail: String,
    /// The hosts this run asked the registries proxy for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<crate::sandbox::proxy::Contact>,
    pub kind: StepKind,
    /// The feature whose check it is.
    pub feature: Option<String>,
    pub outcome: Outcome,
}

/// The kinds of step a verification runs, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// `init.sh`: its failure skips every other step.
    Setup,
    /// The assigned feature's check, which must pass.
    Feature,
    /// A `[checks] commands` entry, which must pass.
    Global,
    /// A passing feature's check run again (PASS_TO_PASS), which must pass.
    Regression,
    /// At init, a feature's check on the initializer's tree, which must
    /// run and fail (FAIL_TO_PASS).
    Acceptance,
    /// At init, the check of a feature given as passing (`init --features`
    /// from a half-built project): when it does not pass, the feature is set
    /// back to failing in the accepted commit; not a rejection.
    GivenPassing,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_its_tail_and_loses_nul_and_escapes() {
        let mut input = vec![b'a'; 300];
        input.extend_from_slice(b"\nend\0\x1b[31m\xff ok\r\n");
        let kept = read_tail(&input[..], 16);
        let text = printable(&kept);
        assert!(text.starts_with("[earlier output cut]\n"), "{text:?}");
        assert!(text.ends_with("end[31m\u{fffd} ok\n"), "{text:?}");
    }

    #[test]
    fn the_environment_steers_no_interpreter() {
        let spec: SandboxSpec = serde_json::from_value(serde_json::json!({
            "profile": crate::sandbox::Profile::resolve("default", Path::new("/")).unwrap(),
            "workspace": "/w", "tmp": "/t", "home": "/h",
        }))
        .unwrap();
        let mut spec = spec;
        spec.profile.env.insert("PYTHONPATH".into(), "/evil".into());
        spec.profile
            .env
            .insert("NODE_OPTIONS".into(), "--require x".into());
        spec.profile
            .env
            .insert("BASH_ENV".into(), "/evil.sh".into());
        let env = step_env(&spec);
        let get = |k: &str| {
            env.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("PYTHONPATH"), None);
        assert_eq!(get("NODE_OPTIONS"), None);
        assert_eq!(get("BASH_ENV"), None);
        assert_eq!(get("PYTHONSAFEPATH"), Some("1"));
        assert_eq!(get("PYTHONNOUSERSITE"), Some("1"));
        assert_eq!(get("HOME"), Some("/h"));
        assert!(get("PATH").is_some_and(|p| p.split(':').all(|d| d.starts_with('/'))));
    }
}
