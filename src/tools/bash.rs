//! `bash {command, timeout_secs?}`: a shell command in the workspace.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::{Tool, ToolContext};
use crate::model::ToolSpec;

pub struct Bash;

impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: "Run a bash command in the workspace. stdout and stderr are combined."
                .into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string"},
                    "timeout_secs": {"type": "integer"}
                },
                "required": ["command"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &serde_json::Value) -> anyhow::Result<String> {
        let command = args
            .get("command")
            .and_then(|v| v.as_str())
            .context("missing `command` (a string)")?;
        let timeout = args
            .get("timeout_secs")
            .and_then(|v| v.as_u64())
            .unwrap_or(120);
        let out = run_shell(&ctx.workspace, command, Duration::from_secs(timeout))?;
        let status = match (out.timed_out, out.exit_code) {
            (true, _) => format!("[timed out after {timeout} s; the command was killed]"),
            (false, Some(0)) => String::new(),
            (false, Some(code)) => format!("[exit code {code}]"),
            (false, None) => "[killed by a signal]".into(),
        };
        Ok(format!(
            "{}{}",
            out.output,
            if status.is_empty() {
                String::new()
            } else {
                format!("\n{status}")
            }
        ))
    }
}

/// How a shell command ended.
#[derive(Debug, Clone)]
pub struct ShellOutcome {
    pub exit_code: Option<i32>,
    pub output: String,
    pub timed_out: bool,
}

/// Run `bash -c command` in `dir`, in its own process group, killed with the group on timeout.
pub fn run_shell(dir: &Path, command: &str, timeout: Duration) -> anyhow::Result<ShellOutcome> {
    let (mut reader, writer) = std::io::pipe()?;
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0)
        .spawn()
        .context("failed to start bash")?;
    let reading = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = reader.read_to_end(&mut buf);
        buf
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
    let buf = reading.join().unwrap_or_default();
    Ok(ShellOutcome {
        exit_code: status.code(),
        output: String::from_utf8_lossy(&buf).into_owned(),
        timed_out,
    })
}
