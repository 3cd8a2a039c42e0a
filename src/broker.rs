//! The socket protocol between the session worker and the orchestrator.
//!
//! Newline-delimited JSON over an inherited Unix socket. The worker sends
//! [`WorkerMessage`]s; the orchestrator answers each model request with one
//! [`OrchestratorMessage`]. The worker never holds provider settings or keys.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::model::{ChatRequest, ChatResponse, ModelErrorKind};

/// How the ids of tool calls the worker found in the model's text begin
/// (`recovered_STEP_N`); they reach the transcript in the next request.
pub const RECOVERED_ID_PREFIX: &str = "recovered_";

/// The fd number the worker finds its end of the socket at.
pub const WORKER_FD: i32 = 3;
/// The environment variable that tells the worker its socket fd.
pub const FD_ENV: &str = "LONGRUN_BROKER_FD";
/// The fd number the worker finds its end of the confinement report socket at
/// (the registries proxy's channel is at 4).
pub const REPORT_FD: i32 = 5;
/// The environment variable that tells the worker its report socket's fd.
pub const REPORT_FD_ENV: &str = "LONGRUN_REPORT_FD";
/// The longest confinement report the orchestrator reads.
pub const MAX_REPORT_BYTES: usize = 64 << 10;
/// What the orchestrator answers on the report socket once it has looked at
/// the worker from outside.
pub const REPORT_SEEN: u8 = b'\n';

/// The longest message line the orchestrator reads from the worker (a model
/// request carries the whole conversation); a longer one is a protocol
/// violation, skipped.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// What the worker tells the orchestrator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkerMessage {
    /// Ask the model; the orchestrator answers with `ModelResponse` or `ModelError`.
    /// `subagent`: a `task` subagent asks, which `[model.subagent]` may serve.
    ModelRequest {
        request: ChatRequest,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        subagent: bool,
    },
    /// Ask the model for `count` answers to one request at once (`[harness]
    /// candidates`): the first as `request` is, every other at
    /// `temperature` when set. The orchestrator serves at most as many as
    /// longrun.toml allows and the step budget leaves, each a request of
    /// its own, and answers with `ModelCandidates` or `ModelError`.
    ModelCandidates {
        request: ChatRequest,
        count: u32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        temperature: Option<f64>,
    },
    /// Something happened that the orchestrator records (and shows as progress).
    Event { event: SessionEvent },
    /// The session is over; the worker exits after sending this.
    Finished { report: WorkerReport },
}

/// What the orchestrator answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OrchestratorMessage {
    ModelResponse {
        response: ChatResponse,
        /// A message from the harness to put before the next request (e.g. "stop now").
        #[serde(default)]
        notice: Option<String>,
    },
    /// The answers to a `ModelCandidates` request that came back, in the
    /// order asked; `asked`: the requests made and counted (the rest failed,
    /// each recorded in the transcript).
    ModelCandidates {
        responses: Vec<ChatResponse>,
        asked: u32,
        #[serde(default)]
        notice: Option<String>,
    },
    ModelError {
        message: String,
        /// The whole run must stop (for example, the key was refused).
        fatal: bool,
        /// What failed: a context-length error can be survived by compacting.
        #[serde(default)]
        kind: ModelErrorKind,
    },
}

