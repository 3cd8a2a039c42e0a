//! The orchestrator's cached checkouts of the project: the read-only lower
//! layers of overlay workspaces, and the checkout of main that a
//! verification of a large tree links from where no overlay can be mounted.
//!
//! Nothing confined ever reaches them but through an overlay that never
//! writes its lower layer: `.longrun/` is granted to no sandbox. Lower
//! layers (`.longrun/checkout/layers/N`) are each at one commit and leased:
//! a session's workspace holds one at its base until its last sandbox (the
//! export) has ended, a verification one at main until its last check has.
//! A layer no lease holds is moved along to the next commit asked for by
//! the difference; one that is held is never changed (overlayfs forbids
//! changing a mounted lower layer, and the session's view would change
//! under it), and a commit no idle layer can take gets a new layer written
//! whole. So with `--parallel 1` one layer follows main, and with `--parallel
//! N` at most N exist. A probe at the first use in a process tries a
//! sandbox's overlay mount; without one, workspaces are written whole as
//! before and said so once.
//!
//! Without overlays, the checkout of main (`.longrun/checkout/tree`) is what
//! a checkout of more files than `[checks] link_unchanged_above` links
//! from: every link is bound read-only in each step's sandbox, which
//! refuses to start when it cannot bind them
//! ([`crate::sandbox::SandboxSpec::read_only_links`]); a probe at the first
//! use in a run tries exactly that, and without it checkouts are written
//! whole. The orchestrator writes it only while it holds the merge turn,
//! never in place (a changed file is written aside and renamed over, a new
//! inode, so a checkout that linked the old one keeps it).
//!
//! All are made anew at their first use in each process: nothing an earlier
//! run left is trusted.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use git2::{Oid, Repository};

use crate::fsutil::{self, Beneath};
use crate::sandbox::{Layers, SandboxSpec};
use crate::trusted::contract::caches::{Cache, Layer};
use crate::trusted::Project;

/// A lower layer at `commit`, held unchanged until this is dropped: keep
/// it while any sandbox may have the layer mounted.
#[derive(Debug)]
pub struct Lower<'p> {
    cache: &'p Mutex<Cache>,
    id: u32,
    pub dir: PathBuf,
}

impl Lower<'_> {
    /// The layers of an overlay workspace whose upper layer is `upper`, with
    /// overlayfs's scratch directory `work`.
    pub fn layers(&self, upper: &Path, work: &Path) -> Layers {
        Layers {
            lower: vec![self.dir.clone()],
            upper: upper.to_path_buf(),
            work: work.to_path_buf(),
        }
    }
}

impl Drop for Lower<'_> {
    fn drop(&mut self) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(layer) = cache.layers.iter_mut().find(|l| l.id == self.id) {
            layer.users = layer.users.saturating_sub(1);
        }
    }
}

fn root(project: &Project) -> PathBuf {
    crate::trusted::record::state::longrun_dir(&project.dir).join("checkout")
}

fn layers_root(project: &Project) -> PathBuf {
    root(project).join("layers")
}

/// A lower layer at `commit` for an overlay workspace, leased until the
/// returned value is dropped; None when this machine's sandboxes cannot
/// mount one (said once) or it could not be written (a warning): the
/// workspace is then written whole.
pub fn lower(project: &Project, commit: Oid) -> Option<Lower<'_>> {
    let mut cache = project.checkout.lock().ok()?;
    if cache.overlay.is_none() {
        let usable = overlay_usable(project);
        if let Err(why) = &usable {
            tracing::info!("workspaces are written whole, not as overlays: {why:#}");
        }
        cache.overlay = Some(usable.is_ok());
    }
    if cache.overlay != Some(true) {
        return None;
    }
    match lease(&mut cache, project, commit) {
        Ok(id) => Some(Lower {
            cache: &project.checkout,
            id,
            dir: layers_root(project).join(id.to_string()),
        }),
        Err(e) => {
            tracing::warn!("the workspace is written whole: no cached checkout of {commit}: {e:#}");
            None
        }
    }
}

