//! The OpenAI Chat Completions wire format (`POST {base}/chat/completions`),
//! as OpenAI, OpenRouter, vLLM, llama.cpp's server, LM Studio and Ollama speak it.

use std::collections::BTreeMap;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, Reply, StreamAssembler, WireFormat};
use super::price::Tokens;
use super::retry::Fault;
use super::settings::{ApiKey, ProviderSettings, OPENAI_BASE};
use super::{ChatRequest, Message, ToolCall};

pub struct OpenaiFormat;

impl WireFormat for OpenaiFormat {
    fn endpoint(&self, base_url: &str) -> String {
        format!("{base_url}/chat/completions")
    }

    fn headers(&self, key: Option<&ApiKey>) -> Vec<(&'static str, String)> {
        key.map(|k| ("authorization", format!("Bearer {}", k.expose())))
            .into_iter()
            .collect()
    }

    fn body(
        &self,
        model: &str,
        settings: &ProviderSettings,
        request: &ChatRequest,
        stream: bool,
    ) -> Value {
        let mut body = json!({
            "model": model,
            "messages": messages(request),
            "stream": stream,
        });
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
        }
        if stream {
            body["stream_options"] = json!({"include_usage": true});
        }
        if let Some(max) = request.max_output_tokens(settings.max_output_tokens) {
            // OpenAI's own API wants the newer name; compatible servers know the older one.
            let field = if settings.base_url == OPENAI_BASE {
                "max_completion_tokens"
            } else {
                "max_tokens"
            };
            body[field] = json!(max);
        }
        if let Some(t) = request.temperature(settings.temperature, 2.0) {
            body["temperature"] = json!(t);
        }
        let stops = request.stops();
        if !stops.is_empty() {
            body["stop"] = json!(stops);
        }
        body
    }

    fn parse(&self, body: &[u8]) -> Result<Reply, Fault> {
        let answer: Completion = http::json(body, "the answer")?;
        if let Some(e) = answer.error {
            return Err(Fault::transient(format!(
                "the provider answered with an error: {}",
                e.message()
            )));
        }
        let choice = answer
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| Fault::transient("the answer has no choices"))?;
        let message = choice.message.unwrap_or_default();
        let tool_calls = message
            .tool_calls
            .into_iter()
            .map(|c| ToolCall {
                id: c.id.unwrap_or_default(),
                name: c.function.name.unwrap_or_default(),
                arguments: c.function.arguments.map(arguments_text).unwrap_or_default(),
            })
            .collect();
        Ok(Reply {
            text: message.content.unwrap_or_default(),
            tool_calls,
            tokens: answer.usage.map(UsageBody::tokens).unwrap_or_default(),
            cut: None,
        })
    }

    fn assembler(&self) -> Box<dyn StreamAssembler> {
        Box::new(Assembler::default())
    }
}

