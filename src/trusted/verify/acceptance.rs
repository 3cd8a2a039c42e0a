//! The frozen acceptance tests, from the orchestrator's side: fixing them
//! when the initializer is accepted (`[run] frozen` written into
//! longrun.toml), putting them back as main holds them into a verification
//! checkout, and naming what a sandbox binds read-only.
//!
//! Which paths a commit may not touch is a rule, in `rules.rs`; this module
//! only reads main's tree and writes the orchestrator's own files.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use git2::{Oid, Repository, TreeWalkMode, TreeWalkResult};
use nix::errno::Errno;
use nix::fcntl::{open, openat, OFlag};
use nix::sys::stat::{mkdirat, Mode};
use nix::unistd::{unlinkat, UnlinkatFlags};

use crate::config;
use crate::rules::{acceptance_paths, PathRules};
use crate::trusted::{record::repo, Project};

/// `[run] protected` and `[run] frozen` of the project, ready to match.
pub fn path_rules(project: &Project) -> anyhow::Result<PathRules> {
    PathRules::new(&project.protected(), &project.config.run.frozen)
        .map_err(|e| anyhow::anyhow!("{}: [run]: {e}", config::FILE_NAME))
}

/// The protected and frozen files of a tree: path, blob, mode.
type FixedFiles = Vec<(String, Oid, i32)>;

/// The last tree's fixed files, with the rules they were found by: the
/// next tree (main one session on) costs what changed, not a walk of
/// every file (three a session, each matching every path against the
/// rules, grew with the tree: 1,000 files in the scale bench).
struct FixedCache {
    tree: Oid,
    rules: (Vec<String>, Vec<String>),
    files: std::collections::BTreeMap<String, (Oid, i32)>,
}

static FIXED: std::sync::Mutex<Option<FixedCache>> = std::sync::Mutex::new(None);

/// Every file of main's tree at `oid` that is protected or frozen, with its mode.
fn fixed_files(project: &Project, oid: Oid, rules: &PathRules) -> anyhow::Result<FixedFiles> {
    let repo = &project.repo;
    let tree = repo.find_commit(oid)?.tree()?;
    let run = &project.config.run;
    let key = (project.protected(), run.frozen.clone());
    let mut cache = FIXED.lock().unwrap_or_else(|e| e.into_inner());
    let files = match cache.take() {
        Some(c) if c.tree == tree.id() && c.rules == key => c.files,
        Some(c) if c.rules == key => match repo.find_tree(c.tree) {
            Ok(old) => fixed_changed(repo, &old, &tree, rules, c.files)?,
            Err(_) => fixed_walk(&tree, rules)?,
        },
        _ => fixed_walk(&tree, rules)?,
    };
    let list = files
        .iter()
        .map(|(path, (id, mode))| (path.clone(), *id, *mode))
        .collect();
    *cache = Some(FixedCache {
        tree: tree.id(),
        rules: key,
        files,
    });
    Ok(list)
}

/// Every file of `tree` (blobs and symlinks) that `rules` fix, walked whole.
fn fixed_walk(
    tree: &git2::Tree,
    rules: &PathRules,
) -> anyhow::Result<std::collections::BTreeMap<String, (Oid, i32)>> {
    let mut files = std::collections::BTreeMap::new();
    tree.walk(TreeWalkMode::PreOrder, |dir, entry| {
        if entry.kind() != Some(git2::ObjectType::Blob) {
            return TreeWalkResult::Ok;
        }
        let Some(name) = entry.name() else {
            return TreeWalkResult::Ok;
        };
        let path = format!("{dir}{name}");
        if rules.fixed(&path) {
            files.insert(path, (entry.id(), entry.filemode()));
        }
        TreeWalkResult::Ok
    })?;
    Ok(files)
}

