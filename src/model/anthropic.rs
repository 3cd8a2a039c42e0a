//! The Anthropic Messages wire format (`POST {base}/v1/messages`): content
//! blocks, tool_use / tool_result, and `cache_control` breakpoints on the
//! stable prefix so that prompt caching works across a session's requests.

use std::collections::BTreeMap;

use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{json, Value};

use super::http::{self, Reply, StreamAssembler, WireFormat};
use super::price::Tokens;
use super::retry::Fault;
use super::settings::{ApiKey, ProviderSettings};
use super::{ChatRequest, Message, ModelError, ToolCall};

pub const API_VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; every current model allows this many.
const DEFAULT_MAX_TOKENS: u32 = 8192;

pub struct AnthropicFormat;

impl WireFormat for AnthropicFormat {
    fn endpoint(&self, base_url: &str) -> String {
        match base_url.strip_suffix("/v1") {
            Some(root) => format!("{root}/v1/messages"),
            None => format!("{base_url}/v1/messages"),
        }
    }

    fn headers(&self, key: Option<&ApiKey>) -> Vec<(&'static str, String)> {
        let mut h = vec![("anthropic-version", API_VERSION.to_string())];
        h.extend(key.map(|k| ("x-api-key", k.expose().to_string())));
        h
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
            "max_tokens": request.max_output_tokens(settings.max_output_tokens).unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": turns(&request.messages),
            "stream": stream,
        });
        if !request.system.is_empty() {
            body["system"] =
                json!([{"type": "text", "text": request.system, "cache_control": ephemeral()}]);
        }
        if !request.tools.is_empty() {
            let mut tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = ephemeral();
            }
            body["tools"] = json!(tools);
        }
        if let Some(t) = request.temperature(settings.temperature, 1.0) {
            body["temperature"] = json!(t);
        }
        let stops = request.stops();
        if !stops.is_empty() {
            body["stop_sequences"] = json!(stops);
        }
        body
    }

    fn parse(&self, body: &[u8]) -> Result<Reply, Fault> {
        let answer: MessageBody = http::json(body, "the answer")?;
        if let Some(e) = answer.error {
            return Err(e.fault());
        }
        let mut text = String::new();
        let mut tool_calls = Vec::new();
        for block in answer.content {
            match block {
                Block::Text { text: t } => text.push_str(&t),
                Block::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                    id,
                    name,
                    arguments: input.to_string(),
                }),
                Block::Other => {}
            }
        }
        Ok(Reply {
            text,
            tool_calls,
            tokens: answer.usage.map(UsageBody::tokens).unwrap_or_default(),
            cut: None,
        })
    }

    fn assembler(&self) -> Box<dyn StreamAssembler> {
        Box::new(Assembler::default())
    }
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// The conversation as alternating user / assistant turns. Tool results and
/// any harness message after them join one user turn, tool results first.
/// The last two user turns get cache breakpoints: the one this request adds
/// is read back by the next request, the one before is read back now.
fn turns(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for m in messages {
        let (role, blocks) = match m {
            Message::User { content } => ("user", vec![text_block(content)]),
            Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id,
                            "content": non_empty(content, "(no output)"), "is_error": is_error})],
            ),
            Message::Assistant { text, tool_calls } => {
                ("assistant", assistant_blocks(text, tool_calls))
            }
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    for (_, blocks) in &mut turns {
        // Anthropic wants tool results before anything else in a user turn.
        blocks.sort_by_key(|b| b["type"] != "tool_result");
    }
    let users: Vec<usize> = (0..turns.len()).filter(|&i| turns[i].0 == "user").collect();
    for &i in users.iter().rev().take(2) {
        if let Some(last) = turns[i].1.last_mut() {
            last["cache_control"] = ephemeral();
        }
    }
    turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": non_empty(text, "(empty)")})
}

/// Anthropic refuses empty text blocks.
fn non_empty<'a>(text: &'a str, instead: &'a str) -> &'a str {
    if text.trim().is_empty() {
        instead
    } else {
        text
    }
}

fn assistant_blocks(text: &str, calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !text.trim().is_empty() || calls.is_empty() {
        blocks.push(text_block(text));
    }
    for c in calls {
        blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": tool_input(&c.arguments)}));
    }
    blocks
}

