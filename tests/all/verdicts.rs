//! Verification rules, each through a real session: what the worker did,
//! the verdict recorded, main left untouched, the work kept at its ref.

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# Two features\nBuild a and b.\n";

fn two_features() -> String {
    features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")])
}

/// A project whose initializer has been accepted, with session 2 scripted as `worker`.
fn project_with_worker(worker: Value) -> Env {
    let env = Env::new();
    let model = env.model(json!({ "1": initializer(&two_features()), "2": worker }));
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn continue_once(env: &Env) -> std::process::Output {
    env.run(&["continue", "--dir", &env.dir_arg()])
}

/// Session 2 was not accepted: its verdict, main's features.json as before, its work at the ref.
fn assert_refused(env: &Env, verdict: &str, reason_contains: &str) {
    let log = env.log_json();
    let s2 = &log[1];
    assert_eq!(s2["session"], 2);
    assert_eq!(s2["verdict"], verdict, "{s2:#}");
    let reasons = s2["reasons"].to_string();
    assert!(
        reasons.contains(reason_contains),
        "reasons {reasons} lack {reason_contains:?}"
    );
    assert_eq!(
        env.on_main("features.json").unwrap(),
        two_features(),
        "main's features.json changed"
    );
    assert_eq!(s2["work_ref"], "refs/longrun/sessions/0002");
    let work = env.git(&["log", "--format=%s", "refs/longrun/sessions/0002"]);
    assert!(
        work.lines().next().unwrap_or("").contains("work"),
        "work ref holds: {work}"
    );
}

#[test]
fn a_worker_that_flips_its_feature_with_a_passing_check_is_merged() {
    let env = project_with_worker(worker(
        &[("a.txt", "done\n")],
        &features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]),
    ));
    let out = continue_once(&env);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "accepted");
    assert_eq!(log[1]["feature"], "a");
    assert_eq!(env.on_main("a.txt").as_deref(), Some("done\n"));
    // An accepted session is a merge commit whose second parent is the worker's commit.
    let parents = env.git(&["log", "-1", "--format=%P", "main"]);
    assert_eq!(parents.split_whitespace().count(), 2, "{parents}");
}

#[test]
fn editing_a_description_is_rejected() {
    let edited = two_features().replace("feature b", "feature B, improved");
    let env = project_with_worker(worker(
        &[("a.txt", "x")],
        &edited.replace(
            "\"check\": \"test -f a.txt\",\n      \"passes\": false",
            "\"check\": \"test -f a.txt\",\n      \"passes\": true",
        ),
    ));
    continue_once(&env);
    assert_refused(&env, "rejected", "`b` was edited");
}

#[test]
fn flipping_another_feature_is_rejected() {
    let env = project_with_worker(worker(
        &[("a.txt", "x"), ("b.txt", "x")],
        &features(&[("a", true, "test -f a.txt"), ("b", true, "test -f b.txt")]),
    ));
    continue_once(&env);
    assert_refused(&env, "rejected", "`b` was set to passes: true");
}

#[test]
fn a_feature_naming_a_field_twice_is_rejected() {
    // Read as most JSON readers do (the last one wins), `b` would be
    // flipped; a list whose readers can disagree is refused.
    let flipped = features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let twice = flipped.replacen(
        "\"id\": \"b\",\n      \"passes\": false",
        "\"id\": \"b\",\n      \"passes\": false,\n      \"passes\": true",
        1,
    );
    assert_ne!(twice, flipped);
    let env = project_with_worker(worker(&[("a.txt", "x"), ("b.txt", "x")], &twice));
    continue_once(&env);
    assert_refused(&env, "rejected", "duplicate field `passes`");
}

#[test]
fn deleting_a_feature_is_rejected() {
    let env = project_with_worker(worker(
        &[("a.txt", "x")],
        &features(&[("a", true, "test -f a.txt")]),
    ));
    continue_once(&env);
    assert_refused(&env, "rejected", "b were removed");
}

#[test]
fn a_failing_check_is_not_accepted() {
    // Flips `a` but never creates a.txt, so `test -f a.txt` fails in verification.
    let env = project_with_worker(worker(
        &[("other.txt", "x")],
        &features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]),
    ));
    continue_once(&env);
    assert_refused(&env, "rejected", "feature a failed: `test -f a.txt`");
    assert!(
        env.on_main("other.txt").is_none(),
        "rejected work reached main"
    );
}

