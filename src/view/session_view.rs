//! One session read back from its transcript into turns: what the harness
//! said, what the model answered, each tool call with its result, the checks
//! and the verdict. `show` renders it as text or JSON.

use std::collections::HashMap;

use serde::Serialize;

use crate::broker::{SessionEvent, WorkerReport, RECOVERED_ID_PREFIX};
use crate::model::{ChatRequest, Message, Usage};
use crate::trusted::transcript::Entry;

#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionView {
    pub session: u32,
    pub role: String,
    pub feature: Option<String>,
    pub model: String,
    pub base: String,
    pub init_script: Option<InitScript>,
    /// Harness notices sent before the first model call (sandbox warnings).
    pub notices: Vec<String>,
    pub turns: Vec<Turn>,
    pub worker: Option<WorkerEnd>,
    /// What the worker process itself used, as it reported.
    pub worker_stats: Option<WorkerStats>,
    /// The orchestrator's own checks, run in a fresh checkout after the worker exited.
    pub checks: Vec<Check>,
    pub verdict: Option<VerdictView>,
    pub usage: Usage,
    pub cost_usd: f64,
    /// The hosts the registries proxy was asked for: `during: host:port allowed xN`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct InitScript {
    pub exit_code: Option<i32>,
    pub output_tail: String,
}

