//! The Landlock ruleset: which paths a confined process may read, execute
//! and write, whether it may bind or connect TCP, and whether it may signal
//! or reach (over abstract Unix sockets) processes outside its domain.
//!
//! Rules are requested for the ABI this code was tested on; what the running
//! kernel could not enforce is reported, and `confine` decides whether that
//! is fatal.

use landlock::{
    path_beneath_rules, Access, AccessFs, AccessNet, LandlockStatus, RestrictionStatus, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope, ABI,
};

use std::path::{Path, PathBuf};

use super::{Network, SandboxSpec};

/// The newest ABI whose rights are requested (and tested).
const TESTED_ABI: ABI = ABI::V7;

/// Read and execute: the system.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Devices a build uses, read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What the kernel enforced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockOutcome {
    /// The kernel's Landlock ABI (0: none).
    pub abi: i32,
    /// A line for the Enforcement report.
    pub layer: String,
    /// What the profile asked for that this kernel does not enforce.
    pub missing: Vec<String>,
}

/// The kernel's Landlock ABI version, 0 when Landlock is unavailable.
pub fn kernel_abi() -> i32 {
    // SAFETY: the documented version query: no pointers read, no state changed.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            1u32, // LANDLOCK_CREATE_RULESET_VERSION
        )
    };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

/// What a kernel with Landlock ABI `abi` would not enforce of what `network`
/// asks, each with what carries that rule instead, if anything.
pub fn missing_features(abi: i32, network: Network) -> Vec<String> {
    if abi < 1 {
        return vec![
            "landlock itself (kernel 5.13 or later, with landlock in lsm=): reads are not \
             confined to the system, toolchain and session paths; writes are confined by \
             the read-only mount namespace"
                .to_string(),
        ];
    }
    let own_net = network != Network::None;
    let wanted: &[(i32, &str, bool)] = &[
        (
            2,
            "renames and links across directories (ABI 2): every such rename or link is refused",
            true,
        ),
        (
            3,
            "truncation rules (ABI 3): truncating files outside the writable paths is \
             refused by the read-only mounts instead",
            true,
        ),
        (
            4,
            "TCP bind and connect rules (ABI 4): seccomp still allows no socket but AF_UNIX",
            network == Network::None,
        ),
        (
            5,
            "device ioctl rules (ABI 5): seccomp denies TIOCSTI and TIOCLINUX only",
            true,
        ),
        (
            6,
            if own_net {
                "signal and abstract Unix socket scoping (ABI 6): carried by the PID and \
                 network namespaces"
            } else {
                "signal and abstract Unix socket scoping (ABI 6): signals are held by the \
                 PID namespace, abstract Unix sockets of the machine are reachable"
            },
            true,
        ),
    ];
    wanted
        .iter()
        .filter(|(needs, _, asked)| *asked && abi < *needs)
        .map(|(_, what, _)| format!("landlock {what}"))
        .collect()
}

/// Build the ruleset for `spec` and restrict the calling thread with it,
/// granting nothing of `left_out` (credential files no mount covers).
pub fn restrict(spec: &SandboxSpec, left_out: &[PathBuf]) -> anyhow::Result<LandlockOutcome> {
    let abi = usable_abi();
    let network = spec.profile.network;
    let missing = missing_features(abi, network);
    if abi < 1 {
        let layer = "landlock: not available".to_string();
        return Ok(LandlockOutcome {
            abi,
            layer,
            missing,
        });
    }
    let status = ruleset(
        spec,
        left_out,
        network,
        ABI::from(abi.min(TESTED_ABI as i32)),
    )?;
    let layer = describe(&status, abi, network, missing.is_empty());
    Ok(LandlockOutcome {
        abi,
        layer,
        missing,
    })
}

/// Makes longrun enforce only what a kernel with that Landlock ABI could, to
/// test a profile (and its `landlock` mode) as an older kernel would run it.
/// It weakens the sandbox, so only a build with the `test-hooks` feature
/// (the tests') reads it.
pub const ABI_CAP_ENV: &str = "LONGRUN_LANDLOCK_ABI";

/// The kernel's ABI, lowered by [`ABI_CAP_ENV`] when that is set in a test build.
pub fn usable_abi() -> i32 {
    let kernel = kernel_abi();
    let cap = std::env::var(ABI_CAP_ENV)
        .ok()
        .filter(|_| cfg!(feature = "test-hooks"))
        .and_then(|v| v.trim().parse::<i32>().ok());
    cap.map_or(kernel, |c| c.min(kernel)).max(0)
}

