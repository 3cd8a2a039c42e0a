//! `longrun continue`: worker sessions one after another, each on the next
//! feature, until the asked number ran, everything passes, or only stuck
//! features remain.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use super::session::{next_number, run_session, SessionOutcome, SessionPlan};
use super::{resolve_model, History, Project, Reporter, Verdict};
use crate::error::Outcome;
use crate::features::Feature;
use crate::model::{open_provider, Provider};
use crate::session::Role;

pub struct ContinueArgs {
    pub dir: PathBuf,
    pub sessions: Option<u32>,
    pub until_done: bool,
    pub model: Option<String>,
    pub quiet: bool,
}

/// Set once SIGINT or SIGTERM arrives.
#[derive(Clone)]
pub struct Interrupt {
    rx: watch::Receiver<bool>,
}

impl Interrupt {
    /// Listen for SIGINT and SIGTERM for the rest of the process.
    pub fn install() -> anyhow::Result<Interrupt> {
        use tokio::signal::unix::{signal, SignalKind};
        let (tx, rx) = watch::channel(false);
        let mut int = signal(SignalKind::interrupt())?;
        let mut term = signal(SignalKind::terminate())?;
        tokio::spawn(async move {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            let _ = tx.send(true);
        });
        Ok(Interrupt { rx })
    }

    pub fn is_set(&self) -> bool {
        *self.rx.borrow()
    }

    /// Resolves once the interrupt is set.
    pub async fn wait(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|set| *set).await;
    }
}

/// The first feature that does not pass and is not stuck.
pub fn next_feature(project: &Project, history: &History) -> anyhow::Result<Option<Feature>> {
    let Some(list) = project.features()? else {
        return Ok(None);
    };
    Ok(list
        .features
        .into_iter()
        .find(|f| !f.passes && !history.is_stuck(&f.id, project.config.run.max_attempts)))
}

pub async fn continue_run(args: ContinueArgs) -> anyhow::Result<Outcome> {
    let project = Project::open(&args.dir)?;
    let spec = resolve_model(args.model.as_deref(), &project.config, &project.dir)?;
    let provider = open_provider(&spec)?;
    let reporter = Reporter { quiet: args.quiet };
    let interrupt = Interrupt::install()?;
    run_sessions(&project, &provider, &args, &reporter, &interrupt).await
}

/// The loop shared by `continue` and the demo.
pub async fn run_sessions(
    project: &Project,
    provider: &Arc<dyn Provider>,
    args: &ContinueArgs,
    reporter: &Reporter,
    interrupt: &Interrupt,
) -> anyhow::Result<Outcome> {
    if !project.history()?.initialized() {
        reporter.line("no initializer session was accepted yet: running the initializer first");
        let outcome = run_initializer(project, provider, reporter, interrupt).await?;
        if let Some(done) = stop_after(&outcome, interrupt) {
            return Ok(done);
        }
        if outcome.verdict != Verdict::Accepted {
            return Ok(Outcome::RunFailed);
        }
    }
    let limit = match (args.sessions, args.until_done) {
        (Some(n), _) => Some(n),
        (None, true) => None,
        (None, false) => Some(1),
    };
    let mut ran = 0u32;
    loop {
        let history = project.history()?;
        let Some(feature) = next_feature(project, &history)? else {
            return finished(project, &history, reporter);
        };
        if limit.is_some_and(|n| ran >= n) {
            return Ok(if args.until_done {
                Outcome::StoppedEarly
            } else {
                Outcome::Done
            });
        }
        let number = next_number(project)?;
        let plan = SessionPlan {
            number,
            role: Role::Worker,
            feature: Some(feature),
        };
        let outcome = run_session(project, provider, plan, reporter, interrupt).await?;
        ran += 1;
        if let Some(done) = stop_after(&outcome, interrupt) {
            return Ok(done);
        }
    }
}

/// Run the initializer session.
pub async fn run_initializer(
    project: &Project,
    provider: &Arc<dyn Provider>,
    reporter: &Reporter,
    interrupt: &Interrupt,
) -> anyhow::Result<SessionOutcome> {
    let number = next_number(project)?;
    let plan = SessionPlan {
        number,
        role: Role::Initializer,
        feature: None,
    };
    run_session(project, provider, plan, reporter, interrupt).await
}

/// Whether the run must stop after this session, and how.
fn stop_after(outcome: &SessionOutcome, interrupt: &Interrupt) -> Option<Outcome> {
    if interrupt.is_set() {
        return Some(Outcome::Interrupted);
    }
    if let Some(why) = &outcome.fatal {
        eprintln!("error: the run stopped: {why}");
        return Some(Outcome::RunFailed);
    }
    None
}

/// No feature left to try: done when all pass, stopped early when the rest are stuck.
fn finished(project: &Project, history: &History, reporter: &Reporter) -> anyhow::Result<Outcome> {
    let list = project.features()?.map(|l| l.features).unwrap_or_default();
    let stuck: Vec<&Feature> = list.iter().filter(|f| !f.passes).collect();
    if stuck.is_empty() {
        reporter.line(&format!(
            "every feature passes ({} of {})",
            list.len(),
            list.len()
        ));
        return Ok(Outcome::Done);
    }
    reporter.line(&format!(
        "{} feature(s) are stuck and skipped:",
        stuck.len()
    ));
    for f in stuck {
        let stats = history.stats(&f.id);
        let why = stats.last_reasons.first().cloned().unwrap_or_default();
        reporter.line(&format!(
            "  {} ({} failed attempts): {why}",
            f.id, stats.failed_attempts
        ));
    }
    Ok(Outcome::StoppedEarly)
}
