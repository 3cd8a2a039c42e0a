//! The registries proxy: an HTTP proxy, run by the orchestrator, through
//! which a `network = "registries"` sandbox reaches the package registries
//! its profile lists, and nothing else.
//!
//! It speaks just enough HTTP/1.1 for package managers: `CONNECT host:port`
//! (the TLS tunnel pip, npm, cargo, go and uv use for https; the proxy never
//! sees inside it) and plain-http requests in absolute form. The host a
//! client names is checked against the allow list before any connection is
//! made; names are resolved here, outside the sandbox. Every host asked for,
//! allowed or refused, is counted for the session's transcript and trailers.
//!
//! A small tokio proxy rather than a crate: the well-kept proxy crates are
//! built for MITM inspection or general forwarding and bring TLS and HTTP
//! stacks this needs none of; what it must get right (parse one request
//! head, check one host, splice bytes) is a page of code a reader can audit.
//!
//! How the sandbox reaches it (a listener handed out of the sandbox's own
//! network namespace) is `sandbox/proxy_bridge.rs`.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::sandbox::{AllowList, Network, SandboxSpec, PROXY_FD};

/// The longest request head a client may send.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client may take to send its request head, and the proxy to connect.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
/// Connections served at once per sandbox.
const MAX_CONNECTIONS: usize = 64;

/// The `Longrun-Network` trailer lines of `contacts`, which may come from
/// several confined runs (the worker, verification's steps): one per host,
/// port and answer, the counts summed.
pub fn trailer_lines(contacts: &[Contact]) -> Vec<String> {
    let mut tally = Tally::default();
    for c in contacts {
        let entry = tally
            .hosts
            .entry((c.host.clone(), c.port))
            .or_insert((c.allowed, 0));
        entry.1 = entry.1.saturating_add(c.connections);
    }
    tally.contacts().iter().map(|c| c.to_string()).collect()
}

/// One host a sandbox asked the proxy for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contact {
    pub host: String,
    pub port: u16,
    pub allowed: bool,
    /// Connections asked for.
    pub connections: u32,
}

impl std::fmt::Display for Contact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.allowed { "allowed" } else { "refused" };
        // Hosts are normalised before they are counted: [a-z0-9._-] or an IP address.
        write!(
            f,
            "{}:{} {what} x{}",
            self.host, self.port, self.connections
        )
    }
}

/// Who the proxy tells about a refusal as it happens (`longrun sandbox`
/// says it on stderr; sessions only count it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusals {
    Counted,
    Said,
}

#[derive(Default)]
struct Tally {
    hosts: BTreeMap<(String, u16), (bool, u32)>,
}

impl Tally {
    fn count(&mut self, host: &str, port: u16, allowed: bool) {
        let entry = self
            .hosts
            .entry((host.to_string(), port))
            .or_insert((allowed, 0));
        entry.1 = entry.1.saturating_add(1);
    }

    fn contacts(&self) -> Vec<Contact> {
        self.hosts
            .iter()
            .map(|((host, port), (allowed, connections))| Contact {
                host: host.clone(),
                port: *port,
                allowed: *allowed,
                connections: *connections,
            })
            .collect()
    }
}

/// The channel a confined process inherits at [`PROXY_FD`], made before it
/// is started.
pub struct Channel {
    ours: std::os::unix::net::UnixStream,
    theirs: OwnedFd,
    allow: AllowList,
}

impl Channel {
    /// The channel for a process confined by `spec`, when its network is
    /// `registries`: the profile's hosts (with longrun.toml's, which the
    /// project added to them) are let through.
    pub fn for_spec(spec: &SandboxSpec) -> anyhow::Result<Option<Channel>> {
        if spec.profile.network != Network::Registries {
            return Ok(None);
        }
        let allow = spec
            .profile
            .registries
            .allow_list(&[])
            .map_err(|e| crate::error::bad_input(format!("{e:#}")))?;
        Channel::new(allow).map(Some)
    }

