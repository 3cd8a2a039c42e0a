//! A session's workspace and its verification checkout, made by the
//! orchestrator before any session code runs in them.
//!
//! Each is a git repository whose objects come from the project's
//! `.git/objects` through `objects/info/alternates` (read-only in the
//! sandbox, never hard-linked). Where the sandbox can mount an overlay, the
//! tree is not written at all: the directory is the overlay's upper layer
//! over a cached checkout of a commit ([`super::checkout`]), and holds the
//! `.git` and only what differs from that commit (changed and new entries,
//! and a whiteout for each one gone), so making it costs what changed, not
//! what the tree holds. Otherwise the tree is written out into a fresh
//! directory, each name created with O_EXCL and O_NOFOLLOW beneath a
//! directory opened without following a symlink, and a large verification
//! checkout links the files it holds the same as main from the cached
//! checkout instead of writing them. Once a session has run in one, the
//! orchestrator never opens it with git again: the work comes back through
//! `__export` ([`crate::trusted::session::import`]).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use git2::{Oid, Repository};
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fchmod, mkdirat, mknodat, Mode, SFlag};
use nix::unistd::{linkat, symlinkat};

use crate::fsutil;
use crate::sandbox::SandboxSpec;
use crate::trusted::record::repo::{MAIN, MAIN_REF};
use crate::trusted::Project;

/// How the workspace's HEAD points at its commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Head {
    /// On branch `main` (a worker's workspace).
    Main,
    /// Detached (a verification checkout).
    Detached,
}

/// Make `dir` (removed first if it exists) a repository at `commit` of the
/// project, its objects shared read-only through alternates, its tree written out.
pub fn make(project_git: &Path, dir: &Path, commit: Oid, head: Head) -> anyhow::Result<()> {
    make_from(project_git, dir, commit, head, Fill::Whole).map(drop)
}

/// [`make`] as the upper layer of an overlay whose lower layer is a
/// checkout of `lower`: the `.git`, and only what `commit`'s tree holds
/// otherwise than `lower`'s. Returns how many entries were written
/// (whiteouts included).
pub fn make_upper(
    project_git: &Path,
    dir: &Path,
    commit: Oid,
    head: Head,
    lower: Oid,
) -> anyhow::Result<usize> {
    make_from(project_git, dir, commit, head, Fill::Upper(lower))
}

/// What a workspace's directory holds besides its `.git`.
enum Fill<'a, 'c> {
    /// The whole tree.
    Whole,
    /// The whole tree, the files the cached checkout holds the same linked.
    Linked(&'a Cached<'c>),
    /// What differs from the tree of this commit.
    Upper(Oid),
}

/// A cached checkout of the project at a commit that only the orchestrator
/// writes ([`super::checkout`]): what a checkout may link instead of writing.
pub struct Cached<'a> {
    pub dir: &'a Path,
    pub commit: Oid,
}

/// [`make`], but every file whose blob and mode are the same in `cached`
/// is a hard link to the cached copy instead of a new file (the sandbox
/// binds such links read-only: [`crate::sandbox::SandboxSpec::read_only_links`]).
/// Returns how many files were linked.
pub fn make_linked(
    project_git: &Path,
    dir: &Path,
    commit: Oid,
    head: Head,
    cached: &Cached,
) -> anyhow::Result<usize> {
    make_from(project_git, dir, commit, head, Fill::Linked(cached))
}

