//! Tying every process of a session to the orchestrator's lifetime.
//!
//! PDEATHSIG ends the worker when the orchestrator dies, but not the tools it
//! started or what they left in the background. So the confined process
//! moves into a PID namespace of its own (through an unprivileged user
//! namespace where it lacks CAP_SYS_ADMIN) as the namespace's init: it forks,
//! the child goes on as PID 1, and the parent only waits and passes on the
//! exit status. Both die with their parent; when PID 1 dies the kernel kills
//! every process left in the namespace, however they were started.

use nix::sched::{unshare, CloneFlags};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{fork, ForkResult};

/// Make the rest of this process run as PID 1 of a new PID namespace. Returns
/// (in the namespace) the line for the session's trailers; the original
/// process never returns: it exits with the namespace init's status. Must run
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
            Ok(format!(
                "lifetime: {how}; every process of the session ends with it"
            ))
        }
        ForkResult::Parent { child } => wait_and_exit(child),
    }
}

fn unbound(why: &str) -> String {
    format!("lifetime: no PID namespace ({why}); leftover processes are ended when the session is recovered")
}

/// The original process: hold nothing of the session, wait for the namespace's
/// init, and exit as it did.
fn wait_and_exit(child: nix::unistd::Pid) -> ! {
    // SAFETY: closing our own descriptors; the child has its own copies.
    unsafe {
        libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
    }
    let code = loop {
        match waitpid(child, None) {
            Ok(WaitStatus::Exited(_, code)) => break code,
            Ok(WaitStatus::Signaled(_, sig, _)) => break 128 + sig as i32,
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
