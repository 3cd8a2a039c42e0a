//! The scrubbed environment of a confined process.

use super::SandboxSpec;

/// Variables passed through from the parent when set. The Landlock ABI cap
/// only ever lowers what is enforced, so it may pass.
const PASSED: &[&str] = &["PATH", "LANG", "TERM", "TZ", super::landlock::ABI_CAP_ENV];

/// The environment a session (or a verification run) gets: an allowlist of
/// the parent's variables, a git identity, HOME and TMPDIR in the session,
/// and the profile's own variables (RUSTUP_HOME, for instance).
pub fn session_env(spec: &SandboxSpec) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| PASSED.contains(&k.as_str()) || k.starts_with("LC_"))
        .collect();
    if !env.iter().any(|(k, _)| k == "PATH") {
        env.push(("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into()));
    }
    let home = spec.home.display().to_string();
    let tmp = spec.tmp.display().to_string();
    env.extend([
        ("HOME".to_string(), home),
        ("TMPDIR".to_string(), tmp),
        ("GIT_AUTHOR_NAME".to_string(), "longrun session".to_string()),
        (
            "GIT_AUTHOR_EMAIL".to_string(),
            "session@longrun.localhost".to_string(),
        ),
        (
            "GIT_COMMITTER_NAME".to_string(),
            "longrun session".to_string(),
        ),
        (
            "GIT_COMMITTER_EMAIL".to_string(),
            "session@longrun.localhost".to_string(),
        ),
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
    ]);
    if spec.profile.network == super::Network::Registries {
        env.extend(proxy_env());
    }
    for (key, value) in &spec.profile.env {
        env.retain(|(k, _)| k != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

/// The variables that send pip, uv, npm, cargo, go, git and curl through the
/// proxy. Loopback (a dev server inside) stays direct.
fn proxy_env() -> Vec<(String, String)> {
    let url = super::PROXY_URL;
    let through = [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "http_proxy",
        "https_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
        "CARGO_HTTP_PROXY",
    ];
    let direct = "localhost,127.0.0.1,::1";
    through
        .iter()
        .map(|k| (k.to_string(), url.to_string()))
        .chain(
            ["NO_PROXY", "no_proxy"]
                .iter()
                .map(|k| (k.to_string(), direct.to_string())),
        )
        .collect()
}
