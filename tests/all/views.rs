//! What people read: `show`, `status`, `log`, `--help`, completions, the man
//! page and the log file, on real projects built with scripted models.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

/// A project with an accepted initializer, a rejected session on `f1` (its
/// check fails) and an accepted one on `f1`.
fn built_project() -> Env {
    let env = Env::new();
    let list = features(&[
        ("f1", false, "test -f a.txt"),
        ("f2", false, "test -f b.txt"),
    ]);
    let done = features(&[
        ("f1", true, "test -f a.txt"),
        ("f2", false, "test -f b.txt"),
    ]);
    let model = env.model(json!({
        "1": priced(initializer(&list)),
        "2": priced(worker(&[("wrong.txt", "oops\n")], &done)),
        "3": priced(worker(&[("a.txt", "hello\n")], &done)),
    }));
    let out = env.init("# Spec\nTwo files.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    env
}

/// Give every scripted turn a fixed usage (1000 in, 50 out), so that token
/// counts do not move when a prompt or a tool's wording changes. Three more
/// text-only turns answer the harness's check rounds when a session's checks fail.
fn priced(mut turns: Value) -> Value {
    let list = turns.as_array_mut().unwrap();
    list.extend((0..3).map(|_| json!({"text": "done"})));
    for turn in list {
        turn["usage"] = json!({"input_tokens": 1000, "output_tokens": 50});
    }
    turns
}

/// Snapshot settings that hide what changes from run to run.
fn stable(env: &Env) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    let root = env.root.path().display().to_string();
    s.add_filter(&regex::escape(&root), "[TMP]");
    s.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    s.add_filter(r"\b[0-9a-f]{7,8}\b", "[ID]");
    s.add_filter(r"\b\d+(\.\d+)?s\b", "[DUR]");
    s.add_filter(r"\b\d+m\d\ds\b", "[DUR]");
    s
}

fn run_ok(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "longrun {args:?}: {}", text(&out));
    stdout(&out)
}

#[test]
fn show_prints_turns_calls_results_checks_and_the_verdict() {
    let env = built_project();
    let dir = env.dir_arg();
    let rejected = run_ok(&env, &["show", "2", "--dir", &dir]);
    assert!(
        rejected.starts_with("session 2 · worker · feature f1 · rejected\n"),
        "{rejected}"
    );
    assert!(
        rejected.contains("→ write_file content=(1 line, 5 bytes) path=wrong.txt"),
        "{rejected}"
    );
    assert!(rejected.contains("    ← created `wrong.txt`"), "{rejected}");
    assert!(
        rejected.contains("verify: feature f1 `test -f a.txt`: FAILED"),
        "{rejected}"
    );
    assert!(
        rejected.contains("verdict   rejected\n  - feature f1 failed"),
        "{rejected}"
    );
    let accepted = run_ok(&env, &["show", "0003", "--dir", &dir]);
    stable(&env).bind(|| insta::assert_snapshot!("show_accepted", accepted));
}

#[test]
fn show_json_has_the_turns_and_the_verdict_commit() {
    let env = built_project();
    let out = run_ok(&env, &["show", "3", "--dir", &env.dir_arg(), "--json"]);
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["session"], 3);
    assert_eq!(view["feature"], "f1");
    assert_eq!(view["turns"].as_array().unwrap().len(), 3);
    assert_eq!(view["turns"][0]["tool_calls"][0]["name"], "write_file");
    let result = view["turns"][0]["tool_calls"][0]["result"]
        .as_str()
        .unwrap();
    assert!(result.contains("a.txt"), "{result}");
    assert_eq!(view["verdict"]["verdict"], "accepted");
    let log = env.log_json();
    assert_eq!(view["verdict"]["commit"], log[2]["commit"]);
    assert_eq!(view["usage"]["input_tokens"], 3000);
    assert_eq!(view["usage"]["output_tokens"], 150);
}

#[test]
fn status_and_log_tables_snapshot() {
    let env = built_project();
    let dir = env.dir_arg();
    let status = run_ok(&env, &["status", "--dir", &dir]);
    let log = run_ok(&env, &["log", "--dir", &dir]);
    stable(&env).bind(|| {
        insta::assert_snapshot!("status", status);
        insta::assert_snapshot!("log", log);
    });
}

#[test]
fn help_snapshots() {
    let env = Env::new();
    let mut help = String::new();
    for args in [
        vec!["--help"],
        vec!["init", "--help"],
        vec!["continue", "--help"],
        vec!["show", "--help"],
    ] {
        help.push_str(&format!("$ longrun {}\n", args.join(" ")));
        help.push_str(&run_ok(&env, &args));
        help.push('\n');
    }
    insta::assert_snapshot!("help", help);
}

#[test]
fn completions_name_every_command_and_parse_in_bash() {
    let env = Env::new();
    let script = run_ok(&env, &["completions", "bash"]);
    for command in [
        "init",
        "continue",
        "status",
        "log",
        "show",
        "completions",
        "man",
    ] {
        assert!(script.contains(command), "bash completions lack {command}");
    }
    assert!(
        !script.contains("__worker"),
        "hidden commands must not complete"
    );
    let path = env.write("longrun.bash", &script);
    let out = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "bash -n: {}", text(&out));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        assert!(!run_ok(&env, &["completions", shell]).is_empty(), "{shell}");
    }
    let out = env.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn man_page_is_roff_with_every_command() {
    let env = Env::new();
    let page = run_ok(&env, &["man"]);
    assert!(page.contains(".TH longrun 1"), "{page}");
    for command in ["init", "continue", "status", "log", "show", "completions"] {
        assert!(page.contains(&format!("longrun\\-{command}")) || page.contains(command));
    }
    assert!(!page.contains("__worker") && !page.contains("\\_\\_worker"));
}

fn log_file(env: &Env) -> String {
    std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap_or_default()
}

#[test]
fn runs_log_to_the_project_log_file_and_to_stderr_with_v() {
    let env = built_project();
    let log = log_file(&env);
    assert!(log.contains("session 1 (initializer): started"), "{log}");
    assert!(log.contains("session 3: accepted"), "{log}");
    // Plain runs keep stderr clean; -vv shows the same records there.
    let model = env.model(json!({"*": []}));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--model", &model]);
    assert!(!stderr(&out).contains("DEBUG"), "{}", text(&out));
    let out = env.run(&[
        "-vv",
        "continue",
        "--dir",
        &env.dir_arg(),
        "--model",
        &model,
    ]);
    assert!(
        stderr(&out).contains("session 5 (worker, f2): started"),
        "{}",
        text(&out)
    );
}

#[test]
fn rust_log_sets_what_is_logged() {
    let env = built_project();
    let model = env.model(json!({"*": []}));
    let out = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg(), "--model", &model])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("session 4 (worker, f2): started"),
        "{}",
        text(&out)
    );
    let before = log_file(&env).len();
    let out = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg(), "--model", &model])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("started"), "{}", text(&out));
    assert_eq!(log_file(&env).len(), before, "RUST_LOG=off logs nothing");
}

#[test]
fn status_reads_without_creating_a_log() {
    let env = built_project();
    std::fs::remove_file(env.project().join(".longrun/longrun.log")).unwrap();
    run_ok(&env, &["status", "--dir", &env.dir_arg()]);
    assert!(!Path::new(&env.project().join(".longrun/longrun.log")).exists());
}
