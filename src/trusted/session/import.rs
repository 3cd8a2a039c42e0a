//! A session's work brought into the project's repository as data.
//!
//! The orchestrator runs `longrun __export` confined with the session's own
//! sandbox spec (see [`crate::confined::run_export`]), in an overlay
//! workspace with the paths the session changed on its stdin
//! ([`super::upper`]), and reads its stdout from a pipe, with a byte cap
//! and a time limit: one JSON header line, then a git pack. The pack is
//! indexed into a quarantine under `.longrun/import/`, its objects are
//! checked to be complete from the session's HEAD down to what main already
//! holds (reading only what differs from a parent), and only then is the pack moved into the
//! project's object store and `refs/longrun/sessions/NNNN` set. Any failure
//! here is the session's: its verdict says why.

use std::io::{BufRead, BufReader, Read, Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use git2::{Oid, Repository};

use crate::protocol::{ExportHeader, EXPORT_OVER_CAP};
use crate::sandbox::SandboxSpec;
use crate::trusted::record::repo;
use crate::trusted::record::verdict::work_ref;
use crate::trusted::Project;

/// How long an export may take before it is killed.
const TIME_LIMIT: Duration = Duration::from_secs(300);
/// The longest header line.
const HEADER_CAP: u64 = 64 * 1024;
/// Most dropped files named in a reason.
const NAMED: usize = 10;

/// The session's work, in the project's repository at its ref.
#[derive(Debug, Clone)]
pub struct Imported {
    pub head: Oid,
    /// Uncommitted changes were committed as WIP (inside the sandbox).
    pub wip: bool,
    /// What the WIP commit left out for its size, one line each.
    pub dropped: Vec<String>,
}

impl Imported {
    /// The reason to give for what was left out of the kept work, if anything was.
    pub fn dropped_note(&self) -> Option<String> {
        if self.dropped.is_empty() {
            return None;
        }
        let mut named: Vec<String> = self.dropped.iter().take(NAMED).cloned().collect();
        if self.dropped.len() > NAMED {
            named.push(format!("{} more", self.dropped.len() - NAMED));
        }
        Some(format!(
            "uncommitted files over [sandbox] max_file_mb were left out of the kept work: {}",
            named.join(", ")
        ))
    }
}

/// Where the work goes and its bounds: owned, so an import can run on a
/// thread of its own while other sessions are served.
#[derive(Debug, Clone)]
pub struct Target {
    /// The project's `.git`.
    pub git_dir: PathBuf,
    /// The project's `.longrun`, where the quarantine is made.
    pub longrun_dir: PathBuf,
    pub max_workspace_mb: u64,
    pub max_file_mb: u64,
}

impl Target {
    pub fn of(project: &Project) -> Target {
        Target {
            git_dir: project.repo.path().to_path_buf(),
            longrun_dir: project.longrun_dir(),
            max_workspace_mb: project.config.sandbox.max_workspace_mb,
            max_file_mb: project.config.sandbox.max_file_mb,
        }
    }
}

/// [`import_work`] on a blocking thread, so that the sessions running at
/// the same time are served meanwhile.
pub async fn import_work_async(
    target: Target,
    session_dir: PathBuf,
    spec: SandboxSpec,
    base: Oid,
    number: u32,
) -> anyhow::Result<Imported> {
    tokio::task::spawn_blocking(move || import_work(&target, &session_dir, &spec, base, number))
        .await
        .context("the import stopped")?
}

/// Export the work of the session in `session_dir` (confined by `spec`) and
/// import it at the session's ref.
pub fn import_work(
    target: &Target,
    session_dir: &Path,
    spec: &SandboxSpec,
    base: Oid,
    number: u32,
) -> anyhow::Result<Imported> {
    let project = &Repository::open_bare(&target.git_dir)?;
    let quarantine = target
        .longrun_dir
        .join("import")
        .join(format!("{number:04}"));
    crate::fsutil::remove_tree(&quarantine)?;
    let pack_dir = quarantine.join("objects").join("pack");
    std::fs::create_dir_all(&pack_dir)
        .with_context(|| format!("failed to create {}", pack_dir.display()))?;
    let result =
        export_into(target, project, session_dir, spec, base, &pack_dir).and_then(|header| {
            let cap = target.max_workspace_mb;
            let head = check_connected(project, &quarantine, &header.head, base, cap)?;
            publish(project, &pack_dir)?;
            repo::set_ref(
                project,
                &work_ref(number),
                head,
                "longrun: the session's work",
            )?;
            Ok(Imported {
                head,
                wip: header.wip,
                dropped: header
                    .dropped
                    .iter()
                    .map(|d| crate::rules::printable(d).chars().take(200).collect())
                    .collect(),
            })
        });
    let _ = crate::fsutil::remove_tree(&quarantine);
    result
}

/// Run the export and index its pack into `pack_dir`; returns its header.
fn export_into(
    target: &Target,
    project: &Repository,
    session_dir: &Path,
    spec: &SandboxSpec,
    base: Oid,
    pack_dir: &Path,
) -> anyhow::Result<ExportHeader> {
    let log = session_dir.join("export.log");
    let cap = target.max_workspace_mb.saturating_mul(1 << 20);
    let max_file = target.max_file_mb.saturating_mul(1 << 20);
    let changed = changed_paths(spec, session_dir);
    let mut child = spawn(spec, base, (cap, max_file), changed, &log)?;
    let pid = child.id() as i32;
    let (done, watchdog) = watchdog(pid);
    let read = read_export(&mut child, target, project, pack_dir);
    if read.is_err() {
        kill(pid);
    }
    let status = child.wait();
    drop(done);
    let timed_out = watchdog.join().unwrap_or(false);
    let status = status.context("failed to wait for the export")?;
    if timed_out {
        bail!(
            "exporting its work took over {} s and was stopped",
            TIME_LIMIT.as_secs()
        );
    }
    if status.code() == Some(i32::from(EXPORT_OVER_CAP)) {
        bail!(over_cap(target));
    }
    if !status.success() {
        let tail = crate::fsutil::Bounds::tail(64 << 10, 10);
        let said = crate::fsutil::read_bounded(&log, tail)
            .ok()
            .flatten()
            .map(|r| r.bytes)
            .unwrap_or_default();
        let said = crate::rules::printable(
            crate::progress::tail(&String::from_utf8_lossy(&said), 3)
                .replace('\n', "; ")
                .trim(),
        );
        let said: String = said.chars().take(500).collect();
        bail!("its repository could not be exported ({status}): {said}");
    }
    read
}

fn over_cap(target: &Target) -> String {
    format!(
        "its work is over the cap of {} MiB ([sandbox] max_workspace_mb); nothing of it was kept",
        target.max_workspace_mb
    )
}

/// For an overlay workspace, the paths the session changed, read from its
/// upper layer ([`super::upper`]), in a file of the orchestrator's for the
/// export's stdin; None (the export compares the whole work tree) when the
/// workspace is no overlay or its upper layer cannot be read.
fn changed_paths(spec: &SandboxSpec, session_dir: &Path) -> Option<std::fs::File> {
    let layers = spec.layers.as_ref()?;
    let listed = super::upper::changed_paths(&layers.upper).and_then(|paths| {
        let mut file = tempfile::tempfile_in(session_dir)?;
        for path in paths {
            file.write_all(&path)?;
            file.write_all(b"\0")?;
        }
        file.rewind()?;
        Ok(file)
    });
    match listed {
        Ok(file) => Some(file),
        Err(e) => {
            tracing::warn!("the export compares the whole work tree: {e:#}");
            None
        }
    }
}

fn spawn(
    spec: &SandboxSpec,
    base: Oid,
    (cap, max_file): (u64, u64),
    changed: Option<std::fs::File>,
    log: &Path,
) -> anyhow::Result<Child> {
    // The session's own confinement, with no network and no inherited descriptor.
    let mut spec = SandboxSpec {
        keep_fds: Vec::new(),
        ..spec.clone()
    };
    spec.profile.network = crate::sandbox::Network::None;
    let mut cmd = Command::new(crate::sandbox::own_exe());
    cmd.arg("__export")
        .arg("--spec")
        .arg(serde_json::to_string(&spec)?)
        .arg("--base")
        .arg(base.to_string())
        .arg("--max-bytes")
        .arg(cap.to_string())
        .arg("--max-file-bytes")
        .arg(max_file.to_string())
        .args(changed.is_some().then_some("--changed-on-stdin"))
        .stdin(changed.map_or_else(Stdio::null, Stdio::from))
        .env_clear()
        .envs(crate::sandbox::session_env(&spec))
        .current_dir(&spec.workspace)
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(log)?)
        // A process group of its own from the start: a Ctrl-C at the
        // terminal is the orchestrator's to handle, never the export's.
        .process_group(0);
    // No `pre_exec`: the export dies with this process from when it
    // confines itself, right after reading the list of changed paths from
    // its stdin (a file). Without a closure to run, std starts it with
    // posix_spawn instead of copying this process's page tables with fork:
    // a long run's orchestrator holds tens of megabytes.
    cmd.spawn().context("failed to start the export")
}

