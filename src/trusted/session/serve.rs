//! Starting a session's worker and serving it: every model request goes
//! through here to the provider, every answer and event into the transcript.
//!
//! One event loop per session races the worker's messages against the wall
//! time, the interrupt (first signal: wind down within a grace period; second:
//! stop now) and the grace deadline.
//!
//! The worker is on the session's side of the trust boundary: what it says
//! is data. Its budget (model requests, tokens, cost, wall time) is counted
//! here, from the requests brokered, and enforced here: a request that comes
//! once a budget is spent stops the worker. Its report of what the sandbox
//! enforced is taken only as its very first message, before any tool could
//! have run. A line that is malformed, too long or out of turn is a protocol
//! violation, recorded in the transcript, never a crash.

use std::future::Future;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::time::Sleep;

use super::candidates;
use super::signals::Interrupt;
use crate::broker::{self, OrchestratorMessage, SessionEvent, WorkerMessage, WorkerReport};
use crate::config::BudgetSection;
use crate::model::{ModelError, Provider, RequestContext, RetrySink, Usage};
use crate::trusted::record::transcript::{Entry, Transcript};
use crate::trusted::Reporter;

/// Why the orchestrator ended the worker, if it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The worker exited on its own.
    Exited,
    /// The session's wall time ran out.
    WallTime,
    /// Interrupted once; the grace period ran out before the worker finished.
    GraceOver,
    /// Interrupted twice: stopped at once.
    Interrupted,
    /// The run's cost reached `--max-cost` during this session.
    CostLimit,
    /// The worker asked for a model request once a budget of its session
    /// was spent ([`WorkerRun::over_budget`] says which).
    Budget,
    /// The worker broke the broker protocol too often to go on.
    Protocol,
    /// The kernel contradicted the worker's confinement report: stopped
    /// before it ran anything of the session.
    Unconfined,
}

/// Protocol violations recorded before the worker is stopped for them.
pub const MAX_VIOLATIONS: u32 = 20;

/// What came of serving the worker.
pub struct WorkerRun {
    pub report: Option<WorkerReport>,
    pub stop: Stop,
    /// How the process ended, in words.
    pub exit: String,
    pub usage: Usage,
    pub cost_usd: f64,
    pub requests: u32,
    /// The signal that killed the worker, when one did and the orchestrator did not send it.
    pub killed_by: Option<i32>,
    /// A model failure no later session can survive.
    pub fatal: Option<String>,
    /// What the worker's loop detector reported, one entry per trigger.
    pub loops: Vec<String>,
    /// The worker's confinement: its report over the report socket, and what
    /// the orchestrator saw of it in /proc (confinement.rs).
    pub sandbox: Option<super::confinement::Confinement>,
    /// The budget the worker went past, as the orchestrator counted it.
    pub over_budget: Option<String>,
    /// Protocol violations seen (each is in the transcript).
    pub violations: u32,
    /// The hosts the worker's sandbox asked the registries proxy for.
    pub network: Vec<crate::sandbox::proxy::Contact>,
    /// The last model error the worker was answered with (who failed: fault.rs).
    pub model_error: Option<ModelError>,
}

impl WorkerRun {
    /// Nothing counted yet; `stop` says how it ended.
    pub fn new(stop: Stop) -> WorkerRun {
        WorkerRun {
            report: None,
            stop,
            exit: String::new(),
            usage: Usage::default(),
            cost_usd: 0.0,
            requests: 0,
            killed_by: None,
            fatal: None,
            loops: Vec::new(),
            sandbox: None,
            over_budget: None,
            violations: 0,
            network: Vec::new(),
            model_error: None,
        }
    }
}

