//! One session's lifecycle, from the orchestrator's side: prepare its
//! directory and workspace, start the confined worker, broker its model
//! calls, import and verify its work, record the verdict on main, and
//! remove what is no longer needed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use super::serve::{self as serve, CostLimit, Launch, Stop, WorkerRun};
use crate::broker::{self, WorkerEnd, WorkerReport};
use crate::features::Feature;
use crate::model::family::{profile, Profile};
use crate::model::Provider;
use crate::protocol::{EarlierWork, FeatureBrief, WorkerConfig};
use crate::sandbox::SandboxSpec;
use crate::schema::Role;
use crate::trusted::record::repo;
use crate::trusted::record::state::{self, State};
use crate::trusted::record::transcript::{Entry, Transcript};
use crate::trusted::record::verdict::{self, Record};
use crate::trusted::verify::verification::{self, CheckRun};
use crate::trusted::{session::import, verify::workspace};
use crate::trusted::{Project, Reporter, Verdict};

/// Held while a session is verified and recorded, so merges into main go one at a time.
pub type MergeQueue = tokio::sync::Mutex<()>;

/// What to run.
pub struct SessionPlan {
    pub number: u32,
    pub role: Role,
    pub feature: Option<Feature>,
    /// The run's `--max-cost`; the session is stopped once the run reaches it.
    pub cost_limit: Option<Arc<CostLimit>>,
    /// The model of its `task` subagents (None: the session's own).
    pub subagent_model: Option<Arc<dyn Provider>>,
    /// The reviewer of verified work (`[review]` on; workers only).
    pub reviewer: Option<Arc<dyn Provider>>,
}

/// How it ended.
#[derive(Debug, Clone)]
pub struct SessionOutcome {
    pub number: u32,
    pub feature: Option<String>,
    pub verdict: Verdict,
    pub reasons: Vec<String>,
    /// Set when the model failed in a way no later session can survive.
    pub fatal: Option<String>,
    /// Who failed, when it was not accepted.
    pub fault: Option<crate::schema::Fault>,
    /// Set when the provider stayed unavailable: the run pauses.
    pub pause: Option<super::fault::Pause>,
    /// Not accepted, its work kept at its ref: the features the worker said
    /// that work makes pass ([`broker::WorkerReport::passes_others`]), as
    /// said, at most [`MAX_HINTS`]. Untrusted: only which feature goes next.
    pub passes_others: Vec<String>,
}

/// Features a session's report may name for the next sessions, at most.
pub const MAX_HINTS: usize = 16;

pub fn session_dir(project: &Project, number: u32) -> PathBuf {
    state::sessions_dir(&project.dir).join(format!("{number:04}"))
}

/// Hand out the next session number; it is saved before anything else happens,
/// so it is never handed out again.
///
/// The session directories are looked through once per process (only one
/// process runs a project at a time): after that, the last number this
/// process handed out is the highest.
pub fn next_number(project: &Project) -> anyhow::Result<u32> {
    let recorded = project.history()?.last_session;
    let mut handed = project
        .numbered
        .lock()
        .map_err(|_| anyhow::anyhow!("session numbering is poisoned"))?;
    let last = match *handed {
        Some(n) => n.max(recorded),
        None => State::load(&project.dir, recorded).last_session,
    };
    let st = State {
        last_session: last + 1,
    };
    st.save(&project.dir)?;
    *handed = Some(st.last_session);
    Ok(st.last_session)
}

