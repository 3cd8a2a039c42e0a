//! How a `registries` sandbox reaches the orchestrator's proxy without any
//! route out of its network namespace.
//!
//! The sandbox has a network namespace of its own with only `lo`. Before
//! anything of the session runs, the confining process binds the proxy's
//! address on that `lo` and hands the listening socket, over a Unix socket
//! inherited at [`PROXY_FD`], to the orchestrator, which accepts on it from
//! outside. Connections to [`PROXY_URL`] inside thus land in the proxy,
//! and every other address stays unreachable; nothing depends on Landlock's
//! network rules, and no process of the sandbox holds the listener.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::Context;
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

/// The descriptor on which a confined process inherits the proxy's channel
/// (3 is the broker's).
pub const PROXY_FD: i32 = 4;

/// Set (to `1`) for `__exec` when its stdin is the proxy's channel: it
/// moves the channel to [`PROXY_FD`] and puts `/dev/null` on stdin before
/// it confines itself ([`take_channel_from_stdin`]). The orchestrator then
/// starts the command with no code to run between fork and exec, which
/// lets the standard library use posix_spawn instead of copying the
/// orchestrator's page tables with a fork.
pub const PROXY_ON_STDIN_ENV: &str = "LONGRUN_PROXY_ON_STDIN";

/// In `__exec`, before confining: when [`PROXY_ON_STDIN_ENV`] says so, the
/// proxy's channel moves from stdin to [`PROXY_FD`] and stdin reads
/// nothing; the variable is dropped from the environment either way, so
/// the program exec'd never sees it.
pub fn take_channel_from_stdin() -> anyhow::Result<()> {
    let asked = std::env::var_os(PROXY_ON_STDIN_ENV).is_some_and(|v| v == "1");
    std::env::remove_var(PROXY_ON_STDIN_ENV);
    if !asked {
        return Ok(());
    }
    let null = std::fs::File::open("/dev/null").context("cannot open /dev/null")?;
    // SAFETY: dup2 on descriptor numbers this process owns; the copy at
    // PROXY_FD has no close-on-exec, as an inherited channel would not.
    unsafe {
        if libc::dup2(0, PROXY_FD) < 0 || libc::dup2(null.as_raw_fd(), 0) < 0 {
            return Err(std::io::Error::last_os_error())
                .context("cannot move the proxy's channel off stdin");
        }
    }
    Ok(())
}

/// The proxy's port on the sandbox's own `lo`.
pub const PROXY_PORT: u16 = 3128;

/// What `HTTP_PROXY` and its kin say inside.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// In the sandbox's fresh network namespace: bind the proxy's address and
/// hand the listener to whoever holds the other end of [`PROXY_FD`]. Returns
/// false when no channel was inherited (the sandbox then has loopback only).
pub fn hand_over_listener() -> anyhow::Result<bool> {
    // SAFETY: fstat on a descriptor number; a closed one only fails.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(PROXY_FD, &mut st) } != 0 || st.st_mode & libc::S_IFMT != libc::S_IFSOCK
    {
        return Ok(false);
    }
    // SAFETY: PROXY_FD is open (checked above) and ours alone from here on:
    // it is closed when `channel` drops, before anything else runs.
    let channel = unsafe { OwnedFd::from_raw_fd(PROXY_FD) };
    let listener = std::net::TcpListener::bind(("127.0.0.1", PROXY_PORT))
        .with_context(|| format!("cannot listen on 127.0.0.1:{PROXY_PORT} for the proxy"))?;
    send_fd(channel.as_raw_fd(), listener.as_raw_fd())
        .context("cannot hand the proxy's listener to the orchestrator")?;
    Ok(true)
}

/// Send `fd` over the Unix socket `channel` (one byte and SCM_RIGHTS).
fn send_fd(channel: i32, fd: i32) -> nix::Result<()> {
    let fds = [fd];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(b"L")];
    sendmsg::<()>(channel, &iov, &cmsg, MsgFlags::empty(), None)?;
    Ok(())
}
