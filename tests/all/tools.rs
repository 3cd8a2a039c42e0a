//! The session's tools as the model meets them: malformed calls come back as
//! `Error:` results answering each call id, and the session goes on.

use serde_json::{json, Value};

use crate::common::*;

/// The tool results of request `index`, as (call_id, content) pairs.
fn tool_results(request: &Value) -> Vec<(String, String, bool)> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
                m["is_error"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

/// The ids of the calls in response `index` of session `n`.
fn call_ids(env: &Env, n: u32, index: u64) -> Vec<String> {
    env.transcript(n)
        .into_iter()
        .find(|e| e["type"] == "response" && e["index"] == index)
        .unwrap()["response"]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

fn one_feature() -> String {
    features(&[("F1", false, "test -f hello.txt")])
}

#[test]
fn malformed_calls_come_back_as_errors_and_the_session_goes_on() {
    let env = Env::new();
    let malformed = turn(vec![
        json!({"name": "bash", "arguments_raw": "{\"command\": \"ls"}),
        json!({"name": "run_tests", "arguments": {}}),
        json!({"name": "read_file", "arguments": {}}),
        json!({"name": "write_file", "arguments": {"path": "hello.txt", "content": 42}}),
        json!({"name": "edit_file", "arguments": {"path": "a", "old_string": "x", "new_string": "y", "replace_all": "yes"}}),
        json!({"name": "read_file", "arguments": {"path": "no/such/file.txt"}}),
        json!({"name": "write_file", "arguments": {"path": "../escape.txt", "content": "x"}}),
    ]);
    let mut work = worker(
        &[("hello.txt", "hello\n")],
        &features(&[("F1", true, "test -f hello.txt")]),
    );
    work.as_array_mut().unwrap().insert(0, malformed);
    let model = env.model(json!({"1": initializer(&one_feature()), "2": work}));
    let out = env.init("# hello\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--model", &model]);
    assert!(out.status.success(), "{}", text(&out));

    let ids = call_ids(&env, 2, 0);
    let requests = env.requests(2);
    let results = tool_results(&requests[1]);
    let expected = [
        "are not valid JSON",
        "there is no tool named `run_tests`; the tools are: bash, read_file, write_file, edit_file, list_files, grep",
        "missing required argument `path` (a string)",
        "argument `content` must be a string, not a number (42)",
        "argument `replace_all` must be a boolean (true or false), not a string",
        "`no/such/file.txt` does not exist",
        "`../escape.txt` is outside the workspace",
    ];
    assert_eq!(results.len(), expected.len(), "{results:#?}");
    for ((want, id), (got_id, content, is_error)) in expected.iter().zip(&ids).zip(&results) {
        assert_eq!(got_id, id, "results answer the calls in order");
        assert!(is_error, "{content}");
        assert!(content.starts_with("Error: "), "{content}");
        assert!(content.contains(want), "want {want:?} in {content:?}");
        assert!(!content.contains("panicked") && !content.contains("backtrace"));
    }
    assert!(!env.path("escape.txt").exists());
    let verdicts: Vec<Value> = env
        .log_json()
        .iter()
        .map(|s| s["verdict"].clone())
        .collect();
    assert_eq!(verdicts, [json!("accepted"), json!("accepted")]);
    assert_eq!(env.on_main("hello.txt").as_deref(), Some("hello\n"));
}

#[test]
fn file_tools_work_on_the_session_clone() {
    let env = Env::new();
    let work = json!([
        turn(vec![write_file("src/app.txt", "alpha\nbeta\ngamma\n")]),
        turn(vec![
            json!({"name": "edit_file", "arguments": {"path": "src/app.txt", "old_string": "beta", "new_string": "BETA"}})
        ]),
        turn(vec![
            json!({"name": "read_file", "arguments": {"path": "src/app.txt", "offset": 2, "limit": 1}}),
            json!({"name": "grep", "arguments": {"pattern": "^gam", "glob": "*.txt"}}),
            json!({"name": "list_files", "arguments": {"path": "src"}}),
        ]),
        turn(vec![bash(
            "touch hello.txt && git add -A && git commit -qm work"
        )]),
        done("done"),
    ]);
    let model = env.model(json!({"1": initializer(&one_feature()), "2": work}));
    assert!(env.init("# hello\n", &model).status.success());
    env.run(&["continue", "--dir", &env.dir_arg(), "--model", &model]);
    let requests = env.requests(2);
    let results = tool_results(&requests[3]);
    let contents: Vec<&str> = results.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(
        contents[contents.len() - 3..],
        [
            "     2\tBETA\n[lines 2-2 of 3; read on with offset=3]\n",
            "src/app.txt:3: gamma\n",
            "src/app.txt\n"
        ]
    );
}

#[test]
fn long_output_is_cut_for_the_model_and_saved_whole_in_the_session_tmp() {
    let env = Env::new();
    let work = json!([turn(vec![bash("seq 1 20000")]), done("done")]);
    let model = env.model(json!({"1": initializer(&one_feature()), "2": work}));
    assert!(env.init("# hello\n", &model).status.success());
    // A smaller cap, committed on main like any setting.
    let toml_path = env.project().join("longrun.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    std::fs::write(
        &toml_path,
        toml.replace("output_cap = 30000", "output_cap = 4000")
            .replace("# keep_sessions = 0", "keep_sessions = 1"),
    )
    .unwrap();
    env.git(&["commit", "-qam", "smaller tool output cap"]);
    env.run(&["continue", "--dir", &env.dir_arg(), "--model", &model]);

    let results = tool_results(&env.requests(2)[1]);
    let content = &results[0].1;
    assert!(
        content.chars().count() < 4500,
        "{} chars",
        content.chars().count()
    );
    assert!(content.starts_with("1\n2\n3\n"), "{content}");
    assert!(content.ends_with("19999\n20000\n"), "{content}");
    let saved = env
        .project()
        .join(".longrun/sessions/0002/tmp/tool-outputs/0001-bash.txt");
    assert!(content.contains("cut here"), "{content}");
    assert!(content.contains("tool-outputs/0001-bash.txt"), "{content}");
    assert_eq!(
        std::fs::read_to_string(saved).unwrap().lines().count(),
        20000
    );
}
