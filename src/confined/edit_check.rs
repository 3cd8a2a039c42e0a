//! The assigned feature's check, run by the harness after every turn that
//! changed files (`[harness] check_after_edit`), and the best state so far.
//!
//! Models seldom run the tests on their own; a harness that runs them after
//! each edit and says how it went (counts, failing tests, the tail) does it
//! for them. It also remembers the state with the most tests passing, says
//! when an edit made things worse, and when the session ends with the check
//! failing it commits that best state on top of the last one, so the
//! session's ref holds the best work, not merely the latest.
//!
//! Not here: the checks before the end (`checks.rs`), which this reuses.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::LazyLock;

use git2::{Oid, Repository};
use regex::Regex;

use super::checks::{self, CheckOutcome, SessionChecks};
use super::commit::{harness_signature, stage_all};
use crate::git::uncommitted_paths;

/// Lines of the check's output shown after an edit.
const TAIL_LINES: usize = 25;

/// How well a state does: passing the feature's check (without breaking a
/// feature that passed) beats failing; then more other features' checks
/// passing beats fewer (counted only when the harness commits for the
/// model); then more of the check's tests passing beats fewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Score {
    pub passed: bool,
    pub others_passing: u32,
    pub tests_passing: u32,
}

/// Tests passing and failing, as a test runner's summary says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    pub passed: u32,
    pub failed: u32,
}

impl Counts {
    fn total(self) -> u32 {
        self.passed + self.failed
    }
}

/// The best state seen: its score, its tree (written to the session's own
/// object store, the index left alone) and the step it was reached at.
#[derive(Debug, Clone)]
struct Best {
    score: Score,
    counts: Option<Counts>,
    tree: Oid,
    step: u32,
    /// What its check said ([`failing_summary`]).
    summary: String,
    /// Features whose checks failed at the session's start and pass there.
    gained: Vec<String>,
    /// Features that passed when the session started and fail there (the first few).
    broken: Vec<String>,
    /// The feature's own check passes there (`score.passed` also asks
    /// that it breaks none).
    own_passed: bool,
    /// A later attempt shown it wrote it back unchanged: it is not shown
    /// again (the model copies it rather than builds on it).
    echoed: bool,
    /// It is the files as the session found them ([`EditCheck::start_from`]).
    as_found: bool,
}

impl Best {
    /// When it was reached, for messages.
    fn when(&self) -> String {
        match self.as_found {
            true => "the files as the session found them".into(),
            false => format!("after step {}", self.step),
        }
    }
}

/// One check run on one state.
#[derive(Debug, Clone)]
struct Checked {
    fingerprint: u64,
    score: Score,
    counts: Option<Counts>,
}

#[derive(Debug, Default)]
pub struct EditCheck {
    /// The fingerprint of the state last looked at (the start, at first).
    seen: Option<u64>,
    last: Option<Checked>,
    best: Option<Best>,
    /// The check on the files as the session found them, when known.
    found: Option<Checked>,
    /// What the last state checked broke, when its own check passed there
    /// ([`broken_summary`]): a state no better than the best, but news.
    last_broke: Option<String>,
    /// The best state whose own check passes while it breaks features that
    /// passed: seldom the best by score (it breaks what the start passed),
    /// but one repair from done. In the lift run the 1.5B model wrote a
    /// parser passing 9 of 13 tests, its own among them, that broke one
    /// error test; every later attempt started again from scratch or from
    /// the file as found.
    near: Option<Best>,
    /// An attempt shown the files as the session found them wrote them
    /// back unchanged: later attempts are not shown them again.
    found_echoed: bool,
    /// Mark the feature done and commit when its check passes (`finish.rs`).
    commit_when_passing: bool,
}

impl EditCheck {
    /// Start from the workspace as the session found it: the check runs
    /// only once something changed. When the harness commits for the model,
    /// the other features' checks run here first, so that each state is
    /// judged against what passed at the start.
    pub fn new(checks: &SessionChecks, workspace: &Path, commit_when_passing: bool) -> EditCheck {
        if commit_when_passing {
            checks.run_others_at_start(workspace);
        }
        EditCheck {
            seen: fingerprint(workspace).ok(),
            commit_when_passing,
            ..EditCheck::default()
        }
    }

