//! Tying every process of a session to the orchestrator's lifetime, and
//! holding the session's process count.
//!
//! PDEATHSIG ends the worker when the orchestrator dies, but not the tools it
//! started or what they left in the background. So the confined process
//! moves into a PID namespace of its own (through an unprivileged user
//! namespace where it lacks CAP_SYS_ADMIN): it starts the namespace's init
//! (inside the session's cgroup, when there is one), which forks the process
//! that goes on with the session and then only reaps orphans; each waits for
//! its child and passes on the exit status, and each dies with its parent.
//! When the init dies the kernel kills every process left in the namespace,
//! however they were started.
//!
//! The namespace also holds the process limit, for root too (RLIMIT_NPROC
//! does not): the init sets the namespace's `pid_max` (per namespace since
//! Linux 6.14) so that exactly `processes` PIDs can exist in it at once.

use std::os::fd::{AsRawFd, OwnedFd};

use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};

use super::{cgroup, Limits};

/// Below this, PIDs are not reused once a namespace's PIDs have wrapped (the
/// kernel's RESERVED_PIDS); the namespace's PIDs are kept above it.
const RESERVED_PIDS: u64 = 300;
/// The kernel's largest `pid_max` (PID_MAX_LIMIT).
const PID_MAX_LIMIT: u64 = 4 << 20;

/// How the confined tree is bound and held.
#[derive(Debug)]
pub struct Bound {
    /// The line for the session's trailers.
    pub lifetime: String,
    /// What holds the process limit, if anything does besides rlimits.
    pub processes: Option<String>,
    /// The cgroup holding the memory limit, when one does.
    pub memory: Option<std::path::PathBuf>,
    /// Whether the process runs in a PID namespace of its own.
    pub own_pid_namespace: bool,
}

/// Make the rest of this process run in a new PID namespace under a reaper
/// init, in a cgroup of its own where one can be made, with the namespace
/// holding `limits.processes`. Returns (in the namespace) how it is bound;
/// the original process and the init never return: they exit with their
/// child's status. Must run before any thread starts and before seccomp,
/// which denies namespaces.
pub fn bind_to_parent(limits: &Limits) -> anyhow::Result<Bound> {
    let mut group = cgroup::prepare(limits);
    let how = match unshare(CloneFlags::CLONE_NEWPID) {
        Ok(()) => Ok("own PID namespace"),
        Err(nix::errno::Errno::EPERM) => {
            match user_namespace().and_then(|()| Ok(unshare(CloneFlags::CLONE_NEWPID)?)) {
                Ok(()) => Ok("own user and PID namespace"),
                Err(e) => Err(e.to_string()),
            }
        }
        Err(e) => Err(e.to_string()),
    };
    if how.is_err() && group.is_none() {
        return Ok(unbound(how.err().unwrap_or_default(), None));
    }
    // Start the namespace's init (or, without a namespace, the process that
    // goes on) straight inside the cgroup.
    let started = match &group {
        Some(g) => match fork_into(&g.fd) {
            Ok(started) => started,
            // The cgroup was removed under us, or cannot take processes:
            // go on without it.
            Err(_) => {
                group = None;
                // SAFETY: single-threaded here (the caller runs at process start).
                unsafe { fork() }?
            }
        },
        // SAFETY: as above.
        None => unsafe { fork() }?,
    };
    if let ForkResult::Parent { child } = started {
        wait_and_exit(child, false);
    }
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
    // Now PID 1 of the namespace (or, without one, a plain holder in the
    // cgroup): hold the namespace's PIDs, then fork the process that goes on
    // with the session. PID 1 stays a reaper of orphans, so zombies never
    // pile up against the process limit.
    let mut held = Vec::new();
    if how.is_ok() && limit_namespace(limits.processes).is_ok() {
        held.push("PID namespace".to_string());
    }
    if let Some(g) = group.as_ref().filter(|g| g.pids) {
        held.push(format!("cgroup {}", g.dir.display()));
    }
    let memory = group.as_ref().filter(|g| g.memory).map(|g| g.dir.clone());
    // SAFETY: still single-threaded. A glibc fork, not a raw clone3, so the
    // process that goes on has its own thread bookkeeping.
    match unsafe { fork() }? {
        ForkResult::Child => nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?,
        ForkResult::Parent { child } => wait_and_exit(child, how.is_ok()),
    }
    let processes = (!held.is_empty()).then(|| held.join(" and "));
    Ok(match how {
        Ok(how) => Bound {
            lifetime: format!("lifetime: {how}; every process of the session ends with it"),
            processes,
            memory,
            own_pid_namespace: true,
        },
        Err(why) => Bound {
            memory,
            ..unbound(why, processes)
        },
    })
}

fn unbound(why: String, processes: Option<String>) -> Bound {
    Bound {
        lifetime: format!(
            "lifetime: no PID namespace ({why}); leftover processes are ended when the session is recovered"
        ),
        processes,
        memory: None,
        own_pid_namespace: false,
    }
}

/// In PID 1 of a new namespace: let at most `processes` PIDs exist in it at
/// once. The next PID is set above RESERVED_PIDS, so that allocation (which
/// never goes back below it once past it) cycles through exactly
/// `RESERVED_PIDS..pid_max`. Kernels before 6.14 have one global `pid_max`,
/// which root would change for the whole machine: they are left alone.
fn limit_namespace(processes: u64) -> anyhow::Result<()> {
    anyhow::ensure!(
        per_namespace_pid_max(),
        "pid_max is not per namespace before Linux 6.14"
    );
    let max = (RESERVED_PIDS + processes).min(PID_MAX_LIMIT);
    std::fs::write("/proc/sys/kernel/ns_last_pid", RESERVED_PIDS.to_string())?;
    std::fs::write("/proc/sys/kernel/pid_max", max.to_string())?;
    Ok(())
}