/// Things the worker reports while it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionEvent {
    /// The harness ran `init.sh` before the first model call.
    InitScript {
        exit_code: Option<i32>,
        output_tail: String,
    },
    /// One tool call and how it went.
    ToolCall {
        step: u32,
        name: String,
        summary: String,
        is_error: bool,
        /// The model wrote this call in its answer's text (or as a file
        /// block); the harness found it and ran it like any other.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        recovered: bool,
    },
    /// A check the harness ran.
    CheckResult {
        name: String,
        passed: bool,
        output_tail: String,
    },
    /// A harness message to the model (budget warning, loop notice, ...).
    Notice { text: String },
    /// The loop detector fired; `ending` when this second loop ends the session.
    LoopDetected { what: String, ending: bool },
    /// The context was compacted into a handoff summary.
    Compacted {
        /// The estimated prompt before and after, in tokens.
        tokens_before: u64,
        tokens_after: u64,
    },
    /// What the worker itself used, sent once before `Finished`.
    WorkerStats {
        /// Peak resident memory of the worker process, in KiB.
        peak_rss_kib: u64,
        /// Time spent in the harness (not waiting for the model, not in tools), in microseconds.
        harness_micros: u64,
        steps: u32,
    },
    /// What the kernel enforced when the worker confined itself.
    Sandbox {
        enforcement: crate::sandbox::Enforcement,
    },
}

/// How the worker's session ended, from its own side.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WorkerReport {
    /// `completed` (the model stopped calling tools) or the limit that ended it.
    pub ended: WorkerEnd,
    /// Why, in words, when it did not complete.
    #[serde(default)]
    pub reason: Option<String>,
    pub steps: u32,
    /// Features not passing at the session's start whose checks passed, in
    /// the session's own sandbox, on the state it leaves at its ref: when
    /// that state breaks none that passed (its own check failing there),
    /// the others it makes pass; when its own check passes there while it
    /// breaks one that passed, its own feature first (one repair from
    /// done). Which feature to take next, a hint and never a verdict. The orchestrator
    /// keeps only ids of open features; the session that takes one tries
    /// this work first and is verified like any other.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub passes_others: Vec<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WorkerEnd {
    /// The model stopped calling tools.
    Completed,
    /// A budget or a loop ended it.
    Incomplete,
    /// The model could not be reached, or the harness failed.
    Failed,
    /// Told to stop and did.
    Stopped,
}

/// The worker's end of the socket, blocking.
pub struct WorkerLink {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
}

impl WorkerLink {
    pub fn new(stream: UnixStream) -> anyhow::Result<WorkerLink> {
        let writer = stream
            .try_clone()
            .context("failed to clone the broker socket")?;
        Ok(WorkerLink {
            reader: BufReader::new(stream),
            writer,
        })
    }

    /// The socket the orchestrator passed at [`WORKER_FD`], made
    /// close-on-exec before anything else runs: the tools the worker starts
    /// never hold it, so only the agent loop speaks to the orchestrator.
    pub fn inherited() -> anyhow::Result<WorkerLink> {
        use std::os::fd::FromRawFd;
        let fd: i32 = std::env::var(FD_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .context("the worker was started without a broker socket")?;
        // SAFETY: the orchestrator placed an open socket at this fd for us and nothing else owns it.
        let stream = unsafe { UnixStream::from_raw_fd(fd) };
        close_on_exec(&stream).context("cannot make the broker socket close-on-exec")?;
        WorkerLink::new(stream)
    }

    pub fn send(&mut self, message: &WorkerMessage) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        self.writer
            .write_all(&line)
            .context("the orchestrator went away")
    }

    /// Bytes as they are, for the fault-injection tests of the protocol.
    #[doc(hidden)]
    pub fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.writer
            .write_all(bytes)
            .context("the orchestrator went away")
    }

    pub fn receive(&mut self) -> anyhow::Result<OrchestratorMessage> {
        let mut line = String::new();
        let n = self
            .reader
            .read_line(&mut line)
            .context("the orchestrator went away")?;
        anyhow::ensure!(n > 0, "the orchestrator closed the broker socket");
        serde_json::from_str(&line).context("the orchestrator sent a malformed message")
    }

    /// Send a model request (a subagent's when `subagent`) and wait for the answer.
    pub fn ask(
        &mut self,
        request: ChatRequest,
        subagent: bool,
    ) -> anyhow::Result<OrchestratorMessage> {
        self.send(&WorkerMessage::ModelRequest { request, subagent })?;
        self.receive()
    }

    /// Ask for `count` candidates of `request` (those after the first at
    /// `temperature`) and wait for the answers.
    pub fn ask_candidates(
        &mut self,
        request: ChatRequest,
        count: u32,
        temperature: Option<f64>,
    ) -> anyhow::Result<OrchestratorMessage> {
        self.send(&WorkerMessage::ModelCandidates {
            request,
            count,
            temperature,
        })?;
        self.receive()
    }
}

