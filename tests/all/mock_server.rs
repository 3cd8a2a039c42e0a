//! A mock model server on 127.0.0.1, port 0, for the provider tests.
//!
//! It speaks HTTP/1.1 and the real wire formats (OpenAI Chat Completions,
//! Anthropic Messages, each whole or as server-sent events), answers from a
//! script of [`Reply`]s, one per request, and records every request it got.
//! Faults are replies too: a status with headers, a reset connection, a slow
//! first byte, a stream cut in the middle, a body that is not JSON.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::{json, Value};

/// Which wire format the server speaks for scripted turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    Openai,
    Anthropic,
}

/// One answer, or one way of not answering.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A whole body with a status and extra headers.
    Body {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// An SSE body, sent as one HTTP chunk per piece; when `cut`, the
    /// connection closes before the body's end.
    Stream { pieces: Vec<Vec<u8>>, cut: bool },
    /// Read the request, then reset the connection.
    Reset,
    /// Start a stream with `first`, then fall silent for `wait` and hang up.
    Stall { first: Vec<u8>, wait: Duration },
    /// Wait, then reply.
    Slow(Duration, Box<Reply>),
    /// Hold the answer until the test opens the gate, then reply: the test
    /// sees what longrun does while it waits, with no clock involved.
    Gated(Gate, Box<Reply>),
    /// Stream `first`, then `piece` again and again until the client hangs
    /// up (counted: [`MockServer::hang_ups`]), as a model that runs away
    /// repeating itself does; after [`ENDLESS_CAP`] pieces, `last`.
    Endless {
        first: Vec<u8>,
        piece: Vec<u8>,
        last: Vec<u8>,
    },
}

/// How many pieces an [`Reply::Endless`] stream sends before it ends after all.
pub const ENDLESS_CAP: usize = 20_000;

/// Closed until a test opens it, once, for good.
#[derive(Debug, Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn open(&self) {
        let (open, opened) = &*self.0;
        *open.lock().unwrap() = true;
        opened.notify_all();
    }

    fn wait(&self) {
        let (open, opened) = &*self.0;
        let guard = open.lock().unwrap();
        drop(opened.wait_while(guard, |open| !*open).unwrap());
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

struct State {
    script: VecDeque<Reply>,
    requests: Vec<Recorded>,
    calls: u32,
    hang_ups: usize,
}

pub struct MockServer {
    pub wire: Wire,
    port: u16,
    state: Arc<Mutex<State>>,
}

impl MockServer {
    /// Serve `script` in order; past its end, every answer is a plain "done" text.
    pub fn start(wire: Wire, script: Vec<Reply>) -> MockServer {
        MockServer::start_on(0, wire, script)
    }

    /// The same on a given port (0: any), for a provider that comes back
    /// where it was: see [`closed_port`].
    pub fn start_on(port: u16, wire: Wire, script: Vec<Reply>) -> MockServer {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(Mutex::new(State {
            script: script.into(),
            requests: Vec::new(),
            calls: 0,
            hang_ups: 0,
        }));
        let shared = state.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let state = shared.clone();
                std::thread::spawn(move || handle(conn, wire, &state));
            }
        });
        MockServer { wire, port, state }
    }

    /// The base URL to pass as `--base-url`.
    pub fn base_url(&self) -> String {
        match self.wire {
            Wire::Openai => format!("http://127.0.0.1:{}/v1", self.port),
            Wire::Anthropic => format!("http://127.0.0.1:{}", self.port),
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// How many answers the client stopped reading before their end.
    pub fn hang_ups(&self) -> usize {
        self.state.lock().unwrap().hang_ups
    }
}

/// A loopback port nothing listens on (until a test starts a server there).
pub fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().unwrap().port()
}

fn handle(mut conn: TcpStream, wire: Wire, state: &Mutex<State>) {
    // Each small write goes out alone, so chunk boundaries reach the client as cut.
    let _ = conn.set_nodelay(true);
    let Some(request) = read_request(&conn) else {
        return;
    };
    let stream = request.body["stream"] == true;
    let reply = {
        let mut s = state.lock().unwrap();
        s.requests.push(request);
        s.calls += 1;
        let fallback = turn_reply(wire, &json!({"text": "done"}), 900 + s.calls, stream);
        s.script.pop_front().unwrap_or(fallback)
    };
    if send(&mut conn, reply) {
        state.lock().unwrap().hang_ups += 1;
    }
}