/// The conversation as Chat Completions messages: system first, then every
/// turn in order; each tool result answers its call by `tool_call_id`.
fn messages(request: &ChatRequest) -> Vec<Value> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for m in &request.messages {
        out.push(match m {
            Message::User { content } => json!({"role": "user", "content": content}),
            Message::Assistant { text, tool_calls } if tool_calls.is_empty() => {
                json!({"role": "assistant", "content": text})
            }
            Message::Assistant { text, tool_calls } => json!({
                "role": "assistant",
                "content": if text.is_empty() { Value::Null } else { json!(text) },
                "tool_calls": tool_calls.iter().map(|c| json!({
                    "id": c.id, "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments}})).collect::<Vec<_>>(),
            }),
            Message::Tool {
                call_id, content, ..
            } => json!({"role": "tool", "tool_call_id": call_id, "content": content}),
        });
    }
    out
}

/// Arguments are a JSON string on the wire; a few servers send an object instead.
fn arguments_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

#[derive(Debug, Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<UsageBody>,
    error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    message: Option<MessageBody>,
}

#[derive(Debug, Default, Deserialize)]
struct MessageBody {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallBody>,
}

#[derive(Debug, Deserialize)]
struct CallBody {
    #[serde(default)]
    index: Option<u64>,
    id: Option<String>,
    #[serde(default)]
    function: FunctionBody,
}

#[derive(Debug, Default, Deserialize)]
struct FunctionBody {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ErrorBody {
    Object { message: Option<String> },
    Text(String),
}

impl ErrorBody {
    fn message(&self) -> String {
        match self {
            ErrorBody::Object { message } => {
                message.clone().unwrap_or_else(|| "(no message)".into())
            }
            ErrorBody::Text(t) => t.clone(),
        }
    }
}

#[derive(Debug, Deserialize)]
struct UsageBody {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

impl UsageBody {
    fn tokens(self) -> Tokens {
        Tokens {
            input: self.prompt_tokens,
            output: self.completion_tokens,
            cached: self
                .prompt_tokens_details
                .map(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write: 0,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
    usage: Option<UsageBody>,
    error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct Delta {
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallBody>,
}

/// Assembles streamed deltas: text pieces, and tool calls whose names and
/// argument strings arrive in fragments keyed by their index.
#[derive(Default)]
struct Assembler {
    text: String,
    calls: BTreeMap<u64, ToolCall>,
    tokens: Tokens,
    finished: bool,
}

impl Assembler {
    fn delta(&mut self, position: usize, call: CallBody) {
        let key = call.index.unwrap_or(position as u64);
        let entry = self.calls.entry(key).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = call.id.filter(|id| !id.is_empty()) {
            entry.id = id;
        }
        if let Some(name) = call.function.name {
            entry.name.push_str(&name);
        }
        if let Some(args) = call.function.arguments {
            entry.arguments.push_str(&arguments_text(args));
        }
    }
}

impl StreamAssembler for Assembler {
    fn event(&mut self, event: &Event) -> Result<bool, Fault> {
        let data = event.data.trim();
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = http::json(data.as_bytes(), "a stream chunk")?;
        if let Some(e) = chunk.error {
            return Err(Fault::transient(format!(
                "the stream carried an error: {}",
                e.message()
            )));
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content {
                self.text.push_str(&text);
            }
            for (i, call) in choice.delta.tool_calls.into_iter().enumerate() {
                self.delta(i, call);
            }
            self.finished |= choice.finish_reason.is_some();
        }
        if let Some(usage) = chunk.usage {
            self.tokens = usage.tokens();
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, ended: bool) -> Result<Reply, Fault> {
        if !ended && !self.finished {
            let inside = if self.calls.is_empty() {
                ""
            } else {
                " inside a tool call"
            };
            return Err(Fault::transient(format!(
                "the stream was cut before its end{inside}"
            )));
        }
        Ok(Reply {
            text: self.text,
            tool_calls: self.calls.into_values().collect(),
            tokens: self.tokens,
            cut: None,
        })
    }

    fn writing(&self) -> &str {
        match self.calls.values().next_back() {
            Some(call) => &call.arguments,
            None => &self.text,
        }
    }

    fn cut(self: Box<Self>, keep: usize) -> Reply {
        let mut text = self.text;
        if self.calls.is_empty() {
            text.truncate(keep);
        }
        Reply {
            text,
            tool_calls: self
                .calls
                .into_values()
                .filter(|c| whole_json(&c.arguments))
                .collect(),
            tokens: self.tokens,
            cut: None,
        }
    }
}

/// Arguments a call may run with: whole JSON, not a piece of it.
fn whole_json(arguments: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(arguments).is_ok()
}

#[cfg(test)]
mod tests {
    use eventsource_stream::Eventsource;
    use futures_util::StreamExt;

    use super::*;

    /// Run `sse` through the real SSE parser in pieces cut at `cuts`.
    async fn assemble(sse: &str, cuts: &[usize]) -> Result<Reply, Fault> {
        let bytes = sse.as_bytes();
        let mut pieces = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain([bytes.len()].iter()) {
            pieces.push(Ok::<_, std::io::Error>(bytes[start..cut].to_vec()));
            start = cut;
        }
        let mut events = futures_util::stream::iter(pieces).eventsource();
        let mut asm: Box<dyn StreamAssembler> = Box::new(Assembler::default());
        while let Some(ev) = events.next().await {
            if asm.event(&ev.unwrap())? {
                return asm.finish(true);
            }
        }
        asm.finish(false)
    }

    /// A runaway inside a call's arguments: reading stops there, the text
    /// stays, the whole call before it stays, the cut one goes.
    #[tokio::test]
    async fn a_cut_answer_keeps_its_text_and_whole_calls_and_drops_the_cut_call() {
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"content": "Writing both."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1",
                "function": {"name": "write_file", "arguments": "{\"path\": \"a\", \"content\": \"x\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "c2",
                "function": {"name": "write_file", "arguments": "{\"path\": \"b\", \"content\": \"if n == 1"}}]}}]}),
        ];
        let text = sse(&chunks, false);
        let mut events =
            futures_util::stream::iter([Ok::<_, std::io::Error>(text.into_bytes())]).eventsource();
        let mut asm: Box<dyn StreamAssembler> = Box::new(Assembler::default());
        while let Some(ev) = events.next().await {
            assert!(!asm.event(&ev.unwrap()).unwrap());
        }
        assert_eq!(asm.writing(), "{\"path\": \"b\", \"content\": \"if n == 1");
        let reply = asm.cut(4);
        assert_eq!(reply.text, "Writing both.");
        assert_eq!(reply.tool_calls.len(), 1, "{reply:?}");
        assert_eq!(reply.tool_calls[0].id, "c1");
    }

    fn sse(chunks: &[Value], done: bool) -> String {
        let mut s: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        if done {
            s.push_str("data: [DONE]\n\n");
        }
        s
    }

    fn tool_stream() -> String {
        sse(
            &[
                json!({"choices":[{"delta":{"content":"héllo "}}]}),
                json!({"choices":[{"delta":{"content":"wörld ✓"}}]}),
                json!({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"write_file","arguments":"{\"path\": \"ü"}}]}}]}),
                json!({"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":".txt\", \"content\": \"x\"}"}}]}}]}),
                json!({"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}}]}),
                json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
                json!({"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":20,"prompt_tokens_details":{"cached_tokens":60}}}),
            ],
            true,
        )
    }

    #[tokio::test]
    async fn deltas_assemble_whatever_the_byte_boundaries() {
        let stream = tool_stream();
        let whole = assemble(&stream, &[]).await.unwrap();
        assert_eq!(whole.text, "héllo wörld ✓");
        assert_eq!(whole.tool_calls.len(), 2);
        assert_eq!(
            whole.tool_calls[0].arguments,
            r#"{"path": "ü.txt", "content": "x"}"#
        );
        assert_eq!(
            (
                whole.tool_calls[1].id.as_str(),
                whole.tool_calls[1].name.as_str()
            ),
            ("call_b", "bash")
        );
        assert_eq!(
            whole.tokens,
            Tokens {
                input: 100,
                output: 20,
                cached: 60,
                cache_write: 0
            }
        );
        // Every single cut point, including inside multi-byte characters.
        for cut in 1..stream.len() {
            let got = assemble(&stream, &[cut]).await.unwrap();
            assert_eq!(got, whole, "cut at byte {cut}");
        }
    }

    #[tokio::test]
    async fn a_stream_cut_inside_a_tool_call_is_a_transient_fault() {
        let stream = tool_stream();
        let cut = stream.find(".txt").unwrap();
        let partial = &stream[..stream[..cut].rfind("data:").unwrap()];
        match assemble(partial, &[]).await {
            Err(Fault::Transient { reason, .. }) => {
                assert!(reason.contains("inside a tool call"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn request_has_tools_roles_and_call_ids() {
        let request = ChatRequest {
            system: "sys".into(),
            messages: vec![
                Message::User {
                    content: "do it".into(),
                },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "bash".into(),
                        arguments: "{}".into(),
                    }],
                },
                Message::Tool {
                    call_id: "c1".into(),
                    name: "bash".into(),
                    content: "ok".into(),
                    is_error: false,
                },
            ],
            tools: vec![super::super::ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: None,
        };
        let body = messages(&request);
        let roles: Vec<&str> = body.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "tool"]);
        assert_eq!(body[2]["content"], Value::Null);
        assert_eq!(body[2]["tool_calls"][0]["id"], "c1");
        assert_eq!(body[3]["tool_call_id"], "c1");
    }
}