/// `input` must be an object; arguments the model mangled are kept, as a string, for it to see.
fn tool_input(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({"invalid_arguments": arguments}),
    }
}

#[derive(Debug, Deserialize)]
struct MessageBody {
    #[serde(default)]
    content: Vec<Block>,
    usage: Option<UsageBody>,
    error: Option<ErrorBody>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

impl ErrorBody {
    /// An error event or body: overload and API errors pass, the rest are final.
    fn fault(&self) -> Fault {
        let text = format!("{}: {}", self.kind, self.message);
        match self.kind.as_str() {
            "overloaded_error" | "api_error" | "rate_limit_error" => Fault::transient(text),
            "authentication_error" | "permission_error" => Fault::Final(ModelError::Auth(text)),
            _ => Fault::Final(ModelError::Failed(text)),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct UsageBody {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

impl UsageBody {
    fn tokens(self) -> Tokens {
        let mut t = Tokens::default();
        self.apply(&mut t);
        t
    }

    /// Anthropic's `input_tokens` leaves out the cached ones; ours counts every input token.
    fn apply(&self, t: &mut Tokens) {
        let fresh = self
            .input_tokens
            .unwrap_or(t.input.saturating_sub(t.cached + t.cache_write));
        if let Some(read) = self.cache_read_input_tokens {
            t.cached = read;
        }
        if let Some(write) = self.cache_creation_input_tokens {
            t.cache_write = write;
        }
        t.input = fresh + t.cached + t.cache_write;
        if let Some(out) = self.output_tokens {
            t.output = out;
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartBody,
    },
    ContentBlockStart {
        index: u64,
        content_block: Block,
    },
    ContentBlockDelta {
        index: u64,
        delta: BlockDelta,
    },
    MessageDelta {
        #[serde(default)]
        usage: UsageBody,
    },
    MessageStop,
    Error {
        error: ErrorBody,
    },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct StartBody {
    #[serde(default)]
    usage: UsageBody,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    #[serde(other)]
    Other,
}

/// Assembles content blocks by index: text deltas and tool input JSON in pieces.
#[derive(Default)]
struct Assembler {
    blocks: BTreeMap<u64, Partial>,
    tokens: Tokens,
}

enum Partial {
    Text(String),
    Tool(ToolCall),
}

impl StreamAssembler for Assembler {
    fn event(&mut self, event: &Event) -> Result<bool, Fault> {
        if event.data.trim().is_empty() {
            return Ok(false);
        }
        match http::json::<StreamEvent>(event.data.as_bytes(), "a stream event")? {
            StreamEvent::MessageStart { message } => message.usage.apply(&mut self.tokens),
            StreamEvent::ContentBlockStart {
                index,
                content_block,
            } => {
                let partial = match content_block {
                    Block::Text { text } => Partial::Text(text),
                    Block::ToolUse { id, name, .. } => Partial::Tool(ToolCall {
                        id,
                        name,
                        arguments: String::new(),
                    }),
                    Block::Other => return Ok(false),
                };
                self.blocks.insert(index, partial);
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                match (self.blocks.get_mut(&index), delta) {
                    (Some(Partial::Text(t)), BlockDelta::TextDelta { text }) => t.push_str(&text),
                    (Some(Partial::Tool(c)), BlockDelta::InputJsonDelta { partial_json }) => {
                        c.arguments.push_str(&partial_json)
                    }
                    _ => {}
                }
            }
            StreamEvent::MessageDelta { usage } => usage.apply(&mut self.tokens),
            StreamEvent::MessageStop => return Ok(true),
            StreamEvent::Error { error } => return Err(error.fault()),
            StreamEvent::Other => {}
        }
        Ok(false)
    }

    fn finish(self: Box<Self>, ended: bool) -> Result<Reply, Fault> {
        if !ended {
            let inside = if self.blocks.values().any(|b| matches!(b, Partial::Tool(_))) {
                " inside a tool call"
            } else {
                ""
            };
            return Err(Fault::transient(format!(
                "the stream was cut before message_stop{inside}"
            )));
        }
        let mut reply = Reply {
            tokens: self.tokens,
            ..Reply::default()
        };
        for block in self.blocks.into_values() {
            match block {
                Partial::Text(t) => reply.text.push_str(&t),
                Partial::Tool(mut c) => {
                    if c.arguments.trim().is_empty() {
                        c.arguments = "{}".into();
                    }
                    reply.tool_calls.push(c);
                }
            }
        }
        Ok(reply)
    }

    fn writing(&self) -> &str {
        match self.blocks.values().next_back() {
            Some(Partial::Text(t)) => t,
            Some(Partial::Tool(c)) => &c.arguments,
            None => "",
        }
    }

    fn cut(mut self: Box<Self>, keep: usize) -> Reply {
        if let Some(Partial::Text(t)) = self.blocks.values_mut().next_back() {
            t.truncate(keep);
        }
        let mut reply = self.finish(true).unwrap_or_default();
        // A call cut inside its input is not one to run.
        reply
            .tool_calls
            .retain(|c| serde_json::from_str::<serde::de::IgnoredAny>(&c.arguments).is_ok());
        reply
    }
}

#[cfg(test)]
mod tests {
    use eventsource_stream::Eventsource;
    use futures_util::StreamExt;

    use super::*;

    fn sse(events: &[Value]) -> String {
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect()
    }

    fn stream() -> String {
        sse(&[
            json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":900,"cache_creation_input_tokens":90,"output_tokens":1}}}),
            json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            json!({"type":"ping"}),
            json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Ça va → "}}),
            json!({"type":"content_block_stop","index":0}),
            json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{}}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}),
            json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"and\": \"echo é\"}"}}),
            json!({"type":"content_block_stop","index":1}),
            json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":42}}),
            json!({"type":"message_stop"}),
        ])
    }

