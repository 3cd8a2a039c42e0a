//! Resource limits of a confined process tree. The process count is held by
//! the PID namespace (and a v2 cgroup, where one could be made; see
//! `lifetime` and `cgroup`), memory by the cgroup; rlimits hold the rest and
//! stand in where those could not. File size, open files and core dumps are
//! always rlimits.

use anyhow::Context;
use nix::sys::resource::{getrlimit, setrlimit, Resource};

use super::{Bound, Limits};

/// What holds each limit: lines for the Enforcement report, and warnings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LimitsOutcome {
    pub layer: String,
    pub warnings: Vec<String>,
}

/// Apply `limits` to the calling process (and so to everything it starts),
/// beside what `bound` already holds.
pub fn apply(limits: &Limits, bound: &Bound) -> anyhow::Result<LimitsOutcome> {
    let mut warnings = Vec::new();
    let mb = |n: u64| n.saturating_mul(1 << 20);
    lower(Resource::RLIMIT_CORE, 0)?;
    lower(Resource::RLIMIT_FSIZE, mb(limits.file_size_mb))?;
    lower(Resource::RLIMIT_NOFILE, limits.open_files)?;
    let processes = match &bound.processes {
        Some(held) => format!("{} processes ({held})", limits.processes),
        None => {
            lower(Resource::RLIMIT_NPROC, limits.processes)?;
            if nix::unistd::getuid().is_root() {
                warnings.push(
                    "limits: neither a PID namespace limit nor a cgroup could be set, and \
                     RLIMIT_NPROC does not hold root: the process limit is not enforced"
                        .to_string(),
                );
            }
            format!("{} processes (RLIMIT_NPROC)", limits.processes)
        }
    };
    let memory = match &bound.memory {
        Some(dir) => format!("{} MiB memory (cgroup {})", limits.memory_mb, dir.display()),
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