fn read_request(conn: &TcpStream) -> Option<Recorded> {
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.push((k.trim().to_lowercase(), v.trim().to_string()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Recorded {
        path,
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

/// Send `reply`; true when the client hung up before its end.
fn send(conn: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Slow(wait, then) => {
            std::thread::sleep(wait);
            return send(conn, *then);
        }
        Reply::Gated(gate, then) => {
            gate.wait();
            return send(conn, *then);
        }
        Reply::Endless { first, piece, last } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let chunk = |conn: &mut TcpStream, bytes: &[u8]| -> std::io::Result<()> {
                conn.write_all(format!("{:x}\r\n", bytes.len()).as_bytes())?;
                conn.write_all(bytes)?;
                conn.write_all(b"\r\n")?;
                conn.flush()
            };
            let sent = (|| {
                conn.write_all(head.as_bytes())?;
                chunk(conn, &first)?;
                for _ in 0..ENDLESS_CAP {
                    chunk(conn, &piece)?;
                    std::thread::sleep(Duration::from_millis(1));
                }
                chunk(conn, &last)?;
                conn.write_all(b"0\r\n\r\n")
            })();
            return sent.is_err();
        }
        Reply::Reset => reset(conn),
        Reply::Stall { first, wait } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(format!("{:x}\r\n", first.len()).as_bytes());
            let _ = conn.write_all(&first);
            let _ = conn.write_all(b"\r\n");
            std::thread::sleep(wait);
        }
        Reply::Body {
            status,
            headers,
            body,
        } => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(body.as_bytes());
        }
        Reply::Stream { pieces, cut } => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            let _ = conn.write_all(head.as_bytes());
            for piece in pieces.iter().filter(|p| !p.is_empty()) {
                let _ = conn.write_all(format!("{:x}\r\n", piece.len()).as_bytes());
                let _ = conn.write_all(piece);
                let _ = conn.write_all(b"\r\n");
                let _ = conn.flush();
            }
            if cut {
                // End the body early (no last chunk); what was sent still arrives.
                let _ = conn.shutdown(std::net::Shutdown::Write);
            } else {
                let _ = conn.write_all(b"0\r\n\r\n");
            }
        }
    }
    false
}