/// What the worker needs to start.
pub struct Launch<'a> {
    pub number: u32,
    pub session_dir: &'a Path,
    pub config_path: &'a Path,
    pub env: Vec<(String, String)>,
    pub wall_time: Duration,
    pub grace: Duration,
    /// The run's `--max-cost`, shared by the sessions running at once.
    pub cost_limit: Option<Arc<CostLimit>>,
    /// The session's budget, enforced on the requests brokered.
    pub budget: BudgetSection,
    /// The name of the profile the worker was given, which its report must name.
    pub profile: &'a str,
    /// The registries proxy's channel, when the session's network asks for one.
    pub proxy: Option<crate::sandbox::proxy::Channel>,
    /// The model of the session's `task` subagents, when not the session's own.
    pub subagent_model: Option<Arc<dyn Provider>>,
    /// The most candidates of one request served at once (`[harness]
    /// candidates`, `repair_candidates`), whatever the worker asks.
    pub max_candidates: u32,
}

/// `--max-cost`: what the run's sessions have spent so far, live, against the limit.
#[derive(Debug)]
pub struct CostLimit {
    pub max_usd: f64,
    spent: std::sync::Mutex<f64>,
}

impl CostLimit {
    pub fn new(max_usd: f64) -> CostLimit {
        CostLimit {
            max_usd,
            spent: std::sync::Mutex::new(0.0),
        }
    }

