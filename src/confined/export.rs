//! The hidden `__export` subcommand: a session's work handed back as data.
//!
//! After the worker exits, the orchestrator starts this confined with the
//! session's own sandbox spec. Inside it, and only here, the session's git
//! metadata is opened: what was left uncommitted is committed as WIP (in an
//! overlay workspace, looking only where the orchestrator says the session
//! changed something, and where the index differs from the base), and
//! the objects reachable from HEAD but not from the session's base are
//! written to stdout as a git pack, after one JSON header line
//! ([`ExportHeader`]). The orchestrator never opens the workspace's `.git`;
//! it indexes the pack into a quarantine, checks it, and only then gives it
//! a ref. Whatever the session did to its repository (garbage HEAD, a `.git`
//! file pointing elsewhere, `core.worktree`, `commondir`, corrupt objects)
//! ends here as an error on stderr and a failed exit.

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context};
use git2::{IndexAddOption, Oid, Repository, RepositoryOpenFlags};

use crate::protocol::{ExportHeader, EXPORT_OVER_CAP};
use crate::sandbox::SandboxSpec;

/// The bounds the orchestrator set, and where the changes are.
#[derive(Debug, Clone, Copy)]
pub struct ExportCaps {
    pub max_bytes: u64,
    pub max_file_bytes: u64,
    /// Stdin holds the paths the session changed ([`Scope::Changed`]).
    pub changed_on_stdin: bool,
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
    // Read before confinement, which keeps stdin but nothing behind it.
    let scope = match caps.changed_on_stdin {
        true => Scope::read(std::io::stdin().lock())?,
        false => Scope::Whole,
    };
    crate::sandbox::confine(&spec).context("cannot confine the export")?;
    let base = Oid::from_str(base).context("bad base commit")?;
    let repo = open_plain(&spec.workspace)?;
    let (wip, dropped) = commit_wip(&repo, &scope, base, caps.max_file_bytes)?;
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
    // Whole blocks: a bare stdout writes at every newline the pack holds.
    let mut out = std::io::BufWriter::with_capacity(1 << 18, std::io::stdout().lock());
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

/// Which paths of the work tree may hold what was left uncommitted.
#[derive(Debug)]
pub enum Scope {
    /// Any: the whole work tree is compared with the index.
    Whole,
    /// These (relative, `/`-separated, each a file or everything beneath a
    /// directory), as the orchestrator read them from an overlay
    /// workspace's upper layer ([`crate::trusted`]'s `upper`), besides
    /// where the index differs from the base: everywhere else the work
    /// tree is the lower layer, a checkout of the base.
    Changed(Vec<Vec<u8>>),
}

impl Scope {
    /// The paths on `input`, each ended by a NUL.
    pub fn read(mut input: impl std::io::Read) -> anyhow::Result<Scope> {
        let mut bytes = Vec::new();
        input
            .read_to_end(&mut bytes)
            .context("cannot read the changed paths")?;
        let paths = bytes
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        Ok(Scope::Changed(paths))
    }
}

/// Commit what was left uncommitted, as WIP, leaving out untracked build
/// output and files over `max_file_bytes` (named, with their size).
fn commit_wip(
    repo: &Repository,
    scope: &Scope,
    base: Oid,
    max_file_bytes: u64,
) -> anyhow::Result<(bool, Vec<String>)> {
    let workdir = repo.workdir().context("no work tree")?.to_path_buf();
    let mut dropped = Vec::new();
    let mut leave_out = |path: &Path, tracked: bool| -> bool {
        let text = path.to_string_lossy();
        let size = std::fs::symlink_metadata(workdir.join(path))
            .map(|m| m.len())
            .unwrap_or(0);
        if size > max_file_bytes {
            let line = format!("{text} ({size} bytes)");
            if !dropped.contains(&line) {
                dropped.push(line);
            }
            return true;
        }
        crate::git::is_build_output(&text) && !tracked
    };
    let mut index = repo.index().context("the index cannot be read")?;
    let staged = match scope {
        Scope::Whole => stage_whole(repo, &mut index, &mut leave_out)?,
        Scope::Changed(paths) => stage_changed(repo, &mut index, base, paths, &mut leave_out)?,
    };
    match staged {
        Staged::Nothing => return Ok((false, dropped)),
        // Written back only when staging changed it: a session that
        // committed its work leaves an index of its HEAD's tree, and
        // writing a thousand entries back unchanged costs every session.
        Staged::Applied => index.write().context("the index cannot be written")?,
        Staged::Unchanged => {}
    }
    // From the index's cached trees where staging left them valid (libgit2
    // drops those along each path it stages). They are the session's
    // writing, like everything here: whatever tree the WIP commit gets is
    // exported, checked object by object and verified like any commit of it.
    let tree = index.write_tree()?;
    let parent = crate::git::head(repo)
        .map(|oid| repo.find_commit(oid))
        .transpose()
        .context("HEAD does not name a commit")?;
    if parent.as_ref().is_some_and(|p| p.tree_id() == tree) {
        return Ok((false, dropped));
    }
    let tree = repo.find_tree(tree)?;
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

/// What staging did to the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Staged {
    /// Nothing was left uncommitted: the index is HEAD's tree.
    Nothing,
    /// Nothing was staged, but the index may differ from HEAD's tree.
    Unchanged,
    /// Changes from the work tree were staged into the index.
    Applied,
}

/// What `leave_out` says of a path (relative to the work tree) and whether
/// the index tracks it: true keeps it out of the WIP commit.
type LeaveOut<'a> = dyn FnMut(&Path, bool) -> bool + 'a;

/// Stage the whole work tree, as `git add -A` would.
fn stage_whole(
    repo: &Repository,
    index: &mut git2::Index,
    leave_out: &mut LeaveOut,
) -> anyhow::Result<Staged> {
    if crate::git::uncommitted_paths(repo)?.is_empty() {
        return Ok(Staged::Nothing);
    }
    let mut skip =
        |path: &Path, _spec: &[u8]| -> i32 { i32::from(leave_out(path, tracked(repo, path))) };
    index
        .add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip))
        .context("the work tree cannot be staged")?;
    index
        .update_all(["*"], Some(&mut skip))
        .context("the work tree cannot be staged")?;
    Ok(Staged::Applied)
}

