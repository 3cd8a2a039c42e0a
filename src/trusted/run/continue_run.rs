//! `longrun continue`: worker sessions one after another, each on the next
//! feature, until the asked number ran, everything passes, only stuck
//! features remain, or a run limit is reached.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::notify::{self, Notifier};
use super::pause::{wait_out, Backoff, Resume};
use crate::config::Pick;
use crate::error::Outcome;
use crate::features::Feature;
use crate::schema::{Fault, Role};
pub use crate::trusted::contract::models::{ModelChoice, Models};
use crate::trusted::session::fault::Pause;
use crate::trusted::session::lifecycle::{
    next_number, run_session, MergeQueue, SessionOutcome, SessionPlan,
};
use crate::trusted::session::serve::CostLimit;
pub use crate::trusted::session::signals::Interrupt;
use crate::trusted::{record::lock, session::recover, History, Mode, Project, Reporter, Verdict};
use futures_util::stream::{FuturesUnordered, StreamExt};

pub struct ContinueArgs {
    pub dir: PathBuf,
    pub sessions: Option<u32>,
    pub until_done: bool,
    pub model: Option<String>,
    /// `--base-url`, over LONGRUN_BASE_URL and longrun.toml.
    pub base_url: Option<String>,
    /// `--profile`, over `[sandbox] profile` in longrun.toml.
    pub profile: Option<String>,
    pub quiet: bool,
    /// Report one JSON object per event on stdout.
    pub json: bool,
    /// Start no session once the run has lasted this long.
    pub max_hours: Option<f64>,
    /// Start no session once the run has cost this many USD; stop the one that crosses it.
    pub max_cost: Option<f64>,
    /// Stop after this many sessions in a row without acceptance (default from longrun.toml).
    pub max_consecutive_failures: Option<u32>,
    /// Sessions run at once, each on its own feature (1: one after another).
    pub parallel: u32,
    /// `--notify`, over `[notify] command`.
    pub notify: Option<String>,
    /// `--model-for ROLE=MODEL`.
    pub model_for: Vec<String>,
    /// How long a paused run waits for the provider before it gives up.
    pub max_wait: Duration,
    /// Stash uncommitted changes to tracked files instead of refusing them.
    pub stash: bool,
}

impl ContinueArgs {
    pub fn new(dir: PathBuf) -> ContinueArgs {
        ContinueArgs {
            dir,
            sessions: None,
            until_done: false,
            model: None,
            base_url: None,
            profile: None,
            quiet: false,
            json: false,
            max_hours: None,
            max_cost: None,
            max_consecutive_failures: None,
            parallel: 1,
            notify: None,
            model_for: Vec::new(),
            max_wait: super::pause::DEFAULT_MAX_WAIT,
            stash: false,
        }
    }
}

impl ContinueArgs {
    /// The model flags.
    pub fn model_choice(&self) -> ModelChoice {
        ModelChoice {
            model: self.model.clone(),
            model_for: self.model_for.clone(),
            base_url: self.base_url.clone(),
        }
    }

    /// How many worker sessions were asked for: `--sessions`, else one, else
    /// (with `--until-done`) no limit.
    pub fn asked_sessions(&self) -> Option<u32> {
        match (self.sessions, self.until_done) {
            (Some(n), _) => Some(n),
            (None, true) => None,
            (None, false) => Some(1),
        }
    }
}

/// The file `longrun stop` creates; a running continue stops after its current session.
pub fn stop_file(project: &Project) -> PathBuf {
    project.longrun_dir().join("stop")
}

/// The feature the next session takes, of those that do not pass, are not
/// stuck and are not in `busy`: the first of them in `preferred`, else the
/// first; or (`[run] pick = "least-failed"`) of those with the fewest failed
/// attempts, the first in `preferred`, else the first.
pub(crate) fn next_feature_besides(
    project: &Project,
    history: &History,
    busy: &[String],
    preferred: &[String],
) -> anyhow::Result<Option<Feature>> {
    let Some(list) = project.features()? else {
        return Ok(None);
    };
    let mut open = list.features.iter().filter(|f| {
        !f.passes
            && !busy.contains(&f.id)
            && !history.is_stuck(&f.id, project.config.run.max_attempts)
    });
    // Where a hinted feature stands among the preferred, if it is.
    let hinted = |f: &Feature| preferred.iter().position(|id| id == &f.id);
    let next = match project.config.run.pick {
        Pick::InOrder => preferred
            .iter()
            .find_map(|id| open.clone().find(|f| &f.id == id))
            .or_else(|| open.next()),
        // A hint only breaks ties among the fewest failed attempts: each
        // failing feature still gets a session before any gets another.
        // min_by_key keeps the first of equal keys (features.json's order).
        Pick::LeastFailed => open.min_by_key(|f| {
            (
                history.stats(&f.id).failed_attempts,
                hinted(f).unwrap_or(usize::MAX),
            )
        }),
    };
    Ok(next.cloned())
}

