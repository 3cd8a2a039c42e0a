//! `[checks] suite`: one command that runs the whole acceptance suite, so
//! that the regression checks of N passing features cost one process.
//!
//! The suite runs where a regression check would (the candidate checkout,
//! confined, after `init.sh`) with `LONGRUN_SUITE_RESULTS` naming a file it
//! may write: JSON lines, one per feature it tested,
//! `{"feature": "F001", "passed": true}`. The file only names failures; the
//! verdict still rests on the suite's exit status, which the orchestrator
//! read from the process it started:
//!
//! - exit 0: every passing feature still passes, except those the file
//!   reports failed;
//! - any other exit: the features the file reports failed, or has no line
//!   for, fail; when that leaves none, every one fails ("the suite failed"),
//!   so code under test that writes the file cannot turn a failing suite
//!   into a pass, only blame the wrong feature.
//!
//! Each feature gets its own [`CheckRun`] named like a regression check, so a
//! regression is still named by feature in the verdict.

use std::borrow::{Borrow, Cow};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::steps::Outcome;
use super::steps::{CheckRun, StepKind, REGRESSION};
use crate::features::Feature;

/// The variable that names the results file for the suite.
pub const RESULTS_ENV: &str = "LONGRUN_SUITE_RESULTS";
/// The name of the suite's own step.
pub const STEP: &str = "suite";
/// The most of the results file that is read.
const RESULTS_CAP: u64 = 4 << 20;
/// Seconds a read of the results file may take.
const RESULTS_DEADLINE: u64 = 10;

/// The results file of a verification whose scratch directory is `dir`.
pub fn results_path(dir: &Path) -> PathBuf {
    dir.join("suite-results.jsonl")
}

/// One line of the results file; the id is borrowed from the text unless
/// it has escapes (a thousand passing features are a thousand lines a session).
#[derive(Debug, Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    feature: Cow<'a, str>,
    passed: bool,
}

/// What the suite reported per feature id; malformed lines are skipped and
/// a feature reported twice keeps its worst result.
pub fn parse_results(text: &str) -> HashMap<Cow<'_, str>, bool> {
    let mut results: HashMap<Cow<'_, str>, bool> = HashMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(Line { feature, passed }) = serde_json::from_str::<Line>(line) {
            let entry = results.entry(feature).or_insert(passed);
            *entry &= passed;
        }
    }
    results
}

/// The results file as text: at most [`RESULTS_CAP`] bytes, read within
/// [`RESULTS_DEADLINE`] and never from a symlink, a FIFO or a device (code
/// under test writes it; see [`crate::fsutil::read_bounded`]); none is no
/// results. Anything else there is an error saying what stood there: the
/// suite's run is then a failure, whatever its exit status.
pub fn read_results(path: &Path) -> Result<String, String> {
    let bounds = crate::fsutil::Bounds::head(RESULTS_CAP, RESULTS_DEADLINE);
    match crate::fsutil::read_bounded(path, bounds) {
        Ok(Some(read)) => Ok(String::from_utf8_lossy(&read.bytes).into_owned()),
        Ok(None) => Ok(String::new()),
        Err(e) => Err(format!(
            "the suite's results file was not read, so the suite counts as failed: {}",
            crate::sanitize::line(&format!("{e:#}"))
        )),
    }
}

