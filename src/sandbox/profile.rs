//! Sandbox profiles: what a confined process may read, write and reach, and
//! its resource limits. Three are bundled (`sandbox-profiles/*.toml`); a
//! profile may also be any TOML file given by path. This module parses and
//! resolves profiles; it applies nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Registries;
use crate::error::bad_input;

/// The bundled profiles, by name.
const BUNDLED: &[(&str, &str)] = &[
    (
        "default",
        include_str!("../../sandbox-profiles/default.toml"),
    ),
    (
        "loopback",
        include_str!("../../sandbox-profiles/loopback.toml"),
    ),
    ("strict", include_str!("../../sandbox-profiles/strict.toml")),
];

/// What a confined process may reach over the network.
/// Ordered from the narrowest to the widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No sockets but Unix ones, no TCP bind or connect.
    #[default]
    None,
    /// A private network namespace with only `lo` up.
    Loopback,
    /// Loopback, plus the package registries (`[registries]`) through the
    /// orchestrator's proxy, which refuses every other host.
    Registries,
    /// The host's network, unconfined (an explicit opt-in).
    Host,
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::None => "none",
            Network::Loopback => "loopback",
            Network::Registries => "registries",
            Network::Host => "host",
        }
    }

    /// Parse a `--network` value.
    pub fn parse(text: &str) -> anyhow::Result<Network> {
        match text {
            "none" => Ok(Network::None),
            "loopback" => Ok(Network::Loopback),
            "registries" => Ok(Network::Registries),
            "host" => Ok(Network::Host),
            other => Err(bad_input(format!(
                "--network {other}: expected none, loopback, registries or host"
            ))),
        }
    }
}

fn registries() -> Network {
    Network::Registries
}

/// Whether a kernel that cannot enforce all of Landlock may still run sessions.
/// A profile that does not say is best-effort: only a profile that asks for
/// `required` (the strict one) is refused on an older kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LandlockMode {
    /// Refuse to run unless everything the profile asks is enforced.
    Required,
    /// Run with what the kernel enforces; warn and record the rest.
    #[default]
    BestEffort,
}

/// The usual toolchains' credential files, relative to the invoking user's
/// home: hidden in the sandbox (read as empty) wherever a grant would make
/// them readable, whatever the profile says.
pub const CREDENTIALS: &[&str] = &[
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".netrc",
    ".docker/config.json",
    ".config/gh",
];

/// `[filesystem]`: paths beyond the system directories and the session's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Filesystem {
    /// Readable and executable (toolchains); `~` is the invoking user's home.
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Readable and writable.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// Files and directories inside the grants that the sandbox does not
    /// see (covered, read as empty). [`CREDENTIALS`] are always added.
    #[serde(default)]
    pub hidden: Vec<PathBuf>,
}

/// `[limits]`: resource limits of the whole confined process tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Processes and threads at once.
    pub processes: u64,
    /// Memory, in MiB.
    pub memory_mb: u64,
    /// Largest file a process may write, in MiB.
    pub file_size_mb: u64,
    /// Open file descriptors per process.
    pub open_files: u64,
}

/// A resolved profile: `~` expanded, ready to apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The bundled name or the file it came from (set on resolution, not in the file).
    #[serde(default)]
    pub name: String,
    /// One line saying what the profile allows; shown in denial hints.
    pub description: String,
    #[serde(default)]
    pub network: Network,
    /// The network of `init.sh` (which installs dependencies): the package
    /// registries unless the profile says otherwise.
    #[serde(default = "registries")]
    pub init_network: Network,
    /// The hosts `registries` reaches.
    #[serde(default)]
    pub registries: Registries,
    #[serde(default)]
    pub landlock: LandlockMode,
    #[serde(default)]
    pub filesystem: Filesystem,
    /// Variables set inside the sandbox (for example RUSTUP_HOME), `~` expanded.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    pub limits: Limits,
}

