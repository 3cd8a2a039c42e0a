//! One session's lifecycle, from the orchestrator's side: prepare its
//! directory and clone, start the confined worker, broker its model calls,
//! verify its work and record the verdict on main.

use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use git2::Oid;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::record::{self, Record};
use super::verify::{self, CheckRun};
use super::{Project, Reporter, Verdict};
use crate::broker::{self, OrchestratorMessage, WorkerEnd, WorkerMessage, WorkerReport};
use crate::features::{Feature, FeatureList};
use crate::model::{ModelError, Provider, RequestContext, Usage};
use crate::repo;
use crate::sandbox::SandboxSpec;
use crate::session::{FeatureBrief, Role, WorkerConfig};
use crate::state::{self, State};
use crate::transcript::{Entry, Transcript};

/// What to run.
pub struct SessionPlan {
    pub number: u32,
    pub role: Role,
    pub feature: Option<Feature>,
}

/// How it ended.
#[derive(Debug, Clone)]
#[allow(dead_code)] // read by the run limits and progress views
pub struct SessionOutcome {
    pub number: u32,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    pub usage: Usage,
    pub cost_usd: f64,
    /// Set when the model failed in a way no later session can survive.
    pub fatal: Option<String>,
    pub commit: Oid,
}

pub fn session_dir(project: &Project, number: u32) -> PathBuf {
    state::sessions_dir(&project.dir).join(format!("{number:04}"))
}

/// The confinement of a session or a verification run in `workspace`.
pub fn sandbox_spec(
    project: &Project,
    workspace: &Path,
    tmp: &Path,
    home: &Path,
    keep_fds: Vec<i32>,
) -> SandboxSpec {
    let mut read_only = vec![project.dir.clone()];
    read_only.extend(project.config.sandbox.read_only.iter().cloned());
    SandboxSpec {
        profile: project.config.sandbox.profile.clone(),
        workspace: workspace.to_path_buf(),
        tmp: tmp.to_path_buf(),
        home: home.to_path_buf(),
        read_only,
        writable: project.config.sandbox.writable.clone(),
        keep_fds,
    }
}

/// Hand out the next session number; it is saved before anything else happens,
/// so it is never handed out again.
pub fn next_number(project: &Project) -> anyhow::Result<u32> {
    let log = repo::first_parent_log(&project.repo)?;
    let mut st = State::load(&project.dir, &log);
    st.last_session += 1;
    st.save(&project.dir)?;
    Ok(st.last_session)
}

/// Run one session to its recorded verdict.
pub async fn run_session(
    project: &Project,
    provider: &Arc<dyn Provider>,
    plan: SessionPlan,
    reporter: &Reporter,
    interrupt: &super::run::Interrupt,
) -> anyhow::Result<SessionOutcome> {
    let started = Instant::now();
    let dir = session_dir(project, plan.number);
    let (work, tmp, home) = (dir.join("work"), dir.join("tmp"), dir.join("home"));
    for d in [&tmp, &home] {
        std::fs::create_dir_all(d).with_context(|| format!("failed to create {}", d.display()))?;
    }
    let base = repo::main_head(&project.repo)?.context("main has no commits")?;
    repo::clone_main(&project.dir, &work)?;
    let mut transcript = Transcript::open(&dir.join("transcript.jsonl"))?;
    let model_name = provider.describe();
    let feature_id = plan.feature.as_ref().map(|f| f.id.clone());
    transcript.append(&Entry::SessionStarted {
        session: plan.number,
        role: plan.role.as_str().into(),
        feature: feature_id.clone(),
        model: model_name.clone(),
        base: base.to_string(),
    })?;
    reporter.session_started(plan.number, plan.role.as_str(), feature_id.as_deref());

    let spec = sandbox_spec(project, &work, &tmp, &home, vec![broker::WORKER_FD]);
    let config = worker_config(project, &plan, spec.clone())?;
    let config_path = dir.join("worker.json");
    crate::fsutil::write_atomic(&config_path, &serde_json::to_vec_pretty(&config)?)?;

    let run = drive_worker(
        project,
        provider,
        &plan,
        &dir,
        &config_path,
        &mut transcript,
        reporter,
        interrupt,
    )
    .await?;

    // Verification, from outside the session.
    let collected = verify::collect_work(project, &work, plan.number)?;
    let mut reasons = Vec::new();
    if run.stop != Stop::Interrupted {
        reasons =
            verify::rule_problems(project, plan.role, plan.feature.as_ref(), base, &collected)?;
        if reasons.is_empty() {
            let place = verify::prepare_checkout(project, &dir, collected.head)?;
            let checks: Vec<CheckRun> =
                verify::run_checks(project, &place, plan.role, plan.feature.as_ref()).await?;
            for c in &checks {
                reporter.check(&c.name, c.passed);
                transcript.append(&Entry::Check {
                    name: c.name.clone(),
                    command: c.command.clone(),
                    passed: c.passed,
                    output_tail: c.output_tail.clone(),
                })?;
                if !c.passed {
                    reasons.push(format!(
                        "{} failed: `{}`{}",
                        c.name,
                        c.command,
                        last_line(&c.output_tail)
                    ));
                }
            }
        }
    }
    let verdict = decide(&run, &mut reasons);
    let sandbox_layers = vec![format!("profile {}", project.config.sandbox.profile)];
    let rec = Record {
        number: plan.number,
        role: plan.role.as_str(),
        feature: feature_id.as_deref(),
        verdict,
        reasons: &reasons,
        model: &model_name,
        usage: run.usage,
        cost_usd: run.cost_usd,
        steps: run.report.as_ref().map(|r| r.steps).unwrap_or(run.requests),
        duration_s: started.elapsed().as_secs(),
        sandbox: &sandbox_layers,
    };
    let (verdict, reasons, commit) = record::record(project, &rec, collected.head)?;
    transcript.append(&Entry::Verdict {
        verdict: verdict.to_string(),
        reasons: reasons.clone(),
        commit: commit.to_string(),
    })?;
    reporter.verdict(plan.number, verdict.as_str(), &reasons);
    let _ = std::fs::remove_dir_all(dir.join("verify"));
    Ok(SessionOutcome {
        number: plan.number,
        verdict,
        reasons,
        usage: run.usage,
        cost_usd: run.cost_usd,
        fatal: run.fatal,
        commit,
    })
}