/// One model request and its answer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Turn {
    /// 1-based, as people count turns.
    pub number: u32,
    /// What the harness (not a tool) told the model since its last answer.
    pub harness: Vec<String>,
    pub text: String,
    pub tool_calls: Vec<Call>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model_error: Option<String>,
    /// Notices and harness checks that happened during this turn.
    pub notices: Vec<String>,
    pub checks: Vec<Check>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Call {
    pub id: String,
    pub name: String,
    pub arguments: String,
    /// The result the model got back, when a later request carried it.
    pub result: Option<String>,
    pub is_error: bool,
    /// The model wrote this call in its text; the harness found it and ran it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub recovered: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Check {
    pub name: String,
    pub command: Option<String>,
    pub passed: bool,
    pub output_tail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkerEnd {
    pub report: Option<WorkerReport>,
    pub exit: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkerStats {
    pub peak_rss_kib: u64,
    pub harness_micros: u64,
    pub steps: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct VerdictView {
    pub verdict: String,
    pub reasons: Vec<String>,
    pub commit: String,
}

impl SessionView {
    /// Build the view from the transcript's entries, in the order they were written.
    pub fn from_entries(entries: &[Entry]) -> SessionView {
        let results = tool_results(entries);
        let mut view = SessionView::default();
        for entry in entries {
            view.add(entry, &results);
        }
        view
    }

    fn add(&mut self, entry: &Entry, results: &HashMap<String, (String, bool)>) {
        match entry {
            Entry::SessionStarted {
                session,
                role,
                feature,
                model,
                base,
            } => {
                self.session = *session;
                self.role = role.clone();
                self.feature = feature.clone();
                self.model = model.clone();
                self.base = base.clone();
            }
            Entry::Request { index, request, .. } => {
                self.add_recovered_calls(request, results);
                self.turns.push(Turn {
                    number: index + 1,
                    harness: harness_messages(request),
                    ..Turn::default()
                })
            }
            Entry::Response { response, .. } => {
                self.usage.add(response.usage);
                self.cost_usd += response.cost_usd;
                if let Some(turn) = self.turns.last_mut() {
                    turn.text = response.text.clone();
                    turn.usage = response.usage;
                    turn.cost_usd = response.cost_usd;
                    turn.tool_calls = response
                        .tool_calls
                        .iter()
                        .map(|c| {
                            let result = results.get(&c.id);
                            Call {
                                id: c.id.clone(),
                                name: c.name.clone(),
                                arguments: c.arguments.clone(),
                                result: result.map(|(text, _)| text.clone()),
                                is_error: result.is_some_and(|(_, e)| *e),
                                recovered: false,
                            }
                        })
                        .collect();
                }
            }
            Entry::ModelError { message, .. } => {
                if let Some(turn) = self.turns.last_mut() {
                    turn.model_error = Some(message.clone());
                }
            }
            Entry::Retry {
                attempt,
                reason,
                wait_ms,
                ..
            } => {
                if let Some(turn) = self.turns.last_mut() {
                    turn.notices.push(format!(
                        "retry: try {attempt} failed ({reason}); asked again after {:.1} s",
                        *wait_ms as f64 / 1000.0
                    ));
                }
            }
            Entry::Event { event } => self.add_event(event),
            Entry::ProtocolViolation { what } => {
                let note = format!("protocol violation: {what}");
                match self.turns.last_mut() {
                    Some(turn) => turn.notices.push(note),
                    None => self.notices.push(note),
                }
            }
            Entry::WorkerFinished { report, exit } => {
                self.worker = Some(WorkerEnd {
                    report: report.clone(),
                    exit: exit.clone(),
                })
            }
            Entry::Check {
                name,
                command,
                passed,
                output_tail,
            } => self.checks.push(Check {
                name: name.clone(),
                command: Some(command.clone()),
                passed: *passed,
                output_tail: output_tail.clone(),
            }),
            Entry::Network { during, contacts } => self
                .network
                .extend(contacts.iter().map(|c| format!("{during}: {c}"))),
            Entry::Verdict {
                verdict,
                reasons,
                commit,
            } => {
                self.verdict = Some(VerdictView {
                    verdict: verdict.clone(),
                    reasons: reasons.clone(),
                    commit: commit.clone(),
                })
            }
        }
    }

    /// Calls the harness found in the text of the last answer reach the
    /// transcript in the next request, as that answer's tool calls.
    fn add_recovered_calls(
        &mut self,
        request: &ChatRequest,
        results: &HashMap<String, (String, bool)>,
    ) {
        let Some(turn) = self.turns.last_mut().filter(|t| t.tool_calls.is_empty()) else {
            return;
        };
        let answered = request.messages.iter().rev().find_map(|m| match m {
            Message::Assistant { tool_calls, .. } => Some(tool_calls),
            _ => None,
        });
        let recovered = answered
            .into_iter()
            .flatten()
            .filter(|c| c.id.starts_with(RECOVERED_ID_PREFIX));
        turn.tool_calls = recovered
            .map(|c| {
                let result = results.get(&c.id);
                Call {
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments: c.arguments.clone(),
                    result: result.map(|(text, _)| text.clone()),
                    is_error: result.is_some_and(|(_, e)| *e),
                    recovered: true,
                }
            })
            .collect();
    }

    fn add_event(&mut self, event: &SessionEvent) {
        match event {
            SessionEvent::InitScript {
                exit_code,
                output_tail,
            } => {
                self.init_script = Some(InitScript {
                    exit_code: *exit_code,
                    output_tail: output_tail.clone(),
                })
            }
            // The call and its result are already in the turn, from the requests.
            SessionEvent::ToolCall { .. } => {}
            SessionEvent::CheckResult {
                name,
                passed,
                output_tail,
            } => {
                let check = Check {
                    name: name.clone(),
                    command: None,
                    passed: *passed,
                    output_tail: output_tail.clone(),
                };
                match self.turns.last_mut() {
                    Some(turn) => turn.checks.push(check),
                    None => self.checks.push(check),
                }
            }
            SessionEvent::Notice { text } => self.add_notice(text.clone()),
            SessionEvent::LoopDetected { what, ending } => self.add_notice(format!(
                "loop detected: {what}{}",
                if *ending { " (ending the session)" } else { "" }
            )),
            SessionEvent::Compacted {
                tokens_before,
                tokens_after,
            } => self.add_notice(format!(
                "context compacted: ~{tokens_before} -> ~{tokens_after} tokens"
            )),
            SessionEvent::WorkerStats {
                peak_rss_kib,
                harness_micros,
                steps,
            } => {
                self.worker_stats = Some(WorkerStats {
                    peak_rss_kib: *peak_rss_kib,
                    harness_micros: *harness_micros,
                    steps: *steps,
                })
            }
            // The layers are in the verdict's trailers; only gaps are worth a notice.
            SessionEvent::Sandbox { enforcement } => {
                for w in &enforcement.warnings {
                    self.add_notice(format!("sandbox: not enforced: {w}"));
                }
            }
        }
    }

    fn add_notice(&mut self, text: String) {
        match self.turns.last_mut() {
            Some(turn) => turn.notices.push(text),
            None => self.notices.push(text),
        }
    }
}

/// The messages after the model's last answer: tool results and harness words.
fn since_last_answer(request: &ChatRequest) -> &[Message] {
    let start = request
        .messages
        .iter()
        .rposition(|m| matches!(m, Message::Assistant { .. }))
        .map(|i| i + 1)
        .unwrap_or(0);
    &request.messages[start..]
}

fn harness_messages(request: &ChatRequest) -> Vec<String> {
    since_last_answer(request)
        .iter()
        .filter_map(|m| match m {
            Message::User { content } => Some(content.clone()),
            _ => None,
        })
        .collect()
}

/// Every tool result the model was sent, by the id of the call it answers.
fn tool_results(entries: &[Entry]) -> HashMap<String, (String, bool)> {
    let mut results = HashMap::new();
    for entry in entries {
        let Entry::Request { request, .. } = entry else {
            continue;
        };
        for m in &request.messages {
            if let Message::Tool {
                call_id,
                content,
                is_error,
                ..
            } = m
            {
                results
                    .entry(call_id.clone())
                    .or_insert_with(|| (content.clone(), *is_error));
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ChatResponse, ToolCall};

    fn request(messages: Vec<Message>) -> Entry {
        Entry::Request {
            index: 0,
            request: ChatRequest {
                system: String::new(),
                messages,
                tools: Vec::new(),
                temperature: None,
                stop: Vec::new(),
                max_output_tokens: None,
            },
            model: None,
        }
    }

    #[test]
    fn results_attach_to_their_calls_and_harness_words_to_the_next_turn() {
        let call = ToolCall {
            id: "c1".into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        };
        let first = vec![Message::User {
            content: "do it".into(),
        }];
        let mut second = first.clone();
        second.push(Message::Assistant {
            text: String::new(),
            tool_calls: vec![call.clone()],
        });
        second.push(Message::Tool {
            call_id: "c1".into(),
            name: "bash".into(),
            content: "a.txt".into(),
            is_error: false,
        });
        second.push(Message::User {
            content: "check failed".into(),
        });
        let response = |calls: Vec<ToolCall>| Entry::Response {
            index: 0,
            response: ChatResponse {
                text: String::new(),
                tool_calls: calls,
                usage: Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                    cached_tokens: 0,
                },
                cost_usd: 0.5,
                cut: None,
            },
        };
        let view = SessionView::from_entries(&[
            request(first),
            response(vec![call]),
            request(second),
            response(Vec::new()),
        ]);
        assert_eq!(view.turns.len(), 2);
        assert_eq!(view.turns[0].harness, ["do it"]);
        assert_eq!(view.turns[0].tool_calls[0].result.as_deref(), Some("a.txt"));
        assert_eq!(view.turns[1].harness, ["check failed"]);
        assert_eq!(view.usage.input_tokens, 20);
        assert_eq!(view.cost_usd, 1.0);
    }
}
