//! A cgroup of its own for a confined process tree, where longrun may make
//! one: `pids.max` and the memory limit then hold the whole tree, so a fork
//! bomb or a memory hog ends that session's tools and nothing else.
//!
//! cgroup v2 is preferred. On a hybrid host whose pids controller is still
//! mounted as v1, that hierarchy holds `pids.max` (root is not held by
//! RLIMIT_NPROC, so this is what stops a fork bomb run as root); memory is
//! limited only through v2, since a v1 memory cgroup is usually the one a
//! supervisor accounts the whole job in. Where no cgroup can be written (an
//! unprivileged user without delegation), the caller falls back to rlimits.
//! Empty cgroups of earlier runs are removed on the way in.

use std::path::{Path, PathBuf};

use super::Limits;

/// Which limits a cgroup holds, and where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CgroupOutcome {
    /// The cgroup holding `pids.max`, when one does.
    pub pids: Option<PathBuf>,
    /// The cgroup holding the memory limit, when one does.
    pub memory: Option<PathBuf>,
}

/// One controller's place: the directory of our cgroup, and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    dir: PathBuf,
    v2: bool,
}

/// Move the calling process into a new cgroup per controller with `limits`.
pub fn enter(limits: &Limits) -> CgroupOutcome {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let mut outcome = CgroupOutcome::default();
    let bytes = limits.memory_mb.saturating_mul(1 << 20).to_string();
    let processes = limits.processes.to_string();
    let memory = place("memory", &mounts, &own).filter(|m| m.v2);
    let pids = place("pids", &mounts, &own);
    match (pids, memory) {
        // One v2 cgroup holds both.
        (Some(p), Some(m)) if p == m => {
            let dir = limit(&p, &[("pids.max", processes), ("memory.max", bytes)]);
            outcome.pids = dir.clone();
            outcome.memory = dir;
        }
        (p, m) => {
            if let Some(m) = m {
                outcome.memory = limit(&m, &[("memory.max", bytes)]);
            }
            if let Some(p) = p {
                outcome.pids = limit(&p, &[("pids.max", processes)]);
            }
        }
    }
    outcome
}

/// For `longrun doctor`: where each limit would be held on this machine.
pub fn report() -> Vec<String> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let describe =
        |controller: &str, fallback: &str, v1_ok: bool| match place(controller, &mounts, &own)
            .filter(|p| p.v2 || v1_ok)
        {
            Some(p) if writable(&p.dir) => format!(
                "{controller}: cgroup {} at {} (writable: longrun makes one per session)",
                if p.v2 { "v2" } else { "v1" },
                p.dir.display()
            ),
            Some(p) => format!(
                "{controller}: cgroup at {} not writable by this user (no delegation); {fallback}",
                p.dir.display()
            ),
            None => format!("{controller}: no cgroup controller available; {fallback}"),
        };
    vec![
        describe(
            "pids",
            "RLIMIT_NPROC instead (which does not hold root)",
            true,
        ),
        describe("memory", "RLIMIT_AS per process instead", false),
    ]
}

fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

/// Where `controller` can be limited: a v2 hierarchy that offers it, else its v1 mount.
fn place(controller: &str, mountinfo: &str, own: &str) -> Option<Place> {
    let v2 = mount_point(mountinfo, |fstype, _| fstype == "cgroup2").and_then(|m| {
        let dir = join(&m, &own_path(own, |c| c.is_empty())?);
        let offered = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
        offered
            .split_whitespace()
            .any(|c| c == controller)
            .then_some(Place { dir, v2: true })
    });
    v2.or_else(|| {
        let m = mount_point(mountinfo, |fstype, opts| {
            fstype == "cgroup" && opts.split(',').any(|o| o == controller)
        })?;
        let rel = own_path(own, |c| c.split(',').any(|x| x == controller))?;
        Some(Place {
            dir: join(&m, &rel),
            v2: false,
        })
    })
}