    pub fn spent(&self) -> f64 {
        *self.spent.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count `usd`; true once the run has reached the limit.
    pub fn add(&self, usd: f64) -> bool {
        let mut spent = self.spent.lock().unwrap_or_else(|p| p.into_inner());
        *spent += usd;
        *spent >= self.max_usd
    }

    pub fn reached(&self) -> bool {
        self.spent() >= self.max_usd
    }
}

/// Start the worker and serve it until it exits or is stopped.
pub async fn serve(
    mut launch: Launch<'_>,
    provider: &Arc<dyn Provider>,
    transcript: &mut Transcript,
    reporter: &Reporter,
    interrupt: &Interrupt,
) -> anyhow::Result<WorkerRun> {
    let (ours, theirs) =
        std::os::unix::net::UnixStream::pair().context("failed to make the broker socket")?;
    let (report, report_theirs) = super::confinement::socket()?;
    let mut child = spawn(&launch, &theirs, &report_theirs)?;
    drop((theirs, report_theirs));
    let proxy = launch
        .proxy
        .take()
        .map(|c| c.serve(crate::sandbox::proxy::Refusals::Counted));
    let proxy = proxy.transpose()?;
    let pid = child.id().map(|p| p as i32);
    if let Some(pid) = pid {
        // The start time proves, after a crash, that the pid is still this worker.
        if let Some(start) = start_time(pid) {
            let _ = std::fs::write(launch.session_dir.join(START_FILE), start.to_string());
        }
        let _ = std::fs::write(launch.session_dir.join("worker.pid"), pid.to_string());
    }
    ours.set_nonblocking(true)?;
    let (read, mut write) = tokio::net::UnixStream::from_std(ours)?.into_split();
    let mut lines = BufReader::new(read);
    // The worker ends itself at its wall time between steps; a tool still
    // running a little past it is killed with the worker.
    let slack = (launch.wall_time / 10).clamp(Duration::from_secs(1), Duration::from_secs(30));
    let mut stops = Stops::new(launch.wall_time + slack, launch.grace, interrupt);
    let mut run = WorkerRun::new(Stop::Exited);
    // First the confinement report, over its own socket; the worker waits
    // for the answer before it runs anything of the session.
    match stops
        .race(super::confinement::receive(report, launch.profile))
        .await
    {
        Ok(Ok(Some(confinement))) => {
            let event = SessionEvent::Sandbox {
                enforcement: confinement.reported.clone(),
            };
            reporter.event(launch.number, &event);
            transcript.append(&Entry::Event { event })?;
            if !confinement.contradictions.is_empty() {
                run.stop = Stop::Unconfined;
            }
            run.sandbox = Some(confinement);
        }
        // The worker ended before it could report; its log says why.
        Ok(Ok(None)) => {}
        Ok(Err(e)) => {
            violation(&launch, &mut run, transcript, format!("{e:#}"))?;
        }
        Err(stop) => run.stop = stop,
    }
    while run.stop == Stop::Exited {
        let line = match stops
            .race(read_line(&mut lines, broker::MAX_LINE_BYTES))
            .await
        {
            Ok(Ok(Line::Text(line))) => line,
            Ok(Ok(Line::TooLong(len))) => {
                let what = format!(
                    "a message of {len} bytes, over the limit of {} bytes, was skipped",
                    broker::MAX_LINE_BYTES
                );
                if violation(&launch, &mut run, transcript, what)? {
                    break;
                }
                continue;
            }
            Ok(Ok(Line::Eof)) | Ok(Err(_)) => break,
            Err(stop) => {
                run.stop = stop;
                break;
            }
        };
        let message: WorkerMessage = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(e) => {
                let what = format!("a malformed message was skipped: {e}");
                if violation(&launch, &mut run, transcript, what)? {
                    break;
                }
                continue;
            }
        };
        if run.report.is_some() {
            let what = "a message after the worker's final report was ignored".to_string();
            if violation(&launch, &mut run, transcript, what)? {
                break;
            }
            continue;
        }
        match message {
            WorkerMessage::ModelRequest { request, subagent } => {
                if let Some(reason) = spent(&launch.budget, &run) {
                    run.over_budget = Some(reason);
                    run.stop = Stop::Budget;
                    break;
                }
                let index = run.requests;
                run.requests += 1;
                let provider = match (&launch.subagent_model, subagent) {
                    (Some(other), true) => other,
                    _ => provider,
                };
                transcript.append(&Entry::Request {
                    index,
                    request: request.clone(),
                    model: subagent.then(|| provider.describe()),
                })?;
                let ctx = RequestContext {
                    session: launch.number,
                    request_index: index,
                };
                let asked = complete(provider.as_ref(), ctx, &request, reporter, transcript);
                let result = match stops.race(asked).await {
                    Ok(r) => r?,
                    Err(stop) => {
                        run.stop = stop;
                        break;
                    }
                };
                let spent_before = run.cost_usd;
                let answer = answer(result, index, &mut run, transcript, stops.take_notice())?;
                let sent = Sent {
                    answer: &answer,
                    spent_before,
                    index,
                };
                if !send(&launch, &mut run, reporter, &mut write, sent).await? {
                    break;
                }
            }
            WorkerMessage::ModelCandidates {
                request,
                count,
                temperature,
            } => {
                if let Some(reason) = spent(&launch.budget, &run) {
                    run.over_budget = Some(reason);
                    run.stop = Stop::Budget;
                    break;
                }
                let left = launch.budget.steps.saturating_sub(run.requests);
                let k = candidates::allowed(count, launch.max_candidates, left);
                let batch = candidates::Batch::new(request, k, temperature, run.requests);
                run.requests += k;
                let asked = batch.complete(provider.as_ref(), launch.number, reporter);
                let served = match stops.race(asked).await {
                    Ok(served) => served,
                    Err(stop) => {
                        batch.record_unanswered(transcript)?;
                        run.stop = stop;
                        break;
                    }
                };
                let spent_before = run.cost_usd;
                let notice = stops.take_notice();
                let answer = record_candidates(&batch, served, &mut run, transcript, notice)?;
                let sent = Sent {
                    answer: &answer,
                    spent_before,
                    index: batch.first_index + k - 1,
                };
                if !send(&launch, &mut run, reporter, &mut write, sent).await? {
                    break;
                }
            }
            WorkerMessage::Event {
                event: SessionEvent::Sandbox { .. },
            } => {
                let what = "a sandbox report on the broker socket was ignored (the worker \
                            reports its confinement only over the report socket, closed before \
                            any tool runs)"
                    .to_string();
                if violation(&launch, &mut run, transcript, what)? {
                    break;
                }
            }
            WorkerMessage::Event { event } => {
                if let crate::broker::SessionEvent::LoopDetected { what, .. } = &event {
                    run.loops.push(what.clone());
                }
                reporter.event(launch.number, &event);
                transcript.append(&Entry::Event { event })?;
            }
            WorkerMessage::Finished { report } => run.report = Some(report),
        }
    }
    if run.stop != Stop::Exited {
        kill_group(pid);
    }
    let status = child.wait().await?;
    // Tools the worker left running go with its process group.
    kill_group(pid);
    if run.stop == Stop::Exited {
        use std::os::unix::process::ExitStatusExt;
        run.killed_by = status.signal();
    }
    run.exit = match status.code() {
        Some(code) => format!("exit code {code}"),
        None => "killed by a signal".into(),
    };
    if run.report.is_none() && run.stop == Stop::Exited {
        // The worker's stderr: as long as it wrote it, so only its tail.
        let tail = crate::fsutil::Bounds::tail(64 << 10, 10);
        let log = crate::fsutil::read_bounded(&launch.session_dir.join("worker.log"), tail)
            .ok()
            .flatten()
            .map(|r| String::from_utf8_lossy(&r.bytes).into_owned())
            .unwrap_or_default();
        run.exit = format!(
            "{}: {}",
            run.exit,
            crate::progress::tail(&log, 3).replace('\n', " ")
        );
    }
    if let Some(proxy) = proxy {
        run.network = proxy.finish();
        transcript.append(&Entry::Network {
            during: "session".into(),
            contacts: run.network.clone(),
        })?;
    }
    transcript.append(&Entry::WorkerFinished {
        report: run.report.clone(),
        exit: run.exit.clone(),
    })?;
    Ok(run)
}

