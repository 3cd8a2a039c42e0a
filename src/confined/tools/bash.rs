//! `bash {command, timeout_secs?}`: a shell command in the workspace, and
//! [`run_shell`], which the harness also uses for init.sh and checks.
//!
//! Each command runs in its own process group; on timeout the whole group is
//! killed, and when the shell exits whatever it left running in the group goes
//! too, so no call can hang the session or leak processes.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use serde_json::{json, Value};

use super::args::Args;
use super::{Tool, ToolContext};
use crate::model::ToolSpec;

pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
const MAX_TIMEOUT_SECS: u64 = 1800;
/// Output kept in memory per command; a runaway `yes` must not eat the worker.
const MAX_CAPTURE_BYTES: usize = 8 << 20;

pub struct Bash;

impl Tool for Bash {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "bash".into(),
            description: format!(
                "Run a command with `bash -c` in the workspace root and return its combined stdout and stderr, \
                 followed by the exit code when it is not 0. Use it to build, run tests, use git and inspect the system. \
                 Commands are non-interactive (stdin is empty); processes still running when the command ends are killed, \
                 so start a server and query it within the same command. The default timeout is {DEFAULT_TIMEOUT_SECS} s \
                 (at most {MAX_TIMEOUT_SECS}); on timeout the command and everything it started are killed. \
                 Long output is cut to its head and tail; the full text is saved to a file whose path is given. \
                 Prefer read_file, list_files, grep, write_file and edit_file for files."
            ),
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "The bash command line, e.g. `cargo test 2>&1 | tail -20`."},
                    "timeout_secs": {"type": "integer", "description": "Seconds before the command is killed (default 120, at most 1800)."}
                },
                "required": ["command"]
            }),
        }
    }

    fn run(&self, ctx: &ToolContext, args: &Value) -> anyhow::Result<String> {
        let args = Args::object("bash", args)?;
        let command = args.string("command")?;
        if command.trim().is_empty() {
            bail!("argument `command` is empty; give a bash command line");
        }
        let timeout = args
            .opt_u64("timeout_secs")?
            .unwrap_or(DEFAULT_TIMEOUT_SECS);
        if timeout == 0 || timeout > MAX_TIMEOUT_SECS {
            bail!(
                "argument `timeout_secs` must be between 1 and {MAX_TIMEOUT_SECS}, not {timeout}"
            );
        }
        let out = run_shell(&ctx.workspace, command, Duration::from_secs(timeout))?;
        Ok(describe(&out, timeout))
    }
}

/// The output as the model sees it: the text, then how the command ended.
fn describe(out: &ShellOutcome, timeout: u64) -> String {
    let status = match (out.timed_out, out.exit_code) {
        (true, _) => Some(format!(
            "[timed out after {timeout} s; the command and its processes were killed]"
        )),
        (false, Some(0)) => None,
        (false, Some(code)) => Some(format!("[exit code {code}]")),
        (false, None) => Some("[killed by a signal]".into()),
    };
    let mut text = out.output.clone();
    if text.is_empty() && status.is_none() {
        return "(no output)".into();
    }
    if let Some(status) = status {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&status);
    }
    text
}

/// How a shell command ended.
#[derive(Debug, Clone)]
pub struct ShellOutcome {
    pub exit_code: Option<i32>,
    /// stdout and stderr interleaved as written, lossily decoded.
    pub output: String,
    pub timed_out: bool,
}

/// Run `bash -c command` in `dir`, in its own process group, killed with the group on timeout.
pub fn run_shell(dir: &Path, command: &str, timeout: Duration) -> anyhow::Result<ShellOutcome> {
    let (reader, writer) = std::io::pipe()?;
    let mut cmd = Command::new("bash");
    cmd.arg("-c")
        .arg(command)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(writer.try_clone()?)
        .stderr(writer)
        .process_group(0);
    // SAFETY: only async-signal-safe syscalls between fork and exec.
    unsafe { cmd.pre_exec(only_stdio_across_exec) };
    let mut child = cmd.spawn().context("failed to start bash")?;
    // The command holds the pipe's write end: the reader sees its end only
    // once ours is gone too.
    drop(cmd);
    let output = read_in_background(reader);
    let group = nix::unistd::Pid::from_raw(child.id() as i32);
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            break child.wait()?;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // Whatever the command left in its group would hold the pipe open.
    let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
    // A process that left the group can still hold the pipe; stop waiting for it.
    let buf = output
        .recv_timeout(Duration::from_secs(2))
        .unwrap_or_else(|_| {
            b"[output unavailable: a process that left the command's group kept it open]".to_vec()
        });
    Ok(ShellOutcome {
        exit_code: status.code(),
        output: String::from_utf8_lossy(&buf).into_owned(),
        timed_out,
    })
}