pub async fn continue_run(args: ContinueArgs) -> anyhow::Result<Outcome> {
    let mut project = Project::open(&args.dir)?;
    if let Some(profile) = &args.profile {
        project.use_profile(profile)?;
    }
    crate::trusted::contract::preflight::check(&project)?;
    let review = project.config.review.mode != crate::config::ReviewMode::Off;
    let models = Models::open(&args.model_choice(), &project.config, &project.dir, review)?;
    let _lock = lock::acquire(&project.longrun_dir())?;
    let reporter = Reporter::new(Mode::pick(args.quiet, args.json))
        .planning(args.asked_sessions())
        .with_check_rounds(project.config.harness.check_rounds);
    // A work-tree update a crash cut short is finished before the tree is judged.
    crate::trusted::record::repo::resync_worktree(&project.repo)?;
    super::worktree::check(&project, args.stash, &reporter)?;
    let interrupt = Interrupt::install()?;
    recover::recover_all(&project, &reporter)?;
    // A stop asked for before this run started is not for this run.
    let _ = std::fs::remove_file(stop_file(&project));
    let notifier = Notifier::new(&project, args.notify.as_deref());
    let result = run_sessions(
        &project,
        &models,
        &args,
        &reporter,
        &interrupt,
        notifier.as_ref(),
    )
    .await;
    let (passing, total) = project
        .features()
        .ok()
        .flatten()
        .map_or((0, 0), |l| (l.passing(), l.features.len()));
    reporter.run_finished(&result, passing, total);
    if let Some(notifier) = &notifier {
        let (outcome, code) = match &result {
            Ok(o) => (o.name(), o.code()),
            Err(e) => ("error", crate::error::code_for(e)),
        };
        notifier.send(
            notify::run_finished(outcome, code, passing, total),
            &reporter,
        );
        notifier.finish(&reporter).await;
    }
    result
}

/// Open features a session not accepted said its work makes pass, newest
/// first ([`crate::trusted::session::lifecycle::SessionOutcome::passes_others`]): the next
/// sessions take them first, and each tries that work before asking the
/// model (the latest sessions' work is offered to whole-file sessions). A
/// hint only orders the features; the session is verified like any other.
/// A session taken for its own feature's hint that ends with work for that
/// feature again does not hint it again: the feature goes back into the
/// usual order. Chained, such hints spent the 1.5B model's lift run on
/// roman (`--task-hours 0.3`) on one feature, three sessions in a row
/// until it was stuck, while five features had never been tried; under
/// `[run] pick = "least-failed"` a hint now only orders the features with
/// the fewest failed attempts.
#[derive(Default)]
struct Hints {
    hints: Vec<Hint>,
    /// Sessions taken for a hint, and the feature each took.
    followed: Vec<(u32, String)>,
}

struct Hint {
    feature: String,
    /// The session whose work it is.
    from: u32,
    /// Sessions not accepted since, with their work kept.
    age: usize,
}

impl Hints {
    /// After a session: one not accepted makes the hints before it older,
    /// drops those whose work is no longer among the latest offered, and
    /// puts its own first.
    fn after(&mut self, outcome: &crate::trusted::session::lifecycle::SessionOutcome) {
        let followed = self
            .followed
            .iter()
            .position(|(n, _)| *n == outcome.number)
            .map(|at| self.followed.remove(at).1);
        if outcome.verdict == Verdict::Accepted {
            return;
        }
        let said = &outcome.passes_others;
        // Its own feature, hinted again by a session taken for that hint.
        let again = followed.filter(|f| outcome.feature.as_ref() == Some(f));
        self.hints.retain_mut(|h| {
            h.age += 1;
            h.age < crate::trusted::session::lifecycle::EARLIER_WORK_SESSIONS
                && !said.contains(&h.feature)
        });
        let mut new: Vec<Hint> = Vec::new();
        for id in said.iter().filter(|id| again.as_ref() != Some(*id)) {
            if !new.iter().any(|h| &h.feature == id) {
                new.push(Hint {
                    feature: id.clone(),
                    from: outcome.number,
                    age: 0,
                });
            }
        }
        new.append(&mut self.hints);
        new.truncate(crate::trusted::session::lifecycle::MAX_HINTS);
        self.hints = new;
    }

