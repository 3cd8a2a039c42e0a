//! The HTTP side that every real provider shares: one request with its
//! timeouts, streaming (SSE) or whole, the retry loop around it, and turning
//! what came back into a [`ChatResponse`] with usage and cost.
//!
//! What goes on the wire is the [`WireFormat`]'s business (openai.rs,
//! anthropic.rs); this file knows nothing of either format.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use eventsource_stream::{Event, Eventsource};
use futures_util::StreamExt;
use reqwest::StatusCode;

use super::price::{self, Price, Tokens};
use super::retry::{self, Fault, RetryNote, RetrySink};
use super::settings::{ApiKey, ProviderSettings};
use super::{
    ChatRequest, ChatResponse, ModelError, ModelSpec, Provider, RequestContext, ToolCall, Usage,
};

/// What one answer said, before usage and cost are worked out.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub tokens: Tokens,
    /// Why reading stopped before the answer's end ([`super::runaway`]).
    pub cut: Option<String>,
}

/// One wire format: how a request is written and an answer read.
pub trait WireFormat: Send + Sync {
    fn endpoint(&self, base_url: &str) -> String;
    fn headers(&self, key: Option<&ApiKey>) -> Vec<(&'static str, String)>;
    fn body(
        &self,
        model: &str,
        settings: &ProviderSettings,
        request: &ChatRequest,
        stream: bool,
    ) -> serde_json::Value;
    /// A whole (non-streaming) answer.
    fn parse(&self, body: &[u8]) -> Result<Reply, Fault>;
    /// A fresh assembler for one streamed answer.
    fn assembler(&self) -> Box<dyn StreamAssembler>;
    /// The provider's own words from an error body (both formats use
    /// `{"error": {"message"}}`; a format with another shape overrides this).
    fn error_message(&self, body: &str) -> String {
        error_message(body)
    }
}

/// Builds a [`Reply`] from a stream of server-sent events.
pub trait StreamAssembler: Send {
    /// Take one event; `Ok(true)` once the stream's end marker arrived.
    fn event(&mut self, event: &Event) -> Result<bool, Fault>;
    /// The reply, or a transient fault when the stream was cut before its end.
    fn finish(self: Box<Self>, ended: bool) -> Result<Reply, Fault>;
    /// What the answer is writing now: its text, or the arguments of the
    /// call it is writing.
    fn writing(&self) -> &str;
    /// The answer as far as it came, when reading stops early on purpose:
    /// what it was writing kept to its first `keep` bytes, and a call whose
    /// arguments are not whole JSON left out.
    fn cut(self: Box<Self>, keep: usize) -> Reply;
}

/// A model behind HTTP: a wire format plus the settings to reach it.
pub struct HttpProvider {
    spec: ModelSpec,
    settings: ProviderSettings,
    format: Box<dyn WireFormat>,
    client: reqwest::Client,
    price: Option<Price>,
    /// Cleared for good once the server refuses a streaming request.
    streaming: AtomicBool,
}

impl HttpProvider {
    pub fn new(
        spec: &ModelSpec,
        settings: ProviderSettings,
        format: Box<dyn WireFormat>,
    ) -> anyhow::Result<HttpProvider> {
        let client = reqwest::Client::builder()
            .connect_timeout(settings.timeouts.connect)
            .user_agent(concat!("longrun/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let price = price::resolve(&spec.name, &settings.prices);
        if price.is_none() {
            tracing::info!(
                "no price known for {}: its cost counts as 0; set price_in_per_mtok and price_out_per_mtok under [model]",
                spec.display()
            );
        }
        Ok(HttpProvider {
            spec: spec.clone(),
            settings,
            format,
            client,
            price,
            streaming: AtomicBool::new(true),
        })
    }

    /// One try, start to end.
    async fn try_once(&self, request: &ChatRequest, stream: bool) -> Result<Reply, Fault> {
        let body = self
            .format
            .body(&self.spec.name, &self.settings, request, stream);
        let mut builder = self
            .client
            .post(self.format.endpoint(&self.settings.base_url))
            .json(&body);
        for (name, value) in self.format.headers(self.settings.key.as_ref()) {
            builder = builder.header(name, value);
        }
        let timeouts = self.settings.timeouts;
        let response = match tokio::time::timeout(timeouts.first_byte, builder.send()).await {
            Err(_) => {
                return Err(Fault::transient(format!(
                    "no answer within {} s",
                    secs(timeouts.first_byte)
                )))
            }
            Ok(Err(e)) => return Err(Fault::transient(transport(&e))),
            Ok(Ok(r)) => r,
        };
        let status = response.status();
        if !status.is_success() {
            let after = retry::server_wait(response.headers());
            let body = read_all(response, timeouts.idle).await.unwrap_or_default();
            return Err(self.status_fault(status, &String::from_utf8_lossy(&body), after, stream));
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.contains("text/event-stream"));
        if stream && is_sse {
            let mut reply = read_stream(response, self.format.assembler(), timeouts.idle).await?;
            if reply.cut.is_some() && reply.tokens.input == 0 {
                reply.tokens.input = (body.to_string().len() / 4) as u64;
            }
            Ok(reply)
        } else {
            // A server that ignores `stream` answers whole; that is fine too.
            self.format.parse(&read_all(response, timeouts.idle).await?)
        }
    }

    fn status_fault(
        &self,
        status: StatusCode,
        body: &str,
        after: Option<Duration>,
        stream: bool,
    ) -> Fault {
        let message = format!("{status}: {}", self.format.error_message(body));
        if is_context_length(&message) {
            return Fault::Final(ModelError::ContextLength(message));
        }
        match status.as_u16() {
            401 | 403 => Fault::Final(ModelError::Auth(format!(
                "{message}; check the key in {}",
                self.settings.key_source
            ))),
            400 | 422 | 501 if stream && mentions_streaming(&message) => Fault::StreamRefused,
            _ if retry::is_retried(status) => Fault::Transient {
                reason: message,
                after,
            },
            _ => Fault::Final(ModelError::Failed(message)),
        }
    }

    /// Log the retry and tell `retries` of it now; returns how long to wait.
    fn log_retry(
        &self,
        ctx: RequestContext,
        retries: &RetrySink,
        attempt: u32,
        reason: String,
        asked: Option<Duration>,
    ) -> Duration {
        let policy = &self.settings.retry;
        let wait = retry::wait(policy, attempt, asked);
        tracing::warn!(
            target: retry::RETRY_TARGET,
            session = ctx.session,
            request = ctx.request_index,
            "model request failed (try {attempt} of {}): {reason}; retrying in {:.1} s",
            policy.max_tries,
            wait.as_secs_f64()
        );
        retries.tell(RetryNote {
            attempt,
            reason,
            wait_ms: wait.as_millis() as u64,
        });
        wait
    }

    fn response(&self, ctx: RequestContext, reply: Reply) -> ChatResponse {
        let tool_calls = reply
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, mut call)| {
                // Some local servers send no id; every result must answer one.
                if call.id.is_empty() {
                    call.id = format!("call_{}_{}_{i}", ctx.session, ctx.request_index);
                }
                call
            })
            .collect();
        ChatResponse {
            text: reply.text,
            tool_calls,
            usage: Usage {
                input_tokens: reply.tokens.input,
                output_tokens: reply.tokens.output,
                cached_tokens: reply.tokens.cached,
            },
            cost_usd: self
                .price
                .map(|p| price::cost(&p, &reply.tokens))
                .unwrap_or(0.0),
            cut: reply.cut,
        }
    }
}

#[async_trait]
impl Provider for HttpProvider {
    fn describe(&self) -> String {
        self.spec.display()
    }

