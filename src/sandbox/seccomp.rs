//! The seccomp filter: allow by default, answer EPERM to a deny list of
//! syscalls a build never needs and an escape often does. x86_64 and aarch64.
//!
//! sendto, recvfrom, setsockopt and socketpair stay allowed: cargo, node and
//! Python need them, and sockets are confined by family and by Landlock.

use std::collections::BTreeMap;

use anyhow::Context;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::Network;

/// Denied in every mode.
const DENIED: &[(&str, i64)] = &[
    ("io_uring_setup", libc::SYS_io_uring_setup),
    ("io_uring_enter", libc::SYS_io_uring_enter),
    ("io_uring_register", libc::SYS_io_uring_register),
    ("ptrace", libc::SYS_ptrace),
    ("process_vm_readv", libc::SYS_process_vm_readv),
    ("process_vm_writev", libc::SYS_process_vm_writev),
    // Copying a descriptor out of another process (the worker's broker socket).
    ("pidfd_getfd", libc::SYS_pidfd_getfd),
    ("mount", libc::SYS_mount),
    ("umount2", libc::SYS_umount2),
    ("pivot_root", libc::SYS_pivot_root),
    ("fsopen", libc::SYS_fsopen),
    ("fsmount", libc::SYS_fsmount),
    ("move_mount", libc::SYS_move_mount),
    ("open_tree", libc::SYS_open_tree),
    ("mount_setattr", libc::SYS_mount_setattr),
    ("swapon", libc::SYS_swapon),
    ("swapoff", libc::SYS_swapoff),
    ("reboot", libc::SYS_reboot),
    ("kexec_load", libc::SYS_kexec_load),
    ("kexec_file_load", libc::SYS_kexec_file_load),
    ("init_module", libc::SYS_init_module),
    ("finit_module", libc::SYS_finit_module),
    ("delete_module", libc::SYS_delete_module),
    ("bpf", libc::SYS_bpf),
    ("keyctl", libc::SYS_keyctl),
    ("add_key", libc::SYS_add_key),
    ("request_key", libc::SYS_request_key),
    ("setns", libc::SYS_setns),
    ("unshare", libc::SYS_unshare),
];

/// clone() flags that make a namespace. (CLONE_NEWTIME shares bits with the
/// exit signal in clone(), so it is only reachable through clone3, which is denied.)
const NAMESPACE_FLAGS: &[u64] = &[
    libc::CLONE_NEWNS as u64,
    libc::CLONE_NEWCGROUP as u64,
    libc::CLONE_NEWUTS as u64,
    libc::CLONE_NEWIPC as u64,
    libc::CLONE_NEWUSER as u64,
    libc::CLONE_NEWPID as u64,
    libc::CLONE_NEWNET as u64,
];

/// Install the filters. Needs no_new_privs set first.
pub fn apply(network: Network) -> anyhow::Result<String> {
    let arch = target_arch()?;
    let deny = compile(
        deny_rules(network)?,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    // clone3 passes its flags in memory a filter cannot read: answering ENOSYS
    // makes glibc fall back to clone(), whose flags the first filter checks.
    let clone3 = BTreeMap::from([(libc::SYS_clone3, Vec::new())]);
    let clone3 = compile(clone3, SeccompAction::Errno(libc::ENOSYS as u32), arch)?;
    seccompiler::apply_filter(&deny).context("cannot install the seccomp filter")?;
    seccompiler::apply_filter(&clone3).context("cannot install the seccomp filter")?;
    let sockets = match network {
        Network::None => ", sockets other than AF_UNIX",
        _ => "",
    };
    Ok(format!(
        "seccomp: {} syscalls denied, namespaces in clone{sockets}",
        DENIED.len() + 1
    ))
}

fn target_arch() -> anyhow::Result<TargetArch> {
    std::env::consts::ARCH.try_into().map_err(|_| {
        anyhow::anyhow!(
            "seccomp: unsupported architecture {}",
            std::env::consts::ARCH
        )
    })
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    action: SeccompAction,
    arch: TargetArch,
) -> anyhow::Result<BpfProgram> {
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, action, arch)
        .context("cannot build the seccomp filter")?;
    BpfProgram::try_from(filter).context("cannot compile the seccomp filter")
}

fn deny_rules(network: Network) -> anyhow::Result<BTreeMap<i64, Vec<SeccompRule>>> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
        DENIED.iter().map(|(_, nr)| (*nr, Vec::new())).collect();
    let clone: Vec<SeccompRule> = NAMESPACE_FLAGS
        .iter()
        .map(|flag| {
            rule(
                0,
                SeccompCmpArgLen::Qword,
                SeccompCmpOp::MaskedEq(*flag),
                *flag,
            )
        })
        .collect::<anyhow::Result<_>>()?;
    rules.insert(libc::SYS_clone, clone);
    // Typing into the controlling terminal of whoever started us.
    let tiocsti = rule(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        ioctl(libc::TIOCSTI),
    )?;
    let tioclinux = rule(
        1,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        ioctl(libc::TIOCLINUX),
    )?;
    rules.insert(libc::SYS_ioctl, vec![tiocsti, tioclinux]);
    if network == Network::None {
        let not_unix = rule(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Ne,
            libc::AF_UNIX as u64,
        )?;
        rules.insert(libc::SYS_socket, vec![not_unix]);
    }
    Ok(rules)
}

/// An ioctl request number as a filter value (its C type differs between libcs).
#[allow(clippy::unnecessary_cast)]
fn ioctl(request: libc::Ioctl) -> u64 {
    request as u64
}

fn rule(
    arg: u8,
    len: SeccompCmpArgLen,
    op: SeccompCmpOp,
    value: u64,
) -> anyhow::Result<SeccompRule> {
    let condition = SeccompCondition::new(arg, len, op, value).context("bad seccomp condition")?;
    SeccompRule::new(vec![condition]).context("bad seccomp rule")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reaching_into_another_process_is_denied() {
        for name in [
            "ptrace",
            "process_vm_readv",
            "process_vm_writev",
            "pidfd_getfd",
        ] {
            assert!(DENIED.iter().any(|(n, _)| *n == name), "{name}");
        }
    }

    #[test]
    fn the_filters_compile_for_both_architectures() {
        for arch in [TargetArch::x86_64, TargetArch::aarch64] {
            for network in [
                Network::None,
                Network::Loopback,
                Network::Registries,
                Network::Host,
            ] {
                let rules = deny_rules(network).unwrap();
                assert_eq!(
                    rules.contains_key(&libc::SYS_socket),
                    network == Network::None
                );
                compile(rules, SeccompAction::Errno(libc::EPERM as u32), arch).unwrap();
            }
        }
    }
}
