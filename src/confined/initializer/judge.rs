//! Whether an acceptance test the model wrote can stand for its feature:
//! it parses, it runs at least one test, it fails with nothing built, and
//! it fails for the feature's sake rather than for a package the project
//! does not have. What is wrong goes back to the model in one line and the
//! output's tail.

use std::path::Path;
use std::sync::LazyLock;
use std::time::Duration;

use regex::Regex;

use super::framework::Framework;
use super::framework::Module;
use super::plan::Planned;
use crate::confined::checks::{run_command, CheckOutcome};

/// Lines of a check's output sent back with an unusable test.
const TAIL_LINES: usize = 25;

/// One feature's test to write and judge.
pub struct TestJob<'a> {
    pub id: &'a str,
    pub planned: &'a Planned,
    pub test: &'a str,
    pub check: &'a str,
    pub framework: Framework,
    pub module: &'a Module,
    pub timeout: Duration,
    /// The functions this feature is about, for the test's skeleton.
    pub names: Vec<String>,
    /// Which of them are methods, of which class.
    pub api: &'a super::stub::Api,
}

/// Ok when the test is usable; Err says why not, then the output's tail.
pub(super) fn judge(ws: &Path, job: &TestJob) -> Result<(), String> {
    if let Some(command) = job.framework.syntax_check(job.test) {
        let parsed = run_command(ws, "syntax", &command, job.timeout);
        if !parsed.passed {
            return Err(with_output("the test file does not parse", &parsed));
        }
    }
    let run = run_command(ws, job.id, job.check, job.timeout);
    if run.passed {
        return Err(with_output(
            "it passes with nothing implemented: it must import the code and assert the values the spec gives, so that it fails until the feature is built",
            &run,
        ));
    }
    if job.framework.ran_no_tests(&run.output) {
        return Err(with_output(
            "no test ran: write test functions the runner finds",
            &run,
        ));
    }
    if let Some(missing) = foreign_module(&run.output, job.framework, &job.module.import) {
        return Err(with_output(
            &format!("it needs `{missing}`, which this project does not have: use only the standard library and the project's own code"),
            &run,
        ));
    }
    Ok(())
}

fn with_output(why: &str, run: &CheckOutcome) -> String {
    format!(
        "{why}.\n`{}` said:\n```\n{}\n```",
        run.command.as_deref().unwrap_or(""),
        crate::progress::tail(&run.output, TAIL_LINES)
    )
}

/// A module the test imports that is neither the standard library nor the
/// project's own code under test.
fn foreign_module(output: &str, framework: Framework, own: &str) -> Option<String> {
    static PYTHON: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"No module named '([A-Za-z0-9_.]+)'").ok());
    static NODE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"Cannot find (?:module|package) '([^']+)'").ok());
    let re = match framework {
        Framework::Unittest | Framework::Pytest => PYTHON.as_ref()?,
        Framework::NodeTest => NODE.as_ref()?,
        Framework::CargoTest => return None,
    };
    let own_root = own
        .trim_start_matches("../")
        .split(['.', '/'])
        .next()
        .unwrap_or(own);
    re.captures_iter(output)
        .map(|c| c[1].to_string())
        .find(|m| {
            let root = m.trim_start_matches("./").trim_start_matches("../");
            let root = root.split(['.', '/']).next().unwrap_or(root);
            root != own_root && !m.starts_with('.') && !m.starts_with('/') && root != "tests"
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_package_the_project_lacks_counts_as_foreign() {
        let py = "ModuleNotFoundError: No module named 'textstats'";
        assert_eq!(foreign_module(py, Framework::Unittest, "textstats"), None);
        let numpy = "ModuleNotFoundError: No module named 'numpy'";
        assert_eq!(
            foreign_module(numpy, Framework::Unittest, "textstats"),
            Some("numpy".into())
        );
        let js = "Error: Cannot find module '../slug.js'";
        assert_eq!(foreign_module(js, Framework::NodeTest, "../slug.js"), None);
        let lodash = "Error: Cannot find module 'lodash'";
        assert_eq!(
            foreign_module(lodash, Framework::NodeTest, "../slug.js"),
            Some("lodash".into())
        );
    }
}