/// Run in the child between fork and exec: every descriptor above stderr
/// becomes close-on-exec, so that a command holds nothing of the worker's
/// (its broker socket above all) whatever flags they were opened with.
/// Marked rather than closed: std still reports a failed exec through one.
fn only_stdio_across_exec() -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: a syscall on descriptors of this (forked, single-threaded) child.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if rc == 0 {
        return Ok(());
    }
    // Before Linux 5.11: one by one, up to the descriptor limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct passed.
    let max = match unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } {
        0 => limit.rlim_cur.min(1 << 16) as i32,
        _ => 4096,
    };
    for fd in 3..max {
        // SAFETY: setting a flag; a descriptor that is not open answers EBADF.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(())
}

/// Read the pipe to its end on a thread, keeping at most [`MAX_CAPTURE_BYTES`].
fn read_in_background(mut reader: std::io::PipeReader) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 64 * 1024];
        let mut dropped = 0usize;
        loop {
            match reader.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) if buf.len() + n <= MAX_CAPTURE_BYTES => buf.extend_from_slice(&chunk[..n]),
                Ok(n) => dropped += n,
            }
        }
        if dropped > 0 {
            buf.extend_from_slice(
                format!("\n[{dropped} more bytes of output were discarded]\n").as_bytes(),
            );
        }
        let _ = tx.send(buf);
    });
    rx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, timeout: u64) -> String {
        let d = tempfile::tempdir().unwrap();
        let ctx = ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().to_path_buf(),
        };
        let v = json!({"command": command, "timeout_secs": timeout});
        Bash.run(&ctx, &v).unwrap_or_else(|e| format!("Error: {e}"))
    }

    #[test]
    fn combines_stdout_and_stderr_and_reports_the_exit_code() {
        assert_eq!(
            run("echo out; echo err >&2; exit 3", 10),
            "out\nerr\n[exit code 3]"
        );
        assert_eq!(run("true", 10), "(no output)");
        assert_eq!(run("printf x; false", 10), "x\n[exit code 1]");
    }

    #[test]
    fn runs_in_the_workspace() {
        let out = run("pwd", 10);
        assert!(!out.trim().is_empty());
        let d = tempfile::tempdir().unwrap();
        let got = run_shell(d.path(), "pwd", Duration::from_secs(5)).unwrap();
        assert_eq!(
            got.output.trim(),
            d.path().canonicalize().unwrap().display().to_string()
        );
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let d = tempfile::tempdir().unwrap();
        let marker = d.path().join("survived");
        let cmd = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let got = run_shell(d.path(), &cmd, Duration::from_millis(300)).unwrap();
        assert!(got.timed_out);
        std::thread::sleep(Duration::from_millis(2500));
        assert!(
            !marker.exists(),
            "a process of the group outlived the timeout"
        );
    }

    #[test]
    fn reports_a_timeout_to_the_model() {
        let out = run("echo started; sleep 5", 1);
        assert!(out.starts_with("started\n"), "{out}");
        assert!(out.contains("[timed out after 1 s"), "{out}");
    }

    #[test]
    fn background_processes_do_not_hang_the_call() {
        let d = tempfile::tempdir().unwrap();
        let got = run_shell(d.path(), "sleep 60 & echo done", Duration::from_secs(10)).unwrap();
        assert_eq!(got.output, "done\n");
        assert!(!got.timed_out);
    }

    #[test]
    fn a_command_holds_no_descriptor_beyond_stdio() {
        use std::os::fd::AsRawFd;
        let d = tempfile::tempdir().unwrap();
        let (inherited, _other) = std::os::unix::net::UnixStream::pair().unwrap();
        let fd = inherited.as_raw_fd();
        // As the worker's socket was before it is marked: inheritable.
        // SAFETY: clearing the flag on a descriptor this test owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        let cmd = format!("ls /proc/self/fd; echo x >&{fd} && echo wrote");
        let got = run_shell(d.path(), &cmd, Duration::from_secs(10)).unwrap();
        assert!(!got.output.contains("wrote"), "{}", got.output);
        let fds: Vec<&str> = got
            .output
            .lines()
            .filter(|l| l.chars().all(|c| c.is_ascii_digit()))
            .collect();
        // 0, 1, 2 and the one ls opened to list them.
        assert_eq!(fds.len(), 4, "{}", got.output);
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(run("  ", 10).contains("`command` is empty"));
        assert!(run("true", 0).contains("between 1 and 1800"));
    }
}