/// Run one session to its recorded verdict.
pub async fn run_session(
    project: &Project,
    provider: &Arc<dyn Provider>,
    plan: SessionPlan,
    reporter: &Reporter,
    interrupt: &crate::trusted::run::continue_run::Interrupt,
    merges: &MergeQueue,
) -> anyhow::Result<SessionOutcome> {
    let started = Instant::now();
    let mut phases = super::timing::Phases::start(plan.number);
    let dir = session_dir(project, plan.number);
    let (work, tmp, home) = (dir.join("work"), dir.join("tmp"), dir.join("home"));
    let sessions = state::sessions_dir(&project.dir);
    std::fs::create_dir_all(&sessions)
        .with_context(|| format!("failed to create {}", sessions.display()))?;
    crate::fsutil::spread_subdirectories(&sessions);
    for d in [&tmp, &home] {
        std::fs::create_dir_all(d).with_context(|| format!("failed to create {}", d.display()))?;
    }
    let base = repo::main_head(&project.repo)?.context("main has no commits")?;
    super::failpoint::hit("before-clone", plan.number).await;
    let lower = make_workspace(project, &dir, base)?;
    let mut transcript = Transcript::open(&dir.join("transcript.jsonl"))?;
    let model_name =
        crate::trusted::contract::models::session_model(provider, plan.subagent_model.as_ref());
    let feature_id = plan.feature.as_ref().map(|f| f.id.clone());
    transcript.append(&Entry::SessionStarted {
        session: plan.number,
        role: plan.role.as_str().into(),
        feature: feature_id.clone(),
        model: model_name.clone(),
        base: base.to_string(),
    })?;
    reporter.session_started(plan.number, plan.role.as_str(), feature_id.as_deref());

    let keep = vec![broker::WORKER_FD, broker::REPORT_FD];
    let mut spec =
        crate::trusted::verify::workspace::sandbox_spec(project, &work, &tmp, &home, keep);
    spec.layers = lower
        .as_ref()
        .map(|l| l.layers(&work, &dir.join(verification::OVERLAY_WORK)));
    let config = worker_config(project, &plan, spec.clone(), &provider.describe())?;
    let config_path = dir.join("worker.json");
    crate::fsutil::write_atomic(&config_path, &serde_json::to_vec_pretty(&config)?)?;
    let check_time = Duration::from_secs(project.config.checks.timeout_secs);
    let init_sh = repo::file_mode_at(&project.repo, base, "init.sh")
        .ok()
        .flatten()
        .is_some_and(|m| m == 0o100644 || m == 0o100755);
    super::dependencies::install(&spec, init_sh, &dir, check_time, &mut transcript).await?;

    let launch = Launch {
        number: plan.number,
        session_dir: &dir,
        config_path: &config_path,
        env: crate::sandbox::session_env(&spec),
        wall_time: Duration::from_secs(project.config.budget.wall_time_secs),
        grace: Duration::from_secs(project.config.run.grace_secs),
        cost_limit: plan.cost_limit.clone(),
        budget: project.config.budget.clone(),
        profile: &project.profile.name,
        proxy: crate::sandbox::proxy::Channel::for_spec(&spec)?,
        subagent_model: plan.subagent_model.clone(),
        max_candidates: config.harness.max_candidates(),
    };
    phases.mark("prepare");
    let run = serve::serve(launch, provider, &mut transcript, reporter, interrupt).await?;
    phases.mark("worker");

    // Verification, from outside the session. Whatever the session's output
    // breaks on the way is its verdict, `failed`, and the run goes on.
    super::failpoint::hit("verification", plan.number).await;
    let mut failures: Vec<String> = over_size(project, &work).into_iter().collect();

    let target = import::Target::of(project);
    let exported = import::import_work_async(target, dir.clone(), spec.clone(), base, plan.number);
    let imported = match exported.await {
        Ok(work) => Some(work),
        Err(e) => {
            failures.push(format!("the session's work could not be kept: {e:#}"));
            None
        }
    };
    // The export was the last sandbox on the workspace.
    drop(lower);
    let mut reasons = Vec::new();
    let mut review = None;
    let mut given_failing = Vec::new();
    phases.mark("import");
    // Verified merges go one at a time: checks run on what main would become.
    let _turn = merges.lock().await;
    phases.mark("queue");
    let verifiable =
        !matches!(run.stop, Stop::Interrupted | Stop::Unconfined) && failures.is_empty();
    if let Some(work) = imported.as_ref().filter(|_| verifiable) {
        let checked = Checked {
            project,
            plan: &plan,
            dir: &dir,
            base,
            given_failing: Default::default(),
        };
        reporter.phase(plan.number, "verifying");
        match checked
            .verify(work, &mut transcript, reporter, &mut phases)
            .await
        {
            Ok((found, answer)) => {
                (reasons, review) = (found, answer);
                given_failing = checked.given_failing.take();
            }
            Err(e) => failures.push(format!("verification could not run on its work: {e:#}")),
        }
    }
    phases.mark("verify");
    let mut verdict = decide(&run, project.config.budget.wall_time_secs, &mut reasons);
    // What the session's output broke is the work's doing.
    let output_failed = !failures.is_empty() && verdict != Verdict::Interrupted;
    if !failures.is_empty() {
        if verdict == Verdict::Interrupted {
            reasons.extend(failures);
        } else {
            verdict = Verdict::Failed;
            reasons.splice(0..0, failures);
        }
    }
    let fault = if output_failed {
        Some(crate::schema::Fault::Work)
    } else {
        super::fault::of(verdict, &run)
    };
    let sandbox_layers = match &run.sandbox {
        Some(enforcement) => enforcement.trailer_lines(),
        None => vec![format!(
            "profile {}: the worker did not report its confinement",
            project.profile.name
        )],
    };
    let rec = Record {
        number: plan.number,
        role: plan.role.as_str(),
        feature: feature_id.as_deref(),
        verdict,
        reasons: &reasons,
        model: &model_name,
        usage: run.usage,
        cost_usd: run.cost_usd,
        // The orchestrator's count, never the worker's report.
        steps: run.requests,
        duration_s: started.elapsed().as_secs(),
        sandbox: &sandbox_layers,
        work_kept: imported.is_some(),
        loops: &run.loops,
        // Every confined run's hosts: before the worker, the worker's, verification's.
        network: &crate::sandbox::proxy::trailer_lines(
            &crate::trusted::record::transcript::contacts(&dir.join("transcript.jsonl")),
        ),
        review: review.as_deref(),
        fault,
    };
    let mut head = imported.as_ref().map(|w| w.head).unwrap_or(base);
    if verdict == Verdict::Accepted && plan.role == Role::Initializer {
        // Features given as passing whose checks fail start over as failing.
        if let Some(reset) =
            crate::trusted::verify::acceptance::reset_given(project, head, &given_failing)?
        {
            head = reset;
            reporter.line(&format!(
                "given as passing but their checks fail, so set back to failing: {}",
                given_failing.join(", ")
            ));
        }
        // The acceptance tests are fixed now: `[run] frozen` in the accepted commit.
        if let Some((frozen, paths)) =
            crate::trusted::verify::acceptance::freeze(project, base, head)?
        {
            head = frozen;
            reporter.line(&format!("frozen acceptance tests: {}", paths.join(", ")));
        }
    }
    reporter.phase(plan.number, "recording");
    let (verdict, reasons, commit) = verdict::record(&project.repo, &rec, head)?;
    super::failpoint::hit("after-record", plan.number).await;
    transcript.append(&Entry::Verdict {
        verdict: verdict.to_string(),
        reasons: reasons.clone(),
        commit: commit.to_string(),
    })?;
    reporter.verdict(plan.number, verdict.as_str(), &reasons, &commit.to_string());
    phases.mark("record");
    remove_session_files(project, plan.number);
    phases.finish("cleanup");
    Ok(SessionOutcome {
        number: plan.number,
        feature: feature_id.clone(),
        verdict,
        reasons,
        fault: if verdict == Verdict::Accepted {
            None
        } else {
            fault
        },
        pause: super::fault::pause(&run),
        passes_others: match (verdict, &run.report, imported.is_some()) {
            (Verdict::Accepted, _, _) | (_, None, _) | (_, _, false) => Vec::new(),
            (_, Some(report), true) => report
                .passes_others
                .iter()
                .take(MAX_HINTS)
                .cloned()
                .collect(),
        },
        fatal: run.fatal,
    })
}