impl Profile {
    /// Resolve `--profile NAME|PATH` or `[sandbox] profile`: a bundled name, or
    /// a path (relative to `base`) to a TOML file.
    pub fn resolve(name_or_path: &str, base: &Path) -> anyhow::Result<Profile> {
        if let Some((name, text)) = BUNDLED.iter().find(|(n, _)| *n == name_or_path) {
            return Profile::parse(text, name);
        }
        let looks_like_path = name_or_path.contains('/') || name_or_path.ends_with(".toml");
        if !looks_like_path {
            return Err(bad_input(format!(
                "unknown sandbox profile `{name_or_path}`: the bundled profiles are {}; \
                 or give a path to a profile file (for example ./my-profile.toml)",
                bundled_names().join(", ")
            )));
        }
        let path = base.join(name_or_path);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            bad_input(format!(
                "cannot read sandbox profile {}: {e}",
                path.display()
            ))
        })?;
        Profile::parse(&text, &path.display().to_string())
    }

    /// The bundled profile `name`.
    pub fn bundled(name: &str) -> anyhow::Result<Profile> {
        Profile::resolve(name, Path::new("."))
    }

    /// Parse a profile's text; `origin` names it in errors and becomes its name.
    pub fn parse(text: &str, origin: &str) -> anyhow::Result<Profile> {
        let mut profile: Profile = toml::from_str(text).map_err(|e| {
            bad_input(format!(
                "sandbox profile {origin} is not valid: {}; see the Sandbox section of the README for the fields",
                e.to_string().trim_end()
            ))
        })?;
        profile.name = origin.to_string();
        profile.check(origin)?;
        profile.expand_home(real_home().as_deref());
        Ok(profile)
    }

    fn check(&self, origin: &str) -> anyhow::Result<()> {
        let l = &self.limits;
        for (field, value) in [
            ("processes", l.processes),
            ("memory_mb", l.memory_mb),
            ("file_size_mb", l.file_size_mb),
            ("open_files", l.open_files),
        ] {
            if value == 0 {
                return Err(bad_input(format!(
                    "sandbox profile {origin}: limits.{field} must be at least 1"
                )));
            }
        }
        if l.open_files < 16 {
            return Err(bad_input(format!(
                "sandbox profile {origin}: limits.open_files must be at least 16 (a shell needs a few)"
            )));
        }
        self.registries
            .allow_list(&[])
            .map_err(|e| bad_input(format!("sandbox profile {origin}: registries.hosts: {e}")))?;
        Ok(())
    }

    /// This profile with more `registries` hosts (`[sandbox] registries` of
    /// longrun.toml); an entry that is not a host pattern is an error naming it.
    pub fn with_registries(mut self, extra: &[String]) -> anyhow::Result<Profile> {
        self.registries.allow_list(extra)?;
        self.registries.hosts.extend(extra.iter().cloned());
        Ok(self)
    }

    /// The profile `init.sh` runs under: this one, with the wider of
    /// `network` and `init_network`.
    pub fn for_init_script(&self) -> Profile {
        Profile {
            network: self.network.max(self.init_network),
            ..self.clone()
        }
    }

    /// Expand a leading `~` in paths and env values; paths under `~` are
    /// dropped when there is no home to expand it to.
    fn expand_home(&mut self, home: Option<&Path>) {
        let expand = |p: &Path| -> Option<PathBuf> {
            match p.strip_prefix("~") {
                Ok(rest) => home.map(|h| h.join(rest)),
                Err(_) => Some(p.to_path_buf()),
            }
        };
        let fs = &mut self.filesystem;
        fs.read_only = fs.read_only.iter().filter_map(|p| expand(p)).collect();
        fs.writable = fs.writable.iter().filter_map(|p| expand(p)).collect();
        let credentials = home
            .into_iter()
            .flat_map(|h| CREDENTIALS.iter().map(move |c| h.join(c)));
        let mut hidden: Vec<PathBuf> = fs.hidden.iter().filter_map(|p| expand(p)).collect();
        for c in credentials {
            if !hidden.contains(&c) {
                hidden.push(c);
            }
        }
        fs.hidden = hidden;
        self.env
            .retain(|_, v| !v.starts_with('~') || home.is_some());
        for value in self.env.values_mut() {
            if let Some(p) = expand(Path::new(value.as_str())) {
                *value = p.display().to_string();
            }
        }
    }
}