fn last_line(output: &str) -> String {
    match output.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!(": {}", l.trim()),
        None => String::new(),
    }
}

/// The verdict from how the worker ended and what verification found.
fn decide(run: &WorkerRun, reasons: &mut Vec<String>) -> Verdict {
    match run.stop {
        Stop::Interrupted => {
            reasons.insert(
                0,
                "interrupted: the run was stopped while this session ran".into(),
            );
            return Verdict::Interrupted;
        }
        Stop::WallTime if reasons.is_empty() => return Verdict::Accepted,
        Stop::WallTime => {
            reasons.insert(
                0,
                format!(
                    "budget: wall time of {} s reached; the worker was killed",
                    run.wall_time_secs
                ),
            );
            return Verdict::Incomplete;
        }
        Stop::Exited => {}
    }
    if reasons.is_empty() {
        return Verdict::Accepted;
    }
    match &run.report {
        None => {
            reasons.insert(
                0,
                format!("the worker exited ({}) without reporting", run.exit),
            );
            Verdict::Failed
        }
        Some(WorkerReport {
            ended: WorkerEnd::Failed,
            reason,
            ..
        }) => {
            reasons.insert(
                0,
                reason
                    .clone()
                    .unwrap_or_else(|| "the session failed".into()),
            );
            Verdict::Failed
        }
        Some(WorkerReport {
            ended: WorkerEnd::Incomplete,
            reason,
            ..
        }) => {
            reasons.insert(
                0,
                reason
                    .clone()
                    .unwrap_or_else(|| "the session did not finish".into()),
            );
            Verdict::Incomplete
        }
        Some(WorkerReport {
            ended: WorkerEnd::Stopped,
            ..
        }) => Verdict::Interrupted,
        Some(WorkerReport {
            ended: WorkerEnd::Completed,
            ..
        }) => Verdict::Rejected,
    }
}

