//! What a run prints, whole: the plain lines of a scripted run (a snapshot),
//! JSON events with times, phases and the right session under --parallel.

use serde_json::{json, Value};

use crate::common::*;

/// Fixed usage on every turn, so that the numbers do not move with the prompts.
fn priced(mut turns: Value) -> Value {
    for turn in turns.as_array_mut().unwrap() {
        turn["usage"] = json!({"input_tokens": 1000, "output_tokens": 50});
    }
    turns
}

/// A worker that makes `file` and marks `ids` passing among `all`.
fn worker(file: &str, ids: &[&str], all: &[(&str, &str)]) -> Value {
    let list: Vec<(&str, bool, &str)> = all
        .iter()
        .map(|(id, check)| (*id, ids.contains(id), *check))
        .collect();
    priced(json!([
        turn(vec![
            write_file(file, "x\n"),
            write_file("features.json", &features(&list))
        ]),
        turn(vec![bash(
            "echo done >> progress.md && git add -A && git commit -qm work"
        )]),
        done("done")
    ]))
}

const TWO: &[(&str, &str)] = &[("a", "test -f a.txt"), ("b", "test -f b.txt")];

fn project(sessions: Value) -> Env {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let mut all = json!({"1": priced(initializer(&list))});
    for (k, v) in sessions.as_object().unwrap() {
        all[k] = v.clone();
    }
    let model = env.model(all);
    let out = env.init("# Spec\nTwo files.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

#[test]
fn a_scripted_run_prints_plain_lines_with_phases_and_rounds() {
    let env = project(json!({
        // Session 2 writes the wrong file: three rounds of failing checks, then rejected.
        "2": priced(json!([turn(vec![write_file("wrong.txt", "x\n")]), done("done"), done("done"), done("done")])),
        "3": worker("a.txt", &["a"], TWO),
    }));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let plain = stdout(&out);
    assert!(!plain.contains('\x1b'), "{plain:?}");
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\b\d+(\.\d+)?s\b", "[DUR]");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    // Requests past the script's turns are estimated from the prompts, which change.
    settings.add_filter(r"[\d.]+k? in / [\d.]+k? out tokens", "[TOKENS]");
    settings.bind(|| insta::assert_snapshot!("plain_run", plain));
}

#[test]
fn json_events_carry_times_phases_and_the_init_has_them_too() {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt")]);
    let model = env.model(json!({"1": initializer(&list)}));
    let out = env
        .init_command("# Spec\nA file.\n", &model)
        .arg("--json")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        events
            .iter()
            .all(|e| e["time"].as_str().is_some_and(|t| t.ends_with('Z'))),
        "{events:?}"
    );
    let phases: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "phase")
        .map(|e| e["phase"].as_str().unwrap())
        .collect();
    assert_eq!(
        phases,
        ["checking round 1/3", "verifying", "recording"],
        "{events:?}"
    );
    assert_eq!(events[0]["type"], "session_started");
}

#[test]
fn under_parallel_each_verdict_names_its_own_session_s_feature() {
    let env = project(json!({
        "2": worker("a.txt", &["a"], TWO),
        "3": worker("b.txt", &["b"], TWO),
    }));
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--sessions",
        "2",
        "--parallel",
        "2",
        "--json",
    ]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let events: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let feature_of = |n: &Value| {
        events
            .iter()
            .find(|e| e["type"] == "session_started" && e["session"] == *n)
            .map(|e| e["feature"].clone())
            .unwrap()
    };
    let verdicts: Vec<&Value> = events.iter().filter(|e| e["type"] == "verdict").collect();
    assert_eq!(verdicts.len(), 2, "{events:?}");
    for v in verdicts {
        assert_eq!(v["feature"], feature_of(&v["session"]), "{v}");
        assert_eq!(v["tokens_in"], 3000, "each session's own tally: {v}");
    }
}