    fn new(allow: AllowList) -> anyhow::Result<Channel> {
        let (ours, theirs) =
            std::os::unix::net::UnixStream::pair().context("failed to make the proxy's channel")?;
        // Far above the descriptors the child is given (0-2, the broker's 3,
        // PROXY_FD), so that no dup2 before ours overwrites it; just above
        // them when the descriptor limit is lower than 64.
        // SAFETY: F_DUPFD_CLOEXEC makes a new descriptor we own.
        let mut high = unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 64) };
        if high < 0 {
            // SAFETY: as above.
            high = unsafe { libc::fcntl(theirs.as_raw_fd(), libc::F_DUPFD_CLOEXEC, PROXY_FD + 1) };
        }
        if high < 0 {
            return Err(std::io::Error::last_os_error())
                .context("failed to place the proxy's channel");
        }
        // SAFETY: `high` was just made and is owned by nothing else.
        let theirs = unsafe { OwnedFd::from_raw_fd(high) };
        Ok(Channel {
            ours,
            theirs,
            allow,
        })
    }

    /// Make `cmd`'s process inherit the channel at [`PROXY_FD`]. Call after
    /// any other `pre_exec` that places descriptors.
    pub fn inherit(&self, cmd: &mut std::process::Command) {
        let fd: RawFd = self.theirs.as_raw_fd();
        // SAFETY: dup2 only, which is async-signal-safe; dup2 clears CLOEXEC on the copy.
        unsafe {
            cmd.pre_exec(move || {
                if libc::dup2(fd, PROXY_FD) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }

    /// Hand the channel to `cmd` (an `__exec`) on its stdin, for it to move
    /// to [`PROXY_FD`] itself: no code runs between fork and exec.
    fn on_stdin(&self, cmd: &mut std::process::Command) -> anyhow::Result<()> {
        let theirs = self
            .theirs
            .try_clone()
            .context("failed to hand over the proxy's channel")?;
        cmd.stdin(std::process::Stdio::from(theirs))
            .env(crate::sandbox::PROXY_ON_STDIN_ENV, "1");
        Ok(())
    }

    /// After the process started: serve the listener it hands over, letting
    /// through what `allow` allows, until the returned [`Served`] is finished
    /// or dropped.
    pub fn serve(self, refusals: Refusals) -> anyhow::Result<Served> {
        let Channel {
            ours,
            theirs,
            allow,
        } = self;
        drop(theirs);
        ours.set_nonblocking(true)?;
        let ours = tokio::net::UnixStream::from_std(ours)?;
        let tally = Arc::new(Mutex::new(Tally::default()));
        let allow = Arc::new(allow);
        let task = tokio::spawn(accept_loop(ours, allow, Arc::clone(&tally), refusals));
        Ok(Served { tally, task })
    }
}

/// A proxy serving one confined process.
pub struct Served {
    tally: Arc<Mutex<Tally>>,
    task: tokio::task::JoinHandle<()>,
}

impl Served {
    /// Stop serving (the confined process has ended) and say who was asked for.
    pub fn finish(self) -> Vec<Contact> {
        self.task.abort();
        self.contacts()
    }

    /// Who was asked for so far.
    pub fn contacts(&self) -> Vec<Contact> {
        lock(&self.tally).contacts()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(tally: &Mutex<Tally>) -> std::sync::MutexGuard<'_, Tally> {
    tally.lock().unwrap_or_else(|p| p.into_inner())
}

/// Receive the listener from the sandbox, then accept until aborted.
async fn accept_loop(
    channel: tokio::net::UnixStream,
    allow: Arc<AllowList>,
    tally: Arc<Mutex<Tally>>,
    refusals: Refusals,
) {
    let listener = match receive_listener(&channel).await {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!("registries proxy: no listener from the sandbox: {e:#}");
            return;
        }
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    // Connection tasks end with the accept loop's runtime; aborting the loop
    // (the sandbox ended) also drops the connections it started.
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (allow, tally) = (Arc::clone(&allow), Arc::clone(&tally));
        connections.spawn(async move {
            let _slot = slot;
            let _ = handle(client, &allow, &tally, refusals).await;
        });
        while connections.try_join_next().is_some() {}
    }
}

/// Wait for the one message on the channel: a byte and the listener's
/// descriptor. None when the sandbox closed the channel without one.
async fn receive_listener(channel: &tokio::net::UnixStream) -> anyhow::Result<Option<TcpListener>> {
    use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
    loop {
        channel.readable().await?;
        let got = channel.try_io(tokio::io::Interest::READABLE, || {
            let mut byte = [0u8; 1];
            let mut iov = [std::io::IoSliceMut::new(&mut byte)];
            let mut space = nix::cmsg_space!([RawFd; 1]);
            let msg = recvmsg::<()>(
                channel.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .map_err(std::io::Error::from)?;
            let fds: Vec<RawFd> = msg
                .cmsgs()
                .map_err(std::io::Error::from)?
                .filter_map(|c| match c {
                    ControlMessageOwned::ScmRights(fds) => Some(fds),
                    _ => None,
                })
                .flatten()
                .collect();
            Ok((msg.bytes, fds))
        });
        let (bytes, fds) = match got {
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e.into()),
        };
        // SAFETY: the kernel just installed these descriptors for us.
        let mut owned: Vec<OwnedFd> = fds
            .into_iter()
            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
            .collect();
        if bytes == 0 && owned.is_empty() {
            return Ok(None);
        }
        anyhow::ensure!(
            owned.len() == 1,
            "expected one descriptor, got {}",
            owned.len()
        );
        let listener = std::net::TcpListener::from(owned.remove(0));
        listener.set_nonblocking(true)?;
        return Ok(Some(TcpListener::from_std(listener)?));
    }
}

/// What a client asked for.
#[derive(Debug, PartialEq, Eq)]
struct Ask {
    host: String,
    port: u16,
    /// For a plain-http request: the head to send upstream. None for CONNECT.
    forward: Option<Vec<u8>>,
}

/// Serve one client connection.
async fn handle(
    mut client: TcpStream,
    allow: &AllowList,
    tally: &Mutex<Tally>,
    refusals: Refusals,
) -> anyhow::Result<()> {
    let (head, rest) = match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client)).await {
        Ok(Ok(read)) => read,
        _ => return reply(&mut client, "400 Bad Request", "no complete request head").await,
    };
    let ask = match parse_head(&head) {
        Ok(ask) => ask,
        Err(why) => return reply(&mut client, "400 Bad Request", &why).await,
    };
    let allowed = allow.allows(&ask.host, ask.port);
    lock(tally).count(&ask.host, ask.port, allowed);
    if !allowed {
        if refusals == Refusals::Said {
            eprintln!(
                "longrun sandbox: the proxy refused {}:{} (not among the profile's registries)",
                ask.host, ask.port
            );
        }
        let why = format!(
            "longrun: {}:{} is not among the sandbox profile's registries",
            ask.host, ask.port
        );
        return reply(&mut client, "403 Forbidden", &why).await;
    }
    let upstream = tokio::time::timeout(
        HEAD_TIMEOUT,
        TcpStream::connect((ask.host.as_str(), ask.port)),
    )
    .await;
    let mut upstream = match upstream {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => return reply(&mut client, "502 Bad Gateway", &e.to_string()).await,
        Err(_) => return reply(&mut client, "504 Gateway Timeout", "connect timed out").await,
    };
    match &ask.forward {
        None => {
            client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?
        }
        Some(head) => upstream.write_all(head).await?,
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

async fn reply(client: &mut TcpStream, status: &str, why: &str) -> anyhow::Result<()> {
    let body = format!("{}\n", printable(why));
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    client.write_all(text.as_bytes()).await?;
    let _ = client.shutdown().await;
    Ok(())
}

/// Read up to the end of the request head; returns the head and whatever
/// came after it.
async fn read_head(client: &mut TcpStream) -> anyhow::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        anyhow::ensure!(buf.len() <= MAX_HEAD, "request head too long");
        let n = client.read(&mut chunk).await?;
        anyhow::ensure!(n > 0, "the client closed before its request head ended");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Parse a request head: `CONNECT host:port` or `METHOD http://host[:port]/path`.
fn parse_head(head: &[u8]) -> Result<Ask, String> {
    let text =
        std::str::from_utf8(head).map_err(|_| "the request head is not UTF-8".to_string())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("");
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err("malformed request line".into());
    };
    if !version.starts_with("HTTP/1.")
        || method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
    {
        return Err("malformed request line".into());
    }
    if method == "CONNECT" {
        let (host, port) = host_port(target, None)?;
        return Ok(Ask {
            host,
            port,
            forward: None,
        });
    }
    let Some(rest) = target.strip_prefix("http://") else {
        return Err("only CONNECT and http:// URLs go through this proxy".into());
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') {
        format!("/{path}")
    } else {
        path.to_string()
    };
    let (host, port) = host_port(authority, Some(80))?;
    let mut forward = format!("{method} {path} {version}\r\n");
    for line in lines.filter(|l| !l.is_empty()) {
        let name = line
            .split(':')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            name.as_str(),
            "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive"
        ) {
            forward.push_str(line);
            forward.push_str("\r\n");
        }
    }
    forward.push_str("Connection: close\r\n\r\n");
    Ok(Ask {
        host,
        port,
        forward: Some(forward.into_bytes()),
    })
}