/// `files`, the fixed files of `old`, brought to `new` by what differs.
fn fixed_changed(
    repo: &Repository,
    old: &git2::Tree,
    new: &git2::Tree,
    rules: &PathRules,
    mut files: std::collections::BTreeMap<String, (Oid, i32)>,
) -> anyhow::Result<std::collections::BTreeMap<String, (Oid, i32)>> {
    let diff = repo.diff_tree_to_tree(Some(old), Some(new), None)?;
    for delta in diff.deltas() {
        if let Some(path) = delta.old_file().path().and_then(|p| p.to_str()) {
            files.remove(path);
        }
        let file = delta.new_file();
        let blob = matches!(
            file.mode(),
            git2::FileMode::Blob | git2::FileMode::BlobExecutable | git2::FileMode::Link
        );
        let Some(path) = file.path().and_then(|p| p.to_str()).filter(|_| blob) else {
            continue;
        };
        if file.exists() && rules.fixed(path) {
            files.insert(path.to_string(), (file.id(), i32::from(file.mode())));
        }
    }
    Ok(files)
}

/// The paths inside `workspace` that a session's or a check's sandbox binds
/// read-only: the frozen and protected paths as main holds them (a plain
/// pattern naming a directory binds the whole directory).
pub fn read_only_inside(project: &Project, workspace: &Path) -> Vec<PathBuf> {
    let Ok(Some(main)) = repo::main_head(&project.repo) else {
        return Vec::new();
    };
    let Ok(rules) = path_rules(project) else {
        return Vec::new();
    };
    let Ok(tree) = project.repo.find_commit(main).and_then(|c| c.tree()) else {
        return Vec::new();
    };
    let dirs: Vec<String> = rules
        .frozen
        .plain()
        .chain(rules.protected.plain())
        .filter(|p| {
            tree.get_path(Path::new(p))
                .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree))
        })
        .map(str::to_string)
        .collect();
    let files = fixed_files(project, main, &rules).unwrap_or_default();
    let mut paths: Vec<PathBuf> = dirs.iter().map(|d| workspace.join(d)).collect();
    paths.extend(
        files
            .into_iter()
            .filter(|(p, _, _)| !dirs.iter().any(|d| p.starts_with(&format!("{d}/"))))
            .map(|(p, _, _)| workspace.join(p)),
    );
    paths
}

/// Write every frozen and protected file of `main` into the checkout at
/// `dir`, replacing whatever stands there, without following a symlink.
pub fn overlay(project: &Project, main: Oid, dir: &Path) -> anyhow::Result<usize> {
    let rules = path_rules(project)?;
    let files = fixed_files(project, main, &rules)?;
    for (path, blob, mode) in &files {
        if *mode == 0o120000 {
            continue;
        }
        let blob = project.repo.find_blob(*blob)?;
        let perm = if *mode == 0o100755 { 0o755 } else { 0o644 };
        write_beneath(dir, path, blob.content(), perm)
            .with_context(|| format!("cannot put {path} back as main holds it"))?;
    }
    Ok(files.len())
}

/// Write `data` at `rel` beneath `root`, one component at a time with
/// O_NOFOLLOW: a symlink or file where a directory belongs is removed, and
/// so is whatever stands at the file's own name.
pub(super) fn write_beneath(root: &Path, rel: &str, data: &[u8], perm: u32) -> anyhow::Result<()> {
    let dir_flags = OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_RDONLY;
    let mut dir: OwnedFd = open(root, dir_flags, Mode::empty())?;
    let parts: Vec<&str> = rel.split('/').collect();
    let Some((name, parents)) = parts.split_last() else {
        bail!("empty path");
    };
    for part in parents.iter().chain([name]) {
        if matches!(*part, "" | "." | "..") {
            bail!("`{rel}` is not a plain relative path");
        }
    }
    for part in parents {
        dir = match openat(&dir, *part, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                mkdirat(&dir, *part, Mode::from_bits_truncate(0o755))?;
                openat(&dir, *part, dir_flags, Mode::empty())?
            }
            Err(Errno::ENOTDIR) | Err(Errno::ELOOP) => {
                unlinkat(&dir, *part, UnlinkatFlags::NoRemoveDir)?;
                mkdirat(&dir, *part, Mode::from_bits_truncate(0o755))?;
                openat(&dir, *part, dir_flags, Mode::empty())?
            }
            Err(e) => return Err(e).with_context(|| format!("cannot open {part}")),
        };
    }
    match unlinkat(&dir, *name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove what stands at {rel}")),
    }
    let flags =
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let fd = openat(&dir, *name, flags, Mode::from_bits_truncate(perm))?;
    let mut file = std::fs::File::from(fd);
    file.write_all(data)?;
    // The mode asked for, whatever the umask took away.
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(perm))?;
    Ok(())
}

