//! Model providers: one trait, several wire formats.
//!
//! Only this module speaks HTTP. The session worker never sees a provider:
//! it sends provider-neutral [`ChatRequest`]s to the orchestrator, which
//! answers with [`ChatResponse`]s from the provider chosen by [`ModelSpec`].

mod provider;
mod scripted;
mod spec;
mod types;

pub use provider::{open_provider, ModelError, Provider, RequestContext};
pub use scripted::{ScriptedModel, ScriptedProvider};
pub use spec::{ModelSpec, ProviderKind};
pub use types::{ChatRequest, ChatResponse, Message, ToolCall, ToolSpec, Usage};
