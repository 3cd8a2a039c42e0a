//! Notifications: the `[notify] command` hears about a stuck feature, a run
//! of rejections and the end of the run, with the event as JSON on stdin and
//! a summary in `LONGRUN_SUMMARY`; a failing or hanging notifier does not
//! hurt the run.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

/// A project of one feature (`a`, checked by `test -f a.txt`) whose workers
/// follow `worker`, with `notify` as the `[notify]` section and one attempt
/// before a feature is stuck when `stuck_after` says so.
fn project(worker: Value, notify: &str, run: &str) -> Env {
    project_in(Env::new(), worker, notify, run)
}

fn project_in(env: Env, worker: Value, notify: &str, run: &str) -> Env {
    let list = features(&[("a", false, "test -f a.txt")]);
    let model = env.model(json!({"1": initializer(&list), "*": worker}));
    let toml = format!(
        "[model]\nprovider = \"scripted\"\nname = \"{}\"\n\n[run]\n{run}\n\n[notify]\n{notify}\n",
        model.trim_start_matches("scripted:")
    );
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    let out = env.init("# Spec\nA file.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

/// A worker that does nothing: every session is rejected.
fn idle() -> Value {
    json!([done("nothing")])
}

/// A worker that makes a.txt and marks `a`: accepted.
fn builder() -> Value {
    json!([
        turn(vec![
            write_file("a.txt", "x\n"),
            write_file("features.json", &features(&[("a", true, "test -f a.txt")])),
        ]),
        turn(vec![bash(
            "echo done >> progress.md && git add -A && git commit -qm a"
        )]),
        done("done")
    ])
}

/// A `[notify]` section whose command appends its stdin and summary under `dir`.
fn recording(dir: &std::path::Path) -> String {
    format!(
        "command = 'cat >> {0}/events.jsonl; printf \"%s|%s\\n\" \"$LONGRUN_EVENT\" \"$LONGRUN_SUMMARY\" >> {0}/summaries'\n\
         after_rejections = 2\nwritable = [\"{0}\"]\n",
        dir.display()
    )
}

#[test]
fn a_notifier_hears_of_a_stuck_feature_a_streak_and_the_end_of_the_run() {
    let env = Env::new();
    let dir = env.path("heard");
    std::fs::create_dir_all(&dir).unwrap();
    let env = project_in(env, idle(), &recording(&dir), "max_attempts = 2");

    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--until-done"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let events: Vec<Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_else(|e| panic!("no events: {e}: {}", text(&out)))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["feature_stuck", "rejected_in_a_row", "run_finished"],
        "{events:?}"
    );
    assert_eq!(events[0]["feature"], "a");
    assert_eq!(events[0]["failed_attempts"], 2);
    assert_eq!(events[1]["count"], 2);
    assert_eq!(events[2]["outcome"], "stopped_early");
    assert_eq!(events[2]["exit_code"], 3);
    assert!(
        events[2]["time"].as_str().unwrap().ends_with('Z'),
        "{:?}",
        events[2]
    );
    let summaries = std::fs::read_to_string(dir.join("summaries")).unwrap();
    assert!(
        summaries.contains("feature_stuck|longrun: feature a is stuck after 2 failed attempts\n"),
        "{summaries}"
    );
    assert!(
        summaries.contains("run_finished|longrun: run stopped early: 0/1 features passing\n"),
        "{summaries}"
    );
}

#[test]
fn a_failing_or_hanging_notifier_does_not_hurt_the_run() {
    for (command, why) in [
        ("command = 'echo broken >&2; exit 3'", "exit 3: broken"),
        ("command = 'sleep 60'\ntimeout_secs = 1", "killed after 1 s"),
    ] {
        let env = project(builder(), command, "");
        let started = Instant::now();
        let out = env.run(&["continue", "--dir", &env.dir_arg(), "--until-done"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "{}",
            text(&out)
        );
        assert!(
            stdout(&out).contains(&format!(
                "notify: the command failed on run_finished ({why}); the run goes on"
            )),
            "{}",
            text(&out)
        );
        assert_eq!(env.log_json()[1]["verdict"], "accepted");
    }
}

#[test]
fn the_notify_flag_overrides_the_settings_and_reaches_the_network() {
    use std::io::Read;
    let env = project(builder(), "command = 'exit 9'", "");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let heard = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        text
    });
    // Through the host's loopback, as a webhook would go out.
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port}; cat >&3");
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--notify", &command]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !stdout(&out).contains("notify: the command failed"),
        "{}",
        text(&out)
    );
    let event: Value = serde_json::from_str(heard.join().unwrap().trim()).unwrap();
    assert_eq!(event["type"], "run_finished");
    assert_eq!(event["outcome"], "done");
}