fn make_from(
    project_git: &Path,
    dir: &Path,
    commit: Oid,
    head: Head,
    fill: Fill,
) -> anyhow::Result<usize> {
    fsutil::remove_tree(dir)?;
    let mut opts = git2::RepositoryInitOptions::new();
    opts.initial_head(MAIN).no_reinit(true).mkpath(true);
    let repo = Repository::init_opts(dir, &opts)
        .with_context(|| format!("failed to create a repository in {}", dir.display()))?;
    let objects = project_git
        .join("objects")
        .canonicalize()
        .with_context(|| format!("cannot resolve {}/objects", project_git.display()))?;
    let alternates = repo.path().join("objects").join("info").join("alternates");
    // No fsync: the directory is thrown away whole if the run stops, and a
    // sync per workspace waits on every other writer of the disk.
    std::fs::write(&alternates, format!("{}\n", objects.display()))
        .with_context(|| format!("cannot write {}", alternates.display()))?;
    drop(repo);
    // Opened again so that its object database reads the alternates.
    let repo = Repository::open(dir)?;
    let tree = repo
        .find_commit(commit)
        .with_context(|| format!("commit {commit} is not in the project"))?
        .tree()?;
    match head {
        Head::Main => {
            repo.reference(MAIN_REF, commit, true, "longrun: the session's base")?;
            repo.set_head(MAIN_REF)?;
        }
        Head::Detached => repo.set_head_detached(commit)?,
    }
    write_index(&repo, &tree)?;
    let mut writer = TreeWriter::new(&repo);
    let root = open_dir(None, dir)?;
    match fill {
        Fill::Linked(c) => {
            let cached_tree = repo.find_commit(c.commit)?.tree()?;
            let cached_root = open_dir(None, c.dir)?;
            writer.fill(
                &tree,
                &root,
                Some((&cached_tree, &cached_root)),
                Path::new(""),
            )?;
            Ok(writer.linked)
        }
        Fill::Whole => writer.fill(&tree, &root, None, Path::new("")).map(|()| 0),
        Fill::Upper(lower) if lower == commit => Ok(0),
        Fill::Upper(lower) => {
            let lower = repo.find_commit(lower)?.tree()?;
            writer.fill_upper(&tree, &lower, &root, Path::new(""))?;
            Ok(writer.written)
        }
    }
}

/// The index files last written for a tree, newest last: the verification
/// checkout's tree is, once the work lands, the next session's base, and a
/// rejected session leaves main's as it was. An index read from a tree
/// holds no stat data, so the bytes depend on the tree alone.
static INDEXES: Mutex<Vec<(Oid, Arc<Vec<u8>>)>> = Mutex::new(Vec::new());

/// The index files kept in [`INDEXES`].
const INDEXES_KEPT: usize = 2;

/// `repo`'s index, `tree` read into it: copied when the same tree's was
/// written before (a 1,000-file index costs a tree walk and 100 KB of
/// entries built each time).
fn write_index(repo: &Repository, tree: &git2::Tree) -> anyhow::Result<()> {
    let path = repo.path().join("index");
    let kept = INDEXES.lock().ok().and_then(|k| {
        k.iter()
            .find(|(id, _)| *id == tree.id())
            .map(|(_, bytes)| bytes.clone())
    });
    if let Some(bytes) = kept {
        return std::fs::write(&path, bytes.as_slice())
            .with_context(|| format!("cannot write {}", path.display()));
    }
    let mut index = repo.index()?;
    index.read_tree(tree)?;
    index.write()?;
    if let (Ok(bytes), Ok(mut k)) = (std::fs::read(&path), INDEXES.lock()) {
        if k.len() >= INDEXES_KEPT {
            k.remove(0);
        }
        k.push((tree.id(), Arc::new(bytes)));
    }
    Ok(())
}

/// Write `commit`'s tree into the empty or missing directory `dir`, files
/// only (no repository): the orchestrator's cached checkout.
pub fn write_files(repo: &Repository, dir: &Path, commit: Oid) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let tree = repo.find_commit(commit)?.tree()?;
    TreeWriter::new(repo).fill(&tree, &open_dir(None, dir)?, None, Path::new(""))
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// `name` in `parent` (never through a symlink), or the path the
/// orchestrator chose when there is no parent.
fn open_dir(parent: Option<&OwnedFd>, name: &Path) -> anyhow::Result<OwnedFd> {
    match parent {
        Some(fd) => openat(fd, name, DIR_FLAGS, Mode::empty()),
        None => nix::fcntl::open(name, DIR_FLAGS, Mode::empty()),
    }
    .with_context(|| format!("cannot open the directory {}", name.display()))
}

/// The same directory of the cached checkout (its tree and descriptor), and
/// what it holds at one name (blob or tree id, mode).
type CachedEntry<'t> = ((&'t git2::Tree<'t>, &'t OwnedFd), (Oid, i32));

/// Writes a tree into a fresh directory one directory descriptor at a
/// time: each name is created with O_EXCL and O_NOFOLLOW beneath a
/// directory opened without following a symlink, so nothing already
/// standing there is written through.
struct TreeWriter<'r> {
    repo: &'r Repository,
    linked: usize,
    /// Entries an upper layer holds.
    written: usize,
}

