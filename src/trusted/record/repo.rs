//! Everything that touches git internals, through git2.
//!
//! The orchestrator writes the project's main branch only through here:
//! commits with trailers, verdict merges, session refs, and the first-parent
//! log that is the audit trail.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use git2::{BranchType, Oid, Repository, Signature};

pub use crate::git::{changed_paths, descends_from, dirty_paths, file_mode_at, read_file_at};

pub const MAIN: &str = "main";
pub const MAIN_REF: &str = "refs/heads/main";

/// The identity of commits the orchestrator makes.
pub fn signature() -> anyhow::Result<Signature<'static>> {
    Signature::now("longrun", "longrun@localhost").context("failed to make a git signature")
}

/// Open the repo at `dir`, or create it with `main` as the initial branch.
pub fn init_or_open(dir: &Path) -> anyhow::Result<Repository> {
    if let Ok(repo) = Repository::open(dir) {
        if repo.workdir().map(|w| same_path(w, dir)).unwrap_or(false) {
            return Ok(repo);
        }
    }
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head(MAIN);
    Repository::init_opts(dir, &opts)
        .with_context(|| format!("failed to create a git repository in {}", dir.display()))
}

/// Open the project's repo at exactly `dir`.
pub fn open(dir: &Path) -> anyhow::Result<Repository> {
    let repo = Repository::open(dir)
        .with_context(|| format!("{} is not a git repository", dir.display()))?;
    Ok(repo)
}

