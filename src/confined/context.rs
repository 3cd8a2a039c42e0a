//! The conversation the model sees, kept small: old tool results become
//! one-line stubs, and near the context window the session is compacted into
//! a handoff summary written by the same model.
//!
//! The stable prefix (system prompt and tool specs) is fixed at the start and
//! never rebuilt, so it is byte-identical in every request and prompt caching
//! works. The prompt size is estimated from its JSON bytes, with the
//! bytes-per-token ratio calibrated by the input tokens the provider reports.

use std::collections::HashMap;

use crate::model::{ChatRequest, Message, ToolCall, ToolSpec};

/// The rule of thumb before the provider has reported any usage.
const DEFAULT_BYTES_PER_TOKEN: f64 = 4.0;
/// Where a stub begins, so that a stub is never stubbed again.
const STUB_MARK: &str = "[harness: elided";
/// A summary longer than this is cut: it must leave room for the work.
const MAX_SUMMARY_BYTES: usize = 24 * 1024;

/// How the conversation is kept small.
#[derive(Debug, Clone, Copy)]
pub struct ContextPolicy {
    pub manage: bool,
    pub keep_turns: u32,
    pub compact_threshold: u64,
    pub compact_keep_turns: u32,
}

#[derive(Clone)]
pub struct Conversation {
    system: String,
    tools: Vec<ToolSpec>,
    /// `messages[0]` is the harness's first message; it survives compaction.
    messages: Vec<Message>,
    /// The JSON size of each message, to estimate the prompt without serializing it.
    sizes: Vec<usize>,
    prefix_bytes: usize,
    /// A one-line description of each tool call, by call id, for stubs and fallback summaries.
    described: HashMap<String, String>,
    bytes_per_token: f64,
    policy: ContextPolicy,
    compactions: u32,
}

impl Conversation {
    pub fn new(system: String, tools: Vec<ToolSpec>, first: String, policy: ContextPolicy) -> Self {
        let prefix_bytes = json_len(&system) + json_len(&tools);
        let mut c = Conversation {
            system,
            tools,
            messages: Vec::new(),
            sizes: Vec::new(),
            prefix_bytes,
            described: HashMap::new(),
            bytes_per_token: DEFAULT_BYTES_PER_TOKEN,
            policy,
            compactions: 0,
        };
        c.push(Message::User { content: first });
        c
    }

