//! Tool calls a model wrote into its answer's text instead of the structured
//! `tool_calls` field: the formats local models actually use.
//!
//! Small local models, and servers whose chat template does not parse their
//! model's calls, leave a call in the text: a fenced ```json block holding
//! `{"name", "arguments"}` (Qwen2.5-Coder's habit), Hermes/Qwen
//! `<tool_call>` tags, Llama 3's `<|python_tag|>` and `<function=NAME>`,
//! Mistral's `[TOOL_CALLS]`, or a bare JSON object as the whole answer. This
//! module only finds them; the agent loop runs what it finds exactly like a
//! structured call. Finding nothing is the common case and costs a scan.

use serde_json::{Map, Value};

/// Where in an answer a call was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `<tool_call>{...}</tool_call>` (Hermes, Qwen).
    Hermes,
    /// `<function=NAME>{...}</function>` (Llama 3.1 custom tools).
    FunctionTag,
    /// `[TOOL_CALLS][{...}]` or `[TOOL_CALLS]NAME[ARGS]{...}` (Mistral).
    Mistral,
    /// `<|python_tag|>{...}` (Llama 3.1).
    PythonTag,
    /// A fenced code block holding JSON.
    Fenced,
    /// The whole answer is JSON.
    Bare,
}

impl Format {
    /// How the model is told where its call was found.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Hermes => "<tool_call> tags in the text",
            Format::FunctionTag => "<function=...> tags in the text",
            Format::Mistral => "[TOOL_CALLS] in the text",
            Format::PythonTag => "<|python_tag|> in the text",
            Format::Fenced => "a JSON code block in the text",
            Format::Bare => "JSON as the whole answer",
        }
    }
}

/// One call found in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct TextCall {
    pub name: String,
    /// The arguments as a JSON string, as a structured call carries them.
    pub arguments: String,
    /// The byte range of the text the call was written in.
    pub span: std::ops::Range<usize>,
}

/// The calls of one answer, all in one format, in the order written.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub format: Format,
    pub calls: Vec<TextCall>,
}

/// Tokens a server may leave at the end of an answer.
const END_TOKENS: &[&str] = &[
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|endoftext|>",
    "</s>",
    "<|end|>",
];

/// The tool calls written in `text`, or None. `tools` are the names the
/// model was offered: in the loose formats (a code block, a bare object) an
/// object counts as a call only with an arguments field or a known name, so
/// that JSON shown for another reason (a package.json) is left alone.
pub fn recover(text: &str, tools: &[&str]) -> Option<Found> {
    type Finder = fn(&str, &[&str]) -> Vec<TextCall>;
    let finders: [(Format, Finder); 6] = [
        (Format::Hermes, hermes),
        (Format::FunctionTag, function_tags),
        (Format::Mistral, mistral),
        (Format::PythonTag, python_tag),
        (Format::Fenced, fenced),
        (Format::Bare, bare),
    ];
    finders.into_iter().find_map(|(format, find)| {
        let calls = find(text, tools);
        (!calls.is_empty()).then_some(Found { format, calls })
    })
}

/// True when `text` seems meant to hold a call (a call marker, or a JSON
/// block naming `name` and `arguments`) though [`recover`] found none: its
/// JSON was broken. The model is told, rather than left to think it ran.
pub fn looks_like_call(text: &str) -> bool {
    let marked = [
        "<tool_call>",
        "[TOOL_CALLS]",
        "<|python_tag|>",
        "<function=",
    ]
    .iter()
    .any(|m| text.contains(m));
    marked
        || fences(text).iter().any(|b| {
            let body = b.body.trim_start();
            body.starts_with('{')
                && body.contains("\"name\"")
                && ["\"arguments\"", "\"parameters\""]
                    .iter()
                    .any(|k| body.contains(k))
        })
}

/// `<tool_call>` ... `</tool_call>`; a last one left open runs to the end.
fn hermes(text: &str, _tools: &[&str]) -> Vec<TextCall> {
    tagged(text, "<tool_call>", "</tool_call>", |body, span| {
        explicit_calls(&strip_fence(body), span)
    })
}

