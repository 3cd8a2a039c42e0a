//! Read-only git queries (HEAD, status, a file at a commit, changed paths,
//! the one-line log), used on both sides of the boundary: by the orchestrator
//! on the project's own repository, and by the worker on its clone inside
//! the sandbox. Writing the project's main branch lives in `trusted::repo`.

use std::path::Path;

use anyhow::Context;
use git2::{Oid, Repository};

/// Paths with uncommitted changes (untracked files included, ignored ones not).
pub fn dirty_paths(repo: &Repository) -> anyhow::Result<Vec<String>> {
    Ok(status(repo)?.into_iter().map(|(path, _)| path).collect())
}

/// Each changed path with its status, untracked files included, ignored ones not.
fn status(repo: &Repository) -> anyhow::Result<Vec<(String, git2::Status)>> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context("failed to read git status")?;
    Ok(statuses
        .iter()
        .filter_map(|s| Some((s.path()?.to_string(), s.status())))
        .collect())
}

/// Directories whose contents are build output or caches wherever they sit.
const BUILD_OUTPUT_DIRS: &[&str] = &[
    "__pycache__",
    "node_modules",
    "target",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".tox",
    ".venv",
];
/// File name endings of build output.
const BUILD_OUTPUT_SUFFIXES: &[&str] = &[".pyc", ".pyo"];

/// True for a well-known build output or cache path (`__pycache__/`,
/// `*.pyc`, `node_modules/`, `target/`, `.pytest_cache/`, ...), a path
/// relative to the repository root with `/` separators. Such files are made
/// by running the code, not by the model: untracked ones are never
/// "uncommitted changes" and are never committed for a session.
pub fn is_build_output(path: &str) -> bool {
    let mut parts = path.split('/').filter(|p| !p.is_empty()).peekable();
    while let Some(part) = parts.next() {
        let is_dir = parts.peek().is_some() || path.ends_with('/');
        if is_dir && BUILD_OUTPUT_DIRS.contains(&part) {
            return true;
        }
        if !is_dir && BUILD_OUTPUT_SUFFIXES.iter().any(|s| part.ends_with(s)) {
            return true;
        }
    }
    false
}

/// Paths with changes a session must commit: [`dirty_paths`] without the
/// untracked build output ([`is_build_output`]); what `.gitignore` ignores
/// is left out already.
pub fn uncommitted_paths(repo: &Repository) -> anyhow::Result<Vec<String>> {
    Ok(status(repo)?
        .into_iter()
        .filter(|(path, st)| !(*st == git2::Status::WT_NEW && is_build_output(path)))
        .map(|(path, _)| path)
        .collect())
}

/// Tracked paths whose work-tree or staged content differs from HEAD
/// (untracked and ignored files not counted).
pub fn tracked_changes(repo: &Repository) -> anyhow::Result<Vec<String>> {
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(false).include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .context("failed to read git status")?;
    Ok(statuses
        .iter()
        .filter(|s| s.status() != git2::Status::CURRENT)
        .filter_map(|s| s.path().map(str::to_string))
        .collect())
}

/// HEAD of a repo, if it has one.
pub fn head(repo: &Repository) -> Option<Oid> {
    repo.head().ok().and_then(|h| h.target())
}

/// The entries of `tree` that `parent` (the tree at the same path in a
/// first parent) does not hold the same, by id and mode, each with what
/// `parent` holds under its name: what a commit changed at one level.
pub fn changed_entries<'t>(
    tree: &'t git2::Tree<'_>,
    parent: Option<&'t git2::Tree<'_>>,
) -> impl Iterator<Item = (git2::TreeEntry<'t>, Option<git2::TreeEntry<'t>>)> {
    tree.iter().filter_map(move |entry| {
        let before = parent.and_then(|p| p.get_name_bytes(entry.name_bytes()));
        let same = before
            .as_ref()
            .is_some_and(|b| b.id() == entry.id() && b.filemode_raw() == entry.filemode_raw());
        (!same).then_some((entry, before))
    })
}

/// True when `head` is `base` or descends from it.
pub fn descends_from(repo: &Repository, head: Oid, base: Oid) -> anyhow::Result<bool> {
    Ok(head == base || repo.graph_descendant_of(head, base)?)
}

