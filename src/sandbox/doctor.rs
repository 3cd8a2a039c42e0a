//! `longrun doctor`: what confinement this machine can enforce. It reports
//! the kernel, Landlock and its features, seccomp, user namespaces, cgroup
//! delegation and git, then tries each bundled profile for real (confining a
//! child that runs /bin/true) and says whether it can be enforced as written.

use std::process::ExitCode;

use super::{bundled_names, cgroup, landlock, Network, Profile, SandboxSpec};

/// Print the report; exit 0 when sessions can run under the default profile.
pub fn doctor() -> ExitCode {
    for line in machine_report() {
        println!("{line}");
    }
    let mut default_ok = false;
    for name in bundled_names() {
        let verdict = match Profile::bundled(name).and_then(|p| probe(&p).map(|()| p)) {
            Ok(p) => {
                let missing = landlock::missing_features(landlock::usable_abi(), p.network);
                if missing.is_empty() {
                    "can be enforced as written".to_string()
                } else {
                    format!(
                        "can be run, with what this kernel enforces; not enforced: {}",
                        missing.join("; ")
                    )
                }
            }
            Err(e) => format!("cannot be enforced: {}", one_line(&format!("{e:#}"))),
        };
        default_ok |= name == "default" && verdict.starts_with("can be");
        println!("profile {name}: {verdict}");
    }
    if default_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn machine_report() -> Vec<String> {
    let abi = landlock::usable_abi();
    let kernel_abi = landlock::kernel_abi();
    let yes = |b: bool| if b { "yes" } else { "no" };
    let mut lines = vec![
        format!("kernel: {}", kernel()),
        format!(
            "landlock: {}",
            if abi != kernel_abi {
                format!(
                    "ABI {abi} (lowered by {}; the kernel has {kernel_abi})",
                    landlock::ABI_CAP_ENV
                )
            } else if abi > 0 {
                format!("ABI {abi}")
            } else {
                "not available".to_string()
            }
        ),
        format!("  filesystem rules: {}", yes(abi >= 1)),
        format!("  TCP bind/connect rules (ABI 4): {}", yes(abi >= 4)),
        format!("  device ioctl rules (ABI 5): {}", yes(abi >= 5)),
        format!(
            "  signal and abstract socket scoping (ABI 6): {}",
            yes(abi >= 6)
        ),
        format!("seccomp filters: {}", yes(seccomp_available())),
        format!("user namespaces: {}", user_namespaces()),
        format!(
            "process limit: {}",
            if super::lifetime::per_namespace_pid_max() {
                "held by each session's PID namespace (pid_max, Linux 6.14+), root included"
            } else {
                "RLIMIT_NPROC or a v2 cgroup only (pid_max is per namespace from Linux 6.14), \
                 which does not hold root without a cgroup"
            }
        ),
    ];
    lines.extend(
        cgroup::report()
            .into_iter()
            .map(|l| format!("cgroups: {l}")),
    );
    if abi < 1 {
        lines.push(format!(
            "filesystem boundary: {}",
            if nix::unistd::geteuid().is_root() || userns_blocked().is_none() {
                "the read-only mount namespace alone (no Landlock: reads are not confined)"
            } else {
                "none: no Landlock and no user namespaces; sessions cannot run"
            }
        ));
    }
    lines.push(format!("git: {}", git_version()));
    lines
}

fn kernel() -> String {
    match nix::sys::utsname::uname() {
        Ok(u) => format!(
            "{} {} ({})",
            u.sysname().to_string_lossy(),
            u.release().to_string_lossy(),
            u.machine().to_string_lossy()
        ),
        Err(e) => format!("unknown ({e})"),
    }
}

fn seccomp_available() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/seccomp/actions_avail")
        .map(|a| a.split_whitespace().any(|x| x == "errno"))
        .unwrap_or(false)
}

fn read_sysctl(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|t| t.trim().to_string())
}

/// Ubuntu 23.10 and later: unprivileged user namespaces get no capabilities
/// unless an AppArmor profile allows `userns` for the program.
const APPARMOR_USERNS: &str = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns";