fn ruleset(
    spec: &SandboxSpec,
    left_out: &[PathBuf],
    network: Network,
    abi: ABI,
) -> anyhow::Result<RestrictionStatus> {
    let all = AccessFs::from_all(abi);
    let read_exec = AccessFs::from_read(abi);
    let device = AccessFs::from_file(abi) & !AccessFs::Execute;
    let mut ruleset = Ruleset::default().handle_access(all)?;
    if network == Network::None && abi >= ABI::V4 {
        // Handled with no rule allowing them: no TCP bind, no TCP connect.
        ruleset = ruleset.handle_access(AccessNet::from_all(abi))?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi))?;
    }
    let created = ruleset
        .create()?
        .add_rules(path_beneath_rules(SYSTEM_DIRS, read_exec))?
        .add_rules(path_beneath_rules(
            ["/proc"],
            AccessFs::ReadFile | AccessFs::ReadDir,
        ))?
        .add_rules(path_beneath_rules(
            without(&spec.read_only_paths(), left_out),
            read_exec,
        ))?
        .add_rules(path_beneath_rules(DEVICES, device))?
        .add_rules(path_beneath_rules(
            without(&spec.writable_paths(), left_out),
            all,
        ))?;
    Ok(created.restrict_self()?)
}

/// `grants` with each path of `left_out` taken out: a grant that holds one
/// is replaced by its entries, all but the path (recursively on the way to
/// it); a grant that is one is dropped. Landlock can only grant, so this is
/// how a file inside a granted directory stays out of reach. Entries made
/// later in such a directory are not granted.
pub fn without(grants: &[PathBuf], left_out: &[PathBuf]) -> Vec<PathBuf> {
    fn split(path: &Path, left_out: &[PathBuf], out: &mut Vec<PathBuf>) {
        if left_out.iter().any(|l| l == path) {
            return;
        }
        if !left_out.iter().any(|l| l.starts_with(path)) {
            out.push(path.to_path_buf());
            return;
        }
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.flatten() {
                split(&entry.path(), left_out, out);
            }
        }
    }
    let mut out = Vec::new();
    for grant in grants {
        split(grant, left_out, &mut out);
    }
    out
}

/// `complete`: nothing the profile asks is beyond the (possibly capped) ABI.
fn describe(status: &RestrictionStatus, abi: i32, network: Network, complete: bool) -> String {
    let how = match status.ruleset {
        RulesetStatus::FullyEnforced if complete => "fully enforced",
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => "partially enforced",
        RulesetStatus::NotEnforced => "not enforced",
    };
    let net = if network == Network::None && abi >= 4 {
        ", no TCP"
    } else {
        ""
    };
    let abi = match status.landlock {
        LandlockStatus::Available { .. } => format!("ABI {abi}"),
        _ => "unavailable".to_string(),
    };
    format!("landlock: {how} ({abi}; writes only in the workspace, tmp and home{net})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_left_out_file_splits_its_grant_into_the_rest() {
        let d = tempfile::tempdir().unwrap();
        let cargo = d.path().join(".cargo");
        std::fs::create_dir_all(cargo.join("bin")).unwrap();
        std::fs::write(cargo.join("credentials.toml"), "token").unwrap();
        std::fs::write(cargo.join("config.toml"), "").unwrap();
        let gh = d.path().join("gh");
        std::fs::create_dir(&gh).unwrap();
        let other = d.path().join("other");
        let grants = vec![cargo.clone(), gh.clone(), other.clone()];
        let mut got = without(&grants, &[cargo.join("credentials.toml"), gh]);
        got.sort();
        assert_eq!(got, [cargo.join("bin"), cargo.join("config.toml"), other]);
        assert_eq!(without(&grants[..1], &[]), [cargo]);
    }

    #[test]
    fn missing_features_follow_the_abi() {
        assert!(missing_features(7, Network::None).is_empty());
        assert!(missing_features(6, Network::None).is_empty());
        let m = missing_features(3, Network::None);
        assert_eq!(m.len(), 3, "{m:?}");
        assert!(m[0].contains("TCP"));
        assert_eq!(missing_features(3, Network::Loopback).len(), 2);
        assert_eq!(missing_features(0, Network::None).len(), 1);
        assert!(missing_features(0, Network::None)[0].contains("read-only mount namespace"));
        for abi in 0..=7 {
            assert_eq!(
                missing_features(abi, Network::Loopback).len(),
                missing_features(abi, Network::None).len() - usize::from((1..4).contains(&abi)),
                "ABI {abi}"
            );
        }
    }
}
