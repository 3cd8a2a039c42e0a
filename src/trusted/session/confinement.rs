//! A session's confinement as the orchestrator records it.
//!
//! The worker confines itself (it must: Landlock and seccomp apply to the
//! calling process) and then reports what the kernel enforced, as one JSON
//! line over a socket of its own: the orchestrator made it, the worker
//! closes it before init.sh, the first model call and the first tool, and it
//! is never the broker socket. The orchestrator learns from the kernel who
//! sent the line (SCM_CREDENTIALS: the sender's pid as the kernel knows it,
//! not as the sender says) and, while that process waits for the answer,
//! looks at it from outside in /proc: no_new_privs, the seccomp filter, no
//! capabilities, and the PID and network namespaces the report claims. What
//! the kernel shows becomes the orchestrator's own `checked by the
//! orchestrator` trailer line; a report the kernel contradicts fails the
//! session. Landlock leaves nothing in /proc to look at: its line is the
//! worker's, said as such.

use std::os::fd::{AsRawFd, OwnedFd};

use anyhow::Context;
use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};
use tokio::io::Interest;

use crate::broker;
use crate::sandbox::Enforcement;

/// The most lines of a report kept, and the longest line.
const MAX_LINES: usize = 64;
const MAX_LINE_CHARS: usize = 400;

/// What the orchestrator records of a session's confinement.
#[derive(Debug, Clone, PartialEq)]
pub struct Confinement {
    /// What the worker reported, bounded and made of safe lines.
    pub reported: Enforcement,
    /// What the orchestrator saw of the worker in /proc, one line.
    pub checked: String,
    /// What the kernel contradicts in the report; the session fails with these.
    pub contradictions: Vec<String>,
}

impl Confinement {
    /// The `Longrun-Sandbox` trailer lines: the report, then the orchestrator's check.
    pub fn trailer_lines(&self) -> Vec<String> {
        let mut lines = self.reported.trailer_lines();
        lines.push(self.checked.clone());
        lines
    }
}

/// The orchestrator's end of a new report socket (it receives the sender's
/// credentials with every message), and the worker's end.
pub fn socket() -> anyhow::Result<(std::os::unix::net::UnixStream, OwnedFd)> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()
        .context("failed to make the confinement report socket")?;
    setsockopt(&ours, sockopt::PassCred, &true)
        .context("cannot ask for the sender's credentials on the report socket")?;
    Ok((ours, theirs.into()))
}

/// Read the worker's report, look at the process that sent it, and let it go
/// on. `Ok(None)`: the worker ended (or closed the socket) without a report,
/// which its log explains. An error: what came is not a report.
pub async fn receive(
    ours: std::os::unix::net::UnixStream,
    profile: &str,
) -> anyhow::Result<Option<Confinement>> {
    ours.set_nonblocking(true)?;
    let ours = tokio::net::UnixStream::from_std(ours)?;
    let mut line = Vec::new();
    let mut sender: Option<i32> = None;
    loop {
        let (data, pid) = ours
            .async_io(Interest::READABLE, || receive_chunk(ours.as_raw_fd()))
            .await
            .context("cannot read the confinement report")?;
        if data.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            anyhow::bail!("the confinement report ended without a newline");
        }
        let pid = pid.context("the confinement report came without the sender's credentials")?;
        match sender {
            None => sender = Some(pid),
            Some(first) if first != pid => anyhow::bail!(
                "the confinement report came from two processes (pid {first} and pid {pid})"
            ),
            Some(_) => {}
        }
        line.extend_from_slice(&data);
        anyhow::ensure!(
            line.len() <= broker::MAX_REPORT_BYTES,
            "the confinement report is over {} bytes",
            broker::MAX_REPORT_BYTES
        );
        if line.last() == Some(&b'\n') {
            break;
        }
    }
    let reported: Enforcement =
        serde_json::from_slice(&line).context("the confinement report is malformed")?;
    let reported = bounded(&reported);
    let pid = sender.unwrap_or_default();
    // The worker waits for this answer, so the pid is still the sender's.
    let seen = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map(|status| Seen::parse(&status, pid))
        .ok();
    let confinement = judge(reported, seen.as_ref(), profile);
    // A worker whose report does not hold gets no answer: it is stopped
    // before it runs anything of the session.
    if confinement.contradictions.is_empty() {
        ours.writable().await?;
        let _ = ours.try_write(&[broker::REPORT_SEEN]);
    }
    Ok(Some(confinement))
}