/// One line from the worker, read with a cap on its length.
enum Line {
    Text(Vec<u8>),
    /// A line longer than the cap, skipped to its end; its length.
    TooLong(usize),
    Eof,
}

/// Read up to the next newline, keeping at most `max` bytes; a longer line is
/// read to its end and dropped. A last line without a newline counts.
async fn read_line(reader: &mut (impl AsyncBufRead + Unpin), max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut len = 0usize;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(match len {
                0 => Line::Eof,
                n if n > max => Line::TooLong(n),
                _ => Line::Text(line),
            });
        }
        let (part, used, end) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], i + 1, true),
            None => (chunk, chunk.len(), false),
        };
        len += part.len();
        if len <= max {
            line.extend_from_slice(part);
        } else {
            line = Vec::new();
        }
        reader.consume(used);
        if end {
            return Ok(match len > max {
                true => Line::TooLong(len),
                false => Line::Text(line),
            });
        }
    }
}

/// The provider's answer to `request`, with every retry shown and recorded
/// as it happens: a warning appears while the provider is being waited for,
/// not once it has answered.
async fn complete(
    provider: &dyn Provider,
    ctx: RequestContext,
    request: &crate::model::ChatRequest,
    reporter: &Reporter,
    transcript: &mut Transcript,
) -> anyhow::Result<Result<crate::model::ChatResponse, ModelError>> {
    reporter.model_asked(ctx.session, ctx.request_index);
    let (sink, mut notes) = RetrySink::channel();
    let answer = provider.complete(ctx, request, &sink);
    tokio::pin!(answer);
    let mut tell = |note: crate::model::RetryNote| {
        reporter.retry(
            ctx.session,
            ctx.request_index,
            note.attempt,
            &note.reason,
            note.wait_ms,
        );
        transcript.append(&Entry::Retry {
            index: ctx.request_index,
            attempt: note.attempt,
            reason: note.reason,
            wait_ms: note.wait_ms,
        })
    };
    loop {
        tokio::select! {
            biased;
            Some(note) = notes.recv() => tell(note)?,
            result = &mut answer => {
                // A note sent just before the answer is still told first.
                while let Ok(note) = notes.try_recv() {
                    tell(note)?;
                }
                return Ok(result);
            }
        }
    }
}

/// Record a protocol violation; true once there were too many to go on.
fn violation(
    launch: &Launch,
    run: &mut WorkerRun,
    transcript: &mut Transcript,
    what: String,
) -> anyhow::Result<bool> {
    let what = crate::sanitize::line(&what);
    tracing::warn!(
        "session {}: broker protocol violation: {what}",
        launch.number
    );
    transcript.append(&Entry::ProtocolViolation { what })?;
    run.violations += 1;
    if run.violations >= MAX_VIOLATIONS {
        run.stop = Stop::Protocol;
        return Ok(true);
    }
    Ok(false)
}