/// The suite's run turned into one regression [`CheckRun`] per feature.
/// `passed` is whether the suite exited 0; `output_tail` is its output;
/// `results` what [`read_results`] found: a results file that could not be
/// read fails every feature, with the reason.
pub fn regression_runs<F: Borrow<Feature>>(
    features: &[F],
    command: &str,
    passed: bool,
    output_tail: &str,
    results: &Result<String, String>,
) -> Vec<CheckRun> {
    let (text, unread) = match results {
        Ok(text) => (text.as_str(), None),
        Err(why) => ("", Some(why.as_str())),
    };
    let passed = passed && unread.is_none();
    let reported = parse_results(text);
    let ids = || features.iter().map(|f| f.borrow().id.as_str());
    let mut failing: HashSet<&str> = ids()
        .filter(|id| match reported.get(*id) {
            Some(ok) => !ok,
            None => !passed,
        })
        .collect();
    let mut blame = "the suite reported it failed";
    if !passed && failing.is_empty() {
        failing = ids().collect();
        blame = "the suite failed and reported no failing feature";
    }
    if let Some(why) = unread {
        blame = why;
    }
    ids()
        .map(|id| {
            let failed = failing.contains(id);
            let why = match reported.get(id) {
                None if failed && blame == "the suite reported it failed" => {
                    "the suite failed and reported nothing for it"
                }
                _ => blame,
            };
            CheckRun {
                name: format!("{REGRESSION} {id}"),
                command: command.to_string(),
                passed: !failed,
                output_tail: if failed {
                    format!("{output_tail}\n[{why}]")
                } else {
                    String::new()
                },
                network: Vec::new(),
                kind: StepKind::Regression,
                feature: Some(id.to_string()),
                outcome: if failed {
                    Outcome::Failed(1)
                } else {
                    Outcome::Passed
                },
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::FeatureList;

    fn features(ids: &[&str]) -> Vec<Feature> {
        let items: Vec<String> = ids
            .iter()
            .map(|id| {
                format!(
                    r#"{{"id":"{id}","description":"d","check":"true","passes":true,"category":"c","steps":[]}}"#
                )
            })
            .collect();
        FeatureList::parse(&format!(r#"{{"features":[{}]}}"#, items.join(",")))
            .map(|l| l.features)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    fn failed(runs: &[CheckRun]) -> Vec<String> {
        runs.iter()
            .filter(|r| !r.passed)
            .map(|r| r.name.clone())
            .collect()
    }

    #[test]
    fn a_passing_suite_passes_every_feature_it_did_not_blame() {
        let f = features(&["a", "b", "c"]);
        let runs = regression_runs(
            &f,
            "make test",
            true,
            "",
            &Ok("{\"feature\":\"b\",\"passed\":false}\n".into()),
        );
        assert_eq!(failed(&runs), vec![format!("{REGRESSION} b")]);
        assert_eq!(runs.len(), 3);
        assert!(runs.iter().all(|r| r.command == "make test"));
    }

    #[test]
    fn a_failing_suite_fails_the_features_it_names_or_omits() {
        let f = features(&["a", "b", "c"]);
        let results = "{\"feature\":\"a\",\"passed\":true}\n{\"feature\":\"b\",\"passed\":false}\n";
        let runs = regression_runs(&f, "suite", false, "boom", &Ok(results.into()));
        assert_eq!(
            failed(&runs),
            vec![format!("{REGRESSION} b"), format!("{REGRESSION} c")]
        );
        assert!(runs[2].output_tail.contains("reported nothing for it"));
    }

    #[test]
    fn a_failing_suite_that_blames_nothing_fails_everything() {
        let f = features(&["a", "b"]);
        let all_passed =
            "{\"feature\":\"a\",\"passed\":true}\n{\"feature\":\"b\",\"passed\":true}\n";
        for results in ["", "not json\n", all_passed] {
            let runs = regression_runs(&f, "suite", false, "", &Ok(results.into()));
            assert_eq!(failed(&runs).len(), 2, "results {results:?}");
        }
    }

    #[test]
    fn a_results_file_that_cannot_be_read_fails_a_passing_suite_with_the_reason() {
        let f = features(&["a", "b"]);
        let why = "the suite's results file was not read: a FIFO".to_string();
        let runs = regression_runs(&f, "suite", true, "ok", &Err(why));
        assert_eq!(failed(&runs).len(), 2);
        assert!(runs[0]
            .output_tail
            .ends_with("[the suite's results file was not read: a FIFO]"));
    }

    #[test]
    fn a_fifo_at_the_results_path_is_an_error_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = results_path(dir.path());
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let why = read_results(&path).unwrap_err();
        assert!(
            why.contains("a FIFO") && why.contains("counts as failed"),
            "{why}"
        );
        assert_eq!(read_results(&dir.path().join("none")), Ok(String::new()));
    }

    #[test]
    fn a_feature_reported_twice_keeps_its_worst_result() {
        let r = parse_results(
            "{\"feature\":\"a\",\"passed\":true}\n{\"feature\":\"a\",\"passed\":false}\n",
        );
        assert_eq!(r.get("a"), Some(&false));
    }

    #[test]
    fn an_id_written_with_escapes_is_the_same_id() {
        let r = parse_results("{\"feature\":\"F\\u0030\\u00311\",\"passed\":true}\n");
        assert_eq!(r.get("F011"), Some(&true));
    }
}