#[test]
fn rewriting_the_clone_history_is_rejected() {
    let flipped = features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let env = project_with_worker(json!([
        // --soft: init.sh and the other protected files are read-only in the sandbox.
        turn(vec![bash("git reset -q --soft HEAD~1")]),
        turn(vec![
            write_file("a.txt", "x"),
            write_file("features.json", &flipped)
        ]),
        turn(vec![bash("git add -A && git commit -qm work")]),
        done("done"),
    ]));
    continue_once(&env);
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "rejected");
    assert!(
        log[1]["reasons"].to_string().contains("rewrote history"),
        "{:#}",
        log[1]
    );
    assert_eq!(env.on_main("features.json").unwrap(), two_features());
}

#[test]
fn uncommitted_work_is_kept_as_wip_and_not_accepted() {
    let flipped = features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let env = project_with_worker(json!([
        turn(vec![
            write_file("a.txt", "x"),
            write_file("features.json", &flipped)
        ]),
        done("done, but I forgot to commit"),
    ]));
    continue_once(&env);
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "rejected");
    assert!(
        log[1]["reasons"].to_string().contains("uncommitted"),
        "{:#}",
        log[1]
    );
    let wip = env.git(&["show", "refs/longrun/sessions/0002:a.txt"]);
    assert_eq!(wip, "x");
}

#[test]
fn an_initializer_with_invalid_json_fails_init_with_the_reason() {
    let env = Env::new();
    let model = env.model(json!({ "1": initializer("{\"features\": [ not json") }));
    let out = env.init(SPEC, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("features.json is not valid JSON"),
        "{}",
        text(&out)
    );
    assert!(
        env.on_main("features.json").is_none(),
        "main holds features after a failed init"
    );
    assert_eq!(env.log_json()[0]["verdict"], "rejected");
}

#[test]
fn an_initializer_with_no_features_fails_init() {
    let env = Env::new();
    let model = env.model(json!({ "1": initializer("{\"features\": []}") }));
    let out = env.init(SPEC, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("lists no features"), "{}", text(&out));
    assert!(env.on_main("features.json").is_none());
}

#[test]
fn continue_runs_the_initializer_again_when_none_was_accepted() {
    let env = Env::new();
    let model = env.model(json!({
        "1": initializer("{\"features\": []}"),
        "2": initializer(&two_features()),
    }));
    assert_eq!(env.init(SPEC, &model).status.code(), Some(1));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "0"]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log.len(), 2);
    assert_eq!(
        (log[1]["role"].as_str(), log[1]["verdict"].as_str()),
        (Some("initializer"), Some("accepted"))
    );
    assert_eq!(env.on_main("features.json").unwrap(), two_features());
}

#[test]
fn the_trailers_read_back_by_log_match_what_happened() {
    let flipped = features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let usage = json!({"input_tokens": 1000, "output_tokens": 50});
    let env = project_with_worker(json!([
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}], "usage": usage},
        {"tool_calls": [{"name": "write_file", "arguments": {"path": "features.json", "content": flipped}}], "usage": usage},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "echo note >> progress.md && git add -A && git commit -qm work"}}], "usage": usage},
        {"text": "done", "usage": usage},
    ]));
    continue_once(&env);
    let log = env.log_json();
    let s = &log[1];
    assert_eq!(s["session"], 2);
    assert_eq!(s["role"], "worker");
    assert_eq!(s["feature"], "a");
    assert_eq!(s["verdict"], "accepted");
    assert_eq!(s["tokens_in"], 4000);
    assert_eq!(s["tokens_out"], 200);
    assert_eq!(s["steps"], 4);
    assert!(s["model"].as_str().unwrap().starts_with("scripted:"));
    // The same numbers in plain git.
    let msg = env.git(&["log", "-1", "--format=%B", "main"]);
    for line in [
        "Longrun-Session: 2",
        "Longrun-Verdict: accepted",
        "Longrun-Tokens-In: 4000",
        "Longrun-Steps: 4",
    ] {
        assert!(msg.contains(line), "{line} missing from\n{msg}");
    }
    // Four requests reached the model, and each tool result answers its call.
    let requests = env.requests(2);
    assert_eq!(requests.len(), 4);
    let last = requests[3]["messages"].as_array().unwrap();
    let tool_ids: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(tool_ids, ["call_2_0_0", "call_2_1_0", "call_2_2_0"]);
}
