//! The reading tools at their edges: tables that fit the terminal (and
//! `--wide`), `status` while a run goes, `show last` and `show -N`, the exit
//! statuses of `check-command` and `stop`, and a man page per subcommand.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const LONG: &str = "a description long enough that no narrow terminal can show it whole, \
                    which goes on and on well past two hundred columns so that a cut is plain \
                    to see in every table that prints it, and then some more words at its end";

/// An initialized project with one feature whose description is [`LONG`];
/// session 2 (when asked for) runs `worker`.
fn project(worker: serde_json::Value) -> Env {
    let env = Env::new();
    let list = serde_json::to_string_pretty(&json!({"features": [
        {"id": "F001", "description": LONG, "check": "test -f a.txt", "passes": false}]}))
    .unwrap();
    let model = env.model(json!({"1": initializer(&list), "2": worker}));
    let out = env.init("# Spec\nA thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn status_with_columns(env: &Env, columns: &str, extra: &[&str]) -> String {
    let out = env
        .longrun()
        .args(["status", "--dir", &env.dir_arg()])
        .args(extra)
        .env("COLUMNS", columns)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    stdout(&out)
}

#[test]
fn status_fits_the_width_it_is_given_and_wide_shows_everything() {
    let env = project(json!([]));
    let narrow = status_with_columns(&env, "80", &[]);
    let row = narrow.lines().find(|l| l.starts_with("F001")).unwrap();
    assert_eq!(row.chars().count(), 80, "{narrow}");
    assert!(row.ends_with('…'), "{row}");
    let broad = status_with_columns(&env, "400", &[]);
    assert!(
        broad.contains(LONG),
        "a 400-column terminal shows it whole: {broad}"
    );
    let wide = status_with_columns(&env, "80", &["--wide"]);
    assert!(wide.contains(LONG), "{wide}");
    // A pipe with no COLUMNS gets whole lines.
    let out = env
        .longrun()
        .args(["status", "--dir", &env.dir_arg()])
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    assert!(stdout(&out).contains(LONG), "{}", text(&out));
}

#[test]
fn status_during_a_run_shows_the_session_in_progress_not_as_next() {
    // Step 1 is reported once its call returns; step 2 keeps the session busy.
    let env = project(json!([
        turn(vec![bash("true")]),
        turn(vec![bash("sleep 8")]),
        done("done")
    ]));
    let mut child = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg(), "--sessions", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let mut seen = String::new();
    while start.elapsed() < Duration::from_secs(60) {
        seen = status_with_columns(&env, "200", &[]);
        if seen.contains("in progress: session 2") && seen.contains("step 1") {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.wait();
    assert!(
        seen.contains("in progress: session 2 (worker F001) · working · step 1 · "),
        "{seen}"
    );
    assert!(seen.contains("next feature: none"), "{seen}");
    let row = seen.lines().find(|l| l.starts_with("F001")).unwrap();
    assert!(row.contains("working"), "{row}");
    assert!(seen.contains("sessions recorded: 1 (1 accepted)"), "{seen}");
}

#[test]
fn show_last_and_minus_n_count_back_from_the_newest_session() {
    let env = project(json!([done("nothing done")]));
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let show = |which: &str| env.run(&["show", which, "--dir", &env.dir_arg()]);
    let last = show("last");
    assert!(
        stdout(&last).starts_with("session 2 · worker"),
        "{}",
        text(&last)
    );
    assert_eq!(stdout(&show("-1")), stdout(&last));
    assert!(stdout(&show("-2")).starts_with("session 1 · initializer"));
    let too_far = show("-3");
    assert_eq!(too_far.status.code(), Some(2), "{}", text(&too_far));
    assert!(
        stderr(&too_far).contains("has 2 sessions so far"),
        "{}",
        text(&too_far)
    );
    let bad = show("-x");
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

#[test]
fn check_command_answers_with_its_exit_status() {
    let env = Env::new();
    let code = |command: &str| env.run(&["check-command", command]).status.code();
    assert_eq!(code("ls -la"), Some(0));
    assert_eq!(code("curl https://example.com"), Some(2));
    let ask = env.run(&["check-command", "docker ps"]);
    assert!(stdout(&ask).starts_with("verdict: ask"), "{}", text(&ask));
    assert_eq!(ask.status.code(), Some(1));
}

#[test]
fn stop_without_a_run_says_so_and_leaves_nothing_behind() {
    let env = project(json!([]));
    let out = env.run(&["stop", "--dir", &env.dir_arg()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("no run is going in") && stderr(&out).contains("nothing to stop"),
        "{}",
        text(&out)
    );
    assert!(!env.project().join(".longrun/stop").exists());
}

#[test]
fn every_subcommand_has_a_man_page_with_exit_status_environment_and_files() {
    let env = Env::new();
    let out = env.run(&["man", "continue"]);
    assert!(out.status.success(), "{}", text(&out));
    let page = stdout(&out);
    for part in [
        ".TH LONGRUN-CONTINUE 1",
        ".SH \"EXIT STATUS\"",
        "\\fB3\\fR",
        ".SH ENVIRONMENT",
        "LONGRUN_MODEL",
        ".SH FILES",
        ".longrun/lock",
        "\\fBlongrun\\fR(1)",
    ] {
        assert!(page.contains(part), "{part} missing: {page}");
    }
    let dir = env.path("man");
    let out = env.run(&["man", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let top = std::fs::read_to_string(dir.join("longrun.1")).unwrap();
    // Every page the top page points at exists.
    for name in [
        "init",
        "continue",
        "status",
        "log",
        "show",
        "stop",
        "check-command",
        "doctor",
    ] {
        assert!(
            top.contains(&format!(
                "\\fBlongrun\\-{}\\fR(1)",
                name.replace('-', "\\-")
            )),
            "{name}"
        );
        assert!(dir.join(format!("longrun-{name}.1")).is_file(), "{name}");
    }
    let out = env.run(&["man", "nope"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}
