//! Search in the whole-file strategy (`[harness] candidates`,
//! `repair_candidates`): an attempt asks for several answers at once; the
//! harness writes each one's files to change, runs the feature's check on
//! them (the runner the check after edits uses) and puts the files back;
//! the best is the attempt's answer, which the loop then writes and checks
//! as any other, so the session's best state and the next attempt's repair
//! start from it.
//!
//! Best-of-8 sampling with the tests as the oracle passed 24 of 34
//! held-out tests where one answer per attempt passed 17 (issue 43's
//! table): this is that search inside the attempts. How many candidates
//! pay for their time is unmeasured; the default is one.
//!
//! Not here: how many are asked (`whole_file.rs`), the requests (the
//! orchestrator serves them at once).

use std::path::Path;

use super::blocks::Blocks;
use super::saved::Saved;
use super::seam::Chosen;
use crate::confined::checks::{CheckOutcome, SessionChecks};
use crate::confined::edit_check::{counts, Counts};
use crate::fsutil::Beneath;
use crate::model::ChatResponse;

/// How a candidate did: its check passing beats any count; then more of
/// its tests passing (as the runner's summary says; 0 when it says
/// nothing) beats fewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Judged {
    pub passed: bool,
    pub tests_passing: u32,
}

/// A check's outcome as a candidate's score, with the counts it read.
pub fn judged(outcome: &CheckOutcome) -> (Judged, Option<Counts>) {
    let counts = counts(&outcome.output);
    let judged = Judged {
        passed: outcome.passed,
        tests_passing: counts.map_or(0, |c| c.passed),
    };
    (judged, counts)
}

/// What came of one candidate.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Its files were written and checked.
    Checked(Judged, Option<Counts>),
    /// It writes none of the files to change (or writes them as they are).
    NoFile,
    /// Not checked: an earlier candidate passed.
    NotRun,
}

/// What the candidates are judged with.
pub struct Judge<'a> {
    pub workspace: &'a Path,
    pub checks: &'a SessionChecks,
    /// The session's files to change: the only files a candidate writes.
    pub files: &'a [String],
    pub blocks: Blocks<'a>,
}

impl Judge<'_> {
    /// The best of `answers` to attempt `attempt` by the feature's check,
    /// the first among equals (the one sampled as a single request would
    /// be); the first when none writes a file. The files to change are as
    /// they were after.
    pub fn choose(&self, answers: &[ChatResponse], attempt: u32) -> Chosen {
        let Ok(tree) = Beneath::open(self.workspace) else {
            return Chosen::default();
        };
        let Some(saved) = Saved::take(&tree, self.workspace, self.files) else {
            return Chosen::default();
        };
        let mut verdicts: Vec<Verdict> = Vec::new();
        let mut tried: Vec<(Vec<(String, String)>, Verdict)> = Vec::new();
        for answer in answers {
            let writes = self.writes(&answer.text);
            let done = verdicts
                .iter()
                .any(|v| matches!(v, Verdict::Checked(j, _) if j.passed));
            let verdict = match tried.iter().find(|(w, _)| *w == writes) {
                _ if writes.is_empty() => Verdict::NoFile,
                _ if done => Verdict::NotRun,
                // The same files as an earlier candidate: the same verdict.
                Some((_, same)) => same.clone(),
                None => self.check(&tree, &saved, &writes),
            };
            tried.push((writes, verdict.clone()));
            verdicts.push(verdict);
        }
        let index = best(&verdicts);
        Chosen {
            index,
            notice: Some(notice(&verdicts, index, attempt)),
        }
    }

    /// The files to change that `text` writes, each with its content.
    fn writes(&self, text: &str) -> Vec<(String, String)> {
        self.blocks
            .writes(text, &[])
            .writes
            .into_iter()
            .filter_map(|(_, call)| {
                let args: serde_json::Value = serde_json::from_str(&call.arguments).ok()?;
                let path = args["path"].as_str()?.to_string();
                let content = args["content"].as_str()?.to_string();
                self.files.contains(&path).then_some((path, content))
            })
            .collect()
    }

    /// Write `writes`, run the feature's check, put the files back.
    fn check(&self, tree: &Beneath, saved: &Saved<'_>, writes: &[(String, String)]) -> Verdict {
        let written = writes.iter().try_for_each(|(path, content)| {
            tree.write(Path::new(path), content.as_bytes(), saved.mode_of(path))
        });
        let outcome = written
            .ok()
            .and_then(|()| self.checks.run_feature(self.workspace));
        if let Err(e) = saved.put_back(tree) {
            tracing::warn!("the files to change could not be put back after a candidate: {e:#}");
        }
        match outcome {
            Some(outcome) => {
                let (judged, counts) = judged(&outcome);
                Verdict::Checked(judged, counts)
            }
            None => Verdict::NoFile,
        }
    }
}

