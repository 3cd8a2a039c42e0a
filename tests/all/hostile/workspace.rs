//! The session's workspace and its git metadata: nothing a session commits
//! or leaves in its clone can alias the orchestrator's state, be followed as
//! a symlink, be opened as a repository by the orchestrator, or stop the run.

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# Two features\nBuild a and b.\n";

fn two() -> String {
    features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")])
}

/// The feature list with the given features passing.
fn passing(ids: &[&str]) -> String {
    features(&[
        ("a", ids.contains(&"a"), "test -f a.txt"),
        ("b", ids.contains(&"b"), "test -f b.txt"),
    ])
}

/// An honest worker for `id` (which must be the next feature), after `first` more turns.
fn honest(id: &str, done_before: &[&str], first: Vec<Value>) -> Value {
    let mut ids: Vec<&str> = done_before.to_vec();
    ids.push(id);
    let mut turns = first;
    turns.push(turn(vec![
        write_file(&format!("{id}.txt"), "done\n"),
        write_file("features.json", &passing(&ids)),
    ]));
    turns.push(turn(vec![bash("git add -A && git commit -qm work")]));
    turns.push(done("done"));
    Value::Array(turns)
}

/// A project whose initializer was accepted, the next sessions scripted as `workers` (2, 3, ...).
fn project(workers: Vec<Value>) -> Env {
    let env = Env::new();
    let mut sessions = serde_json::Map::new();
    sessions.insert("1".into(), initializer(&two()));
    for (i, w) in workers.into_iter().enumerate() {
        sessions.insert((i + 2).to_string(), w);
    }
    let model = env.model(Value::Object(sessions));
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn run(env: &Env, sessions: u32) -> std::process::Output {
    env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--sessions",
        &sessions.to_string(),
    ])
}

/// Session `n`'s verdict and reasons from `longrun log`.
fn verdict(env: &Env, n: u64) -> (String, String) {
    let log = env.log_json();
    let s = log
        .iter()
        .find(|s| s["session"] == n)
        .unwrap_or_else(|| panic!("no session {n} in {log:#?}"));
    (
        s["verdict"].as_str().unwrap_or("").to_string(),
        s["reasons"].to_string(),
    )
}

fn assert_verdict(env: &Env, n: u64, want: &str, reason: &str) {
    let (got, reasons) = verdict(env, n);
    assert_eq!(got, want, "session {n}: {reasons}");
    assert!(
        reasons.contains(reason),
        "session {n}: reasons {reasons} lack {reason:?}"
    );
}

/// Session `n`'s transcript records the verdict `want`.
fn assert_transcript_verdict(env: &Env, n: u32, want: &str) {
    let t = env.transcript(n);
    assert!(
        t.iter()
            .any(|e| e["type"] == "verdict" && e["verdict"] == want),
        "session {n}'s transcript lacks verdict {want}"
    );
}

// ---- Session state and the work tree ----

#[test]
fn committed_paths_under_dot_longrun_in_any_case_are_rejected_and_the_run_goes_on() {
    let plant = bash(
        "mkdir -p .longrun/sessions/0009 .LONGRUN && echo 1 > .longrun/sessions/0009/worker.pid \
         && echo x > .LONGRUN/x && git add -Af . && git commit -qm plant",
    );
    // git itself refuses to add `.Git`; plumbing makes the tree anyway.
    let craft = bash(
        "blob=$(echo y | git hash-object -w --stdin) \
         && sub=$(printf '100644 blob %s\tconfig\n' $blob | git mktree) \
         && top=$( (git ls-tree HEAD; printf '040000 tree %s\t.Git.\n' $sub) | git mktree) \
         && git update-ref HEAD $(git commit-tree $top -p HEAD -m crafted)",
    );
    let env = project(vec![
        honest("a", &[], vec![turn(vec![plant]), turn(vec![craft])]),
        honest("a", &[], vec![]),
    ]);
    let out = run(&env, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "rejected", ".longrun/sessions/0009/worker.pid");
    assert_verdict(&env, 2, "rejected", ".LONGRUN/x");
    assert_verdict(&env, 2, "rejected", ".Git./config");
    assert_transcript_verdict(&env, 2, "rejected");
    // Nothing of it reached main or the project's state.
    assert!(env.on_main(".LONGRUN/x").is_none());
    assert!(!env.project().join(".longrun/sessions/0009").exists());
    // The control: the same feature done honestly by the next session lands.
    assert_verdict(&env, 3, "accepted", "");
    assert_eq!(env.on_main("a.txt").as_deref(), Some("done\n"));
}

#[test]
fn the_work_tree_sync_never_writes_through_a_symlink() {
    let env = Env::new();
    let outside = env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let link = format!(
        "ln -s {} lib && git add lib && git commit -qm link",
        outside.display()
    );
    let through = bash(
        "git rm -q lib && mkdir lib && printf '#!/bin/sh\\necho pwned\\n' > lib/payload \
         && chmod +x lib/payload && git add -A && git commit -qm payload",
    );
    let model = env.model(json!({
        "1": initializer(&two()),
        "2": honest("a", &[], vec![turn(vec![bash(&link)])]),
        "3": honest("b", &["a"], vec![turn(vec![through])]),
    }));
    assert!(env.init(SPEC, &model).status.success());
    let out = run(&env, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "accepted", "");
    // The user checks the symlink out in the project (as `git checkout` does).
    let _ = std::fs::remove_file(env.project().join("lib"));
    env.git(&["checkout", "--", "lib"]);
    assert!(std::fs::symlink_metadata(env.project().join("lib"))
        .unwrap()
        .file_type()
        .is_symlink());
    let out = run(&env, 1);
    assert!(out.status.success(), "{}", text(&out));
    // The session's work is accepted and on main, but nothing was written outside.
    assert_verdict(&env, 3, "accepted", "");
    assert!(env.on_main("lib/payload").is_some());
    assert!(
        !outside.join("payload").exists(),
        "the sync wrote through the project's symlink"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(env.project().join("lib"))
        .unwrap()
        .file_type()
        .is_symlink());
}