    fn features(&self) -> Vec<String> {
        self.hints.iter().map(|h| h.feature.clone()).collect()
    }

    /// Session `number` takes `feature`: the session whose work made it
    /// pass, if hinted.
    fn take(&mut self, feature: &str, number: u32) -> Option<u32> {
        let at = self.hints.iter().position(|h| h.feature == feature)?;
        self.followed.push((number, feature.to_string()));
        Some(self.hints.remove(at).from)
    }
}

/// Counts what the run has done, for its limits.
struct Tally {
    started: Instant,
    ran: u32,
    /// `--max-cost` and what the run's sessions have spent against it.
    cost_limit: Option<Arc<CostLimit>>,
    /// Reasons of the sessions in the current streak that failed by their work.
    streak: Vec<String>,
    /// Reasons of the sessions in a row that failed by the run (not pausing it).
    run_streak: Vec<String>,
}

/// Sessions in a row that fail by the run, not their work, before the run
/// stops: a harness or machine fault that no feature can be blamed for.
const MAX_RUN_FAULTS: usize = 3;

/// The loop shared by `continue` and the demo.
pub async fn run_sessions(
    project: &Project,
    models: &Models,
    args: &ContinueArgs,
    reporter: &Reporter,
    interrupt: &Interrupt,
    notifier: Option<&Notifier>,
) -> anyhow::Result<Outcome> {
    if !project.history()?.initialized() {
        crate::sandbox::preflight(&project.profile)?;
        reporter.line("no initializer session was accepted yet: running the initializer first");
        let outcome = match initialize(project, models, reporter, interrupt, args.max_wait).await? {
            Ok(outcome) => outcome,
            Err(ended) => return Ok(ended),
        };
        if let Some(done) = stop_after(&outcome, interrupt) {
            return Ok(done);
        }
        if outcome.verdict != Verdict::Accepted {
            return Ok(Outcome::RunFailed);
        }
    }
    let max_failures = args
        .max_consecutive_failures
        .unwrap_or(project.config.run.max_consecutive_failures);
    let mut tally = Tally {
        started: Instant::now(),
        ran: 0,
        cost_limit: args.max_cost.map(|max| Arc::new(CostLimit::new(max))),
        streak: Vec::new(),
        run_streak: Vec::new(),
    };
    let backoff = Backoff::from_settings(&project.config.model);
    // Set when a session found the provider unavailable: no session starts,
    // and once those running have ended, the run waits for the provider.
    let mut pause: Option<Pause> = None;
    let parallel = args.parallel.max(1) as usize;
    let merges = MergeQueue::new(());
    let mut running = FuturesUnordered::new();
    let mut in_flight: Vec<String> = Vec::new();
    let mut ending: Option<Outcome> = None;
    let mut hints = Hints::default();
    loop {
        // Start sessions on different features until N run at once.
        while ending.is_none() && pause.is_none() && running.len() < parallel {
            let history = project.history()?;
            let preferred = hints.features();
            let Some(feature) = next_feature_besides(project, &history, &in_flight, &preferred)?
            else {
                break;
            };
            if let Some(outcome) = limit_reached(project, args, &tally, reporter)? {
                ending = Some(outcome);
                break;
            }
            let number = next_number(project)?;
            if let Some(from) = hints.take(&feature.id, number) {
                reporter.line(&format!(
                    "session {number} takes {}: the worker of session {from} (not accepted) \
                     reported that its work passes this feature's check; it is tried first",
                    feature.id
                ));
            }
            in_flight.push(feature.id.clone());
            let plan = SessionPlan {
                number,
                role: Role::Worker,
                feature: Some(feature),
                cost_limit: tally.cost_limit.clone(),
                subagent_model: Some(Arc::clone(&models.subagent)),
                reviewer: models.reviewer.clone(),
            };
            tally.ran += 1;
            running.push(run_session(
                project,
                &models.worker,
                plan,
                reporter,
                interrupt,
                &merges,
            ));
        }
        let Some(result) = running.next().await else {
            if let (None, Some(p)) = (ending, pause.take()) {
                if let Some(n) = notifier {
                    n.send(notify::run_paused(&p.reason), reporter);
                }
                let paused_at = std::time::Instant::now();
                let resume = wait_out(
                    &models.worker,
                    &p,
                    backoff,
                    args.max_wait,
                    reporter,
                    interrupt,
                )
                .await;
                match after_wait(resume, args.max_wait, reporter) {
                    None => {
                        if let Some(n) = notifier {
                            n.send(notify::run_resumed(paused_at.elapsed()), reporter);
                        }
                        continue;
                    }
                    Some(done) => return Ok(done),
                }
            }
            return match ending {
                Some(outcome) => Ok(outcome),
                None => finished(project, &*project.history()?, reporter),
            };
        };
        let outcome = result?;
        compact_objects(project);
        in_flight.retain(|id| Some(id) != outcome.feature.as_ref());
        hints.after(&outcome);
        if let Some(done) = stop_after(&outcome, interrupt) {
            ending.get_or_insert(done);
            continue;
        }
        let why = format!(
            "session {} {}: {}",
            outcome.number,
            outcome.verdict,
            outcome.reasons.first().cloned().unwrap_or_default()
        );
        match (outcome.fault, &outcome.pause) {
            (None, _) => {
                tally.streak.clear();
                tally.run_streak.clear();
            }
            (Some(Fault::Work), _) => {
                tally.streak.push(why);
                tally.run_streak.clear();
                if let Some(n) = notifier {
                    tell_about_failure(project, n, &outcome, &tally.streak, reporter)?;
                }
            }
            (Some(Fault::Run), Some(p)) => {
                // Not one of the sessions asked for: the same work is tried again.
                tally.ran = tally.ran.saturating_sub(1);
                pause.get_or_insert_with(|| p.clone());
            }
            (Some(Fault::Run), None) => tally.run_streak.push(why),
        }
        if ending.is_none() && tally.run_streak.len() >= MAX_RUN_FAULTS {
            reporter.line(&format!(
                "stopping: {MAX_RUN_FAULTS} sessions in a row failed by the run, not by their work \
                 (no feature is held responsible):"
            ));
            for line in &tally.run_streak {
                reporter.line(&format!("  {line}"));
            }
            ending = Some(Outcome::RunFailed);
        }
        if ending.is_none() && max_failures > 0 && tally.streak.len() as u32 >= max_failures {
            reporter.line(&format!(
                "stopping: {max_failures} sessions in a row ended without acceptance by their work:"
            ));
            for line in &tally.streak {
                reporter.line(&format!("  {line}"));
            }
            ending = Some(Outcome::StoppedEarly);
        }
    }
}