/// Llama 3.1's custom tool format: `<function=NAME>{args}</function>`.
fn function_tags(text: &str, _tools: &[&str]) -> Vec<TextCall> {
    tagged(text, "<function=", "</function>", |body, span| {
        let Some((name, args)) = body.split_once('>') else {
            return Vec::new();
        };
        let name = name.trim().trim_matches('"');
        match json_values(args).0.into_iter().next() {
            Some(v @ Value::Object(_)) if is_name(name) => vec![TextCall {
                name: name.to_string(),
                arguments: v.to_string(),
                span,
            }],
            _ => Vec::new(),
        }
    })
}

/// The bodies between `open` and `close` (or the next `open`, or the end).
fn tagged(
    text: &str,
    open: &str,
    close: &str,
    parse: impl Fn(&str, std::ops::Range<usize>) -> Vec<TextCall>,
) -> Vec<TextCall> {
    let mut calls = Vec::new();
    let mut from = 0;
    while let Some(i) = text[from..].find(open).map(|i| i + from) {
        let body_start = i + open.len();
        let rest = &text[body_start..];
        let end = [rest.find(close), rest.find(open)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(rest.len());
        let stop = match rest[end..].starts_with(close) {
            true => body_start + end + close.len(),
            false => body_start + end,
        };
        calls.extend(parse(&rest[..end], i..stop));
        from = stop.max(body_start);
    }
    calls
}

/// Mistral: `[TOOL_CALLS][{"name", "arguments"}, ...]` (v3) or
/// `[TOOL_CALLS]NAME[ARGS]{...}` (later tokenizers), possibly several.
fn mistral(text: &str, _tools: &[&str]) -> Vec<TextCall> {
    const MARK: &str = "[TOOL_CALLS]";
    tagged(text, MARK, "[/TOOL_CALLS]", |body, span| {
        let trimmed = body.trim_start();
        if trimmed.starts_with('[') || trimmed.starts_with('{') {
            return explicit_calls(body, span);
        }
        let Some((name, args)) = body.split_once("[ARGS]") else {
            return Vec::new();
        };
        let name = name.split("[CALL_ID]").next().unwrap_or("").trim();
        match json_values(args).0.into_iter().next() {
            Some(v @ Value::Object(_)) if is_name(name) => vec![TextCall {
                name: name.to_string(),
                arguments: v.to_string(),
                span,
            }],
            _ => Vec::new(),
        }
    })
}

/// Llama 3.1: `<|python_tag|>{"name": ..., "parameters": ...}`, several joined by `;`.
fn python_tag(text: &str, _tools: &[&str]) -> Vec<TextCall> {
    const MARK: &str = "<|python_tag|>";
    let Some(i) = text.find(MARK) else {
        return Vec::new();
    };
    let body = strip_end_tokens(&text[i + MARK.len()..]);
    explicit_calls(body, i..text.len())
}

/// Fenced code blocks whose whole content is call-shaped JSON.
fn fenced(text: &str, tools: &[&str]) -> Vec<TextCall> {
    let mut calls = Vec::new();
    for block in fences(text) {
        let lang = block.info.split_whitespace().next().unwrap_or("");
        let lang = lang.to_ascii_lowercase();
        let json_like = matches!(
            lang.as_str(),
            "" | "json" | "json5" | "jsonc" | "tool_call" | "tool_calls" | "tool" | "function"
        );
        if !json_like || !block.closed {
            continue;
        }
        let body = block.body.trim();
        let body = hermes_body(body).unwrap_or(body);
        let (values, whole) = json_values(body);
        if whole {
            calls.extend(loose_calls(&values, tools, block.span.clone()));
        }
    }
    calls
}

/// A `<tool_call>` wrapped inside a code block: its body.
fn hermes_body(body: &str) -> Option<&str> {
    let inner = body.strip_prefix("<tool_call>")?;
    Some(inner.strip_suffix("</tool_call>").unwrap_or(inner).trim())
}

/// The whole answer is JSON: an object or a list of them.
fn bare(text: &str, tools: &[&str]) -> Vec<TextCall> {
    let body = strip_end_tokens(text).trim();
    // The closing fence of a block whose opening the model left out
    // (Qwen2.5-Coder 1.5B, after a long conversation of check output).
    let body = match body.strip_suffix("```") {
        Some(rest) if !rest.contains("```") => rest.trim_end(),
        _ => body,
    };
    if !(body.starts_with('{') || body.starts_with('[')) {
        return Vec::new();
    }
    match json_values(body) {
        (values, true) => loose_calls(&values, tools, 0..text.len()),
        _ => Vec::new(),
    }
}

/// Calls in an explicit wrapper: any name counts (an unknown one gets the
/// dispatcher's error, which tells the model the names it has).
fn explicit_calls(body: &str, span: std::ops::Range<usize>) -> Vec<TextCall> {
    let (values, _) = json_values(strip_end_tokens(body));
    values
        .iter()
        .flat_map(call_objects)
        .filter_map(|o| as_call(o, None))
        .map(|(name, arguments)| TextCall {
            name,
            arguments,
            span: span.clone(),
        })
        .collect()
}

/// Calls in a loose place: each must look like a call, not like data.
fn loose_calls(values: &[Value], tools: &[&str], span: std::ops::Range<usize>) -> Vec<TextCall> {
    let objects: Vec<&Map<String, Value>> = values.iter().flat_map(call_objects).collect();
    let calls: Vec<(String, String)> = objects
        .iter()
        .filter_map(|o| as_call(o, Some(tools)))
        .collect();
    // A list of which only some items are calls is data, not calls.
    if calls.len() != objects.len() {
        return Vec::new();
    }
    calls
        .into_iter()
        .map(|(name, arguments)| TextCall {
            name,
            arguments,
            span: span.clone(),
        })
        .collect()
}

/// The objects that may each be a call: a list's items, `{"tool_calls": [...]}`'s items.
fn call_objects(value: &Value) -> Vec<&Map<String, Value>> {
    match value {
        Value::Array(items) => items.iter().flat_map(call_objects).collect(),
        Value::Object(o) => match o.get("tool_calls") {
            Some(Value::Array(items)) if o.len() == 1 => {
                items.iter().flat_map(call_objects).collect()
            }
            _ => vec![o],
        },
        _ => Vec::new(),
    }
}

const NAME_KEYS: &[&str] = &["name", "tool", "tool_name", "function"];
const ARGUMENT_KEYS: &[&str] = &[
    "arguments",
    "parameters",
    "args",
    "input",
    "tool_input",
    "params",
];

/// `(name, arguments JSON)` when `o` is a call. With `tools` (a loose
/// place), it must name its arguments or name a known tool.
fn as_call(o: &Map<String, Value>, tools: Option<&[&str]>) -> Option<(String, String)> {
    // OpenAI's own shape: {"type": "function", "function": {"name", "arguments"}}.
    if let Some(Value::Object(f)) = o.get("function") {
        return as_call(f, tools);
    }
    let (name_key, name) = NAME_KEYS
        .iter()
        .find_map(|k| o.get(*k).and_then(Value::as_str).map(|n| (*k, n.trim())))?;
    if !is_name(name) {
        return None;
    }
    let known = tools.is_none_or(|t| t.contains(&name));
    let args = ARGUMENT_KEYS.iter().find_map(|k| o.get(*k));
    let arguments = match args {
        Some(Value::String(s)) => s.clone(),
        Some(v @ Value::Object(_)) => v.to_string(),
        Some(Value::Null) => "{}".to_string(),
        Some(_) => return None,
        // {"tool": "bash", "command": "ls"}: the other keys are the arguments.
        None if known && name_key != "name" => {
            let mut rest = o.clone();
            rest.remove(name_key);
            Value::Object(rest).to_string()
        }
        None if known && o.len() == 1 => "{}".to_string(),
        None => return None,
    };
    Some((name.to_string(), arguments))
}

/// A tool name: a short identifier.
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The JSON values in `text` one after another (separated by whitespace,
/// commas or semicolons), and whether they make up all of it. Strings with
/// raw newlines in them, which small models write for code, are repaired.
pub fn json_values(text: &str) -> (Vec<Value>, bool) {
    let strict = values_in(text);
    if strict.1 {
        return strict;
    }
    let repaired = values_in(&repair(text));
    match repaired.0.len() > strict.0.len() || repaired.1 {
        true => repaired,
        false => strict,
    }
}

fn values_in(text: &str) -> (Vec<Value>, bool) {
    let mut values = Vec::new();
    let mut rest = text;
    loop {
        rest = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ',' || c == ';');
        if rest.is_empty() {
            return (values, true);
        }
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                values.push(v);
                rest = &rest[stream.byte_offset()..];
            }
            _ => return (values, false),
        }
    }
}