/// `host:port` (or `host` when `default_port` is given), checked and normalised.
fn host_port(authority: &str, default_port: Option<u16>) -> Result<(String, u16), String> {
    let bad = || format!("bad host `{}`", printable(authority));
    if authority.contains('@') {
        return Err(bad());
    }
    let (host, port) = crate::sandbox::split_host_port(authority).ok_or_else(bad)?;
    let port = port.or(default_port).ok_or_else(bad)?;
    let host = crate::sandbox::normalize_host(host).ok_or_else(bad)?;
    Ok((host, port))
}

/// Start `cmd`, which runs confined by `spec` (`sandbox::command`, the
/// `__exec` helper), with the proxy its network asks for; the child is
/// killed when dropped. The command reads nothing on stdin: with the
/// proxy, its stdin carries the channel, which `__exec` moves to
/// [`PROXY_FD`] ([`crate::sandbox::PROXY_ON_STDIN_ENV`]), so that no
/// `pre_exec` is needed and the command starts with posix_spawn. A fork
/// copies the orchestrator's page tables, which grow over a long run: in
/// the scale benchmark, starting init.sh before each session took 2.3 ms
/// at session 30 and 3.8 ms at session 975 that way.
pub fn spawn(
    mut cmd: std::process::Command,
    spec: &SandboxSpec,
) -> anyhow::Result<(tokio::process::Child, Option<Served>)> {
    let channel = Channel::for_spec(spec)?;
    if let Some(channel) = &channel {
        channel.on_stdin(&mut cmd)?;
    }
    let child = tokio::process::Command::from(cmd)
        .kill_on_drop(true)
        .spawn()?;
    let served = channel.map(|c| c.serve(Refusals::Counted)).transpose()?;
    Ok((child, served))
}

