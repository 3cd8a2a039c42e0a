//! What a run prints, whole: the plain lines of a scripted run (a snapshot),
//! JSON events with times, phases and the right session under --parallel,
//! and retries told when they happen. (What a terminal shows: terminal.rs.)

use std::io::BufRead;
use std::process::Stdio;

use serde_json::{json, Value};

use crate::common::*;
use crate::mock_server::*;

/// Fixed usage on every turn, so that the numbers do not move with the prompts.
pub fn priced(mut turns: Value) -> Value {
    for turn in turns.as_array_mut().unwrap() {
        turn["usage"] = json!({"input_tokens": 1000, "output_tokens": 50});
    }
    turns
}

/// A worker that makes `file` and marks `ids` passing among `all`.
pub fn worker(file: &str, ids: &[&str], all: &[(&str, &str)]) -> Value {
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

pub const TWO: &[(&str, &str)] = &[("a", "test -f a.txt"), ("b", "test -f b.txt")];

pub fn project(sessions: Value) -> Env {
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

/// The retry is told while the provider is still being waited for: the
/// server holds its answer to the second try until the test has read the
/// retry event, so a retry told only once the answer is in would never come.
#[test]
fn a_retry_is_told_before_its_answer_arrives() {
    let env = Env::new();
    let gate = Gate::default();
    let turns = initializer(&features(&[("a", false, "test -f a.txt")]));
    let server = MockServer::start(Wire::Openai, a_retry_held_by(&gate, &turns));
    crate::providers::prepare(&env, &server, "openai:gpt-4o", "");
    let spec = env.write("spec.md", "# Spec\nA file.\n");
    let mut child = crate::providers::longrun(&env)
        .args([
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let out = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines() {
            let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if tx.send(event).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut before = Vec::new();
    let retry = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(event) = lines.recv_timeout(left) else {
            let _ = child.kill();
            panic!("no retry event while the answer was held; events: {before:?}");
        };
        if event["type"] == "retry" {
            break event;
        }
        before.push(event);
    };
    assert_eq!(retry["session"], 1, "{retry}");
    assert_eq!(retry["attempt"], 1, "{retry}");
    assert!(
        retry["reason"].as_str().unwrap().contains("upstream broke"),
        "{retry}"
    );
    // Nothing the answer brings came before: the server still holds it.
    assert!(
        before.iter().all(|e| e["type"] != "tool_call"),
        "{before:?}"
    );
    gate.open();
    let after: Vec<Value> = lines.iter().collect();
    assert!(child.wait().unwrap().success(), "{after:?}");
    assert!(after.iter().any(|e| e["type"] == "tool_call"), "{after:?}");
    let verdict = after.iter().find(|e| e["type"] == "verdict").unwrap();
    assert_eq!(verdict["verdict"], "accepted", "{verdict}");
    assert_eq!(
        server.requests().len(),
        4,
        "the failed try, the held one, two more"
    );
}