    async fn complete(
        &self,
        ctx: RequestContext,
        request: &ChatRequest,
        retries: &RetrySink,
    ) -> Result<ChatResponse, ModelError> {
        let policy = self.settings.retry;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let stream = self.streaming.load(Ordering::Relaxed);
            let fault = match self.try_once(request, stream).await {
                Ok(reply) => return Ok(self.response(ctx, reply)),
                Err(fault) => fault,
            };
            let (reason, asked) = match fault {
                Fault::Final(e) => return Err(e),
                Fault::StreamRefused => {
                    tracing::warn!(
                        "{} refused a streaming request: asking without streaming from now on",
                        self.spec.display()
                    );
                    self.streaming.store(false, Ordering::Relaxed);
                    attempt -= 1;
                    continue;
                }
                Fault::Transient { reason, after } => (reason, after),
            };
            if asked.is_some_and(|w| w > retry::LONGEST_WAIT) {
                // A usage limit that resets in hours: the run waits, not the session.
                return Err(ModelError::Unavailable {
                    message: reason,
                    wait: asked,
                });
            }
            if attempt >= policy.max_tries {
                return Err(ModelError::Unavailable {
                    message: format!("{reason} (gave up after {attempt} tries)"),
                    wait: asked,
                });
            }
            let wait = self.log_retry(ctx, retries, attempt, reason, asked);
            tokio::time::sleep(wait).await;
        }
    }

    async fn probe(&self) -> Result<(), ModelError> {
        let request = ChatRequest {
            system: String::new(),
            messages: vec![super::Message::User {
                content: "Reply with the word ok.".into(),
            }],
            tools: Vec::new(),
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: None,
        };
        let stream = self.streaming.load(Ordering::Relaxed);
        match self.try_once(&request, stream).await {
            Ok(_) => Ok(()),
            Err(Fault::Final(e)) => Err(e),
            // The server answered: it is reachable, and streaming is its own matter.
            Err(Fault::StreamRefused) => Ok(()),
            Err(Fault::Transient { reason, after }) => Err(ModelError::Unavailable {
                message: reason,
                wait: after,
            }),
        }
    }
}

