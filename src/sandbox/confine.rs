//! Applying confinement in a fresh process, before any thread exists, in
//! this order: own session and PDEATHSIG, then a PID namespace of its own
//! (sandbox/lifetime.rs); resource limits (and the network namespace and
//! the read-only mount namespace, which need the capabilities about to go); drop every
//! capability; no_new_privs; seccomp; Landlock; close inherited descriptors.
//! Then check what the kernel enforced and refuse when the profile asks for
//! more and says `landlock = "required"` (the strict profile). Without any
//! filesystem boundary (no Landlock and no read-only mount namespace) every
//! profile is refused.

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::{caps, landlock, limits, mounts, network, seccomp, LandlockMode, SandboxSpec};

/// What the kernel actually enforced, recorded in the session's trailers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Enforcement {
    /// One line per layer, e.g. "landlock: fully enforced (ABI 7; ...)".
    pub layers: Vec<String>,
    /// What could not be enforced (only with a best-effort profile).
    pub warnings: Vec<String>,
}

impl Enforcement {
    /// The lines for the `Longrun-Sandbox` trailers: layers, then warnings.
    pub fn trailer_lines(&self) -> Vec<String> {
        let mut lines = self.layers.clone();
        lines.extend(self.warnings.iter().map(|w| format!("not enforced: {w}")));
        lines
    }
}

/// Confine the calling process as `spec` says. Must run before any thread starts.
pub fn confine(spec: &SandboxSpec) -> anyhow::Result<Enforcement> {
    let profile = &spec.profile;
    let mut e = Enforcement {
        layers: vec![format!("profile {}", profile.name)],
        warnings: Vec::new(),
    };
    e.layers.push(new_session()?);
    let bound = super::bind_to_parent(&profile.limits)?;
    e.layers.push(bound.lifetime.clone());
    let limits = limits::apply(&profile.limits, &bound)?;
    e.layers.push(limits.layer);
    e.warnings.extend(limits.warnings);
    // What the process ends up with: a registries sandbox that cannot have
    // its namespace (or its proxy) gets less, never more.
    let (layer, network) = network::isolate(profile.network)?;
    e.layers.push(layer);
    let mounts = mounts::restrict(spec, bound.own_pid_namespace)?;
    e.layers.extend(mounts.layers.iter().cloned());
    e.warnings.extend(mounts.warnings.iter().cloned());
    e.layers.push(caps::drop_all()?);
    no_new_privs()?;
    e.layers.push("no_new_privs: set".into());
    e.layers.push(seccomp::apply(network)?);
    if !mounts.uncovered.is_empty() {
        let names: Vec<String> = mounts
            .uncovered
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        e.warnings.push(format!(
            "credentials: not covered by a mount ({}); left out of the Landlock grants instead, \
             their directories granted entry by entry",
            names.join(", ")
        ));
    }
    let narrowed;
    let spec = if network == profile.network {
        spec
    } else {
        narrowed = SandboxSpec {
            profile: super::Profile {
                network,
                ..profile.clone()
            },
            ..spec.clone()
        };
        &narrowed
    };
    let landlock =
        landlock::restrict(spec, &mounts.uncovered).context("cannot apply the Landlock ruleset")?;
    e.layers.push(landlock.layer);
    if landlock.abi < 1 && !mounts.read_only {
        bail!("{}", no_filesystem_boundary());
    }
    close_inherited(&spec.keep_fds);
    not_dumpable()?;
    if !caps::none_left() {
        bail!("capabilities are still held after dropping them all");
    }
    if !landlock.missing.is_empty() {
        let missing = landlock.missing.join(", ");
        match profile.landlock {
            LandlockMode::Required => bail!(
                "this kernel (Landlock ABI {}) does not enforce what profile {} asks: {missing}; \
                 run `longrun doctor` for details, or set landlock = \"best-effort\" in the profile",
                landlock.abi,
                profile.name
            ),
            LandlockMode::BestEffort => e.warnings.extend(landlock.missing),
        }
    }
    Ok(e)
}

/// Neither Landlock nor a read-only mount namespace: nothing would keep a
/// session's writes inside its workspace, whatever the profile says.
pub fn no_filesystem_boundary() -> String {
    format!(
        "no filesystem boundary on this machine: Landlock is not available and no mount \
         namespace can be made; {}",
        super::doctor::userns_fix()
    )
}

/// Own session and process group, and die with the parent.
fn new_session() -> anyhow::Result<String> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)
        .context("cannot set PR_SET_PDEATHSIG")?;
    let leader = nix::unistd::getsid(None) == Ok(nix::unistd::getpid());
    if leader || nix::unistd::setsid().is_ok() {
        return Ok("process: own session, dies with its parent".into());
    }
    // A process group leader (started from an interactive shell) cannot leave
    // its session; seccomp denies TIOCSTI, which is what setsid guards against.
    Ok("process: caller's session kept (TIOCSTI denied), dies with its parent".into())
}

/// Not dumpable: the processes it starts (same uid, no capabilities)
/// cannot ptrace it, read its memory, open its descriptors through /proc or
/// copy them with pidfd_getfd; the worker's broker socket stays its own.
/// An exec resets this for the program exec'd, which holds nothing to take.
fn not_dumpable() -> anyhow::Result<()> {
    nix::sys::prctl::set_dumpable(false).context("cannot clear PR_SET_DUMPABLE")
}

fn no_new_privs() -> anyhow::Result<()> {
    nix::sys::prctl::set_no_new_privs().context("cannot set PR_SET_NO_NEW_PRIVS")
}

/// Close every descriptor above stderr except `keep`.
fn close_inherited(keep: &[i32]) {
    let mut keep: Vec<u32> = keep
        .iter()
        .filter(|fd| **fd > 2)
        .map(|fd| *fd as u32)
        .collect();
    keep.sort_unstable();
    let mut from = 3u32;
    for fd in keep.into_iter().chain([u32::MAX]) {
        if fd > from {
            close_range(from, fd - 1);
        }
        from = fd.saturating_add(1);
    }
}

fn close_range(first: u32, last: u32) {
    // SAFETY: closes descriptors only; nothing in this single-threaded process still uses them.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) };
    if rc != 0 {
        // Kernels before 5.9: close one by one, up to the descriptor limit.
        let max = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
            .map(|(soft, _)| soft)
            .unwrap_or(1024)
            .min(u64::from(last));
        for fd in u64::from(first)..=max {
            // SAFETY: as above.
            unsafe { libc::close(fd as i32) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_lines_mark_what_was_not_enforced() {
        let e = Enforcement {
            layers: vec!["profile default".into()],
            warnings: vec!["landlock scopes".into()],
        };
        assert_eq!(
            e.trailer_lines(),
            vec!["profile default", "not enforced: landlock scopes"]
        );
    }
}