/// The tree entry of `path` at commit `oid`, or None when it does not exist there.
pub fn entry_at(
    repo: &Repository,
    oid: Oid,
    path: &str,
) -> anyhow::Result<Option<git2::TreeEntry<'static>>> {
    let tree = repo.find_commit(oid)?.tree()?;
    match tree.get_path(Path::new(path)) {
        Ok(e) => Ok(Some(e)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The text of `path` at commit `oid`, or None when it does not exist there.
pub fn read_file_at(repo: &Repository, oid: Oid, path: &str) -> anyhow::Result<Option<String>> {
    let Some(entry) = entry_at(repo, oid, path)? else {
        return Ok(None);
    };
    let blob = entry.to_object(repo)?.peel_to_blob()?;
    Ok(Some(String::from_utf8_lossy(blob.content()).into_owned()))
}

/// The file mode of `path` at `oid` (to check init.sh is executable).
pub fn file_mode_at(repo: &Repository, oid: Oid, path: &str) -> anyhow::Result<Option<i32>> {
    let tree = repo.find_commit(oid)?.tree()?;
    Ok(tree.get_path(Path::new(path)).ok().map(|e| e.filemode()))
}

/// Paths that differ between two commits.
pub fn changed_paths(repo: &Repository, from: Oid, to: Oid) -> anyhow::Result<Vec<String>> {
    let a = repo.find_commit(from)?.tree()?;
    let b = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
    let mut paths = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file(), delta.new_file()] {
            if let Some(p) = file.path() {
                let p = p.to_string_lossy().to_string();
                if !paths.contains(&p) {
                    paths.push(p);
                }
            }
        }
    }
    Ok(paths)
}

/// The unified diff between two commits, cut to `max` bytes with a note.
pub fn patch_text(repo: &Repository, from: Oid, to: Oid, max: usize) -> anyhow::Result<String> {
    let a = repo.find_commit(from)?.tree()?;
    let b = repo.find_commit(to)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&a), Some(&b), None)?;
    let mut text = Vec::new();
    diff.print(git2::DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            text.push(line.origin() as u8);
        }
        text.extend_from_slice(line.content());
        text.len() <= max
    })
    .ok();
    let mut out = String::from_utf8_lossy(&text).into_owned();
    if out.len() > max {
        let mut cut = max;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str(&format!(
            "\n[the diff is longer than {max} bytes and was cut here]\n"
        ));
    }
    Ok(out)
}

/// `git log --oneline -N` of HEAD in `dir`, newest first.
pub fn oneline_log(dir: &Path, max: usize) -> anyhow::Result<String> {
    let repo = Repository::open(dir)?;
    let Some(head) = head(&repo) else {
        return Ok(String::new());
    };
    let mut walk = repo.revwalk()?;
    walk.push(head)?;
    let mut lines = Vec::new();
    for oid in walk.take(max) {
        let commit = repo.find_commit(oid?)?;
        let id = commit.id().to_string();
        lines.push(format!("{} {}", &id[..7], commit.summary().unwrap_or("")));
    }
    Ok(lines.join("\n"))
}

/// Pack files libgit2 keeps open at once in this process. Without a bound it
/// keeps every pack of every repository it has read from open (about two
/// descriptors each), so a project with hundreds of packs runs out of
/// descriptors; past the bound the least recently used pack is closed.
pub const OPEN_PACKS: usize = 32;

/// The largest tree libgit2 keeps in its object cache. Its default, 4 KiB,
/// leaves out any directory of more than about a hundred entries: every
/// look-up of a path then inflates, hashes and parses the root tree again,
/// a dozen times a session. The cache's total stays bounded (256 MiB).
pub const CACHED_TREE_BYTES: usize = 4 << 20;

/// The most libgit2's object caches hold in all, in bytes of raw objects
/// (its default is 256 MiB; a parsed tree takes two to three times its raw
/// size). A session reads a few trees and commits again and again; past this
/// the caches drop entries. With the default and large trees cached, a
/// 1,000-session run's memory grew by 75 KB a session.
pub const CACHE_BYTES: usize = 4 << 20;

/// Apply [`OPEN_PACKS`], [`CACHED_TREE_BYTES`] and [`CACHE_BYTES`], and
/// read objects without hashing them again; call once, before any
/// repository is opened.
///
/// libgit2 hashes every object it reads, to check it against its name; git
/// itself does not (only `git fsck` does). Every object in a store longrun
/// reads was hashed when it entered: by the indexer, for the packs a session
/// exports (the import); by git or libgit2, for what they wrote. A session
/// can write none of the orchestrator's store. Hashing each read again cost
/// the 1,000-entry root tree of a large project 40 KB of SHA-1 at every
/// look-up.
pub fn set_limits() {
    git2::opts::strict_hash_verification(false);
    // SAFETY: these set libgit2 globals; this runs at start-up, before any
    // thread or repository exists, so nothing reads the settings concurrently.
    if let Err(e) = unsafe { git2::opts::set_mwindow_file_limit(OPEN_PACKS) } {
        tracing::warn!("cannot bound the pack files git keeps open: {e}");
    }
    // SAFETY: as above.
    if let Err(e) =
        unsafe { git2::opts::set_cache_object_limit(git2::ObjectType::Tree, CACHED_TREE_BYTES) }
    {
        tracing::warn!("cannot let git cache large trees: {e}");
    }
    let size = libc::ssize_t::try_from(CACHE_BYTES).unwrap_or(libc::ssize_t::MAX);
    // SAFETY: as above; GIT_OPT_SET_CACHE_MAX_SIZE takes one ssize_t.
    let status = unsafe {
        libgit2_sys::git_libgit2_opts(libgit2_sys::GIT_OPT_SET_CACHE_MAX_SIZE as libc::c_int, size)
    };
    if status < 0 {
        tracing::warn!("cannot bound git's object cache");
    }
}