/// Stage what differs between the index and the work tree at the paths
/// that can differ, as `git add -A` over the whole tree would: the paths
/// the session changed (`changed`), and those where the index differs from
/// `base`, whose work tree is the base's. libgit2 then reads only beneath
/// them.
fn stage_changed(
    repo: &Repository,
    index: &mut git2::Index,
    base: Oid,
    changed: &[Vec<u8>],
    leave_out: &mut LeaveOut,
) -> anyhow::Result<Staged> {
    let Ok(base_tree) = repo.find_commit(base).and_then(|c| c.tree()) else {
        // Without the base, the index cannot be compared with the lower layer.
        return stage_whole(repo, index, leave_out);
    };
    let mut paths: std::collections::BTreeSet<Vec<u8>> = changed.iter().cloned().collect();
    let staged = repo
        .diff_tree_to_index(Some(&base_tree), Some(index), None)
        .context("the index cannot be read")?;
    for delta in staged.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            paths.extend(file.path_bytes().map(<[u8]>::to_vec));
        }
    }
    for conflict in index.conflicts().context("the index cannot be read")? {
        let conflict = conflict.context("the index cannot be read")?;
        for side in [conflict.ancestor, conflict.our, conflict.their]
            .into_iter()
            .flatten()
        {
            paths.insert(side.path);
        }
    }
    // The index is HEAD's tree when it is the base's, and HEAD is the base's.
    let head = crate::git::head(repo).and_then(|h| repo.find_commit(h).ok());
    let index_is_head =
        head.is_some_and(|h| h.tree_id() == base_tree.id()) && staged.deltas().next().is_none();
    if paths.is_empty() {
        // (An empty pathspec would compare the whole tree.)
        return Ok(unchanged(index_is_head));
    }
    // A path whose file is as the index holds it by its stat data, or
    // plainly added or deleted, is settled here; libgit2 compares the rest
    // (directories, type changes, files whose stat data differ) beneath
    // them alone: its comparison reads every entry of the index and of each
    // directory it enters, the whole tree for paths all over it.
    let workdir = repo.workdir().context("no work tree")?.to_path_buf();
    let racy_from = index_mtime(repo);
    let mut applied = false;
    let mut compared: Vec<&Vec<u8>> = Vec::new();
    for path in &paths {
        if compared.iter().any(|c| beneath(path, c)) {
            continue;
        }
        match settle(repo, index, &workdir, path, racy_from, leave_out)? {
            Settled::Staged => applied = true,
            Settled::Same => {}
            Settled::Compare => compared.push(path),
        }
    }
    if compared.is_empty() {
        return Ok(match applied {
            true => Staged::Applied,
            false => unchanged(index_is_head),
        });
    }
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_typechange(true)
        .disable_pathspec_match(true);
    for path in compared {
        opts.pathspec(path.clone());
    }
    let diff = repo
        .diff_index_to_workdir(Some(index), Some(&mut opts))
        .context("the work tree cannot be compared with the index")?;
    // As libgit2's own `add_all` applies its comparison of the whole tree.
    for delta in diff.deltas() {
        let old = Path::new(OsStr::from_bytes(
            delta.old_file().path_bytes().unwrap_or_default(),
        ));
        let tracked = index.get_path(old, 0).is_some();
        if leave_out(old, tracked) {
            continue;
        }
        applied = true;
        let staged = match delta.new_file().exists() {
            true => {
                let new = delta.new_file().path_bytes().unwrap_or_default();
                index.add_path(Path::new(OsStr::from_bytes(new)))
            }
            false => index.remove_path(old),
        };
        staged.context("the work tree cannot be staged")?;
    }
    Ok(match applied {
        true => Staged::Applied,
        false => unchanged(index_is_head),
    })
}