/// Raw control characters inside strings escaped, trailing commas dropped.
fn repair(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if in_string {
            match c {
                _ if escaped => {
                    escaped = false;
                    out.push(c);
                }
                '\\' => {
                    escaped = true;
                    out.push(c);
                }
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => out.push(' '),
                c => out.push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            ',' => {
                let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
                if !matches!(next, Some('}') | Some(']')) {
                    out.push(c);
                }
            }
            c => out.push(c),
        }
    }
    out
}

fn strip_end_tokens(text: &str) -> &str {
    let mut t = text.trim_end();
    while let Some(stripped) = END_TOKENS.iter().find_map(|e| t.strip_suffix(e)) {
        t = stripped.trim_end();
    }
    t
}

/// A body possibly wrapped in a code fence, unwrapped.
fn strip_fence(body: &str) -> String {
    let t = body.trim();
    match fences(t).into_iter().next() {
        Some(b) if b.span.start == 0 => b.body,
        _ => t.to_string(),
    }
}

/// One fenced code block of an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Fence {
    /// What follows the opening backticks on their line (`python title=a.py`).
    pub info: String,
    pub body: String,
    /// The bytes of the answer from the opening backticks to the closing ones.
    pub span: std::ops::Range<usize>,
    /// False when the answer ended inside the block (it was cut).
    pub closed: bool,
}

