//! A session's workspace and its verification checkout, made by the
//! orchestrator before any session code runs in them.
//!
//! Each is a git repository whose objects come from the project's
//! `.git/objects` through `objects/info/alternates` (read-only in the
//! sandbox, never hard-linked), with the tree written out file by file
//! without following a symlink ([`crate::fsutil::Beneath`]). Once a session
//! has run in one, the orchestrator never opens it with git again: the work
//! comes back through `__export` ([`super::import`]).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::Context;
use git2::{Oid, Repository};

use crate::fsutil::{self, Beneath};
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
    fsutil::write_atomic(&alternates, format!("{}\n", objects.display()).as_bytes())?;
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
    write_tree(&repo, &tree, &Beneath::open(dir)?, Path::new(""))
}

/// Write `tree`'s files under `prefix` beneath `root`: regular files with
/// their mode, symlinks as symlinks (made, never followed), a directory per
/// subtree or submodule. A name no checkout may hold is an error.
fn write_tree(
    repo: &Repository,
    tree: &git2::Tree,
    root: &Beneath,
    prefix: &Path,
) -> anyhow::Result<()> {
    for entry in tree.iter() {
        let name = entry.name_bytes();
        anyhow::ensure!(
            !crate::rules::is_reserved_name(name),
            "the tree holds the reserved path {}",
            crate::rules::printable(
                &prefix
                    .join(String::from_utf8_lossy(name).as_ref())
                    .to_string_lossy()
            )
        );
        let path = prefix.join(OsStr::from_bytes(name));
        match entry.filemode() {
            0o040000 => {
                root.mkdir(&path)?;
                write_tree(repo, &repo.find_tree(entry.id())?, root, &path)?;
            }
            0o160000 => root.mkdir(&path)?,
            0o120000 => {
                let blob = repo.find_blob(entry.id())?;
                let target = OsStr::from_bytes(blob.content());
                root.symlink(&path, Path::new(target))?;
            }
            mode => {
                let blob = repo.find_blob(entry.id())?;
                let exec = mode & 0o111 != 0;
                root.write(&path, blob.content(), if exec { 0o755 } else { 0o644 })?;
            }
        }
    }
    Ok(())
}
