//! Crash recovery: sessions that have a directory but no verdict on main.
//!
//! After a kill -9 or a power loss, the next `continue` finds each such
//! session, ends whatever it left running, keeps its work (commits and
//! uncommitted changes) at `refs/longrun/sessions/NNNN`, and records an
//! `interrupted` verdict. The feature is then tried again from main.

use std::collections::BTreeSet;
use std::path::Path;

use super::lifecycle::session_dir;
use crate::model::Usage;
use crate::protocol::WorkerConfig;
use crate::trusted::record::state;
use crate::trusted::record::transcript::{self, Entry, Transcript};
use crate::trusted::record::verdict::{self, Record};
use crate::trusted::verify::workspace::sandbox_spec;
use crate::trusted::{History, Project, Reporter, Verdict};

/// Session numbers with a directory but no verdict commit on main.
pub fn unrecorded(project: &Project, history: &History) -> Vec<u32> {
    let recorded: BTreeSet<u32> = history.sessions.iter().map(|s| s.session).collect();
    let mut numbers: Vec<u32> = state::session_dir_numbers(&project.dir)
        .into_iter()
        .filter(|n| !recorded.contains(n))
        .collect();
    numbers.sort_unstable();
    numbers
}

/// Recover every unrecorded session; returns their numbers.
pub fn recover_all(project: &Project, reporter: &Reporter) -> anyhow::Result<Vec<u32>> {
    crate::trusted::record::repo::resync_worktree(&project.repo)?;
    // Quarantines of imports a crash cut short: never published, never needed.
    if let Err(e) = crate::fsutil::remove_tree(&project.longrun_dir().join("import")) {
        tracing::warn!("{e:#}");
    }
    let numbers = unrecorded(project, &*project.history()?);
    for &n in &numbers {
        recover(project, n, reporter)?;
    }
    Ok(numbers)
}

