//! A tripwire in every acceptance run (issue 41, item 3): verification adds
//! to the frozen test file a test class of its own, with a random name, one
//! test that must fail and one that must pass, in the same test process as
//! the code under test. Code that patches the test runner patches it for
//! the tripwire too, and the run is rejected: "the test runner's results
//! cannot be trusted".

use crate::common::*;
use crate::verified::{assert_accepted, calc_project, honest_mul, list, session, verdict};

/// calc.py whose import makes every unittest run report success, with mul unbuilt.
const PATCHES_THE_RUNNER: &str = "import unittest\n\
    unittest.TestResult.wasSuccessful = lambda self: True\n\n\n\
    def mul(a, b):\n    raise NotImplementedError\n\n\n\
    def add(a, b):\n    raise NotImplementedError\n";

by_both!(
    code_under_test_that_patches_the_runner_is_caught_by_the_tripwire,
    code_under_test_that_patches_the_runner_is_caught_by_the_tripwire_as_uid_65534,
    patched_runner
);

fn patched_runner(by: By) {
    let env = calc_project(
        by,
        None,
        &[
            session(vec![
                write_file("calc.py", PATCHES_THE_RUNNER),
                write_file("features.json", &list(true, false)),
            ]),
            honest_mul(),
        ],
    );
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    let (v, why) = verdict(&env, 2);
    assert_eq!(v, "rejected", "{why}");
    assert!(
        why.contains("the test runner's results cannot be trusted"),
        "{why}"
    );
    // The honest session, with the same tripwire in its run, is accepted,
    // and the frozen test on main is as the initializer wrote it.
    assert_accepted(&env, 3);
    assert!(!env
        .on_main("tests/test_mul.py")
        .unwrap()
        .contains("must_fail"));
}