/// A failed session may have made its feature stuck, or made a streak worth a notice.
fn tell_about_failure(
    project: &Project,
    notifier: &Notifier,
    outcome: &SessionOutcome,
    streak: &[String],
    reporter: &Reporter,
) -> anyhow::Result<()> {
    if let Some(id) = &outcome.feature {
        let history = project.history()?;
        let max = project.config.run.max_attempts;
        let stats = history.stats(id);
        // Exactly at the limit: it became stuck with this session.
        if history.is_stuck(id, max) && stats.failed_attempts == max {
            notifier.send(
                notify::feature_stuck(id, stats.failed_attempts, &stats.last_reasons),
                reporter,
            );
        }
    }
    let after = notifier.after_rejections();
    if after > 0 && streak.len() as u32 == after {
        notifier.send(notify::rejected_in_a_row(streak), reporter);
    }
    Ok(())
}

/// Roll up the packs sessions added once they pass the threshold; a repack
/// that fails is a warning, the run goes on.
fn compact_objects(project: &Project) {
    match super::compact::compact_if_due(project.repo.path()) {
        Ok(true) => {
            tracing::info!("rolled up the project's packs");
            if let Err(e) = project.forget_deleted_packs() {
                tracing::warn!("the project's objects could not be opened again: {e:#}");
            }
        }
        Ok(false) => {}
        Err(e) => tracing::warn!("the project's objects could not be repacked: {e:#}"),
    }
}