    /// The next request: the fixed prefix and the conversation so far.
    pub fn request(&self) -> ChatRequest {
        ChatRequest {
            system: self.system.clone(),
            messages: self.messages.clone(),
            tools: self.tools.clone(),
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[cfg(test)]
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    pub fn push(&mut self, message: Message) {
        self.sizes.push(json_len(&message));
        self.messages.push(message);
    }

    pub fn push_user(&mut self, content: String) {
        self.push(Message::User { content });
    }

    pub fn push_assistant(
        &mut self,
        text: String,
        calls: &[ToolCall],
        describe: impl Fn(&ToolCall) -> String,
    ) {
        for call in calls {
            self.described.insert(call.id.clone(), describe(call));
        }
        self.push(Message::Assistant {
            text,
            tool_calls: calls.to_vec(),
        });
    }

    /// Add `text` to the newest tool result (the todo list shown at a turn's end).
    pub fn append_to_last_result(&mut self, text: &str) -> bool {
        let Some(i) = self
            .messages
            .iter()
            .rposition(|m| matches!(m, Message::Tool { .. }))
        else {
            return false;
        };
        if let Message::Tool { content, .. } = &mut self.messages[i] {
            content.push_str(text);
        }
        self.sizes[i] = json_len(&self.messages[i]);
        true
    }

    /// Start the conversation again from one new first message; the fixed
    /// prefix stays (so a prompt cache still holds it).
    pub fn restart(&mut self, first: String) {
        self.messages.clear();
        self.sizes.clear();
        self.described.clear();
        self.push(Message::User { content: first });
    }

    /// Learn the bytes-per-token ratio from the tokens a request of `bytes` was billed.
    pub fn calibrate(&mut self, bytes: usize, input_tokens: u64) {
        if input_tokens > 0 && bytes > 0 {
            self.bytes_per_token = (bytes as f64 / input_tokens as f64).clamp(0.5, 16.0);
        }
    }

    /// The JSON size of the next request, the quantity the estimate is made from.
    pub fn request_bytes(&self) -> usize {
        self.prefix_bytes + self.sizes.iter().sum::<usize>()
    }

    /// The estimated input tokens of the next request.
    pub fn estimated_tokens(&self) -> u64 {
        (self.request_bytes() as f64 / self.bytes_per_token) as u64
    }

    pub fn needs_compaction(&self) -> bool {
        self.policy.manage && self.estimated_tokens() > self.policy.compact_threshold
    }

    /// Results of tool calls older than the last K turns become a one-line stub.
    pub fn stub_old_results(&mut self) {
        if !self.policy.manage {
            return;
        }
        if let Some(cut) = self.turn_start(self.policy.keep_turns) {
            self.stub_before(cut);
        }
    }

    /// Stub every tool result before message `cut`.
    fn stub_before(&mut self, cut: usize) {
        for i in 0..cut {
            let Message::Tool {
                call_id,
                name,
                content,
                ..
            } = &self.messages[i]
            else {
                continue;
            };
            if content.starts_with(STUB_MARK) {
                continue;
            }
            let what = self
                .described
                .get(call_id)
                .cloned()
                .unwrap_or_else(|| name.clone());
            let stub = format!(
                "{STUB_MARK} the result of `{what}` ({} bytes) from an older turn; run it again if you need it]",
                content.len()
            );
            if stub.len() < content.len() {
                if let Message::Tool { content, .. } = &mut self.messages[i] {
                    *content = stub;
                }
                self.sizes[i] = json_len(&self.messages[i]);
            }
        }
    }

    /// The index of the assistant message that opens the `turns`-th newest
    /// turn, or None when there are not more turns than that.
    fn turn_start(&self, turns: u32) -> Option<usize> {
        let mut seen = 0;
        for (i, m) in self.messages.iter().enumerate().rev() {
            if matches!(m, Message::Assistant { .. }) {
                seen += 1;
                if seen == turns {
                    return (i > 1).then_some(i);
                }
            }
        }
        None
    }

    /// The request that asks the model for its handoff summary: the same
    /// prefix and conversation, so it is served from the prompt cache.
    ///
    /// After the provider `refused` the conversation as too long, the ask
    /// goes with every tool result stubbed, or it would be refused too.
    pub fn compaction_request(&self, refused: bool) -> ChatRequest {
        let mut request = if refused {
            let mut lean = self.clone();
            lean.stub_before(lean.messages.len());
            lean.request()
        } else {
            self.request()
        };
        request.messages.push(Message::User {
            content: COMPACTION_PROMPT.to_string(),
        });
        request
    }

    /// Go on from the first message, `summary` and the last turns.
    pub fn compact(&mut self, summary: &str, todos: &str) {
        let keep_from = self
            .turn_start(self.policy.compact_keep_turns.max(1))
            .unwrap_or(self.messages.len());
        let summary = if summary.trim().is_empty() {
            self.fallback_summary(keep_from)
        } else {
            cut_to(summary.trim(), MAX_SUMMARY_BYTES)
        };
        let kept: Vec<Message> = self.messages.drain(keep_from.max(1)..).collect();
        self.messages.truncate(1);
        self.sizes.truncate(1);
        self.compactions += 1;
        self.push_user(format!(
            "[harness] This session's context was compacted (compaction {}). Your handoff summary of the work so far:\n\n{summary}\n{todos}\nThe latest turns follow as they were.",
            self.compactions
        ));
        for m in kept {
            self.push(m);
        }
    }

    /// When the model gave no summary: the calls it made, from the harness's own record.
    fn fallback_summary(&self, upto: usize) -> String {
        let mut lines =
            vec!["(The model wrote no summary; these are the tool calls made so far.)".to_string()];
        for m in &self.messages[..upto] {
            if let Message::Assistant { tool_calls, .. } = m {
                for c in tool_calls {
                    if let Some(d) = self.described.get(&c.id) {
                        lines.push(format!("- {d}"));
                    }
                }
            }
        }
        cut_to(&lines.join("\n"), MAX_SUMMARY_BYTES)
    }
}

const COMPACTION_PROMPT: &str = "[harness] This conversation is near the context window and will now be compacted. \
Write a handoff summary for yourself to continue from, in place of everything so far: \
the assignment and its status; what you did and learned (files changed, commands that matter, errors and their causes); \
what is committed and what is not; what is left, and the very next step. \
Be specific and brief. Reply with text only, no tool calls.";

fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map(|v| v.len()).unwrap_or(0) + 1
}

/// At most `max` bytes of `text`, cut at a char boundary, with a note when cut.
pub fn cut_to(text: &str, max: usize) -> String {
    let kept = head(text, max);
    if kept.len() == text.len() {
        return text.to_string();
    }
    format!(
        "{kept}\n[... cut: {} more bytes not shown]",
        text.len() - kept.len()
    )
}

/// The first `max` bytes of `text` at most, ending on a char boundary.
pub fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(keep_turns: u32) -> ContextPolicy {
        ContextPolicy {
            manage: true,
            keep_turns,
            compact_threshold: 1_000,
            compact_keep_turns: 1,
        }
    }