fn worker_config(
    project: &Project,
    plan: &SessionPlan,
    sandbox: SandboxSpec,
) -> anyhow::Result<WorkerConfig> {
    let features = project.features()?;
    let (passing, total) = features
        .as_ref()
        .map(|l: &FeatureList| (l.passing(), l.features.len()))
        .unwrap_or((0, 0));
    let feature = plan.feature.as_ref().map(|f| FeatureBrief {
        id: f.id.clone(),
        description: f.description.clone(),
        json: f.pretty_json(),
        check: f.check.clone(),
    });
    Ok(WorkerConfig {
        session: plan.number,
        role: plan.role,
        feature,
        sandbox,
        max_steps: project.config.budget.steps,
        wall_time_secs: project.config.budget.wall_time_secs,
        checks: project.config.checks.commands.clone(),
        passing,
        total,
        tool_output_cap: project.config.tools.output_cap,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Exited,
    WallTime,
    Interrupted,
}

struct WorkerRun {
    report: Option<WorkerReport>,
    stop: Stop,
    exit: String,
    usage: Usage,
    cost_usd: f64,
    requests: u32,
    fatal: Option<String>,
    wall_time_secs: u64,
}

/// Start the worker and serve its model requests until it exits.
#[allow(clippy::too_many_arguments)]
async fn drive_worker(
    project: &Project,
    provider: &Arc<dyn Provider>,
    plan: &SessionPlan,
    dir: &Path,
    config_path: &Path,
    transcript: &mut Transcript,
    reporter: &Reporter,
    interrupt: &super::run::Interrupt,
) -> anyhow::Result<WorkerRun> {
    let (ours, theirs) =
        std::os::unix::net::UnixStream::pair().context("failed to make the broker socket")?;
    let spec_env = crate::sandbox::session_env(&sandbox_spec(
        project,
        &dir.join("work"),
        &dir.join("tmp"),
        &dir.join("home"),
        Vec::new(),
    ));
    let log = std::fs::File::create(dir.join("worker.log"))?;
    let mut cmd = std::process::Command::new(std::env::current_exe()?);
    cmd.arg("__worker")
        .arg("--config")
        .arg(config_path)
        .env_clear()
        .envs(spec_env)
        .env(broker::FD_ENV, broker::WORKER_FD.to_string())
        .current_dir(dir.join("work"))
        .stdin(std::process::Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    let fd = theirs.as_raw_fd();
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if fd == broker::WORKER_FD {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC);
            } else if libc::dup2(fd, broker::WORKER_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::setsid();
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()
        .context("failed to start the session worker")?;
    drop(theirs);
    let pid = child.id().map(|p| p as i32);
    ours.set_nonblocking(true)?;
    let stream = tokio::net::UnixStream::from_std(ours)?;
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read).lines();

    let wall_time_secs = project.config.budget.wall_time_secs;
    let deadline =
        tokio::time::sleep(Duration::from_secs(wall_time_secs) + Duration::from_secs(30));
    tokio::pin!(deadline);
    let mut run = WorkerRun {
        report: None,
        stop: Stop::Exited,
        exit: String::new(),
        usage: Usage::default(),
        cost_usd: 0.0,
        requests: 0,
        fatal: None,
        wall_time_secs,
    };
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            _ = &mut deadline => { run.stop = Stop::WallTime; break; }
            _ = interrupt.wait() => { run.stop = Stop::Interrupted; break; }
        };
        let Ok(Some(line)) = line else { break };
        let message: WorkerMessage = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(
                    "session {}: malformed message from the worker: {e}",
                    plan.number
                );
                continue;
            }
        };
        match message {
            WorkerMessage::ModelRequest { request } => {
                let index = run.requests;
                run.requests += 1;
                transcript.append(&Entry::Request {
                    index,
                    request: request.clone(),
                })?;
                let ctx = RequestContext {
                    session: plan.number,
                    request_index: index,
                };
                let result = tokio::select! {
                    r = provider.complete(ctx, &request) => r,
                    _ = &mut deadline => { run.stop = Stop::WallTime; break; }
                    _ = interrupt.wait() => { run.stop = Stop::Interrupted; break; }
                };
                let answer = match result {
                    Ok(response) => {
                        run.usage.add(response.usage);
                        run.cost_usd += response.cost_usd;
                        transcript.append(&Entry::Response {
                            index,
                            response: response.clone(),
                        })?;
                        OrchestratorMessage::ModelResponse {
                            response,
                            notice: None,
                        }
                    }
                    Err(e) => {
                        transcript.append(&Entry::ModelError {
                            index,
                            message: e.to_string(),
                        })?;
                        if e.is_fatal() {
                            run.fatal = Some(e.to_string());
                        }
                        model_error(e)
                    }
                };
                let mut out = serde_json::to_vec(&answer)?;
                out.push(b'\n');
                if write.write_all(&out).await.is_err() {
                    break;
                }
            }
            WorkerMessage::Event { event } => {
                reporter.event(plan.number, &event);
                transcript.append(&Entry::Event { event })?;
            }
            WorkerMessage::Finished { report } => run.report = Some(report),
        }
    }
    if run.stop != Stop::Exited {
        if let Some(pid) = pid {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
    let status = child.wait().await?;
    if let Some(pid) = pid {
        // Tools the worker left running go with its process group.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    run.exit = match status.code() {
        Some(code) => format!("exit code {code}"),
        None => "killed by a signal".into(),
    };
    if run.report.is_none() && run.stop == Stop::Exited {
        let log = std::fs::read_to_string(dir.join("worker.log")).unwrap_or_default();
        run.exit = format!(
            "{}: {}",
            run.exit,
            crate::progress::tail(&log, 3).replace('\n', " ")
        );
    }
    transcript.append(&Entry::WorkerFinished {
        report: run.report.clone(),
        exit: run.exit.clone(),
    })?;
    Ok(run)
}

fn model_error(e: ModelError) -> OrchestratorMessage {
    OrchestratorMessage::ModelError {
        fatal: e.is_fatal(),
        message: e.to_string(),
    }
}