/// The id of a layer at `commit`, its lease counted: one already there, an
/// idle one moved along, or a new one written whole.
fn lease(cache: &mut Cache, project: &Project, commit: Oid) -> anyhow::Result<u32> {
    if let Some(layer) = cache.layers.iter_mut().find(|l| l.commit == Some(commit)) {
        layer.users += 1;
        return Ok(layer.id);
    }
    let idle = cache.layers.iter().position(|l| l.users == 0);
    let (id, from) = match idle {
        Some(i) => (cache.layers[i].id, cache.layers[i].commit.take()),
        None => {
            let id = cache.layers.iter().map(|l| l.id + 1).max().unwrap_or(0);
            cache.layers.push(Layer {
                id,
                commit: None,
                users: 0,
            });
            (id, None)
        }
    };
    let dir = layers_root(project).join(id.to_string());
    let whole = || {
        fsutil::remove_tree(&dir)
            .and_then(|()| super::workspace::write_files(&project.repo, &dir, commit))
    };
    let made = match from {
        Some(from) => apply_difference(&project.repo, &dir, from, commit).or_else(|e| {
            tracing::debug!("a cached checkout is written anew: {e:#}");
            whole()
        }),
        None => whole(),
    };
    let at = cache.layers.iter().position(|l| l.id == id);
    match (made, at) {
        (Ok(()), Some(i)) => {
            cache.layers[i].commit = Some(commit);
            cache.layers[i].users = 1;
            Ok(id)
        }
        (made, at) => {
            if let Some(i) = at {
                cache.layers.remove(i);
            }
            let _ = fsutil::remove_tree(&dir);
            made.and_then(|()| anyhow::bail!("the layer went missing"))
                .map(|()| id)
        }
    }
}

/// Whether overlay workspaces are on (`[sandbox] overlay`) and a sandbox
/// here mounts one; first, what an earlier process left goes.
fn overlay_usable(project: &Project) -> anyhow::Result<()> {
    anyhow::ensure!(project.config.sandbox.overlay, "[sandbox] overlay is off");
    fsutil::remove_tree(&layers_root(project))?;
    probe_overlay(project)
}

/// Mount an overlay in a sandbox as a session's would be: a lower file must
/// show, one hidden by a whiteout the orchestrator made must not, and a
/// write must land in the upper layer and leave the lower one as it was.
fn probe_overlay(project: &Project) -> anyhow::Result<()> {
    let dir = root(project).join("probe");
    let tried = (|| -> anyhow::Result<()> {
        fsutil::remove_tree(&dir)?;
        let names = ["lower", "work", "work.ovl", "tmp", "home"];
        let [lower, work, ovl, tmp, home] = names.map(|n| dir.join(n));
        for d in [&lower, &work, &ovl, &tmp, &home] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        std::fs::write(lower.join("kept"), "kept\n")?;
        std::fs::write(lower.join("gone"), "gone\n")?;
        super::workspace::whiteout_at(&work, Path::new("gone"))
            .context("cannot make a whiteout (Linux 5.8)")?;
        let spec = SandboxSpec {
            layers: Some(Layers {
                lower: vec![lower.clone()],
                upper: work.clone(),
                work: ovl,
            }),
            ..SandboxSpec::new(project.profile.clone(), work.clone(), tmp, home)
        };
        let script = "test \"$(cat kept)\" = kept && test ! -e gone && echo changed >> kept";
        let argv = ["bash", "-c", script].map(String::from);
        let out = crate::sandbox::command(&spec, &argv)?.output()?;
        let said = String::from_utf8_lossy(&out.stderr);
        anyhow::ensure!(
            out.status.success(),
            "a sandbox here cannot mount an overlay workspace ({}: {})",
            out.status,
            said.trim().lines().last().unwrap_or("")
        );
        anyhow::ensure!(
            std::fs::read_to_string(lower.join("kept"))? == "kept\n"
                && std::fs::read_to_string(work.join("kept"))? == "kept\nchanged\n",
            "a sandbox's overlay did not keep its writes in the upper layer"
        );
        Ok(())
    })();
    let _ = fsutil::remove_tree(&dir);
    tried
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
            read_only_links: true,
            ..SandboxSpec::new(project.profile.clone(), work.clone(), tmp, home)
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
