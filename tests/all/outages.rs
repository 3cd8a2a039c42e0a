//! Provider faults and interruptions are the run's, not the work's: a
//! provider that stays down, a usage limit, a refused key and kill -9s of
//! the orchestrator leave no feature stuck. A down provider pauses the run,
//! which goes on by itself once it answers.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use crate::mock_server::*;

const KEY: &str = "sk-test-FAKE-outages";

fn one_feature(passes: bool) -> String {
    features(&[("F001", passes, "test -f done.txt")])
}

fn worker_turns() -> Value {
    worker(&[("done.txt", "done\n")], &one_feature(true))
}

fn longrun(env: &Env) -> Command {
    let mut cmd = env.longrun();
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LONGRUN_BASE_URL"] {
        cmd.env_remove(var);
    }
    cmd.env("LONGRUN_API_KEY", KEY);
    cmd
}

/// A project initialized through a mock server (which stays up for it) with
/// fast retries: two tries a request, a pause backoff of at most 0.2 s.
fn initialized(extra_script: Vec<Reply>) -> (Env, MockServer) {
    let env = Env::new();
    let mut script = stream_turns(Wire::Openai, &initializer(&one_feature(false)), 1);
    script.extend(extra_script);
    let server = MockServer::start(Wire::Openai, script);
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(
        env.project().join("longrun.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\nbase_url = \"{}\"\n\
             max_tries = 2\nretry_base_secs = 0.05\nretry_cap_secs = 0.2\n",
            server.base_url()
        ),
    )
    .unwrap();
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let out = longrun(&env)
        .args(["init", spec.to_str().unwrap(), "--dir", &env.dir_arg()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    (env, server)
}

fn status(env: &Env) -> Value {
    serde_json::from_slice(
        &env.run(&["status", "--json", "--dir", &env.dir_arg()])
            .stdout,
    )
    .unwrap()
}

fn events(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn a_provider_that_is_down_pauses_the_run_which_resumes_when_it_is_back() {
    let (env, _init_server) = initialized(Vec::new());
    let port = closed_port();
    let base = format!("http://127.0.0.1:{port}/v1");
    // The notifier sends each event to a listener on loopback, as a webhook would.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let notify_port = listener.local_addr().unwrap().port();
    let heard = std::thread::spawn(move || {
        use std::io::Read;
        let mut events = Vec::new();
        for conn in listener.incoming() {
            let mut text = String::new();
            conn.unwrap().read_to_string(&mut text).unwrap();
            let event: Value = serde_json::from_str(text.trim()).unwrap();
            let last = event["type"] == "run_finished";
            events.push(event);
            if last {
                break;
            }
        }
        events
    });
    let notify = format!("exec 3<>/dev/tcp/127.0.0.1/{notify_port}; cat >&3");
    let mut child = longrun(&env)
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--json",
            "--base-url",
            &base,
            "--notify",
            &notify,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let start = Instant::now();
    for line in lines.by_ref() {
        let line = line.unwrap();
        seen.push(line.clone());
        if line.contains("\"type\":\"paused\"") {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{seen:#?}");
    }
    let paused: Value = serde_json::from_str(seen.last().unwrap()).unwrap();
    assert_eq!(paused["type"], "paused", "{seen:#?}");
    assert!(
        paused["reason"]
            .as_str()
            .unwrap()
            .contains("Connection refused"),
        "{paused}"
    );
    // Down a while longer: the run keeps waiting and starts no session.
    std::thread::sleep(Duration::from_millis(800));
    let mut script = vec![ok_json(openai_message(&json!({"text": "ok"}), 50))];
    script.extend(stream_turns(Wire::Openai, &worker_turns(), 60));
    let _back = MockServer::start_on(port, Wire::Openai, script);
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status_code = child.wait().unwrap();
    seen.extend(rest);
    assert_eq!(status_code.code(), Some(0), "{seen:#?}");
    assert!(
        seen.iter().any(|l| l.contains("\"type\":\"resumed\"")),
        "{seen:#?}"
    );
    let log = env.log_json();
    let verdicts: Vec<(&str, &str)> = log
        .iter()
        .map(|s| {
            (
                s["verdict"].as_str().unwrap(),
                s["fault"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        [("accepted", "-"), ("failed", "run"), ("accepted", "-")],
        "one session met the outage, none was spent while paused"
    );
    let st = status(&env);
    assert_eq!(st["features"][0]["passes"], true);
    assert_eq!(st["features"][0]["failed_attempts"], 0);
    // A person hears of the pause, of the run going on, and of its end.
    let kinds: Vec<String> = heard
        .join()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["run_paused", "run_resumed", "run_finished"]);
}

#[test]
fn a_usage_limit_with_a_long_reset_pauses_the_run_instead_of_failing_the_feature() {
    let limit = || error(429, "usage limit reached", &[("retry-after", "7200")]);
    let mut script = vec![limit()];
    // The probe once the wait is over, then the worker.
    script.push(ok_json(openai_message(&json!({"text": "ok"}), 50)));
    script.extend(stream_turns(Wire::Openai, &worker_turns(), 60));
    let (env, server) = initialized(script);
    let before = server.requests().len();
    let started = Instant::now();
    let out = longrun(&env)
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--json",
            "--max-wait",
            "2",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let evs = events(&out);
    let paused = evs.iter().find(|e| e["type"] == "paused").unwrap();
    // The reset named (2 h) is longer than --max-wait: asked again at the last moment.
    assert!(paused["retry_in_s"].as_f64().unwrap() <= 2.0, "{paused}");
    assert!(
        paused["reason"].as_str().unwrap().contains("usage limit"),
        "{paused}"
    );
    assert!(evs.iter().any(|e| e["type"] == "resumed"), "{evs:#?}");
    assert!(started.elapsed() < Duration::from_secs(60));
    // One try at the limit (not retried in the session: its reset is hours away),
    // then the probe, then the worker's three turns.
    assert_eq!(server.requests().len() - before, 1 + 1 + 3);
    assert_eq!(status(&env)["features"][0]["failed_attempts"], 0);
    assert_eq!(status(&env)["features"][0]["passes"], true);
}

#[test]
fn a_429_without_a_reset_is_retried_then_pauses_with_backoff() {
    let busy = || error(429, "rate limited", &[]);
    // Two tries in the session, one probe at the limit still, then answers.
    let mut script = vec![busy(), busy(), busy()];
    script.push(ok_json(openai_message(&json!({"text": "ok"}), 50)));
    script.extend(stream_turns(Wire::Openai, &worker_turns(), 60));
    let (env, _server) = initialized(script);
    let out = longrun(&env)
        .args(["continue", "--dir", &env.dir_arg(), "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let evs = events(&out);
    assert_eq!(
        evs.iter().filter(|e| e["type"] == "paused").count(),
        1,
        "said once: {evs:#?}"
    );
    assert!(evs.iter().any(|e| e["type"] == "resumed"));
    let st = status(&env);
    assert_eq!(st["features"][0]["passes"], true);
    assert_eq!(st["features"][0]["failed_attempts"], 0);
}

#[test]
fn a_refused_key_stops_the_run_and_blames_no_feature() {
    let (env, _server) = initialized(vec![error(401, "invalid api key", &[])]);
    let out = longrun(&env)
        .args(["continue", "--dir", &env.dir_arg(), "--until-done"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(stderr(&out).contains("invalid api key"), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["fault"], "run", "{:#}", log[1]);
    let st = status(&env);
    assert_eq!(st["features"][0]["failed_attempts"], 0);
    assert_eq!(st["features"][0]["stuck"], false);
    assert_eq!(st["next_feature"], "F001");
}

#[test]
fn giving_up_after_max_wait_exits_75_and_leaves_the_feature_to_try_later() {
    let (env, _server) = initialized(Vec::new());
    let base = format!("http://127.0.0.1:{}/v1", closed_port());
    let out = longrun(&env)
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--base-url",
            &base,
            "--max-wait",
            "1",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "{}", text(&out));
    assert!(
        stdout(&out).contains("did not answer within --max-wait"),
        "{}",
        text(&out)
    );
    assert_eq!(status(&env)["next_feature"], "F001");
}

#[test]
fn ctrl_c_while_paused_ends_the_run_at_once() {
    let (env, _server) = initialized(Vec::new());
    let base = format!("http://127.0.0.1:{}/v1", closed_port());
    let mut child = longrun(&env)
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--json",
            "--base-url",
            &base,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for line in lines {
        if line.unwrap().contains("\"type\":\"paused\"") {
            break;
        }
    }
    let asked = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let code = child.wait().unwrap().code();
    assert_eq!(code, Some(130));
    assert!(
        asked.elapsed() < Duration::from_secs(5),
        "{:?}",
        asked.elapsed()
    );
}

#[test]
fn three_kill_9s_of_the_orchestrator_leave_no_feature_stuck() {
    let env = Env::new();
    let model = env.model(json!({
        "1": initializer(&one_feature(false)),
        "*": [turn(vec![write_file("wip.txt", "w\n")]), turn(vec![bash("true")]),
              turn(vec![write_file("done.txt", "done\n"), write_file("features.json", &one_feature(true))]),
              turn(vec![bash("git add -A && git commit -qm work")]), done("done")],
    }));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    for session in 2..=4 {
        let out = env
            .longrun()
            .args(["continue", "--dir", &env.dir_arg(), "--until-done"])
            .env("LONGRUN_FAILPOINT", format!("agent-loop:{session}"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), None, "session {session}: {}", text(&out));
    }
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--until-done"]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    let rows: Vec<(u64, &str, &str)> = log
        .iter()
        .map(|s| {
            (
                s["session"].as_u64().unwrap(),
                s["verdict"].as_str().unwrap(),
                s["fault"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            (1, "accepted", "-"),
            (2, "interrupted", "run"),
            (3, "interrupted", "run"),
            (4, "interrupted", "run"),
            (5, "accepted", "-")
        ]
    );
    assert_eq!(
        env.git(&[
            "log",
            "-1",
            "--format=%(trailers:key=Longrun-Feature,valueonly)"
        ])
        .trim(),
        "F001"
    );
}
