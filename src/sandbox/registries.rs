//! The hosts a `network = "registries"` sandbox may reach through the
//! orchestrator's proxy: the package registries by default, plus what the
//! profile and `longrun.toml` add. This module parses and matches host
//! patterns; it opens no connection (the proxy, `sandbox/proxy.rs`, does).

use serde::{Deserialize, Serialize};

/// The registries every `registries` profile reaches unless it says
/// `defaults = false`: PyPI, npm, crates.io, the Go module proxy and
/// checksum database, and the Debian and Ubuntu archives.
pub const DEFAULT_HOSTS: &[&str] = &[
    "pypi.org",
    "files.pythonhosted.org",
    "registry.npmjs.org",
    "crates.io",
    "index.crates.io",
    "static.crates.io",
    "proxy.golang.org",
    "sum.golang.org",
    "deb.debian.org",
    "security.debian.org",
    "archive.ubuntu.com",
    "*.archive.ubuntu.com",
    "security.ubuntu.com",
    "ports.ubuntu.com",
];

/// `[registries]` of a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registries {
    /// Whether [`DEFAULT_HOSTS`] are reachable.
    #[serde(default = "yes")]
    pub defaults: bool,
    /// More hosts: `name` (ports 80 and 443), `name:port`, `*.name` (any
    /// subdomain), or an IP address (`127.0.0.2:8080`, `[::1]:8080`).
    #[serde(default)]
    pub hosts: Vec<String>,
}

fn yes() -> bool {
    true
}

impl Default for Registries {
    fn default() -> Self {
        Registries {
            defaults: true,
            hosts: Vec::new(),
        }
    }
}

impl Registries {
    /// Every host pattern in force, the defaults first, then `extra` (from `longrun.toml`).
    pub fn allow_list(&self, extra: &[String]) -> anyhow::Result<AllowList> {
        let defaults = DEFAULT_HOSTS.iter().filter(|_| self.defaults);
        let entries = defaults
            .map(|h| h.to_string())
            .chain(self.hosts.iter().cloned())
            .chain(extra.iter().cloned());
        let patterns = entries
            .map(|e| HostPattern::parse(&e))
            .collect::<anyhow::Result<_>>()?;
        Ok(AllowList { patterns })
    }
}

/// One allowed host (or family of hosts) and its ports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    /// Lowercase, without a trailing dot; for `*.name`, `name`.
    name: String,
    /// `*.name`: any subdomain of `name` (not `name` itself).
    subdomains: bool,
    /// None: 80 and 443.
    port: Option<u16>,
}

impl HostPattern {
    pub fn parse(entry: &str) -> anyhow::Result<HostPattern> {
        let bad = |why: &str| {
            anyhow::anyhow!(
                "registry host `{entry}` {why}; write a name (pypi.org), name:port, *.name or an IP address with a port"
            )
        };
        let (host, port) =
            split_host_port(entry.trim()).ok_or_else(|| bad("is not host[:port]"))?;
        let (subdomains, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host),
        };
        let name = normalize(host).ok_or_else(|| bad("is not a host name"))?;
        Ok(HostPattern {
            name,
            subdomains,
            port,
        })
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(p) => p == port,
            None => port == 80 || port == 443,
        };
        let name_ok = if self.subdomains {
            host.strip_suffix(self.name.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            host == self.name
        };
        port_ok && name_ok
    }
}

/// The hosts a proxy lets through.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AllowList {
    patterns: Vec<HostPattern>,
}

impl AllowList {
    /// Whether `host` (as a client named it) on `port` may be reached.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        normalize(host).is_some_and(|h| self.patterns.iter().any(|p| p.allows(&h, port)))
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`; None when malformed.
pub fn split_host_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        return match after {
            "" => Some((v6, None)),
            _ => Some((v6, Some(after.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Some((host, Some(port.parse().ok()?))),
        Some(_) => None,
        None => Some((text, None)),
    }
}

/// A host name lowercased and without its trailing dot, or an IP address in
/// its canonical form; None for anything else.
pub fn normalize(host: &str) -> Option<String> {
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Some(ip.to_string());
    }
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && l.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    (!host.is_empty() && host.len() <= 253 && host.split('.').all(label_ok)).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(hosts: &[&str]) -> AllowList {
        Registries {
            defaults: false,
            hosts: hosts.iter().map(|h| h.to_string()).collect(),
        }
        .allow_list(&[])
        .unwrap()
    }

    #[test]
    fn names_match_exactly_on_the_web_ports() {
        let l = list(&["pypi.org"]);
        assert!(l.allows("pypi.org", 443));
        assert!(l.allows("PyPI.org.", 80));
        assert!(!l.allows("pypi.org", 22));
        assert!(!l.allows("evilpypi.org", 443));
        assert!(!l.allows("pypi.org.evil.com", 443));
        assert!(!l.allows("x.pypi.org", 443));
    }

    #[test]
    fn wildcards_match_subdomains_only() {
        let l = list(&["*.archive.ubuntu.com"]);
        assert!(l.allows("us.archive.ubuntu.com", 80));
        assert!(!l.allows("archive.ubuntu.com", 80));
        assert!(!l.allows("evilarchive.ubuntu.com", 80));
    }

    #[test]
    fn addresses_match_with_their_port() {
        let l = list(&["127.0.0.2:8080", "[::1]:9000"]);
        assert!(l.allows("127.0.0.2", 8080));
        assert!(!l.allows("127.0.0.2", 8081));
        assert!(!l.allows("127.0.0.1", 8080));
        assert!(l.allows("::1", 9000));
        assert!(l.allows("0:0::1", 9000));
    }

    #[test]
    fn the_defaults_are_the_registries_and_can_be_turned_off() {
        let on = Registries::default()
            .allow_list(&["mirror.example:8443".into()])
            .unwrap();
        assert!(on.allows("files.pythonhosted.org", 443));
        assert!(on.allows("static.crates.io", 443));
        assert!(on.allows("mirror.example", 8443));
        assert!(!on.allows("example.com", 443));
        assert!(!list(&[]).allows("pypi.org", 443));
    }

    #[test]
    fn malformed_entries_are_named() {
        for bad in [
            "",
            "a b",
            "host:port",
            "http://pypi.org",
            "[::1",
            "*.",
            "a..b",
        ] {
            let err = HostPattern::parse(bad).unwrap_err().to_string();
            assert!(err.contains(&format!("`{bad}`")), "{err}");
        }
    }
}
