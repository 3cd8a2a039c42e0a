//! The `loopback` network mode: a private network namespace in which only
//! `lo` is up. Root makes it directly; anyone else through an unprivileged
//! user namespace that maps only their own uid and gid. `registries` is
//! loopback plus the proxy's listener (sandbox/proxy_bridge.rs). (`none` is
//! enforced by seccomp and Landlock, `host` by nothing.)

use anyhow::Context;

use super::Network;

/// Enter the namespace `network` asks for. Must run before capabilities are
/// dropped. Returns the layer's line and the network actually given, which
/// the later layers (seccomp, Landlock) enforce: `registries` becomes
/// `loopback` without a proxy, and `none` where no network namespace can be
/// made (init.sh asks for registries by default, on machines without user
/// namespaces too; it then installs nothing, and everything else runs).
pub fn isolate(network: Network) -> anyhow::Result<(String, Network)> {
    match network {
        Network::None => Ok(("network: none (Unix sockets only, no TCP)".into(), network)),
        Network::Host => Ok(("network: host (not confined)".into(), network)),
        Network::Loopback => {
            let via = enter_namespace()?;
            loopback_up().context("cannot bring up lo in the new network namespace")?;
            let line = format!("network: loopback only (private network namespace{via})");
            Ok((line, network))
        }
        Network::Registries => registries(),
    }
}

fn registries() -> anyhow::Result<(String, Network)> {
    let via = match enter_namespace() {
        Ok(via) => via,
        Err(e) => {
            let line = format!("network: none (registries asked, but {e:#})");
            return Ok((line, Network::None));
        }
    };
    loopback_up().context("cannot bring up lo in the new network namespace")?;
    if !super::proxy_bridge::hand_over_listener()? {
        let line = format!(
            "network: loopback only (private network namespace{via}; \
             registries asked, but no proxy was started for this sandbox)"
        );
        return Ok((line, Network::Loopback));
    }
    let line = format!(
        "network: package registries through longrun's proxy at {}, loopback otherwise \
         (private network namespace{via})",
        super::PROXY_URL
    );
    Ok((line, Network::Registries))
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
