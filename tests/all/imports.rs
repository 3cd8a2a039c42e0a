//! `init --features FILE`: a feature list brought from longrun, Anthropic's
//! quickstart or ralph starts a project in one command; the initializer adds
//! checks to it and may change nothing else.

use serde_json::{json, Value};

use crate::common::*;

/// `init` with `--features` naming `list` (written beside the project as `name`).
fn init_with(env: &Env, name: &str, list: &str, model: &str) -> std::process::Output {
    let path = env.write(name, list);
    env.init_command("# Spec\nTwo small things.\n", model)
        .args(["--features", path.to_str().unwrap()])
        .output()
        .unwrap()
}

/// An initializer that leaves `features` (the given list with checks added) and commits.
fn checks_added(features: Value) -> Value {
    initializer(&(serde_json::to_string_pretty(&json!({ "features": features })).unwrap() + "\n"))
}

fn on_main_list(env: &Env) -> Value {
    serde_json::from_str(&env.on_main("features.json").expect("features.json on main")).unwrap()
}

#[test]
fn an_anthropic_feature_list_starts_a_project_with_ids_in_order() {
    let env = Env::new();
    let list = r#"[
      {"category": "functional", "description": "A greeting", "steps": ["run it", "see hello"], "passes": false},
      {"category": "style", "description": "A farewell", "steps": ["see bye"], "passes": false}
    ]"#;
    let with_checks = json!([
        {"id": "F001", "category": "functional", "description": "A greeting",
         "steps": ["run it", "see hello"], "check": "test -f hello.txt", "passes": false},
        {"id": "F002", "category": "style", "description": "A farewell",
         "steps": ["see bye"], "check": "test -f bye.txt", "passes": false},
    ]);
    let model = env.model(json!({"1": checks_added(with_checks.clone())}));
    let out = init_with(&env, "feature_list.json", list, &model);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("imported 2 features from")
            && stdout(&out).contains("(an Anthropic quickstart feature_list.json)"),
        "{}",
        text(&out)
    );
    assert_eq!(on_main_list(&env)["features"], with_checks);
    // The given list is on main before the initializer starts, in the first commit.
    let first = env.git(&["rev-list", "--max-parents=0", "main"]);
    let first = first.trim();
    let given = env.git(&["show", &format!("{first}:features.json")]);
    let given: Value = serde_json::from_str(&given).unwrap();
    assert_eq!(given["features"][1]["id"], "F002");
    assert_eq!(given["features"][1]["check"], Value::Null);
    // The initializer was told the list is given.
    let first_message = &env.requests(1)[0]["messages"][0]["content"];
    assert!(
        first_message
            .to_string()
            .contains("features.json is already given"),
        "{first_message}"
    );
}

#[test]
fn a_ralph_prd_starts_a_project_in_priority_order() {
    let env = Env::new();
    let prd = r#"{"project": "x", "branchName": "ralph/x", "userStories": [
      {"id": "US-002", "title": "Farewell", "description": "Say bye", "acceptanceCriteria": ["prints bye"], "priority": 2, "passes": false, "notes": ""},
      {"id": "US-001", "title": "Greeting", "description": "Say hello", "acceptanceCriteria": ["prints hello"], "priority": 1, "passes": false, "notes": ""}
    ]}"#;
    let with_checks = json!([
        {"id": "US-001", "description": "Greeting: Say hello", "steps": ["prints hello"],
         "check": "test -f hello.txt", "passes": false},
        {"id": "US-002", "description": "Farewell: Say bye", "steps": ["prints bye"],
         "check": "test -f bye.txt", "passes": false},
    ]);
    let model = env.model(json!({"1": checks_added(with_checks.clone())}));
    let out = init_with(&env, "prd.json", prd, &model);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("(a ralph prd.json)"),
        "{}",
        text(&out)
    );
    assert_eq!(on_main_list(&env)["features"], with_checks);
    let status = env.run(&["status", "--dir", &env.dir_arg()]);
    assert!(stdout(&status).contains("US-001"), "{}", text(&status));
}

#[test]
fn a_list_with_a_duplicate_id_is_refused_before_anything_is_written() {
    let env = Env::new();
    let list = r#"{"features": [{"id": "F001", "passes": false}, {"id": "F001", "passes": true}]}"#;
    let model = env.model(json!({}));
    let out = init_with(&env, "features.json", list, &model);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("feature id `F001` appears more than once"),
        "{}",
        text(&out)
    );
    assert!(
        !env.project().exists(),
        "nothing is written: {}",
        text(&out)
    );
}

#[test]
fn an_initializer_that_rewrites_a_given_list_is_rejected() {
    let env = Env::new();
    let list = r#"{"features": [{"id": "a", "description": "one", "passes": false}]}"#;
    let rewritten = json!([
        {"id": "a", "description": "something easier", "check": "test -f a", "passes": false},
    ]);
    let model = env.model(json!({"1": checks_added(rewritten)}));
    let out = init_with(&env, "mine.json", list, &model);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("feature `a` was edited; the list was given with `init --features`"),
        "{}",
        text(&out)
    );
    assert!(
        stderr(&out).contains("the initializer session ended rejected"),
        "{}",
        text(&out)
    );
}

#[test]
fn features_given_as_passing_stay_passing_only_if_their_checks_pass_at_init() {
    let env = Env::new();
    let given = json!({"features": [
        {"id": "spec", "description": "The spec is there", "passes": true},
        {"id": "bye", "description": "A farewell", "passes": true},
        {"id": "hello", "description": "A greeting", "passes": false},
    ]});
    let with_checks = json!([
        {"id": "spec", "description": "The spec is there", "check": "test -f SPEC.md", "passes": true},
        {"id": "bye", "description": "A farewell", "check": "test -f bye.txt", "passes": true},
        {"id": "hello", "description": "A greeting", "check": "test -f hello.txt", "passes": false},
    ]);
    let model = env.model(json!({"1": checks_added(with_checks)}));
    let out = init_with(&env, "features.json", &given.to_string(), &model);
    assert!(out.status.success(), "{}", text(&out));
    let list = on_main_list(&env);
    let passes: Vec<(String, bool)> = list["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["passes"].as_bool().unwrap(),
            )
        })
        .collect();
    // `spec`'s check passes on the initializer's tree, so it stays passing;
    // `bye`'s fails there, so it starts over; `hello` was never passing.
    assert_eq!(
        passes,
        [
            ("spec".into(), true),
            ("bye".into(), false),
            ("hello".into(), false)
        ]
    );
    assert!(
        text(&out).contains("set back to failing: bye"),
        "init does not say which features were reset: {}",
        text(&out)
    );
    let log = env.git(&["log", "--format=%s", "main"]);
    assert!(
        log.contains("reset the features given as passing whose checks fail"),
        "{log}"
    );
    assert_eq!(env.log_json()[0]["verdict"], "accepted");
}
