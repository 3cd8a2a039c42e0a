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
