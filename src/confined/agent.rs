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
use super::edit_check::EditCheck;
use super::loops::LoopDetector;
use super::skills::{self, Skill};
use super::strategy::{Restart, Strategy, Tools, Turn};
use super::subagent;
use super::text_calls;
use super::todos::{self, Todos};
use crate::broker::{
    OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage, RECOVERED_ID_PREFIX,
};
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
    /// The files the feature names that the session may change.
    pub files_to_change: &'a [String],
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
    /// The names of the tools the model was offered.
    tool_names: Vec<String>,
    /// Tool calls run so far, structured or recovered from the text.
    calls_run: u32,
    /// The model was told once how to call tools, after a call found in its text.
    reminded: bool,
    /// The one nudge for an answer without a call while the check fails was given.
    nudged: bool,
    /// Answers sent back because what they held could not be run (a file
    /// block that left parts out, a call whose JSON does not parse).
    unreadable_notes: u32,
    /// The feature's check after edits, and the best state (sessions only).
    edit_check: Option<EditCheck>,
    /// What is particular to the model: the request, the answer's edits,
    /// when the conversation starts again.
    strategy: Box<dyn Strategy + 'a>,
}

/// What the harness found to run in an answer without structured calls.
struct Recovery {
    calls: Vec<ToolCall>,
    /// The answer without the parts that became calls.
    text: String,
    /// Where the calls were found, for the reminder.
    found_in: Vec<&'static str>,
    /// File blocks not written because they leave parts out.
    elided: Vec<String>,
}

