//! Independent verification of a session, from outside it.
//!
//! The work is collected (uncommitted changes committed as WIP, HEAD fetched
//! into the main repo at the session's ref), the rules are checked on the
//! commits, and `init.sh` and the checks run in a fresh checkout, each step
//! its own confined process judged by its exit status alone, with the
//! frozen acceptance tests as main holds them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use futures_util::StreamExt;
use git2::Oid;

use super::steps::{self, Outcome};
use crate::features::{self, Feature, FeatureList};
use crate::rules::{initializer_problems, reserved_path_problems, worker_problems};
use crate::sandbox::SandboxSpec;
use crate::schema::Role;
use crate::trusted::record::repo;
use crate::trusted::Project;

pub use super::steps::{CheckRun, StepKind, REGRESSION};

/// The features whose checks this session's verification runs again: every
/// feature passing at the base but the assigned one, every Nth session.
pub fn regressions_due<'l>(
    project: &Project,
    number: u32,
    list: &'l FeatureList,
    assigned: Option<&Feature>,
) -> Vec<&'l Feature> {
    let every = project.config.run.regressions_every;
    if every == 0 || !number.is_multiple_of(every) {
        return Vec::new();
    }
    list.features
        .iter()
        .filter(|f| {
            f.passes && f.check.is_some() && Some(f.id.as_str()) != assigned.map(|a| a.id.as_str())
        })
        .collect()
}

/// The session's work, brought into the main repo.
pub struct Work {
    pub head: Oid,
    /// Uncommitted changes had to be committed as WIP.
    pub wip: bool,
}

/// The rules on the commits themselves: descent, features.json, protected paths.
pub fn rule_problems(
    project: &Project,
    role: Role,
    feature: Option<&Feature>,
    base: Oid,
    work: &Work,
) -> anyhow::Result<Vec<String>> {
    let repo = &project.repo;
    let mut problems = Vec::new();
    if work.wip {
        problems
            .push("the session left uncommitted changes (kept in a WIP commit at its ref)".into());
    }
    problems.extend(reserved_path_problems(repo, base, work.head)?);
    if !repo::descends_from(repo, work.head, base)? {
        problems.push(
            "the session rewrote history: its HEAD does not descend from the session's base commit"
                .into(),
        );
        return Ok(problems);
    }
    let rules = super::acceptance::path_rules(project)?;
    problems.extend(rules.problems(repo, base, work.head, role == Role::Initializer)?);
    match role {
        Role::Initializer => problems.extend(initializer_problems(repo, Some(base), work.head)?),
        Role::Worker => {
            let id = feature.map(|f| f.id.as_str()).unwrap_or("");
            problems.extend(worker_problems(repo, base, work.head, id)?);
        }
    }
    Ok(problems)
}

/// Where a verification run happens.
pub struct CheckPlace<'p> {
    pub dir: PathBuf,
    pub spec: SandboxSpec,
    /// What main would become: what the checkout holds before any step ran.
    pub candidate: Oid,
    /// The cached checkout of main under an overlay checkout, held until
    /// the last step has run.
    lower: Option<super::checkout::Lower<'p>>,
}

/// Overlayfs's scratch directory beside an overlay workspace `work`.
pub const OVERLAY_WORK: &str = "work.ovl";

