//! The tools the loop answers itself, because they need its state
//! (write_todos, read_skill, task), and the note it adds to a tool result
//! when the model runs its own failing check.

use super::AgentLoop;
use crate::broker::{SessionEvent, WorkerEnd, WorkerLink};
use crate::confined::calls::{command_failed, error, parse_args};
use crate::confined::skills;
use crate::confined::tools::ToolOutput;
use crate::model::ToolCall;

impl AgentLoop<'_> {
    /// The harness tools first, then the registry.
    pub(super) fn dispatch(
        &mut self,
        link: &mut WorkerLink,
        call: &ToolCall,
    ) -> anyhow::Result<ToolOutput> {
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

    pub(super) fn dispatch_registry(&self, call: &ToolCall) -> ToolOutput {
        self.harness
            .registry
            .dispatch(self.harness.ctx, &call.name, &call.arguments)
    }

    /// `task`: run a subagent to its final answer.
    pub(super) fn run_task(
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

    /// The model ran its feature's check itself and it failed: small models
    /// run it again and again. Say what to do instead, naming the files.
    pub(super) fn check_run_by_model(&self, call: &ToolCall, output: &str) -> Option<String> {
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
}