/// When an initializer is accepted: its acceptance tests (the test
/// directories and test-named files it added, the files its checks name),
/// with what `[run] frozen` already holds, written into longrun.toml by a
/// commit of the orchestrator's on top of `head`. None when nothing changes.
pub fn freeze(
    project: &Project,
    base: Oid,
    head: Oid,
) -> anyhow::Result<Option<(Oid, Vec<String>)>> {
    let repo = &project.repo;
    let mut found = acceptance_paths(repo, base, head)?;
    found.extend(closure_paths(project, head, None)?);
    let text = repo::read_file_at(repo, head, config::FILE_NAME)?.unwrap_or_default();
    let (toml, frozen) = with_frozen(&text, &found)?;
    if toml == text {
        return Ok(None);
    }
    let commit = repo.find_commit(head)?;
    let mut tree = repo.treebuilder(Some(&commit.tree()?))?;
    let blob = repo.blob(toml.as_bytes())?;
    tree.insert(config::FILE_NAME, blob, 0o100644)?;
    let tree = repo.find_tree(tree.write()?)?;
    let sig = repo::signature()?;
    let listed: Vec<String> = frozen.iter().map(|p| format!("- {p}")).collect();
    let message = format!(
        "longrun: freeze the acceptance tests\n\n\
         The initializer was verified: every feature has a check, and every check\n\
         fails on its tree. These paths hold the tests those checks run, so they\n\
         are written into `[run] frozen` of {}: from now on they are read-only\n\
         in a worker's sandbox, a commit that touches them is rejected, and\n\
         verification runs them as they are on main. Changing them is a human act.\n\n{}\n",
        config::FILE_NAME,
        listed.join("\n")
    );
    let oid = repo.commit(None, &sig, &sig, &message, &tree, &[&commit])?;
    Ok(Some((oid, frozen)))
}

/// What the dependency closures of the checks at `at` freeze
/// ([`crate::closure`]): for every feature's check, each global check and
/// the suite, what they run, import and read but the features' files to
/// change; as patterns of `[run] frozen`. With `only`, just the checks of
/// those features: after an amend, the ones it added or changed (by then
/// the others' trees hold the work, and a deliverable is not frozen).
pub fn closure_paths(
    project: &Project,
    at: Oid,
    only: Option<&[String]>,
) -> anyhow::Result<Vec<String>> {
    let per_check = closures_at(project, at, only)?;
    let all: std::collections::BTreeSet<String> = per_check.into_values().flatten().collect();
    Ok(all.into_iter().map(|p| globset::escape(&p)).collect())
}

type Closures = std::collections::BTreeMap<String, Vec<String>>;

fn closures_at(project: &Project, at: Oid, only: Option<&[String]>) -> anyhow::Result<Closures> {
    let repo = &project.repo;
    let Some(Ok(list)) = crate::features::list_at(repo, at)? else {
        return Ok(Closures::new());
    };
    let checks = &project.config.checks;
    let commands: Vec<String> = checks
        .commands
        .iter()
        .chain(&checks.suite)
        .cloned()
        .collect();
    if let Some(ids) = only {
        let mut some = (*list).clone();
        some.features.retain(|f| ids.contains(&f.id));
        return crate::closure::frozen_at(repo, at, &some, &[]);
    }
    crate::closure::frozen_at(repo, at, &list, &commands)
}