/// A thread that kills `pid` past the time limit unless the sender is dropped first.
fn watchdog(pid: i32) -> (std::sync::mpsc::Sender<()>, std::thread::JoinHandle<bool>) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let handle = std::thread::spawn(move || match rx.recv_timeout(TIME_LIMIT) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            kill(pid);
            true
        }
        _ => false,
    });
    (tx, handle)
}

/// SIGKILL the export's process group (its own child, not yet waited for).
fn kill(pid: i32) {
    let _ = nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    );
}

/// The header, then the pack into an indexer in `pack_dir`, at most `cap` bytes.
fn read_export(
    child: &mut Child,
    target: &Target,
    project: &Repository,
    pack_dir: &Path,
) -> anyhow::Result<ExportHeader> {
    let cap = target.max_workspace_mb.saturating_mul(1 << 20);
    let stdout = child.stdout.take().context("the export has no stdout")?;
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    (&mut reader)
        .take(HEADER_CAP)
        .read_until(b'\n', &mut line)
        .context("failed to read the export")?;
    if !line.ends_with(b"\n") {
        bail!("its export wrote no header line");
    }
    let header: ExportHeader =
        serde_json::from_slice(&line).context("its export's header is not valid")?;
    let odb = project.odb()?;
    let mut indexer = git2::Indexer::new(Some(&odb), pack_dir, 0o444, true)?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    loop {
        let n = reader.read(&mut buf).context("failed to read the export")?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > cap {
            bail!(over_cap(target));
        }
        indexer
            .write_all(&buf[..n])
            .context("its pack is not a valid git pack")?;
    }
    if total == 0 {
        bail!("its export wrote no pack");
    }
    indexer
        .commit()
        .context("its pack is not a valid git pack (or refers to objects it lacks)")?;
    Ok(header)
}