/// Give `repo` a freshly opened object database, dropping the packs a
/// repack deleted. libgit2 adds new packs to an open repository's list but
/// never removes the ones that are gone: their indexes stay mapped (and on
/// disk, unlinked) and every look-up that misses searches them all, so a
/// long-lived handle slows down and grows with every pack it ever saw.
pub fn forget_deleted_packs(repo: &Repository) -> anyhow::Result<()> {
    let fresh = Repository::open(repo.path())?;
    // The database outlives `fresh` through its reference count; it then has
    // no owner and caches raw objects in its own cache (the same global cap).
    repo.set_odb(&fresh.odb()?)?;
    Ok(())
}

/// An index entry for blob `id` at `path` with `mode`, without stat data
/// (so git reads the file before it takes it as unchanged).
pub fn index_entry(path: &[u8], id: Oid, mode: u32) -> git2::IndexEntry {
    let zero = git2::IndexTime::new(0, 0);
    git2::IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: 0,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.to_vec(),
    }
}

/// For tests: a tree of `(path, mode, bytes)` written to `repo`'s objects;
/// paths may name directories.
#[cfg(test)]
pub fn tree_of<'r>(repo: &'r Repository, files: &[(&str, i32, &[u8])]) -> git2::Tree<'r> {
    let mut index = git2::Index::new().unwrap();
    for (path, mode, bytes) in files {
        let id = repo.blob(bytes).unwrap();
        index
            .add(&index_entry(path.as_bytes(), id, *mode as u32))
            .unwrap();
    }
    repo.find_tree(index.write_tree_to(repo).unwrap()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mappings of this process that are pack indexes under `dir` and
    /// deleted.
    fn deleted_indexes_mapped(dir: &Path) -> usize {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let dir = dir.to_str().unwrap();
        maps.lines()
            .filter(|l| l.contains(dir) && l.contains(".idx") && l.ends_with("(deleted)"))
            .count()
    }

    #[test]
    fn a_repository_forgets_the_packs_a_repack_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8(out.stdout).unwrap()
        };
        git(&["init", "-q"]);
        let mut blobs = Vec::new();
        for i in 0..5 {
            std::fs::write(dir.path().join("f"), format!("version {i}\n")).unwrap();
            blobs.push(git(&["hash-object", "-w", "f"]).trim().to_string());
            git(&["add", "f"]);
            git(&[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                "v",
            ]);
            // One more pack, of what the commit added.
            git(&["repack", "-d", "-q"]);
        }
        let repo = Repository::open(dir.path()).unwrap();
        let read_all = || {
            for blob in &blobs {
                repo.find_blob(Oid::from_str(blob).unwrap()).unwrap();
            }
            // A miss searches every pack the repository knows.
            assert!(repo
                .find_blob(Oid::hash_object(git2::ObjectType::Blob, b"none").unwrap())
                .is_err());
        };
        read_all();
        git(&["repack", "-a", "-d", "-q"]);
        read_all();
        assert!(
            deleted_indexes_mapped(dir.path()) >= 5,
            "{}",
            std::fs::read_to_string("/proc/self/maps").unwrap()
        );
        forget_deleted_packs(&repo).unwrap();
        read_all();
        assert_eq!(deleted_indexes_mapped(dir.path()), 0);
    }

    #[test]
    fn build_output_is_known_by_directory_and_suffix() {
        for p in [
            "__pycache__/duration.cpython-311.pyc",
            "src/__pycache__/x.pyc",
            "a.pyc",
            "web/node_modules/left-pad/index.js",
            "target/debug/app",
            ".pytest_cache/v/cache/nodeids",
            "node_modules/",
        ] {
            assert!(is_build_output(p), "{p}");
        }
        for p in [
            "duration.py",
            "target.txt",
            "src/targets/a.rs",
            "my_node_modules.js",
            "pyc",
        ] {
            assert!(!is_build_output(p), "{p}");
        }
    }

    #[test]
    fn untracked_build_output_is_not_uncommitted_but_a_tracked_change_is() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let write = |p: &str| {
            let path = dir.path().join(p);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, "x").unwrap();
        };
        write("__pycache__/m.cpython-311.pyc");
        write(".pytest_cache/README.md");
        write("ignored.log");
        write(".gitignore");
        std::fs::write(dir.path().join(".gitignore"), "*.log\n").unwrap();
        assert_eq!(uncommitted_paths(&repo).unwrap(), [".gitignore"]);
        write("m.py");
        assert_eq!(uncommitted_paths(&repo).unwrap(), [".gitignore", "m.py"]);
        let mut all = dirty_paths(&repo).unwrap();
        all.sort();
        assert!(
            all.contains(&"__pycache__/m.cpython-311.pyc".to_string()),
            "{all:?}"
        );
    }
}