impl<'r> TreeWriter<'r> {
    fn new(repo: &'r Repository) -> TreeWriter<'r> {
        TreeWriter {
            repo,
            linked: 0,
            written: 0,
        }
    }

    /// Write into `dir` (an upper layer over a directory holding `lower`)
    /// what `tree` holds otherwise: a whiteout for each name gone, a
    /// directory merged with the lower one for each subtree both hold and
    /// that differs, and each other new or changed entry whole (an upper
    /// entry of another type hides the lower one, directory included).
    fn fill_upper(
        &mut self,
        tree: &git2::Tree,
        lower: &git2::Tree,
        dir: &OwnedFd,
        prefix: &Path,
    ) -> anyhow::Result<()> {
        for gone in lower.iter() {
            if tree.get_name_bytes(gone.name_bytes()).is_none() {
                let name = Path::new(OsStr::from_bytes(gone.name_bytes()));
                whiteout(dir, name)
                    .with_context(|| format!("cannot hide {}", prefix.join(name).display()))?;
                self.written += 1;
            }
        }
        for entry in tree.iter() {
            let was = lower.get_name_bytes(entry.name_bytes());
            let (mode, was_mode) = (entry.filemode(), was.as_ref().map(|w| w.filemode()));
            if was.as_ref().is_some_and(|w| w.id() == entry.id()) && was_mode == Some(mode) {
                continue;
            }
            self.written += 1;
            if mode != 0o040000 || was_mode != Some(0o040000) {
                self.entry(&entry, dir, None, prefix)?;
                continue;
            }
            let name = Path::new(OsStr::from_bytes(entry.name_bytes()));
            let path = prefix.join(name);
            anyhow::ensure!(
                !crate::rules::is_reserved_name(entry.name_bytes()),
                "the tree holds the reserved path {}",
                crate::rules::printable(&path.to_string_lossy())
            );
            mkdirat(dir, name, Mode::from_bits_truncate(0o755))
                .with_context(|| format!("cannot write {}", path.display()))?;
            let sub = open_dir(Some(dir), name)?;
            let (new, old) = (
                self.repo.find_tree(entry.id())?,
                self.repo
                    .find_tree(was.map(|w| w.id()).unwrap_or(entry.id()))?,
            );
            self.fill_upper(&new, &old, &sub, &path)?;
        }
        Ok(())
    }

    /// Write `tree` into `dir`: regular files with their mode, symlinks as
    /// symlinks (made, never followed), a directory per subtree or
    /// submodule. With `cached` (the same directory of the cached
    /// checkout), a file the cache holds the same is linked. A name no
    /// checkout may hold is an error.
    fn fill(
        &mut self,
        tree: &git2::Tree,
        dir: &OwnedFd,
        cached: Option<(&git2::Tree, &OwnedFd)>,
        prefix: &Path,
    ) -> anyhow::Result<()> {
        let same: HashMap<Vec<u8>, (Oid, i32)> = cached
            .map(|(t, _)| {
                t.iter()
                    .map(|e| (e.name_bytes().to_vec(), (e.id(), e.filemode())))
                    .collect()
            })
            .unwrap_or_default();
        for entry in tree.iter() {
            let cached_as = same.get(entry.name_bytes()).copied();
            self.entry(&entry, dir, cached.zip(cached_as), prefix)?;
        }
        Ok(())
    }

    /// Write one entry of a tree into `dir`; `cached` is the same directory
    /// of the cached checkout with what it holds at that name.
    fn entry(
        &mut self,
        entry: &git2::TreeEntry,
        dir: &OwnedFd,
        cached: Option<CachedEntry>,
        prefix: &Path,
    ) -> anyhow::Result<()> {
        let name = entry.name_bytes();
        let path = prefix.join(OsStr::from_bytes(name));
        anyhow::ensure!(
            !crate::rules::is_reserved_name(name),
            "the tree holds the reserved path {}",
            crate::rules::printable(&path.to_string_lossy())
        );
        let name = Path::new(OsStr::from_bytes(name));
        let shown = || format!("cannot write {}", path.display());
        match entry.filemode() {
            0o040000 => {
                mkdirat(dir, name, Mode::from_bits_truncate(0o755)).with_context(shown)?;
                let sub = open_dir(Some(dir), name)?;
                let subtree = self.repo.find_tree(entry.id())?;
                let cached_sub = match cached {
                    Some(((_, cached_dir), (id, 0o040000))) => open_dir(Some(cached_dir), name)
                        .ok()
                        .and_then(|fd| self.repo.find_tree(id).ok().map(|t| (t, fd))),
                    _ => None,
                };
                let cached_sub = cached_sub.as_ref().map(|(t, fd)| (t, fd));
                self.fill(&subtree, &sub, cached_sub, &path)
            }
            0o160000 => mkdirat(dir, name, Mode::from_bits_truncate(0o755)).with_context(shown),
            0o120000 => {
                let blob = self.repo.find_blob(entry.id())?;
                let target = Path::new(OsStr::from_bytes(blob.content()));
                symlinkat(target, dir, name).with_context(shown)
            }
            mode => {
                if let Some(((_, cached_dir), same)) = cached {
                    if same == (entry.id(), mode)
                        && linkat(cached_dir, name, dir, name, AtFlags::empty()).is_ok()
                    {
                        self.linked += 1;
                        return Ok(());
                    }
                }
                let blob = self.repo.find_blob(entry.id())?;
                let perm = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
                write_new(dir, name, blob.content(), perm).with_context(shown)
            }
        }
    }
}

/// An overlay whiteout at `name` in `dir`: a character device 0/0, which
/// hides the lower layer's entry of that name. Since Linux 5.8 any user may
/// make one.
fn whiteout(dir: &OwnedFd, name: &Path) -> nix::Result<()> {
    mknodat(dir, name, SFlag::S_IFCHR, Mode::empty(), 0)
}

/// A whiteout at `name` in the directory `dir` the orchestrator made.
pub fn whiteout_at(dir: &Path, name: &Path) -> anyhow::Result<()> {
    Ok(whiteout(&open_dir(None, dir)?, name)?)
}

/// Create the file `name` in `dir` (it must not exist) holding `bytes`.
fn write_new(dir: &OwnedFd, name: &Path, bytes: &[u8], perm: u32) -> anyhow::Result<()> {
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(dir, name, flags, Mode::from_bits_truncate(perm))?;
    // The mode asked for, whatever the umask took away.
    fchmod(&fd, Mode::from_bits_truncate(perm))?;
    std::fs::File::from(fd).write_all(bytes)?;
    Ok(())
}

/// The confinement of a session or a verification run in `workspace`.
pub fn sandbox_spec(
    project: &Project,
    workspace: &Path,
    tmp: &Path,
    home: &Path,
    keep_fds: Vec<i32>,
) -> SandboxSpec {
    // The project's git data only (objects for the alternates, refs for
    // earlier attempts): never the project directory, where `.longrun/`
    // holds other sessions and the orchestrator's log.
    let mut read_only = vec![project.repo.path().to_path_buf()];
    read_only.extend(project.config.sandbox.read_only.iter().cloned());
    SandboxSpec {
        profile: project.profile.clone(),
        workspace: workspace.to_path_buf(),
        tmp: tmp.to_path_buf(),
        home: home.to_path_buf(),
        read_only,
        writable: project.config.sandbox.writable.clone(),
        read_only_inside: super::acceptance::read_only_inside(project, workspace),
        read_only_links: false,
        layers: None,
        keep_fds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_whose_index_was_copied_is_as_clean_as_one_read_from_its_tree() {
        let dir = tempfile::tempdir().unwrap();
        let project = Repository::init_bare(dir.path().join("p.git")).unwrap();
        let mut builder = project.treebuilder(None).unwrap();
        for (name, body) in [("a.txt", "a\n"), ("b.txt", "b\n")] {
            let id = project.blob(body.as_bytes()).unwrap();
            builder.insert(name, id, 0o100644).unwrap();
        }
        let tree = project.find_tree(builder.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let commit = project.commit(None, &sig, &sig, "c", &tree, &[]).unwrap();
        // The second is written from the first's index bytes.
        for name in ["one", "two"] {
            let work = dir.path().join(name);
            make(project.path(), &work, commit, Head::Detached).unwrap();
            let repo = Repository::open(&work).unwrap();
            let index = repo.index().unwrap();
            assert_eq!(index.len(), 2, "{name}");
            let statuses = repo.statuses(None).unwrap();
            let changed: Vec<_> = statuses
                .iter()
                .filter_map(|s| s.path().map(String::from))
                .collect();
            assert!(changed.is_empty(), "{name}: {changed:?}");
        }
    }
}
