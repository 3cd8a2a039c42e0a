//! The agent loop: model, tool calls, results, model, until the model stops
//! calling tools and the harness's checks pass, or a budget or a loop ends it.
//!
//! The loop answers the harness tools itself (write_todos, read_skill, task),
//! because they need its state, and hands every other call to the tool
//! registry. A subagent is the same loop with a fresh context, read-only
//! tools and its own step budget.

use std::path::Path;
use std::time::{Duration, Instant};

use super::budget::Budget;
use super::checks::{self, SessionChecks};
use super::context::{ContextPolicy, Conversation};
use super::edit_check::EditCheck;
use super::loops::LoopDetector;
use super::prompt::{self, AttemptSystem};
use super::skills::{self, Skill};
use super::subagent;
use super::text_calls;
use super::text_edits;
use super::todos::{self, Todos};
use crate::broker::{
    OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage, RECOVERED_ID_PREFIX,
};
use crate::config::{EditFormat, HarnessSettings};
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
    /// Whole-file sessions: the message to start again from, given what the
    /// failing check said, when the model keeps running the check instead of
    /// writing code (None: no file to write).
    pub refocus: Option<&'a Refocus<'a>>,
    /// Whole-file sessions with a `[harness] retry_temperature`: the
    /// message the next attempt starts from, given what the best attempt's
    /// check said and the attempt's number (None: no file to write).
    pub attempt: Option<&'a Attempt<'a>>,
    /// The system prompts of those attempts.
    pub attempt_system: Option<&'a AttemptSystem>,
}

/// Makes the message a whole-file session's next attempt starts from,
/// given the best attempt so far and the attempt's number.
pub type Attempt<'a> = dyn Fn(&AttemptFrom, u32) -> Option<String> + 'a;

/// The best attempt so far, for the next attempt's message.
#[derive(Debug, Default)]
pub struct AttemptFrom<'s> {
    /// What the check said on it (None: nothing was checked yet).
    pub failing: Option<&'s str>,
    /// Its files, when it makes other features' checks pass: the next
    /// attempt (when not written anew) builds on it.
    pub best: Option<super::edit_check::BestFiles>,
    /// What the last attempt broke, when its own check passed there.
    pub last_broke: Option<&'s str>,
    /// An attempt shown the files as found wrote them back unchanged.
    pub found_echoed: bool,
    /// `best` is what the last attempt wrote: the next builds on it
    /// whatever its number (in the lift run the 1.5B model's nearest
    /// misses came late in a session, and the next attempt, written anew,
    /// was its last).
    pub best_fresh: bool,
}

/// Makes the message a whole-file session starts again from, given what
/// its failing check said; None when there is no file to write.
pub type Refocus<'a> = dyn Fn(&str) -> Option<String> + 'a;

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
    /// Turns in a row that changed no file (whole-file sessions: two while
    /// the check fails start the conversation again from the files).
    idle_turns: u32,
    /// Times the conversation was started again from the files (at most [`MAX_REFOCUS`]).
    refocused: u32,
    /// Attempts started again after one left the check failing.
    attempts: u32,
    /// The temperature of this loop's requests, once it is not the configured one.
    temperature: Option<f64>,
    /// The conversation is an attempt (a whole-file session's message to
    /// write the files): its requests carry no tools and the attempt's
    /// system prompt, since the harness writes the files and runs the
    /// check. Listed tools are something a small model sampled hot answers
    /// with, in place of code.
    attempting: bool,
}

/// Fresh starts a whole-file session gets when its model keeps changing
/// nothing while the check fails; after that the loop detector and the
/// budget decide.
const MAX_REFOCUS: u32 = 2;

/// Where an attempt's answer is cut: every harness message starts with it,
/// and a small model sampled hot sometimes answers by writing the attempt's
/// message out again (the whole test file with it) before any code, which
/// at 7 tokens/s is minutes of a session. Cut there, the answer holds no
/// file and the next attempt starts.
const ATTEMPT_STOP: &str = "[harness]";