/// Materialise `candidate` (what main would become) for the checks, at the
/// same path as the worker's workspace: the worker's `work/` is moved aside
/// to `work.left/` (removed after the verdict), and a fresh `work/` is made
/// from the project's objects. Where the sandbox mounts overlays it is the
/// upper layer over the cached checkout of main and holds only what the
/// candidate changes (the checks' writes land there too); otherwise it is
/// written whole, and a tree of more files than `[checks]
/// link_unchanged_above` links what it holds the same as main from the
/// cached checkout of main ([`super::checkout`]) and writes only the
/// difference; its steps' sandboxes bind those links read-only. The checks
/// get a fresh tmp and home.
pub fn prepare_checkout<'p>(
    project: &'p Project,
    session_dir: &Path,
    candidate: Oid,
) -> anyhow::Result<CheckPlace<'p>> {
    let dir = session_dir.join("work");
    let left = session_dir.join("work.left");
    crate::fsutil::remove_tree(&left)?;
    // The session's sandboxes have all ended: their overlay scratch goes.
    crate::fsutil::remove_tree(&session_dir.join(OVERLAY_WORK))?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        std::fs::rename(&dir, &left)
            .with_context(|| format!("failed to move {} aside", dir.display()))?;
    }
    let root = session_dir.join("verify");
    crate::fsutil::remove_tree(&root)?;
    let (tmp, home, ovl) = (root.join("tmp"), root.join("home"), root.join("ovl"));
    for d in [&tmp, &home] {
        std::fs::create_dir_all(d)?;
    }
    let git = project.repo.path();
    let head = super::workspace::Head::Detached;
    let main = repo::main_head(&project.repo)?.context("main has no commits")?;
    let lower = super::checkout::lower(project, main);
    let mut linked = 0;
    match &lower {
        Some(_) => {
            super::workspace::make_upper(git, &dir, candidate, head, main)?;
            std::fs::create_dir_all(&ovl)?;
        }
        None => {
            let cached = super::checkout::worth_linking(project, candidate)
                .then(|| super::checkout::at(project, main))
                .flatten();
            linked = match cached {
                Some(cached) => {
                    let cached = super::workspace::Cached {
                        dir: &cached,
                        commit: main,
                    };
                    super::workspace::make_linked(git, &dir, candidate, head, &cached)?
                }
                None => {
                    super::workspace::make(git, &dir, candidate, head)?;
                    0
                }
            };
        }
    }
    let mut spec = super::workspace::sandbox_spec(project, &dir, &tmp, &home, Vec::new());
    spec.read_only_links = linked > 0;
    spec.layers = lower.as_ref().map(|l| l.layers(&dir, &ovl));
    Ok(CheckPlace {
        dir,
        spec,
        candidate,
        lower,
    })
}

impl CheckPlace<'_> {
    /// The mode of `path` in the candidate's tree, if it holds it.
    fn mode_of(&self, project: &Project, path: &str) -> Option<i32> {
        repo::file_mode_at(&project.repo, self.candidate, path)
            .ok()
            .flatten()
    }

    /// `spec` for a step that runs side by side with others: with an
    /// overlay checkout, the checkout as it stands after the steps run one
    /// after another is a read-only layer, and the step writes into an upper
    /// layer of its own under `scratch` (two overlays may not share one);
    /// otherwise `spec` as it is.
    fn side_by_side(&self, spec: &SandboxSpec, scratch: &Path) -> anyhow::Result<SandboxSpec> {
        let mut spec = spec.clone();
        if let (Some(layers), Some(lower)) = (spec.layers.as_mut(), self.lower.as_ref()) {
            let (upper, ovl) = (scratch.join("upper"), scratch.join("upper.ovl"));
            std::fs::create_dir_all(&upper)?;
            std::fs::create_dir_all(&ovl)?;
            layers.lower = vec![self.dir.clone(), lower.dir.clone()];
            layers.upper = upper;
            layers.work = ovl;
        }
        Ok(spec)
    }
}

