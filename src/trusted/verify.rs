//! Independent verification of a session, from outside it.
//!
//! The work is collected (uncommitted changes committed as WIP, HEAD fetched
//! into the main repo at the session's ref), the rules are checked on the
//! commits, and `init.sh` and the checks run in a fresh confined checkout.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use git2::Oid;
use serde::{Deserialize, Serialize};

use super::repo;
use super::Project;
use crate::features::{self, Feature, FeatureList};
use crate::progress;
use crate::rules::{initializer_problems, reserved_path_problems, worker_problems};
use crate::sandbox::SandboxSpec;
use crate::schema::Role;

/// The name prefix of a passing feature's check run again.
pub const REGRESSION: &str = "regression check of";

/// The features whose checks this session's verification runs again: every
/// feature passing at the base but the assigned one, every Nth session.
pub fn regressions_due(
    project: &Project,
    number: u32,
    base: Oid,
    assigned: Option<&Feature>,
) -> Vec<Feature> {
    let every = project.config.run.regressions_every;
    if every == 0 || !number.is_multiple_of(every) {
        return Vec::new();
    }
    let Ok(Some(text)) = repo::read_file_at(&project.repo, base, features::FILE_NAME) else {
        return Vec::new();
    };
    let Ok(list) = FeatureList::parse(&text) else {
        return Vec::new();
    };
    list.features
        .into_iter()
        .filter(|f| {
            f.passes && f.check.is_some() && Some(f.id.as_str()) != assigned.map(|a| a.id.as_str())
        })
        .collect()
}

/// A check run during verification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckRun {
    pub name: String,
    pub command: String,
    pub passed: bool,
    pub output_tail: String,
    /// The hosts this run asked the registries proxy for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<super::proxy::Contact>,
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
    let changed = repo::changed_paths(repo, base, work.head)?;
    for path in &project.config.run.protected {
        if changed.iter().any(|c| c == path) {
            problems.push(format!("protected path {path} was changed"));
        }
    }
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
pub struct CheckPlace {
    pub dir: PathBuf,
    pub spec: SandboxSpec,
}

/// Materialise `candidate` (what main would become) for the checks, at the
/// same path as the worker's workspace: the worker's `work/` is moved aside
/// to `work.left/` (removed after the verdict), and a fresh `work/` is
/// written from the project's objects. The checks get a fresh tmp and home.
pub fn prepare_checkout(
    project: &Project,
    session_dir: &Path,
    candidate: Oid,
) -> anyhow::Result<CheckPlace> {
    let dir = session_dir.join("work");
    let left = session_dir.join("work.left");
    crate::fsutil::remove_tree(&left)?;
    if std::fs::symlink_metadata(&dir).is_ok() {
        std::fs::rename(&dir, &left)
            .with_context(|| format!("failed to move {} aside", dir.display()))?;
    }
    super::workspace::make(
        project.repo.path(),
        &dir,
        candidate,
        super::workspace::Head::Detached,
    )?;
    let root = session_dir.join("verify");
    crate::fsutil::remove_tree(&root)?;
    let (tmp, home) = (root.join("tmp"), root.join("home"));
    std::fs::create_dir_all(&tmp)?;
    std::fs::create_dir_all(&home)?;
    let spec = super::session::sandbox_spec(project, &dir, &tmp, &home, Vec::new());
    Ok(CheckPlace { dir, spec })
}

