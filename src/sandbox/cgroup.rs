//! A cgroup v2 of its own for a confined process tree, where longrun may
//! make one: `memory.max` (and `pids.max`, beside the PID namespace's own
//! limit) then holds the whole tree, so a memory hog ends that session's
//! tools and nothing else.
//!
//! The tree is started inside the new cgroup (clone3 with
//! `CLONE_INTO_CGROUP`, see `lifetime`) rather than moved into it: a write
//! to `cgroup.procs` waits for an RCU grace period, milliseconds on every
//! start. A v1 hierarchy is never used: its memory cgroup is usually the one
//! a supervisor accounts the whole job in, and the PID namespace already
//! holds the process limit. Where no v2 cgroup can be written (an
//! unprivileged user without delegation, or a host whose v2 hierarchy
//! offers neither controller), the caller falls back to rlimits. Empty
//! cgroups of earlier runs are removed on the way in.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use super::Limits;

/// A new cgroup, limits written, not yet holding any process.
#[derive(Debug)]
pub struct Cgroup {
    pub dir: PathBuf,
    /// The directory, open: what `CLONE_INTO_CGROUP` takes.
    pub fd: OwnedFd,
    /// Whether `pids.max` was written.
    pub pids: bool,
    /// Whether `memory.max` was written.
    pub memory: bool,
}

/// Make a fresh cgroup with `limits` under our own v2 cgroup, where this
/// user may. None when no v2 hierarchy offers the memory or pids controller
/// here or it is not writable.
pub fn prepare(limits: &Limits) -> Option<Cgroup> {
    let (dir, offered) = own_v2_cgroup()?;
    let mut files = Vec::new();
    if offered.iter().any(|c| c == "pids") {
        files.push(("pids.max", limits.processes.to_string()));
    }
    if offered.iter().any(|c| c == "memory") {
        files.push((
            "memory.max",
            limits.memory_mb.saturating_mul(1 << 20).to_string(),
        ));
    }
    if files.is_empty() {
        return None;
    }
    remove_stale(&dir);
    enable_controllers(&dir, &files);
    // Another sandbox's clean-up may remove a new cgroup before anything is
    // in it (it is empty until then): that only makes the clone fail, and
    // the caller then starts without one. Names are random, not the pid:
    // every confined process is PID 1 of its own namespace.
    let dir = dir.join(format!("longrun-{:016x}", rand::random::<u64>()));
    std::fs::create_dir(&dir).ok()?;
    let written = files
        .iter()
        .all(|(name, value)| std::fs::write(dir.join(name), value).is_ok());
    let fd = written
        .then(|| std::fs::File::open(&dir).ok())
        .flatten()
        .map(OwnedFd::from);
    match fd {
        Some(fd) => Some(Cgroup {
            pids: files.iter().any(|(n, _)| *n == "pids.max"),
            memory: files.iter().any(|(n, _)| *n == "memory.max"),
            dir,
            fd,
        }),
        None => {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

/// For `longrun doctor`: where the memory and process limits are held here.
pub fn report() -> Vec<String> {
    let Some((dir, offered)) = own_v2_cgroup() else {
        return vec![
            "no cgroup v2 hierarchy here; memory is limited by RLIMIT_AS per process".into(),
        ];
    };
    let has = |c: &str| offered.iter().any(|o| o == c);
    let controllers = ["memory", "pids"]
        .into_iter()
        .filter(|c| has(c))
        .collect::<Vec<_>>()
        .join(" and ");
    if controllers.is_empty() {
        return vec![format!(
            "v2 at {} offers neither memory nor pids; memory is limited by RLIMIT_AS per process",
            dir.display()
        )];
    }
    let writable = nix::unistd::access(&dir, nix::unistd::AccessFlags::W_OK).is_ok();
    let mut line = if writable {
        format!(
            "v2 at {} offers {controllers} (writable: longrun starts each session in a cgroup of its own)",
            dir.display()
        )
    } else {
        format!(
            "v2 at {} offers {controllers} but is not writable by this user (no delegation)",
            dir.display()
        )
    };
    if !writable || !has("memory") {
        line.push_str("; memory is limited by RLIMIT_AS per process");
    }
    vec![line]
}

/// Where a v2 hierarchy is mounted on systemd and most other hosts: pure
/// v2, then hybrid. Checked by filesystem type first, because reading
/// /proc/self/mountinfo costs a tenth of a millisecond on every start.
const USUAL_V2_MOUNTS: &[&str] = &["/sys/fs/cgroup", "/sys/fs/cgroup/unified"];

/// Our own cgroup in the v2 hierarchy, and the controllers it offers.
fn own_v2_cgroup() -> Option<(PathBuf, Vec<String>)> {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    let usual = USUAL_V2_MOUNTS.iter().find(|m| {
        nix::sys::statfs::statfs(**m)
            .is_ok_and(|fs| fs.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
    });
    match usual {
        // Mounted where it shows our cgroup namespace's root (the usual case).
        Some(at) => {
            let mount = Mount {
                at: PathBuf::from(at),
                root: "/".into(),
            };
            controllers(join(&mount, &own_path(&own, |c| c.is_empty())?))
        }
        None => {
            let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            v2_place(&mounts, &own)
        }
    }
}

/// Our own cgroup in the v2 hierarchy, from the mount table.
fn v2_place(mountinfo: &str, own: &str) -> Option<(PathBuf, Vec<String>)> {
    let mount = mount_point(mountinfo, |fstype| fstype == "cgroup2")?;
    controllers(join(&mount, &own_path(own, |c| c.is_empty())?))
}

/// `dir` and the controllers its `cgroup.controllers` offers.
fn controllers(dir: PathBuf) -> Option<(PathBuf, Vec<String>)> {
    let offered = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    Some((dir, offered.split_whitespace().map(String::from).collect()))
}

/// The first mount whose fstype matches: where it is mounted, and which
/// cgroup of the hierarchy it shows there.
fn mount_point(mountinfo: &str, wanted: impl Fn(&str) -> bool) -> Option<Mount> {
    mountinfo.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut l = left.split_whitespace().skip(3);
        let (root, at) = (l.next()?, l.next()?);
        let fstype = right.split_whitespace().next()?;
        wanted(fstype).then(|| Mount {
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
";
    const OWN: &str = "8:pids:/\n4:memory:/job/42\n0::/\n";

    #[test]
    fn finds_the_v2_mount() {
        let v2 = mount_point(MOUNTS, |t| t == "cgroup2").unwrap();
        assert_eq!(v2.at, PathBuf::from("/sys/fs/cgroup/unified"));
        assert_eq!(v2.root, "/");
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
