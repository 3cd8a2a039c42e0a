//! The agent loop: model, tool calls, results, model, until the model stops
//! calling tools or a budget ends.

use std::time::{Duration, Instant};

use super::WorkerConfig;
use crate::broker::{
    OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage, WorkerReport,
};
use crate::model::{ChatRequest, Message, ToolSpec};
use crate::tools::{Registry, ToolContext};

pub struct AgentLoop<'a> {
    registry: &'a Registry,
    ctx: &'a ToolContext,
    system: String,
    tools: Vec<ToolSpec>,
    messages: Vec<Message>,
    max_steps: u32,
    wall_time: Duration,
    started: Instant,
    steps: u32,
    warned: bool,
}

impl<'a> AgentLoop<'a> {
    pub fn new(
        config: &WorkerConfig,
        registry: &'a Registry,
        ctx: &'a ToolContext,
        system: String,
        first_message: String,
    ) -> AgentLoop<'a> {
        AgentLoop {
            registry,
            ctx,
            system,
            tools: registry.specs(),
            messages: vec![Message::User {
                content: first_message,
            }],
            max_steps: config.max_steps,
            wall_time: Duration::from_secs(config.wall_time_secs),
            started: Instant::now(),
            steps: 0,
            warned: false,
        }
    }

    pub fn steps(&self) -> u32 {
        self.steps
    }

    /// Run until the model stops calling tools or a budget ends.
    pub fn run(&mut self, link: &mut WorkerLink) -> anyhow::Result<WorkerReport> {
        loop {
            if let Some(reason) = self.exhausted() {
                return Ok(self.report(WorkerEnd::Incomplete, Some(reason)));
            }
            self.warn_near_budget(link)?;
            let request = ChatRequest {
                system: self.system.clone(),
                messages: self.messages.clone(),
                tools: self.tools.clone(),
            };
            self.steps += 1;
            let (response, notice) = match link.ask(request)? {
                OrchestratorMessage::ModelResponse { response, notice } => (response, notice),
                OrchestratorMessage::ModelError { message, .. } => {
                    return Ok(self.report(WorkerEnd::Failed, Some(format!("model: {message}"))));
                }
            };
            let calls = response.tool_calls.clone();
            self.messages.push(Message::Assistant {
                text: response.text,
                tool_calls: calls.clone(),
            });
            if calls.is_empty() {
                return Ok(self.report(WorkerEnd::Completed, None));
            }
            for call in calls {
                let out = self
                    .registry
                    .dispatch(self.ctx, &call.name, &call.arguments);
                link.send(&WorkerMessage::Event {
                    event: SessionEvent::ToolCall {
                        step: self.steps,
                        name: call.name.clone(),
                        summary: summarize(&call.arguments),
                        is_error: out.is_error,
                    },
                })?;
                self.messages.push(Message::Tool {
                    call_id: call.id,
                    name: call.name,
                    content: out.content,
                    is_error: out.is_error,
                });
            }
            if let Some(text) = notice {
                self.messages.push(Message::User { content: text });
            }
        }
    }

    fn exhausted(&self) -> Option<String> {
        if self.steps >= self.max_steps {
            return Some(format!("budget: step limit of {} reached", self.max_steps));
        }
        if self.started.elapsed() >= self.wall_time {
            return Some(format!(
                "budget: wall time of {} s reached",
                self.wall_time.as_secs()
            ));
        }
        None
    }

    /// At 80% of the step budget, tell the model once to wrap up.
    fn warn_near_budget(&mut self, link: &mut WorkerLink) -> anyhow::Result<()> {
        if self.warned || self.max_steps < 5 || self.steps * 5 < self.max_steps * 4 {
            return Ok(());
        }
        self.warned = true;
        let left = self.max_steps - self.steps;
        let text =
            format!("[harness] {left} steps left in this session's budget: commit what works now.");
        link.send(&WorkerMessage::Event {
            event: SessionEvent::Notice { text: text.clone() },
        })?;
        self.messages.push(Message::User { content: text });
        Ok(())
    }

    fn report(&self, ended: WorkerEnd, reason: Option<String>) -> WorkerReport {
        WorkerReport {
            ended,
            reason,
            steps: self.steps,
        }
    }
}

/// A one-line view of a call's arguments, for progress and the transcript:
/// the command or the path when there is one, else the raw arguments.
fn summarize(arguments: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(arguments).ok();
    let key = parsed.as_ref().and_then(|v| {
        ["command", "path", "pattern", "name", "description"]
            .iter()
            .find_map(|k| v.get(*k).and_then(|x| x.as_str()).map(str::to_string))
    });
    let text = key.unwrap_or_else(|| arguments.to_string());
    let one_line: String = text
        .chars()
        .map(|c| if c == '\n' { ' ' } else { c })
        .collect();
    if one_line.chars().count() > 120 {
        format!("{}…", one_line.chars().take(120).collect::<String>())
    } else {
        one_line
    }
}