/// Whether a run limit forbids starting another session, and how the run ends then.
fn limit_reached(
    project: &Project,
    args: &ContinueArgs,
    tally: &Tally,
    reporter: &Reporter,
) -> anyhow::Result<Option<Outcome>> {
    let stop = stop_file(project);
    if stop.exists() {
        std::fs::remove_file(&stop)?;
        reporter.line("stopping: `longrun stop` was asked for");
        return Ok(Some(Outcome::StoppedEarly));
    }
    if args.asked_sessions().is_some_and(|n| tally.ran >= n) {
        return Ok(Some(if args.until_done {
            Outcome::StoppedEarly
        } else {
            Outcome::Done
        }));
    }
    if let Some(cost) = tally.cost_limit.as_ref().filter(|c| c.reached()) {
        reporter.line(&format!(
            "stopping: the run has cost ${:.4}, reaching --max-cost {}",
            cost.spent(),
            cost.max_usd
        ));
        return Ok(Some(Outcome::StoppedEarly));
    }
    if let Some(hours) = args.max_hours {
        if tally.started.elapsed() >= Duration::from_secs_f64(hours.max(0.0) * 3600.0) {
            reporter.line(&format!("stopping: the run reached --max-hours {hours}"));
            return Ok(Some(Outcome::StoppedEarly));
        }
    }
    Ok(None)
}

/// Run the initializer session, again after each pause for the provider.
/// Err: how the run ended while paused.
pub async fn initialize(
    project: &Project,
    models: &Models,
    reporter: &Reporter,
    interrupt: &Interrupt,
    max_wait: Duration,
) -> anyhow::Result<Result<SessionOutcome, Outcome>> {
    let backoff = Backoff::from_settings(&project.config.model);
    loop {
        let outcome = run_initializer(project, models, reporter, interrupt).await?;
        let Some(p) = outcome.pause.clone().filter(|_| !interrupt.is_set()) else {
            return Ok(Ok(outcome));
        };
        let resume = wait_out(
            &models.initializer,
            &p,
            backoff,
            max_wait,
            reporter,
            interrupt,
        )
        .await;
        if let Some(done) = after_wait(resume, max_wait, reporter) {
            return Ok(Err(done));
        }
    }
}

/// How the run goes on after a pause: None when the provider answered.
fn after_wait(resume: Resume, max_wait: Duration, reporter: &Reporter) -> Option<Outcome> {
    match resume {
        Resume::Resumed => None,
        Resume::Interrupted => Some(Outcome::Interrupted),
        Resume::GaveUp { reason } => {
            reporter.line(&format!(
                "stopping: the provider did not answer within --max-wait ({} s): {reason}; \
                 no feature is stuck for it, `longrun continue` goes on later",
                max_wait.as_secs()
            ));
            Some(Outcome::ProviderUnavailable)
        }
        Resume::Fatal(message) => {
            eprintln!("error: the run stopped: the provider refused the credentials: {message}");
            Some(Outcome::RunFailed)
        }
    }
}

/// Run the initializer session.
pub async fn run_initializer(
    project: &Project,
    models: &Models,
    reporter: &Reporter,
    interrupt: &Interrupt,
) -> anyhow::Result<SessionOutcome> {
    let number = next_number(project)?;
    let plan = SessionPlan {
        number,
        role: Role::Initializer,
        feature: None,
        cost_limit: None,
        subagent_model: Some(Arc::clone(&models.subagent)),
        reviewer: None,
    };
    run_session(
        project,
        &models.initializer,
        plan,
        reporter,
        interrupt,
        &MergeQueue::new(()),
    )
    .await
}

/// Whether the run must stop after this session, and how.
fn stop_after(outcome: &SessionOutcome, interrupt: &Interrupt) -> Option<Outcome> {
    if interrupt.is_set() {
        return Some(Outcome::Interrupted);
    }
    if let Some(why) = &outcome.fatal {
        eprintln!("error: the run stopped: {}", crate::sanitize::line(why));
        return Some(Outcome::RunFailed);
    }
    None
}