/// Close with a TCP reset (SO_LINGER 0), as a dying proxy does.
fn reset(conn: &mut TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket fd and a correctly sized linger struct.
    unsafe {
        libc::setsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

// ---- scripted turns in the wire formats ----

/// Usage every scripted answer reports: 1000 tokens in (400 of them cached), 50 out.
pub const USAGE_IN: u64 = 1000;
pub const USAGE_CACHED: u64 = 400;
pub const USAGE_OUT: u64 = 50;

/// A scripted turn (`{"text", "tool_calls": [{"name", "arguments"}]}`, as
/// tests/all/common.rs builds them) as this wire's answer; `n` makes the call ids unique.
pub fn turn_reply(wire: Wire, turn: &Value, n: u32, stream: bool) -> Reply {
    match (wire, stream) {
        (Wire::Openai, false) => ok_json(openai_message(turn, n)),
        (Wire::Openai, true) => stream_reply(&openai_events(turn, n), 7),
        (Wire::Anthropic, false) => ok_json(anthropic_message(turn, n)),
        (Wire::Anthropic, true) => stream_reply(&anthropic_events(turn, n), 7),
    }
}

/// Every turn of `turns` as streamed answers, numbered from `first`.
pub fn stream_turns(wire: Wire, turns: &Value, first: u32) -> Vec<Reply> {
    turns
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| turn_reply(wire, t, first + i as u32, true))
        .collect()
}

/// `turns` (OpenAI, streamed) after a 500 ("upstream broke"), the answer to
/// the retry held until `gate` opens.
pub fn a_retry_held_by(gate: &Gate, turns: &Value) -> Vec<Reply> {
    let mut turns = stream_turns(Wire::Openai, turns, 1).into_iter();
    let held = Reply::Gated(gate.clone(), Box::new(turns.next().expect("a turn")));
    [error(500, "upstream broke", &[]), held]
        .into_iter()
        .chain(turns)
        .collect()
}

pub fn ok_json(body: Value) -> Reply {
    Reply::Body {
        status: 200,
        headers: Vec::new(),
        body: body.to_string(),
    }
}

/// An error answer with the provider's usual error body.
pub fn error(status: u16, message: &str, headers: &[(&str, &str)]) -> Reply {
    Reply::Body {
        status,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body: json!({"type": "error", "error": {"type": "api_error", "message": message}})
            .to_string(),
    }
}

/// SSE text cut into pieces of `size` bytes, so that chunk boundaries fall
/// inside UTF-8 characters, JSON strings and event lines.
pub fn stream_reply(sse: &str, size: usize) -> Reply {
    Reply::Stream {
        pieces: sse.as_bytes().chunks(size).map(<[u8]>::to_vec).collect(),
        cut: false,
    }
}

/// The same stream, ending at the first byte of the last `at` in it.
pub fn cut_stream(sse: &str, at: &str) -> Reply {
    let end = sse.rfind(at).expect("cut point in the stream");
    Reply::Stream {
        pieces: sse.as_bytes()[..end]
            .chunks(5)
            .map(<[u8]>::to_vec)
            .collect(),
        cut: true,
    }
}

fn calls(turn: &Value) -> Vec<(String, String)> {
    turn["tool_calls"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let args = match &c["arguments_raw"] {
                Value::String(raw) => raw.clone(),
                _ => c["arguments"].to_string(),
            };
            (c["name"].as_str().unwrap().to_string(), args)
        })
        .collect()
}

fn text(turn: &Value) -> String {
    turn["text"].as_str().unwrap_or("").to_string()
}

fn openai_usage() -> Value {
    json!({"prompt_tokens": USAGE_IN, "completion_tokens": USAGE_OUT,
           "prompt_tokens_details": {"cached_tokens": USAGE_CACHED}})
}

pub fn openai_message(turn: &Value, n: u32) -> Value {
    let tool_calls: Vec<Value> = calls(turn)
        .into_iter()
        .enumerate()
        .map(|(i, (name, args))| {
            json!({"id": format!("call_{n}_{i}"), "type": "function",
                   "function": {"name": name, "arguments": args}})
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": text(turn)});
    if !tool_calls.is_empty() {
        message["tool_calls"] = json!(tool_calls);
    }
    json!({"id": format!("chatcmpl-{n}"), "object": "chat.completion",
           "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
           "usage": openai_usage()})
}

/// A streamed Chat Completions answer: text in two deltas, each call's
/// arguments in three.
pub fn openai_events(turn: &Value, n: u32) -> String {
    let mut chunks = vec![json!({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})];
    let t = text(turn);
    let (a, b) = split_str(&t, 2);
    for piece in [a, b].into_iter().filter(|p| !p.is_empty()) {
        chunks.push(json!({"choices": [{"index": 0, "delta": {"content": piece}}]}));
    }
    for (i, (name, args)) in calls(turn).into_iter().enumerate() {
        let (first, rest) = split_str(&args, 3);
        let (second, third) = split_str(&rest, 2);
        chunks.push(
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i,
            "id": format!("call_{n}_{i}"), "type": "function",
            "function": {"name": name, "arguments": first}}]}}]}),
        );
        for piece in [second, third] {
            chunks.push(
                json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i,
                "function": {"arguments": piece}}]}}]}),
            );
        }
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}));
    chunks.push(json!({"choices": [], "usage": openai_usage()}));
    let mut sse: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    sse.push_str("data: [DONE]\n\n");
    sse
}

fn anthropic_usage() -> Value {
    json!({"input_tokens": USAGE_IN - USAGE_CACHED, "cache_read_input_tokens": USAGE_CACHED,
           "cache_creation_input_tokens": 0, "output_tokens": USAGE_OUT})
}

