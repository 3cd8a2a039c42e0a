//! The `whole-file` strategy, for small models whose tool calls and
//! exact-text edits break (`[harness] edit_format = "whole-file"`): the
//! model writes each file whole in a fenced block the harness writes; with
//! the check after edits, a model that keeps changing nothing is started
//! again from the files (refocus); with a retry temperature, each answer
//! that leaves the check failing ends an attempt and the next starts from
//! the files and the best attempt's failures, sampled hotter, after the
//! work of earlier sessions was tried.
//!
//! Each rule below names the measurement behind it. They were measured on
//! Qwen2.5-Coder 0.5B and 1.5B over the lift benchmark's tasks only; for
//! other models they are unmeasured.

use std::ops::Range;
use std::path::Path;

use super::attempts::{attempt_from, AttemptFrom, Attempts};
use super::blocks::Blocks;
use super::candidates::Judge;
use super::earlier_work::Trial;
use super::messages;
use super::seam::{Chosen, FileWrites, Restart, Strategy, Turn};
use crate::broker::WorkerLink;
use crate::config::HarnessSettings;
use crate::confined::checks::SessionChecks;
use crate::confined::edit_check::{failing_summary, EditCheck};
use crate::confined::prompt;
use crate::model::{ChatRequest, ChatResponse, ToolCall};
use crate::protocol::WorkerConfig;

/// Fresh starts a whole-file session gets when its model keeps changing
/// nothing while the check fails; after that the loop detector and the
/// budget decide. The 1.5B model in the lift run ran its failing check
/// over and over and never wrote a line; asked once, plainly, for the
/// file, it wrote code (commit 7789655). The number two is unmeasured.
const MAX_REFOCUS: u32 = 2;

/// Where an attempt's answer is cut: every harness message starts with it,
/// and the 1.5B model sampled at 0.8 sometimes answered by writing the
/// attempt's message out again, 700+ tokens (over a minute) before any
/// code (commit 3e16641). Cut there, the answer holds no file and the next
/// attempt starts.
const ATTEMPT_STOP: &str = "[harness]";

/// Also where an attempt's answer is cut: the headings of the attempt
/// message's file groups, which the 1.5B model sometimes wrote out again
/// after its code (commit 7898e8d; not counted). After a line break only,
/// so an answer that opens with one is not emptied.
fn attempt_stops() -> Vec<String> {
    let echoes = [prompt::TO_CHANGE_HEADING, prompt::READ_ONLY_HEADING];
    std::iter::once(ATTEMPT_STOP.to_string())
        .chain(echoes.map(|h| format!("\n{h}")))
        .collect()
}

pub struct WholeFile<'a> {
    config: &'a WorkerConfig,
    workspace: &'a Path,
    checks: &'a SessionChecks,
    settings: &'a HarnessSettings,
    /// The session's files to change.
    files: &'a [String],
    /// Started again from the files when the model changes nothing (the
    /// check after edits is on).
    refocus: bool,
    /// The attempts, when a retry temperature is set.
    attempts: Option<Attempts<'a>>,
    /// The temperature of the requests, once it is not the configured one.
    temperature: Option<f64>,
    /// The conversation is an attempt: its requests carry no tools and the
    /// attempt's system prompt, since the harness writes the files and runs
    /// the check. Listed tools are something a small model sampled hot
    /// answers with, in place of code (unmeasured).
    attempting: bool,
    /// Attempts started again after one left the check failing.
    restarted: u32,
    /// Turns in a row that changed no file (two while the check fails
    /// start the conversation again from the files).
    idle_turns: u32,
    /// Times the conversation was started again from the files (at most [`MAX_REFOCUS`]).
    refocused: u32,
}