/// Why this user cannot make user namespaces, when a setting says so.
fn userns_blocked() -> Option<String> {
    if nix::unistd::geteuid().is_root() {
        return None;
    }
    if read_sysctl("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Some("kernel.unprivileged_userns_clone = 0".into());
    }
    if read_sysctl("/proc/sys/user/max_user_namespaces").as_deref() == Some("0") {
        return Some("user.max_user_namespaces = 0".into());
    }
    if read_sysctl(APPARMOR_USERNS).as_deref() == Some("1") {
        return Some(
            "kernel.apparmor_restrict_unprivileged_userns = 1 (AppArmor gives the namespace \
             no capabilities unless a profile allows it)"
                .into(),
        );
    }
    None
}

/// What to do so that sessions get a sandbox: the one-line fix.
pub fn userns_fix() -> String {
    let why = userns_blocked().unwrap_or_else(|| "user namespaces are unavailable".into());
    format!(
        "{why}; fix: install the AppArmor profile longrun ships \
         (packaging/apparmor/longrun to /etc/apparmor.d/longrun, then \
         `sudo apparmor_parser -r /etc/apparmor.d/longrun`), or allow unprivileged user \
         namespaces (`sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0` on Ubuntu, \
         `sudo sysctl kernel.unprivileged_userns_clone=1` on older Debian), or boot a kernel \
         with Landlock (5.13 or later, landlock in lsm=), or run longrun as root"
    )
}

/// Before an initializer writes anything: confine a child as `profile` says,
/// for real. Err is one line: what this machine cannot enforce, and the fix.
pub fn preflight(profile: &Profile) -> anyhow::Result<()> {
    probe(profile).map_err(|e| {
        let said = one_line(&format!("{e:#}"));
        crate::error::bad_input(format!(
            "the sandbox profile {} cannot run on this machine: {said}{}",
            profile.name,
            if profile.landlock == super::LandlockMode::Required {
                "; the default profile runs with what this kernel enforces and records the rest \
                 (--profile default)"
            } else {
                ""
            }
        ))
    })
}

fn user_namespaces() -> String {
    let read = read_sysctl;
    if let Some(why) = userns_blocked().filter(|w| w.starts_with("kernel.apparmor")) {
        return format!(
            "restricted by AppArmor ({why}): without root, sessions have no namespace layer \
             (no PID or mount namespace, no loopback network) and Landlock, seccomp and limits \
             carry them alone; packaging/apparmor/longrun is the profile that lifts this"
        );
    }
    const WITHOUT: &str = "; when not root, sandboxes then have no PID namespace \
        (no process limit but RLIMIT_NPROC, leftovers ended only on recovery) and no read-only mounts";
    if read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return format!(
            "disabled for unprivileged users (kernel.unprivileged_userns_clone = 0){WITHOUT}"
        );
    }
    match read("/proc/sys/user/max_user_namespaces").as_deref() {
        Some("0") => format!("disabled (user.max_user_namespaces = 0){WITHOUT}"),
        Some(n) => format!(
            "available (up to {n}); when not root, every sandbox makes one for its PID and \
             mount namespaces (and loopback's network)"
        ),
        None => "unknown".into(),
    }
}

fn git_version() -> String {
    match std::process::Command::new("git").arg("--version").output() {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => "not found on PATH (sessions need git)".into(),
    }
}

/// Confine a child as `profile` says and run /bin/true in it.
fn probe(profile: &Profile) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("longrun-doctor-")
        .tempdir()?;
    let (work, tmp, home) = (
        dir.path().join("work"),
        dir.path().join("tmp"),
        dir.path().join("home"),
    );
    for d in [&work, &tmp, &home] {
        std::fs::create_dir(d)?;
    }
    let spec = SandboxSpec::new(profile.clone(), work, tmp, home);
    let out = super::command(&spec, &["/bin/true".to_string()])?.output()?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let hint = match profile.network {
        Network::Loopback | Network::Registries => " (its network mode needs a network namespace)",
        _ => "",
    };
    anyhow::bail!("{}{hint}", said.trim().trim_start_matches("longrun: "))
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