/// The budget already spent when the worker asks for another model request:
/// every request counts as a step (a subagent's and a compaction's too), and
/// tokens and cost are what the provider reported for the requests brokered.
pub fn spent(limits: &BudgetSection, run: &WorkerRun) -> Option<String> {
    let what = if run.requests >= limits.steps {
        format!("step limit of {} model requests", limits.steps)
    } else if let Some(max) = limits.input_tokens.filter(|m| run.usage.input_tokens >= *m) {
        format!(
            "input-token limit of {max} ({} used)",
            run.usage.input_tokens
        )
    } else if let Some(max) = limits
        .output_tokens
        .filter(|m| run.usage.output_tokens >= *m)
    {
        format!(
            "output-token limit of {max} ({} used)",
            run.usage.output_tokens
        )
    } else if let Some(max) = limits.cost_usd.filter(|m| run.cost_usd >= *m) {
        format!("cost limit of ${max:.2} (${:.4} spent)", run.cost_usd)
    } else {
        return None;
    };
    Some(format!(
        "budget: {what} reached, counted by the orchestrator; the worker asked for more and was stopped"
    ))
}

/// Record each candidate's request with its retries and answer, in order
/// (the transcript reads as if they had been asked one after another),
/// count what they spent, and make the worker's answer.
fn record_candidates(
    batch: &candidates::Batch,
    served: Vec<candidates::Served>,
    run: &mut WorkerRun,
    transcript: &mut Transcript,
    notice: Option<String>,
) -> anyhow::Result<OrchestratorMessage> {
    let mut answers = Vec::new();
    for ((index, request), served) in batch.numbered().zip(served) {
        transcript.append(&Entry::Request {
            index,
            request: request.clone(),
            model: None,
        })?;
        for note in served.retries {
            transcript.append(&Entry::Retry {
                index,
                attempt: note.attempt,
                reason: note.reason,
                wait_ms: note.wait_ms,
            })?;
        }
        answers.push(answer(served.result, index, run, transcript, None)?);
    }
    Ok(candidates::reply(answers, batch.len(), notice))
}

/// An answer to send the worker: what the session had spent before it,
/// and the index of its (last) request.
struct Sent<'a> {
    answer: &'a OrchestratorMessage,
    spent_before: f64,
    index: u32,
}

/// Show what an answer spent, count it against `--max-cost` and send it
/// to the worker. False: serving ends (the run's cost limit is reached, or
/// the worker is gone).
async fn send(
    launch: &Launch<'_>,
    run: &mut WorkerRun,
    reporter: &Reporter,
    write: &mut tokio::net::unix::OwnedWriteHalf,
    sent: Sent<'_>,
) -> anyhow::Result<bool> {
    reporter.model_usage(launch.number, run.usage, run.cost_usd);
    if let OrchestratorMessage::ModelResponse { response, .. } = sent.answer {
        reporter.tools_requested(launch.number, &response.tool_calls);
    }
    let spent = run.cost_usd - sent.spent_before;
    if launch.cost_limit.as_ref().is_some_and(|c| c.add(spent)) {
        run.stop = Stop::CostLimit;
        return Ok(false);
    }
    if sent.index >= 1 {
        super::failpoint::hit("agent-loop", launch.number).await;
    }
    let mut out = serde_json::to_vec(sent.answer)?;
    out.push(b'\n');
    Ok(write.write_all(&out).await.is_ok())
}

/// Turn the provider's result into the answer for the worker, recording it.
fn answer(
    result: Result<crate::model::ChatResponse, ModelError>,
    index: u32,
    run: &mut WorkerRun,
    transcript: &mut Transcript,
    notice: Option<String>,
) -> anyhow::Result<OrchestratorMessage> {
    match result {
        Ok(response) => {
            run.usage.add(response.usage);
            run.cost_usd += response.cost_usd;
            transcript.append(&Entry::Response {
                index,
                response: response.clone(),
            })?;
            Ok(OrchestratorMessage::ModelResponse { response, notice })
        }
        Err(e) => {
            transcript.append(&Entry::ModelError {
                index,
                message: e.to_string(),
                kind: e.kind(),
            })?;
            if e.is_fatal() {
                run.fatal = Some(e.to_string());
            }
            run.model_error = Some(e.clone());
            Ok(OrchestratorMessage::ModelError {
                fatal: e.is_fatal(),
                message: e.to_string(),
                kind: e.kind(),
            })
        }
    }
}

