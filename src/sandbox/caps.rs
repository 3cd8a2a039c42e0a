//! Dropping every capability: ambient, bounding, then effective, permitted
//! and inheritable. This matters most when longrun runs as root, where a
//! capability is what turns uid 0 into a superuser.

use anyhow::Context;

/// `_LINUX_CAPABILITY_VERSION_3`: 64-bit capability sets in two words.
const CAPABILITY_VERSION_3: u32 = 0x2008_0522;

/// CAP_SETPCAP, needed to shrink the bounding set.
const CAP_SETPCAP: u32 = 8;

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Default, Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Drop every capability. The bounding set can only be emptied with
/// CAP_SETPCAP; without it (an unprivileged caller) the set is left as is,
/// which is harmless under no_new_privs: exec can no longer grant anything.
pub fn drop_all() -> anyhow::Result<String> {
    // SAFETY: prctl with integer arguments only.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    };
    let bounding = drop_bounding_set()?;
    let header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: capset reads a valid header and two data words.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error()).context("capset failed");
    }
    Ok(format!("capabilities: none ({bounding})"))
}

fn drop_bounding_set() -> anyhow::Result<&'static str> {
    // SAFETY: prctl with integer arguments only.
    let can = unsafe { libc::prctl(libc::PR_CAPBSET_READ, CAP_SETPCAP, 0, 0, 0) } == 1
        && has_effective(CAP_SETPCAP);
    if !can {
        return Ok("bounding set kept: no CAP_SETPCAP, exec cannot gain under no_new_privs");
    }
    for cap in 0..=last_cap() {
        // SAFETY: prctl with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) };
        if rc != 0 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("cannot drop capability {cap} from the bounding set"));
        }
    }
    Ok("bounding set emptied")
}

/// The highest capability number this kernel knows.
fn last_cap() -> libc::c_ulong {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(63)
}

fn has_effective(cap: u32) -> bool {
    let mut header = CapHeader {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [CapData::default(); 2];
    // SAFETY: capget writes two data words into our buffer.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) };
    rc == 0 && data[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

/// After dropping: true when no capability is effective, permitted, inheritable or ambient.
pub fn none_left() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    ["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"]
        .iter()
        .all(|key| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().chars().all(|c| c == '0'))
                .unwrap_or(false)
        })
}
