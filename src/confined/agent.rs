//! The agent loop: model, tool calls, results, model, until the model stops
//! calling tools and the harness's checks pass, or a budget or a loop ends it.
//!
//! The loop answers the harness tools itself (write_todos, read_skill, task),
//! because they need its state, and hands every other call to the tool
//! registry. A subagent is the same loop with a fresh context, read-only
//! tools and its own step budget.

use std::time::{Duration, Instant};

use super::budget::Budget;
use super::checks::{self, SessionChecks};
use super::context::{ContextPolicy, Conversation};
use super::loops::LoopDetector;
use super::skills::{self, Skill};
use super::subagent;
use super::todos::{self, Todos};
use crate::broker::{OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage};
use crate::config::HarnessSettings;
use crate::confined::tools::{Registry, ToolContext, ToolOutput};
use crate::model::{ChatRequest, ChatResponse, Message, ModelErrorKind, ToolCall, ToolSpec};

/// What a loop runs with, shared by a session and its subagents.
#[derive(Clone, Copy)]
pub struct Harness<'a> {
    pub registry: &'a Registry,
    /// The tools a subagent gets: they only look.
    pub read_only: &'a Registry,
    pub ctx: &'a ToolContext,
    pub settings: &'a HarnessSettings,
    pub skills: &'a [Skill],
    /// The checks run before the end; None for subagents.
    pub checks: Option<&'a SessionChecks>,
}

/// How a loop ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub ended: WorkerEnd,
    pub reason: Option<String>,
    /// The model's last text.
    pub text: String,
}

/// Where a step leaves the loop.
enum Flow {
    Continue,
    End(Outcome),
}

pub struct AgentLoop<'a> {
    harness: Harness<'a>,
    subagent: bool,
    conversation: Conversation,
    budget: Budget,
    loops: LoopDetector,
    todos: Todos,
    loop_notices: u32,
    check_rounds: u32,
    last_text: String,
    /// The orchestrator asked the session to stop: no more check rounds.
    stopping: bool,
    /// Time spent waiting for the model and in tools: the rest is the harness's own.
    waiting: Duration,
}

