//! The agent loop: model, tool calls, results, model, until the model stops
//! calling tools and the harness's checks pass, or a budget or a loop ends it.
//!
//! The loop holds what every session needs: the conversation, the budget,
//! the tools, the loop detector, the check after edits. What is particular
//! to a kind of model (the request, the edits in an answer's text, when the
//! conversation starts again) is its [`Strategy`]'s. The loop answers the
//! harness tools itself (`agent/harness_tools.rs`) and runs the rounds
//! before the end (`agent/end.rs`). A subagent is the same loop with a
//! fresh context, read-only tools, its own step budget and the `tools`
//! strategy.

mod end;
mod harness_tools;

use std::time::{Duration, Instant};

use super::budget::Budget;
use super::calls::{describe, observe, summarize};
use super::checks::SessionChecks;
use super::context::{ContextPolicy, Conversation};
use super::edit_check::EditCheck;
use super::loops::LoopDetector;
use super::recovery::{recover, runaway_note, shortened, unreadable_note, Recovery};
use super::skills::{self, Skill};
use super::strategy::{Restart, Strategy, Tools, Turn};
use super::subagent;
use super::todos::{self, Todos};
use crate::broker::{OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage};
use crate::config::HarnessSettings;
use crate::confined::tools::{Registry, ToolContext};
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

/// Where an answer leaves the loop: after its calls ran in the usual way
/// (the orchestrator's notice follows them), or otherwise.
enum Answered {
    Ran(Flow),
    Other(Flow),
}

impl From<Answered> for Flow {
    fn from(answered: Answered) -> Flow {
        match answered {
            Answered::Ran(flow) | Answered::Other(flow) => flow,
        }
    }
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
        if let Some(why) = &response.cut {
            self.event(
                link,
                SessionEvent::Notice {
                    text: format!("the harness stopped the answer: {why}"),
                },
            )?;
            self.strategy.answer_cut();
        }
        let flow = self.answered(link, response)?;
        if let Some(text) = notice.filter(|_| matches!(flow, Answered::Ran(_))) {
            self.conversation.push_user(text);
        }
        Ok(flow.into())
    }

    /// What the answer holds runs, or the answer is sent back, or the end nears.
    fn answered(
        &mut self,
        link: &mut WorkerLink,
        response: ChatResponse,
    ) -> anyhow::Result<Answered> {
        let cut = response.cut;
        let mut calls = response.tool_calls;
        let mut text = response.text;
        let recovery = match calls.is_empty() {
            true => recover(
                &text,
                self.harness.settings,
                &self.tool_names,
                self.strategy.as_ref(),
                self.budget.steps(),
            ),
            false => None,
        };
        let recovered = recovery.as_ref().is_some_and(|r| !r.calls.is_empty());
        if let Some(r) = recovery.as_ref().filter(|_| recovered) {
            calls = r.calls.clone();
            text = r.text.clone();
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
                return Ok(Answered::Other(Flow::Continue));
            }
            let flow = self.run_calls(link, &calls, recovered)?;
            self.conversation.push_user(note);
            return Ok(Answered::Other(flow));
        }
        if calls.is_empty() {
            if let Some(note) = self.unreadable(recovery) {
                self.conversation.push_user(note);
                return Ok(Answered::Other(Flow::Continue));
            }
            return Ok(Answered::Other(self.before_end(link)?));
        }
        let flow = self.run_calls(link, &calls, recovered)?;
        let reminder = recovery.as_ref().filter(|_| recovered && !self.reminded);
        if let Some(text) = reminder.and_then(Recovery::reminder) {
            self.reminded = true;
            self.notice(link, text)?;
        }
        Ok(Answered::Ran(flow))
    }

    /// What to tell the model when its answer held something meant to run
    /// that could not be (twice per session at most, then the checks decide).
    fn unreadable(&mut self, recovery: Option<Recovery>) -> Option<String> {
        if self.unreadable_notes >= 2 {
            return None;
        }
        let note = unreadable_note(recovery, self.harness.settings, &self.last_text)?;
        self.unreadable_notes += 1;
        Some(note)
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
            match self.ask_turn(link, request)? {
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
                OrchestratorMessage::ModelCandidates { .. } => {
                    anyhow::bail!("the orchestrator answered one request with candidates")
                }
            }
        }
    }

    /// The next turn's answer: one, or the one the strategy chooses of the
    /// candidates it asks for (at most the steps left).
    fn ask_turn(
        &mut self,
        link: &mut WorkerLink,
        request: ChatRequest,
    ) -> anyhow::Result<OrchestratorMessage> {
        let wanted = self
            .strategy
            .candidates(turn(&mut self.edit_check, &self.budget));
        let count = wanted.min(self.budget.requests_left());
        if count <= 1 || self.subagent {
            return self.ask(link, request);
        }
        let started = Instant::now();
        let temperature = self.harness.settings.retry_temperature;
        let answer = link.ask_candidates(request, count, temperature)?;
        let OrchestratorMessage::ModelCandidates {
            responses,
            asked,
            notice,
        } = answer
        else {
            (0..count).for_each(|_| self.budget.step());
            self.waiting += started.elapsed();
            return Ok(answer);
        };
        // Every candidate is a step, and what each spent counts.
        (0..asked.max(1)).for_each(|_| self.budget.step());
        for r in &responses {
            self.budget.spend(r.usage, r.cost_usd);
        }
        // Judging runs the check once per candidate: time in tools.
        let chosen = self.strategy.choose(&responses);
        self.waiting += started.elapsed();
        if let Some(text) = chosen.notice {
            self.event(link, SessionEvent::Notice { text })?;
        }
        let Some(response) = responses.into_iter().nth(chosen.index) else {
            anyhow::bail!("the orchestrator sent no candidate back");
        };
        Ok(OrchestratorMessage::ModelResponse { response, notice })
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
            OrchestratorMessage::ModelError { .. }
            | OrchestratorMessage::ModelCandidates { .. } => String::new(),
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
            let seen = observe(&mut self.loops, &self.harness.ctx.workspace, call, &out);
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

/// What a strategy is lent of the loop for one decision.
fn turn<'t>(edit_check: &'t mut Option<EditCheck>, budget: &Budget) -> Turn<'t> {
    Turn {
        edit_check: edit_check.as_mut(),
        step: budget.steps(),
    }
}