/// Make the session's workspace `work` in `dir` at `base`: the upper layer
/// of an overlay on the cached checkout of `base` (held until dropped,
/// with overlayfs's scratch directory beside it), or, where no overlay can
/// be mounted, the tree written whole.
pub fn make_workspace<'p>(
    project: &'p Project,
    dir: &Path,
    base: git2::Oid,
) -> anyhow::Result<Option<crate::trusted::verify::checkout::Lower<'p>>> {
    let (git, work, ovl) = (
        project.repo.path(),
        dir.join("work"),
        dir.join(verification::OVERLAY_WORK),
    );
    let lower = crate::trusted::verify::checkout::lower(project, base);
    crate::fsutil::remove_tree(&ovl)?;
    match lower {
        Some(_) => {
            workspace::make_upper(git, &work, base, workspace::Head::Main, base)?;
            std::fs::create_dir(&ovl)
                .with_context(|| format!("failed to create {}", ovl.display()))?;
        }
        None => workspace::make(git, &work, base, workspace::Head::Main)?,
    }
    Ok(lower)
}

/// The reason a session fails when its workspace is over the size cap.
fn over_size(project: &Project, work: &Path) -> Option<String> {
    let cap_mb = project.config.sandbox.max_workspace_mb;
    let cap = cap_mb.saturating_mul(1 << 20);
    match crate::fsutil::tree_size(work, cap) {
        Ok(size) if size > cap => Some(format!(
            "its workspace holds over {cap_mb} MiB, the cap ([sandbox] max_workspace_mb)"
        )),
        Ok(_) => None,
        Err(e) => Some(format!("its workspace could not be measured: {e:#}")),
    }
}