/// Run the steps of this verification in the checkout, each its own
/// confined process: `init.sh` first (its failure skips the rest); for a
/// worker, the feature's check and the global checks, then the regression
/// checks side by side; for an initializer, every feature's check side by
/// side, each of which must fail. The frozen and protected files are first
/// put back as main holds them, and are read-only to every step.
pub async fn run_checks(
    project: &Project,
    place: &CheckPlace<'_>,
    role: Role,
    feature: Option<&Feature>,
    regressions: &[&Feature],
) -> anyhow::Result<Vec<CheckRun>> {
    let main = repo::main_head(&project.repo)?.context("main has no commits")?;
    super::acceptance::overlay(project, main, &place.dir)?;
    let mut spec = place.spec.clone();
    spec.read_only_inside = super::acceptance::read_only_inside(project, &place.dir);
    let (setup, serial, parallel) = plan_steps(project, place, role, feature, regressions)?;
    let runner = Runner::new(project, place, spec)?;
    let mut runs = Vec::new();
    if let Some(step) = setup {
        let run = runner.run(0, step).await;
        let failed = !run.passed;
        runs.push(run);
        if failed {
            return Ok(runs);
        }
    }
    let mut index = 1;
    for step in serial {
        if step.name == super::suite::STEP {
            runs.extend(runner.run_suite(index, step, regressions).await);
        } else if step.kind == StepKind::Feature {
            runs.push(runner.run_with_tripwire(index, step, main).await);
        } else {
            runs.push(runner.run(index, step).await);
        }
        index += 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let runner = &runner;
    let together: Vec<CheckRun> = futures_util::stream::iter(parallel.into_iter().enumerate())
        .map(|(i, step)| runner.run_beside(index + i, step))
        .buffered(cores)
        .collect()
        .await;
    runs.extend(together);
    Ok(runs)
}

/// A step before it runs: its name, command and kind.
struct Step {
    name: String,
    command: String,
    kind: StepKind,
    feature: Option<String>,
}

type Plan = (Option<Step>, Vec<Step>, Vec<Step>);

/// init.sh; the steps run one after another; the steps run side by side.
fn plan_steps(
    project: &Project,
    place: &CheckPlace<'_>,
    role: Role,
    feature: Option<&Feature>,
    regressions: &[&Feature],
) -> anyhow::Result<Plan> {
    // From the candidate's tree: an overlay checkout's directory holds only
    // what differs from main.
    let is_file = place
        .mode_of(project, "init.sh")
        .is_some_and(|m| m == 0o100644 || m == 0o100755);
    let setup = is_file.then(|| Step {
        name: "init.sh".into(),
        command: "./init.sh".into(),
        kind: StepKind::Setup,
        feature: None,
    });
    let check_of = |f: &Feature, kind: StepKind, name: String| {
        f.check.as_ref().map(|c| Step {
            name,
            command: c.clone(),
            kind,
            feature: Some(f.id.clone()),
        })
    };
    let mut serial = Vec::new();
    let mut parallel = Vec::new();
    match role {
        Role::Worker => {
            if let Some(f) = feature {
                serial.extend(check_of(f, StepKind::Feature, format!("feature {}", f.id)));
            }
            for (i, command) in project.config.checks.commands.iter().enumerate() {
                serial.push(Step {
                    name: format!("check {}", i + 1),
                    command: command.clone(),
                    kind: StepKind::Global,
                    feature: None,
                });
            }
            match &project.config.checks.suite {
                // The whole suite at once, mapped back to features after it ran.
                Some(suite) if !regressions.is_empty() => serial.push(Step {
                    name: super::suite::STEP.into(),
                    command: suite.clone(),
                    kind: StepKind::Regression,
                    feature: None,
                }),
                _ => {
                    for f in regressions {
                        let name = format!("{REGRESSION} {}", f.id);
                        parallel.extend(check_of(f, StepKind::Regression, name));
                    }
                }
            }
        }
        Role::Initializer => {
            let text = repo::read_file_at(&project.repo, place.candidate, features::FILE_NAME);
            if let Some(list) = text
                .ok()
                .flatten()
                .and_then(|t| FeatureList::parse(&t).ok())
            {
                // A feature given as passing (`init --features`) must pass
                // its check to stay passing; the others are FAIL_TO_PASS.
                for f in &list.features {
                    let (kind, name) = match f.passes {
                        false => (
                            StepKind::Acceptance,
                            format!("feature {} {ACCEPTANCE}", f.id),
                        ),
                        true => (
                            StepKind::GivenPassing,
                            format!("feature {} {GIVEN_PASSING}", f.id),
                        ),
                    };
                    parallel.extend(check_of(f, kind, name));
                }
            }
        }
    }
    Ok((setup, serial, parallel))
}

/// The name prefix of a feature's check run on the initializer's tree.
pub const ACCEPTANCE: &str = "(must fail before the work)";
/// The name suffix of the check of a feature given as passing, at init.
pub const GIVEN_PASSING: &str = "(given as passing)";

/// The features given as passing whose checks did not pass at init: they
/// are set back to failing when the initializer is accepted.
pub fn given_passing_that_fail(runs: &[CheckRun]) -> Vec<String> {
    runs.iter()
        .filter(|r| r.kind == StepKind::GivenPassing && !r.passed)
        .filter_map(|r| r.feature.clone())
        .collect()
}

/// Runs steps in one checkout, each with fresh scratch directories.
struct Runner<'a> {
    place: &'a CheckPlace<'a>,
    project: &'a Project,
    scratch: PathBuf,
    spec: SandboxSpec,
    timeout: Duration,
}