fn recover(project: &Project, number: u32, reporter: &Reporter) -> anyhow::Result<()> {
    let dir = session_dir(project, number);
    end_leftovers(&dir);
    let config: Option<WorkerConfig> = std::fs::read_to_string(dir.join("worker.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    let entries = transcript::read(&dir.join("transcript.jsonl")).unwrap_or_default();
    let (role, feature, model) = describe(config.as_ref(), &entries);
    let mut usage = Usage::default();
    let mut cost = 0.0;
    let mut steps = 0;
    for e in &entries {
        if let Entry::Response { response, .. } = e {
            usage.add(response.usage);
            cost += response.cost_usd;
            steps += 1;
        }
    }
    let kept = keep_work(project, &dir, number, &entries);
    let mut reasons = vec![
        "interrupted: the orchestrator stopped (crash, kill or power loss) before recording a verdict".to_string(),
    ];
    if kept {
        reasons.push(format!("the work is kept at {}", verdict::work_ref(number)));
    }
    let rec = Record {
        number,
        role: &role,
        feature: feature.as_deref(),
        verdict: Verdict::Interrupted,
        reasons: &reasons,
        model: &model,
        usage,
        cost_usd: cost,
        steps,
        duration_s: 0,
        sandbox: &[],
        network: &[],
        work_kept: kept,
        loops: &[],
        review: None,
        // The orchestrator stopped: not the work's doing.
        fault: Some(crate::schema::Fault::Run),
    };
    let main = crate::trusted::record::repo::main_head(&project.repo)?.unwrap_or(git2::Oid::zero());
    let (verdict, reasons, commit) = verdict::record(&project.repo, &rec, main)?;
    if let Ok(mut t) = Transcript::open(&dir.join("transcript.jsonl")) {
        let _ = t.append(&Entry::Verdict {
            verdict: verdict.to_string(),
            reasons: reasons.clone(),
            commit: commit.to_string(),
        });
    }
    reporter.line(&format!(
        "recovered session {number}: recorded as {verdict}"
    ));
    super::lifecycle::remove_work_files(&dir);
    Ok(())
}

/// Keep the session's work at its ref: already there when the crash came
/// after the import, else exported (confined) from its workspace now.
fn keep_work(project: &Project, dir: &Path, number: u32, entries: &[Entry]) -> bool {
    if project
        .repo
        .refname_to_id(&verdict::work_ref(number))
        .is_ok()
    {
        return true;
    }
    let work = dir.join("work");
    if !std::fs::symlink_metadata(&work).is_ok_and(|m| m.is_dir()) {
        return false;
    }
    let base = entries
        .iter()
        .find_map(|e| match e {
            Entry::SessionStarted { base, .. } => git2::Oid::from_str(base).ok(),
            _ => None,
        })
        .or_else(|| {
            crate::trusted::record::repo::main_head(&project.repo)
                .ok()
                .flatten()
        })
        .unwrap_or(git2::Oid::zero());
    let mut spec = sandbox_spec(
        project,
        &work,
        &dir.join("tmp"),
        &dir.join("home"),
        Vec::new(),
    );
    // An overlay workspace (its scratch directory beside it, which only the
    // orchestrator makes) holds only what the session changed: the export
    // needs its lower layer, the cached checkout of its base, made anew.
    let ovl = dir.join(crate::trusted::verify::verification::OVERLAY_WORK);
    let lower = match std::fs::symlink_metadata(&ovl).is_ok_and(|m| m.is_dir()) {
        true => match crate::trusted::verify::checkout::lower(project, base) {
            Some(lower) => Some(lower),
            None => {
                tracing::warn!("session {number}: its overlay workspace cannot be mounted here");
                return false;
            }
        },
        false => None,
    };
    spec.layers = lower.as_ref().map(|l| l.layers(&work, &ovl));
    for d in [&spec.tmp, &spec.home] {
        let _ = std::fs::create_dir_all(d);
    }
    match super::import::import_work(
        &super::import::Target::of(project),
        dir,
        &spec,
        base,
        number,
    ) {
        Ok(_) => true,
        Err(e) => {
            tracing::warn!("session {number}: its work could not be kept: {e:#}");
            false
        }
    }
}

/// Role, feature and model of a session, from its worker.json or transcript.
fn describe(config: Option<&WorkerConfig>, entries: &[Entry]) -> (String, Option<String>, String) {
    let started = entries.iter().find_map(|e| match e {
        Entry::SessionStarted {
            role,
            feature,
            model,
            ..
        } => Some((role.clone(), feature.clone(), model.clone())),
        _ => None,
    });
    match (started, config) {
        (Some(s), _) => s,
        (None, Some(c)) => (
            c.role.as_str().to_string(),
            c.feature.as_ref().map(|f| f.id.clone()),
            String::new(),
        ),
        (None, None) => ("worker".to_string(), None, String::new()),
    }
}

/// End every process the session left: its worker's process group and
/// anything still in the worker's session (tools and what they started) —
/// but only when the pid in `worker.pid` is still that worker, proved by
/// the start time the orchestrator recorded beside it. A pid alone may have
/// been reused by an unrelated process since.
fn end_leftovers(dir: &Path) {
    let read = |name: &str| -> Option<String> {
        std::fs::read_to_string(dir.join(name))
            .ok()
            .map(|t| t.trim().to_string())
    };
    let Some(pid) = read("worker.pid").and_then(|p| p.parse::<i32>().ok()) else {
        return;
    };
    let Some(recorded) = read(super::serve::START_FILE).and_then(|t| t.parse::<u64>().ok()) else {
        return;
    };
    if pid <= 1 || super::serve::start_time(pid) != Some(recorded) {
        return;
    }
    for leftover in processes_in_session(pid) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(leftover),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

/// Pids whose session id is `sid` (field 6 of /proc/PID/stat).
pub fn processes_in_session(sid: i32) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    // The command name may hold spaces; fields resume after its last ')'.
                    let rest = &stat[stat.rfind(')')? + 2..];
                    rest.split_whitespace().nth(3)?.parse::<i32>().ok()
                })
                == Some(sid)
        })
        .collect()
}
