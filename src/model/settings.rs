//! How to reach a model: base URL, key, output limits, timeouts, retries and
//! prices, resolved from `--base-url`, the environment and `[model]`.
//!
//! Precedence is flag > environment > file. The key is read here, from the
//! orchestrator's environment only, and is held in an [`ApiKey`] that never
//! prints; it is never written to disk and never reaches the worker.

use std::time::Duration;

use super::{ModelSpec, ProviderKind};
use crate::config::ModelSection;
use crate::error::bad_input;

pub const BASE_URL_ENV: &str = "LONGRUN_BASE_URL";
pub const API_KEY_ENV: &str = "LONGRUN_API_KEY";

/// A secret that never shows in `Debug` output or logs.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(..)")
    }
}

/// Timeouts of one HTTP request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    pub connect: Duration,
    /// Until the response headers arrive.
    pub first_byte: Duration,
    /// Between two chunks of the body.
    pub idle: Duration,
}

/// How often and how patiently a failed request is tried again.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetryPolicy {
    /// Tries in all, the first included.
    pub max_tries: u32,
    pub base: Duration,
    pub cap: Duration,
}

/// Price overrides from longrun.toml, USD per million tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PriceOverride {
    pub input: Option<f64>,
    pub output: Option<f64>,
    pub cached: Option<f64>,
}

/// Everything an HTTP provider needs besides the model name.
#[derive(Debug, Clone)]
pub struct ProviderSettings {
    pub base_url: String,
    pub key: Option<ApiKey>,
    /// Where the key came from, for error messages: e.g. `OPENAI_API_KEY`.
    pub key_source: String,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub timeouts: Timeouts,
    pub retry: RetryPolicy,
    pub prices: PriceOverride,
}

pub const OPENAI_BASE: &str = "https://api.openai.com/v1";
pub const OLLAMA_BASE: &str = "http://localhost:11434/v1";
pub const ANTHROPIC_BASE: &str = "https://api.anthropic.com";

/// The variable a provider's key is usually in.
fn default_key_env(kind: ProviderKind) -> Option<&'static str> {
    match kind {
        ProviderKind::Openai => Some("OPENAI_API_KEY"),
        ProviderKind::Anthropic => Some("ANTHROPIC_API_KEY"),
        ProviderKind::Ollama | ProviderKind::Scripted => None,
    }
}

fn default_base(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Anthropic => ANTHROPIC_BASE,
        ProviderKind::Ollama => OLLAMA_BASE,
        ProviderKind::Openai | ProviderKind::Scripted => OPENAI_BASE,
    }
}

impl ProviderSettings {
    /// Resolve for `spec`: `base_url_flag` > `LONGRUN_BASE_URL` > `[model]`;
    /// the key from `LONGRUN_API_KEY`, the variable `api_key_env` names, then
    /// the provider's usual variable. `env` reads the environment (a parameter for tests).
    pub fn resolve(
        spec: &ModelSpec,
        section: &ModelSection,
        base_url_flag: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> anyhow::Result<ProviderSettings> {
        let non_empty = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let base_url = base_url_flag
            .map(str::to_string)
            .or_else(|| non_empty(BASE_URL_ENV))
            .or_else(|| section.base_url.clone())
            .unwrap_or_else(|| default_base(spec.kind).to_string());
        let base_url = check_base_url(&base_url)?;
        let (key, key_source) = find_key(spec.kind, section, &non_empty);
        let needs_key = match spec.kind {
            ProviderKind::Anthropic => base_url == ANTHROPIC_BASE,
            ProviderKind::Openai => base_url == OPENAI_BASE,
            ProviderKind::Ollama | ProviderKind::Scripted => false,
        };
        if key.is_none() && needs_key {
            return Err(bad_input(format!(
                "no API key for {}: set {key_source} (or {API_KEY_ENV}) in the environment",
                spec.display()
            )));
        }
        // A local model's family fills in the output cap and temperature left unset.
        let profile = super::family::profile(section.family.as_deref(), &spec.display());
        Ok(ProviderSettings {
            base_url,
            key,
            key_source,
            max_output_tokens: section
                .max_output_tokens
                .or(profile.map(|p| p.max_output_tokens)),
            temperature: section.temperature.or(profile.map(|p| p.temperature)),
            timeouts: timeouts(section)?,
            retry: retry_policy(section)?,
            prices: PriceOverride {
                input: section.price_in_per_mtok,
                output: section.price_out_per_mtok,
                cached: section.price_cached_per_mtok,
            },
        })
    }
}

/// The key and the name of the variable it came from (or would come from).
fn find_key(
    kind: ProviderKind,
    section: &ModelSection,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Option<ApiKey>, String) {
    let mut names = vec![API_KEY_ENV.to_string()];
    names.extend(section.api_key_env.clone());
    names.extend(default_key_env(kind).map(str::to_string));
    for name in &names {
        if let Some(value) = env(name) {
            return (Some(ApiKey(value.trim().to_string())), name.clone());
        }
    }
    // Name the variable a user would most naturally set.
    let wanted = names.get(1).cloned().unwrap_or_else(|| API_KEY_ENV.into());
    (None, wanted)
}

fn check_base_url(url: &str) -> anyhow::Result<String> {
    let url = url.trim().trim_end_matches('/');
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(bad_input(format!(
            "base URL `{url}` is not an http:// or https:// URL; fix --base-url, {BASE_URL_ENV} or base_url under [model]"
        )));
    }
    Ok(url.to_string())
}