/// The header's HEAD, once every object from it down to main's history is
/// present in the project's store or the quarantine, and the files it
/// brings come to at most `cap_mb` MiB unpacked.
fn check_connected(
    project: &Repository,
    quarantine: &Path,
    head: &str,
    base: Oid,
    cap_mb: u64,
) -> anyhow::Result<Oid> {
    let head = Oid::from_str(head).context("its export named no commit")?;
    let repo = Repository::open_bare(project.path())?;
    let objects = quarantine.join("objects");
    repo.odb()?.add_disk_alternate(&objects.to_string_lossy())?;
    let missing = |what: &str, id: Oid| anyhow::anyhow!("its work lacks the {what} {id}");
    repo.find_commit(head)
        .map_err(|_| missing("commit", head))?;
    let mut walk = repo.revwalk()?;
    walk.push(head).map_err(|_| missing("history of", head))?;
    if repo.find_commit(base).is_ok() {
        walk.hide(base)?;
    }
    let odb = repo.odb()?;
    // What the project's own store holds is complete (sessions cannot write
    // it), and so is what a parent holds: that is in the store or walked
    // here too. Only what differs from the first parent is read.
    let known = project.odb()?;
    let mut seen = std::collections::HashSet::new();
    let unpacked = std::cell::Cell::new(0);
    for oid in walk {
        let oid = oid.context("its history is incomplete")?;
        let commit = repo.find_commit(oid).map_err(|_| missing("commit", oid))?;
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let check = TreeCheck {
            repo: &repo,
            odb: &odb,
            known: &known,
            unpacked: &unpacked,
            cap_mb,
        };
        check.tree(commit.tree_id(), parent.as_ref(), &mut seen)?;
    }
    Ok(head)
}