impl<'a> WholeFile<'a> {
    /// `refocus`: the check after edits is on; `attempts`: a retry
    /// temperature is set too; `attempting`: the session's first message is
    /// attempt 1.
    pub fn new(
        config: &'a WorkerConfig,
        workspace: &'a Path,
        checks: &'a SessionChecks,
        files: &'a [String],
        refocus: bool,
        attempts: Option<Attempts<'a>>,
        attempting: bool,
    ) -> WholeFile<'a> {
        WholeFile {
            config,
            workspace,
            checks,
            settings: &config.harness,
            files,
            refocus,
            attempts,
            temperature: None,
            attempting,
            restarted: 0,
            idle_turns: 0,
            refocused: 0,
        }
    }

    fn blocks(&self) -> Blocks<'a> {
        Blocks {
            workspace: self.workspace,
            files: self.files,
        }
    }

    /// The best attempt so far, as the next attempt's message shows it.
    fn attempt_from<'e>(&self, edit_check: &'e EditCheck, step: u32) -> AttemptFrom<'e> {
        let mut from = attempt_from(edit_check, self.checks, self.workspace, self.files, step);
        if self.settings.searches() {
            from.repair = edit_check.best_to_repair(self.workspace, self.files);
        }
        from
    }

    /// The message of the next attempt, given the best so far.
    fn next_message(&self, edit_check: &EditCheck, step: u32) -> Option<String> {
        let attempts = self.attempts.as_ref()?;
        attempts.message(&self.attempt_from(edit_check, step), self.restarted + 2)
    }

    /// An answer that wrote no file while the feature's check fails is an
    /// attempt that came to nothing (the 1.5B model sampled hot answered
    /// with prose or its tool list: 17 of 97 answers in one parse_duration
    /// run, benches/lift/RESULTS.md). The next attempt starts instead of the
    /// check rounds.
    fn after_nothing(&self, turn: &Turn<'_>) -> Option<String> {
        let edit_check = turn.edit_check.as_deref()?;
        if !self.attempting || edit_check.passed() {
            return None;
        }
        self.next_message(edit_check, turn.step)
    }

    /// A turn that wrote a file and left the check failing (or wrote the
    /// same file again) ends the attempt; returns the next one's message.
    fn after_write(&self, calls: &[ToolCall], turn: &Turn<'_>) -> Option<String> {
        self.attempts.as_ref()?;
        let edit_check = turn.edit_check.as_deref()?;
        // During an attempt the check failed where it started, so a file
        // written the same as it was (nothing changed, the check not run
        // again) leaves it failing too: at temperature 0 the 1.5B model
        // wrote the file it was shown, unchanged, four times in a row
        // (commit 7898e8d).
        let failing = edit_check.failing() || (self.attempting && !edit_check.passed());
        if !wrote(calls) || !failing {
            return None;
        }
        self.next_message(edit_check, turn.step)
    }

    /// Start the next attempt from `first`, sampled at the retry
    /// temperature: shown its own file, the 1.5B model wrote the same one
    /// back at temperature 0 (four rounds, byte for byte); restarted from
    /// the stub at 0.8 its answers passed 2, 3, 8, 3 and 3 of 13 tests
    /// (benches/lift/RESULTS.md, "Sampled requests"). `why`: how the last
    /// attempt ended, for the notice.
    fn start_attempt(&mut self, first: String, why: &str) -> Restart {
        self.restarted += 1;
        self.attempting = true;
        self.idle_turns = 0;
        self.temperature = self.settings.retry_temperature;
        let at = self
            .temperature
            .map(|t| format!(", sampled at temperature {t}"))
            .unwrap_or_default();
        Restart {
            first,
            notice: format!(
                "attempt {}: {why}; the conversation starts again \
                 from the files and the best attempt's failures{at}",
                self.restarted + 1
            ),
        }
    }

    /// The second turn in a row that changed no file while the feature's
    /// check fails (the check run again, a commit of nothing, another look)
    /// gets the message to start again from.
    fn stuck(&mut self, changed: bool) -> Option<String> {
        if !self.refocus {
            return None;
        }
        self.idle_turns = if changed { 0 } else { self.idle_turns + 1 };
        // Once a streak: the check runs again only at its second idle turn.
        if self.idle_turns != 2 || self.refocused >= MAX_REFOCUS {
            return None;
        }
        let outcome = self
            .checks
            .run_feature(self.workspace)
            .filter(|o| !o.passed)?;
        messages::refocus_message(
            self.config,
            self.workspace,
            self.files,
            &failing_summary(&outcome),
        )
    }

    /// Start the conversation again from `first` (the files, what the check
    /// says, one thing to do): small models asked once for the code write
    /// it; a long conversation of check runs only makes them run it again.
    fn refocus(&mut self, first: String) -> Restart {
        self.refocused += 1;
        self.idle_turns = 0;
        Restart {
            first,
            notice: format!(
                "refocused: two turns in a row changed no file while the check fails; \
                 the conversation starts again from the files and the check's output ({} of {MAX_REFOCUS})",
                self.refocused
            ),
        }
    }
}