/// The fenced blocks of `text`, in order. A fence opens at three backticks
/// at a line's start (up to three spaces in) and closes at the next three
/// backticks; a JSON body may start on the opening line, as in
/// "```json {"name": ...}```", which small models write.
pub fn fences(text: &str) -> Vec<Fence> {
    let mut blocks = Vec::new();
    let mut from = 0;
    while let Some(open) = find_fence_open(text, from) {
        let after = open + 3;
        let line_end = text[after..].find('\n').map_or(text.len(), |i| i + after);
        let first_line = &text[after..line_end];
        // An info string is a word or two; JSON starting on the same line is the body.
        let (info, body_start) = match first_line.find(['{', '[']) {
            Some(i) if !first_line[..i].contains('=') => (&first_line[..i], after + i),
            _ => (first_line, (line_end + 1).min(text.len())),
        };
        let close = text[body_start..].find("```").map(|i| i + body_start);
        let (body, end, closed) = match close {
            Some(c) => (&text[body_start..c], c + 3, true),
            None => (&text[body_start..], text.len(), false),
        };
        blocks.push(Fence {
            info: info.trim().to_string(),
            body: body.strip_suffix('\n').unwrap_or(body).to_string(),
            span: open..end,
            closed,
        });
        from = end;
    }
    blocks
}