/// The stores a tree of the pack is checked against.
struct TreeCheck<'r> {
    repo: &'r Repository,
    /// The project's store and the quarantine.
    odb: &'r git2::Odb<'r>,
    /// The project's store alone.
    known: &'r git2::Odb<'r>,
    /// The bytes of the new files so far, as they unpack.
    unpacked: &'r std::cell::Cell<u64>,
    cap_mb: u64,
}

impl TreeCheck<'_> {
    /// The tree `id` is well formed and complete, or the same as one known
    /// to be; `parent` is the tree at the same path in a parent commit.
    fn tree(
        &self,
        id: Oid,
        parent: Option<&git2::Tree>,
        seen: &mut std::collections::HashSet<Oid>,
    ) -> anyhow::Result<()> {
        if parent.is_some_and(|p| p.id() == id) || !seen.insert(id) || self.known.exists(id) {
            return Ok(());
        }
        let tree = self
            .repo
            .find_tree(id)
            .map_err(|_| anyhow::anyhow!("its work lacks the tree {id}"))?;
        well_formed(&tree)?;
        for (entry, before) in crate::git::changed_entries(&tree, parent) {
            match entry.kind() {
                Some(git2::ObjectType::Tree) => {
                    let before = before
                        .filter(|b| b.kind() == Some(git2::ObjectType::Tree))
                        .and_then(|b| self.repo.find_tree(b.id()).ok());
                    self.tree(entry.id(), before.as_ref(), seen)?
                }
                Some(git2::ObjectType::Blob) if seen.insert(entry.id()) => self.blob(entry.id())?,
                // Submodule commits live in other repositories.
                _ => {}
            }
        }
        Ok(())
    }
}

impl TreeCheck<'_> {
    /// A blob the tree names is present; a new one counts at its unpacked
    /// size: a pack is compressed, and a file of zeros a thousand times
    /// its packed size would otherwise reach the checkout whole.
    fn blob(&self, id: Oid) -> anyhow::Result<()> {
        if self.known.exists(id) {
            return Ok(());
        }
        let (size, _) = self
            .odb
            .read_header(id)
            .map_err(|_| anyhow::anyhow!("its work lacks the file {id}"))?;
        let total = self.unpacked.get().saturating_add(size as u64);
        self.unpacked.set(total);
        if total > self.cap_mb.saturating_mul(1 << 20) {
            bail!(
                "its work is over the cap of {} MiB ([sandbox] max_workspace_mb) once its \
                 files are unpacked; nothing of it was kept",
                self.cap_mb
            );
        }
        Ok(())
    }
}

/// The modes git writes in a tree: file, executable, symlink, directory, submodule.
const MODES: [i32; 5] = [0o100644, 0o100755, 0o120000, 0o040000, 0o160000];

/// A tree as git itself writes one (what `git fsck` holds it to): every
/// name a single path component (not empty, no `/`, not `.` or `..`), a
/// mode git knows, entries in git's order with no name twice. A session can
/// write raw objects into its clone; a tree it forged is refused here, before
/// any of it reaches the project's store, a checkout or a ref.
fn well_formed(tree: &git2::Tree) -> anyhow::Result<()> {
    let mut last: Option<(Vec<u8>, bool)> = None;
    for entry in tree.iter() {
        let name = entry.name_bytes();
        let shown = crate::sanitize::line(&String::from_utf8_lossy(name));
        let why = if name.is_empty() {
            Some("an empty name")
        } else if name.contains(&b'/') {
            Some("a name holding a slash")
        } else if name == b"." || name == b".." {
            Some("a name that is not a path component")
        } else if !MODES.contains(&entry.filemode_raw()) {
            Some("a mode git does not write")
        } else {
            None
        };
        if let Some(why) = why {
            bail!(
                "its work holds a tree git would not write: {why} ({shown:?} in tree {})",
                tree.id()
            );
        }
        let is_tree = entry.filemode_raw() == 0o040000;
        if let Some((before, before_tree)) = &last {
            if git_order(before, *before_tree, name, is_tree) != std::cmp::Ordering::Less {
                bail!(
                    "its work holds a tree git would not write: entries out of order or named \
                     twice ({shown:?} in tree {})",
                    tree.id()
                );
            }
        }
        last = Some((name.to_vec(), is_tree));
    }
    Ok(())
}

