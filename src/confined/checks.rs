//! The checks the harness itself runs before a session may end: the
//! feature's check, the global checks, the features.json rules, protected
//! paths, a committed tree and progress.md touched.
//!
//! The rules are the orchestrator's own verification rules, reused; only the
//! place differs (the session's workspace, not a fresh checkout), so a model
//! learns what verification will say while it can still act on it.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use git2::{Oid, Repository};
use regex::Regex;

use crate::protocol::WorkerConfig;
use crate::schema::Role;
use crate::{git as repo, progress};

/// Lines of a failing command's output shown to the model.
const TAIL_LINES: usize = 40;
/// Failing test names listed, at most.
const MAX_TEST_NAMES: usize = 20;

/// One check and how it went.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckOutcome {
    pub name: String,
    /// The shell command, for command checks; rule checks have none.
    pub command: Option<String>,
    pub passed: bool,
    /// The last lines of a command's output, or the broken rules.
    pub output: String,
}

pub struct SessionChecks {
    role: Role,
    commands: Vec<(String, String)>,
    /// `commands[0]` is the assigned feature's check.
    feature_check: bool,
    paths: crate::rules::PathRules,
    feature_id: Option<String>,
    base: Option<Oid>,
    timeout: Duration,
    /// The other features with a check, as features.json held them at the
    /// session's base: read at their first use (only sessions whose harness
    /// commits for the model run them).
    others: OnceLock<Vec<OtherCheck>>,
    /// Which of them passed on the files as the session found them, when
    /// run there ([`SessionChecks::run_others_at_start`]).
    at_start: OnceLock<Vec<bool>>,
    /// The feature's check timed out at its last run.
    feature_timed_out: AtomicBool,
}

/// Another feature's check, as the session's base commit holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherCheck {
    pub id: String,
    pub command: String,
    /// It passed at the base: breaking it is a regression.
    pub passing: bool,
}

/// The other features' checks run on one state ([`SessionChecks::run_others`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OthersRun {
    /// Features passing at the start whose checks fail now, with what they
    /// said (the first [`MAX_REGRESSIONS_SHOWN`]).
    pub broken: Vec<(String, CheckOutcome)>,
    /// Features passing at the start whose checks still pass.
    pub kept: u32,
    /// Features failing at the start whose checks pass now.
    pub gained: Vec<String>,
}

/// The most checks of other features the harness runs on one state
/// (verification, outside, runs every passing feature's).
const MAX_OTHER_CHECKS: usize = 100;
/// Broken features named to the model, at most.
pub const MAX_REGRESSIONS_SHOWN: usize = 3;

impl SessionChecks {
    /// The checks of this session, with the workspace's HEAD now as its base.
    pub fn new(config: &WorkerConfig, workspace: &Path) -> SessionChecks {
        let base = Repository::open(workspace)
            .ok()
            .and_then(|r| repo::head(&r));
        let mut commands = Vec::new();
        let mut feature_check = false;
        if config.role == Role::Worker {
            if let Some(f) = &config.feature {
                if let Some(check) = &f.check {
                    commands.push((format!("feature {} check", f.id), check.clone()));
                    feature_check = true;
                }
            }
            for (i, c) in config.checks.iter().enumerate() {
                commands.push((format!("check {}", i + 1), c.clone()));
            }
        }
        SessionChecks {
            role: config.role,
            commands,
            feature_check,
            // Patterns were checked when longrun.toml was read; were one bad, nothing matches.
            paths: crate::rules::PathRules::new(&config.protected, &config.frozen)
                .unwrap_or_else(|_| crate::rules::PathRules::none()),
            feature_id: config.feature.as_ref().map(|f| f.id.clone()),
            base,
            timeout: Duration::from_secs(config.check_timeout_secs),
            others: OnceLock::new(),
            at_start: OnceLock::new(),
            feature_timed_out: AtomicBool::new(false),
        }
    }

    /// The other features' checks, read from features.json at the base
    /// commit (not the file in the workspace, which the model may change).
    fn others(&self, workspace: &Path) -> &[OtherCheck] {
        self.others.get_or_init(|| match self.role {
            Role::Worker => other_checks(workspace, self.base, self.feature_id.as_deref()),
            Role::Initializer => Vec::new(),
        })
    }