/// Start `longrun __worker` with the broker socket at fd 3, in its own
/// session, dying with the orchestrator.
fn spawn(
    launch: &Launch,
    theirs: &std::os::unix::net::UnixStream,
    report: &OwnedFd,
) -> anyhow::Result<tokio::process::Child> {
    let log = std::fs::File::create(launch.session_dir.join("worker.log"))?;
    let mut cmd = std::process::Command::new(crate::sandbox::own_exe());
    cmd.arg("__worker")
        .arg("--config")
        .arg(launch.config_path)
        .env_clear()
        .envs(launch.env.iter().cloned())
        .env(broker::FD_ENV, broker::WORKER_FD.to_string())
        .env(broker::REPORT_FD_ENV, broker::REPORT_FD.to_string())
        .envs(std::env::var("LONGRUN_FAILPOINT").map(|v| ("LONGRUN_FAILPOINT", v)))
        .current_dir(launch.session_dir.join("work"))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let places = [
        (theirs.as_raw_fd(), broker::WORKER_FD),
        (report.as_raw_fd(), broker::REPORT_FD),
    ];
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Copies above the targets first, so that placing one never
            // overwrites the source of the other; exec closes the copies.
            let mut copies = [0; 2];
            for (copy, (from, _)) in copies.iter_mut().zip(places) {
                *copy = libc::fcntl(from, libc::F_DUPFD_CLOEXEC, 64);
                if *copy < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            for (copy, (_, to)) in copies.into_iter().zip(places) {
                if libc::dup2(copy, to) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            libc::setsid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // The orchestrator may have died between fork and prctl.
            if libc::getppid() == 1 {
                return Err(std::io::Error::other("the orchestrator went away"));
            }
            Ok(())
        });
    }
    // After the broker's descriptor is in place.
    if let Some(proxy) = &launch.proxy {
        proxy.inherit(&mut cmd);
    }
    tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .context("failed to start the session worker")
}

fn kill_group(pid: Option<i32>) {
    if let Some(pid) = pid {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// The conditions that end a session early, raced against whatever it waits for.
struct Stops<'a> {
    deadline: Pin<Box<Sleep>>,
    grace: Option<Pin<Box<Sleep>>>,
    grace_len: Duration,
    interrupt: &'a Interrupt,
    notice: Option<String>,
}

impl<'a> Stops<'a> {
    fn new(wall_time: Duration, grace_len: Duration, interrupt: &'a Interrupt) -> Stops<'a> {
        Stops {
            deadline: Box::pin(tokio::time::sleep(wall_time)),
            grace: None,
            grace_len,
            interrupt,
            notice: None,
        }
    }

    /// The harness message to hand the model with its next answer, once.
    fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    /// Wait for `fut`, unless a stop condition comes first. A first interrupt
    /// only starts the grace period and queues the "stop now" notice.
    async fn race<T>(&mut self, fut: impl Future<Output = T>) -> Result<T, Stop> {
        tokio::pin!(fut);
        loop {
            let winding_down = self.grace.is_some();
            let grace = async {
                match self.grace.as_mut() {
                    Some(g) => g.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                value = &mut fut => return Ok(value),
                _ = &mut self.deadline => return Err(Stop::WallTime),
                _ = self.interrupt.wait_for(2) => return Err(Stop::Interrupted),
                _ = grace, if winding_down => return Err(Stop::GraceOver),
                _ = self.interrupt.wait_for(1), if !winding_down => {
                    self.grace = Some(Box::pin(tokio::time::sleep(self.grace_len)));
                    self.notice = Some(format!(
                        "[harness] Stop now: the run was interrupted. Commit what works within {} seconds; the session ends then.",
                        self.grace_len.as_secs()
                    ));
                }
            }
        }
    }
}

/// Beside `worker.pid` in the session directory: the worker's start time.
pub const START_FILE: &str = "worker.start";

/// When process `pid` started, in clock ticks after boot (field 22 of /proc/PID/stat).
pub fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields resume after its last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}
