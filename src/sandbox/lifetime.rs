//! Tying every process of a session to the orchestrator's lifetime.
//!
//! PDEATHSIG ends the worker when the orchestrator dies, but not the tools it
//! started or what they left in the background. So the confined process
//! moves into a PID namespace of its own (through an unprivileged user
//! namespace where it lacks CAP_SYS_ADMIN): it forks the namespace's init,
//! which forks the process that goes on with the session and then only reaps
//! orphans; each waits for its child and passes on the exit status, and each
//! dies with its parent. When the init dies the kernel kills every process
//! left in the namespace, however they were started.

use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

/// Make the rest of this process run in a new PID namespace under a reaper
/// init. Returns (in the namespace) the line for the session's trailers; the
/// original process and the init never return: they exit with their child's status. Must run
/// before any thread starts and before seccomp, which denies namespaces.
pub fn bind_to_parent() -> anyhow::Result<String> {
    let how = match unshare(CloneFlags::CLONE_NEWPID) {
        Ok(()) => "own PID namespace",
        Err(nix::errno::Errno::EPERM) => {
            match user_namespace().and_then(|()| Ok(unshare(CloneFlags::CLONE_NEWPID)?)) {
                Ok(()) => "own user and PID namespace",
                Err(e) => return Ok(unbound(&e.to_string())),
            }
        }
        Err(e) => return Ok(unbound(&e.to_string())),
    };
    // SAFETY: single-threaded here (the caller runs at process start); the
    // parent side only waits and exits.
    match unsafe { fork() }? {
        ForkResult::Child => {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
        }
        ForkResult::Parent { child } => wait_and_exit(child, false),
    }
    // Now PID 1 of the namespace. Fork once more: PID 1 stays a reaper of
    // orphans (so zombies never pile up against the process limit) and the
    // child goes on with the session.
    // SAFETY: still single-threaded.
    match unsafe { fork() }? {
        ForkResult::Child => {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            Ok(format!(
                "lifetime: {how}; every process of the session ends with it"
            ))
        }
        ForkResult::Parent { child } => wait_and_exit(child, true),
    }
}

fn unbound(why: &str) -> String {
    format!("lifetime: no PID namespace ({why}); leftover processes are ended when the session is recovered")
}

/// Hold nothing of the session, wait for `child`, and exit as it did. The
/// namespace's init (`reaper`) also reaps every orphan that is handed to it.
fn wait_and_exit(child: nix::unistd::Pid, reaper: bool) -> ! {
    // SAFETY: closing our own descriptors; the child has its own copies.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
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