fn same_path(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Add `pattern` to `.git/info/exclude` once.
pub fn ensure_excluded(repo: &Repository, pattern: &str) -> anyhow::Result<()> {
    let path = repo.path().join("info").join("exclude");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current.lines().any(|l| l.trim() == pattern) {
        return Ok(());
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(pattern);
    text.push('\n');
    crate::fsutil::write_atomic(&path, text.as_bytes())
}

/// Make merges ignore the repository's own merge attributes: a committed
/// `.gitattributes` (say `features.json merge=union`) must not choose how a
/// session's work is merged. `.git/info/attributes` comes before every
/// in-tree file, its last matching line wins, and `merge=text` is the
/// default line merge.
pub fn ensure_plain_merges(repo: &Repository) -> anyhow::Result<()> {
    const LINE: &str = "* merge=text";
    let path = repo.path().join("info").join("attributes");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current.lines().last().map(str::trim) == Some(LINE) {
        return Ok(());
    }
    let mut text = String::new();
    for l in current.lines().filter(|l| l.trim() != LINE) {
        text.push_str(l);
        text.push('\n');
    }
    text.push_str(LINE);
    text.push('\n');
    crate::fsutil::write_atomic(&path, text.as_bytes())
}

/// The commit `main` points at, if any.
pub fn main_head(repo: &Repository) -> anyhow::Result<Option<Oid>> {
    match repo.find_branch(MAIN, BranchType::Local) {
        Ok(branch) => Ok(branch.get().target()),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e).context("failed to read the main branch"),
    }
}

/// Commit the given paths of the work tree onto `main` (which may be unborn).
pub fn commit_paths(repo: &Repository, paths: &[&str], message: &str) -> anyhow::Result<Oid> {
    let mut index = repo.index()?;
    for p in paths {
        index
            .add_path(Path::new(p))
            .with_context(|| format!("failed to stage {p}"))?;
    }
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let parent = main_head(repo)?
        .map(|oid| repo.find_commit(oid))
        .transpose()?;
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let sig = signature()?;
    let oid = repo.commit(Some(MAIN_REF), &sig, &sig, message, &tree, &parents)?;
    if repo.head_detached().unwrap_or(false) || repo.head().is_err() {
        repo.set_head(MAIN_REF)?;
    }
    Ok(oid)
}

/// Point `refname` at `oid`.
pub fn set_ref(repo: &Repository, refname: &str, oid: Oid, why: &str) -> anyhow::Result<()> {
    repo.reference(refname, oid, true, why)?;
    Ok(())
}

/// What main would hold if `work` were merged now: `work` itself when it
/// descends from main, else a merge commit (on no ref) of main and `work`.
/// `Err` names the conflicting paths.
pub fn merge_candidate(repo: &Repository, work: Oid) -> anyhow::Result<Result<Oid, String>> {
    let main = main_head(repo)?.context("main has no commits")?;
    if work == main || repo.graph_descendant_of(work, main)? {
        return Ok(Ok(work));
    }
    let (main_commit, work_commit) = (repo.find_commit(main)?, repo.find_commit(work)?);
    let mut index = repo.merge_commits(&main_commit, &work_commit, None)?;
    if index.has_conflicts() {
        return Ok(Err(conflict_paths(&index)?.join(", ")));
    }
    let tree = repo.find_tree(index.write_tree_to(repo)?)?;
    let sig = signature()?;
    let oid = repo.commit(
        None,
        &sig,
        &sig,
        "longrun: merge candidate",
        &tree,
        &[&main_commit, &work_commit],
    )?;
    Ok(Ok(oid))
}

fn conflict_paths(index: &git2::Index) -> anyhow::Result<Vec<String>> {
    Ok(index
        .conflicts()?
        .filter_map(|c| c.ok())
        .filter_map(|c| {
            c.our
                .or(c.their)
                .map(|e| String::from_utf8_lossy(&e.path).to_string())
        })
        .collect())
}

/// Record an accepted session: a merge commit of `work` into main, first parent main.
/// Fails, changing nothing, when the merge conflicts.
pub fn record_merge(repo: &Repository, work: Oid, message: &str) -> anyhow::Result<Oid> {
    let main = main_head(repo)?.context("main has no commits")?;
    let main_commit = repo.find_commit(main)?;
    let work_commit = repo.find_commit(work)?;
    let tree_id = if repo.graph_descendant_of(work, main)? {
        work_commit.tree_id()
    } else {
        let mut index = repo.merge_commits(&main_commit, &work_commit, None)?;
        if index.has_conflicts() {
            bail!("merge conflict in {}", conflict_paths(&index)?.join(", "));
        }
        index.write_tree_to(repo)?
    };
    let tree = repo.find_tree(tree_id)?;
    let sig = signature()?;
    let oid = repo.commit(
        None,
        &sig,
        &sig,
        message,
        &tree,
        &[&main_commit, &work_commit],
    )?;
    advance_main(repo, main, oid)?;
    Ok(oid)
}

/// Record a session that was not accepted: an empty commit on main.
pub fn record_empty(repo: &Repository, message: &str) -> anyhow::Result<Oid> {
    let main = main_head(repo)?.context("main has no commits")?;
    let main_commit = repo.find_commit(main)?;
    let tree = main_commit.tree()?;
    let sig = signature()?;
    let oid = repo.commit(None, &sig, &sig, message, &tree, &[&main_commit])?;
    advance_main(repo, main, oid)?;
    Ok(oid)
}

/// Record a person's change: a commit of `tree` on top of `main`, which
/// must still be where it was read.
pub fn record_tree(repo: &Repository, main: Oid, tree: Oid, message: &str) -> anyhow::Result<Oid> {
    let main_commit = repo.find_commit(main)?;
    let tree = repo.find_tree(tree)?;
    let sig = signature()?;
    let oid = repo.commit(None, &sig, &sig, message, &tree, &[&main_commit])?;
    advance_main(repo, main, oid)?;
    Ok(oid)
}

/// Move main from `old` to `new`. The ref update is the single point where
/// the change lands; the project's work tree follows after it.
fn advance_main(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<()> {
    repo.reference_matching(MAIN_REF, new, true, old, "longrun: record session")
        .context("main moved while a session was recorded")?;
    if let Err(e) = sync_worktree(repo, old, new) {
        tracing::warn!("the project's work tree could not follow main: {e:#}");
    }
    Ok(())
}

/// Bring the project's work tree from commit `old` to `new` when main is checked
/// out: every changed path whose file still holds `old`'s content gets `new`'s.
/// Files the user edited are left alone. Idempotent, so recovery can run it again
/// after a crash between the ref update and the files.
///
/// The trees came from sessions, so the work tree is written as data: only
/// regular files, never through a symlink (each path component is opened
/// without following one), never under `.git/` or `.longrun/`. A symlink in
/// `new` is not made here (`git checkout` makes it when the user wants it).
pub fn sync_worktree(repo: &Repository, old: Oid, new: Oid) -> anyhow::Result<()> {
    let on_main = repo
        .head()
        .ok()
        .and_then(|h| h.name().map(|n| n == MAIN_REF))
        .unwrap_or(false);
    let Some(workdir) = repo.workdir() else {
        return Ok(());
    };
    if !on_main || old == new {
        return Ok(());
    }
    let old_tree = repo.find_commit(old)?.tree()?;
    let new_tree = repo.find_commit(new)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
    let tree = crate::fsutil::Beneath::open(workdir)?;
    for delta in diff.deltas() {
        let Some(path) = delta.new_file().path().or(delta.old_file().path()) else {
            continue;
        };
        if path
            .components()
            .any(|c| crate::rules::is_reserved_name(c.as_os_str().as_encoded_bytes()))
        {
            tracing::warn!("not syncing the reserved path {}", path.display());
            continue;
        }
        if let Err(e) = sync_path(repo, &tree, path, &delta) {
            tracing::warn!("the work tree keeps {}: {e:#}", path.display());
        }
    }
    follow_in_index(repo, &diff)
}

/// Set the project's index to the new side of `diff` at each path it
/// changes, leaving every other entry (and its stat data, so that `git
/// status` need not read those files again) as it was.
fn follow_in_index(repo: &Repository, diff: &git2::Diff) -> anyhow::Result<()> {
    let mut index = repo.index()?;
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file(), delta.new_file());
        if let Some(path) = old.path().filter(|_| old.exists()) {
            index.remove_path(path)?;
        }
        let Some(path) = new.path().filter(|_| new.exists()) else {
            continue;
        };
        let path = path.as_os_str().as_encoded_bytes();
        index.add(&crate::git::index_entry(
            path,
            new.id(),
            u32::from(new.mode()),
        ))?;
    }
    index.write()?;
    Ok(())
}