    fn turn(c: &mut Conversation, i: usize, output: &str) {
        let call = ToolCall {
            id: format!("c{i}"),
            name: "bash".into(),
            arguments: "{}".into(),
        };
        c.push_assistant(String::new(), &[call], |_| format!("bash step {i}"));
        c.push(Message::Tool {
            call_id: format!("c{i}"),
            name: "bash".into(),
            content: output.into(),
            is_error: false,
        });
    }

    fn tool_contents(c: &Conversation) -> Vec<String> {
        c.messages()
            .iter()
            .filter_map(|m| match m {
                Message::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn results_older_than_k_turns_become_stubs_and_the_prefix_stays() {
        let mut c = Conversation::new("sys".into(), Vec::new(), "go".into(), policy(2));
        let before = c.request();
        let big = "x".repeat(500);
        for i in 0..4 {
            turn(&mut c, i, &big);
            c.stub_old_results();
        }
        let contents = tool_contents(&c);
        assert!(
            contents[0].starts_with("[harness: elided the result of `bash step 0` (500 bytes)"),
            "{}",
            contents[0]
        );
        assert!(contents[1].starts_with(STUB_MARK));
        assert_eq!(contents[2], big);
        assert_eq!(contents[3], big);
        let after = c.request();
        assert_eq!(before.system, after.system);
        assert_eq!(before.tools, after.tools);
        assert_eq!(after.messages[0], before.messages[0]);
    }

    #[test]
    fn the_estimate_follows_the_reported_usage() {
        let mut c = Conversation::new("sys".into(), Vec::new(), "x".repeat(4000), policy(10));
        let bytes = c.request_bytes();
        assert_eq!(c.estimated_tokens(), (bytes / 4) as u64);
        assert!(c.needs_compaction() == (bytes / 4 > 1000));
        c.calibrate(bytes, (bytes / 2) as u64);
        assert_eq!(c.estimated_tokens(), (bytes / 2) as u64);
        assert!(c.needs_compaction());
    }

    #[test]
    fn compaction_keeps_the_first_message_the_summary_and_the_last_turn() {
        let mut c = Conversation::new(
            "sys".into(),
            Vec::new(),
            "the assignment".into(),
            policy(10),
        );
        for i in 0..5 {
            turn(&mut c, i, "out");
        }
        let ask = c.compaction_request(false);
        assert_eq!(ask.messages.len(), c.messages().len() + 1);
        c.compact("did 0..4", "Todos: none\n");
        let m = c.messages();
        assert_eq!(m.len(), 4, "{m:?}");
        assert_eq!(
            m[0],
            Message::User {
                content: "the assignment".into()
            }
        );
        let Message::User { content } = &m[1] else {
            panic!("{m:?}")
        };
        assert!(
            content.contains("did 0..4") && content.contains("Todos: none"),
            "{content}"
        );
        assert!(matches!(&m[2], Message::Assistant { tool_calls, .. } if tool_calls[0].id == "c4"));
        assert!(content.contains("(compaction 1)"), "{content}");
        assert_eq!(
            c.request_bytes(),
            c.prefix_bytes + m.iter().map(json_len).sum::<usize>()
        );
    }

    #[test]
    fn after_a_refusal_the_compaction_ask_goes_with_every_result_stubbed() {
        let mut c = Conversation::new("sys".into(), Vec::new(), "go".into(), policy(10));
        for i in 0..3 {
            turn(&mut c, i, &"y".repeat(400));
        }
        let lean = c.compaction_request(true);
        let stubs = lean.messages.iter().filter(
            |m| matches!(m, Message::Tool { content, .. } if content.starts_with(STUB_MARK)),
        );
        assert_eq!(stubs.count(), 3);
        assert_eq!(
            tool_contents(&c)[2],
            "y".repeat(400),
            "the conversation itself is unchanged"
        );
    }

    #[test]
    fn an_empty_summary_falls_back_to_the_calls_made() {
        let mut c = Conversation::new("sys".into(), Vec::new(), "go".into(), policy(10));
        for i in 0..3 {
            turn(&mut c, i, "out");
        }
        c.compact("  ", "");
        let Message::User { content } = &c.messages()[1] else {
            panic!()
        };
        assert!(
            content.contains("- bash step 0") && content.contains("- bash step 1"),
            "{content}"
        );
        assert!(!content.contains("bash step 2"), "{content}");
    }
}