impl<'a> AgentLoop<'a> {
    /// The session's loop: every tool, the harness tools and the checks,
    /// with the model's `strategy`.
    pub fn session(
        harness: Harness<'a>,
        budget: Budget,
        system: String,
        first_message: String,
        strategy: Box<dyn Strategy + 'a>,
    ) -> AgentLoop<'a> {
        let mut tools = harness.registry.specs();
        tools.push(todos::spec());
        if !harness.skills.is_empty() {
            tools.push(skills::spec());
        }
        tools.push(subagent::spec());
        let mut agent = AgentLoop::new(harness, false, budget, system, tools, first_message);
        agent.strategy = strategy;
        agent
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
        let tool_names = tools.iter().map(|t| t.name.clone()).collect();
        let edit_check = match (subagent, harness.checks) {
            (false, Some(checks)) if s.check_after_edit => Some(EditCheck::new(
                checks,
                &harness.ctx.workspace,
                s.commit_when_passing(),
            )),
            _ => None,
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
            tool_names,
            calls_run: 0,
            reminded: false,
            nudged: false,
            unreadable_notes: 0,
            edit_check,
            strategy: Box::new(Tools::new(s)),
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
                self.keep_best(link)?;
                return Ok(outcome);
            }
        }
    }

    /// The features the state this session leaves at its ref makes pass
    /// ([`crate::broker::WorkerReport::passes_others`]).
    pub fn passes_others(&self) -> Vec<String> {
        match (self.edit_check.as_ref(), self.harness.checks) {
            (Some(edit_check), Some(checks)) => {
                let at_start = checks.passing_at_start(&self.harness.ctx.workspace);
                edit_check.kept_passes_others(at_start, checks.feature_id())
            }
            _ => Vec::new(),
        }
    }

    /// A session ending with its check failing keeps its best state, when
    /// that did better than the last.
    fn keep_best(&mut self, link: &mut WorkerLink) -> anyhow::Result<()> {
        let (Some(edit_check), Some(checks)) = (self.edit_check.as_mut(), self.harness.checks)
        else {
            return Ok(());
        };
        let text = match edit_check.keep_best(checks, &self.harness.ctx.workspace, !self.stopping) {
            Ok(Some(done)) => format!("the harness {done}"),
            Ok(None) => return Ok(()),
            Err(e) => format!("the harness could not keep the best state: {e:#}"),
        };
        self.event(link, SessionEvent::Notice { text })
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
            // The compaction was a request too.
            if let Some(reason) = self.budget.exhausted() {
                return Ok(Flow::End(self.end(WorkerEnd::Incomplete, Some(reason))));
            }
        }
        let (response, notice) = match self.ask_model(link)? {
            Ok(answer) => answer,
            Err(message) => {
                let reason = Some(format!("model: {message}"));
                return Ok(Flow::End(self.end(WorkerEnd::Failed, reason)));
            }
        };
        self.stopping |= notice.is_some();
        self.last_text = response.text.clone();
        let cut = response.cut;
        if let Some(why) = &cut {
            self.event(
                link,
                SessionEvent::Notice {
                    text: format!("the harness stopped the answer: {why}"),
                },
            )?;
            self.strategy.answer_cut();
        }
        let mut calls = response.tool_calls;
        let mut text = response.text;
        let recovery = match calls.is_empty() {
            true => self.recover(&text),
            false => None,
        };
        let recovered = recovery.as_ref().is_some_and(|r| !r.calls.is_empty());
        if let Some(r) = &recovery {
            if recovered {
                calls = r.calls.clone();
                text = r.text.clone();
            }
        }
        if let Some(why) = &cut {
            text = shortened(&text, why);
        }
        self.conversation.push_assistant(text, &calls, describe);
        if calls.is_empty() {
            let turn = turn(&mut self.edit_check, &self.budget);
            self.strategy.ran_nothing(&self.last_text, turn);
        }
        let restarts = cut.is_some() && {
            let turn = turn(&mut self.edit_check, &self.budget);
            self.strategy.restarts_after_nothing(turn)
        };
        if let Some(why) = cut.as_deref().filter(|_| !restarts) {
            // When the strategy starts again after an answer that wrote
            // nothing, it does; any other session hears why and goes on.
            let note = runaway_note(why);
            if calls.is_empty() {
                self.conversation.push_user(note);
                return Ok(Flow::Continue);
            }
            let flow = self.run_calls(link, &calls, recovered)?;
            self.conversation.push_user(note);
            return Ok(flow);
        }
        if calls.is_empty() {
            let answer = self.last_text.clone();
            if let Some(note) = self.unreadable(recovery, &answer) {
                self.conversation.push_user(note);
                return Ok(Flow::Continue);
            }
            return self.before_end(link);
        }
        let flow = self.run_calls(link, &calls, recovered)?;
        if let (Some(r), false) = (&recovery, self.reminded) {
            // A file block is how a whole-file model is asked to edit: no reminder for it.
            let as_text: Vec<&str> = r
                .found_in
                .iter()
                .copied()
                .filter(|f| *f != FILE_BLOCK)
                .collect();
            if recovered && !as_text.is_empty() {
                self.reminded = true;
                self.notice(link, reminder(&as_text))?;
            }
        }
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
        let mut retried = false;
        loop {
            let bytes = self.conversation.request_bytes();
            let mut request = self.conversation.request();
            self.strategy.shape(&mut request);
            match self.ask(link, request)? {
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
                    if let Some(reason) = self.budget.exhausted() {
                        return Ok(Err(reason));
                    }
                }
                OrchestratorMessage::ModelError { message, .. } => return Ok(Err(message)),
            }
        }
    }

    /// One model call, one step (the orchestrator counts every request);
    /// what it spent goes on the budget.
    fn ask(
        &mut self,
        link: &mut WorkerLink,
        request: ChatRequest,
    ) -> anyhow::Result<OrchestratorMessage> {
        self.budget.step();
        let started = Instant::now();
        let answer = link.ask(request, self.subagent)?;
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

    /// Tool calls the model wrote in its text, and the files it writes
    /// there as the strategy reads them, as calls to run; None when there
    /// are none.
    fn recover(&self, text: &str) -> Option<Recovery> {
        let mut found: Vec<(std::ops::Range<usize>, ToolCall)> = Vec::new();
        let mut found_in = Vec::new();
        if self.harness.settings.text_calls() {
            let names: Vec<&str> = self.tool_names.iter().map(String::as_str).collect();
            if let Some(f) = text_calls::recover(text, &names) {
                found_in.push(f.format.describe());
                found.extend(
                    f.calls
                        .into_iter()
                        .map(|c| (c.span, call(&c.name, c.arguments))),
                );
            }
        }
        let taken: Vec<std::ops::Range<usize>> = found.iter().map(|(s, _)| s.clone()).collect();
        let files = self.strategy.file_writes(text, &taken);
        if !files.writes.is_empty() {
            found_in.push(FILE_BLOCK);
        }
        found.extend(files.writes);
        let elided = files.elided;
        if found.is_empty() && elided.is_empty() {
            return None;
        }
        found.sort_by_key(|(span, _)| span.start);
        let step = self.budget.steps();
        let spans: Vec<std::ops::Range<usize>> = found.iter().map(|(s, _)| s.clone()).collect();
        let calls = found
            .into_iter()
            .enumerate()
            .map(|(i, (_, mut c))| {
                c.id = format!("{RECOVERED_ID_PREFIX}{step}_{i}");
                c
            })
            .collect();
        Some(Recovery {
            calls,
            text: without(text, &spans),
            found_in,
            elided,
        })
    }

    /// What to tell the model when its answer held something meant to run
    /// that could not be (twice per session at most, then the checks decide).
    fn unreadable(&mut self, recovery: Option<Recovery>, text: &str) -> Option<String> {
        if self.unreadable_notes >= 2 {
            return None;
        }
        let elided = recovery.map(|r| r.elided).unwrap_or_default();
        let note = if !elided.is_empty() {
            elided_note(&elided)
        } else if self.harness.settings.text_calls() && text_calls::looks_like_call(text) {
            MALFORMED_CALL_NOTE.to_string()
        } else {
            return None;
        };
        self.unreadable_notes += 1;
        Some(note)
    }

    fn run_calls(
        &mut self,
        link: &mut WorkerLink,
        calls: &[ToolCall],
        recovered: bool,
    ) -> anyhow::Result<Flow> {
        let mut looping = None;
        for call in calls {
            let started = Instant::now();
            let out = self.dispatch(link, call)?;
            self.waiting += started.elapsed();
            self.calls_run += 1;
            let name = match self.subagent {
                true => format!("task/{}", call.name),
                false => call.name.clone(),
            };
            let event = SessionEvent::ToolCall {
                step: self.budget.steps(),
                name,
                summary: summarize(&call.arguments),
                is_error: out.is_error,
                recovered,
            };
            self.event(link, event)?;
            let seen = self.observe(call, &out);
            looping = looping.or(seen);
            let mut content = out.content;
            if let Some(note) = self.check_run_by_model(call, &content) {
                content.push_str(&note);
            }
            self.conversation.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: out.is_error,
            });
        }
        if !self.todos.is_empty() {
            let list = format!("\n\n[harness] {}", self.todos.render());
            self.conversation.append_to_last_result(&list);
        }
        self.conversation.stub_old_results();
        let changed = self.check_after_edit();
        let turn = turn(&mut self.edit_check, &self.budget);
        if let Some(restart) = self.strategy.after_calls(calls, changed, turn) {
            return self.restart(link, restart);
        }
        match looping {
            Some(what) => self.on_loop(link, what),
            None => Ok(Flow::Continue),
        }
    }

    /// The model ran its feature's check itself and it failed: small models
    /// run it again and again. Say what to do instead, naming the files.
    fn check_run_by_model(&self, call: &ToolCall, output: &str) -> Option<String> {
        let check = self.harness.checks?.feature_check()?;
        let args = parse_args(&call.arguments).ok()?;
        let command = args.get("command").and_then(|v| v.as_str())?;
        if self.subagent || call.name != "bash" || !command_failed(output) {
            return None;
        }
        if !command.contains(check.trim()) {
            return None;
        }
        let names = self
            .harness
            .files_to_change
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let how = self.strategy.how_to_change(&names);
        Some(format!(
            "\n\n[harness] That is your feature's check, and it fails. Running it again changes nothing: \
             {how}. The harness runs the check after every edit and tells you the result."
        ))
    }

    /// After a turn that changed files, the feature's check and what it
    /// says. Returns whether the check ran (the files changed).
    fn check_after_edit(&mut self) -> bool {
        let (Some(edit_check), Some(checks)) = (self.edit_check.as_mut(), self.harness.checks)
        else {
            return false;
        };
        let step = self.budget.steps();
        match edit_check.after_turn(checks, &self.harness.ctx.workspace, step) {
            Some(message) => {
                self.conversation.push_user(message);
                true
            }
            None => false,
        }
    }

    /// The feature's check fails on the files as the session found them,
    /// as `outcome` says: they are the first best state
    /// ([`EditCheck::start_from`]).
    pub fn start_from(&mut self, outcome: &super::checks::CheckOutcome) {
        if let (Some(edit_check), Some(checks)) = (self.edit_check.as_mut(), self.harness.checks) {
            edit_check.start_from(checks, &self.harness.ctx.workspace, outcome);
        }
    }

    /// Before the first model call, what the strategy does without the
    /// model; Some: the session is done, and what was done.
    pub fn before_first_turn(&mut self, link: &mut WorkerLink) -> anyhow::Result<Option<String>> {
        let turn = turn(&mut self.edit_check, &self.budget);
        self.strategy.before_first_turn(link, turn)
    }

    /// The conversation starts again from one message, as the strategy
    /// says: the loop detector forgets, and the notice says why.
    fn restart(&mut self, link: &mut WorkerLink, restart: Restart) -> anyhow::Result<Flow> {
        self.loops.reset();
        self.event(
            link,
            SessionEvent::Notice {
                text: restart.notice,
            },
        )?;
        self.conversation.restart(restart.first);
        Ok(Flow::Continue)
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
        let turn = turn(&mut self.edit_check, &self.budget);
        if let Some(restart) = self.strategy.before_end(turn) {
            return self.restart(link, restart);
        }
        if let Some(flow) = self.nudge(link)? {
            return Ok(flow);
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

    /// Once per session, an answer without a call, in a session that has
    /// run no tool yet while the feature's check fails, is sent back to use
    /// the tools before the check rounds start.
    fn nudge(&mut self, link: &mut WorkerLink) -> anyhow::Result<Option<Flow>> {
        if self.nudged || self.subagent || self.calls_run > 0 {
            return Ok(None);
        }
        let Some(checks) = self.harness.checks else {
            return Ok(None);
        };
        self.nudged = true;
        let Some(outcome) = checks.run_feature(&self.harness.ctx.workspace) else {
            return Ok(None);
        };
        if outcome.passed {
            return Ok(None);
        }
        let command = outcome.command.clone().unwrap_or_default();
        let how = self.strategy.how_to_work();
        self.event(
            link,
            SessionEvent::Notice {
                text: "nudged: no tool was called and the check still fails".into(),
            },
        )?;
        self.conversation.push_user(format!(
            "[harness] No tool was called: your answer held no tool call the harness could run, and the {} (`{command}`) still fails. \
             Nothing changes until you use the tools: {how}. Reply without a tool call only when the work is committed.",
            outcome.name
        ));
        Ok(Some(Flow::Continue))
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

/// Where a whole-file edit was found, as the recovery names it.
const FILE_BLOCK: &str = "a file block headed by its path";

/// What a strategy is lent of the loop for one decision.
fn turn<'t>(edit_check: &'t mut Option<EditCheck>, budget: &Budget) -> Turn<'t> {
    Turn {
        edit_check: edit_check.as_mut(),
        step: budget.steps(),
    }
}

/// A call the harness made from the model's text; its id is set by the caller.
fn call(name: &str, arguments: String) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments,
    }
}