    /// The files as the session found them are the first best state, with
    /// `outcome`, their check failing: an attempt that does worse (in the
    /// lift runs, a parser raising ValueError on everything, which breaks
    /// the nine tests the file passed) never becomes the best, so it is
    /// neither what later attempts are told failed nor what the session
    /// keeps at its end.
    pub fn start_from(&mut self, checks: &SessionChecks, workspace: &Path, outcome: &CheckOutcome) {
        let (Some(fingerprint), Ok(tree)) = (self.seen, snapshot(workspace)) else {
            return;
        };
        let counts = counts(&outcome.output);
        let mut score = score(outcome, counts);
        if self.commit_when_passing {
            score.others_passing = checks.passing_at_start(workspace);
        }
        self.best = Some(Best {
            score,
            counts,
            tree,
            step: 0,
            summary: failing_summary(outcome),
            gained: Vec::new(),
            broken: Vec::new(),
            own_passed: false,
            echoed: false,
            as_found: true,
        });
        let found = Checked {
            fingerprint,
            score,
            counts,
        };
        self.last = Some(found.clone());
        self.found = Some(found);
    }

    /// After a turn: when the files changed since the last run, run the
    /// feature's check and return what to tell the model (None: nothing changed).
    pub fn after_turn(
        &mut self,
        checks: &SessionChecks,
        workspace: &Path,
        step: u32,
    ) -> Option<String> {
        let fingerprint = fingerprint(workspace).ok()?;
        if self.seen == Some(fingerprint) {
            return None;
        }
        self.seen = Some(fingerprint);
        let outcome = checks.run_feature(workspace)?;
        let counts = counts(&outcome.output);
        let mut score = score(&outcome, counts);
        // When the harness commits for the model, every state is also run
        // against the other features' checks: passing its own check is not
        // done while it breaks a feature that passed, and a state that makes
        // other features pass is progress to build on even while its own
        // check fails (a small model working on one test often writes the
        // parser that passes four others). A model that commits itself hears
        // of regressions from the check rounds and verification.
        let others = match self.commit_when_passing {
            true => checks.run_others(workspace),
            false => checks::OthersRun::default(),
        };
        score.others_passing = others.kept + others.gained.len() as u32;
        score.passed &= others.broken.is_empty();
        let broken = &others.broken;
        let summary = match broken.is_empty() || !outcome.passed {
            true => failing_summary(&outcome),
            false => broken_summary(broken),
        };
        self.last_broke = (!broken.is_empty() && outcome.passed).then(|| summary.clone());
        let before = self.best.clone();
        let state = snapshot(workspace).ok().map(|tree| Best {
            score,
            counts,
            tree,
            step,
            summary: summary.clone(),
            gained: others.gained.clone(),
            broken: broken.iter().map(|(id, _)| id.clone()).collect(),
            own_passed: outcome.passed,
            echoed: false,
            as_found: false,
        });
        self.remember(state, step);
        let passed_before = self.last.as_ref().is_some_and(|c| c.score.passed);
        self.last = Some(Checked {
            fingerprint,
            score,
            counts,
        });
        let committed = match score.passed {
            true => self.commit_passing(checks, workspace, &outcome),
            false => None,
        };
        // Passing still, with nothing to commit, is no news.
        if passed_before && score.passed && committed.is_none() {
            return None;
        }
        Some(told(
            &outcome,
            score,
            counts,
            &summary,
            before.as_ref(),
            committed,
            &others,
        ))
    }

    /// A state just checked (None: it could not be snapshot): marked echoed
    /// where it is a state shown to an attempt, written back no better; the
    /// near state when its own check passes while it breaks others; the
    /// best when it beats the best.
    fn remember(&mut self, state: Option<Best>, step: u32) {
        // Step 0 is the harness trying earlier sessions' work, not an
        // attempt: two of them may hold the same state (a session keeps
        // the near state it tried), and that is no echo.
        if self.commit_when_passing && step > 0 {
            // A state shown to an attempt (only when the harness commits)
            // written back as it was, no better: not shown again.
            if let Some(state) = &state {
                for shown in [self.best.as_mut(), self.near.as_mut()]
                    .into_iter()
                    .flatten()
                {
                    if shown.tree == state.tree && state.score <= shown.score {
                        shown.echoed = true;
                    }
                }
            }
        }
        let Some(state) = state else {
            return;
        };
        let score = state.score;
        let nearer = self.near.as_ref().is_none_or(|n| score > n.score);
        if state.own_passed && !state.broken.is_empty() && self.commit_when_passing && nearer {
            self.near = Some(state.clone());
        }
        if self.best.as_ref().is_none_or(|b| score > b.score) {
            self.best = Some(state);
        }
    }

