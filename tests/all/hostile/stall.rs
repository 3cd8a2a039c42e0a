//! Nothing a session leaves can stall the orchestrator (issue 41, item 7):
//! every file a session or a check could write is read with `O_NOFOLLOW |
//! O_NONBLOCK`, only when it is a regular file, up to a cap and a deadline
//! (`fsutil::read_bounded`; its unit tests cover a FIFO, a symlink, a
//! device node, a huge sparse file and a file that grows while read).

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;
use crate::verified::{assert_accepted, verdict};

/// Features f1 and f2: each is a shell script `fN.sh` that exits 0.
fn list(done: &[&str]) -> String {
    features(&[
        ("f1", done.contains(&"f1"), "test -f f1.sh && sh f1.sh"),
        ("f2", done.contains(&"f2"), "test -f f2.sh && sh f2.sh"),
    ])
}

/// The suite runs each feature's script and writes a line per feature to
/// `$LONGRUN_SUITE_RESULTS`, as a test framework's reporter would.
const SUITE: &str = r#"r=0; for f in f1 f2; do if [ -f $f.sh ] && sh $f.sh; then p=true; else p=false; r=1; fi; echo "{\"feature\":\"$f\",\"passed\":$p}" >> "$LONGRUN_SUITE_RESULTS"; done; exit $r"#;

/// A project of f1 and f2 whose regressions run as one suite, with sessions
/// from 2 on scripted; the initializer, run by `by`, is accepted.
fn suite_project(by: By, workers: &[Value]) -> Env {
    let env = Env::new();
    let mut sessions = json!({"1": initializer(&list(&[]))});
    for (i, w) in workers.iter().enumerate() {
        sessions[(i + 2).to_string()] = w.clone();
    }
    let model = env.model(sessions);
    let path = model.trim_start_matches("scripted:");
    let toml = format!(
        "[model]\nprovider = \"scripted\"\nname = {path:?}\n\n[checks]\nsuite = '{SUITE}'\ntimeout_secs = 30\n"
    );
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    let out = env.init_by(by, "# Spec\nTwo scripts.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn makes(id: &str, script: &str, done: &[&str]) -> Value {
    worker(&[(&format!("{id}.sh"), script)], &list(done))
}

by_both!(
    a_fifo_left_at_the_suite_results_does_not_stall_the_run,
    a_fifo_left_at_the_suite_results_does_not_stall_the_run_as_uid_65534,
    fifo_at_the_suite_results
);

fn fifo_at_the_suite_results(by: By) {
    // f2's code, run inside the suite, swaps the results file for a FIFO
    // and drains it while the suite writes, so the suite itself finishes;
    // the orchestrator's read of it would wait for a writer for ever.
    let fifo = "R=\"$LONGRUN_SUITE_RESULTS\"\nif [ -n \"$R\" ]; then rm -f \"$R\"; mkfifo \"$R\"; cat \"$R\" > /dev/null & fi\nexit 0\n";
    let env = suite_project(
        by,
        &[
            makes("f1", "exit 0\n", &["f1"]),
            makes("f2", fifo, &["f1", "f2"]),
            makes("f2", "exit 0\n", &["f1", "f2"]),
        ],
    );
    let dir = env.dir_arg();
    let args = ["continue", "--dir", &dir, "--sessions", "3"];
    let out = env.run_within(by, &args, Duration::from_secs(60));
    assert!(out.status.success(), "{}", text(&out));
    assert_accepted(&env, 2);
    let (v, why) = verdict(&env, 3);
    assert_eq!(v, "rejected", "{why}");
    assert!(
        why.contains("results file was not read") && why.contains("a FIFO"),
        "{why}"
    );
    // The honest session after it is accepted in the same run.
    assert_accepted(&env, 4);
    assert_eq!(env.on_main("features.json").unwrap(), list(&["f1", "f2"]));
}