/// One changed path of [`sync_worktree`].
fn sync_path(
    repo: &Repository,
    tree: &crate::fsutil::Beneath,
    path: &Path,
    delta: &git2::DiffDelta,
) -> anyhow::Result<()> {
    let blob = |file: git2::DiffFile| -> Option<Vec<u8>> {
        let regular = matches!(
            file.mode(),
            git2::FileMode::Blob | git2::FileMode::BlobExecutable
        );
        (regular && !file.id().is_zero())
            .then(|| repo.find_blob(file.id()).ok().map(|b| b.content().to_vec()))
            .flatten()
    };
    let (before, after) = (blob(delta.old_file()), blob(delta.new_file()));
    // A symlink or anything but a regular file where a file was is the user's: left alone.
    let current = tree.read(path)?;
    if current == after || current != before {
        return Ok(());
    }
    match after {
        Some(bytes) => {
            let exec = delta.new_file().mode() == git2::FileMode::BlobExecutable;
            tree.write(path, &bytes, if exec { 0o755 } else { 0o644 })
        }
        None => tree.remove_file(path),
    }
}

/// Finish a work-tree update a crash may have cut short: sync from main's
/// first parent to main.
pub fn resync_worktree(repo: &Repository) -> anyhow::Result<()> {
    let Some(head) = main_head(repo)? else {
        return Ok(());
    };
    let commit = repo.find_commit(head)?;
    match commit.parent_id(0) {
        Ok(parent) => sync_worktree(repo, parent, head),
        Err(_) => Ok(()),
    }
}

/// One commit of main's first-parent history.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub id: Oid,
    pub time: i64,
    pub summary: String,
    pub trailers: Vec<(String, String)>,
}

impl LogEntry {
    pub fn trailer(&self, key: &str) -> Option<&str> {
        self.trailers
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    pub fn trailers_all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.trailers
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// main's first-parent history, oldest first.
pub fn first_parent_log(repo: &Repository) -> anyhow::Result<Vec<LogEntry>> {
    let Some(head) = main_head(repo)? else {
        return Ok(Vec::new());
    };
    let mut walk = repo.revwalk()?;
    walk.push(head)?;
    walk.simplify_first_parent()?;
    walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::REVERSE)?;
    let mut entries = Vec::new();
    for oid in walk {
        entries.push(log_entry(&repo.find_commit(oid?)?));
    }
    Ok(entries)
}

/// A commit as a log entry: its summary and trailers.
pub fn log_entry(commit: &git2::Commit) -> LogEntry {
    let message = commit.message().unwrap_or("");
    let trailers = git2::message_trailers_strs(message)
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default();
    LogEntry {
        id: commit.id(),
        time: commit.time().seconds(),
        summary: commit.summary().unwrap_or("").to_string(),
        trailers,
    }
}

/// The project directory's real path (the work dir of its repo).
pub fn workdir(repo: &Repository) -> anyhow::Result<PathBuf> {
    repo.workdir()
        .map(Path::to_path_buf)
        .context("the project repository has no work tree")
}

/// Stash the work tree's changes to tracked files (`git stash push`), as the
/// user would, so that `git stash pop` brings them back.
pub fn stash(dir: &Path, message: &str) -> anyhow::Result<Oid> {
    let mut repo = Repository::open(dir)?;
    let sig = signature()?;
    repo.stash_save(&sig, message, Some(git2::StashFlags::DEFAULT))
        .context("failed to stash the uncommitted changes")
}