    /// Run the other features' checks on the files as the session found
    /// them, once, before any change: a state is then judged against what
    /// passed there, not against the `passes` marks (a test often passes on
    /// main before the session assigned to it has marked it).
    pub fn run_others_at_start(&self, workspace: &Path) {
        self.at_start.get_or_init(|| {
            self.others(workspace)
                .iter()
                .take(MAX_OTHER_CHECKS)
                .map(|o| self.run_other(workspace, o).0.passed)
                .collect()
        });
    }

    /// Whether the feature's check timed out at its last run.
    pub fn feature_timed_out(&self) -> bool {
        self.feature_timed_out.load(Ordering::Relaxed)
    }

    /// The check of `other`, and whether it timed out.
    fn run_other(&self, workspace: &Path, other: &OtherCheck) -> (CheckOutcome, bool) {
        let name = format!("feature {} check", other.id);
        run_timed(workspace, &name, &other.command, self.timeout)
    }

    /// Whether other feature `index` passed at the start: as run there,
    /// else as features.json marks it.
    fn passed_at_start(&self, index: usize, other: &OtherCheck) -> bool {
        self.at_start
            .get()
            .and_then(|s| s.get(index).copied())
            .unwrap_or(other.passing)
    }

    /// How many other features passed at the start.
    pub fn passing_at_start(&self, workspace: &Path) -> u32 {
        let others = self.others(workspace).iter().take(MAX_OTHER_CHECKS);
        others
            .enumerate()
            .filter(|(i, o)| self.passed_at_start(*i, o))
            .count() as u32
    }

    /// Run the checks of the other features (at most [`MAX_OTHER_CHECKS`],
    /// in the list's order): those that passed at the start and fail now are
    /// `broken`; those that failed there and pass now are `gained`.
    /// Once one of them, or the feature's own check just before, timed out
    /// on this state, the rest are not run: they count as failing. A state
    /// that hangs (the 1.5B model once wrote a parser looping forever) cost
    /// the full timeout for every feature's check, more than the session's
    /// whole wall time, and so did every later session that tried that
    /// session's work first.
    pub fn run_others(&self, workspace: &Path) -> OthersRun {
        let mut run = OthersRun::default();
        let others = self.others(workspace).iter().take(MAX_OTHER_CHECKS);
        let mut hung = self.feature_timed_out();
        for (index, other) in others.enumerate() {
            let before = self.passed_at_start(index, other);
            let outcome = match hung {
                true => CheckOutcome {
                    name: format!("feature {} check", other.id),
                    command: Some(other.command.clone()),
                    passed: false,
                    output: "[not run: a check before it on these files timed out]".into(),
                },
                false => {
                    let (outcome, timed_out) = self.run_other(workspace, other);
                    hung = timed_out;
                    outcome
                }
            };
            match (before, outcome.passed) {
                (true, true) => run.kept += 1,
                (true, false) if run.broken.len() < MAX_REGRESSIONS_SHOWN => {
                    run.broken.push((other.id.clone(), outcome));
                }
                (true, false) => {}
                (false, true) => run.gained.push(other.id.clone()),
                (false, false) => {}
            }
        }
        run
    }

    /// The assigned feature's id, for a worker session.
    pub fn feature_id(&self) -> Option<&str> {
        self.feature_id.as_deref()
    }

    /// The assigned feature's check command, when it has one.
    pub fn feature_check(&self) -> Option<&str> {
        self.commands
            .first()
            .filter(|_| self.feature_check)
            .map(|(_, c)| c.as_str())
    }

    /// The session's base commit: HEAD when the session started.
    pub fn base(&self) -> Option<Oid> {
        self.base
    }

    /// The assigned feature's check alone, when it has one: what the harness
    /// runs after edits.
    pub fn run_feature(&self, workspace: &Path) -> Option<CheckOutcome> {
        let (name, command) = self.commands.first().filter(|_| self.feature_check)?;
        let (outcome, timed_out) = run_timed(workspace, name, command, self.timeout);
        self.feature_timed_out.store(timed_out, Ordering::Relaxed);
        Some(outcome)
    }