    async fn assemble(sse: &str, cut: usize) -> Result<Reply, Fault> {
        let pieces = vec![
            Ok::<_, std::io::Error>(sse.as_bytes()[..cut].to_vec()),
            Ok(sse.as_bytes()[cut..].to_vec()),
        ];
        let mut events = futures_util::stream::iter(pieces).eventsource();
        let mut asm: Box<dyn StreamAssembler> = Box::new(Assembler::default());
        while let Some(ev) = events.next().await {
            if asm.event(&ev.unwrap())? {
                return asm.finish(true);
            }
        }
        asm.finish(false)
    }

    #[tokio::test]
    async fn blocks_and_usage_assemble_at_every_cut() {
        let s = stream();
        let whole = assemble(&s, 0).await.unwrap();
        assert_eq!(whole.text, "Ça va → ");
        assert_eq!(whole.tool_calls[0].arguments, r#"{"command": "echo é"}"#);
        assert_eq!(
            whole.tokens,
            Tokens {
                input: 1000,
                output: 42,
                cached: 900,
                cache_write: 90
            }
        );
        for cut in 1..s.len() {
            assert_eq!(assemble(&s, cut).await.unwrap(), whole, "cut at {cut}");
        }
        let cut = s.find("and\\\"").unwrap();
        assert!(matches!(
            assemble(&s[..cut], 0).await,
            Err(Fault::Transient { .. })
        ));
    }

    #[test]
    fn tool_results_and_harness_text_merge_into_one_user_turn() {
        let call = |id: &str| ToolCall {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        let result = |id: &str| Message::Tool {
            call_id: id.into(),
            name: "bash".into(),
            content: "ok".into(),
            is_error: false,
        };
        let t = turns(&[
            Message::User {
                content: "go".into(),
            },
            Message::Assistant {
                text: "".into(),
                tool_calls: vec![call("a"), call("b")],
            },
            result("a"),
            result("b"),
            Message::User {
                content: "[harness] 3 steps left".into(),
            },
        ]);
        let roles: Vec<&str> = t.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        let types: Vec<&str> = t[2]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["tool_result", "tool_result", "text"]);
        assert_eq!(t[2]["content"][0]["tool_use_id"], "a");
        // Breakpoints on the last two user turns, on their last block.
        assert_eq!(t[0]["content"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(t[2]["content"][2]["cache_control"]["type"], "ephemeral");
        assert!(t[2]["content"][0].get("cache_control").is_none());
        assert_eq!(t[1]["content"][0]["type"], "tool_use");
    }

    #[test]
    fn mangled_arguments_still_make_an_object_input() {
        assert_eq!(
            tool_input("{\"a\": 1"),
            json!({"invalid_arguments": "{\"a\": 1"})
        );
        assert_eq!(tool_input("{\"a\": 1}"), json!({"a": 1}));
    }
}