/// Whether this kernel keeps `pid_max` per PID namespace (Linux 6.14 and later).
pub fn per_namespace_pid_max() -> bool {
    nix::sys::utsname::uname()
        .map(|uts| at_least_6_14(&uts.release().to_string_lossy()))
        .unwrap_or(false)
}

/// Whether a kernel release string ("6.18.0-1-amd64") is 6.14 or later.
fn at_least_6_14(release: &str) -> bool {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (major, minor) >= (6, 14)
}

/// Fork straight into the cgroup open at `cgroup` (clone3 with
/// CLONE_INTO_CGROUP), which costs nothing like moving a running process.
fn fork_into(cgroup: &OwnedFd) -> nix::Result<ForkResult> {
    /// The kernel's `struct clone_args` (version 2, with `cgroup`).
    #[repr(C)]
    #[derive(Default)]
    struct CloneArgs {
        flags: u64,
        pidfd: u64,
        child_tid: u64,
        parent_tid: u64,
        exit_signal: u64,
        stack: u64,
        stack_size: u64,
        tls: u64,
        set_tid: u64,
        set_tid_size: u64,
        cgroup: u64,
    }
    const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;
    let args = CloneArgs {
        flags: CLONE_INTO_CGROUP,
        exit_signal: libc::SIGCHLD as u64,
        cgroup: cgroup.as_raw_fd() as u64,
        ..CloneArgs::default()
    };
    // SAFETY: a fork-like clone3 (no shared memory, no new stack) of a
    // single-threaded process. The child only runs on without calling into
    // glibc's thread bookkeeping: the namespace's init waits and forks.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &args as *const CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match rc {
        -1 => Err(nix::errno::Errno::last()),
        0 => Ok(ForkResult::Child),
        pid => Ok(ForkResult::Parent {
            child: Pid::from_raw(pid as i32),
        }),
    }
}

/// Hold nothing of the session, wait for `child`, and exit as it did. The
/// namespace's init (`reaper`) also reaps every orphan that is handed to it.
fn wait_and_exit(child: Pid, reaper: bool) -> ! {
    // SAFETY: closing our own descriptors; the child has its own copies.
    // Not dumpable: the sandbox sees the init in its own /proc, and its
    // environment (the caller's) must stay unreadable from there.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
    let wanted = if reaper { None } else { Some(child) };
    let code = loop {
        match waitpid(wanted, None) {
            Ok(WaitStatus::Exited(pid, code)) if pid == child => break code,
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => break 128 + sig as i32,
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break 1,
        }
    };
    // SAFETY: exiting without running the child's share of atexit handlers.
    unsafe { libc::_exit(code) }
}

/// Enter a new user namespace mapping our own uid and gid, so that an
/// unprivileged process may create the PID namespace.
fn user_namespace() -> anyhow::Result<()> {
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER)?;
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
}

/// The running longrun binary, for re-executing it. /proc/self/exe still
/// works when the file was replaced (an upgrade during an overnight run).
pub fn own_exe() -> std::path::PathBuf {
    let proc_exe = std::path::PathBuf::from("/proc/self/exe");
    if proc_exe.exists() {
        return proc_exe;
    }
    std::env::current_exe().unwrap_or(proc_exe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_releases_are_compared_as_numbers() {
        for (release, new) in [
            ("6.14.0", true),
            ("6.18.0-1-amd64", true),
            ("7.0", true),
            ("6.13.12-arch1-1", false),
            ("6.9.1", false),
            ("5.15.0-91-generic", false),
            ("garbage", false),
        ] {
            assert_eq!(at_least_6_14(release), new, "{release}");
        }
    }

    /// clone3 with CLONE_INTO_CGROUP starts the child inside the cgroup. Any
    /// v2 cgroup takes processes, controllers or not, so this runs on every
    /// machine with a writable v2 hierarchy (as root here).
    #[test]
    fn fork_into_starts_the_child_in_the_cgroup() {
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let Some(v2) = mounts.lines().find_map(|l| {
            let (left, right) = l.split_once(" - ")?;
            right
                .starts_with("cgroup2 ")
                .then(|| left.split_whitespace().nth(4).map(String::from))?
        }) else {
            eprintln!("skipped: no cgroup v2 hierarchy on this machine");
            return;
        };
        let name = format!("longrun-test-{:016x}", rand::random::<u64>());
        let dir = std::path::Path::new(&v2).join(&name);
        if let Err(e) = std::fs::create_dir(&dir) {
            eprintln!("skipped: cannot make a cgroup under {v2}: {e}");
            return;
        }
        let fd = OwnedFd::from(std::fs::File::open(&dir).unwrap());
        let wanted = format!("0::/{name}\n");
        match fork_into(&fd).unwrap() {
            ForkResult::Child => {
                // Only raw syscalls here: the test harness has other threads.
                let mut buf = [0u8; 4096];
                // SAFETY: open/read/_exit on a stack buffer.
                let n = unsafe {
                    let fd = libc::open(c"/proc/self/cgroup".as_ptr(), libc::O_RDONLY);
                    libc::read(fd, buf.as_mut_ptr().cast(), buf.len())
                };
                let seen = &buf[..n.max(0) as usize];
                let found = seen.windows(wanted.len()).any(|w| w == wanted.as_bytes());
                // SAFETY: leaving the forked child at once.
                unsafe { libc::_exit(if found { 0 } else { 1 }) }
            }
            ForkResult::Parent { child } => {
                let status = waitpid(child, None).unwrap();
                let _ = std::fs::remove_dir(&dir);
                assert_eq!(status, WaitStatus::Exited(child, 0), "child not in {name}");
            }
        }
    }
}