/// What of each check's closure on main the rules hold fixed, by feature
/// id (a global check or the suite by its command): for `features` and
/// `status`.
pub fn closures_on_main(project: &Project) -> Closures {
    let (Ok(Some(main)), Ok(rules)) = (repo::main_head(&project.repo), path_rules(project)) else {
        return Closures::new();
    };
    let mut all = closures_at(project, main, None).unwrap_or_default();
    for files in all.values_mut() {
        files.retain(|p| rules.fixed(p));
    }
    all
}

/// The tree `tree` (of the commit `at`, what main would become after a
/// person's change) with what the closures of the `changed` features'
/// checks freeze added to `[run] frozen` of its longrun.toml; `tree`
/// itself when nothing is new.
pub fn tree_with_closure(
    project: &Project,
    at: Oid,
    tree: Oid,
    changed: &[String],
) -> anyhow::Result<Oid> {
    let repo = &project.repo;
    let found = closure_paths(project, at, Some(changed))?;
    let text = repo::read_file_at(repo, at, config::FILE_NAME)?.unwrap_or_default();
    let (toml, _) = with_frozen(&text, &found)?;
    if toml == text {
        return Ok(tree);
    }
    let mut builder = repo.treebuilder(Some(&repo.find_tree(tree)?))?;
    builder.insert(config::FILE_NAME, repo.blob(toml.as_bytes())?, 0o100644)?;
    Ok(builder.write()?)
}

/// When an initializer given a feature list is accepted: the features
/// given as passing whose checks failed on its tree (`ids`) set back to
/// `passes: false` by a commit of the orchestrator's on top of `head`.
/// None when there are none.
pub fn reset_given(project: &Project, head: Oid, ids: &[String]) -> anyhow::Result<Option<Oid>> {
    if ids.is_empty() {
        return Ok(None);
    }
    let repo = &project.repo;
    let text = repo::read_file_at(repo, head, crate::features::FILE_NAME)?.unwrap_or_default();
    let text = crate::features::reset_passes(&text, ids).map_err(anyhow::Error::msg)?;
    let commit = repo.find_commit(head)?;
    let mut tree = repo.treebuilder(Some(&commit.tree()?))?;
    tree.insert(
        crate::features::FILE_NAME,
        repo.blob(text.as_bytes())?,
        0o100644,
    )?;
    let tree = repo.find_tree(tree.write()?)?;
    let sig = repo::signature()?;
    let listed: Vec<String> = ids
        .iter()
        .map(|id| format!("- {}", crate::sanitize::line(id)))
        .collect();
    let message = format!(
        "longrun: reset the features given as passing whose checks fail\n\n\
         These features came in marked passing (init --features), but their\n\
         checks failed on the initializer's tree, so they start over as failing.\n\n{}\n",
        listed.join("\n")
    );
    Ok(Some(repo.commit(
        None,
        &sig,
        &sig,
        &message,
        &tree,
        &[&commit],
    )?))
}