impl Strategy for WholeFile<'_> {
    fn shape(&self, request: &mut ChatRequest) {
        request.temperature = self.temperature;
        if let Some(attempts) = self.attempts.as_ref().filter(|_| self.attempting) {
            request.tools.clear();
            request.system = match self.restarted {
                0 => attempts.system.first.clone(),
                _ => attempts.system.later.clone(),
            };
            request.stop = attempt_stops();
        }
    }

    /// The same request at the same temperature runs away the same way
    /// (the 1.5B model's greedy answer to the roman stub: a branch per
    /// number, 2,048 tokens, 200 s of a 300 s session): the next answer is
    /// sampled at the retry temperature.
    fn answer_cut(&mut self) {
        if let Some(t) = self.settings.retry_temperature {
            self.temperature = Some(t);
        }
    }

    fn file_writes(&self, text: &str, taken: &[Range<usize>]) -> FileWrites {
        self.blocks().writes(text, taken)
    }

    /// During an attempt, an answer holding a file to change as it is (a
    /// block the same as the file is no edit): the edit check notes whether
    /// that is the files as found. The attempts shown the files as found
    /// wrote them back unchanged in nearly every case (commit 83cfe2a).
    fn ran_nothing(&mut self, answer: &str, turn: Turn<'_>) {
        if !self.attempting {
            return;
        }
        if let Some(edit_check) = turn.edit_check {
            if self.blocks().holds_unchanged(answer) {
                edit_check.attempt_wrote(self.workspace);
            }
        }
    }

    fn restarts_after_nothing(&self, turn: Turn<'_>) -> bool {
        self.after_nothing(&turn).is_some()
    }

    fn after_calls(
        &mut self,
        calls: &[ToolCall],
        changed: bool,
        mut turn: Turn<'_>,
    ) -> Option<Restart> {
        // A turn that wrote files: the edit check notes when they are the
        // files as the session found them.
        if let Some(edit_check) = turn.edit_check.as_deref_mut() {
            if wrote(calls) && self.attempting {
                edit_check.attempt_wrote(self.workspace);
            }
        }
        if let Some(first) = self.after_write(calls, &turn) {
            return Some(self.start_attempt(first, "the last one left the check failing"));
        }
        let first = self.stuck(changed)?;
        Some(self.refocus(first))
    }

    fn before_end(&mut self, turn: Turn<'_>) -> Option<Restart> {
        let first = self.after_nothing(&turn)?;
        Some(self.start_attempt(first, "the last answer wrote no file"))
    }

    fn how_to_change(&self, names: &str) -> String {
        match names.is_empty() {
            false => format!(
                "reply with the complete new {names} in a fenced code block, the file's path alone on the line before it"
            ),
            true => "reply with each file you change, complete, in a fenced code block, \
                 the file's path alone on the line before it"
                .to_string(),
        }
    }

    fn how_to_work(&self) -> &'static str {
        "write each file whole in a fenced code block with its path alone on the line before, and call `bash` to run commands and commit"
    }

    /// An attempt while the check fails asks for `[harness] candidates`
    /// answers (attempt 1) or `repair_candidates` (the later ones); the
    /// rest of the session, one.
    fn candidates(&self, turn: Turn<'_>) -> u32 {
        let failing = turn.edit_check.is_some_and(|e| !e.passed());
        if !self.attempting || self.attempts.is_none() || !failing {
            return 1;
        }
        match self.restarted {
            0 => self.settings.candidates,
            _ => self.settings.repair_candidates,
        }
    }

    fn choose(&mut self, answers: &[ChatResponse]) -> Chosen {
        let judge = Judge {
            workspace: self.workspace,
            checks: self.checks,
            files: self.files,
            blocks: self.blocks(),
        };
        judge.choose(answers, self.restarted + 1)
    }

    fn before_first_turn(
        &mut self,
        link: &mut WorkerLink,
        turn: Turn<'_>,
    ) -> anyhow::Result<Option<String>> {
        // Earlier sessions' best work, tried when the harness commits and
        // the first message is an attempt.
        let Some(edit_check) = turn.edit_check else {
            return Ok(None);
        };
        let on = self.attempting && self.attempts.is_some() && self.settings.commit_when_passing();
        if !on {
            return Ok(None);
        }
        let trial = Trial {
            workspace: self.workspace,
            checks: self.checks,
            files: self.files,
        };
        trial.run(link, edit_check, &self.config.earlier_work)
    }
}

/// Whether a turn's calls wrote a file.
fn wrote(calls: &[ToolCall]) -> bool {
    calls
        .iter()
        .any(|c| matches!(c.name.as_str(), "write_file" | "edit_file"))
}