    /// Run every check in `workspace`, rules first.
    pub fn run(&self, workspace: &Path) -> Vec<CheckOutcome> {
        let mut out = vec![self.rules(workspace)];
        for (name, command) in &self.commands {
            out.push(run_command(workspace, name, command, self.timeout));
        }
        out
    }

    fn rules(&self, workspace: &Path) -> CheckOutcome {
        let problems = match self.rule_problems(workspace) {
            Ok(p) => p,
            Err(e) => vec![format!("the harness could not read the repository: {e:#}")],
        };
        CheckOutcome {
            name: crate::protocol::SESSION_RULES.into(),
            command: None,
            passed: problems.is_empty(),
            output: problems
                .iter()
                .map(|p| format!("- {p}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    fn rule_problems(&self, workspace: &Path) -> anyhow::Result<Vec<String>> {
        let repo = Repository::open(workspace)?;
        let mut problems = Vec::new();
        let dirty = repo::uncommitted_paths(&repo)?;
        if !dirty.is_empty() {
            problems.push(format!(
                "uncommitted changes in {}: commit them (`git add -A && git commit -m ...`)",
                list(&dirty)
            ));
        }
        let Some(head) = repo::head(&repo) else {
            problems.push("nothing is committed yet".into());
            return Ok(problems);
        };
        let Some(base) = self.base else {
            return Ok(problems);
        };
        if !repo::descends_from(&repo, head, base)? {
            problems.push("HEAD no longer descends from the session's base: history was rewritten; never reset, rebase or amend earlier commits".into());
            return Ok(problems);
        }
        // The same reserved-path rule verification applies (`.git`, `.longrun`).
        problems.extend(crate::rules::reserved_path_problems(&repo, base, head)?);
        let changed = repo::changed_paths(&repo, base, head)?;
        let initializer = self.role == Role::Initializer;
        for problem in self.paths.problems(&repo, base, head, initializer)? {
            problems.push(format!("{problem}; restore it"));
        }
        match self.role {
            Role::Initializer => {
                problems.extend(crate::rules::initializer_problems(&repo, Some(base), head)?)
            }
            Role::Worker => {
                let id = self.feature_id.as_deref().unwrap_or("");
                problems.extend(crate::rules::worker_problems(&repo, base, head, id)?);
                if !changed.iter().any(|p| p == progress::FILE_NAME) {
                    problems.push(format!(
                        "{} was not updated: append what you did and what the next session should know, and commit",
                        progress::FILE_NAME
                    ));
                }
            }
        }
        Ok(problems)
    }
}

/// Run before a check, so that it sees what verification's steps see:
/// nothing that steers an interpreter, and Python kept off the working
/// directory and the user site.
const CHECK_ENV: &str = "unset BASH_ENV ENV PYTHONPATH PYTHONSTARTUP PYTHONHOME NODE_OPTIONS \
     LD_PRELOAD LD_LIBRARY_PATH; export PYTHONSAFEPATH=1 PYTHONNOUSERSITE=1 \
     PYTHONDONTWRITEBYTECODE=1; ";

pub(super) fn run_command(
    workspace: &Path,
    name: &str,
    command: &str,
    timeout: Duration,
) -> CheckOutcome {
    run_timed(workspace, name, command, timeout).0
}

/// [`run_command`], and whether it timed out.
fn run_timed(
    workspace: &Path,
    name: &str,
    command: &str,
    timeout: Duration,
) -> (CheckOutcome, bool) {
    let line = format!("{CHECK_ENV}{command}");
    let mut timed_out = false;
    let (passed, output) = match crate::confined::tools::run_shell(workspace, &line, timeout) {
        Ok(o) => {
            timed_out = o.timed_out;
            let status = match (o.timed_out, o.exit_code) {
                (true, _) => format!("[timed out after {} s]", timeout.as_secs()),
                (false, Some(0)) => String::new(),
                (false, Some(code)) => format!("[exit code {code}]"),
                (false, None) => "[killed by a signal]".into(),
            };
            let text = format!("{}\n{status}", o.output.trim_end());
            (status.is_empty(), relative(text.trim(), workspace))
        }
        Err(e) => (false, format!("the harness could not run it: {e:#}")),
    };
    let outcome = CheckOutcome {
        name: name.to_string(),
        command: Some(command.to_string()),
        passed,
        output: progress::tail(output.trim_end(), TAIL_LINES),
    };
    (outcome, timed_out)
}

/// `output` with the workspace's path taken off the paths in it: a
/// traceback's `File "/home/.../sessions/0007/work/duration.py"` becomes
/// `File "duration.py"`, the name the model knows, in fewer tokens.
fn relative(output: &str, workspace: &Path) -> String {
    let prefix = format!("{}/", workspace.display());
    match prefix.len() > 1 {
        true => output.replace(&prefix, ""),
        false => output.to_string(),
    }
}

/// The features other than `assigned` with a check, as features.json held
/// them at commit `base` of the workspace's repository (none when it cannot
/// be read: the harness then commits on the feature's check alone, and
/// verification outside runs every passing feature's check anyway).
fn other_checks(workspace: &Path, base: Option<Oid>, assigned: Option<&str>) -> Vec<OtherCheck> {
    let list = base.and_then(|base| {
        let repo = Repository::open(workspace).ok()?;
        crate::features::list_at(&repo, base).ok()??.ok()
    });
    let Some(list) = list else {
        return Vec::new();
    };
    list.features
        .iter()
        .filter(|f| Some(f.id.as_str()) != assigned)
        .filter_map(|f| {
            Some(OtherCheck {
                id: f.id.clone(),
                command: f.check.clone()?,
                passing: f.passes,
            })
        })
        .collect()
}

fn list(paths: &[String]) -> String {
    let shown: Vec<&str> = paths.iter().take(10).map(String::as_str).collect();
    match paths.len() {
        n if n > 10 => format!("{} and {} more", shown.join(", "), n - 10),
        _ => shown.join(", "),
    }
}

/// What the model is told when checks fail: which, the failing tests, the last lines.
pub fn summary(failed: &[&CheckOutcome], round: u32, rounds: u32) -> String {
    let mut text = format!(
        "[harness] Before this session may end, the harness ran its checks (round {round} of {rounds}). These failed:\n"
    );
    for f in failed {
        match &f.command {
            None => text.push_str(&format!("\n{}:\n{}\n", f.name, f.output)),
            Some(command) => {
                text.push_str(&format!("\n{} `{command}` failed.", f.name));
                let tests = failing_tests(&f.output);
                if !tests.is_empty() {
                    text.push_str(&format!(" Failing tests: {}.", tests.join(", ")));
                }
                text.push_str(&format!("\nIts last lines:\n```\n{}\n```\n", f.output));
            }
        }
    }
    text.push_str("\nFix these, commit, and reply without a tool call when they pass.");
    text
}

static TEST_NAME_PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"^test (\S+) \.\.\. FAILED",                 // cargo test
        r"^FAILED ([^\s(]\S*?)(?: - |$)", // pytest, not unittest's `FAILED (failures=1)`
        r"^\s*--- FAIL: (\S+)",           // go test
        r"^\s*(?:✕|×|✖) (.+?)(?: \([\d.]+ ?m?s\))?$", // jest, vitest, node --test
        r"^(?:FAIL|ERROR): (\S+) \(",     // python -m unittest
        r"^not ok \d+ - (.+)$",           // TAP
    ]
    .iter()
    .filter_map(|p| Regex::new(p).ok())
    .collect()
});

