//! How a [`ModelSpec`] becomes a provider: one wire format each.

use std::sync::Arc;

use super::anthropic::AnthropicFormat;
use super::http::HttpProvider;
use super::openai::OpenaiFormat;
use super::settings::ProviderSettings;
use super::{ModelSpec, Provider, ProviderKind, ScriptedProvider};
use crate::config::ModelSection;

/// Open the provider a spec names. HTTP providers resolve their settings
/// (`--base-url` > `LONGRUN_BASE_URL` > `[model]`) and read the key from the
/// orchestrator's environment; the key stays inside the returned value.
pub fn open_provider(
    spec: &ModelSpec,
    section: &ModelSection,
    base_url_flag: Option<&str>,
) -> anyhow::Result<Arc<dyn Provider>> {
    let http = |format: Box<dyn super::http::WireFormat>| -> anyhow::Result<Arc<dyn Provider>> {
        let env = |name: &str| std::env::var(name).ok();
        let settings = ProviderSettings::resolve(spec, section, base_url_flag, &env)?;
        Ok(Arc::new(HttpProvider::new(spec, settings, format)?))
    };
    match spec.kind {
        ProviderKind::Scripted => Ok(Arc::new(ScriptedProvider::load(spec)?)),
        ProviderKind::Openai | ProviderKind::Ollama => http(Box::new(OpenaiFormat)),
        ProviderKind::Anthropic => http(Box::new(AnthropicFormat)),
    }
}