impl<'a> Runner<'a> {
    fn new(
        project: &'a Project,
        place: &'a CheckPlace<'a>,
        spec: SandboxSpec,
    ) -> anyhow::Result<Runner<'a>> {
        // Beside the checkout, where the session never had access.
        let parent = place.dir.parent().unwrap_or(&place.dir);
        let scratch = parent.join("steps");
        crate::fsutil::remove_tree(&scratch)?;
        std::fs::create_dir(&scratch)?;
        Ok(Runner {
            place,
            project,
            scratch,
            spec,
            timeout: Duration::from_secs(project.config.checks.timeout_secs),
        })
    }

    async fn run(&self, index: usize, step: Step) -> CheckRun {
        let scratch = self.scratch.join(index.to_string());
        // init.sh installs: it gets the profile's init_network; the checks do not.
        let spec = match step.kind {
            StepKind::Setup => SandboxSpec {
                profile: self.spec.profile.for_init_script(),
                ..self.spec.clone()
            },
            _ => self.spec.clone(),
        };
        let ran = steps::run(&spec, &scratch, &step.command, self.timeout, &[]).await;
        let _ = crate::fsutil::remove_tree(&scratch);
        self.judged(step, ran)
    }

    /// [`Runner::run`] for a step run side by side with others.
    async fn run_beside(&self, index: usize, step: Step) -> CheckRun {
        let scratch = self.scratch.join(index.to_string());
        let ran = match self.place.side_by_side(&self.spec, &scratch) {
            Ok(spec) => steps::run(&spec, &scratch, &step.command, self.timeout, &[]).await,
            Err(e) => steps::Ran {
                outcome: Outcome::CannotRun(format!("the harness could not start it: {e:#}")),
                output_tail: String::new(),
                network: Vec::new(),
            },
        };
        let _ = crate::fsutil::remove_tree(&scratch);
        self.judged(step, ran)
    }

    /// [`Runner::run`] with a tripwire ([`crate::tripwire`]) in the test
    /// file the check runs, where it runs one with unittest or pytest: put
    /// in just before the step and taken out just after, so no other step
    /// sees it. A run whose report the tripwire contradicts fails with
    /// [`crate::tripwire::UNTRUSTED`].
    async fn run_with_tripwire(&self, index: usize, step: Step, main: Oid) -> CheckRun {
        let repo = &self.project.repo;
        let planned = repo
            .find_commit(self.place.candidate)
            .and_then(|c| c.tree())
            .ok()
            .and_then(|tree| {
                let named = crate::closure::named_files(repo, &tree, &step.command);
                crate::tripwire::Tripwire::plan(&step.command, &named)
            });
        let Some(wire) = planned else {
            return self.run(index, step).await;
        };
        let original = crate::git::read_file_at(repo, main, &wire.file)
            .ok()
            .flatten();
        let Some(original) = original.filter(|_| self.tripwire_frozen(&wire.file)) else {
            return self.run(index, step).await;
        };
        let with = format!("{original}{}", wire.text());
        let put = |text: &str| {
            super::acceptance::write_beneath(&self.place.dir, &wire.file, text.as_bytes(), 0o644)
        };
        if let Err(e) = put(&with) {
            tracing::warn!("no tripwire in {}: {e:#}", wire.file);
            return self.run(index, step).await;
        }
        let mut run = self.run(index, step).await;
        let _ = put(&original);
        judge_tripwire(&wire, &mut run);
        run
    }

    /// Whether `file` is frozen or protected: a tripwire goes only where
    /// verification puts back main's copy (a file the worker may write is
    /// the worker's own).
    fn tripwire_frozen(&self, file: &str) -> bool {
        super::acceptance::path_rules(self.project).is_ok_and(|r| r.fixed(file))
    }

    /// `[checks] suite`: one step in place of the regression checks, told
    /// where to write its per-feature results (in its own fresh TMPDIR, read
    /// without following a symlink); the verdict rests on its exit status.
    async fn run_suite(&self, index: usize, step: Step, regressions: &[&Feature]) -> Vec<CheckRun> {
        let scratch = self.scratch.join(index.to_string());
        let results = super::suite::results_path(&scratch.join("tmp"));
        let env = [(
            super::suite::RESULTS_ENV.to_string(),
            results.display().to_string(),
        )];
        let ran = steps::run(&self.spec, &scratch, &step.command, self.timeout, &env).await;
        let read = super::suite::read_results(&results);
        let _ = crate::fsutil::remove_tree(&scratch);
        let passed = ran.outcome.passed();
        super::suite::regression_runs(regressions, &step.command, passed, &ran.output_tail, &read)
    }

    fn judged(&self, step: Step, ran: steps::Ran) -> CheckRun {
        let mut outcome = ran.outcome;
        if !outcome.passed() {
            let exists = |p: &str| {
                self.place.mode_of(self.project, p).is_some()
                    || std::fs::symlink_metadata(self.place.dir.join(p)).is_ok()
            };
            if let Some(missing) = missing_program(exists, &step.command) {
                outcome = Outcome::CannotRun(missing);
            } else if let Some(why) = module_off_the_path(exists, &step.command, &ran.output_tail) {
                outcome = Outcome::CannotRun(why);
            }
        }
        CheckRun {
            name: step.name,
            command: step.command,
            passed: outcome.passed(),
            output_tail: ran.output_tail,
            network: ran.network,
            kind: step.kind,
            feature: step.feature,
            outcome,
        }
    }
}

