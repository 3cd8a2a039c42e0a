//! The provider trait and how a [`ModelSpec`] becomes a provider.

use std::sync::Arc;

use async_trait::async_trait;

use super::anthropic::AnthropicFormat;
use super::http::HttpProvider;
use super::openai::OpenaiFormat;
use super::retry::RetrySink;
use super::settings::ProviderSettings;
use super::{ChatRequest, ChatResponse, ModelSpec, ProviderKind, ScriptedProvider};
use crate::config::ModelSection;

/// Who is asking: the orchestrator's session number and the request's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestContext {
    pub session: u32,
    /// 0 for the first request of the session.
    pub request_index: u32,
}

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The provider refused the credentials: the run must stop.
    #[error("the provider refused the credentials: {0}")]
    Auth(String),
    /// The prompt is over the model's context window.
    #[error("context length exceeded: {0}")]
    ContextLength(String),
    /// The provider stayed unreachable, overloaded or rate limited through
    /// the retries, or asked for a wait longer than a session waits: the run
    /// pauses until it answers again. `wait` is the reset the provider named.
    #[error("the provider is unavailable: {message}")]
    Unavailable {
        message: String,
        wait: Option<std::time::Duration>,
    },
    /// Anything else, after retries where they apply.
    #[error("{0}")]
    Failed(String),
}

impl ModelError {
    /// True when no later session can succeed either, so the run stops.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ModelError::Auth(_))
    }

    /// The kind, as the worker is told it.
    pub fn kind(&self) -> ModelErrorKind {
        match self {
            ModelError::Auth(_) => ModelErrorKind::Auth,
            ModelError::ContextLength(_) => ModelErrorKind::ContextLength,
            ModelError::Unavailable { .. } => ModelErrorKind::Unavailable,
            ModelError::Failed(_) => ModelErrorKind::Failed,
        }
    }
}

/// [`ModelError`]'s variant without its message, for the broker and the transcript.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelErrorKind {
    Auth,
    /// The worker may compact its context and ask again.
    ContextLength,
    /// The run pauses until the provider answers again; the session ends.
    Unavailable,
    #[default]
    Failed,
}

/// A model provider. Implementations live beside this file, one per wire format.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The model string recorded in trailers, e.g. `openai:gpt-4o`.
    fn describe(&self) -> String;
    /// Answer `request`, telling `retries` of every failed try as it happens.
    async fn complete(
        &self,
        ctx: RequestContext,
        request: &ChatRequest,
        retries: &RetrySink,
    ) -> Result<ChatResponse, ModelError>;

    /// While the run is paused: one try, without retries, of the smallest
    /// request, to learn whether the provider answers again.
    async fn probe(&self) -> Result<(), ModelError> {
        Ok(())
    }
}

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