/// No feature left to try: done when all pass, stopped early when the rest are stuck.
fn finished(project: &Project, history: &History, reporter: &Reporter) -> anyhow::Result<Outcome> {
    let list = project
        .features()?
        .map(|l| l.features.clone())
        .unwrap_or_default();
    let stuck: Vec<&Feature> = list.iter().filter(|f| !f.passes).collect();
    if stuck.is_empty() {
        reporter.line(&format!(
            "every feature passes ({} of {})",
            list.len(),
            list.len()
        ));
        return Ok(Outcome::Done);
    }
    reporter.line(&match stuck.len() {
        1 => "1 feature is stuck and skipped:".to_string(),
        n => format!("{n} features are stuck and skipped:"),
    });
    for f in stuck {
        let stats = history.stats(&f.id);
        let why = stats.last_reasons.first().cloned().unwrap_or_default();
        reporter.line(&format!(
            "  {} ({}): {why}; `longrun retry {}` tries it again",
            f.id,
            crate::view::text::count(stats.failed_attempts.into(), "failed attempt"),
            f.id
        ));
    }
    Ok(Outcome::StoppedEarly)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ended(number: u32, verdict: Verdict, passes_others: &[&str]) -> SessionOutcome {
        ended_on("F001", number, verdict, passes_others)
    }

    fn ended_on(
        feature: &str,
        number: u32,
        verdict: Verdict,
        passes_others: &[&str],
    ) -> SessionOutcome {
        SessionOutcome {
            number,
            feature: Some(feature.into()),
            verdict,
            reasons: Vec::new(),
            fatal: None,
            fault: None,
            pause: None,
            passes_others: passes_others.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn hints_go_newest_first_once_each_and_expire_with_the_work_offered() {
        let mut hints = Hints::default();
        hints.after(&ended(3, Verdict::Incomplete, &["F003", "F005", "F003"]));
        assert_eq!(hints.features(), ["F003", "F005"]);
        // An accepted session changes nothing; a newer hint goes first.
        hints.after(&ended(4, Verdict::Accepted, &["F009"]));
        hints.after(&ended(5, Verdict::Rejected, &["F005", "F007"]));
        assert_eq!(hints.features(), ["F005", "F007", "F003"]);
        assert_eq!(hints.take("F005", 10), Some(5));
        assert_eq!(hints.take("F005", 11), None);
        assert_eq!(hints.take("F003", 12), Some(3));
        // Once newer sessions not accepted push session 5's work out of
        // those offered to the next session, its hint goes too.
        hints.after(&ended(6, Verdict::Failed, &[]));
        hints.after(&ended(7, Verdict::Failed, &[]));
        assert_eq!(hints.features(), ["F007"]);
        hints.after(&ended(8, Verdict::Failed, &[]));
        assert!(hints.features().is_empty());
        // However many a report names, a bounded number is kept.
        let many: Vec<String> = (0..100).map(|i| format!("F{i:03}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        hints.after(&ended(9, Verdict::Incomplete, &many));
        assert_eq!(
            hints.features().len(),
            crate::trusted::session::lifecycle::MAX_HINTS
        );
    }

    #[test]
    fn a_session_taken_for_its_own_hint_does_not_hint_its_feature_again() {
        let mut hints = Hints::default();
        // Session 3 on F005 ends with work that passes F005's check.
        hints.after(&ended_on("F005", 3, Verdict::Incomplete, &["F005"]));
        assert_eq!(hints.features(), ["F005"]);
        // Session 4 takes it for that hint and ends the same way: F005
        // goes back into the usual order; a feature it gains is hinted.
        assert_eq!(hints.take("F005", 4), Some(3));
        hints.after(&ended_on("F005", 4, Verdict::Incomplete, &["F005", "F007"]));
        assert_eq!(hints.features(), ["F007"]);
        // A session on F005 not taken for a hint hints it as before.
        hints.after(&ended_on("F005", 6, Verdict::Incomplete, &["F005"]));
        assert_eq!(hints.features(), ["F005", "F007"]);
        // Taken for another feature's hint, a session's own work is hinted.
        assert_eq!(hints.take("F007", 7), Some(4));
        hints.after(&ended_on("F007", 7, Verdict::Incomplete, &["F009"]));
        assert_eq!(hints.features(), ["F009", "F005"]);
    }
}