/// After the verdict: the session's workspace, its checkout, tmp and home
/// go (its work is at its ref); the transcript, worker.json and worker.log
/// stay. `[run] keep_sessions = N` keeps the last N sessions' files whole.
fn remove_session_files(project: &Project, number: u32) {
    let keep = project.config.run.keep_sessions;
    let Ok(mut cleanup) = project.cleaned.lock() else {
        return;
    };
    // Once per process, every recorded session's directory (a run stopped
    // before it cleaned up); after that only the sessions recorded since,
    // so that a long run does not list a thousand directories a session.
    if !cleanup.scanned {
        cleanup.scanned = true;
        if let Ok(history) = project.history() {
            let recorded: std::collections::HashSet<u32> =
                history.sessions.iter().map(|s| s.session).collect();
            cleanup.newest = recorded.iter().copied().max().unwrap_or(0);
            let dirs = state::session_dir_numbers(&project.dir);
            cleanup
                .pending
                .extend(dirs.into_iter().filter(|n| recorded.contains(n)));
        }
    }
    cleanup.pending.insert(number);
    cleanup.newest = cleanup.newest.max(number);
    let newest = cleanup.newest;
    let due: Vec<u32> = cleanup
        .pending
        .iter()
        .copied()
        .take_while(|n| newest.saturating_sub(*n) >= keep)
        .collect();
    for n in due {
        cleanup.pending.remove(&n);
        remove_work_files(&session_dir(project, n));
    }
}

/// Remove what a session's files beside its record take: see [`remove_session_files`].
pub fn remove_work_files(dir: &Path) {
    let names = [
        "work",
        verification::OVERLAY_WORK,
        "work.left",
        "tmp",
        "home",
        "verify",
    ];
    for name in names.into_iter().chain(["export.log"]) {
        if let Err(e) = crate::fsutil::remove_tree(&dir.join(name)) {
            tracing::warn!("{e:#}");
        }
    }
}