impl Drop for Runner<'_> {
    fn drop(&mut self) {
        let _ = crate::fsutil::remove_tree(&self.scratch);
    }
}

/// `run`, a step that ran with `wire` in it, judged by what the tripwire saw.
fn judge_tripwire(wire: &crate::tripwire::Tripwire, run: &mut CheckRun) {
    use crate::tripwire::Judged;
    let exit_ok = run.outcome.passed();
    if matches!(
        run.outcome,
        Outcome::CannotRun(_) | Outcome::TimedOut(_) | Outcome::Killed(_)
    ) {
        return;
    }
    match wire.judge(exit_ok, &run.output_tail) {
        Judged::Passed => run.outcome = Outcome::Passed,
        Judged::Failed => {}
        Judged::Tampered(why) => {
            run.outcome = Outcome::Failed(1);
            run.output_tail.push_str(&format!("\n[{why}]"));
        }
    }
    run.passed = run.outcome.passed();
}

/// Interpreters whose first plain argument is the program they run.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "python", "python3", "node", "ruby", "perl", "php", "deno", "bun",
];

/// The program file (or the script an interpreter runs, or a test file) a
/// check names that does not `exist` (relative to the checkout), if any,
/// said as a reason.
fn missing_program(exists: impl Fn(&str) -> bool, command: &str) -> Option<String> {
    let words = shlex::split(command)?;
    let first = words.first()?;
    let mut candidates = Vec::new();
    if first.contains('/') {
        candidates.push(first.clone());
    }
    let base = first.rsplit('/').next().unwrap_or(first);
    if INTERPRETERS.contains(&base) {
        if let Some(script) = words[1..].iter().find(|w| !w.starts_with('-')) {
            let runs_module = words[1..].iter().any(|w| w == "-m" || w == "-c");
            if !runs_module {
                candidates.push(script.clone());
            }
        }
    }
    let missing = |p: &String| {
        let p = p.trim_start_matches("./");
        !p.starts_with('/') && !exists(p)
    };
    if let Some(program) = candidates.into_iter().find(missing) {
        return Some(format!("`{program}` does not exist"));
    }
    // A test file named by its path (not a `-p test_*.py` pattern), or a
    // dotted unittest name none of whose files exists.
    crate::rules::named_path_groups(command)
        .into_iter()
        .filter(|group| group[0].contains('/') && crate::rules::is_test_file(&group[0]))
        .find(|group| group.iter().all(missing))
        .map(|group| match group.as_slice() {
            [one] => format!("`{one}` does not exist"),
            files => format!(
                "none of {} exists",
                files
                    .iter()
                    .map(|f| format!("`{f}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
}

/// The reasons a verification's steps give against accepting the session;
/// a regression names the feature it broke, and at init a check that passes
/// is vacuous and one that cannot run is said so.
pub fn check_problems(runs: &[CheckRun]) -> Vec<String> {
    let mut problems = Vec::new();
    for run in runs {
        let last = last_line(&run.output_tail);
        let cmd = &run.command;
        let id = run.feature.as_deref().unwrap_or("");
        match (&run.kind, &run.outcome) {
            (StepKind::Acceptance, Outcome::Passed) => problems.push(format!(
                "vacuous check: feature {id}'s check `{cmd}` passes before anything is built; \
                 an acceptance check must fail until its feature works"
            )),
            (StepKind::Acceptance, Outcome::CannotRun(why)) => problems.push(format!(
                "feature {id}'s check `{cmd}` cannot run ({why}){last}; \
                 write the acceptance test it runs now, so that it runs and fails"
            )),
            (StepKind::Acceptance, _) => {}
            (StepKind::GivenPassing, _) => {}
            (_, Outcome::Passed) => {}
            (StepKind::Setup, o) => problems.push(format!(
                "init.sh failed ({}){last}; no check ran",
                o.describe()
            )),
            (StepKind::Regression, o) => problems.push(format!(
                "regression: this session broke feature {id}, whose check now fails: `{cmd}`{}{last}",
                how(o)
            )),
            (_, Outcome::CannotRun(why)) => problems.push(format!(
                "{} cannot run: `{cmd}` ({why}){last}",
                run.name
            )),
            (_, o) => problems.push(format!("{} failed: `{cmd}`{}{last}", run.name, how(o))),
        }
    }
    problems
}

impl CheckRun {
    /// Whether it did what verification needs: exit 0, or at init, run and fail.
    pub fn as_expected(&self) -> bool {
        match self.kind {
            StepKind::Acceptance => matches!(
                self.outcome,
                Outcome::Failed(_) | Outcome::Killed(_) | Outcome::TimedOut(_)
            ),
            _ => self.passed,
        }
    }
}

/// How a step that ran did not pass, when more than its exit status.
fn how(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Failed(_) | Outcome::Passed => String::new(),
        o => format!(" ({})", o.describe()),
    }
}

/// A check's Python failed to import a module that is right there in the
/// checkout: checks run with `PYTHONSAFEPATH=1` (so that a file a session
/// plants cannot shadow what the test runner imports), and then neither
/// `python3 -m unittest test_x.TestX.test_a` nor `python3 tests/test_x.py`
/// can import a module from the working directory. Says so, and what
/// works instead: unittest discovery of the test file the check runs (or
/// of the module it could not import), or pytest.
fn module_off_the_path(
    exists: impl Fn(&str) -> bool,
    command: &str,
    output: &str,
) -> Option<String> {
    const MARK: &str = "ModuleNotFoundError: No module named '";
    let at = output.find(MARK)? + MARK.len();
    let name = output[at..].split('\'').next()?;
    let top = name.split('.').next()?;
    let valid = !top.is_empty() && top.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid || !(exists(&format!("{top}.py")) || exists(top)) {
        return None;
    }
    // `python3 tests/test_x.py`: the script is the test file to discover.
    let script = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '\'' || c == '"'))
        .find(|w| w.ends_with(".py") && exists(w));
    let (how, run) = match script.map(|s| s.rsplit_once('/').unwrap_or(("", s))) {
        Some(("", file)) => (
            format!("`python3 {file}` cannot import it"),
            format!("`python3 -m unittest discover -p '{file}'`"),
        ),
        Some((dir, file)) => (
            format!("`python3 {dir}/{file}` cannot import it"),
            format!("`python3 -m unittest discover -s {dir} -t . -p '{file}'`"),
        ),
        None => (
            format!("`python3 -m unittest {top}...` finds nothing there"),
            format!("`python3 -m unittest discover -p '{top}.py'`"),
        ),
    };
    Some(format!(
        "Python cannot import `{name}` from the working directory: checks run with \
         PYTHONSAFEPATH=1, so {how}; let unittest find the tests instead: {run} (add \
         `-k '*.TestClass.test_name'` for one test), or use pytest with the file's path"
    ))
}

fn last_line(output: &str) -> String {
    match output.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(l) => format!(": {}", l.trim()),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::{missing_program, module_off_the_path};

    #[test]
    fn a_module_in_the_checkout_that_python_cannot_import_says_why_and_what_works() {
        let output = "ERROR: test_duration (unittest.loader._FailedTest.test_duration)\n\
                      ModuleNotFoundError: No module named 'test_duration'\n\nFAILED (errors=1)";
        let here = |p: &str| p == "test_duration.py";
        let check = "python3 -m unittest -v test_duration.T.test_a";
        let why = module_off_the_path(here, check, output).unwrap();
        assert!(
            why.starts_with("Python cannot import `test_duration` from the working directory")
                && why.contains("python3 -m unittest discover -p 'test_duration.py'"),
            "{why}"
        );
        // A module the project does not hold is the check's own failure.
        let output = "ModuleNotFoundError: No module named 'requests'";
        assert_eq!(module_off_the_path(here, check, output), None);
        assert_eq!(
            module_off_the_path(here, check, "FAILED (failures=1)"),
            None
        );
    }

    #[test]
    fn a_test_script_that_cannot_import_the_code_beside_it_is_discovered_instead() {
        // `python3 test_greet.py` runs, but `from greet import greet` fails:
        // the file to discover is the script, not the module it imports.
        let output = "  File \"test_greet.py\", line 3, in <module>\n\
                      ModuleNotFoundError: No module named 'greet'";
        let here = |p: &str| matches!(p, "greet.py" | "test_greet.py" | "tests/test_greet.py");
        let why = module_off_the_path(here, "python3 test_greet.py", output).unwrap();
        assert!(
            why.contains("so `python3 test_greet.py` cannot import it")
                && why.contains("`python3 -m unittest discover -p 'test_greet.py'`"),
            "{why}"
        );
        let why =
            module_off_the_path(here, "cd . && python3 'tests/test_greet.py' -v", output).unwrap();
        assert!(
            why.contains("`python3 -m unittest discover -s tests -t . -p 'test_greet.py'`"),
            "{why}"
        );
    }

    #[test]
    fn a_unittest_id_is_missing_only_when_no_file_it_may_be_in_exists() {
        let check = "python3 -m unittest -v test_duration.TestParseDuration.test_seconds";
        let only = |files: &'static [&'static str]| move |p: &str| files.contains(&p);
        assert_eq!(missing_program(only(&["test_duration.py"]), check), None);
        assert_eq!(
            missing_program(only(&[]), check).as_deref(),
            Some("none of `test_duration/TestParseDuration/test_seconds.py`, `test_duration/TestParseDuration.py`, `test_duration.py` exists")
        );
        // A module not named like a test is found all the same.
        let plain = "python3 -m unittest -v t.T.test_a";
        assert_eq!(missing_program(only(&["t.py"]), plain), None);
        let module = "python3 -m unittest tests.test_add";
        assert_eq!(missing_program(only(&["tests/test_add.py"]), module), None);
        assert_eq!(
            missing_program(only(&[]), module).as_deref(),
            Some("none of `tests/test_add.py`, `tests.py` exists")
        );
        assert_eq!(
            missing_program(only(&[]), "bash checks/f1.sh").as_deref(),
            Some("`checks/f1.sh` does not exist")
        );
    }
}