/// git's order of tree entries: by name, a directory's as if it ended in `/`.
fn git_order(a: &[u8], a_tree: bool, b: &[u8], b_tree: bool) -> std::cmp::Ordering {
    let end = |tree: bool| if tree { b'/' } else { 0 };
    let key =
        |name: &[u8], tree: bool| name.iter().copied().chain([end(tree)]).collect::<Vec<u8>>();
    // Equal names are twice the same name, whatever their modes.
    if a == b {
        return std::cmp::Ordering::Equal;
    }
    key(a, a_tree).cmp(&key(b, b_tree))
}

/// Move the checked pack from the quarantine into the project's object
/// store: the pack first, its index last, so no reader sees an index without it.
fn publish(project: &Repository, pack_dir: &Path) -> anyhow::Result<()> {
    let target = project.path().join("objects").join("pack");
    std::fs::create_dir_all(&target)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(pack_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("pack-"))
        })
        .collect();
    // .idx sorts before .pack; it goes last.
    files.sort_by_key(|p| p.extension().is_some_and(|e| e == "idx"));
    for file in files {
        let name = file.file_name().context("a pack file without a name")?;
        std::fs::rename(&file, target.join(name))
            .with_context(|| format!("failed to move {} into the project", file.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    #[test]
    fn new_files_count_at_their_unpacked_size_against_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let project = Repository::init_bare(dir.path().join("project.git")).unwrap();
        let sig = git2::Signature::now("t", "t@localhost").unwrap();
        let empty = project.treebuilder(None).unwrap().write().unwrap();
        let empty = project.find_tree(empty).unwrap();
        let base = project
            .commit(None, &sig, &sig, "base", &empty, &[])
            .unwrap();
        // The session's objects, loose in a store of their own that
        // borrows the project's: 3 MiB of zeros, about 3 KB compressed.
        let quarantine = dir.path().join("quarantine.git");
        let work = Repository::init_bare(&quarantine).unwrap();
        let objects = project.path().join("objects");
        std::fs::write(
            quarantine.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .unwrap();
        let work = Repository::open_bare(work.path()).unwrap();
        let blob = work.blob(&vec![0u8; 3 << 20]).unwrap();
        let mut tree = work.treebuilder(None).unwrap();
        tree.insert("zeros", blob, 0o100644).unwrap();
        let tree = work.find_tree(tree.write().unwrap()).unwrap();
        let parent = work.find_commit(base).unwrap();
        let head = work
            .commit(None, &sig, &sig, "work", &tree, &[&parent])
            .unwrap();
        let head = head.to_string();
        assert_eq!(
            check_connected(&project, &quarantine, &head, base, 4)
                .unwrap()
                .to_string(),
            head
        );
        let err = check_connected(&project, &quarantine, &head, base, 2).unwrap_err();
        assert!(
            format!("{err:#}").contains("over the cap of 2 MiB"),
            "{err:#}"
        );
    }

    #[test]
    fn entries_are_ordered_as_git_orders_them() {
        // A directory sorts as if its name ended in a slash.
        assert_eq!(git_order(b"a", false, b"a.b", false), Less);
        assert_eq!(git_order(b"a.b", false, b"a", true), Less);
        assert_eq!(git_order(b"a", true, b"a0", false), Less);
        assert_eq!(git_order(b"b", false, b"a", false), Greater);
        // The same name twice, as a file and as a directory too.
        assert_eq!(git_order(b"a", false, b"a", true), Equal);
    }

    #[test]
    fn the_export_starts_in_a_process_group_of_its_own() {
        // Before it confines itself it shares nothing a terminal's Ctrl-C
        // or the orchestrator's group reaches. (Here the program started is
        // the test binary, which exits at once: its zombie still says.)
        let dir = tempfile::tempdir().unwrap();
        let work = dir.path().join("work");
        std::fs::create_dir(&work).unwrap();
        let profile = crate::sandbox::Profile::bundled("default").unwrap();
        let spec = SandboxSpec::new(profile, work, dir.path().into(), dir.path().into());
        let log = dir.path().join("export.log");
        let mut child = spawn(&spec, Oid::zero(), (1, 1), None, &log).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", child.id())).unwrap();
        // After the name in parentheses: state, ppid, pgrp.
        let fields: Vec<&str> = stat
            .rsplit_once(')')
            .unwrap()
            .1
            .split_whitespace()
            .collect();
        assert_eq!(fields[2], child.id().to_string(), "{stat}");
        let _ = child.wait();
    }
}