fn anthropic_blocks(turn: &Value, n: u32) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !text(turn).is_empty() {
        blocks.push(json!({"type": "text", "text": text(turn)}));
    }
    for (i, (name, args)) in calls(turn).into_iter().enumerate() {
        let input: Value = serde_json::from_str(&args).unwrap_or(json!({}));
        blocks.push(
            json!({"type": "tool_use", "id": format!("toolu_{n}_{i}"), "name": name, "input": input}),
        );
    }
    blocks
}

pub fn anthropic_message(turn: &Value, n: u32) -> Value {
    json!({"id": format!("msg_{n}"), "type": "message", "role": "assistant",
           "content": anthropic_blocks(turn, n), "stop_reason": "end_turn",
           "usage": anthropic_usage()})
}

/// A streamed Messages answer, with pings and input JSON in pieces.
pub fn anthropic_events(turn: &Value, n: u32) -> String {
    let mut usage = anthropic_usage();
    usage["output_tokens"] = json!(1);
    let mut events = vec![
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
               "role": "assistant", "content": [], "usage": usage}}),
        json!({"type": "ping"}),
    ];
    for (index, block) in anthropic_blocks(turn, n).into_iter().enumerate() {
        if block["type"] == "text" {
            let (a, b) = split_str(block["text"].as_str().unwrap(), 2);
            events.push(json!({"type": "content_block_start", "index": index,
                               "content_block": {"type": "text", "text": ""}}));
            for piece in [a, b] {
                events.push(json!({"type": "content_block_delta", "index": index,
                                   "delta": {"type": "text_delta", "text": piece}}));
            }
        } else {
            let args = block["input"].to_string();
            let (a, b) = split_str(&args, 2);
            events.push(json!({"type": "content_block_start", "index": index,
                "content_block": {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}}));
            for piece in [a, b] {
                events.push(json!({"type": "content_block_delta", "index": index,
                                   "delta": {"type": "input_json_delta", "partial_json": piece}}));
            }
        }
        events.push(json!({"type": "content_block_stop", "index": index}));
    }
    events.push(
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                       "usage": {"output_tokens": USAGE_OUT}}),
    );
    events.push(json!({"type": "message_stop"}));
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// `s` cut at its `parts`-th character boundary from the start, so both halves are valid UTF-8.
fn split_str(s: &str, parts: usize) -> (String, String) {
    let n = s.chars().count() / parts;
    let at = s.char_indices().nth(n).map(|(i, _)| i).unwrap_or(s.len());
    (s[..at].to_string(), s[at..].to_string())
}

/// A model that runs away: the start of an answer, then the same two lines
/// until the client hangs up (or [`ENDLESS_CAP`] times, then an answer cut
/// by its output cap).
pub fn runaway(wire: Wire) -> Reply {
    let start = "```python\ndef to_roman(n):\n";
    let lines = "    if n == 7:\n        return \"MMM\"\n";
    match wire {
        Wire::Openai => {
            let ev = |c: Value| format!("data: {c}\n\n");
            Reply::Endless {
                first: ev(json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": start}}]}))
                    .into_bytes(),
                piece: ev(json!({"choices": [{"index": 0, "delta": {"content": lines}}]})).into_bytes(),
                last: format!(
                    "{}data: [DONE]\n\n",
                    ev(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}))
                )
                .into_bytes(),
            }
        }
        Wire::Anthropic => {
            let ev = |c: Value| format!("event: {}\ndata: {c}\n\n", c["type"].as_str().unwrap());
            let first = [
                json!({"type": "message_start", "message": {"id": "msg_runaway", "type": "message",
                       "role": "assistant", "content": [], "usage": anthropic_usage()}}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": start}}),
            ];
            let last = [
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}, "usage": {"output_tokens": 4096}}),
                json!({"type": "message_stop"}),
            ];
            Reply::Endless {
                first: first.into_iter().map(ev).collect::<String>().into_bytes(),
                piece: ev(json!({"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": lines}}))
                .into_bytes(),
                last: last.into_iter().map(ev).collect::<String>().into_bytes(),
            }
        }
    }
}
