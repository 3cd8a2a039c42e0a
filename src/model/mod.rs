//! Model providers: one trait, several wire formats.
//!
//! Only this module speaks HTTP (http.rs), one file per wire format
//! (openai.rs, anthropic.rs), with retries (retry.rs), settings and the key
//! (settings.rs) and prices (price.rs) beside them. The session worker never sees a provider:
//! it sends provider-neutral [`ChatRequest`]s to the orchestrator, which
//! answers with [`ChatResponse`]s from the provider chosen by [`ModelSpec`].

mod anthropic;
mod error;
pub mod family;
mod http;
mod open;
mod openai;
mod price;
mod provider;
mod retry;
pub mod runaway;
mod scripted;
mod settings;
mod spec;
mod types;

pub use error::{ModelError, ModelErrorKind};
pub use open::open_provider;
pub use provider::{Provider, RequestContext};
pub use retry::{RetryNote, RetrySink, RETRY_TARGET};
pub use scripted::{ScriptedModel, ScriptedProvider};
pub use settings::{API_KEY_ENV, BASE_URL_ENV};
pub use spec::{ModelSpec, ProviderKind};
pub use types::{ChatRequest, ChatResponse, Message, ToolCall, ToolSpec, Usage};