/// longrun.toml's text with `paths` added to `[run] frozen` (sorted, no
/// repeats), comments and layout kept; and the whole list.
fn with_frozen(text: &str, paths: &[String]) -> anyhow::Result<(String, Vec<String>)> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .with_context(|| format!("{} does not parse", config::FILE_NAME))?;
    let run = doc
        .entry("run")
        .or_insert_with(|| toml_edit::Item::Table(toml_edit::Table::new()))
        .as_table_like_mut()
        .context("[run] is not a table")?;
    let mut frozen: Vec<String> = run
        .get("frozen")
        .and_then(|i| i.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let before = frozen.clone();
    for p in paths {
        // A file below a plain pattern of the list is covered by it already.
        let covered = frozen
            .iter()
            .chain(paths)
            .any(|d| !globset::escape(d).contains('[') && p.starts_with(&format!("{d}/")));
        if !frozen.contains(p) && !covered {
            frozen.push(p.clone());
        }
    }
    if frozen == before {
        return Ok((text.to_string(), frozen));
    }
    let mut array = toml_edit::Array::new();
    for p in &frozen {
        array.push_formatted(toml_edit::Value::from(p.as_str()).decorated("\n    ", ""));
    }
    array.set_trailing(",\n");
    array.set_trailing_comma(false);
    match run.get_mut("frozen") {
        Some(item) => *item = toml_edit::value(array),
        None => {
            run.insert("frozen", toml_edit::value(array));
        }
    }
    Ok((doc.to_string(), frozen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_paths_join_the_run_section_and_comments_stay() {
        let text = "# settings\n[run]\n# Paths a worker may not change.\nprotected = [\"SPEC.md\", \"longrun.toml\"]\nfrozen = []\n\n[tools]\noutput_cap = 10\n";
        let (out, all) = with_frozen(text, &["tests".into(), "checks/a.sh".into()]).unwrap();
        assert_eq!(all, ["tests", "checks/a.sh"]);
        assert!(out.contains("# Paths a worker may not change."), "{out}");
        assert!(out.contains("[tools]\noutput_cap = 10"), "{out}");
        let parsed = crate::config::Config::parse(&out, Path::new("longrun.toml")).unwrap();
        assert_eq!(parsed.run.frozen, ["tests", "checks/a.sh"]);
        let (again, _) = with_frozen(&out, &["tests".into()]).unwrap();
        assert_eq!(again, out, "nothing new, nothing written");
        let (fresh, _) = with_frozen("[model]\nname = \"x\"\n", &["tests".into()]).unwrap();
        let parsed = crate::config::Config::parse(&fresh, Path::new("longrun.toml")).unwrap();
        assert_eq!(parsed.run.frozen, ["tests"]);
    }

    #[test]
    fn fixed_files_brought_up_to_date_by_the_difference_equal_a_whole_walk() {
        // The cache must never miss a protected file a session added,
        // moved, turned into a symlink or a directory, nor keep one it deleted.
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path()).unwrap();
        let rules =
            PathRules::new(&["SPEC.md".into()], &["tests".into(), "*.lock".into()]).unwrap();
        let tree = |files: &[(&str, i32, &str)]| {
            let files: Vec<(&str, i32, &[u8])> = files
                .iter()
                .map(|(p, m, b)| (*p, *m, b.as_bytes()))
                .collect();
            crate::git::tree_of(&repo, &files)
        };
        let states = [
            tree(&[
                ("SPEC.md", 0o100644, "a"),
                ("tests/t.py", 0o100644, "1"),
                ("m.py", 0o100644, "x"),
            ]),
            tree(&[
                ("SPEC.md", 0o100755, "a"),
                ("tests/t.py", 0o100644, "2"),
                ("tests/u/v.py", 0o100644, "3"),
                ("a.lock", 0o120000, "/etc/passwd"),
                ("m.py", 0o100644, "y"),
            ]),
            tree(&[
                ("SPEC.md/x", 0o100644, "a"),
                ("tests", 0o100644, "now a file"),
                ("b.lock", 0o100644, ""),
            ]),
            tree(&[("m.py", 0o100644, "x")]),
            tree(&[
                ("SPEC.md", 0o100644, "a"),
                ("tests/t.py", 0o100644, "1"),
                ("m.py", 0o100644, "x"),
            ]),
        ];
        let mut files = fixed_walk(&states[0], &rules).unwrap();
        for pair in states.windows(2) {
            files = fixed_changed(&repo, &pair[0], &pair[1], &rules, files).unwrap();
            assert_eq!(files, fixed_walk(&pair[1], &rules).unwrap());
        }
        assert_eq!(files.keys().collect::<Vec<_>>(), ["SPEC.md", "tests/t.py"]);
    }

    #[test]
    fn writing_beneath_replaces_symlinks_instead_of_following_them() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("tests")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("f"), root.path().join("g")).unwrap();
        write_beneath(root.path(), "tests/test_a.py", b"assert 1\n", 0o644).unwrap();
        write_beneath(root.path(), "g", b"x", 0o755).unwrap();
        assert_eq!(
            std::fs::read(root.path().join("tests/test_a.py")).unwrap(),
            b"assert 1\n"
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        assert!(!std::fs::symlink_metadata(root.path().join("g"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(write_beneath(root.path(), "../x", b"", 0o644).is_err());
    }
}