/// `text` without the byte ranges in `spans` (sorted by start, may overlap).
fn without(text: &str, spans: &[std::ops::Range<usize>]) -> String {
    let mut out = String::new();
    let mut at = 0;
    for span in spans {
        if span.start > at {
            out.push_str(&text[at..span.start]);
        }
        at = at.max(span.end);
    }
    out.push_str(&text[at.min(text.len())..]);
    out.trim().to_string()
}

/// A runaway answer as the conversation keeps it: its start and where the
/// harness stopped it, not the repetition (which a small model would take
/// up again).
fn shortened(text: &str, why: &str) -> String {
    const KEPT: usize = 600;
    let mut end = text.len().min(KEPT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n[... the harness stopped this answer here: {why}]",
        &text[..end]
    )
}

fn runaway_note(why: &str) -> String {
    format!(
        "[harness] Your last answer was stopped before its end: {why}. Nothing in it after that was used. \
         Answer again without repeating yourself: where many cases are alike, write a loop or a table, not one case each."
    )
}

/// Once per session, after calls were found in the text.
fn reminder(found_in: &[&str]) -> String {
    format!(
        "[harness] Your answer held tool calls as text ({}), not as tool calls; the harness found them and ran them as if you had called the tools. \
         Call tools directly, through the tool-calling format, with JSON arguments.",
        found_in.join(", ")
    )
}

const MALFORMED_CALL_NOTE: &str = "[harness] Your answer seems to hold a tool call, but the harness could not read it: \
its JSON is not valid (quotes inside a string must be escaped as \\\", newlines as \\n). Nothing was run. \
Call the tool directly, or send the call again as one valid JSON object {\"name\": ..., \"arguments\": {...}}.";

/// File blocks that left parts out were not written.
fn elided_note(paths: &[String]) -> String {
    format!(
        "[harness] The code block for {} leaves parts out (a comment such as `# ... rest unchanged`), so the harness did not write it: \
         a block replaces the whole file. Write the complete file, every line of it.",
        paths.join(", ")
    )
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