/// What [`settle`] made of one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// The work tree holds what the index does (or nothing staging takes).
    Same,
    /// The file was added, updated or removed in the index.
    Staged,
    /// For libgit2's comparison, beneath this path.
    Compare,
}

/// Stage one path as `git add -A` would where that takes no comparison
/// of content: a regular file or symlink under real directories, where
/// the index holds a file or nothing and no directory. A tracked file whose
/// stat data (size, modification time, inode, mode) are exactly the index
/// entry's, and written before the index was, is the same (git's own test);
/// a file the index lacks is added unless ignored; a missing one removed.
/// Anything else is left to libgit2's comparison.
fn settle(
    repo: &Repository,
    index: &mut git2::Index,
    workdir: &Path,
    path: &[u8],
    racy_from: Option<(i64, i64)>,
    leave_out: &mut LeaveOut,
) -> anyhow::Result<Settled> {
    use std::os::unix::fs::MetadataExt;
    let rel = Path::new(OsStr::from_bytes(path));
    let real_dirs = path
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'/')
        .all(|(i, _)| {
            let dir = workdir.join(OsStr::from_bytes(&path[..i]));
            std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        });
    let mut below = path.to_vec();
    below.push(b'/');
    let conflicted = (1..=3).any(|stage| index.get_path(rel, stage).is_some());
    if !real_dirs || conflicted || index.find_prefix(OsStr::from_bytes(&below)).is_ok() {
        return Ok(Settled::Compare);
    }
    let entry = index.get_path(rel, 0);
    let meta = match std::fs::symlink_metadata(workdir.join(rel)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if entry.is_none() || leave_out(rel, true) {
                return Ok(Settled::Same);
            }
            index
                .remove_path(rel)
                .context("the work tree cannot be staged")?;
            return Ok(Settled::Staged);
        }
        Err(_) => return Ok(Settled::Compare),
        Ok(meta) if meta.is_file() || meta.is_symlink() => meta,
        Ok(_) => return Ok(Settled::Compare),
    };
    let Some(entry) = entry else {
        let ignored = repo
            .status_should_ignore(rel)
            .context("the work tree cannot be staged")?;
        if ignored || leave_out(rel, false) {
            return Ok(Settled::Same);
        }
        index
            .add_path(rel)
            .context("the work tree cannot be staged")?;
        return Ok(Settled::Staged);
    };
    let mode = match meta.is_symlink() {
        true => 0o120000,
        false if meta.mode() & 0o100 != 0 => 0o100755,
        false => 0o100644,
    };
    // The index keeps the low 32 bits of each.
    let mtime = (
        i64::from(entry.mtime.seconds() as u32),
        i64::from(entry.mtime.nanoseconds()),
    );
    let same = entry.mode == mode
        && u64::from(entry.file_size) == meta.len() & 0xffff_ffff
        && u64::from(entry.ino) == meta.ino() & 0xffff_ffff
        && mtime == (meta.mtime() & 0xffff_ffff, meta.mtime_nsec())
        && racy_from.is_some_and(|index_time| mtime < index_time);
    Ok(match same {
        true => Settled::Same,
        false => Settled::Compare,
    })
}

