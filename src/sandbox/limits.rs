//! Resource limits of a confined process tree: a cgroup where longrun can
//! make one (see `cgroup`), rlimits for the rest. File size, open files and
//! core dumps are always rlimits.

use anyhow::Context;
use nix::sys::resource::{getrlimit, setrlimit, Resource};

use super::{cgroup, Limits};

/// What holds each limit: lines for the Enforcement report, and warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsOutcome {
    pub layer: String,
    pub warnings: Vec<String>,
}

/// Apply `limits` to the calling process (and so to everything it starts).
pub fn apply(limits: &Limits) -> anyhow::Result<LimitsOutcome> {
    let groups = cgroup::enter(limits);
    let mut warnings = Vec::new();
    let mb = |n: u64| n.saturating_mul(1 << 20);
    lower(Resource::RLIMIT_CORE, 0)?;
    lower(Resource::RLIMIT_FSIZE, mb(limits.file_size_mb))?;
    lower(Resource::RLIMIT_NOFILE, limits.open_files)?;
    let processes = match &groups.pids {
        Some(dir) => format!("{} processes (cgroup {})", limits.processes, dir.display()),
        None => {
            lower(Resource::RLIMIT_NPROC, limits.processes)?;
            if nix::unistd::getuid().is_root() {
                warnings.push(
                    "limits: no cgroup could be made and RLIMIT_NPROC does not hold root: \
                     the process limit is not enforced"
                        .to_string(),
                );
            }
            format!("{} processes (RLIMIT_NPROC)", limits.processes)
        }
    };
    let memory = match &groups.memory {
        Some(_) => format!("{} MiB memory (cgroup)", limits.memory_mb),
        None => {
            lower(Resource::RLIMIT_AS, mb(limits.memory_mb))?;
            format!(
                "{} MiB address space per process (RLIMIT_AS)",
                limits.memory_mb
            )
        }
    };
    let layer = format!(
        "limits: {processes}, {memory}, files up to {} MiB, {} open files, no core dumps",
        limits.file_size_mb, limits.open_files
    );
    Ok(LimitsOutcome { layer, warnings })
}

/// Set soft and hard limits to `value`, never above the current hard limit.
fn lower(resource: Resource, value: u64) -> anyhow::Result<()> {
    let (_, hard) = getrlimit(resource).with_context(|| format!("cannot read {resource:?}"))?;
    let value = value.min(hard);
    setrlimit(resource, value, value).with_context(|| format!("cannot set {resource:?}"))
}