/// One recvmsg: the bytes, and the pid the kernel says sent them.
fn receive_chunk(fd: i32) -> std::io::Result<(Vec<u8>, Option<i32>)> {
    let mut buf = vec![0u8; 16 << 10];
    let mut space = nix::cmsg_space!(nix::sys::socket::UnixCredentials);
    let mut iov = [std::io::IoSliceMut::new(&mut buf)];
    let msg = recvmsg::<()>(fd, &mut iov, Some(&mut space), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(std::io::Error::from)?;
    let mut pid = None;
    for cmsg in msg.cmsgs().map_err(std::io::Error::from)? {
        if let ControlMessageOwned::ScmCredentials(creds) = cmsg {
            pid = Some(creds.pid());
        }
    }
    let n = msg.bytes;
    buf.truncate(n);
    Ok((buf, pid))
}

/// What /proc shows of a process.
#[derive(Debug, PartialEq)]
struct Seen {
    pid: i32,
    no_new_privs: bool,
    /// 0 off, 1 strict, 2 filter.
    seccomp: u8,
    filters: u32,
    /// Effective, permitted and ambient capabilities all empty.
    no_capabilities: bool,
    /// Its pid in each namespace it is in, outermost first: more than one
    /// means a PID namespace of its own.
    ns_pids: usize,
    /// Whether its network namespace is not the orchestrator's; None when
    /// /proc does not let the orchestrator see (an unprivileged orchestrator
    /// and a worker that is not dumpable).
    own_network: Option<bool>,
}

impl Seen {
    fn parse(status: &str, pid: i32) -> Seen {
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        let number = |name: &str| field(name).and_then(|v| v.parse::<u32>().ok());
        let empty_caps = ["CapEff", "CapPrm", "CapAmb"]
            .iter()
            .all(|c| field(c).and_then(|v| u64::from_str_radix(v, 16).ok()) == Some(0));
        let net = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/net")).ok();
        let own_network = match (net(&pid.to_string()), net("self")) {
            (Some(theirs), Some(ours)) => Some(theirs != ours),
            _ => None,
        };
        Seen {
            pid,
            no_new_privs: number("NoNewPrivs") == Some(1),
            seccomp: number("Seccomp").unwrap_or(0) as u8,
            filters: number("Seccomp_filters").unwrap_or(0),
            no_capabilities: empty_caps,
            ns_pids: field("NSpid").map_or(0, |v| v.split_whitespace().count()),
            own_network,
        }
    }
}

/// Hold the report against what the kernel shows.
fn judge(reported: Enforcement, seen: Option<&Seen>, profile: &str) -> Confinement {
    let mut contradictions = Vec::new();
    let claims = |prefix: &str, words: &str| {
        reported
            .layers
            .iter()
            .any(|l| l.starts_with(prefix) && l.contains(words))
    };
    let own_pids = claims("lifetime: own", "");
    if reported.layers.first().map(String::as_str) != Some(&format!("profile {profile}")) {
        contradictions.push(format!(
            "the worker reported a profile other than {profile}, the one it was given"
        ));
    }
    let Some(seen) = seen else {
        return Confinement {
            reported,
            checked: "not checked by the orchestrator: the worker was gone from /proc".into(),
            contradictions,
        };
    };
    let (mut held, mut unseen) = (Vec::new(), Vec::new());
    let mut expect = |holds: bool, what: &str| {
        if holds {
            held.push(what.to_string());
        } else {
            contradictions.push(format!("the kernel shows no {what} for the worker"));
        }
    };
    expect(seen.no_new_privs, "no_new_privs");
    expect(seen.seccomp == 2 && seen.filters > 0, "seccomp filter");
    expect(seen.no_capabilities, "empty capability sets");
    if own_pids {
        expect(seen.ns_pids > 1, "PID namespace of its own");
    }
    let private_net = claims("network:", "private network namespace");
    match seen.own_network {
        Some(own) if private_net => expect(own, "network namespace of its own"),
        None if private_net => unseen.push("network namespace"),
        _ => {}
    }
    let mut checked = format!(
        "checked by the orchestrator in /proc/{}: {}",
        seen.pid,
        held.join(", ")
    );
    if !unseen.is_empty() {
        checked.push_str(&format!(
            "; not visible from outside: {}",
            unseen.join(", ")
        ));
    }
    Confinement {
        checked,
        reported,
        contradictions,
    }
}

/// The worker's report, bounded and made of safe lines.
fn bounded(e: &Enforcement) -> Enforcement {
    let lines = |v: &[String]| -> Vec<String> {
        v.iter()
            .take(MAX_LINES)
            .map(|l| {
                crate::sanitize::line(l)
                    .chars()
                    .take(MAX_LINE_CHARS)
                    .collect()
            })
            .collect()
    };
    Enforcement {
        layers: lines(&e.layers),
        warnings: lines(&e.warnings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFINED: &str = "Name:\tlongrun\nNSpid:\t4242\t2\nCapPrm:\t0000000000000000\n\
        CapEff:\t0000000000000000\nCapAmb:\t0000000000000000\nNoNewPrivs:\t1\n\
        Seccomp:\t2\nSeccomp_filters:\t1\n";

    fn report(layers: &[&str]) -> Enforcement {
        Enforcement {
            layers: layers.iter().map(|s| s.to_string()).collect(),
            warnings: Vec::new(),
        }
    }

    #[test]
    fn status_fields_are_read() {
        let seen = Seen::parse(CONFINED, 4242);
        assert!(seen.no_new_privs && seen.no_capabilities);
        assert_eq!((seen.seccomp, seen.filters, seen.ns_pids), (2, 1, 2));
    }

    #[test]
    fn a_confined_worker_is_recorded_with_what_was_checked() {
        let seen = Seen::parse(CONFINED, 4242);
        let c = judge(
            report(&["profile default", "lifetime: own PID namespace; x"]),
            Some(&seen),
            "default",
        );
        assert!(c.contradictions.is_empty(), "{:?}", c.contradictions);
        assert_eq!(
            c.trailer_lines().last().unwrap(),
            "checked by the orchestrator in /proc/4242: no_new_privs, seccomp filter, \
             empty capability sets, PID namespace of its own"
        );
    }

    #[test]
    fn a_report_the_kernel_contradicts_is_named_layer_by_layer() {
        let unconfined = "NSpid:\t4242\nCapEff:\t000001ffffffffff\nNoNewPrivs:\t0\nSeccomp:\t0\n";
        let seen = Seen::parse(unconfined, 4242);
        let c = judge(
            report(&["profile strict", "lifetime: own PID namespace; x"]),
            Some(&seen),
            "default",
        );
        assert_eq!(c.contradictions.len(), 5, "{:?}", c.contradictions);
        for what in [
            "profile other than default",
            "no no_new_privs",
            "no seccomp filter",
            "no empty capability sets",
            "no PID namespace of its own",
        ] {
            assert!(
                c.contradictions.iter().any(|c| c.contains(what)),
                "{what}: {:?}",
                c.contradictions
            );
        }
    }

    #[test]
    fn report_lines_are_bounded_and_made_safe() {
        let long = "x".repeat(10_000);
        let mut e = report(&["profile default\u{1b}[2J\ny"]);
        e.layers.extend((0..1000).map(|_| long.clone()));
        let b = bounded(&e);
        assert_eq!(b.layers.len(), MAX_LINES);
        assert!(b.layers.iter().all(|l| l.chars().count() <= MAX_LINE_CHARS));
        assert!(!b.layers[0].contains('\u{1b}') && !b.layers[0].contains('\n'));
    }
}