/// When the index file was last written: entries modified at or after it
/// may have changed since without their stat data showing it ("racy git").
fn index_mtime(repo: &Repository) -> Option<(i64, i64)> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(repo.path().join("index")).ok()?;
    Some((meta.mtime() & 0xffff_ffff, meta.mtime_nsec()))
}

/// `path` is `dir` or lies beneath it.
fn beneath(path: &[u8], dir: &[u8]) -> bool {
    path.strip_prefix(dir)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(b"/"))
}

/// Nothing staged: whether anything at all was left uncommitted.
fn unchanged(index_is_head: bool) -> Staged {
    match index_is_head {
        true => Staged::Nothing,
        false => Staged::Unchanged,
    }
}

fn tracked(repo: &Repository, path: &Path) -> bool {
    repo.index()
        .ok()
        .is_some_and(|i| i.get_path(path, 0).is_some())
}

/// The objects reachable from `head` and not from `base`, as one git pack
/// (version 2, every object whole, deflated at zlib's fastest level):
/// the commits, and for each what its tree holds that its first parent's
/// does not at the same path. The first parent's objects are in the
/// project's store or in the pack already; the orchestrator checks that
/// whatever arrives is complete. libgit2's pack builder also marked every
/// entry of the base's trees, searched for deltas and deflated at zlib's
/// default level: 3.5 ms a session, 4.3 at a thousand files.
fn write_pack(
    repo: &Repository,
    head: Oid,
    base: Oid,
    max_bytes: u64,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let ids = pack_objects(repo, head, base)?;
    let odb = repo.odb()?;
    let mut pack = Pack {
        out,
        hash: sha1::Sha1::default(),
        written: 0,
        max_bytes,
        over: false,
    };
    let count = u32::try_from(ids.len()).context("too many objects for one pack")?;
    // One deflate state for all: zlib's is a quarter of a megabyte, set up anew per object.
    let mut zlib = flate2::Compress::new(flate2::Compression::fast(), true);
    let mut deflated = Vec::new();
    let wrote = (|| -> anyhow::Result<()> {
        pack.write_all(b"PACK")?;
        pack.write_all(&2u32.to_be_bytes())?;
        pack.write_all(&count.to_be_bytes())?;
        let mut unpacked: u64 = 0;
        for id in ids {
            // Counted before it is read: a loose object of zeros can unpack to
            // a thousand times its size on disk.
            let (size, _) = odb
                .read_header(id)
                .context("the session's objects cannot be packed (missing or corrupt)")?;
            unpacked = unpacked.saturating_add(size as u64);
            if unpacked > max_bytes {
                return Err(OverCap(max_bytes).into());
            }
            let object = odb
                .read(id)
                .context("the session's objects cannot be packed (missing or corrupt)")?;
            let kind = match object.kind() {
                git2::ObjectType::Commit => 1,
                git2::ObjectType::Tree => 2,
                git2::ObjectType::Blob => 3,
                git2::ObjectType::Tag => 4,
                other => bail!("the session's object {id} is a {other}, which no pack holds"),
            };
            pack.write_all(&object_header(kind, object.len()))?;
            deflated.clear();
            deflate(&mut zlib, object.data(), &mut deflated)?;
            pack.write_all(&deflated)?;
        }
        let digest = sha1::Digest::finalize(pack.hash.clone());
        pack.write_all(&digest)?;
        Ok(())
    })();
    match (wrote, pack.over) {
        (Err(e), _) if e.is::<OverCap>() => Err(e),
        (_, true) => Err(OverCap(max_bytes).into()),
        (Err(e), false) => Err(e.context("the pack cannot be written")),
        (Ok(()), false) => Ok(()),
    }
}