/// The index of the best verdict, the first among equals; 0 when none was checked.
fn best(verdicts: &[Verdict]) -> usize {
    let mut best: Option<(usize, Judged)> = None;
    for (i, v) in verdicts.iter().enumerate() {
        if let Verdict::Checked(judged, _) = v {
            if best.is_none_or(|(_, b)| *judged > b) {
                best = Some((i, *judged));
            }
        }
    }
    best.map_or(0, |(i, _)| i)
}

/// What the session's record says of the choice.
fn notice(verdicts: &[Verdict], index: usize, attempt: u32) -> String {
    let each: Vec<String> = verdicts
        .iter()
        .enumerate()
        .map(|(i, v)| format!("{}: {}", i + 1, said(v)))
        .collect();
    format!(
        "attempt {attempt}: {} candidates, each written and judged by the feature's check ({}); candidate {} is the answer",
        verdicts.len(),
        each.join("; "),
        index + 1
    )
}

fn said(verdict: &Verdict) -> String {
    match verdict {
        Verdict::Checked(j, _) if j.passed => "passes".into(),
        Verdict::Checked(_, Some(c)) => {
            format!("{} of {} tests passing", c.passed, c.passed + c.failed)
        }
        Verdict::Checked(_, None) => "fails".into(),
        Verdict::NoFile => "no file written".into(),
        Verdict::NotRun => "not checked, an earlier one passes".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(passed: bool, output: &str) -> CheckOutcome {
        CheckOutcome {
            name: "the feature's check".into(),
            command: Some("check".into()),
            passed,
            output: output.into(),
        }
    }

    fn score(passed: bool, output: &str) -> (bool, u32) {
        let (j, _) = judged(&outcome(passed, output));
        (j.passed, j.tests_passing)
    }

    #[test]
    fn a_unittest_candidate_scores_the_tests_ran_less_failures_and_errors() {
        let out = "F.E..\n======\nFAIL: test_b (t.T)\n------\nRan 5 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n";
        assert_eq!(score(false, out), (false, 3));
        assert_eq!(score(true, "Ran 5 tests in 0.001s\n\nOK\n"), (true, 5));
        // A module that does not import: no summary, no test passing.
        let broken = "Traceback (most recent call last):\n  File \"t.py\", line 1\nSyntaxError: invalid syntax\n";
        assert_eq!(score(false, broken), (false, 0));
    }

    #[test]
    fn a_pytest_candidate_scores_the_summarys_passed() {
        assert_eq!(
            score(
                false,
                "..F\n=========== 1 failed, 2 passed in 0.05s ===========\n"
            ),
            (false, 2)
        );
        assert_eq!(
            score(
                false,
                "short test summary info\n1 failed, 7 passed, 1 error in 0.31s\n"
            ),
            (false, 7)
        );
        assert_eq!(score(false, "==== 2 errors in 0.10s ====\n"), (false, 0));
    }

    #[test]
    fn a_node_test_candidate_scores_its_pass_count() {
        let tap = "TAP version 13\n# tests 8\n# suites 0\n# pass 6\n# fail 2\n";
        assert_eq!(score(false, tap), (false, 6));
        let spec = "✔ slugify (1ms)\nℹ tests 9\nℹ pass 9\nℹ fail 0\n";
        assert_eq!(score(true, spec), (true, 9));
    }

    #[test]
    fn a_passing_check_beats_any_count_and_the_first_among_equals_is_best() {
        let checked = |passed, n| {
            Verdict::Checked(
                Judged {
                    passed,
                    tests_passing: n,
                },
                None,
            )
        };
        let verdicts = [checked(false, 3), checked(false, 7), checked(false, 7)];
        assert_eq!(best(&verdicts), 1);
        let verdicts = [checked(false, 12), Verdict::NoFile, checked(true, 0)];
        assert_eq!(best(&verdicts), 2);
        assert_eq!(best(&[Verdict::NoFile, Verdict::NoFile]), 0);
        assert_eq!(best(&[Verdict::NoFile, checked(false, 0)]), 1);
    }

    #[test]
    fn the_notice_names_each_candidates_result_and_the_one_taken() {
        let verdicts = [
            Verdict::Checked(
                Judged {
                    passed: false,
                    tests_passing: 1,
                },
                Some(Counts {
                    passed: 1,
                    failed: 2,
                }),
            ),
            Verdict::NoFile,
            Verdict::Checked(
                Judged {
                    passed: true,
                    tests_passing: 3,
                },
                None,
            ),
            Verdict::NotRun,
        ];
        assert_eq!(
            notice(&verdicts, 2, 1),
            "attempt 1: 4 candidates, each written and judged by the feature's check \
             (1: 1 of 3 tests passing; 2: no file written; 3: passes; \
             4: not checked, an earlier one passes); candidate 3 is the answer"
        );
    }
}
