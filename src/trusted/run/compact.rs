//! Keeping the project's object store compact, so that reading it costs the
//! same at session 1,000 as at session 50.
//!
//! Every session adds objects (its imported work, the verdict commit, a merge
//! candidate), and nothing else ever repacks them. Between sessions the run
//! rolls small packs and loose objects into larger ones once they pass a
//! threshold; `longrun gc` repacks everything and drops what no ref reaches.
//!
//! Both run the `git` command, not libgit2: libgit2 can write a pack but has
//! no repack, and a repack that is safe while other processes read the
//! objects (a new pack complete before any old one goes, loose objects
//! removed only once packed) is what git's own is built and tested for.
//! The run uses `git repack --geometric`, which only ever merges whole packs
//! and packs loose objects, never dropping one: a session importing its work
//! while it runs loses nothing. libgit2 skips the packs that disappear and
//! finds the new one when an object is not where it looked, but it never
//! drops a pack from an open repository's list: each one stays mapped and
//! is searched at every look-up that misses. So after a roll-up the run
//! gives its repository a freshly opened object database
//! ([`Project::forget_deleted_packs`](crate::trusted::Project::forget_deleted_packs)).

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// Packs past which the run rolls them up (git's own `gc.autoPackLimit` is 50).
pub const PACK_LIMIT: usize = 24;
/// Loose objects past which the run packs them (git's `gc.auto` is 6,700).
pub const LOOSE_LIMIT: usize = 1024;

/// How many packs and loose objects (estimated) `git_dir` holds.
pub fn census(git_dir: &Path) -> (usize, usize) {
    let objects = git_dir.join("objects");
    let count = |dir: &Path, keep: &dyn Fn(&str) -> bool| {
        std::fs::read_dir(dir).map_or(0, |entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_str().is_some_and(keep))
                .count()
        })
    };
    let packs = count(&objects.join("pack"), &|n| n.ends_with(".pack"));
    // As git estimates it: one fan-out directory of 256, scaled up.
    let loose = count(&objects.join("17"), &|n| n.len() == 38) * 256;
    (packs, loose)
}

/// True when the run should roll packs up before the next session.
pub fn due(git_dir: &Path) -> bool {
    let (packs, loose) = census(git_dir);
    packs > PACK_LIMIT || loose > LOOSE_LIMIT
}

/// Roll small packs and loose objects into larger packs (safe while
/// sessions read and import objects). Returns whether it ran.
pub fn compact_if_due(git_dir: &Path) -> anyhow::Result<bool> {
    if !due(git_dir) {
        return Ok(false);
    }
    git(git_dir, &["repack", "--geometric=2", "-d", "-l", "-q"])?;
    Ok(true)
}

/// Repack everything into one pack and drop what no ref, reflog or the index
/// reaches. Only while no run holds the project's lock: a session's work is
/// unreachable until its ref is set.
pub fn repack_all(git_dir: &Path) -> anyhow::Result<()> {
    git(git_dir, &["repack", "-a", "-d", "-l", "-q"])?;
    git(git_dir, &["prune", "--expire=1.hour.ago"])?;
    Ok(())
}

fn git(git_dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let mut cmd = Command::new("git");
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
        "GIT_CONFIG_PARAMETERS",
    ] {
        cmd.env_remove(var);
    }
    let out = cmd
        .arg("--git-dir")
        .arg(git_dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run `git {}` (is git installed?)", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "`git {}` in {} failed: {}",
            args.join(" "),
            git_dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn census_counts_packs_and_estimates_loose_objects() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let objects = dir.path().join("objects");
        std::fs::create_dir_all(objects.join("pack")).ok();
        std::fs::create_dir_all(objects.join("17")).ok();
        for i in 0..3 {
            std::fs::write(objects.join(format!("pack/pack-{i}.pack")), "").ok();
            std::fs::write(objects.join(format!("pack/pack-{i}.idx")), "").ok();
        }
        std::fs::write(objects.join("17").join("a".repeat(38)), "").ok();
        assert_eq!(census(dir.path()), (3, 256));
        assert!(!due(dir.path()));
    }
}