/// `data` deflated into `out` as one zlib stream, `zlib` used from its start.
fn deflate(zlib: &mut flate2::Compress, data: &[u8], out: &mut Vec<u8>) -> anyhow::Result<()> {
    zlib.reset();
    out.reserve(data.len() / 2 + 64);
    loop {
        let read = usize::try_from(zlib.total_in()).unwrap_or(usize::MAX);
        let rest = data.get(read..).unwrap_or_default();
        match zlib.compress_vec(rest, out, flate2::FlushCompress::Finish)? {
            flate2::Status::StreamEnd => return Ok(()),
            _ => out.reserve(out.capacity().max(4096)),
        }
    }
}

/// A pack's object header: its type and inflated size, seven bits a byte
/// after the first four.
fn object_header(kind: u8, size: usize) -> Vec<u8> {
    let mut size = size as u64;
    let mut bytes = vec![(kind << 4) | (size & 0x0f) as u8];
    size >>= 4;
    while size > 0 {
        if let Some(last) = bytes.last_mut() {
            *last |= 0x80;
        }
        bytes.push((size & 0x7f) as u8);
        size >>= 7;
    }
    bytes
}

/// Bytes on their way out: hashed for the pack's trailer and counted
/// against the cap.
struct Pack<'o, W: Write> {
    out: &'o mut W,
    hash: sha1::Sha1,
    written: u64,
    max_bytes: u64,
    over: bool,
}

impl<W: Write> Write for Pack<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.written += buf.len() as u64;
        if self.written > self.max_bytes {
            self.over = true;
            return Err(std::io::Error::other("over the cap"));
        }
        sha1::Digest::update(&mut self.hash, buf);
        self.out.write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// The commits from `head` down to `base` (left out, with its history),
/// then the trees and blobs each holds that its first parent does not.
fn pack_objects(repo: &Repository, head: Oid, base: Oid) -> anyhow::Result<Vec<Oid>> {
    let mut walk = repo.revwalk()?;
    walk.push(head)
        .context("the history behind HEAD is unreadable")?;
    if repo.find_commit(base).is_ok() {
        walk.hide(base)?;
    }
    let mut commits = Vec::new();
    let mut rest = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for oid in walk {
        let oid = oid.context("the history behind HEAD is unreadable")?;
        let commit = repo
            .find_commit(oid)
            .context("the session's objects cannot be packed (missing or corrupt)")?;
        commits.push(oid);
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let tree = commit
            .tree()
            .context("the session's objects cannot be packed (missing or corrupt)")?;
        new_in_tree(repo, &tree, parent.as_ref(), &mut seen, &mut rest)?;
    }
    commits.extend(rest);
    Ok(commits)
}