/// The one check entry for the regressions that passed.
fn regressions_passed(count: usize) -> String {
    match count {
        1 => "regression checks: 1 passing feature still passes".to_string(),
        n => format!("regression checks: {n} passing features still pass"),
    }
}

/// Verification of one session's imported work.
struct Checked<'a> {
    project: &'a Project,
    plan: &'a SessionPlan,
    dir: &'a Path,
    base: git2::Oid,
    /// At init, the features given as passing whose checks did not pass.
    given_failing: std::cell::RefCell<Vec<String>>,
}

impl Checked<'_> {
    /// The rules on the commits, the merge with main as it is now, the
    /// candidate's own rules, then the checks on the candidate, then the
    /// reviewer when there is one. The reasons it is not accepted, and the
    /// reviewer's answer; an error is the session's failure.
    async fn verify(
        &self,
        work: &import::Imported,
        transcript: &mut Transcript,
        reporter: &Reporter,
        phases: &mut super::timing::Phases,
    ) -> anyhow::Result<(Vec<String>, Option<String>)> {
        self.given_failing.borrow_mut().clear();
        let (project, plan) = (self.project, self.plan);
        let collected = verification::Work {
            head: work.head,
            wip: work.wip,
        };
        let mut reasons = verification::rule_problems(
            project,
            plan.role,
            plan.feature.as_ref(),
            self.base,
            &collected,
        )?;
        reasons.extend(work.dropped_note());
        repo::ensure_plain_merges(&project.repo)?;
        let candidate = match repo::merge_candidate(&project.repo, work.head)? {
            Ok(oid) => oid,
            Err(paths) => {
                reasons.push(format!(
                    "merge conflict with main (which moved during the session) in {paths}"
                ));
                return Ok((reasons, None));
            }
        };
        if !reasons.is_empty() {
            return Ok((reasons, None));
        }
        let main_now = repo::main_head(&project.repo)?.unwrap_or(self.base);
        reasons.extend(self.candidate_problems(main_now, work.head, candidate)?);
        if !reasons.is_empty() {
            return Ok((reasons, None));
        }
        phases.mark("rules");
        let place = verification::prepare_checkout(project, self.dir, candidate)?;
        phases.mark("checkout");
        let listed = crate::features::list_at(&project.repo, main_now)
            .ok()
            .flatten()
            .and_then(Result::ok);
        let regressions = listed.as_deref().map_or_else(Vec::new, |list| {
            verification::regressions_due(project, plan.number, list, plan.feature.as_ref())
        });
        let checks: Vec<CheckRun> = verification::run_checks(
            project,
            &place,
            plan.role,
            plan.feature.as_ref(),
            &regressions,
        )
        .await?;
        phases.mark("checks");
        let mut entries = Vec::new();
        // Regressions that passed are one line each in the transcript and
        // the run's events: a project of a thousand passing features does
        // not write a thousand a session. Each one that failed is named.
        let (passed, shown): (Vec<&CheckRun>, Vec<&CheckRun>) = checks.iter().partition(|c| {
            c.kind == verification::StepKind::Regression && c.passed && c.network.is_empty()
        });
        if let Some(first) = passed.first() {
            let name = regressions_passed(passed.len());
            reporter.check(plan.number, &name, true);
            let command = if passed.iter().all(|c| c.command == first.command) {
                first.command.clone()
            } else {
                "each feature's check".to_string()
            };
            entries.push(Entry::Check {
                name,
                command,
                passed: true,
                output_tail: String::new(),
            });
        }
        for c in shown {
            reporter.check(plan.number, &c.name, c.as_expected());
            entries.push(Entry::Check {
                name: c.name.clone(),
                command: c.command.clone(),
                passed: c.passed,
                output_tail: c.output_tail.clone(),
            });
            if !c.network.is_empty() {
                entries.push(Entry::Network {
                    during: format!("verification: {}", c.name),
                    contacts: c.network.clone(),
                });
            }
        }
        // One write and one sync for all of them.
        transcript.append_all(&entries)?;
        reasons.extend(verification::check_problems(&checks));
        *self.given_failing.borrow_mut() = verification::given_passing_that_fail(&checks);
        let (Some(reviewer), Some(feature), true) =
            (&plan.reviewer, &plan.feature, reasons.is_empty())
        else {
            return Ok((reasons, None));
        };
        let reviewed = crate::trusted::verify::review::Work {
            number: plan.number,
            feature,
            // What this session adds to main as it is now.
            base: main_now,
            candidate,
            checks: &checks,
        };
        let answer =
            crate::trusted::verify::review::review(project, reviewer, reviewed, transcript).await?;
        if project.config.review.mode == crate::config::ReviewMode::Required {
            reasons.extend(answer.rejection());
        }
        Ok((reasons, Some(answer.trailer())))
    }

    /// What main would become must itself meet the rules: when the merge
    /// with a main that moved changed the tree (attributes ignored), its
    /// features.json is checked again against main as it is now; and a
    /// worker must leave an executable init.sh, which every session runs first.
    fn candidate_problems(
        &self,
        main_now: git2::Oid,
        head: git2::Oid,
        candidate: git2::Oid,
    ) -> anyhow::Result<Vec<String>> {
        let repo = &self.project.repo;
        let mut problems = Vec::new();
        if self.plan.role == Role::Worker {
            let mode = repo::file_mode_at(repo, candidate, "init.sh")?;
            if mode.is_none_or(|m| m & 0o111 == 0) {
                problems.push(
                    "init.sh is missing or not executable in what main would become; every session runs it first"
                        .to_string(),
                );
            }
        }
        if candidate == head {
            return Ok(problems);
        }
        let found = match self.plan.role {
            Role::Initializer => {
                crate::rules::initializer_problems(repo, Some(main_now), candidate)?
            }
            Role::Worker => {
                let id = self
                    .plan
                    .feature
                    .as_ref()
                    .map(|f| f.id.as_str())
                    .unwrap_or("");
                crate::rules::worker_problems(repo, main_now, candidate, id)?
            }
        };
        problems.extend(
            found
                .into_iter()
                .map(|p| format!("after the merge with main: {p}")),
        );
        Ok(problems)
    }
}