/// Set FD_CLOEXEC on `fd` (its clones from `try_clone` have it already).
/// Worker side, right after confining itself: send what the kernel enforced
/// as one JSON line over the report socket, wait until the orchestrator has
/// looked at this process from outside (it answers [`REPORT_SEEN`], or
/// closes), and close the socket. It is gone before init.sh, the first model
/// call and the first tool: nothing the session runs can ever write to it.
pub fn report_confinement(enforcement: &crate::sandbox::Enforcement) -> anyhow::Result<()> {
    use std::os::fd::FromRawFd;
    let fd: i32 = std::env::var(REPORT_FD_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .context("the worker was started without a report socket")?;
    // SAFETY: the orchestrator placed an open socket at this fd for us and nothing else owns it.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    close_on_exec(&stream).context("cannot make the report socket close-on-exec")?;
    report_over(stream, enforcement)
}

/// Send the report over `stream`, wait for the answer, close it.
fn report_over(
    mut stream: UnixStream,
    enforcement: &crate::sandbox::Enforcement,
) -> anyhow::Result<()> {
    use std::io::Read;
    let mut line = serde_json::to_vec(enforcement)?;
    line.push(b'\n');
    stream
        .write_all(&line)
        .context("cannot send the confinement report")?;
    let mut seen = [0u8; 1];
    // Without the answer (end of file: the orchestrator refused the report,
    // or is gone) the worker runs nothing.
    match stream.read(&mut seen) {
        Ok(1) if seen[0] == REPORT_SEEN => Ok(()),
        _ => anyhow::bail!("the orchestrator did not accept the confinement report"),
    }
}

fn close_on_exec(fd: &impl std::os::fd::AsFd) -> nix::Result<()> {
    use nix::fcntl::{fcntl, FcntlArg, FdFlag};
    let flags = FdFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFD)?);
    fcntl(fd, FcntlArg::F_SETFD(flags | FdFlag::FD_CLOEXEC)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_goes_on_only_once_its_confinement_report_is_answered() {
        use std::io::Read;
        let report = crate::sandbox::Enforcement {
            layers: vec!["profile default".into()],
            warnings: Vec::new(),
        };
        for answer in [Some(REPORT_SEEN), Some(b'x'), None] {
            let (worker, mut orchestrator) = UnixStream::pair().unwrap();
            let reader = std::thread::spawn(move || {
                let mut line = Vec::new();
                let mut byte = [0u8; 1];
                while orchestrator.read(&mut byte).unwrap() == 1 && byte[0] != b'\n' {
                    line.push(byte[0]);
                }
                if let Some(a) = answer {
                    orchestrator.write_all(&[a]).unwrap();
                }
                line
            });
            let result = report_over(worker, &report);
            let line = reader.join().unwrap();
            assert_eq!(
                serde_json::from_slice::<crate::sandbox::Enforcement>(&line).unwrap(),
                report
            );
            assert_eq!(result.is_ok(), answer == Some(REPORT_SEEN), "{answer:?}");
        }
    }

    #[test]
    fn the_workers_end_is_close_on_exec() {
        use std::os::fd::AsRawFd;
        let (a, _b) = UnixStream::pair().unwrap();
        let fd = a.as_raw_fd();
        // SAFETY: clearing the flag on a descriptor this test owns.
        unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
        close_on_exec(&a).unwrap();
        // SAFETY: reading the flags of a descriptor this test owns.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }
}