pub fn bundled_names() -> Vec<&'static str> {
    BUNDLED.iter().map(|(n, _)| *n).collect()
}

/// The invoking user's real home, which `~` in a profile means.
fn real_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_profiles_parse() {
        for name in bundled_names() {
            let p = Profile::bundled(name).unwrap();
            assert_eq!(p.name, name);
        }
        assert_eq!(
            Profile::bundled("loopback").unwrap().network,
            Network::Loopback
        );
        assert!(Profile::bundled("strict")
            .unwrap()
            .filesystem
            .read_only
            .is_empty());
    }

    #[test]
    fn a_bad_field_is_named() {
        let text = "description = \"x\"\nnetwork = \"wifi\"\n[limits]\nprocesses = 1\nmemory_mb = 1\nfile_size_mb = 1\nopen_files = 64\n";
        let err = Profile::parse(text, "p.toml").unwrap_err().to_string();
        assert!(err.contains("p.toml") && err.contains("network"), "{err}");
        let text = "description = \"x\"\n[limits]\nprocesses = 0\nmemory_mb = 1\nfile_size_mb = 1\nopen_files = 64\n";
        let err = Profile::parse(text, "p.toml").unwrap_err().to_string();
        assert!(err.contains("limits.processes"), "{err}");
    }

    #[test]
    fn tilde_expands_to_the_real_home() {
        let mut p = Profile::bundled("default").unwrap();
        p.filesystem.read_only = vec!["~/.cargo".into(), "/opt/x".into()];
        p.env = BTreeMap::from([("RUSTUP_HOME".to_string(), "~/.rustup".to_string())]);
        p.expand_home(Some(Path::new("/home/u")));
        assert_eq!(
            p.filesystem.read_only,
            vec![PathBuf::from("/home/u/.cargo"), PathBuf::from("/opt/x")]
        );
        assert_eq!(p.env["RUSTUP_HOME"], "/home/u/.rustup");
        assert!(p
            .filesystem
            .hidden
            .contains(&PathBuf::from("/home/u/.cargo/credentials.toml")));
        assert!(p
            .filesystem
            .hidden
            .contains(&PathBuf::from("/home/u/.config/gh")));
        p.filesystem.read_only = vec!["~/.cargo".into()];
        p.filesystem.hidden = Vec::new();
        p.expand_home(None);
        assert!(p.filesystem.read_only.is_empty());
        assert!(p.filesystem.hidden.is_empty());
    }

    #[test]
    fn init_sh_reaches_the_registries_unless_the_profile_says_otherwise() {
        let default = Profile::bundled("default").unwrap();
        assert_eq!(default.network, Network::None);
        assert_eq!(default.for_init_script().network, Network::Registries);
        let strict = Profile::bundled("strict").unwrap();
        assert_eq!(strict.for_init_script().network, Network::None);
        let mut host = default.clone();
        host.network = Network::Host;
        assert_eq!(host.for_init_script().network, Network::Host);
        let text = "description = \"x\"\nnetwork = \"registries\"\n[registries]\nhosts = [\"a b\"]\n[limits]\nprocesses = 1\nmemory_mb = 1\nfile_size_mb = 1\nopen_files = 64\n";
        let err = Profile::parse(text, "p.toml").unwrap_err().to_string();
        assert!(
            err.contains("registries.hosts") && err.contains("`a b`"),
            "{err}"
        );
    }

    #[test]
    fn unknown_names_list_the_bundled_ones() {
        let err = Profile::bundled("nope").unwrap_err().to_string();
        assert!(err.contains("default, loopback, strict"), "{err}");
    }
}
