//! The worker's entry point: confine, run init.sh, run the agent loop, report.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use super::{prompt, AgentLoop, WorkerConfig};
use crate::broker::{SessionEvent, WorkerEnd, WorkerLink, WorkerMessage, WorkerReport};
use crate::tools::{run_shell, Registry, ToolContext};

/// The hidden `__worker` subcommand. Called in a freshly executed child,
/// before any thread exists: confinement is the first thing it does.
pub fn run_worker(config_path: &Path) -> ExitCode {
    match run(config_path) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("longrun worker: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(config_path: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(config_path)
        .with_context(|| format!("failed to read {}", config_path.display()))?;
    let config: WorkerConfig = serde_json::from_str(&text).context("worker.json is malformed")?;
    // The single place where a session's confinement is applied.
    let enforcement =
        crate::sandbox::confine(&config.sandbox).context("failed to confine the session")?;
    let mut link = WorkerLink::inherited()?;
    for warning in &enforcement.warnings {
        link.send(&WorkerMessage::Event {
            event: SessionEvent::Notice {
                text: format!("sandbox: {warning}"),
            },
        })?;
    }
    let ctx = ToolContext {
        workspace: config.sandbox.workspace.clone(),
        tmp: config.sandbox.tmp.clone(),
    };
    let init_report = run_init_script(&mut link, &ctx)?;
    let registry = Registry::standard().with_output_cap(config.tool_output_cap);
    let first = prompt::first_message(&config, &ctx.workspace, &init_report);
    let system = prompt::system_prompt(&config);
    let mut agent = AgentLoop::new(&config, &registry, &ctx, system, first);
    let report = match agent.run(&mut link) {
        Ok(report) => report,
        Err(e) => WorkerReport {
            ended: WorkerEnd::Failed,
            reason: Some(format!("{e:#}")),
            steps: agent.steps(),
        },
    };
    link.send(&WorkerMessage::Finished { report })
}

/// Run `init.sh` before the first model call; what it said goes in the first message.
fn run_init_script(link: &mut WorkerLink, ctx: &ToolContext) -> anyhow::Result<String> {
    if !ctx.workspace.join("init.sh").exists() {
        return Ok("There is no init.sh yet.".into());
    }
    let out = run_shell(&ctx.workspace, "./init.sh", Duration::from_secs(600))?;
    let tail = crate::progress::tail(&out.output, 30);
    link.send(&WorkerMessage::Event {
        event: SessionEvent::InitScript {
            exit_code: out.exit_code,
            output_tail: tail.clone(),
        },
    })?;
    let status = match (out.timed_out, out.exit_code) {
        (true, _) => "timed out".to_string(),
        (_, Some(code)) => format!("exited {code}"),
        (_, None) => "was killed by a signal".to_string(),
    };
    Ok(format!(
        "The harness ran ./init.sh; it {status}. Its last lines:\n```\n{tail}\n```"
    ))
}