impl<'a> AgentLoop<'a> {
    /// The session's loop: every tool, the harness tools and the checks.
    pub fn session(
        harness: Harness<'a>,
        budget: Budget,
        system: String,
        first_message: String,
    ) -> AgentLoop<'a> {
        let mut tools = harness.registry.specs();
        tools.push(todos::spec());
        if !harness.skills.is_empty() {
            tools.push(skills::spec());
        }
        tools.push(subagent::spec());
        AgentLoop::new(harness, false, budget, system, tools, first_message)
    }

    fn subagent(parent: &AgentLoop<'a>, prompt: String) -> AgentLoop<'a> {
        let harness = Harness {
            registry: parent.harness.read_only,
            checks: None,
            ..parent.harness
        };
        let tools = harness.registry.specs();
        let budget = parent.budget.for_subagent(harness.settings.subagent_steps);
        let system = subagent::SYSTEM_PROMPT.to_string();
        AgentLoop::new(harness, true, budget, system, tools, prompt)
    }

    fn new(
        harness: Harness<'a>,
        subagent: bool,
        budget: Budget,
        system: String,
        tools: Vec<ToolSpec>,
        first_message: String,
    ) -> AgentLoop<'a> {
        let s = harness.settings;
        let policy = ContextPolicy {
            manage: s.manage_context,
            keep_turns: s.keep_turns,
            compact_threshold: s.compact_threshold(),
            compact_keep_turns: s.compact_keep_turns,
        };
        AgentLoop {
            conversation: Conversation::new(system, tools, first_message, policy),
            loops: LoopDetector::new(s.loop_repeats, s.loop_edits),
            harness,
            subagent,
            budget,
            todos: Todos::default(),
            loop_notices: 0,
            check_rounds: 0,
            last_text: String::new(),
            stopping: false,
            waiting: Duration::ZERO,
        }
    }

    pub fn steps(&self) -> u32 {
        self.budget.steps()
    }

    /// Time spent outside the model and the tools since `started`.
    pub fn harness_time(&self, started: Instant) -> Duration {
        started.elapsed().saturating_sub(self.waiting)
    }

    /// Run until the model is done and the checks pass, or a limit ends it.
    pub fn run(&mut self, link: &mut WorkerLink) -> anyhow::Result<Outcome> {
        loop {
            if let Flow::End(outcome) = self.step(link)? {
                return Ok(outcome);
            }
        }
    }

    fn step(&mut self, link: &mut WorkerLink) -> anyhow::Result<Flow> {
        if let Some(reason) = self.budget.exhausted() {
            return Ok(Flow::End(self.end(WorkerEnd::Incomplete, Some(reason))));
        }
        if let Some(text) = self.budget.warning() {
            self.notice(link, text)?;
        }
        if self.conversation.needs_compaction() {
            self.compact(link, false)?;
        }
        let (response, notice) = match self.ask_model(link)? {
            Ok(answer) => answer,
            Err(message) => {
                let reason = Some(format!("model: {message}"));
                return Ok(Flow::End(self.end(WorkerEnd::Failed, reason)));
            }
        };
        let calls = response.tool_calls;
        self.stopping |= notice.is_some();
        self.last_text = response.text.clone();
        self.conversation
            .push_assistant(response.text, &calls, describe);
        if calls.is_empty() {
            return self.before_end(link);
        }
        let flow = self.run_calls(link, &calls)?;
        if let Some(text) = notice {
            self.conversation.push_user(text);
        }
        Ok(flow)
    }

    /// Ask the model for the next turn. A context-length error compacts and retries once.
    fn ask_model(
        &mut self,
        link: &mut WorkerLink,
    ) -> anyhow::Result<Result<(ChatResponse, Option<String>), String>> {
        self.budget.step();
        let mut retried = false;
        loop {
            let bytes = self.conversation.request_bytes();
            match self.ask(link, self.conversation.request())? {
                OrchestratorMessage::ModelResponse { response, notice } => {
                    self.conversation
                        .calibrate(bytes, response.usage.input_tokens);
                    return Ok(Ok((response, notice)));
                }
                OrchestratorMessage::ModelError {
                    kind: ModelErrorKind::ContextLength,
                    ..
                } if !retried => {
                    retried = true;
                    self.compact(link, true)?;
                }
                OrchestratorMessage::ModelError { message, .. } => return Ok(Err(message)),
            }
        }
    }

    /// One model call; what it spent goes on the budget.
    fn ask(
        &mut self,
        link: &mut WorkerLink,
        request: ChatRequest,
    ) -> anyhow::Result<OrchestratorMessage> {
        let started = Instant::now();
        let answer = link.ask(request)?;
        self.waiting += started.elapsed();
        if let OrchestratorMessage::ModelResponse { response, .. } = &answer {
            self.budget.spend(response.usage, response.cost_usd);
        }
        Ok(answer)
    }

    /// The same model writes a handoff summary; the session goes on from it.
    /// `refused`: the provider refused the conversation as too long.
    fn compact(&mut self, link: &mut WorkerLink, refused: bool) -> anyhow::Result<()> {
        let tokens_before = self.conversation.estimated_tokens();
        let request = self.conversation.compaction_request(refused);
        let summary = match self.ask(link, request)? {
            OrchestratorMessage::ModelResponse { response, .. } => response.text,
            // Too long even to summarize, or the model failed: the harness's own record will do.
            OrchestratorMessage::ModelError { .. } => String::new(),
        };
        let todos = if self.todos.is_empty() {
            String::new()
        } else {
            format!("\n{}", self.todos.render())
        };
        self.conversation.compact(&summary, &todos);
        let tokens_after = self.conversation.estimated_tokens();
        self.event(
            link,
            SessionEvent::Compacted {
                tokens_before,
                tokens_after,
            },
        )
    }

    fn run_calls(&mut self, link: &mut WorkerLink, calls: &[ToolCall]) -> anyhow::Result<Flow> {
        let mut looping = None;
        for call in calls {
            let started = Instant::now();
            let out = self.dispatch(link, call)?;
            self.waiting += started.elapsed();
            let name = match self.subagent {
                true => format!("task/{}", call.name),
                false => call.name.clone(),
            };
            let event = SessionEvent::ToolCall {
                step: self.budget.steps(),
                name,
                summary: summarize(&call.arguments),
                is_error: out.is_error,
            };
            self.event(link, event)?;
            let seen = self.observe(call, &out);
            looping = looping.or(seen);
            self.conversation.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: out.content,
                is_error: out.is_error,
            });
        }
        if !self.todos.is_empty() {
            let list = format!("\n\n[harness] {}", self.todos.render());
            self.conversation.append_to_last_result(&list);
        }
        self.conversation.stub_old_results();
        match looping {
            Some(what) => self.on_loop(link, what),
            None => Ok(Flow::Continue),
        }
    }

    /// The harness tools first, then the registry.
    fn dispatch(&mut self, link: &mut WorkerLink, call: &ToolCall) -> anyhow::Result<ToolOutput> {
        let harness_tool =
            !self.subagent && matches!(call.name.as_str(), "write_todos" | "read_skill" | "task");
        if !harness_tool {
            return Ok(self.dispatch_registry(call));
        }
        let args = match parse_args(&call.arguments) {
            Ok(v) => v,
            Err(e) => return Ok(error(e)),
        };
        let result = match call.name.as_str() {
            "write_todos" => self.todos.write(&args),
            "read_skill" => match args.get("name").and_then(|v| v.as_str()) {
                Some(name) => skills::read(self.harness.skills, name),
                None => Err(anyhow::anyhow!("read_skill takes {{\"name\": \"...\"}}")),
            },
            _ => self.run_task(link, &args),
        };
        Ok(match result {
            Ok(content) => ToolOutput {
                content,
                is_error: false,
            },
            Err(e) => error(format!("{e:#}")),
        })
    }

    fn dispatch_registry(&self, call: &ToolCall) -> ToolOutput {
        self.harness
            .registry
            .dispatch(self.harness.ctx, &call.name, &call.arguments)
    }

    /// `task`: run a subagent to its final answer.
    fn run_task(
        &mut self,
        link: &mut WorkerLink,
        args: &serde_json::Value,
    ) -> anyhow::Result<String> {
        let field = |k: &str| args.get(k).and_then(|v| v.as_str()).map(str::to_string);
        let (Some(description), Some(prompt)) = (field("description"), field("prompt")) else {
            anyhow::bail!("task takes {{\"description\": \"...\", \"prompt\": \"...\"}}");
        };
        self.event(
            link,
            SessionEvent::Notice {
                text: format!("task started: {description}"),
            },
        )?;
        let mut child = AgentLoop::subagent(self, prompt);
        let outcome = child.run(link)?;
        self.budget.absorb(&child.budget);
        self.stopping |= child.stopping;
        self.event(
            link,
            SessionEvent::Notice {
                text: format!("task finished in {} steps: {description}", child.steps()),
            },
        )?;
        Ok(match (outcome.ended, outcome.reason) {
            (WorkerEnd::Completed, _) => outcome.text,
            (_, reason) => format!(
                "[the subagent stopped before answering: {}]\n{}",
                reason.unwrap_or_default(),
                outcome.text
            ),
        })
    }

    /// Feed the loop detector; returns what repeats when a loop is found.
    fn observe(&mut self, call: &ToolCall, out: &ToolOutput) -> Option<String> {
        let args = parse_args(&call.arguments).ok();
        let arg = |k: &str| {
            args.as_ref()
                .and_then(|a| a.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let mut found = self
            .loops
            .call(&call.name, &call.arguments, &summarize(&call.arguments));
        match call.name.as_str() {
            "write_file" | "edit_file" if !out.is_error => {
                if let Some(path) = arg("path") {
                    let content = std::fs::read(self.harness.ctx.workspace.join(&path));
                    let seen = self.loops.wrote(&path, &content.unwrap_or_default());
                    found = found.or(seen);
                }
            }
            "bash" => {
                let command = arg("command").unwrap_or_default();
                if out.is_error || command_failed(&out.content) {
                    found = found.or(self.loops.failed(&command, &out.content));
                } else {
                    self.loops.passed(&command);
                }
            }
            _ => {}
        }
        found
    }

    /// The first loop gets a notice and a clean slate; the second ends the session.
    fn on_loop(&mut self, link: &mut WorkerLink, what: String) -> anyhow::Result<Flow> {
        self.loop_notices += 1;
        let ending = self.loop_notices >= 2;
        self.event(
            link,
            SessionEvent::LoopDetected {
                what: what.clone(),
                ending,
            },
        )?;
        if ending {
            let reason = format!("incomplete: stuck in a loop: {what}");
            return Ok(Flow::End(self.end(WorkerEnd::Incomplete, Some(reason))));
        }
        self.loops.reset();
        self.conversation.push_user(format!(
            "[harness] Loop detected: {what}. Doing it again will not give a different result. \
             Stop and re-read the last error and your assumptions, then try a different approach. \
             Another loop ends this session."
        ));
        Ok(Flow::Continue)
    }

    /// The model stopped calling tools: run the checks while rounds remain.
    fn before_end(&mut self, link: &mut WorkerLink) -> anyhow::Result<Flow> {
        if self.stopping {
            let reason = Some("stopped: the run was interrupted".to_string());
            return Ok(Flow::End(self.end(WorkerEnd::Stopped, reason)));
        }
        let rounds = self.harness.settings.check_rounds;
        let Some(checks) = self.harness.checks.filter(|_| self.check_rounds < rounds) else {
            return Ok(Flow::End(self.end(WorkerEnd::Completed, None)));
        };
        let results = checks.run(&self.harness.ctx.workspace);
        let mut looping = None;
        for r in &results {
            self.event(
                link,
                SessionEvent::CheckResult {
                    name: r.name.clone(),
                    passed: r.passed,
                    output_tail: r.output.clone(),
                },
            )?;
            match r.passed {
                true => self.loops.passed(&r.name),
                false => looping = looping.or(self.loops.failed(&r.name, &r.output)),
            }
        }
        let failed: Vec<&checks::CheckOutcome> = results.iter().filter(|r| !r.passed).collect();
        if failed.is_empty() {
            return Ok(Flow::End(self.end(WorkerEnd::Completed, None)));
        }
        self.check_rounds += 1;
        let summary = checks::summary(&failed, self.check_rounds, rounds);
        self.conversation.push_user(summary);
        match looping {
            Some(what) => self.on_loop(link, what),
            None => Ok(Flow::Continue),
        }
    }

    fn notice(&mut self, link: &mut WorkerLink, text: String) -> anyhow::Result<()> {
        self.event(link, SessionEvent::Notice { text: text.clone() })?;
        self.conversation.push_user(text);
        Ok(())
    }

    fn event(&self, link: &mut WorkerLink, event: SessionEvent) -> anyhow::Result<()> {
        link.send(&WorkerMessage::Event { event })
    }

    fn end(&self, ended: WorkerEnd, reason: Option<String>) -> Outcome {
        Outcome {
            ended,
            reason,
            text: self.last_text.clone(),
        }
    }
}

/// A bash result whose command exited non-zero, timed out or was killed.
fn command_failed(content: &str) -> bool {
    let last = content.lines().last().unwrap_or("");
    last.starts_with("[exit code ")
        || last.starts_with("[timed out")
        || last == "[killed by a signal]"
}

fn parse_args(raw: &str) -> Result<serde_json::Value, String> {
    let text = if raw.trim().is_empty() { "{}" } else { raw };
    serde_json::from_str(text)
        .map_err(|e| format!("the arguments are not valid JSON ({e}); send a JSON object"))
}

fn error(message: String) -> ToolOutput {
    ToolOutput {
        content: format!("Error: {message}"),
        is_error: true,
    }
}

/// `name summary`, how a call is named in stubs and fallback summaries.
fn describe(call: &ToolCall) -> String {
    format!("{} {}", call.name, summarize(&call.arguments))
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