/// Providers word it differently; these cover OpenAI, Anthropic, OpenRouter, vLLM and llama.cpp.
fn is_context_length(message: &str) -> bool {
    let m = message.to_lowercase();
    [
        "context length",
        "context_length",
        "maximum context",
        "context window",
        "context size",
        "exceed_context",
        "prompt is too long",
        "too many tokens",
    ]
    .iter()
    .any(|needle| m.contains(needle))
}

/// "stream" or "streaming" as a word ("upstream" does not count).
fn mentions_streaming(message: &str) -> bool {
    message
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .any(|w| w == "stream" || w == "streaming")
}

/// How many more bytes of an answer arrive between two looks for a runaway.
const RUNAWAY_EVERY: usize = 256;

fn secs(d: Duration) -> String {
    format!("{}", d.as_secs_f64())
}

/// A transport error with its causes, which reqwest keeps apart.
fn transport(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// The whole body, with no more than `idle` between two chunks.
async fn read_all(response: reqwest::Response, idle: Duration) -> Result<Vec<u8>, Fault> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    loop {
        match tokio::time::timeout(idle, chunks.next()).await {
            Err(_) => {
                return Err(Fault::transient(format!(
                    "the answer stalled for {} s",
                    secs(idle)
                )))
            }
            Ok(None) => return Ok(body),
            Ok(Some(Err(e))) => {
                return Err(Fault::transient(format!(
                    "the connection broke mid-answer: {}",
                    transport(&e)
                )))
            }
            Ok(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
        }
    }
}

/// Feed the server-sent events to `assembler` until the end marker or the
/// end of the body, or until the answer runs away repeating itself: then
/// the connection is dropped (the server stops generating) and the answer
/// so far comes back marked as cut.
async fn read_stream(
    response: reqwest::Response,
    mut assembler: Box<dyn StreamAssembler>,
    idle: Duration,
) -> Result<Reply, Fault> {
    let mut events = response.bytes_stream().eventsource();
    let mut looked_at = 0;
    loop {
        let writing = assembler.writing();
        if writing.len() < looked_at {
            looked_at = 0;
        }
        if writing.len() >= looked_at + RUNAWAY_EVERY {
            looked_at = writing.len();
            if let Some(found) = super::runaway::repeating(writing) {
                let produced = writing.len();
                let mut reply = assembler.cut(found.keep);
                reply.cut = Some(found.why);
                // No final usage comes with an answer stopped early: about
                // four bytes a token.
                reply.tokens.output = reply.tokens.output.max((produced / 4) as u64);
                return Ok(reply);
            }
        }
        match tokio::time::timeout(idle, events.next()).await {
            Err(_) => {
                return Err(Fault::transient(format!(
                    "the stream was silent for {} s",
                    secs(idle)
                )))
            }
            Ok(None) => return assembler.finish(false),
            Ok(Some(Err(e))) => return Err(cut_short(assembler, &e.to_string())),
            Ok(Some(Ok(event))) => {
                if assembler.event(&event)? {
                    return assembler.finish(true);
                }
            }
        }
    }
}

/// A stream that broke off: what the assembler makes of its end, and why.
fn cut_short(assembler: Box<dyn StreamAssembler>, cause: &str) -> Fault {
    match assembler.finish(false) {
        Err(Fault::Transient { reason, .. }) => Fault::transient(format!("{reason}: {cause}")),
        _ => Fault::transient(format!("the stream broke: {cause}")),
    }
}

/// Parse JSON from a body or an event; malformed JSON is worth another try.
pub fn json<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, Fault> {
    serde_json::from_slice(bytes).map_err(|e| {
        let start = String::from_utf8_lossy(&bytes[..bytes.len().min(120)]).into_owned();
        Fault::transient(format!("{what} is not valid JSON ({e}): {start}"))
    })
}

/// The `error.message` of a JSON error body, else the start of the body.
pub fn error_message(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|v| {
        let e = v.get("error")?;
        e.get("message")
            .and_then(|m| m.as_str())
            .or_else(|| e.as_str())
            .map(str::to_string)
    });
    message.unwrap_or_else(|| {
        let t = body.trim();
        if t.is_empty() {
            "(empty body)".into()
        } else {
            t.chars().take(300).collect()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_length_errors_are_told_apart() {
        for m in [
            "This model's maximum context length is 128000 tokens",
            "prompt is too long: 210000 tokens > 200000 maximum",
            "the request exceeds the available context size, try increasing it",
        ] {
            assert!(is_context_length(m), "{m}");
        }
        assert!(!is_context_length("invalid tool schema"));
    }

    #[test]
    fn only_a_word_about_streaming_turns_streaming_off() {
        assert!(mentions_streaming("400: 'stream' is not supported"));
        assert!(mentions_streaming(
            "Streaming is unavailable for this model"
        ));
        assert!(!mentions_streaming("400: upstream rejected the request"));
    }

    #[test]
    fn error_message_reads_both_error_shapes() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad key","type":"x"}}"#),
            "bad key"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message("<html>gateway</html>"),
            "<html>gateway</html>"
        );
    }
}