fn seconds(value: Option<f64>, default: f64, field: &str) -> anyhow::Result<Duration> {
    let v = value.unwrap_or(default);
    if !v.is_finite() || v < 0.0 {
        return Err(bad_input(format!(
            "longrun.toml: [model] {field} = {v} is not a number of seconds >= 0"
        )));
    }
    Ok(Duration::from_secs_f64(v))
}

fn timeouts(s: &ModelSection) -> anyhow::Result<Timeouts> {
    Ok(Timeouts {
        connect: seconds(s.connect_timeout_secs, 10.0, "connect_timeout_secs")?,
        first_byte: seconds(s.first_byte_timeout_secs, 120.0, "first_byte_timeout_secs")?,
        idle: seconds(s.idle_timeout_secs, 120.0, "idle_timeout_secs")?,
    })
}

fn retry_policy(s: &ModelSection) -> anyhow::Result<RetryPolicy> {
    let max_tries = s.max_tries.unwrap_or(6);
    if max_tries == 0 {
        return Err(bad_input(
            "longrun.toml: [model] max_tries = 0 would never send a request; use 1 or more",
        ));
    }
    Ok(RetryPolicy {
        max_tries,
        base: seconds(s.retry_base_secs, 1.0, "retry_base_secs")?,
        cap: seconds(s.retry_cap_secs, 60.0, "retry_cap_secs")?,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;

    fn resolve(
        model: &str,
        section: &ModelSection,
        flag: Option<&str>,
        vars: &[(&str, &str)],
    ) -> anyhow::Result<ProviderSettings> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let spec = ModelSpec::parse(model, Path::new("/")).unwrap();
        ProviderSettings::resolve(&spec, section, flag, &|k| vars.get(k).cloned())
    }

    #[test]
    fn both_wire_formats_send_a_requests_stop_sequences_and_leave_out_what_a_provider_refuses() {
        use super::super::anthropic::AnthropicFormat;
        use super::super::http::WireFormat;
        use super::super::openai::OpenaiFormat;
        use super::super::ChatRequest;

        let settings = resolve("ollama:m", &ModelSection::default(), None, &[]).unwrap();
        let mut request = ChatRequest {
            system: "sys".into(),
            messages: Vec::new(),
            tools: Vec::new(),
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: None,
        };
        let openai = OpenaiFormat.body("m", &settings, &request, false);
        let anthropic = AnthropicFormat.body("m", &settings, &request, false);
        assert!(openai.get("stop").is_none(), "{openai}");
        assert!(anthropic.get("stop_sequences").is_none(), "{anthropic}");

        // Blank and overlong ones dropped (Anthropic refuses a blank one),
        // then at most four (OpenAI's limit).
        request.stop = ["[harness]", " \n", &"x".repeat(65), "a", "b", "c", "d"]
            .map(String::from)
            .to_vec();
        let openai = OpenaiFormat.body("m", &settings, &request, false);
        let anthropic = AnthropicFormat.body("m", &settings, &request, false);
        let sent = serde_json::json!(["[harness]", "a", "b", "c"]);
        assert_eq!(openai["stop"], sent, "{openai}");
        assert_eq!(anthropic["stop_sequences"], sent, "{anthropic}");
    }

    #[test]
    fn base_url_flag_beats_env_beats_file() {
        let file = ModelSection {
            base_url: Some("http://file/v1".into()),
            ..Default::default()
        };
        let env = [(BASE_URL_ENV, "http://env/v1/")];
        let s = resolve("ollama:m", &file, Some("http://flag/v1"), &env).unwrap();
        assert_eq!(s.base_url, "http://flag/v1");
        let s = resolve("ollama:m", &file, None, &env).unwrap();
        assert_eq!(s.base_url, "http://env/v1");
        let s = resolve("ollama:m", &file, None, &[]).unwrap();
        assert_eq!(s.base_url, "http://file/v1");
        let s = resolve("ollama:m", &ModelSection::default(), None, &[]).unwrap();
        assert_eq!(s.base_url, OLLAMA_BASE);
    }

    #[test]
    fn key_order_is_longrun_then_named_variable_then_provider_default() {
        let named = ModelSection {
            api_key_env: Some("ROUTER_KEY".into()),
            ..Default::default()
        };
        let all = [
            (API_KEY_ENV, "k1"),
            ("ROUTER_KEY", "k2"),
            ("OPENAI_API_KEY", "k3"),
        ];
        let key = |s: ProviderSettings| s.key.unwrap().expose().to_string();
        assert_eq!(key(resolve("openai:m", &named, None, &all).unwrap()), "k1");
        assert_eq!(
            key(resolve("openai:m", &named, None, &all[1..]).unwrap()),
            "k2"
        );
        assert_eq!(
            key(resolve("openai:m", &named, None, &all[2..]).unwrap()),
            "k3"
        );
    }

    #[test]
    fn missing_key_names_the_variable_and_exits_2() {
        let err = resolve("anthropic:claude", &ModelSection::default(), None, &[]).unwrap_err();
        assert!(err.to_string().contains("ANTHROPIC_API_KEY"), "{err}");
        assert_eq!(
            crate::error::exit_code_for(&err),
            std::process::ExitCode::from(2)
        );
        // A local server needs no key.
        let local = resolve(
            "openai:m",
            &ModelSection::default(),
            Some("http://127.0.0.1:8080/v1"),
            &[],
        );
        assert!(local.unwrap().key.is_none());
    }

    #[test]
    fn the_key_never_prints() {
        let s = resolve(
            "openai:m",
            &ModelSection::default(),
            None,
            &[("OPENAI_API_KEY", "sk-secret")],
        )
        .unwrap();
        assert!(!format!("{s:?}").contains("sk-secret"));
    }
}
