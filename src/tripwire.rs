//! A tripwire in an acceptance run: a test the orchestrator writes itself,
//! with a random name no session can know, that must fail (and one that
//! must pass), added to the frozen test file the check runs, so that it
//! runs in the same test process as the code under test. Code that patches
//! the runner (`TestResult.wasSuccessful`, `TestCase.run`, a reporter)
//! patches it for the tripwire too: a run that reports the must-fail test
//! passing, or the must-pass one failing, cannot be trusted.
//!
//! The framework is named by the check's command: `unittest` or `pytest`
//! (pytest collects unittest classes too). A check that selects tests
//! (`-k`, `::`, a dotted test id) or names no single Python test file gets
//! no tripwire, and is judged by its exit status alone.

use crate::rules::is_test_file;

/// One tripwire, planned for a check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tripwire {
    /// The test file (relative to the checkout) it is appended to.
    pub file: String,
    /// The class name, random.
    class: String,
}

/// How a run with a tripwire is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judged {
    /// Only the must-fail test failed: the check's own tests passed.
    Passed,
    /// Something else failed too: the check failed as it would without one.
    Failed,
    /// The runner's report cannot be trusted: why.
    Tampered(String),
}

/// The reason a tampered run gives.
pub const UNTRUSTED: &str = "the test runner's results cannot be trusted";

impl Tripwire {
    /// A tripwire for `command`, whose named test files (relative paths)
    /// are `named`; None when the check is not one it can be added to.
    pub fn plan(command: &str, named: &[String]) -> Option<Tripwire> {
        let words = shlex::split(command)?;
        let framework = words
            .iter()
            .any(|w| w == "unittest" || w == "pytest" || w.ends_with("/pytest"));
        let selects = words
            .iter()
            .any(|w| w == "-k" || w.starts_with("-k=") || w.contains("::") || is_dotted_test_id(w));
        if !framework || selects {
            return None;
        }
        let mut files = named
            .iter()
            .filter(|f| f.ends_with(".py") && is_test_file(f));
        let file = files.next()?.clone();
        if files.next().is_some() {
            return None;
        }
        Some(Tripwire {
            file,
            class: format!("Lr{:016x}", rand::random::<u64>()),
        })
    }

    /// What is appended to the test file.
    pub fn text(&self) -> String {
        let c = &self.class;
        format!(
            "\n\nimport unittest as _{c}_unittest\n\n\n\
             class {c}(_{c}_unittest.TestCase):\n    \
             def test_must_fail(self):\n        self.fail(\"{c}\")\n\n    \
             def test_must_pass(self):\n        pass\n"
        )
    }

    /// Judge a run of the check with the tripwire in it by its exit status
    /// (`exit_ok`) and its output.
    pub fn judge(&self, exit_ok: bool, output: &str) -> Judged {
        let c = &self.class;
        let reported = |test: &str| {
            output.lines().any(|l| {
                l.contains(c)
                    && l.contains(test)
                    && (l.starts_with("FAIL") || l.starts_with("ERROR"))
            })
        };
        if exit_ok {
            return Judged::Tampered(format!(
                "{UNTRUSTED}: the run exited 0 with a generated test that must fail in it"
            ));
        }
        if reported("test_must_pass") {
            return Judged::Tampered(format!(
                "{UNTRUSTED}: a generated test that must pass was reported failing"
            ));
        }
        if !reported("test_must_fail") {
            // The file did not run as far as the tripwire (an import failed, say).
            return Judged::Failed;
        }
        match only_one_failure(output) {
            true => Judged::Passed,
            false => Judged::Failed,
        }
    }
}

/// Whether the run's summary says exactly one test failed and none erred.
fn only_one_failure(output: &str) -> bool {
    let unittest = output.lines().any(|l| l.trim() == "FAILED (failures=1)");
    let pytest = output.lines().any(|l| {
        let l = l.trim_matches(|c: char| c == '=' || c.is_whitespace());
        l.starts_with("1 failed") && !l.contains("error")
    });
    unittest || pytest
}

/// `tests.test_x.Case.test_a`: a dotted id of one test, not a module.
fn is_dotted_test_id(word: &str) -> bool {
    let parts: Vec<&str> = word.split('.').collect();
    parts.len() >= 3
        && !word.contains('/')
        && parts.iter().all(|p| !p.is_empty())
        && !word.ends_with(".py")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire() -> Tripwire {
        Tripwire::plan(
            "python3 -m unittest discover -s tests -p test_mul.py",
            &["tests/test_mul.py".into()],
        )
        .unwrap()
    }

    #[test]
    fn only_a_unittest_or_pytest_run_of_one_whole_file_gets_one() {
        assert_eq!(wire().file, "tests/test_mul.py");
        let named = ["tests/test_mul.py".to_string()];
        assert!(Tripwire::plan("pytest -q tests/test_mul.py", &named).is_some());
        assert!(Tripwire::plan("pytest tests/test_mul.py -k mul", &named).is_none());
        assert!(
            Tripwire::plan("python3 -m unittest tests.test_mul.Case.test_it", &named).is_none()
        );
        assert!(Tripwire::plan("node --test tests/mul.test.js", &named).is_none());
        let two = ["tests/test_a.py".to_string(), "tests/test_b.py".to_string()];
        assert!(Tripwire::plan("pytest tests", &two).is_none());
        assert_ne!(wire().class, wire().class, "the name is random");
    }

    #[test]
    fn a_run_is_judged_by_the_tripwire_it_reports() {
        let w = wire();
        let c = &w.class;
        let honest = format!(
            "F.\n======\nFAIL: test_must_fail (test_mul.{c}.test_must_fail)\n----\nRan 3 tests\n\nFAILED (failures=1)\n"
        );
        assert_eq!(w.judge(false, &honest), Judged::Passed);
        let broken = format!(
            "FAIL: test_it (test_mul.Case.test_it)\nFAIL: test_must_fail (test_mul.{c}.test_must_fail)\nFAILED (failures=2)\n"
        );
        assert_eq!(w.judge(false, &broken), Judged::Failed);
        assert!(matches!(w.judge(true, "OK"), Judged::Tampered(why) if why.starts_with(UNTRUSTED)));
        let flipped = format!("ERROR: test_must_pass (test_mul.{c}.test_must_pass)\nFAIL: test_must_fail ({c})\nFAILED (failures=1)\n");
        assert!(matches!(w.judge(false, &flipped), Judged::Tampered(_)));
        assert_eq!(
            w.judge(false, "ImportError: calc\nFAILED (errors=1)"),
            Judged::Failed
        );
        let pytest = format!("FAILED tests/test_mul.py::{c}::test_must_fail - AssertionError\n==== 1 failed, 2 passed in 0.1s ====\n");
        assert_eq!(w.judge(false, &pytest), Judged::Passed);
        assert!(w.text().contains(&format!("class {c}(")));
    }
}
