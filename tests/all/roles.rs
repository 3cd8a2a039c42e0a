//! Per-role models and the reviewer: each role's requests reach its own
//! model, trailers and `status` name them, and `[review]` in each mode.

use serde_json::{json, Value};

use crate::common::*;

/// Write a scripted model file `name` and return its path.
fn model_file(env: &Env, name: &str, sessions: Value) -> String {
    env.write(name, &json!({ "sessions": sessions }).to_string())
        .display()
        .to_string()
}

/// A worker that finishes feature `a` (a.txt) in three requests.
fn builder() -> Vec<Value> {
    vec![
        turn(vec![
            write_file("a.txt", "x\n"),
            write_file("features.json", &features(&[("a", true, "test -f a.txt")])),
        ]),
        turn(vec![bash(
            "echo done >> progress.md && git add -A && git commit -qm a",
        )]),
        done("done"),
    ]
}

/// A project whose longrun.toml says `toml` after `[model]` (scripted `main`).
fn project(env: &Env, main: &str, toml: &str) {
    let settings = format!("[model]\nprovider = \"scripted\"\nname = \"{main}\"\n\n{toml}\n");
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("longrun.toml"), settings).unwrap();
    let out = env
        .longrun()
        .args([
            "init",
            env.write("spec.md", "# Spec\nA file.\n").to_str().unwrap(),
        ])
        .args(["--dir", &env.dir_arg()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
}

fn trailer(env: &Env, session: u32, key: &str) -> Vec<String> {
    let log = env.git(&["log", "--first-parent", "--format=%B%x00"]);
    let message = log
        .split('\0')
        .find(|m| m.contains(&format!("Longrun-Session: {session}\n")))
        .unwrap_or_else(|| panic!("no session {session} in {log}"));
    message
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}: ")))
        .map(str::to_string)
        .collect()
}

#[test]
fn each_role_reaches_its_own_model_and_trailers_name_them() {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt")]);
    let main = model_file(&env, "main.json", json!({"1": initializer(&list)}));
    let task = json!({"name": "task", "arguments": {"description": "look", "prompt": "What is in SPEC.md?"}});
    let mut worker_turns = vec![
        turn(vec![task]),
        json!({"text": "(never: the subagent's turn)"}),
    ];
    worker_turns.extend(builder());
    let worker = model_file(&env, "worker.json", json!({"*": worker_turns}));
    let sub = model_file(
        &env,
        "sub.json",
        json!({"*": [{"text": "unused"}, {"text": "SPEC.md asks for a file."}]}),
    );
    project(
        &env,
        &main,
        &format!("[model.worker]\nname = \"{worker}\"\n\n[model.subagent]\nname = \"{sub}\"\n"),
    );
    let status = env.run(&["status", "--dir", &env.dir_arg(), "--wide"]);
    assert!(
        stdout(&status).contains(&format!(
            "models: initializer scripted:{main} · worker scripted:{worker} · subagent scripted:{sub}\n"
        )),
        "{}",
        text(&status)
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(env.log_json()[1]["verdict"], "accepted");
    // The subagent's request went to its model, recorded as such; the
    // worker's next request got the subagent's answer back.
    let requests: Vec<Value> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["type"] == "request")
        .collect();
    assert_eq!(requests[1]["model"], format!("scripted:{sub}"));
    assert_eq!(requests[0]["model"], Value::Null);
    assert!(
        requests[2].to_string().contains("SPEC.md asks for a file."),
        "{}",
        requests[2]
    );
    assert_eq!(
        trailer(&env, 2, "Longrun-Model"),
        [format!("scripted:{worker} (subagents scripted:{sub})")]
    );
    assert_eq!(
        trailer(&env, 1, "Longrun-Model"),
        [format!("scripted:{main} (subagents scripted:{sub})")]
    );
}

