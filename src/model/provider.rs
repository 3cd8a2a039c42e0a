//! The provider trait: what every wire format answers.

use async_trait::async_trait;

use super::error::ModelError;
use super::retry::RetrySink;
use super::{ChatRequest, ChatResponse};

/// Who is asking: the orchestrator's session number and the request's index in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestContext {
    pub session: u32,
    /// 0 for the first request of the session.
    pub request_index: u32,
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
