//! Before a session ends: the best state kept, the one nudge, the check
//! rounds, and what a loop found does.

use super::{turn, AgentLoop, Flow};
use crate::broker::{SessionEvent, WorkerEnd, WorkerLink};
use crate::confined::checks;

impl AgentLoop<'_> {
    /// A session ending with its check failing keeps its best state, when
    /// that did better than the last.
    pub(super) fn keep_best(&mut self, link: &mut WorkerLink) -> anyhow::Result<()> {
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

    /// The first loop gets a notice and a clean slate; the second ends the session.
    pub(super) fn on_loop(&mut self, link: &mut WorkerLink, what: String) -> anyhow::Result<Flow> {
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
    pub(super) fn before_end(&mut self, link: &mut WorkerLink) -> anyhow::Result<Flow> {
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
    pub(super) fn nudge(&mut self, link: &mut WorkerLink) -> anyhow::Result<Option<Flow>> {
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
}
