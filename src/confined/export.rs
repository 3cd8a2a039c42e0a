//! The hidden `__export` subcommand: a session's work handed back as data.
//!
//! After the worker exits, the orchestrator starts this confined with the
//! session's own sandbox spec. Inside it, and only here, the session's git
//! metadata is opened: what was left uncommitted is committed as WIP, and
//! the objects reachable from HEAD but not from the session's base are
//! written to stdout as a git pack, after one JSON header line
//! ([`ExportHeader`]). The orchestrator never opens the workspace's `.git`;
//! it indexes the pack into a quarantine, checks it, and only then gives it
//! a ref. Whatever the session did to its repository (garbage HEAD, a `.git`
//! file pointing elsewhere, `core.worktree`, `commondir`, corrupt objects)
//! ends here as an error on stderr and a failed exit.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context};
use git2::{IndexAddOption, Oid, Repository, RepositoryOpenFlags};

use crate::protocol::{ExportHeader, EXPORT_OVER_CAP};
use crate::sandbox::SandboxSpec;

/// The bounds the orchestrator set.
#[derive(Debug, Clone, Copy)]
pub struct ExportCaps {
    pub max_bytes: u64,
    pub max_file_bytes: u64,
}

pub fn run_export(spec_json: &str, base: &str, caps: ExportCaps) -> ExitCode {
    match export(spec_json, base, caps) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e:#}");
            match e.downcast_ref::<OverCap>() {
                Some(_) => ExitCode::from(EXPORT_OVER_CAP),
                None => ExitCode::from(1),
            }
        }
    }
}

#[derive(Debug)]
struct OverCap(u64);

impl std::fmt::Display for OverCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the work's pack is over {} bytes", self.0)
    }
}

impl std::error::Error for OverCap {}

fn export(spec_json: &str, base: &str, caps: ExportCaps) -> anyhow::Result<()> {
    let spec: SandboxSpec = serde_json::from_str(spec_json).context("bad sandbox spec")?;
    crate::sandbox::confine(&spec).context("cannot confine the export")?;
    let base = Oid::from_str(base).context("bad base commit")?;
    let repo = open_plain(&spec.workspace)?;
    let (wip, dropped) = commit_wip(&repo, caps.max_file_bytes)?;
    let head = repo
        .head()
        .ok()
        .and_then(|h| h.target())
        .context("HEAD does not name a commit")?;
    repo.find_commit(head)
        .context("HEAD does not name a commit")?;
    let header = ExportHeader {
        head: head.to_string(),
        wip,
        dropped,
    };
    let mut out = std::io::stdout().lock();
    let mut line = serde_json::to_vec(&header)?;
    line.push(b'\n');
    out.write_all(&line)?;
    write_pack(&repo, head, base, caps.max_bytes, &mut out)?;
    out.flush()?;
    Ok(())
}

/// The repository at exactly `workspace/.git`, with its work tree at
/// `workspace` and no other place behind it: a `.git` file, `core.worktree`,
/// a `commondir` or a linked worktree are refused, naming what was found.
fn open_plain(workspace: &Path) -> anyhow::Result<Repository> {
    let dotgit = workspace.join(".git");
    let meta = std::fs::symlink_metadata(&dotgit).context("the workspace has no .git")?;
    if !meta.is_dir() {
        bail!("the workspace's .git is not a directory (a .git file or symlink points elsewhere)");
    }
    if dotgit.join("commondir").exists() {
        bail!("the workspace's .git has a commondir file (it borrows another repository)");
    }
    // Named before opening: libgit2 may refuse a foreign work tree first,
    // for its owner, which says less.
    let config = git2::Config::open(&dotgit.join("config"));
    if config.is_ok_and(|c| c.get_entry("core.worktree").is_ok()) {
        bail!("the workspace's repository has its work tree elsewhere (core.worktree)");
    }
    let repo = Repository::open_ext(
        &dotgit,
        RepositoryOpenFlags::NO_SEARCH | RepositoryOpenFlags::NO_DOTGIT,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .context("the workspace's .git cannot be opened as a repository")?;
    let real = |p: &Path| p.canonicalize().ok();
    if repo.is_bare() || repo.is_worktree() {
        bail!("the workspace's repository is bare or a linked worktree");
    }
    if repo.workdir().and_then(real) != real(workspace) {
        bail!("the workspace's repository has its work tree elsewhere (core.worktree)");
    }
    if real(repo.path()) != real(&dotgit) || real(repo.commondir()) != real(&dotgit) {
        bail!("the workspace's repository keeps its data elsewhere (gitdir or commondir)");
    }
    Ok(repo)
}

/// Commit what was left uncommitted, as WIP, leaving out untracked build
/// output and files over `max_file_bytes` (named, with their size).
fn commit_wip(repo: &Repository, max_file_bytes: u64) -> anyhow::Result<(bool, Vec<String>)> {
    if crate::git::uncommitted_paths(repo)?.is_empty() {
        return Ok((false, Vec::new()));
    }
    let workdir = repo.workdir().context("no work tree")?.to_path_buf();
    let mut dropped = Vec::new();
    let mut skip = |path: &Path, _spec: &[u8]| -> i32 {
        let text = path.to_string_lossy();
        let size = std::fs::symlink_metadata(workdir.join(path))
            .map(|m| m.len())
            .unwrap_or(0);
        if size > max_file_bytes {
            dropped.push(format!("{text} ({size} bytes)"));
            return 1;
        }
        i32::from(crate::git::is_build_output(&text) && !tracked(repo, path))
    };
    let mut index = repo.index().context("the index cannot be read")?;
    index
        .add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip))
        .context("the work tree cannot be staged")?;
    index
        .update_all(["*"], Some(&mut skip))
        .context("the work tree cannot be staged")?;
    index.write().context("the index cannot be written")?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let parent = crate::git::head(repo)
        .map(|oid| repo.find_commit(oid))
        .transpose()
        .context("HEAD does not name a commit")?;
    if parent.as_ref().is_some_and(|p| p.tree_id() == tree.id()) {
        return Ok((false, dropped));
    }
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    let sig = git2::Signature::now("longrun", "longrun@localhost")?;
    repo.commit(
        Some("HEAD"),
        &sig,
        &sig,
        "longrun: WIP left uncommitted by the session",
        &tree,
        &parents,
    )
    .context("the WIP commit failed")?;
    Ok((true, dropped))
}

fn tracked(repo: &Repository, path: &Path) -> bool {
    repo.index()
        .ok()
        .is_some_and(|i| i.get_path(path, 0).is_some())
}

/// The objects reachable from `head` and not from `base`, as one pack.
fn write_pack(
    repo: &Repository,
    head: Oid,
    base: Oid,
    max_bytes: u64,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let mut walk = repo.revwalk()?;
    walk.push(head)
        .context("the history behind HEAD is unreadable")?;
    if repo.find_commit(base).is_ok() {
        walk.hide(base)?;
    }
    let mut pack = repo.packbuilder()?;
    pack.insert_walk(&mut walk)
        .context("the session's objects cannot be packed (missing or corrupt)")?;
    let mut written: u64 = 0;
    let mut failed: Option<anyhow::Error> = None;
    let done = pack.foreach(|chunk| {
        written += chunk.len() as u64;
        if written > max_bytes {
            failed = Some(OverCap(max_bytes).into());
            return false;
        }
        match out.write_all(chunk) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(e.into());
                false
            }
        }
    });
    match failed {
        Some(e) => Err(e),
        None => done.context("the pack cannot be written"),
    }
}
