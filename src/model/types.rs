//! Provider-neutral request and response types.
//!
//! These cross the broker socket as JSON, so they are plain serde data.

use serde::{Deserialize, Serialize};

/// A tool the model may call: its name, what it does and its JSON schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments object.
    pub parameters: serde_json::Value,
}

/// One tool call in a model response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id; every tool result answers one call by this id.
    pub id: String,
    pub name: String,
    /// The arguments exactly as the model sent them: a JSON string that may be malformed.
    pub arguments: String,
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    User {
        content: String,
    },
    Assistant {
        #[serde(default)]
        text: String,
        #[serde(default)]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering `call_id`.
    Tool {
        call_id: String,
        name: String,
        content: String,
        #[serde(default)]
        is_error: bool,
    },
}

/// What the worker asks the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// This request's sampling temperature, in place of the configured one
    /// (a whole-file session's later attempts: `[harness] retry_temperature`).
    /// The orchestrator keeps it within what the provider takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Where the model's answer ends, besides its own end: a whole-file
    /// attempt stops at `[harness]`, where a small model sampled hot starts
    /// writing out the harness's message again instead of code. The
    /// orchestrator sends at most [`MAX_STOPS`] of them ([`Self::stops`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// This request's output cap, below the configured one: a guided
    /// initializer's test request, where a small model otherwise writes
    /// test after test until the configured cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
}

/// The most stop sequences a request carries: OpenAI's chat API takes four.
pub const MAX_STOPS: usize = 4;

/// The longest stop sequence sent, in bytes.
const MAX_STOP_BYTES: usize = 64;

impl ChatRequest {
    /// The output cap to send: the smaller of the request's and the configured one.
    pub fn max_output_tokens(&self, configured: Option<u32>) -> Option<u32> {
        match (self.max_output_tokens, configured) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The temperature to send: the request's own, kept within `0..=max`
    /// (ignored when it is not a number), else the configured one.
    pub fn temperature(&self, configured: Option<f64>, max: f64) -> Option<f64> {
        self.temperature
            .filter(|t| t.is_finite())
            .map(|t| t.clamp(0.0, max))
            .or(configured)
    }

    /// The stop sequences to send: the request's own that a provider takes
    /// (not blank, at most [`MAX_STOP_BYTES`] bytes), at most [`MAX_STOPS`].
    pub fn stops(&self) -> Vec<&str> {
        self.stop
            .iter()
            .map(String::as_str)
            .filter(|s| !s.trim().is_empty() && s.len() <= MAX_STOP_BYTES)
            .take(MAX_STOPS)
            .collect()
    }
}

/// Token counts of one request, as the provider reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Input tokens served from the provider's prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cached_tokens += other.cached_tokens;
    }
}

/// What the model answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub usage: Usage,
    /// Cost of this request in US dollars, when the price is known.
    #[serde(default)]
    pub cost_usd: f64,
    /// Why the answer was stopped before its end, when it was: it ran away
    /// repeating itself ([`super::runaway`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_temperature_stays_within_the_provider_range_and_falls_back_to_the_configured_one()
    {
        let mut request = ChatRequest {
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: None,
        };
        assert_eq!(request.temperature(Some(0.2), 2.0), Some(0.2));
        assert_eq!(request.temperature(None, 2.0), None);
        request.temperature = Some(0.8);
        assert_eq!(request.temperature(Some(0.2), 2.0), Some(0.8));
        request.temperature = Some(7.0);
        assert_eq!(request.temperature(None, 1.0), Some(1.0));
        request.temperature = Some(-1.0);
        assert_eq!(request.temperature(None, 2.0), Some(0.0));
        request.temperature = Some(f64::NAN);
        assert_eq!(request.temperature(Some(0.2), 2.0), Some(0.2));
    }
}