    /// The workspace is as the session found it again (the harness put it
    /// back after trying states of its own): the next change is judged from
    /// here, as its check said at the start when that is known.
    pub fn found_again(&mut self, workspace: &Path) {
        self.seen = fingerprint(workspace).ok();
        // What was tried was not an attempt of this session's model.
        self.last_broke = None;
        self.last = self.found.clone().and_then(|found| {
            Some(Checked {
                fingerprint: self.seen?,
                ..found
            })
        });
    }

    /// The check passed at its last run.
    pub fn passed(&self) -> bool {
        self.last.as_ref().is_some_and(|c| c.score.passed)
    }

    /// Whether the check failed on the state last looked at.
    pub fn failing(&self) -> bool {
        self.last.as_ref().is_some_and(|c| !c.score.passed)
    }

    /// What the check said on the best state so far, when it failed there.
    pub fn best_failing(&self) -> Option<&str> {
        self.best
            .as_ref()
            .filter(|b| !b.score.passed)
            .map(|b| b.summary.as_str())
    }

    /// The features that failed at the session's start and pass on the
    /// state a session ending here keeps at its ref ([`Self::kept`]): when
    /// it breaks none that passed, those it gains; when it is the near
    /// state, `own` (the session's feature) first, then those it gains, so
    /// that the next session takes this feature while its work is among the
    /// latest offered.
    pub fn kept_passes_others(&self, at_start: u32, own: Option<&str>) -> Vec<String> {
        let Some(kept) = self
            .kept(at_start)
            .filter(|b| !b.score.passed && !b.as_found)
        else {
            return Vec::new();
        };
        match (kept.broken.is_empty(), kept.own_passed, own) {
            (true, _, _) => kept.gained.clone(),
            (false, true, Some(own)) => std::iter::once(own.to_string())
                .chain(kept.gained.iter().cloned())
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The state a session ending here keeps at its ref: the one the next
    /// attempt would build on ([`Self::to_build_on`]), else the best.
    /// Near states used to die with their session: in the lift runs a
    /// session's attempt passed its own test while breaking another, the
    /// session ran out of time, its ref kept the file as found, and no
    /// later session saw that attempt again. Kept, the next session of the
    /// feature tries it first and its first attempt repairs it.
    fn kept(&self, at_start: u32) -> Option<&Best> {
        self.to_build_on(at_start, false).or(self.best.as_ref())
    }

    /// The state to build on, as `at_start` features passed at the start:
    /// the best so far when it makes more of the other features' checks
    /// pass than the start did and its own check still fails; or the best
    /// whose own check passes while it breaks features that passed (what
    /// is left is to repair those), whichever makes more features' checks
    /// pass. `shown`: not one an attempt shown it wrote back unchanged.
    fn to_build_on(&self, at_start: u32, shown: bool) -> Option<&Best> {
        let fresh = |b: &&Best| !(shown && b.echoed);
        let gaining = self.best.as_ref().filter(fresh).filter(|b| {
            !b.score.passed && !b.gained.is_empty() && b.score.others_passing > at_start
        });
        let near = self.near.as_ref().filter(fresh);
        match (gaining, near) {
            (Some(g), Some(n)) if n.score.others_passing >= g.score.others_passing => Some(n),
            (Some(g), _) => Some(g),
            (None, n) => n,
        }
    }

    /// What the last state checked broke, when its own check passed there.
    pub fn last_broke(&self) -> Option<&str> {
        self.last_broke.as_deref()
    }

    /// An attempt wrote its files: when they are the files as the session
    /// found them, later attempts are not shown those again (the 1.5B model
    /// shown a dead-end file wrote it back, attempt after attempt).
    pub fn attempt_wrote(&mut self, workspace: &Path) {
        let now = fingerprint(workspace).ok();
        if now.is_some() && self.found.as_ref().map(|f| f.fingerprint) == now {
            self.found_echoed = true;
        }
    }

    /// An attempt shown the files as the session found them wrote them back unchanged.
    pub fn found_echoed(&self) -> bool {
        self.found_echoed
    }

    /// The state the next attempt builds on ([`Self::to_build_on`]; never
    /// one an attempt shown it wrote back unchanged), as `names` are there:
    /// each file with its content (None: absent there or not text), with
    /// what the state passes and breaks.
    pub fn best_to_build_on(
        &self,
        workspace: &Path,
        at_start: u32,
        names: &[String],
    ) -> Option<BestFiles> {
        let best = self.to_build_on(at_start, true)?;
        best_files(best, workspace, names)
    }

    /// The best state so far for the next attempt to repair, when attempts
    /// search (`[harness] candidates`): the best by score once it is not
    /// the files as found, while its check fails there and no attempt shown
    /// it wrote it back unchanged; as `names` are there.
    pub fn best_to_repair(&self, workspace: &Path, names: &[String]) -> Option<BestFiles> {
        let best = self
            .best
            .as_ref()
            .filter(|b| !b.as_found && !b.score.passed && !b.echoed)?;
        best_files(best, workspace, names)
    }

    /// The check passes: the feature marked done and the work committed by
    /// the harness, when it is on. Returns what was done, for the model.
    fn commit_passing(
        &mut self,
        checks: &SessionChecks,
        workspace: &Path,
        outcome: &CheckOutcome,
    ) -> Option<Result<String, String>> {
        let id = checks.feature_id().filter(|_| self.commit_when_passing)?;
        let command = outcome.command.as_deref().unwrap_or("");
        let done = match super::finish::commit_passing(workspace, id, checks.base(), command) {
            Ok(done) => Ok(done?),
            Err(e) => Err(format!("{e:#}")),
        };
        // What the harness wrote is not the model's edit: the next turn starts from here.
        if let Ok(now) = fingerprint(workspace) {
            self.seen = Some(now);
            if let Some(last) = self.last.as_mut() {
                last.fingerprint = now;
            }
        }
        Some(done)
    }

    /// At the end of a session: when the last state is not the one to keep
    /// ([`Self::kept`]) and does worse, commit the last state (so it stays in
    /// the history) and then the kept state on top. Returns what was done,
    /// for the record.
    /// `may_run`: the check may be run once more when the last state is unknown.
    pub fn keep_best(
        &mut self,
        checks: &SessionChecks,
        workspace: &Path,
        may_run: bool,
    ) -> anyhow::Result<Option<String>> {
        let at_start = checks.passing_at_start(workspace);
        let Some(best) = self.kept(at_start).cloned() else {
            return Ok(None);
        };
        let fingerprint = fingerprint(workspace)?;
        if snapshot(workspace)? == best.tree {
            return Ok(None);
        }
        let known = self.last.as_ref().filter(|c| c.fingerprint == fingerprint);
        let last = match known {
            Some(c) => (c.score, c.counts),
            None if may_run => match checks.run_feature(workspace) {
                Some(outcome) => {
                    let counts = counts(&outcome.output);
                    (score(&outcome, counts), counts)
                }
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        // A near state is kept over any other whose own check fails: it
        // scores below the files as found (it breaks what they pass).
        let near = best.own_passed && !best.broken.is_empty();
        if last.0.passed || (!near && last.0 >= best.score) {
            return Ok(None);
        }
        let said = match near {
            true => format!(
                "the session's state in which this feature's check passes (it breaks {}, {}) in place of its last ({})",
                best.broken.join(", "),
                best.when(),
                describe(last.0, last.1)
            ),
            false => format!(
                "the session's best state ({}, {}) in place of its last ({})",
                describe(best.score, best.counts),
                best.when(),
                describe(last.0, last.1)
            ),
        };
        restore(workspace, best.tree, &said)?;
        Ok(Some(format!("kept {said}")))
    }
}

/// `best`'s files among `names` (None: absent there or not text), with
/// what it passes and breaks, for an attempt's message.
fn best_files(best: &Best, workspace: &Path, names: &[String]) -> Option<BestFiles> {
    let repo = Repository::open(workspace).ok()?;
    let tree = repo.find_tree(best.tree).ok()?;
    let files = names
        .iter()
        .map(|name| {
            let body = tree
                .get_path(Path::new(name))
                .ok()
                .and_then(|e| e.to_object(&repo).ok())
                .and_then(|o| o.peel_to_blob().ok())
                .and_then(|b| String::from_utf8(b.content().to_vec()).ok());
            (name.clone(), body)
        })
        .collect();
    Some(BestFiles {
        files,
        gained: best.gained.clone(),
        broken: best.broken.clone(),
        own_passes: best.own_passed,
        summary: best.summary.clone(),
        step: best.step,
    })
}

/// The files of the best state so far, for the next attempt to build on
/// ([`EditCheck::best_to_build_on`]).
#[derive(Debug, Clone, PartialEq)]
pub struct BestFiles {
    pub files: Vec<(String, Option<String>)>,
    /// The features not done at the start whose checks pass there.
    pub gained: Vec<String>,
    /// The features that passed at the start whose checks fail there (the first few).
    pub broken: Vec<String>,
    /// The feature's own check passes there.
    pub own_passes: bool,
    /// What the checks said there ([`failing_summary`] or, when its own
    /// check passes, [`broken_summary`]).
    pub summary: String,
    /// The step it was reached at (0: before the model's first).
    pub step: u32,
}

/// What the model is told after the check ran on its edits: when its own
/// check passes but it breaks features that passed, which; otherwise the
/// [`report`], with what other features' checks said when it fails.
fn told(
    outcome: &CheckOutcome,
    score: Score,
    counts: Option<Counts>,
    summary: &str,
    before: Option<&Best>,
    committed: Option<Result<String, String>>,
    others: &checks::OthersRun,
) -> String {
    let broken = &others.broken;
    if !broken.is_empty() && outcome.passed {
        return format!(
            "[harness] The harness ran the {} (`{}`) after your edits: {summary}\n\
             The harness commits only a change that keeps every feature that passed before passing: keep what made them pass.",
            outcome.name,
            outcome.command.as_deref().unwrap_or("")
        );
    }
    let mut message = report(outcome, counts, score, before, committed);
    if !score.passed {
        message.push_str(&others_said(&others.gained, broken));
    }
    message
}

/// What other features' checks said on a state whose own check fails:
/// those it makes pass, those it breaks (empty when neither).
fn others_said(gained: &[String], broken: &[(String, CheckOutcome)]) -> String {
    let mut text = String::new();
    if !gained.is_empty() {
        text.push_str(&format!(
            "\nIt makes the checks of other features pass that failed before: {}. Keep them passing.",
            gained.join(", ")
        ));
    }
    if !broken.is_empty() {
        let ids: Vec<&str> = broken.iter().map(|(id, _)| id.as_str()).collect();
        text.push_str(&format!(
            "\nIt breaks features that passed before: {} (their checks fail now).",
            ids.join(", ")
        ));
    }
    text
}

/// What the model is told after the check ran on its edits.
fn report(
    outcome: &CheckOutcome,
    counts: Option<Counts>,
    score: Score,
    best: Option<&Best>,
    committed: Option<Result<String, String>>,
) -> String {
    let command = outcome.command.as_deref().unwrap_or("");
    let mut text = format!(
        "[harness] The harness ran the {} (`{command}`) after your edits: ",
        outcome.name
    );
    if score.passed {
        text.push_str("it passes");
        if let Some(c) = counts {
            text.push_str(&format!(" ({} of {} tests)", c.passed, c.total()));
        }
        text.push_str(&match committed {
            Some(Ok(done)) => format!(
                ". The harness {done}. The feature is done: reply with a one-line summary and no tool call."
            ),
            Some(Err(e)) => format!(
                ". The harness could not commit it ({e}): set only this feature's `passes` to true in features.json, append to progress.md and commit."
            ),
            None => ". Set only this feature's `passes` to true in features.json, append to progress.md and commit.".into(),
        });
        return text;
    }
    text.push_str(&format!("it fails ({}).", describe(score, counts)));
    let failing = checks::failing_tests_with_reasons(&outcome.output);
    if !failing.is_empty() {
        text.push_str(&format!(" Failing tests: {}.", failing.join("; ")));
    }
    match best {
        Some(b) if score < b.score => text.push_str(&format!(
            " This is worse than the best state of this session ({}, {}): the last edit broke something. \
             If the session ends with the check failing, the harness keeps that best state, not the last one.",
            describe(b.score, b.counts),
            b.when()
        )),
        Some(b) if score > b.score => text.push_str(&format!(
            " Better than before ({}).",
            describe(b.score, b.counts)
        )),
        _ => {}
    }
    let tail = crate::progress::tail(&outcome.output, TAIL_LINES);
    text.push_str(&format!("\nIts last lines:\n```\n{tail}\n```"));
    text
}

/// A failing check as the model should see it before it writes: how many
/// tests pass, which fail, and the last lines.
pub fn failing_summary(outcome: &CheckOutcome) -> String {
    let counts = counts(&outcome.output);
    let mut text = format!("it fails ({})", describe(score(outcome, counts), counts));
    let failing = checks::failing_tests_with_reasons(&outcome.output);
    if !failing.is_empty() {
        text.push_str(&format!("; failing tests: {}", failing.join("; ")));
    }
    let tail = crate::progress::tail(&outcome.output, TAIL_LINES);
    text.push_str(&format!(". Its last lines:\n```\n{tail}\n```"));
    text
}

/// A feature's check that passes while the checks of features that passed
/// before fail (`broken`: [`SessionChecks::run_regressions`]), as the model
/// should see it: which features, their failing tests, the first one's last lines.
fn broken_summary(broken: &[(String, CheckOutcome)]) -> String {
    let named: Vec<String> = broken
        .iter()
        .map(|(id, o)| {
            let command = o.command.as_deref().unwrap_or("");
            let tests = checks::failing_tests_with_reasons(&o.output);
            match tests.is_empty() {
                true => format!("{id}'s check `{command}` fails"),
                false => format!("{id}'s check `{command}` fails: {}", tests.join("; ")),
            }
        })
        .collect();
    let tail = broken
        .first()
        .map(|(_, o)| crate::progress::tail(&o.output, TAIL_LINES))
        .unwrap_or_default();
    format!(
        "it passes, but it breaks features that passed before: {}. The first one's last lines:\n```\n{tail}\n```",
        named.join("; ")
    )
}

fn describe(score: Score, counts: Option<Counts>) -> String {
    match (counts, score.passed) {
        (Some(c), _) => format!("{} of {} tests passing", c.passed, c.total()),
        (None, true) => "passing".into(),
        (None, false) => "failing".into(),
    }
}

fn score(outcome: &CheckOutcome, counts: Option<Counts>) -> Score {
    Score {
        passed: outcome.passed,
        others_passing: 0,
        tests_passing: counts.map_or(0, |c| c.passed),
    }
}

static COUNT_PATTERNS: LazyLock<Vec<(Regex, Runner)>> = LazyLock::new(|| {
    [
        (r"(?m)^Ran (\d+) tests? in ", Runner::Unittest),
        (
            r"(?m)^test result: \w+\. (\d+) passed; (\d+) failed",
            Runner::Cargo,
        ),
        (
            r"(?m)^=*\s*(.*\d+ (?:passed|failed|errors?)\b.*) in [\d.]+m?s\b",
            Runner::Pytest,
        ),
        (r"(?m)^Tests:\s+(.*\d+ total)", Runner::Jest),
        (r"(?m)^(?:#|ℹ) pass (\d+)\s*$", Runner::Node),
        (r"(?m)^\s*--- (?:PASS|FAIL): ", Runner::Go),
    ]
    .into_iter()
    .filter_map(|(p, r)| Regex::new(p).ok().map(|re| (re, r)))
    .collect()
});

#[derive(Debug, Clone, Copy)]
enum Runner {
    Unittest,
    Cargo,
    Pytest,
    Jest,
    Node,
    Go,
}

/// The tests passing and failing in a test runner's output, when its summary says.
pub fn counts(output: &str) -> Option<Counts> {
    COUNT_PATTERNS
        .iter()
        .find(|(re, _)| re.is_match(output))
        .and_then(|(re, runner)| runner_counts(*runner, re, output))
}

fn runner_counts(runner: Runner, re: &Regex, output: &str) -> Option<Counts> {
    let num = |text: &str, pattern: &str| -> u32 {
        Regex::new(pattern)
            .ok()
            .and_then(|r| r.captures(text))
            .and_then(|c| c.get(1))
            .and_then(|m| m.as_str().parse().ok())
            .unwrap_or(0)
    };
    match runner {
        Runner::Unittest => {
            let ran: u32 = re
                .captures_iter(output)
                .last()?
                .get(1)?
                .as_str()
                .parse()
                .ok()?;
            let failed = num(output, r"(?m)^FAILED \(.*failures=(\d+)")
                + num(output, r"(?m)^FAILED \(.*errors=(\d+)");
            let skipped = num(output, r"(?m)^(?:OK|FAILED) \(.*skipped=(\d+)");
            Some(Counts {
                passed: ran.saturating_sub(failed + skipped),
                failed,
            })
        }
        Runner::Cargo => Some(re.captures_iter(output).fold(Counts::default(), |acc, c| {
            let n = |i| {
                c.get(i)
                    .and_then(|m| m.as_str().parse::<u32>().ok())
                    .unwrap_or(0)
            };
            Counts {
                passed: acc.passed + n(1),
                failed: acc.failed + n(2),
            }
        })),
        Runner::Pytest | Runner::Jest => {
            let line = re
                .captures_iter(output)
                .last()?
                .get(1)?
                .as_str()
                .to_string();
            Some(Counts {
                passed: num(&line, r"(\d+) passed"),
                failed: num(&line, r"(\d+) failed") + num(&line, r"(\d+) errors?"),
            })
        }
        Runner::Node => Some(Counts {
            passed: num(output, r"(?m)^(?:#|ℹ) pass (\d+)"),
            failed: num(output, r"(?m)^(?:#|ℹ) fail (\d+)"),
        }),
        Runner::Go => Some(Counts {
            passed: output.matches("--- PASS: ").count() as u32,
            failed: output.matches("--- FAIL: ").count() as u32,
        }),
    }
}

/// A hash of the work tree's content as git sees it: HEAD's files with the
/// uncommitted changes applied (build output left out). The same content
/// committed or not has the same fingerprint.
fn fingerprint(workspace: &Path) -> anyhow::Result<u64> {
    let repo = Repository::open(workspace)?;
    let mut files: BTreeMap<String, Option<Oid>> = BTreeMap::new();
    if let Ok(tree) = repo.head().and_then(|h| h.peel_to_tree()) {
        tree.walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let name = entry.name().unwrap_or("");
                files.insert(format!("{dir}{name}"), Some(entry.id()));
            }
            git2::TreeWalkResult::Ok
        })?;
    }
    for path in uncommitted_paths(&repo)? {
        let full = workspace.join(&path);
        let id = Oid::hash_file(git2::ObjectType::Blob, &full).ok();
        files.insert(path, id);
    }
    let mut h = DefaultHasher::new();
    files.hash(&mut h);
    Ok(h.finish())
}

/// Write the work tree (build output left out) as a tree object, leaving
/// the index on disk as it was.
fn snapshot(workspace: &Path) -> anyhow::Result<Oid> {
    let repo = Repository::open(workspace)?;
    let mut index = repo.index()?;
    stage_all(&mut index)?;
    Ok(index.write_tree()?)
}

/// Commit the last state if it is not, then check out `best` and commit it on top.
fn restore(workspace: &Path, best: Oid, said: &str) -> anyhow::Result<()> {
    let repo = Repository::open(workspace)?;
    let sig = harness_signature()?;
    let mut parent = repo.head()?.peel_to_commit()?;
    if !uncommitted_paths(&repo)?.is_empty() {
        let mut index = repo.index()?;
        stage_all(&mut index)?;
        index.write()?;
        let tree = repo.find_tree(index.write_tree()?)?;
        let message = "WIP: the session's last state, kept in the history";
        let oid = repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &[&parent])?;
        parent = repo.find_commit(oid)?;
    }
    let tree = repo.find_tree(best)?;
    let mut checkout = git2::build::CheckoutBuilder::new();
    checkout.force();
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))?;
    let mut index = repo.index()?;
    index.read_tree(&tree)?;
    index.write()?;
    let message = format!(
        "Restore {said}\n\nThe harness keeps the state in which the feature's check did best."
    );
    repo.commit(Some("HEAD"), &sig, &sig, &message, &tree, &[&parent])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_counts_are_read_from_common_runners() {
        let cases: &[(&str, Option<(u32, u32)>)] = &[
            (
                "F.F..\n----------------------------------------------------------------------\nRan 13 tests in 0.002s\n\nFAILED (failures=4, errors=2)\n",
                Some((7, 6)),
            ),
            ("Ran 13 tests in 0.001s\n\nOK\n", Some((13, 0))),
            ("=========== 2 failed, 11 passed in 0.05s ===========", Some((11, 2))),
            ("=========== 1 error in 0.05s ===========", Some((0, 1))),
            (
                "test result: FAILED. 3 passed; 2 failed; 0 ignored\ntest result: ok. 4 passed; 0 failed; 0 ignored",
                Some((7, 2)),
            ),
            ("Tests:       1 failed, 8 passed, 9 total", Some((8, 1))),
            ("# tests 10\n# suites 0\n# pass 7\n# fail 3\n", Some((7, 3))),
            ("ℹ tests 10\nℹ pass 9\nℹ fail 1\n", Some((9, 1))),
            ("--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\n", Some((1, 1))),
            ("Traceback (most recent call last):\nSyntaxError: invalid syntax", None),
        ];
        for (output, expected) in cases {
            let got = counts(output).map(|c| (c.passed, c.failed));
            assert_eq!(got, *expected, "{output}");
        }
    }

    #[test]
    fn a_passing_check_beats_any_count_and_more_features_beat_more_tests() {
        let s = |passed, others_passing, tests_passing| Score {
            passed,
            others_passing,
            tests_passing,
        };
        assert!(s(true, 0, 0) > s(false, 40, 12));
        assert!(s(false, 3, 0) > s(false, 2, 9));
        assert!(s(false, 2, 7) > s(false, 2, 0));
    }

    /// A state for [`the_state_kept_is_the_one_to_build_on`]: `others`
    /// features' checks passing, `gained` and `broken` named.
    fn state(others: u32, own: bool, gained: &[&str], broken: &[&str], tree: u8) -> Best {
        Best {
            score: Score {
                passed: own && broken.is_empty(),
                others_passing: others,
                tests_passing: u32::from(own),
            },
            counts: None,
            tree: Oid::from_bytes(&[tree; 20]).unwrap(),
            step: 1,
            summary: String::new(),
            gained: gained.iter().map(|g| g.to_string()).collect(),
            broken: broken.iter().map(|b| b.to_string()).collect(),
            own_passed: own,
            echoed: false,
            as_found: false,
        }
    }

    #[test]
    fn the_state_kept_is_the_one_to_build_on() {
        // Four features passed at the start.
        let found = Best {
            as_found: true,
            ..state(4, false, &[], &[], 1)
        };
        let near = state(3, true, &[], &["F001"], 2);
        let gaining = state(6, false, &["F007", "F008"], &[], 3);
        let check = |best: &Best, near: Option<&Best>| EditCheck {
            best: Some(best.clone()),
            near: near.cloned(),
            ..EditCheck::default()
        };

        // Nothing better than the files as found: they stay, no hint.
        let only_found = check(&found, None);
        assert_eq!(only_found.kept(4).map(|b| b.tree), Some(found.tree));
        assert!(only_found.kept_passes_others(4, Some("F002")).is_empty());
        // A near state beats the files as found, though it scores lower:
        // kept, and its own feature is hinted first.
        let with_near = check(&found, Some(&near));
        assert_eq!(with_near.kept(4).map(|b| b.tree), Some(near.tree));
        assert_eq!(with_near.kept_passes_others(4, Some("F002")), ["F002"]);
        // A best that gains more features than the near state keeps: the best.
        let both = check(&gaining, Some(&near));
        assert_eq!(both.kept(4).map(|b| b.tree), Some(gaining.tree));
        assert_eq!(both.kept_passes_others(4, Some("F002")), ["F007", "F008"]);
        // A near state that also gains, passing as many: it, its feature first.
        let near_gaining = state(6, true, &["F007", "F008", "F009"], &["F001"], 4);
        let both = check(&gaining, Some(&near_gaining));
        assert_eq!(both.kept(4).map(|b| b.tree), Some(near_gaining.tree));
        assert_eq!(
            both.kept_passes_others(4, Some("F002")),
            ["F002", "F007", "F008", "F009"]
        );
        // Echoed or not, the kept state is the same (echoing only stops
        // showing it to this session's attempts).
        let echoed = Best {
            echoed: true,
            ..near.clone()
        };
        assert_eq!(
            check(&found, Some(&echoed)).kept(4).map(|b| b.tree),
            Some(near.tree)
        );
        assert!(check(&found, Some(&echoed)).to_build_on(4, true).is_none());
    }
}