/// `text` with everything but printable ASCII replaced, for one line of a reply.
fn printable(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect()
}

/// `longrun sandbox` with `network = "registries"`: start the command
/// confined, serve its proxy until it exits, and exit as it did.
pub fn supervise(spec: &SandboxSpec, argv: &[String]) -> std::process::ExitCode {
    match supervised(spec, argv) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            eprintln!("longrun sandbox: {e:#}");
            std::process::ExitCode::from(1)
        }
    }
}

fn supervised(spec: &SandboxSpec, argv: &[String]) -> anyhow::Result<u8> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("failed to start the proxy's runtime")?;
    runtime.block_on(async {
        let channel =
            Channel::for_spec(spec)?.context("the profile's network is not registries")?;
        let mut cmd = crate::sandbox::command(spec, argv)?;
        channel.inherit(&mut cmd);
        // SAFETY: prctl only; the command dies with this supervisor.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = tokio::process::Command::from(cmd)
            .kill_on_drop(true)
            .spawn()
            .context("failed to start the confined command")?;
        let served = channel.serve(Refusals::Said)?;
        let status = child.wait().await?;
        served.finish();
        use std::os::unix::process::ExitStatusExt;
        Ok(match (status.code(), status.signal()) {
            (Some(code), _) => code as u8,
            (None, Some(sig)) => 128u8.saturating_add(sig as u8),
            _ => 1,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connect_and_absolute_requests_name_their_host() {
        let ask =
            parse_head(b"CONNECT PyPI.org.:443 HTTP/1.1\r\nHost: pypi.org:443\r\n\r\n").unwrap();
        assert_eq!(
            (ask.host.as_str(), ask.port, ask.forward),
            ("pypi.org", 443, None)
        );
        let ask = parse_head(
            b"GET http://127.0.0.2:8080/simple/pkg/?x=1 HTTP/1.1\r\nHost: 127.0.0.2:8080\r\nProxy-Connection: keep-alive\r\nAccept: */*\r\n\r\n",
        )
        .unwrap();
        assert_eq!((ask.host.as_str(), ask.port), ("127.0.0.2", 8080));
        let forward = String::from_utf8(ask.forward.unwrap()).unwrap();
        assert_eq!(
            forward,
            "GET /simple/pkg/?x=1 HTTP/1.1\r\nHost: 127.0.0.2:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n"
        );
        let ask = parse_head(b"GET http://deb.debian.org HTTP/1.0\r\n\r\n").unwrap();
        assert_eq!((ask.host.as_str(), ask.port), ("deb.debian.org", 80));
        assert!(String::from_utf8(ask.forward.unwrap())
            .unwrap()
            .starts_with("GET / HTTP/1.0\r\n"));
    }

    #[test]
    fn what_cannot_be_checked_is_refused() {
        for head in [
            &b"GET /local HTTP/1.1\r\n\r\n"[..],
            b"GET https://pypi.org/ HTTP/1.1\r\n\r\n",
            b"CONNECT pypi.org HTTP/1.1\r\n\r\n",
            b"CONNECT user@pypi.org:443 HTTP/1.1\r\n\r\n",
            b"CONNECT pypi.org:443 HTTP/1.1 x\r\n\r\n",
            b"CONNECT bad host:443 HTTP/1.1\r\n\r\n",
            b"connect pypi.org:443 HTTP/1.1\r\n\r\n",
            b"\xff\xfe\r\n\r\n",
        ] {
            assert!(
                parse_head(head).is_err(),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn contacts_are_counted_per_host_and_port() {
        let mut t = Tally::default();
        t.count("pypi.org", 443, true);
        t.count("pypi.org", 443, true);
        t.count("evil.example", 443, false);
        let lines: Vec<String> = t.contacts().iter().map(|c| c.to_string()).collect();
        assert_eq!(
            lines,
            ["evil.example:443 refused x1", "pypi.org:443 allowed x2"]
        );
    }
}
