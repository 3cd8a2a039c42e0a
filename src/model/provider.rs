//! The provider trait and how a [`ModelSpec`] becomes a provider.

use std::sync::Arc;

use async_trait::async_trait;

use super::{ChatRequest, ChatResponse, ModelSpec, ProviderKind, ScriptedProvider};

/// Who is asking: the orchestrator's session number and the request's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestContext {
    pub session: u32,
    /// 0 for the first request of the session.
    pub request_index: u32,
}

/// Why a model call failed.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The provider refused the credentials: the run must stop.
    #[error("the provider refused the credentials: {0}")]
    Auth(String),
    /// The prompt is over the model's context window.
    #[error("context length exceeded: {0}")]
    ContextLength(String),
    /// Anything else, after retries where they apply.
    #[error("{0}")]
    Failed(String),
}

impl ModelError {
    /// True when no later session can succeed either, so the run stops.
    pub fn is_fatal(&self) -> bool {
        matches!(self, ModelError::Auth(_))
    }
}

/// A model provider. Implementations live beside this file, one per wire format.
#[async_trait]
pub trait Provider: Send + Sync {
    /// The model string recorded in trailers, e.g. `openai:gpt-4o`.
    fn describe(&self) -> String;
    async fn complete(
        &self,
        ctx: RequestContext,
        request: &ChatRequest,
    ) -> Result<ChatResponse, ModelError>;
}

/// Open the provider a spec names. Reads the key from the environment when the
/// provider needs one; the key stays inside the returned value.
pub fn open_provider(spec: &ModelSpec) -> anyhow::Result<Arc<dyn Provider>> {
    match spec.kind {
        ProviderKind::Scripted => Ok(Arc::new(ScriptedProvider::load(spec)?)),
    }
}
