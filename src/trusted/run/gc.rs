//! `longrun gc`: give back the disk that old sessions hold.
//!
//! A session recorded on main leaves its directory under `.longrun/sessions/`
//! and its work at `refs/longrun/sessions/NNNN`. `gc` removes both for the
//! sessions past the newest `--keep` (and, with `--older-than`, only those
//! recorded that long ago), keeps their transcripts unless asked, then
//! repacks the objects so that what only those refs reached is gone. main's
//! history (verdict commits, accepted work) is never touched, nor a session
//! that has no verdict yet (`continue` recovers those). It takes the run
//! lock: it does not run beside `continue`.
//!
//! Also here: the disk a project uses, which `status` shows.

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::trusted::record::verdict::work_ref;
use crate::trusted::session::lifecycle::session_dir;
use crate::trusted::{record::lock, Project};
use crate::view::text::bytes;

/// What to prune.
pub struct GcArgs {
    /// The newest sessions kept whatever their age.
    pub keep: u32,
    /// Prune only sessions recorded more than this many days ago.
    pub older_than_days: Option<f64>,
    /// Remove the pruned sessions' transcripts too.
    pub transcripts: bool,
}

/// Prune, repack, and say what it freed.
pub fn gc(dir: &Path, args: &GcArgs) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let _lock = lock::acquire(&project.longrun_dir())?;
    let before = Disk::of(&project);
    let history = project.history()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let cutoff = args
        .older_than_days
        .map(|days| now - (days.max(0.0) * 86_400.0) as i64);
    let mut recorded: Vec<_> = history.sessions.iter().collect();
    recorded.sort_by_key(|s| s.session);
    let prunable = recorded.len().saturating_sub(args.keep as usize);
    let (mut refs, mut dirs) = (0, 0);
    for row in &recorded[..prunable] {
        if cutoff.is_some_and(|c| row.time > c) {
            continue;
        }
        refs += u32::from(remove_ref(&project, row.session)?);
        dirs += u32::from(remove_session_dir(&project, row.session, args.transcripts)?);
    }
    // The cached checkout of main: each run makes it anew at its first use.
    crate::trusted::verify::checkout::remove(&project)?;
    super::compact::repack_all(project.repo.path())?;
    let after = Disk::of(&project);
    Ok(format!(
        "pruned {refs} session ref(s) and {dirs} session director(y/ies); kept the newest {}\n\
         .longrun/: {} -> {}\n.git/: {} -> {}\n",
        args.keep,
        bytes(before.longrun),
        bytes(after.longrun),
        bytes(before.git),
        bytes(after.git)
    ))
}

/// Delete the session's work ref; false when it had none.
fn remove_ref(project: &Project, number: u32) -> anyhow::Result<bool> {
    match project.repo.find_reference(&work_ref(number)) {
        Ok(mut r) => {
            r.delete()?;
            Ok(true)
        }
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Empty the session's directory but for its transcript (unless `all`);
/// false when there was nothing to remove.
fn remove_session_dir(project: &Project, number: u32, all: bool) -> anyhow::Result<bool> {
    let dir = session_dir(project, number);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(false);
    };
    let mut removed = false;
    for entry in entries.filter_map(Result::ok) {
        if !all && entry.file_name() == "transcript.jsonl" {
            continue;
        }
        let path = entry.path();
        // A file is unlinked, a directory removed without following a link.
        let result = match entry.file_type() {
            Ok(t) if t.is_dir() => crate::fsutil::remove_tree(&path),
            _ => std::fs::remove_file(&path).map_err(anyhow::Error::from),
        };
        match result {
            Ok(()) => removed = true,
            Err(e) => tracing::warn!("cannot remove {}: {e:#}", path.display()),
        }
    }
    if all {
        let _ = std::fs::remove_dir(&dir);
    }
    Ok(removed)
}

/// The disk a project's state uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Disk {
    /// Bytes under `.longrun/`.
    pub longrun: u64,
    /// Bytes under `.git/`.
    pub git: u64,
}

impl Disk {
    /// A file hard-linked from `.git/` into a session's clone counts under `.git/`.
    pub fn of(project: &Project) -> Disk {
        let mut linked = HashSet::new();
        let git = usage_of(project.repo.path(), &mut linked);
        Disk {
            longrun: usage_of(&project.longrun_dir(), &mut linked),
            git,
        }
    }
}

/// The disk used under `path` (allocated blocks), not following symlinks;
/// a file hard-linked several times counts once, in `linked`.
fn usage_of(path: &Path, linked: &mut HashSet<(u64, u64)>) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.nlink() > 1 && !meta.is_dir() && !linked.insert((meta.dev(), meta.ino())) {
        return 0;
    }
    let own = meta.blocks() * 512;
    if !meta.is_dir() {
        return own;
    }
    let Ok(entries) = std::fs::read_dir(path) else {
        return own;
    };
    own + entries
        .filter_map(Result::ok)
        .map(|e| usage_of(&e.path(), linked))
        .sum::<u64>()
}