/// The names of failing tests in a test runner's output, in order, without repeats.
pub fn failing_tests(output: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in output.lines() {
        let found = TEST_NAME_PATTERNS.iter().find_map(|re| {
            re.captures(line)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().trim().to_string())
        });
        if let Some(name) = found.filter(|n| !names.contains(n)) {
            names.push(name);
        }
        if names.len() == MAX_TEST_NAMES {
            break;
        }
    }
    names
}

/// The failing tests, each with why when the runner says it on a line of
/// its own (Python's unittest: the last line of the test's traceback), as
/// `name: why` (why cut to a line), else the bare names.
pub fn failing_tests_with_reasons(output: &str) -> Vec<String> {
    let reasons = unittest_reasons(output);
    failing_tests(output)
        .into_iter()
        .map(|name| match reasons.iter().find(|(n, _)| *n == name) {
            Some((_, why)) => format!("{name}: {}", crate::view::text::truncate(why, 160)),
            None => name,
        })
        .collect()
}

/// unittest's `FAIL: name (...)` / `ERROR: name (...)` blocks: each name and
/// the last non-empty line before the block's end (the exception).
fn unittest_reasons(output: &str) -> Vec<(String, String)> {
    static HEAD: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"^(?:FAIL|ERROR): (\S+) \(").ok());
    let Some(head) = HEAD.as_ref() else {
        return Vec::new();
    };
    let mut found = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in output.lines() {
        if let Some(c) = head.captures(line) {
            found.extend(current.take());
            current = Some((c[1].to_string(), String::new()));
        } else if line.starts_with("======") || line.starts_with("Ran ") {
            found.extend(current.take());
        } else if let Some((_, why)) = current.as_mut() {
            if !line.trim().is_empty() && !line.starts_with("------") {
                *why = line.trim().to_string();
            }
        }
    }
    found.extend(current);
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checks_output_names_files_by_their_path_in_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("t.py"), "raise ValueError('x')\n").unwrap();
        let out = run_command(dir.path(), "t", "python3 t.py", Duration::from_secs(30));
        assert!(!out.passed);
        assert!(
            out.output.contains("File \"t.py\", line 1"),
            "{}",
            out.output
        );
        assert!(
            !out.output.contains(&dir.path().display().to_string()),
            "{}",
            out.output
        );
    }

    #[test]
    fn unittest_failures_come_with_the_last_line_of_their_traceback() {
        let out = "test_a ... ok\ntest_b ... FAIL\ntest_c ... ERROR\n\
            ======================================================================\n\
            FAIL: test_b (t.T.test_b)\n\
            ----------------------------------------------------------------------\n\
            Traceback (most recent call last):\n  File \"t.py\", line 9, in test_b\n    self.assertEqual(f(1), 2)\n\
            AssertionError: 3 != 2\n\n\
            ======================================================================\n\
            ERROR: test_c (t.T.test_c)\n\
            ----------------------------------------------------------------------\n\
            Traceback (most recent call last):\n  File \"t.py\", line 12, in test_c\n\
            ValueError: invalid literal for int() with base 10: '1h'\n\n\
            ----------------------------------------------------------------------\n\
            Ran 3 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n";
        assert_eq!(
            failing_tests_with_reasons(out),
            [
                "test_b: AssertionError: 3 != 2",
                "test_c: ValueError: invalid literal for int() with base 10: '1h'"
            ]
        );
        let cargo = "test a::two ... FAILED\n";
        assert_eq!(failing_tests_with_reasons(cargo), ["a::two"]);
    }

    #[test]
    fn failing_test_names_are_found_in_common_runners() {
        let out = "running 3 tests\ntest a::one ... ok\ntest a::two ... FAILED\n\
                   FAILED tests/test_x.py::test_y - AssertionError\n--- FAIL: TestZ (0.00s)\n  ✕ adds numbers (3 ms)\n\
                   not ok 4 - parses input\ntest a::two ... FAILED\nFAILED (failures=1, errors=2)\n";
        assert_eq!(
            failing_tests(out),
            [
                "a::two",
                "tests/test_x.py::test_y",
                "TestZ",
                "adds numbers",
                "parses input"
            ]
        );
    }

    #[test]
    fn the_summary_names_the_failed_checks_and_their_tests() {
        let cmd = CheckOutcome {
            name: "feature F1 check".into(),
            command: Some("cargo test".into()),
            passed: false,
            output: "test t::a ... FAILED\n[exit code 101]".into(),
        };
        let rules = CheckOutcome {
            name: "session rules".into(),
            command: None,
            passed: false,
            output: "- progress.md was not updated".into(),
        };
        let s = summary(&[&rules, &cmd], 1, 3);
        assert!(s.contains("round 1 of 3"), "{s}");
        assert!(
            s.contains("feature F1 check `cargo test` failed. Failing tests: t::a."),
            "{s}"
        );
        assert!(s.contains("- progress.md was not updated"), "{s}");
    }
}