/// `tree` and what it holds that `parent` (the tree at the same path in
/// the first parent) does not hold the same, each once.
fn new_in_tree(
    repo: &Repository,
    tree: &git2::Tree,
    parent: Option<&git2::Tree>,
    seen: &mut std::collections::HashSet<Oid>,
    out: &mut Vec<Oid>,
) -> anyhow::Result<()> {
    if parent.is_some_and(|p| p.id() == tree.id()) || !seen.insert(tree.id()) {
        return Ok(());
    }
    out.push(tree.id());
    for (entry, before) in crate::git::changed_entries(tree, parent) {
        match entry.kind() {
            Some(git2::ObjectType::Tree) => {
                let sub = repo
                    .find_tree(entry.id())
                    .context("the session's objects cannot be packed (missing or corrupt)")?;
                let before = before
                    .filter(|b| b.kind() == Some(git2::ObjectType::Tree))
                    .and_then(|b| repo.find_tree(b.id()).ok());
                new_in_tree(repo, &sub, before.as_ref(), seen, out)?;
            }
            Some(git2::ObjectType::Blob) if seen.insert(entry.id()) => out.push(entry.id()),
            // Submodule commits live in other repositories.
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    /// Paths the random changes pick from: the base's and new ones, in
    /// directories, ignored, build output.
    const PATHS: [&str; 14] = [
        "a",
        "b.txt",
        "d",
        "d/x",
        "d/y",
        "d/e",
        "d/e/z",
        "run.sh",
        "link",
        "n/new",
        "t.log",
        "d/e/w.log",
        "__pycache__/m.pyc",
        "a.b",
    ];
    const TEXTS: [&str; 4] = ["1\n", "22\n", "333\n", "a bigger file, over the cap\n"];
    const CAP: u64 = 16;

    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    fn past(path: &Path) {
        let when = SystemTime::now() - Duration::from_secs(3600);
        let file = std::fs::File::options().write(true).open(path);
        if let Ok(file) = file {
            let _ = file.set_modified(when);
        }
    }

    /// A repository with a committed base whose index holds its files'
    /// stat data (written an hour ago, so not racy).
    fn base(dir: &Path) -> (Repository, Oid) {
        let repo = Repository::init(dir).unwrap();
        for (path, text) in [
            ("a", "a\n"),
            ("b.txt", "b\n"),
            ("d/x", "x\n"),
            ("d/y", "y\n"),
            ("d/e/z", "z\n"),
            ("run.sh", "#!/bin/sh\n"),
            (".gitignore", "*.log\n"),
        ] {
            let file = dir.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, text).unwrap();
            past(&file);
        }
        std::fs::set_permissions(dir.join("run.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::os::unix::fs::symlink("a", dir.join("link")).unwrap();
        let mut index = repo.index().unwrap();
        index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
        index.write().unwrap();
        let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@localhost").unwrap();
        let base = repo
            .commit(Some("HEAD"), &sig, &sig, "base", &tree, &[])
            .unwrap();
        drop(tree);
        (repo, base)
    }

    /// One random change to the work tree (its path is returned, as an
    /// overlay's upper layer would list it) or to the index and HEAD.
    fn change(repo: &Repository, rng: &mut Rng) -> Option<String> {
        let dir = repo.workdir().unwrap().to_path_buf();
        let path = PATHS[rng.below(PATHS.len())];
        let file = dir.join(path);
        let clear = |p: &Path| {
            let _ = std::fs::remove_file(p).or_else(|_| std::fs::remove_dir_all(p));
        };
        let kind = std::fs::symlink_metadata(&file).map(|m| m.file_type()).ok();
        let op = rng.below(8);
        // Written through, a symlink would change the file it names.
        if kind.is_some_and(|k| k.is_symlink()) && [2, 5].contains(&op) {
            return None;
        }
        match op {
            0 => {
                if kind.is_some_and(|k| !k.is_file()) {
                    clear(&file);
                }
                std::fs::create_dir_all(file.parent().unwrap()).ok()?;
                std::fs::write(&file, TEXTS[rng.below(TEXTS.len())]).ok()?;
            }
            1 => clear(&file),
            2 => {
                let mode = std::fs::metadata(&file).ok()?.permissions().mode() ^ 0o111;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).ok()?;
            }
            3 => {
                clear(&file);
                std::fs::create_dir_all(file.parent().unwrap()).ok()?;
                std::os::unix::fs::symlink("a", &file).ok()?;
            }
            4 => {
                clear(&file);
                std::fs::create_dir_all(&file).ok()?;
                std::fs::write(file.join("inner"), "inner\n").ok()?;
            }
            // Touched: the same content, new stat data.
            5 => {
                let text = std::fs::read(&file).ok()?;
                std::fs::write(&file, text).ok()?;
            }
            // Staged (as `git add` of that path would).
            6 => {
                let mut index = repo.index().unwrap();
                let rel = Path::new(path);
                let staged = match std::fs::symlink_metadata(&file) {
                    Ok(m) if !m.is_dir() => index.add_path(rel),
                    _ => index.remove_path(rel),
                };
                staged.ok()?;
                index.write().unwrap();
                return None;
            }
            // The index committed.
            _ => {
                let mut index = repo.index().unwrap();
                let tree = repo.find_tree(index.write_tree().ok()?).unwrap();
                let head = repo.head().unwrap().peel_to_commit().unwrap();
                let sig = git2::Signature::now("t", "t@localhost").unwrap();
                repo.commit(Some("HEAD"), &sig, &sig, "c", &tree, &[&head])
                    .unwrap();
                return None;
            }
        }
        Some(path.to_string())
    }

    /// What the WIP commit leaves at HEAD, what it says, and what it drops.
    fn wip(repo: &Repository, scope: &Scope, base: Oid) -> String {
        let said = commit_wip(repo, scope, base, CAP);
        let head = repo.head().unwrap().peel_to_commit().unwrap();
        format!("{said:?} {}", head.tree_id())
    }

    #[test]
    fn object_headers_are_as_git_writes_them() {
        assert_eq!(object_header(3, 0), [0x30]);
        assert_eq!(object_header(1, 15), [0x1f]);
        assert_eq!(object_header(2, 16), [0xa0, 0x01]);
        // 1,000,000 = 0x0f4240: 0 in four bits, then 0x2424 in sevens.
        assert_eq!(object_header(3, 1_000_000), [0xb0, 0xa4, 0xe8, 0x03]);
    }

    /// Every object of `commit`'s tree, read back from `repo`.
    fn read_all(repo: &Repository, tree: &git2::Tree) -> usize {
        let mut n = 0;
        for entry in tree.iter() {
            let object = repo.find_object(entry.id(), None).unwrap();
            if let Some(sub) = object.as_tree() {
                n += read_all(repo, sub);
            }
            n += 1;
        }
        n
    }

    #[test]
    fn packs_hold_what_a_repository_lacks_and_git_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        let (repo, base) = base(&work);
        // Changes deep and shallow, a file moved, a directory gone, a
        // blob written twice, over two commits.
        let sig = git2::Signature::now("t", "t@localhost").unwrap();
        let mut head = base;
        for step in [
            vec![("d/e/z", Some("z2\n")), ("n/m/k", Some("k\n")), ("a", None)],
            vec![
                ("d/x", None),
                ("d/y", None),
                ("q", Some("k\n")),
                ("big", Some(&*"j".repeat(70_000))),
            ],
        ] {
            for (path, text) in step {
                let file = work.join(path);
                match text {
                    Some(text) => {
                        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                        std::fs::write(&file, text).unwrap();
                    }
                    None => std::fs::remove_file(&file).unwrap(),
                }
            }
            let mut index = repo.index().unwrap();
            index.add_all(["*"], IndexAddOption::DEFAULT, None).unwrap();
            index.update_all(["*"], None).unwrap();
            let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
            let parent = repo.find_commit(head).unwrap();
            head = repo
                .commit(Some("HEAD"), &sig, &sig, "c", &tree, &[&parent])
                .unwrap();
        }
        // A fresh store takes the base's whole history, then the work.
        let store = Repository::init_bare(dir.path().join("store")).unwrap();
        let packs = store.path().join("objects/pack");
        let mut counts = Vec::new();
        for (to, from) in [(base, Oid::zero()), (head, base)] {
            let mut bytes = Vec::new();
            write_pack(&repo, to, from, u64::MAX, &mut bytes).unwrap();
            let odb = store.odb().unwrap();
            let mut indexer = git2::Indexer::new(Some(&odb), &packs, 0o444, true).unwrap();
            indexer.write_all(&bytes).unwrap();
            indexer.commit().unwrap();
            counts.push(pack_objects(&repo, to, from).unwrap().len());
        }
        // Base: a commit, three trees, eight blobs. The work: two commits,
        // their root trees, d twice, d/e once, n, n/m, and three blobs (z2,
        // k once though q holds it too, big).
        assert_eq!(counts, [12, 12]);
        let store = Repository::open_bare(store.path()).unwrap();
        let tree = store.find_commit(head).unwrap().tree().unwrap();
        assert_eq!(read_all(&store, &tree), 12);
        // Over the cap: said so, as its own error.
        let err = write_pack(&repo, head, base, 100, &mut Vec::new()).unwrap_err();
        assert!(err.downcast_ref::<OverCap>().is_some(), "{err:#}");
    }

    #[test]
    fn staging_the_changed_paths_commits_what_staging_the_whole_tree_does() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..200 {
            let dir = tempfile::tempdir().unwrap();
            let work = dir.path().join("work");
            let (repo, base) = base(&work);
            let mut changed = Vec::new();
            let mut steps = Vec::new();
            for _ in 0..1 + rng.below(6) {
                let before = steps.len();
                changed.extend(change(&repo, &mut rng));
                steps.push(changed.get(before..).map(<[String]>::to_vec));
            }
            let whole = dir.path().join("whole");
            let copied = std::process::Command::new("cp")
                .args(["-a"])
                .arg(&work)
                .arg(&whole)
                .status()
                .unwrap();
            assert!(copied.success());
            let paths = changed.iter().map(|p| p.as_bytes().to_vec()).collect();
            let by_paths = wip(&repo, &Scope::Changed(paths), base);
            let by_tree = wip(&Repository::open(&whole).unwrap(), &Scope::Whole, base);
            assert_eq!(by_paths, by_tree, "round {round}: changed {changed:?}");
        }
    }
}