/// Run `init.sh`, the feature's check and (for workers) the global checks in
/// one confined process, so that servers `init.sh` starts live through the
/// checks. Each step writes its output and exit code to files in the
/// checkout's tmp; the whole process group is killed at the end.
pub async fn run_checks(
    project: &Project,
    place: &CheckPlace,
    role: Role,
    feature: Option<&Feature>,
    regressions: &[Feature],
) -> anyhow::Result<Vec<CheckRun>> {
    let mut steps: Vec<(String, String)> = Vec::new();
    if place.dir.join("init.sh").exists() {
        let _ = std::fs::set_permissions(
            place.dir.join("init.sh"),
            std::fs::Permissions::from_mode(0o755),
        );
        steps.push(("init.sh".into(), "./init.sh".into()));
    }
    if role == Role::Worker {
        if let Some(f) = feature {
            if let Some(check) = &f.check {
                steps.push((format!("feature {}", f.id), check.clone()));
            }
        }
        for (i, command) in project.config.checks.commands.iter().enumerate() {
            steps.push((format!("check {}", i + 1), command.clone()));
        }
        match &project.config.checks.suite {
            // The whole suite at once, mapped back to features below.
            Some(suite) if !regressions.is_empty() => {
                steps.push((super::suite::STEP.into(), suite.clone()))
            }
            _ => {
                for f in regressions {
                    if let Some(check) = &f.check {
                        steps.push((format!("{REGRESSION} {}", f.id), check.clone()));
                    }
                }
            }
        }
    }
    if steps.is_empty() {
        return Ok(Vec::new());
    }
    let out = place.spec.tmp.join("longrun-checks");
    std::fs::create_dir_all(&out)?;
    let per_step = project.config.checks.timeout_secs;
    let mut script = String::from("exec </dev/null >/dev/null 2>&1\n");
    let suite_results = super::suite::results_path(&out);
    for (i, (name, command)) in steps.iter().enumerate() {
        std::fs::write(out.join(format!("{i}.sh")), command)?;
        let o = out.display();
        if name == super::suite::STEP {
            script.push_str(&format!(
                "export {}={}\n",
                super::suite::RESULTS_ENV,
                suite_results.display()
            ));
        }
        script.push_str(&format!(
            "timeout -k 5 {per_step} bash {o}/{i}.sh > {o}/{i}.log 2>&1; echo $? > {o}/{i}.rc\n"
        ));
        if i == 0 && steps[0].0 == "init.sh" {
            script.push_str(&format!("[ \"$(cat {o}/0.rc)\" = 0 ] || exit 0\n"));
        }
    }
    let argv = vec!["bash".to_string(), "-c".to_string(), script];
    // init.sh installs: it gets the profile's init_network (and, in one
    // process with it, so do the checks).
    let spec = match steps[0].0 == "init.sh" {
        true => SandboxSpec {
            profile: place.spec.profile.for_init_script(),
            ..place.spec.clone()
        },
        false => place.spec.clone(),
    };
    let mut cmd = crate::sandbox::command(&spec, &argv)?;
    // The script silences itself; what is left on stderr is a confinement failure.
    let sandbox_log = out.join("sandbox.log");
    cmd.stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&sandbox_log)?);
    let (mut child, proxy) = super::proxy::spawn(cmd, &spec)?;
    let pid = child.id();
    let limit = Duration::from_secs(
        per_step
            .saturating_add(10)
            .saturating_mul(steps.len() as u64),
    );
    let finished = tokio::time::timeout(limit, child.wait()).await;
    if let Some(pid) = pid {
        // Whatever init.sh or a check left running goes with the process group.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let _ = child.wait().await;
    let mut network = proxy.map(|p| p.finish()).unwrap_or_default();
    let mut runs = Vec::new();
    for (i, (name, command)) in steps.iter().enumerate() {
        let rc = std::fs::read_to_string(out.join(format!("{i}.rc"))).ok();
        let Some(rc) = rc.map(|r| r.trim().to_string()) else {
            if finished.is_err() {
                runs.push(CheckRun {
                    name: name.clone(),
                    command: command.clone(),
                    passed: false,
                    output_tail: "[verification timed out]".into(),
                    network: std::mem::take(&mut network),
                });
            }
            continue;
        };
        let log = std::fs::read(out.join(format!("{i}.log"))).unwrap_or_default();
        let mut tail = progress::tail(&String::from_utf8_lossy(&log), 40);
        if rc == "124" || rc == "137" {
            tail.push_str(&format!("\n[timed out after {per_step} s]"));
        }
        if name == super::suite::STEP {
            let results = super::suite::read_results(&suite_results);
            runs.extend(super::suite::regression_runs(
                regressions,
                command,
                rc == "0",
                &tail,
                &results,
            ));
            continue;
        }
        runs.push(CheckRun {
            name: name.clone(),
            command: command.clone(),
            passed: rc == "0",
            output_tail: tail,
            network: std::mem::take(&mut network),
        });
    }
    if finished.is_ok() && !out.join("0.rc").exists() {
        let said = std::fs::read_to_string(&sandbox_log).unwrap_or_default();
        runs.push(CheckRun {
            name: "sandbox".into(),
            command: "confinement of the verification run".into(),
            passed: false,
            output_tail: progress::tail(&said, 5),
            network,
        });
    }
    Ok(runs)
}