/// The first mount whose (fstype, super options) match: where it is mounted,
/// and which cgroup of the hierarchy it shows there.
fn mount_point(mountinfo: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<Mount> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut l = left.split_whitespace().skip(3);
        let (root, at) = (l.next()?, l.next()?);
        let mut r = right.split_whitespace();
        let (fstype, _source, opts) = (r.next()?, r.next()?, r.next().unwrap_or(""));
        wanted(fstype, opts).then(|| Mount {
            at: PathBuf::from(at),
            root: root.to_string(),
        })
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    at: PathBuf,
    root: String,
}

/// Our cgroup path for the hierarchy whose controller list matches.
fn own_path(own: &str, wanted: impl Fn(&str) -> bool) -> Option<String> {
    own.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        wanted(controllers).then(|| path.to_string())
    })
}

/// The directory of cgroup `path` (as /proc/self/cgroup names it) under `mount`.
fn join(mount: &Mount, path: &str) -> PathBuf {
    let below = path.strip_prefix(mount.root.as_str()).unwrap_or(path);
    match below.trim_start_matches('/') {
        "" => mount.at.clone(),
        below => mount.at.join(below),
    }
}

/// Make a fresh `longrun-XXXX` under `place`, write `files`, and move in. None
/// if any step fails. The name is random, not the pid: every confined process
/// is PID 1 of its own namespace, and two sessions must never share a cgroup.
fn limit(place: &Place, files: &[(&str, String)]) -> Option<PathBuf> {
    remove_stale(&place.dir);
    if place.v2 {
        enable_controllers(&place.dir, files);
    }
    // Another sandbox's clean-up may remove a new cgroup before we are in it
    // (it is empty until then): try again under a new name.
    (0..3).find_map(|_| enter_new(place, files))
}

fn enter_new(place: &Place, files: &[(&str, String)]) -> Option<PathBuf> {
    let dir = place
        .dir
        .join(format!("longrun-{:016x}", rand::random::<u64>()));
    std::fs::create_dir(&dir).ok()?;
    let written = files
        .iter()
        .all(|(name, value)| std::fs::write(dir.join(name), value).is_ok())
        && std::fs::write(dir.join("cgroup.procs"), "0").is_ok();
    if written {
        Some(dir)
    } else {
        let _ = std::fs::remove_dir(&dir);
        None
    }
}

/// cgroup v2 offers a controller to children only once the parent enables it.
fn enable_controllers(dir: &Path, files: &[(&str, String)]) {
    for (name, _) in files {
        if let Some((controller, _)) = name.split_once('.') {
            let _ = std::fs::write(dir.join("cgroup.subtree_control"), format!("+{controller}"));
        }
    }
}

/// Remove the empty `longrun-*` cgroups earlier runs left (rmdir fails on busy ones).
fn remove_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_name().to_string_lossy().starts_with("longrun-") {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
35 25 0:30 / /sys/fs/cgroup/pids rw,relatime shared:14 - cgroup cgroup rw,pids
36 25 0:31 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw
37 25 0:32 / /sys/fs/cgroup/memory rw,relatime shared:16 - cgroup cgroup rw,memory
";
    const OWN: &str = "8:pids:/\n4:memory:/job/42\n0::/\n";

    #[test]
    fn finds_v1_and_v2_mounts() {
        let v2 = mount_point(MOUNTS, |t, _| t == "cgroup2").unwrap();
        assert_eq!(v2.at, PathBuf::from("/sys/fs/cgroup/unified"));
        let pids = mount_point(MOUNTS, |t, o| t == "cgroup" && o.contains("pids")).unwrap();
        assert_eq!(pids.at, PathBuf::from("/sys/fs/cgroup/pids"));
        assert_eq!(pids.root, "/");
    }

    #[test]
    fn finds_own_paths() {
        assert_eq!(own_path(OWN, |c| c == "memory"), Some("/job/42".into()));
        assert_eq!(own_path(OWN, |c| c.is_empty()), Some("/".into()));
        let m = Mount {
            at: PathBuf::from("/sys/fs/cgroup"),
            root: "/job".into(),
        };
        assert_eq!(join(&m, "/job/42"), PathBuf::from("/sys/fs/cgroup/42"));
    }
}