#[test]
fn model_for_overrides_the_settings_of_one_role() {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt")]);
    let main = model_file(
        &env,
        "main.json",
        json!({"1": initializer(&list), "*": [done("idle")]}),
    );
    project(&env, &main, "");
    let other = model_file(&env, "other.json", json!({"*": builder()}));
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--model-for",
        &format!("worker=scripted:{other}"),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // Only the worker changed: its subagents still inherit [model].
    assert_eq!(
        trailer(&env, 2, "Longrun-Model"),
        [format!("scripted:{other} (subagents scripted:{main})")]
    );
    let bad = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--model-for",
        "boss=openai:x",
    ]);
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
    assert!(
        stderr(&bad).contains("`boss` is not a role"),
        "{}",
        text(&bad)
    );
}

#[test]
fn init_keeps_model_for_in_longrun_toml_for_later_runs() {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt")]);
    let main = model_file(
        &env,
        "main.json",
        json!({"1": initializer(&list), "*": [done("idle")]}),
    );
    let other = model_file(&env, "other.json", json!({"*": builder()}));
    let out = env
        .init_command("# Spec\nA file.\n", &format!("scripted:{main}"))
        .args(["--model-for", &format!("worker=scripted:{other}")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let toml = env.on_main("longrun.toml").unwrap();
    assert!(toml.contains("[model.worker]"), "{toml}");
    // A later run without the flag still gives the worker its own model.
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        trailer(&env, 2, "Longrun-Model"),
        [format!("scripted:{other} (subagents scripted:{main})")]
    );
}

/// A project with `[review] mode` and a reviewer answering `answer`; one worker session.
fn reviewed(mode: &str, answer: &str) -> Env {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt")]);
    let main = model_file(
        &env,
        "main.json",
        json!({"1": initializer(&list), "*": builder()}),
    );
    let reviewer = model_file(&env, "reviewer.json", json!({"*": [{"text": answer}]}));
    project(
        &env,
        &main,
        &format!("[model.reviewer]\nname = \"{reviewer}\"\n\n[review]\nmode = \"{mode}\"\n"),
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    env
}

#[test]
fn a_required_review_that_refuses_is_a_rejection_with_its_reason() {
    let env = reviewed("required", "REJECT: a.txt is written but nothing reads it");
    let row = &env.log_json()[1];
    assert_eq!(row["verdict"], "rejected", "{row}");
    assert!(
        row["reasons"][0]
            .as_str()
            .unwrap()
            .contains("refused: a.txt is written but nothing reads it"),
        "{row}"
    );
    let review = trailer(&env, 2, "Longrun-Review");
    assert_eq!(review.len(), 1);
    assert!(review[0].starts_with("reject (scripted:"), "{review:?}");
    // The reviewer read the feature, the checks and the diff.
    let asked = env
        .transcript(2)
        .into_iter()
        .find(|e| {
            e["type"] == "request"
                && e["model"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("reviewer"))
        })
        .expect("the reviewer's request is in the transcript");
    let content = asked["request"]["messages"][0]["content"].as_str().unwrap();
    for part in ["\"id\": \"a\"", "test -f a.txt", "+x"] {
        assert!(content.contains(part), "{part} missing: {content}");
    }
}

#[test]
fn a_required_review_that_accepts_and_an_advisory_refusal_both_accept() {
    let env = reviewed("required", "ACCEPT");
    assert_eq!(env.log_json()[1]["verdict"], "accepted");
    assert!(trailer(&env, 2, "Longrun-Review")[0].starts_with("accept (scripted:"));

    let env = reviewed("advisory", "REJECT: too clever");
    assert_eq!(env.log_json()[1]["verdict"], "accepted");
    let review = trailer(&env, 2, "Longrun-Review");
    assert!(review[0].ends_with("): too clever"), "{review:?}");

    let env = reviewed("off", "REJECT: never asked");
    assert_eq!(env.log_json()[1]["verdict"], "accepted");
    assert!(trailer(&env, 2, "Longrun-Review").is_empty());
}