/// Where the work of earlier failed attempts at `feature` is, for the worker's
/// first message. A new attempt starts fresh from main; it may look at these.
fn earlier_attempts(project: &Project, feature: Option<&Feature>) -> anyhow::Result<Vec<String>> {
    let Some(feature) = feature else {
        return Ok(Vec::new());
    };
    let history = project.history()?;
    let notes = history
        .sessions
        .iter()
        .filter(|s| s.feature.as_deref() == Some(feature.id.as_str()) && s.verdict() != Some(Verdict::Accepted))
        .map(|s| {
            let why = s.reasons.first().cloned().unwrap_or_default();
            match &s.work_ref {
                Some(r) => format!(
                    "session {} was {} ({why}); its work: `git fetch {} {r} && git log -p HEAD..FETCH_HEAD`",
                    s.session,
                    s.verdict,
                    project.repo.path().display()
                ),
                None => format!("session {} was {} ({why})", s.session, s.verdict),
            }
        })
        .collect();
    Ok(notes)
}

/// The verdict from how the worker ended and what verification found.
fn decide(run: &WorkerRun, wall_time_secs: u64, reasons: &mut Vec<String>) -> Verdict {
    match run.stop {
        Stop::Interrupted => {
            reasons.insert(
                0,
                "interrupted: stopped at once by a second signal; the work is kept".into(),
            );
            return Verdict::Interrupted;
        }
        Stop::GraceOver if reasons.is_empty() => return Verdict::Accepted,
        Stop::GraceOver => {
            reasons.insert(
                0,
                "interrupted: the grace period after a signal ran out".into(),
            );
            return Verdict::Interrupted;
        }
        Stop::WallTime if reasons.is_empty() => return Verdict::Accepted,
        Stop::WallTime => {
            reasons.insert(
                0,
                format!("budget: wall time of {wall_time_secs} s reached; the worker was killed"),
            );
            return Verdict::Incomplete;
        }
        Stop::CostLimit if reasons.is_empty() => return Verdict::Accepted,
        Stop::CostLimit => {
            reasons.insert(
                0,
                format!(
                    "budget: the run reached --max-cost during this session (which spent ${:.4}); the worker was stopped",
                    run.cost_usd
                ),
            );
            return Verdict::Incomplete;
        }
        Stop::Budget => {
            let reason = run
                .over_budget
                .clone()
                .unwrap_or_else(|| "budget: spent".into());
            reasons.insert(0, reason);
            return Verdict::Incomplete;
        }
        Stop::Protocol => {
            reasons.insert(
                0,
                format!(
                    "the worker broke the broker protocol {} times (see its transcript); it was stopped",
                    run.violations
                ),
            );
            return Verdict::Failed;
        }
        Stop::Unconfined => {
            let kernel = run
                .sandbox
                .as_ref()
                .map(|c| c.contradictions.join("; "))
                .unwrap_or_default();
            reasons.insert(
                0,
                format!(
                    "the worker's confinement report does not hold ({kernel}); it was stopped \
                     before it ran anything of the session"
                ),
            );
            return Verdict::Failed;
        }
        Stop::Exited => {}
    }
    if reasons.is_empty() {
        return Verdict::Accepted;
    }
    match &run.report {
        None if run.killed_by.is_some() => {
            reasons.insert(
                0,
                format!(
                    "interrupted: the worker was killed by signal {} mid-session; the work is kept",
                    run.killed_by.unwrap_or(0)
                ),
            );
            Verdict::Interrupted
        }
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
    model: &str,
) -> anyhow::Result<WorkerConfig> {
    let features = project.features()?;
    let (passing, total) = features
        .as_ref()
        .map(|l| (l.passing(), l.features.len()))
        .unwrap_or((0, 0));
    let feature = plan.feature.as_ref().map(|f| FeatureBrief {
        id: f.id.clone(),
        description: f.description.clone(),
        json: f.pretty_json(),
        check: f.check.clone(),
    });
    // The model's own window, when [model] names it, is what the harness
    // must fit; its family fills in what longrun.toml leaves unset.
    let harness = Profile::harness(
        profile(project.config.model.family.as_deref(), model).as_ref(),
        &project.config.model,
        &project.config.harness,
    );
    let tries_earlier = plan.role == Role::Worker
        && harness.edit_format() == crate::config::EditFormat::WholeFile
        && harness.check_after_edit
        && harness.commit_when_passing();
    let earlier_work = match tries_earlier {
        true => earlier_work(project)?,
        false => Vec::new(),
    };
    Ok(WorkerConfig {
        session: plan.number,
        role: plan.role,
        feature,
        sandbox,
        budget: project.config.budget.clone(),
        harness,
        checks: project.config.checks.commands.clone(),
        check_timeout_secs: project.config.checks.timeout_secs,
        protected: project.protected(),
        frozen: project.config.run.frozen.clone(),
        user_skills: crate::skill_files::load_user_skills(),
        passing,
        total,
        tool_output_cap: project.config.tools.output_cap,
        permissions: project.config.permissions.clone(),
        notes: earlier_attempts(project, plan.feature.as_ref())?,
        earlier_work,
    })
}

/// Earlier sessions whose work is offered to a whole-file session, at most.
pub const EARLIER_WORK_SESSIONS: usize = 3;
/// Files of one earlier session offered, at most, and their largest size.
const EARLIER_WORK_FILES: usize = 8;
const EARLIER_WORK_FILE_BYTES: usize = 8 * 1024;

/// What the latest worker sessions not accepted changed from main, newest
/// first ([`WorkerConfig::earlier_work`]): small text files added or
/// changed, read from the objects at their refs as data. A session ends
/// with its best state at its ref; with one feature per test, that state
/// often passes another feature's test, and the session that takes that
/// feature next tries it before asking the model.
fn earlier_work(project: &Project) -> anyhow::Result<Vec<EarlierWork>> {
    let repo = &project.repo;
    let Some(main) = repo::main_head(repo)? else {
        return Ok(Vec::new());
    };
    let main_tree = repo.find_commit(main)?.tree()?;
    let history = project.history()?;
    let mut found = Vec::new();
    let unaccepted = history
        .sessions
        .iter()
        .rev()
        .filter(|s| s.role == "worker" && s.verdict() != Some(Verdict::Accepted));
    for row in unaccepted {
        if found.len() == EARLIER_WORK_SESSIONS {
            break;
        }
        let Some(tree) = row
            .work_ref
            .as_deref()
            .and_then(|r| repo.refname_to_id(r).ok())
            .and_then(|id| repo.find_commit(id).ok())
            .and_then(|c| c.tree().ok())
        else {
            continue;
        };
        let files = changed_text_files(repo, &main_tree, &tree)?;
        if !files.is_empty() {
            found.push(EarlierWork {
                session: row.session,
                files,
            });
        }
    }
    Ok(found)
}

/// The regular files `tree` adds or changes against `main`, each small and
/// UTF-8 (at most [`EARLIER_WORK_FILES`]).
fn changed_text_files(
    repo: &git2::Repository,
    main: &git2::Tree,
    tree: &git2::Tree,
) -> anyhow::Result<Vec<(String, String)>> {
    let diff = repo.diff_tree_to_tree(Some(main), Some(tree), None)?;
    let mut files = Vec::new();
    for delta in diff.deltas() {
        let new = delta.new_file();
        let regular = matches!(
            new.mode(),
            git2::FileMode::Blob | git2::FileMode::BlobExecutable
        );
        let changed = matches!(delta.status(), git2::Delta::Added | git2::Delta::Modified);
        let Some(path) = new.path().and_then(|p| p.to_str()) else {
            continue;
        };
        if !regular || !changed {
            continue;
        }
        let Ok(blob) = repo.find_blob(new.id()) else {
            continue;
        };
        if blob.size() > EARLIER_WORK_FILE_BYTES {
            continue;
        }
        if let Ok(text) = std::str::from_utf8(blob.content()) {
            files.push((path.to_string(), text.to_string()));
            if files.len() == EARLIER_WORK_FILES {
                break;
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::git::tree_of as tree;

    #[test]
    fn earlier_work_offers_only_small_text_files_added_or_changed() {
        // A session's work is untrusted: a symlink, a large or binary file
        // and a deletion are not offered; only their text, never a path to
        // follow, reaches the next worker.
        let dir = tempfile::tempdir().unwrap();
        let repo = git2::Repository::init_bare(dir.path()).unwrap();
        let big = vec![b'x'; EARLIER_WORK_FILE_BYTES + 1];
        let main = tree(
            &repo,
            &[
                ("m.py", 0o100644, b"pass\n"),
                ("same.py", 0o100644, b"x = 1\n"),
                ("gone.py", 0o100644, b"y = 2\n"),
            ],
        );
        let work = tree(
            &repo,
            &[
                ("m.py", 0o100644, b"print('a')\n"),
                ("same.py", 0o100644, b"x = 1\n"),
                ("new.sh", 0o100755, b"echo hi\n"),
                ("link.py", 0o120000, b"/etc/passwd"),
                ("big.py", 0o100644, &big),
                ("bin.dat", 0o100644, b"\xff\xfe\x00"),
            ],
        );
        let files = changed_text_files(&repo, &main, &work).unwrap();
        assert_eq!(
            files,
            [
                ("m.py".to_string(), "print('a')\n".to_string()),
                ("new.sh".to_string(), "echo hi\n".to_string()),
            ]
        );
    }
}
