//! What a frozen test depends on is frozen with it (issue 41, item 1): the
//! helpers it imports, the data it reads, the scripts a global check runs;
//! all but its feature's files to change (`files` in features.json; when
//! not declared, the project's code that is not test-side by name or place).

use serde_json::{json, Value};

use crate::common::*;
use crate::verified::{
    add_test, assert_accepted, calc_project_with, check, initializer_with, session, verdict,
    MUL_DONE, SKELETON,
};

/// A test of mul that goes through a helper module at the project root.
fn test_through(helper: &str) -> String {
    format!(
        "import os\nimport sys\nimport unittest\n\n\
         sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), \"..\"))\n\
         import {helper}\nimport calc\n\n\n\
         class Case(unittest.TestCase):\n    def test_it(self):\n        {helper}.same(self, calc.mul(6, 7), 42)\n"
    )
}

const HELPER: &str = "def same(case, got, want):\n    case.assertEqual(got, want)\n";

/// The helper rewritten to report every test passed without running it.
const PATCHED: &str = "import unittest\n\n\ndef _run(self, result=None):\n    \
    result.startTest(self)\n    result.addSuccess(self)\n    result.stopTest(self)\n\n\n\
    unittest.TestCase.run = _run\n\n\ndef same(case, got, want):\n    pass\n";

/// mul's and add's features; mul declares its files to change when `files`.
fn list(mul: bool, files: Option<&[&str]>) -> String {
    let mut m = json!({"id": "mul", "category": "functional", "description": "feature mul",
        "steps": ["do it"], "check": check("test_mul.py"), "passes": mul});
    if let Some(files) = files {
        m["files"] = json!(files);
    }
    let a = json!({"id": "add", "category": "functional", "description": "feature add",
        "steps": ["do it"], "check": check("test_add.py"), "passes": false});
    serde_json::to_string_pretty(&json!({"features": [m, a]})).unwrap() + "\n"
}

/// The worker session rewriting `helper` (or, where its sandbox keeps it
/// read-only, committing it deleted) and claiming mul with mul unbuilt.
fn rewrites(helper: &str, files: Option<&[&str]>) -> Value {
    let path = format!("{helper}.py");
    session(vec![
        write_file(&path, PATCHED),
        bash(&format!(
            "cat {path} | grep -q _run || {{ echo {path} >> .gitignore; git rm -q --cached {path}; }}"
        )),
        write_file("features.json", &list(true, files)),
    ])
}

fn honest(files: Option<&[&str]>) -> Value {
    session(vec![
        write_file("calc.py", MUL_DONE),
        write_file("features.json", &list(true, files)),
    ])
}

by_both!(
    a_helper_a_frozen_test_imports_is_frozen_with_it,
    a_helper_a_frozen_test_imports_is_frozen_with_it_as_uid_65534,
    helper_of_a_frozen_test
);

fn helper_of_a_frozen_test(by: By) {
    // `testutil.py` is test-side by its name; `shared.py` only because mul
    // declares calc.py as its one file to change.
    for (helper, files) in [("testutil", None), ("shared", Some(&["calc.py"][..]))] {
        let init = initializer_with(
            &list(false, files),
            &[
                ("calc.py", SKELETON),
                (&format!("{helper}.py"), HELPER),
                ("tests/test_mul.py", &test_through(helper)),
                ("tests/test_add.py", &add_test()),
            ],
        );
        let env = calc_project_with(by, init, None, &[rewrites(helper, files), honest(files)]);
        let toml = env.on_main("longrun.toml").unwrap();
        assert!(toml.contains(&format!("\"{helper}.py\"")), "{toml}");
        let shown = env.run(&["features", "--dir", &env.dir_arg()]);
        let line = stdout(&shown)
            .lines()
            .find(|l| l.trim_start().starts_with("mul: "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{}", text(&shown)));
        assert!(
            line.contains("tests/test_mul.py") && line.contains(&format!("{helper}.py")),
            "{line}"
        );
        let out = env.continue_by(by, 2);
        assert!(out.status.success(), "{}", text(&out));
        let (v, why) = verdict(&env, 2);
        assert_eq!(v, "rejected", "{helper}: {why}");
        assert!(why.contains(&format!("frozen path {helper}.py")), "{why}");
        assert_accepted(&env, 3);
        assert_eq!(
            env.on_main(&format!("{helper}.py")).as_deref(),
            Some(HELPER)
        );
    }
}
