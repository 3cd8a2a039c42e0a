//! A session's workspace and its verification checkout, made by the
//! orchestrator before any session code runs in them.
//!
//! Each is a git repository whose objects come from the project's
//! `.git/objects` through `objects/info/alternates` (read-only in the
//! sandbox, never hard-linked), with the tree written out into a fresh
//! directory, each name created with O_EXCL and O_NOFOLLOW beneath a
//! directory opened without following a symlink. A large verification
//! checkout links the files it holds the same as main from the cached
//! checkout ([`super::checkout`]) instead of writing them. Once a session
//! has run in one, the orchestrator never opens it with git again: the work
//! comes back through `__export` ([`super::import`]).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::Context;
use git2::{Oid, Repository};
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fchmod, mkdirat, Mode};
use nix::unistd::{linkat, symlinkat};

use crate::fsutil;
use crate::trusted::repo::{MAIN, MAIN_REF};

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
    make_from(project_git, dir, commit, head, None).map(drop)
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
    make_from(project_git, dir, commit, head, Some(cached))
}

fn make_from(
    project_git: &Path,
    dir: &Path,
    commit: Oid,
    head: Head,
    cached: Option<&Cached>,
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
    let mut index = repo.index()?;
    index.read_tree(&tree)?;
    index.write()?;
    let mut writer = TreeWriter::new(&repo);
    let root = open_dir(None, dir)?;
    match cached {
        Some(c) => {
            let cached_tree = repo.find_commit(c.commit)?.tree()?;
            let cached_root = open_dir(None, c.dir)?;
            writer.fill(
                &tree,
                &root,
                Some((&cached_tree, &cached_root)),
                Path::new(""),
            )?;
        }
        None => writer.fill(&tree, &root, None, Path::new(""))?,
    }
    Ok(writer.linked)
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

/// Writes a tree into a fresh directory one directory descriptor at a
/// time: each name is created with O_EXCL and O_NOFOLLOW beneath a
/// directory opened without following a symlink, so nothing already
/// standing there is written through.
struct TreeWriter<'r> {
    repo: &'r Repository,
    linked: usize,
}

impl<'r> TreeWriter<'r> {
    fn new(repo: &'r Repository) -> TreeWriter<'r> {
        TreeWriter { repo, linked: 0 }
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
            let name = entry.name_bytes();
            let path = prefix.join(OsStr::from_bytes(name));
            anyhow::ensure!(
                !crate::rules::is_reserved_name(name),
                "the tree holds the reserved path {}",
                crate::rules::printable(&path.to_string_lossy())
            );
            let name = Path::new(OsStr::from_bytes(name));
            let cached_as = same.get(name.as_os_str().as_bytes()).copied();
            let shown = || format!("cannot write {}", path.display());
            match entry.filemode() {
                0o040000 => {
                    mkdirat(dir, name, Mode::from_bits_truncate(0o755)).with_context(shown)?;
                    let sub = open_dir(Some(dir), name)?;
                    let subtree = self.repo.find_tree(entry.id())?;
                    let cached_sub = match (cached_as, cached) {
                        (Some((id, 0o040000)), Some((_, cached_dir))) => {
                            open_dir(Some(cached_dir), name)
                                .ok()
                                .and_then(|fd| self.repo.find_tree(id).ok().map(|t| (t, fd)))
                        }
                        _ => None,
                    };
                    let cached_sub = cached_sub.as_ref().map(|(t, fd)| (t, fd));
                    self.fill(&subtree, &sub, cached_sub, &path)?;
                }
                0o160000 => {
                    mkdirat(dir, name, Mode::from_bits_truncate(0o755)).with_context(shown)?
                }
                0o120000 => {
                    let blob = self.repo.find_blob(entry.id())?;
                    let target = Path::new(OsStr::from_bytes(blob.content()));
                    symlinkat(target, dir, name).with_context(shown)?;
                }
                mode => {
                    if cached_as == Some((entry.id(), mode)) {
                        if let Some((_, cached_dir)) = cached {
                            let linked = linkat(cached_dir, name, dir, name, AtFlags::empty());
                            if linked.is_ok() {
                                self.linked += 1;
                                continue;
                            }
                        }
                    }
                    let blob = self.repo.find_blob(entry.id())?;
                    let perm = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
                    write_new(dir, name, blob.content(), perm).with_context(shown)?;
                }
            }
        }
        Ok(())
    }
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
