//! The `loopback` network mode: a private network namespace in which only
//! `lo` is up. Root makes it directly; anyone else through an unprivileged
//! user namespace that maps only their own uid and gid. `registries` is
//! loopback plus the proxy's listener (sandbox/proxy_bridge.rs). (`none` is
//! enforced by seccomp and Landlock, `host` by nothing.)

use anyhow::Context;

use super::Network;

/// Enter the namespace `network` asks for. Must run before capabilities are dropped.
pub fn isolate(network: Network) -> anyhow::Result<String> {
    match network {
        Network::None => Ok("network: none (Unix sockets only, no TCP)".into()),
        Network::Host => Ok("network: host (not confined)".into()),
        Network::Loopback => {
            let via = enter_namespace()?;
            loopback_up().context("cannot bring up lo in the new network namespace")?;
            Ok(format!(
                "network: loopback only (private network namespace{via})"
            ))
        }
        Network::Registries => {
            let via = enter_namespace()?;
            loopback_up().context("cannot bring up lo in the new network namespace")?;
            if !super::proxy_bridge::hand_over_listener()? {
                return Ok(format!(
                    "network: loopback only (private network namespace{via}; \
                     registries asked, but no proxy was started for this sandbox)"
                ));
            }
            Ok(format!(
                "network: package registries through longrun's proxy at {}, loopback otherwise \
                 (private network namespace{via})",
                super::PROXY_URL
            ))
        }
    }
}

fn enter_namespace() -> anyhow::Result<&'static str> {
    use nix::sched::{unshare, CloneFlags};
    if unshare(CloneFlags::CLONE_NEWNET).is_ok() {
        return Ok("");
    }
    let (uid, gid) = (nix::unistd::getuid(), nix::unistd::getgid());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET).context(
        "cannot make a network namespace, not even through a user namespace \
         (is kernel.unprivileged_userns_clone or user.max_user_namespaces 0?)",
    )?;
    std::fs::write("/proc/self/setgroups", "deny").context("cannot write setgroups")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).context("cannot map uid")?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).context("cannot map gid")?;
    Ok(", through a user namespace")
}

fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a plain socket() call; the fd is closed below.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the ifreq we own.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
                Err(std::io::Error::last_os_error())
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: fd is ours.
    unsafe { libc::close(fd) };
    result
}