/// The next ``` at a line's start (after up to three spaces) from `from`.
fn find_fence_open(text: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = text[at..].find("```").map(|i| i + at) {
        let line_start = text[..i].rfind('\n').map_or(0, |n| n + 1);
        let indent = &text[line_start..i];
        if indent.len() <= 3 && indent.chars().all(|c| c == ' ') {
            return Some(i);
        }
        at = i + 3;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOOLS: &[&str] = &[
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "list_files",
        "grep",
    ];

    /// (what, the answer, the format expected, the calls expected as (name, arguments)).
    type Case = (
        &'static str,
        &'static str,
        Option<Format>,
        &'static [(&'static str, &'static str)],
    );

    /// Answers as the models write them: Qwen2.5-Coder 0.5B/1.5B through
    /// llama-server (fenced JSON, sometimes on one line, sometimes with raw
    /// newlines in a string), and each format's documented chat template.
    const CASES: &[Case] = &[
        (
            "Qwen2.5-Coder: a fenced json block",
            "I'll start by looking at the stub.\n\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"duration.py\"}}\n```",
            Some(Format::Fenced),
            &[("read_file", r#"{"path":"duration.py"}"#)],
        ),
        (
            "Qwen2.5-Coder: the block on one line",
            "```json {\"name\": \"bash\", \"arguments\": {\"command\": \"python -m unittest -q\"}}```",
            Some(Format::Fenced),
            &[("bash", r#"{"command":"python -m unittest -q"}"#)],
        ),
        (
            "Qwen2.5-Coder: two blocks, code with raw newlines",
            "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"duration.py\", \"content\": \"def parse_duration(s):\n    return 0\n\"}}\n```\nThen run the tests:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"python -m unittest\"}}\n```\n",
            Some(Format::Fenced),
            &[
                ("write_file", r#"{"content":"def parse_duration(s):\n    return 0\n","path":"duration.py"}"#),
                ("bash", r#"{"command":"python -m unittest"}"#),
            ],
        ),
        (
            "an untagged fence, a list of calls",
            "```\n[{\"name\": \"list_files\", \"arguments\": {}}, {\"name\": \"grep\", \"arguments\": {\"pattern\": \"def \"}}]\n```",
            Some(Format::Fenced),
            &[("list_files", "{}"), ("grep", r#"{"pattern":"def "}"#)],
        ),
        (
            "parameters instead of arguments",
            "```json\n{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}\n```",
            Some(Format::Fenced),
            &[("bash", r#"{"command":"ls"}"#)],
        ),
        (
            "{\"tool\": ...} with the arguments beside it",
            "```json\n{\"tool\": \"bash\", \"command\": \"ls -la\"}\n```",
            Some(Format::Fenced),
            &[("bash", r#"{"command":"ls -la"}"#)],
        ),
        (
            "{\"tool\": ..., \"args\": ...}",
            "```json\n{\"tool\": \"read_file\", \"args\": {\"path\": \"a.py\"}}\n```",
            Some(Format::Fenced),
            &[("read_file", r#"{"path":"a.py"}"#)],
        ),
        (
            "OpenAI's shape, arguments as a string",
            "```json\n{\"type\": \"function\", \"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"pwd\\\"}\"}}\n```",
            Some(Format::Fenced),
            &[("bash", r#"{"command": "pwd"}"#)],
        ),
        (
            "Hermes / Qwen template: <tool_call> tags",
            "<tool_call>\n{\"name\": \"bash\", \"arguments\": {\"command\": \"git status\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"features.json\"}}\n</tool_call>",
            Some(Format::Hermes),
            &[
                ("bash", r#"{"command":"git status"}"#),
                ("read_file", r#"{"path":"features.json"}"#),
            ],
        ),
        (
            "Hermes: the last tag left open, a fence inside",
            "Let me check.\n<tool_call>\n```json\n{\"name\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n```<|im_end|>",
            Some(Format::Hermes),
            &[("list_files", r#"{"path":"."}"#)],
        ),
        (
            "Llama 3.1: <|python_tag|> with parameters",
            "<|python_tag|>{\"name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}<|eom_id|>",
            Some(Format::PythonTag),
            &[("bash", r#"{"command":"ls"}"#)],
        ),
        (
            "Llama 3.1: several calls joined by ;",
            "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"a\"}}; {\"name\": \"read_file\", \"parameters\": {\"path\": \"b\"}}",
            Some(Format::PythonTag),
            &[("read_file", r#"{"path":"a"}"#), ("read_file", r#"{"path":"b"}"#)],
        ),
        (
            "Llama 3.1 custom tools: <function=...>",
            "<function=grep>{\"pattern\": \"TODO\"}</function>",
            Some(Format::FunctionTag),
            &[("grep", r#"{"pattern":"TODO"}"#)],
        ),
        (
            "Llama 3.2: a bare object with parameters",
            "{\"name\": \"list_files\", \"parameters\": {\"path\": \"src\"}}",
            Some(Format::Bare),
            &[("list_files", r#"{"path":"src"}"#)],
        ),
        (
            "Mistral v3: [TOOL_CALLS] and a list",
            "[TOOL_CALLS] [{\"name\": \"bash\", \"arguments\": {\"command\": \"make test\"}}]</s>",
            Some(Format::Mistral),
            &[("bash", r#"{"command":"make test"}"#)],
        ),
        (
            "Mistral later tokenizers: [TOOL_CALLS]NAME[ARGS]",
            "[TOOL_CALLS]read_file[ARGS]{\"path\": \"SPEC.md\"}[TOOL_CALLS]bash[CALL_ID]a1b2c3d4e[ARGS]{\"command\": \"ls\"}",
            Some(Format::Mistral),
            &[("read_file", r#"{"path":"SPEC.md"}"#), ("bash", r#"{"command":"ls"}"#)],
        ),
        (
            "a bare object with a known name and no arguments",
            "{\"name\": \"list_files\"}",
            Some(Format::Bare),
            &[("list_files", "{}")],
        ),
        (
            "Qwen2.5-Coder 1.5B: a bare object and a closing fence with no opening one",
            "{\"name\": \"write_file\", \"arguments\": {\"content\": \"x = 1\\n\", \"path\": \"duration.py\"}}\n```",
            Some(Format::Bare),
            &[("write_file", r#"{"content":"x = 1\n","path":"duration.py"}"#)],
        ),
        (
            "trailing comma repaired",
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\",},}\n```",
            Some(Format::Fenced),
            &[("bash", r#"{"command":"ls"}"#)],
        ),
        // What is not a call.
        ("plain prose", "The feature is done and committed.", None, &[]),
        (
            "a package.json shown",
            "```json\n{\"name\": \"app\", \"version\": \"1.0.0\"}\n```",
            None,
            &[],
        ),
        (
            "features.json shown",
            "```json\n{\"features\": [{\"id\": \"F001\", \"passes\": true}]}\n```",
            None,
            &[],
        ),
        (
            "Python code",
            "```python\ndef f():\n    return {\"name\": \"bash\", \"arguments\": {}}\n```",
            None,
            &[],
        ),
        (
            "a block cut before its end",
            "```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}",
            None,
            &[],
        ),
        (
            "a list mixing calls and data",
            "```json\n[{\"name\": \"bash\", \"arguments\": {}}, {\"id\": 3}]\n```",
            None,
            &[],
        ),
    ];

    #[test]
    fn every_format_in_the_table_is_recovered_and_data_is_left_alone() {
        for (what, answer, format, expected) in CASES {
            let found = recover(answer, TOOLS);
            assert_eq!(found.as_ref().map(|f| f.format), *format, "{what}");
            let calls: Vec<(String, Value)> = found
                .map(|f| f.calls)
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.name, serde_json::from_str(&c.arguments).unwrap()))
                .collect();
            let expected: Vec<(String, Value)> = expected
                .iter()
                .map(|(n, a)| (n.to_string(), serde_json::from_str(a).unwrap()))
                .collect();
            assert_eq!(calls, expected, "{what}");
        }
    }

    #[test]
    fn a_broken_call_is_told_apart_from_prose() {
        let broken = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"a.py\", \"content\": \"print(\"hi\")\"}}\n```";
        assert_eq!(recover(broken, TOOLS), None);
        assert!(looks_like_call(broken));
        assert!(looks_like_call(
            "<tool_call>\n{'name': 'bash'}\n</tool_call>"
        ));
        assert!(!looks_like_call("The work is done."));
        assert!(!looks_like_call(
            "```json\n{\"name\": \"app\", \"version\": \"1\"}\n```"
        ));
    }

    #[test]
    fn a_call_span_covers_the_block_it_was_written_in() {
        let answer = "First:\n```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nDone.";
        let found = recover(answer, TOOLS).unwrap();
        let span = found.calls[0].span.clone();
        assert!(answer[span.clone()].starts_with("```json"));
        assert!(answer[span].ends_with("```"));
    }

    #[test]
    fn fences_carry_their_info_string_and_whether_they_closed() {
        let text = "duration.py\n```python title=duration.py\ndef f():\n    pass\n```\n  ```\nopen";
        let blocks = fences(text);
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[0].info, "python title=duration.py");
        assert_eq!(blocks[0].body, "def f():\n    pass");
        assert!(blocks[0].closed);
        assert_eq!((blocks[1].body.as_str(), blocks[1].closed), ("open", false));
    }
}