/// Also where an attempt's answer is cut: the headings of the attempt
/// message's file groups, which the model sometimes writes out again after
/// its code (its code is already in; what follows is the message again).
/// After a line break only, so an answer that opens with one is not emptied.
fn attempt_stops() -> Vec<String> {
    let echoes = [prompt::TO_CHANGE_HEADING, prompt::READ_ONLY_HEADING];
    std::iter::once(ATTEMPT_STOP.to_string())
        .chain(echoes.map(|h| format!("\n{h}")))
        .collect()
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
            idle_turns: 0,
            refocused: 0,
            attempts: 0,
            temperature: None,
            attempting: false,
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
            // The same request at the same temperature runs away the same way.
            if let Some(t) = self.harness.settings.retry_temperature {
                self.temperature = Some(t);
            }
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
            let answer = self.last_text.clone();
            self.note_blocks_unchanged(&answer);
        }
        if let Some(why) = cut
            .as_deref()
            .filter(|_| self.attempt_after_nothing().is_none())
        {
            // A whole-file attempt that wrote nothing is followed by the
            // next attempt; any other session hears why and goes on.
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
            request.temperature = self.temperature;
            if let Some(system) = self.harness.attempt_system.filter(|_| self.attempting) {
                request.tools.clear();
                request.system = match self.attempts {
                    0 => system.first.clone(),
                    _ => system.later.clone(),
                };
                request.stop = attempt_stops();
            }
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

    /// A block's path as the session's file to change when it is none of
    /// them and no file of the workspace, but ends in the file name of
    /// exactly one of them (`path/to/roman.py` for `roman.py`: small
    /// models put a directory of their own, or of an example, before it).
    fn file_to_change(&self, path: String) -> String {
        let files = self.harness.files_to_change;
        if files.contains(&path) || self.harness.ctx.workspace.join(&path).exists() {
            return path;
        }
        let name = Path::new(&path).file_name();
        let mut same = files.iter().filter(|f| Path::new(f).file_name() == name);
        match (same.next(), same.next()) {
            (Some(file), None) => file.clone(),
            _ => path,
        }
    }

    /// The files to change written in blocks not headed by their path, for
    /// an answer with no headed block: the one file's block in its language
    /// ([`text_edits::unnamed_block_for`]), else the looser forms of
    /// [`text_edits::loose_blocks`].
    fn unheaded_blocks(&self, text: &str) -> Vec<text_edits::FileBlock> {
        let files = self.harness.files_to_change;
        if let [file] = files {
            if let Some(b) = text_edits::unnamed_block_for(text, file) {
                return vec![b];
            }
        }
        text_edits::loose_blocks(text, files)
    }

    /// Tool calls the model wrote in its text, and (in whole-file mode) file
    /// blocks headed by a path, as calls to run; None when there are none.
    fn recover(&self, text: &str) -> Option<Recovery> {
        let settings = self.harness.settings;
        let mut found: Vec<(std::ops::Range<usize>, ToolCall)> = Vec::new();
        let mut found_in = Vec::new();
        if settings.text_calls() {
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
        let mut elided = Vec::new();
        let whole_file = !self.subagent && settings.edit_format() == EditFormat::WholeFile;
        if whole_file {
            for mut b in text_edits::file_blocks(text) {
                if found.iter().any(|(span, _)| overlaps(span, &b.span)) {
                    continue;
                }
                b.path = self.file_to_change(b.path);
                if b.elided {
                    elided.push(b.path);
                    continue;
                }
                let now = std::fs::read(self.harness.ctx.workspace.join(&b.path)).ok();
                if now.as_deref() == Some(b.content.as_bytes()) {
                    continue;
                }
                let args = serde_json::json!({"path": b.path, "content": b.content});
                found.push((b.span, call("write_file", args.to_string())));
                if !found_in.contains(&FILE_BLOCK) {
                    found_in.push(FILE_BLOCK);
                }
            }
        }
        // Asked for its one file, a small model often writes the code
        // without the path line: a block in that file's language is that file.
        // Nor do small models always head a block the usual way.
        if found.is_empty() && elided.is_empty() && whole_file {
            for b in self.unheaded_blocks(text) {
                let now = std::fs::read(self.harness.ctx.workspace.join(&b.path)).ok();
                match b.elided {
                    true => elided.push(b.path),
                    false if now.as_deref() == Some(b.content.as_bytes()) => {}
                    false => {
                        let args = serde_json::json!({"path": b.path, "content": b.content});
                        found.push((b.span, call("write_file", args.to_string())));
                        if !found_in.contains(&FILE_BLOCK) {
                            found_in.push(FILE_BLOCK);
                        }
                    }
                }
            }
        }
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
        self.note_attempt_written(calls);
        if let Some(first) = self.next_attempt(calls) {
            return self.start_attempt(link, first, "the last one left the check failing");
        }
        if let Some(first) = self.stuck(changed) {
            return self.refocus(link, first);
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
        let how = match (self.harness.settings.edit_format(), names.is_empty()) {
            (EditFormat::WholeFile, false) => format!(
                "reply with the complete new {names} in a fenced code block, the file's path alone on the line before it"
            ),
            (EditFormat::WholeFile, true) => "reply with each file you change, complete, in a fenced code block, \
                 the file's path alone on the line before it"
                .to_string(),
            (EditFormat::Tools, false) => format!("change {names} with `write_file` or `edit_file`"),
            (EditFormat::Tools, true) => "change the code with `write_file` or `edit_file`".to_string(),
        };
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

    /// During a whole-file attempt, an answer that wrote nothing: when it
    /// holds a file to change as it is (a block the same as the file is no
    /// edit), the edit check notes whether that is the files as found.
    fn note_blocks_unchanged(&mut self, answer: &str) {
        let whole_file = self.harness.settings.edit_format() == EditFormat::WholeFile;
        if self.subagent || !self.attempting || !whole_file {
            return;
        }
        let workspace = &self.harness.ctx.workspace;
        let same = |path: &str, content: &str| {
            std::fs::read(workspace.join(path)).is_ok_and(|now| now == content.as_bytes())
        };
        let mut blocks = text_edits::file_blocks(answer)
            .into_iter()
            .map(|b| (self.file_to_change(b.path), b.content))
            .collect::<Vec<_>>();
        if blocks.is_empty() {
            blocks.extend(
                self.unheaded_blocks(answer)
                    .into_iter()
                    .map(|b| (b.path, b.content)),
            );
        }
        let unchanged = blocks.iter().any(|(path, content)| same(path, content));
        if let Some(edit_check) = self.edit_check.as_mut().filter(|_| unchanged) {
            edit_check.attempt_wrote(workspace);
        }
    }

    /// During an attempt, a turn that wrote files: the edit check notes
    /// when they are the files as the session found them.
    fn note_attempt_written(&mut self, calls: &[ToolCall]) {
        let wrote = calls
            .iter()
            .any(|c| matches!(c.name.as_str(), "write_file" | "edit_file"));
        let workspace = &self.harness.ctx.workspace;
        if let Some(edit_check) = self
            .edit_check
            .as_mut()
            .filter(|_| wrote && self.attempting)
        {
            edit_check.attempt_wrote(workspace);
        }
    }

    /// Whole-file sessions with a retry temperature: a turn that wrote a
    /// file and left the check failing (or wrote the same file again) ends
    /// the attempt; the next starts from the files and the best attempt's
    /// failures. Returns that message.
    fn next_attempt(&self, calls: &[ToolCall]) -> Option<String> {
        let attempt = self.harness.attempt?;
        let edit_check = self.edit_check.as_ref()?;
        let wrote = calls
            .iter()
            .any(|c| matches!(c.name.as_str(), "write_file" | "edit_file"));
        // During an attempt the check failed where it started, so a file
        // written the same as it was (nothing changed, the check not run
        // again) leaves it failing too: at temperature 0 the 1.5B model
        // wrote the file it was shown, unchanged, four times in a row.
        let failing = edit_check.failing() || (self.attempting && !edit_check.passed());
        if self.subagent || !wrote || !failing {
            return None;
        }
        attempt(&self.attempt_from(edit_check), self.attempts + 2)
    }

    /// The best attempt so far, as the next attempt's message shows it.
    fn attempt_from<'e>(&self, edit_check: &'e EditCheck) -> AttemptFrom<'e> {
        let workspace = &self.harness.ctx.workspace;
        let best = self.harness.checks.and_then(|checks| {
            let at_start = checks.passing_at_start(workspace);
            edit_check.best_to_build_on(workspace, at_start, self.harness.files_to_change)
        });
        let step = self.budget.steps();
        AttemptFrom {
            failing: edit_check.best_failing(),
            best_fresh: best.as_ref().is_some_and(|b| b.step > 0 && b.step == step),
            best,
            last_broke: edit_check.last_broke(),
            found_echoed: edit_check.found_echoed(),
        }
    }

    /// Whole-file sessions with a retry temperature: an answer that wrote
    /// no file while the feature's check fails is an attempt that came to
    /// nothing (a small model sampled hot sometimes answers with prose or
    /// its tool list). The next attempt starts instead of the check rounds.
    fn attempt_after_nothing(&self) -> Option<String> {
        let attempt = self.harness.attempt?;
        let edit_check = self.edit_check.as_ref()?;
        if self.subagent || !self.attempting || edit_check.passed() {
            return None;
        }
        attempt(&self.attempt_from(edit_check), self.attempts + 2)
    }

    /// The feature's check fails on the files as the session found them,
    /// as `outcome` says: they are the first best state
    /// ([`EditCheck::start_from`]).
    pub fn start_from(&mut self, outcome: &super::checks::CheckOutcome) {
        if let (Some(edit_check), Some(checks)) = (self.edit_check.as_mut(), self.harness.checks) {
            edit_check.start_from(checks, &self.harness.ctx.workspace, outcome);
        }
    }

    /// This session's first message is its first attempt.
    pub fn first_message_is_an_attempt(&mut self) {
        self.attempting = true;
    }

    /// Whole-file sessions where the harness commits: before the model is
    /// asked, the best work of the latest sessions not accepted (what they
    /// changed from main, sent by the orchestrator) is tried like an
    /// attempt, the files the feature names and nothing else. One that
    /// passes this feature's check and keeps every other that passed is
    /// committed, and the session needs no model call (returns what was
    /// done). Otherwise the files are put back as found, and the best of
    /// them is the session's best state so far: when it makes other
    /// features' checks pass, the attempts that build on the best start
    /// from it ([`prompt::attempt_builds_on_best`]). A session that ran out
    /// of time right after its model wrote such a file no longer loses it.
    pub fn try_earlier_work(
        &mut self,
        link: &mut WorkerLink,
        work: &[crate::protocol::EarlierWork],
    ) -> anyhow::Result<Option<String>> {
        let (Some(edit_check), Some(checks)) = (self.edit_check.as_mut(), self.harness.checks)
        else {
            return Ok(None);
        };
        if !self.harness.settings.commit_when_passing() || self.harness.attempt.is_none() {
            return Ok(None);
        }
        let workspace = self.harness.ctx.workspace.clone();
        let names = self.harness.files_to_change;
        // Each file as found, with its mode, to put back; never through a
        // symlink (one that is not a regular file: nothing is tried).
        let tree = crate::fsutil::Beneath::open(&workspace)?;
        let mut found = Vec::new();
        for name in names {
            let Ok(body) = tree.read(Path::new(name)) else {
                return Ok(None);
            };
            let mode = std::fs::symlink_metadata(workspace.join(name)).map_or(0o644, |m| {
                std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777
            });
            found.push((name, body, mode));
        }
        let mut tried = Vec::new();
        let mut seen: Vec<Vec<&(String, String)>> = Vec::new();
        for earlier in work {
            let files: Vec<&(String, String)> = earlier
                .files
                .iter()
                .filter(|(path, _)| names.contains(path))
                .collect();
            // A session keeps the state it tried from an earlier one when
            // that is the one to build on: the same files, checked once.
            if files.is_empty() || seen.contains(&files) {
                continue;
            }
            seen.push(files.clone());
            for (path, text) in &files {
                let mode = found.iter().find(|f| f.0 == path).map_or(0o644, |f| f.2);
                tree.write(Path::new(path), text.as_bytes(), mode)?;
            }
            tried.push(earlier.session.to_string());
            // The check and the other features' checks, as after an edit.
            edit_check.after_turn(checks, &workspace, 0);
            let committed = checks.base().is_some_and(|base| {
                git2::Repository::open(&workspace)
                    .ok()
                    .and_then(|r| crate::git::head(&r))
                    .is_some_and(|head| head != base)
            });
            if edit_check.passed() && committed {
                let text = format!(
                    "the work of session {} (not accepted) passes this feature's check and keeps the \
                     features that passed: the harness committed it; no model call",
                    earlier.session
                );
                self.event(link, SessionEvent::Notice { text: text.clone() })?;
                return Ok(Some(text));
            }
        }
        if tried.is_empty() {
            return Ok(None);
        }
        for (name, body, mode) in &found {
            match body {
                Some(body) => tree.write(Path::new(name), body, *mode)?,
                None => tree.remove_file(Path::new(name))?,
            }
        }
        edit_check.found_again(&workspace);
        let builds = self.attempt_from_best().best.is_some();
        self.event(
            link,
            SessionEvent::Notice {
                text: format!(
                    "tried the work of session(s) {} (not accepted) before asking the model: \
                     this feature's check still fails{}",
                    tried.join(", "),
                    match builds {
                        true => "; the attempts that build on the best state start from it",
                        false => "",
                    }
                ),
            },
        )?;
        Ok(None)
    }

    /// [`Self::attempt_from`] for the session's edit check.
    fn attempt_from_best(&self) -> AttemptFrom<'_> {
        match self.edit_check.as_ref() {
            Some(edit_check) => self.attempt_from(edit_check),
            None => AttemptFrom::default(),
        }
    }

    /// Start the next attempt from `first`, sampled at the retry temperature.
    /// `why`: how the last attempt ended, for the notice.
    fn start_attempt(
        &mut self,
        link: &mut WorkerLink,
        first: String,
        why: &str,
    ) -> anyhow::Result<Flow> {
        self.attempts += 1;
        self.attempting = true;
        self.idle_turns = 0;
        self.loops.reset();
        self.temperature = self.harness.settings.retry_temperature;
        let at = self
            .temperature
            .map(|t| format!(", sampled at temperature {t}"))
            .unwrap_or_default();
        self.event(
            link,
            SessionEvent::Notice {
                text: format!(
                    "attempt {}: {why}; the conversation starts again \
                     from the files and the best attempt's failures{at}",
                    self.attempts + 1
                ),
            },
        )?;
        self.conversation.restart(first);
        Ok(Flow::Continue)
    }

    /// Whole-file sessions: the second turn in a row that changed no file
    /// while the feature's check fails (the check run again, a commit of
    /// nothing, another look) gets the message to start again from.
    fn stuck(&mut self, changed: bool) -> Option<String> {
        let refocus = self.harness.refocus?;
        self.idle_turns = if changed { 0 } else { self.idle_turns + 1 };
        // Once a streak: the check runs again only at its second idle turn.
        if self.idle_turns != 2 || self.refocused >= MAX_REFOCUS {
            return None;
        }
        let outcome = self
            .harness
            .checks?
            .run_feature(&self.harness.ctx.workspace)
            .filter(|o| !o.passed)?;
        refocus(&super::edit_check::failing_summary(&outcome))
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

    /// The model keeps doing what changes nothing (running the failing
    /// check again, committing nothing): start the conversation again from
    /// `first` (the files, what the check says, one thing to do). Small
    /// models asked once for the code write it; a long conversation of
    /// check runs only makes them run it again.
    fn refocus(&mut self, link: &mut WorkerLink, first: String) -> anyhow::Result<Flow> {
        self.refocused += 1;
        self.idle_turns = 0;
        self.loops.reset();
        self.event(
            link,
            SessionEvent::Notice {
                text: format!(
                    "refocused: two turns in a row changed no file while the check fails; \
                     the conversation starts again from the files and the check's output ({} of {MAX_REFOCUS})",
                    self.refocused
                ),
            },
        )?;
        self.conversation.restart(first);
        Ok(Flow::Continue)
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
        if let Some(first) = self.attempt_after_nothing() {
            return self.start_attempt(link, first, "the last answer wrote no file");
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
        let whole_file = self.harness.settings.edit_format() == EditFormat::WholeFile;
        let how = match whole_file {
            true => "write each file whole in a fenced code block with its path alone on the line before, and call `bash` to run commands and commit",
            false => "call `write_file` or `edit_file` to change files and `bash` to run commands and commit",
        };
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

/// A call the harness made from the model's text; its id is set by the caller.
fn call(name: &str, arguments: String) -> ToolCall {
    ToolCall {
        id: String::new(),
        name: name.to_string(),
        arguments,
    }
}

fn overlaps(a: &std::ops::Range<usize>, b: &std::ops::Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
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
