//! The orchestrator's cached checkout of main (`.longrun/checkout/tree`),
//! from which the verification checkout of a large tree links the files it
//! holds the same as main instead of writing them again.
//!
//! Nothing confined ever reaches it: `.longrun/` is granted to no sandbox,
//! and in a checkout that links it every link is bound read-only in each
//! step's sandbox, which refuses to start when it cannot bind them
//! ([`crate::sandbox::SandboxSpec::read_only_links`]); a probe at the first
//! use in a run tries exactly that, and without it checkouts are written
//! whole. The orchestrator writes it only while it holds the merge turn,
//! never in place (a changed file is written aside and renamed over, a new
//! inode, so a checkout that linked the old one keeps it), and makes it
//! anew at its first use in each process: nothing an earlier run left is
//! trusted.

use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::{Oid, Repository};

use super::Project;
use crate::fsutil::{self, Beneath};
use crate::sandbox::SandboxSpec;

/// What this process knows of the cached checkout.
#[derive(Debug, Default)]
pub struct Cache {
    /// The commit the cached checkout holds, once written by this process.
    commit: Option<Oid>,
    /// Whether a step's sandbox binds links read-only here (probed once).
    bindable: Option<bool>,
}

fn root(project: &Project) -> PathBuf {
    super::state::longrun_dir(&project.dir).join("checkout")
}

/// Remove the cached checkout (`longrun gc`, under the run lock).
pub fn remove(project: &Project) -> anyhow::Result<()> {
    fsutil::remove_tree(&root(project))
}

/// Whether a verification checkout of `commit` is large enough to link:
/// more files than `[checks] link_unchanged_above`.
pub fn worth_linking(project: &Project, commit: Oid) -> bool {
    let above = project.config.checks.link_unchanged_above;
    let Ok(tree) = project.repo.find_commit(commit).and_then(|c| c.tree()) else {
        return false;
    };
    let mut files = 0usize;
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.kind() == Some(git2::ObjectType::Blob) {
            files += 1;
        }
        if files > above {
            git2::TreeWalkResult::Abort
        } else {
            git2::TreeWalkResult::Ok
        }
    });
    files > above
}

/// The cached checkout at `commit`, when links into it can be bound
/// read-only here: written whole at its first use in this process, then
/// brought along by the difference. None (after a warning) when it cannot
/// be used: the checkout is then written whole.
pub fn at(project: &Project, commit: Oid) -> Option<PathBuf> {
    let mut cache = project.checkout.lock().ok()?;
    if cache.bindable.is_none() {
        let bindable = probe(project);
        if !bindable {
            tracing::info!(
                "verification checkouts are written whole: this sandbox cannot bind \
                 links to the cached checkout read-only"
            );
        }
        cache.bindable = Some(bindable);
    }
    if cache.bindable != Some(true) {
        return None;
    }
    let tree = root(project).join("tree");
    let brought = match cache.commit {
        Some(at) if at == commit => Ok(()),
        Some(at) => apply_difference(&project.repo, &tree, at, commit),
        None => fsutil::remove_tree(&tree)
            .and_then(|()| super::workspace::write_files(&project.repo, &tree, commit)),
    };
    match brought {
        Ok(()) => {
            cache.commit = Some(commit);
            Some(tree)
        }
        Err(e) => {
            tracing::warn!("the cached checkout of main is made anew: {e:#}");
            cache.commit = None;
            let _ = fsutil::remove_tree(&tree);
            None
        }
    }
}

/// Bring the files at `dir` from `from`'s tree to `to`'s: what went is
/// removed, what changed or came is written aside and renamed into place,
/// never through a symlink.
fn apply_difference(repo: &Repository, dir: &Path, from: Oid, to: Oid) -> anyhow::Result<()> {
    let (old, new) = (
        repo.find_commit(from)?.tree()?,
        repo.find_commit(to)?.tree()?,
    );
    let diff = repo.diff_tree_to_tree(Some(&old), Some(&new), None)?;
    let files = Beneath::open(dir)?;
    for delta in diff.deltas() {
        if let Some(path) = delta
            .old_file()
            .path()
            .filter(|_| delta.old_file().exists())
        {
            files.remove_file(path)?;
        }
        let file = delta.new_file();
        let Some(path) = file.path().filter(|_| file.exists()) else {
            continue;
        };
        anyhow::ensure!(
            !path
                .components()
                .any(|c| crate::rules::is_reserved_name(c.as_os_str().as_encoded_bytes())),
            "the tree holds the reserved path {}",
            crate::rules::printable(&path.to_string_lossy())
        );
        match file.mode() {
            git2::FileMode::Blob | git2::FileMode::BlobExecutable => {
                let exec = file.mode() == git2::FileMode::BlobExecutable;
                let blob = repo.find_blob(file.id())?;
                files.write(path, blob.content(), if exec { 0o755 } else { 0o644 })?;
            }
            git2::FileMode::Link => {
                let blob = repo.find_blob(file.id())?;
                let target = std::os::unix::ffi::OsStrExt::from_bytes(blob.content());
                let target: &std::ffi::OsStr = target;
                files.symlink(path, Path::new(target))?;
            }
            git2::FileMode::Commit => files.mkdir(path)?,
            _ => {}
        }
    }
    Ok(())
}

/// Whether a step's sandbox here binds a hard link in its workspace
/// read-only: a confined shell must fail to append through one.
fn probe(project: &Project) -> bool {
    let dir = root(project).join("probe");
    let tried = (|| -> anyhow::Result<bool> {
        fsutil::remove_tree(&dir)?;
        let (work, tmp, home) = (dir.join("work"), dir.join("tmp"), dir.join("home"));
        for d in [&work, &tmp, &home] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        std::fs::write(work.join("kept"), "kept\n")?;
        std::fs::hard_link(work.join("kept"), work.join("link"))?;
        let spec = SandboxSpec {
            profile: project.profile.clone(),
            workspace: work.clone(),
            tmp,
            home,
            read_only: Vec::new(),
            writable: Vec::new(),
            read_only_inside: Vec::new(),
            read_only_links: true,
            keep_fds: Vec::new(),
        };
        let argv = ["bash", "-c", "! (echo changed >> link) 2>/dev/null"].map(String::from);
        let out = crate::sandbox::command(&spec, &argv)?.output()?;
        Ok(out.status.success() && std::fs::read_to_string(work.join("kept"))? == "kept\n")
    })();
    let _ = fsutil::remove_tree(&dir);
    tried.unwrap_or_else(|e| {
        tracing::debug!("the read-only link probe could not run: {e:#}");
        false
    })
}
