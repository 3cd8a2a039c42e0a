//! Runs that survive the night: the lock, signals, crash recovery, stuck
//! features, regressions and run limits, each through the real binary.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# Files\nMake a.txt, b.txt and c.txt.\n";

fn three() -> String {
    features(&[
        ("a", false, "test -f a.txt"),
        ("b", false, "test -f b.txt"),
        ("c", false, "test -f c.txt"),
    ])
}

/// features.json with the given ids passing.
fn passing(ids: &[&str]) -> String {
    let all = [
        ("a", "test -f a.txt"),
        ("b", "test -f b.txt"),
        ("c", "test -f c.txt"),
    ];
    let items: Vec<(&str, bool, &str)> = all
        .iter()
        .map(|(id, c)| (*id, ids.contains(id), *c))
        .collect();
    features(&items)
}

/// A worker session that creates `file`, flips `ids` and commits; `first` runs before.
fn worker_with(first: Vec<Value>, file: &str, ids: &[&str]) -> Value {
    let mut turns = first;
    turns.push(turn(vec![
        write_file(file, "x\n"),
        write_file("features.json", &passing(ids)),
    ]));
    turns.push(turn(vec![bash("git add -A && git commit -qm work")]));
    turns.push(done("done"));
    Value::Array(turns)
}

/// An initialized project whose later sessions follow `sessions` (keys "2", "3", ..., "*").
fn project(sessions: Value, toml_extra: &str) -> Env {
    let env = Env::new();
    let mut all = json!({ "1": initializer(&three()) });
    for (k, v) in sessions.as_object().unwrap() {
        all[k] = v.clone();
    }
    let model = env.model(all);
    if !toml_extra.is_empty() {
        let toml = format!(
            "[model]\nprovider = \"scripted\"\nname = \"{}\"\n\n{toml_extra}",
            model.trim_start_matches("scripted:")
        );
        std::fs::create_dir_all(env.project()).unwrap();
        std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    }
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn spawn(env: &Env, args: &[&str]) -> Child {
    env.longrun()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait until `cond` holds, or fail after `secs`.
fn wait_until(secs: u64, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(secs),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn session_file(env: &Env, n: u32, name: &str) -> std::path::PathBuf {
    env.project()
        .join(format!(".longrun/sessions/{n:04}/{name}"))
}

/// Wait until session `n`'s worker is running a tool call numbered `step` or later.
fn wait_for_step(env: &Env, n: u32, step: u64) {
    let path = session_file(env, n, "transcript.jsonl");
    wait_until(30, "the session to reach its tool call", || {
        std::fs::read_to_string(&path)
            .map(|t| {
                t.lines()
                    .filter(|l| l.contains("\"type\":\"request\""))
                    .count() as u64
                    > step
            })
            .unwrap_or(false)
    });
}

fn signal(child: &Child, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), sig).unwrap();
}

fn verdicts(env: &Env) -> Vec<(u64, String)> {
    env.log_json()
        .iter()
        .map(|s| {
            (
                s["session"].as_u64().unwrap(),
                s["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_second_run_is_refused_naming_the_pid_that_holds_the_lock() {
    let env = project(
        json!({ "2": worker_with(vec![turn(vec![bash("sleep 3")])], "a.txt", &["a"]) }),
        "",
    );
    let mut first = spawn(&env, &["continue", "--dir", &env.dir_arg()]);
    wait_for_step(&env, 2, 0);
    let second = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert_eq!(second.status.code(), Some(2), "{}", text(&second));
    assert!(
        stderr(&second).contains(&format!("pid {}", first.id())),
        "{}",
        text(&second)
    );
    assert!(first.wait().unwrap().success());
    assert_eq!(
        verdicts(&env),
        [(1, "accepted".into()), (2, "accepted".into())]
    );
}

#[test]
fn a_stale_lock_is_taken_over_with_a_notice() {
    let env = project(json!({ "2": worker_with(vec![], "a.txt", &["a"]) }), "");
    let lock = env.project().join(".longrun/lock");
    std::fs::write(
        &lock,
        r#"{"pid": 4194000, "started": "2026-01-01T00:00:00Z", "host": "gone"}"#,
    )
    .unwrap();
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("stale lock left by pid 4194000"),
        "{}",
        text(&out)
    );
}

#[test]
fn the_first_signal_lets_the_session_commit_and_starts_no_new_one() {
    let env = project(
        json!({ "2": worker_with(vec![turn(vec![bash("sleep 2")])], "a.txt", &["a"]), "*": worker_with(vec![], "b.txt", &["a", "b"]) }),
        "[run]\ngrace_secs = 30\n",
    );
    let child = spawn(
        &env,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "3"],
    );
    wait_for_step(&env, 2, 0);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(
        verdicts(&env),
        [(1, "accepted".into()), (2, "accepted".into())],
        "no new session may start"
    );
    let told = env
        .requests(2)
        .iter()
        .any(|r| r.to_string().contains("Stop now: the run was interrupted"));
    assert!(told, "the model was never told to stop");
}

#[test]
fn a_second_signal_stops_the_session_at_once_and_keeps_its_work() {
    let env = project(
        json!({ "2": [turn(vec![write_file("wip.txt", "half done\n")]), turn(vec![bash("sleep 60")]), done("never")] }),
        "",
    );
    let child = spawn(&env, &["continue", "--dir", &env.dir_arg()]);
    wait_for_step(&env, 2, 1);
    signal(&child, nix::sys::signal::Signal::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, nix::sys::signal::Signal::SIGINT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "interrupted", "{:#}", log[1]);
    assert_eq!(
        env.git(&["show", "refs/longrun/sessions/0002:wip.txt"]),
        "half done\n"
    );
}

/// Pids of every process whose session id is `sid`.
fn in_session(sid: i32) -> Vec<i32> {
    let mut pids = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        // State Z processes are gone already; only living ones count.
        if fields[3].parse::<i32>() == Ok(sid) && fields[0] != "Z" {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn kill_9_of_the_orchestrator_ends_the_worker_and_its_tools() {
    let env = project(
        json!({ "2": [turn(vec![bash("sleep 300 & sleep 300; wait")]), done("never")] }),
        "",
    );
    let mut child = spawn(&env, &["continue", "--dir", &env.dir_arg()]);
    wait_for_step(&env, 2, 0);
    let pid_file = session_file(&env, 2, "worker.pid");
    let worker: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(10, "the tool's processes", || in_session(worker).len() >= 3);
    child.kill().unwrap();
    child.wait().unwrap();
    wait_until(10, "every process of the session to end", || {
        in_session(worker).is_empty()
    });
}

#[test]
fn kill_9_mid_session_is_recovered_by_the_next_continue() {
    let env = project(
        json!({ "2": [turn(vec![write_file("wip.txt", "w\n")]), turn(vec![bash("true")]), done("x")], "*": worker_with(vec![], "a.txt", &["a"]) }),
        "",
    );
    let out = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg()])
        .env("LONGRUN_FAILPOINT", "agent-loop:2")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        None,
        "the failpoint should have killed it: {}",
        text(&out)
    );
    let status = env.run(&["status", "--dir", &env.dir_arg()]);
    assert!(
        stdout(&status).contains("session 2 has no verdict"),
        "{}",
        text(&status)
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        verdicts(&env),
        [
            (1, "accepted".into()),
            (2, "interrupted".into()),
            (3, "accepted".into())
        ]
    );
    assert_eq!(
        env.git(&["show", "refs/longrun/sessions/0002:wip.txt"]),
        "w\n"
    );
    assert_eq!(
        env.log_json()[2]["feature"],
        "a",
        "the interrupted feature is tried again"
    );
    // The retry was told where the interrupted work is.
    let first = env.requests(3)[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(first.contains("refs/longrun/sessions/0002"), "{first}");
    env.git(&["fsck", "--no-progress"]);
}

#[test]
fn randomized_kill_9_at_every_phase_loses_nothing() {
    use rand::{Rng, SeedableRng};
    let seed: u64 = std::env::var("LONGRUN_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("seed {seed} (set LONGRUN_TEST_SEED to replay)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let phases = ["before-clone", "agent-loop", "verification", "after-record"];
    for trial in 0..20 {
        let phase = phases[rng.random_range(0..phases.len())];
        let session = rng.random_range(2..=4u32);
        let ctx = format!("trial {trial} (seed {seed}): kill at {phase}:{session}");
        let env = project(
            json!({ "*": [
                turn(vec![bash("for f in a b c; do grep -q \"\\\"$f\\\"\" done.list 2>/dev/null || { echo \\\"$f\\\" >> done.list; touch $f.txt; break; }; done")]),
                turn(vec![bash("python3 -c \"import json;d=json.load(open('features.json'));[f.update(passes=True) for f in d['features'] if f['id']+'.txt' in __import__('os').listdir('.') and not f['passes']][:1];json.dump(d,open('features.json','w'),indent=2)\"")]),
                turn(vec![bash("git add -A && git commit -qm work")]),
                done("done"),
            ] }),
            "",
        );
        let crashed = env
            .longrun()
            .args(["continue", "--dir", &env.dir_arg(), "--until-done"])
            .env("LONGRUN_FAILPOINT", format!("{phase}:{session}"))
            .output()
            .unwrap();
        assert_eq!(crashed.status.code(), None, "{ctx}: {}", text(&crashed));
        let accepted_before: Vec<u64> = env
            .log_json()
            .iter()
            .filter(|s| s["verdict"] == "accepted")
            .map(|s| s["session"].as_u64().unwrap())
            .collect();
        let out = env.run(&["continue", "--dir", &env.dir_arg(), "--until-done"]);
        assert!(out.status.success(), "{ctx}: {}", text(&out));
        let log = env.log_json();
        let numbers: Vec<u64> = log.iter().map(|s| s["session"].as_u64().unwrap()).collect();
        let mut sorted = numbers.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            numbers, sorted,
            "{ctx}: session numbers repeat or go back: {numbers:?}"
        );
        for n in &accepted_before {
            assert!(
                log.iter()
                    .any(|s| s["session"] == *n && s["verdict"] == "accepted"),
                "{ctx}: lost session {n}"
            );
        }
        let dirs = std::fs::read_dir(env.project().join(".longrun/sessions"))
            .unwrap()
            .count();
        assert_eq!(dirs, log.len(), "{ctx}: a session directory has no verdict");
        for f in ["a.txt", "b.txt", "c.txt"] {
            assert!(env.on_main(f).is_some(), "{ctx}: {f} is not on main");
        }
        assert!(
            env.on_main("features.json")
                .unwrap()
                .matches("\"passes\": true")
                .count()
                == 3,
            "{ctx}"
        );
        env.git(&["fsck", "--no-progress"]);
        let status = env.git(&["status", "--porcelain"]);
        assert_eq!(
            status, "",
            "{ctx}: the project's work tree does not match main"
        );
    }
}

#[test]
fn a_feature_that_keeps_failing_is_stuck_until_retried() {
    // Every session flips its feature without creating the file: the check fails.
    let env = project(
        json!({ "*": worker_with(vec![], "unrelated.txt", &["a"]) }),
        "",
    );
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--until-done",
        "--max-consecutive-failures",
        "0",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        stdout(&out).contains("a (3 failed attempts)"),
        "{}",
        text(&out)
    );
    // a is stuck after 3 attempts; b and c never flip their own feature, so they are stuck too.
    let status: Value = serde_json::from_slice(
        &env.run(&["status", "--json", "--dir", &env.dir_arg()])
            .stdout,
    )
    .unwrap();
    assert_eq!(status["features"][0]["stuck"], true);
    assert_eq!(status["features"][0]["failed_attempts"], 3);
    assert_eq!(status["next_feature"], Value::Null);
    let retry = env.run(&["retry", "a", "--dir", &env.dir_arg()]);
    assert!(retry.status.success(), "{}", text(&retry));
    let status: Value = serde_json::from_slice(
        &env.run(&["status", "--json", "--dir", &env.dir_arg()])
            .stdout,
    )
    .unwrap();
    assert_eq!(status["features"][0]["stuck"], false);
    assert_eq!(status["next_feature"], "a");
    let unknown = env.run(&["retry", "zz", "--dir", &env.dir_arg()]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("the ids are: a, b, c"),
        "{}",
        text(&unknown)
    );
}

#[test]
fn least_failed_gives_each_failing_feature_a_session_before_any_gets_another() {
    // Every session does nothing: each is rejected, its feature fails once more.
    let features_of = |env: &Env| -> Vec<String> {
        env.log_json()
            .iter()
            .filter(|s| s["role"] == "worker")
            .map(|s| s["feature"].as_str().unwrap_or("").to_string())
            .collect()
    };
    let run = |pick: &str| {
        let toml = format!("[run]\nmax_attempts = 2\n{pick}");
        let env = project(json!({ "*": [done("nothing")] }), &toml);
        let out = env.run(&[
            "continue",
            "--dir",
            &env.dir_arg(),
            "--sessions",
            "5",
            "--max-consecutive-failures",
            "0",
        ]);
        assert!(out.status.success(), "{}", text(&out));
        features_of(&env)
    };
    assert_eq!(run("pick = \"least-failed\""), ["a", "b", "c", "a", "b"]);
    // The default tries a failed feature again until it is stuck.
    assert_eq!(run(""), ["a", "a", "b", "b", "c"]);
    let status = |pick: &str| {
        let env = project(json!({}), &format!("[run]\n{pick}"));
        let out = env.run(&["status", "--json", "--dir", &env.dir_arg()]);
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["next_feature"].clone()
    };
    assert_eq!(status("pick = \"least-failed\""), "a");
    let bad = project(json!({}), "[run]\nmax_attempts = 2");
    let toml = bad.project().join("longrun.toml");
    let text_of = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(
        &toml,
        text_of.replace("[run]\n", "[run]\npick = \"random\"\n"),
    )
    .unwrap();
    bad.git(&["commit", "-qam", "pick"]);
    let out = bad.run(&["continue", "--dir", &bad.dir_arg()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("pick"), "{}", text(&out));
}

#[test]
fn consecutive_failures_stop_the_run_with_their_reasons() {
    let env = project(
        json!({ "*": worker_with(vec![], "unrelated.txt", &["a"]) }),
        "",
    );
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--sessions",
        "10",
        "--max-consecutive-failures",
        "2",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(env.log_json().len(), 3, "init plus two failed sessions");
    let printed = stdout(&out);
    assert!(
        printed.contains("2 sessions in a row ended without acceptance"),
        "{printed}"
    );
    assert!(
        printed.contains("session 3 rejected: feature a failed"),
        "{printed}"
    );
}

#[test]
fn longrun_stop_ends_the_run_after_the_current_session() {
    let env = project(
        json!({ "2": worker_with(vec![turn(vec![bash("sleep 2")])], "a.txt", &["a"]), "*": worker_with(vec![], "b.txt", &["a", "b"]) }),
        "",
    );
    let child = spawn(
        &env,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "5"],
    );
    wait_for_step(&env, 2, 0);
    let stop = env.run(&["stop", "--dir", &env.dir_arg()]);
    assert!(stop.status.success(), "{}", text(&stop));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(
        verdicts(&env),
        [(1, "accepted".into()), (2, "accepted".into())]
    );
}

#[test]
fn max_hours_zero_starts_no_session() {
    let env = project(json!({}), "");
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--max-hours", "0"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert_eq!(env.log_json().len(), 1);
}

#[test]
fn a_session_that_breaks_a_passing_feature_is_rejected_naming_it() {
    let env = project(
        json!({
            "2": worker_with(vec![], "a.txt", &["a"]),
            "3": [turn(vec![bash("git rm -q a.txt"), write_file("b.txt", "x"), write_file("features.json", &passing(&["a", "b"]))]),
                  turn(vec![bash("git add -A && git commit -qm work")]), done("done")],
        }),
        "",
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[2]["verdict"], "rejected", "{:#}", log[2]);
    assert!(
        log[2]["reasons"].to_string().contains("broke feature a"),
        "{:#}",
        log[2]
    );
    assert!(env.on_main("a.txt").is_some());
}

#[test]
fn kill_9_of_the_worker_mid_tool_is_interrupted_and_the_run_goes_on() {
    let env = project(
        json!({ "2": [turn(vec![bash("sleep 60")]), done("never")], "*": worker_with(vec![], "a.txt", &["a"]) }),
        "",
    );
    let child = spawn(
        &env,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "2"],
    );
    wait_for_step(&env, 2, 0);
    let worker: i32 = std::fs::read_to_string(session_file(&env, 2, "worker.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(10, "the tool to start", || in_session(worker).len() >= 3);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "interrupted", "{:#}", log[1]);
    assert!(
        log[1]["reasons"].to_string().contains("killed by signal 9"),
        "{:#}",
        log[1]
    );
    assert_eq!(
        (log[2]["feature"].as_str(), log[2]["verdict"].as_str()),
        (Some("a"), Some("accepted"))
    );
}

/// A two-feature project for the parallel tests.
fn pair(sessions: Value) -> Env {
    let env = Env::new();
    let list = features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")]);
    let mut all = json!({ "1": initializer(&list) });
    for (k, v) in sessions.as_object().unwrap() {
        all[k] = v.clone();
    }
    let out = env.init(SPEC, &env.model(all));
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn flip_one(id: &str) -> String {
    features(&[
        ("a", id == "a", "test -f a.txt"),
        ("b", id == "b", "test -f b.txt"),
    ])
}

fn pair_worker(id: &str, extra: &[(&str, &str)]) -> Value {
    let mut calls: Vec<Value> = vec![
        write_file(&format!("{id}.txt"), "x\n"),
        write_file("features.json", &flip_one(id)),
    ];
    calls.extend(extra.iter().map(|(p, c)| write_file(p, c)));
    json!([
        turn(vec![bash("sleep 1")]),
        turn(calls),
        turn(vec![bash(
            "echo note >> progress.md && git add -A && git commit -qm work"
        )]),
        done("done")
    ])
}

fn base_of(env: &Env, n: u32) -> String {
    env.transcript(n)[0]["base"].as_str().unwrap().to_string()
}

#[test]
fn parallel_sessions_on_independent_features_both_land() {
    let env = pair(json!({ "2": pair_worker("a", &[]), "3": pair_worker("b", &[]) }));
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--parallel",
        "2",
        "--until-done",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    // Parallel sessions land in whichever order they finish.
    let mut landed = verdicts(&env);
    landed.sort();
    assert_eq!(
        landed,
        [
            (1, "accepted".into()),
            (2, "accepted".into()),
            (3, "accepted".into())
        ]
    );
    assert_eq!(
        base_of(&env, 2),
        base_of(&env, 3),
        "the two sessions did not run at once"
    );
    let list = env.on_main("features.json").unwrap();
    assert_eq!(list.matches("\"passes\": true").count(), 2, "{list}");
    assert!(env.on_main("a.txt").is_some() && env.on_main("b.txt").is_some());
    env.git(&["fsck", "--no-progress"]);
}

#[test]
fn a_parallel_merge_conflict_rejects_one_session_and_requeues_its_feature() {
    let generic = json!([
        turn(vec![bash("for f in a b; do [ -f $f.txt ] || { touch $f.txt; break; }; done")]),
        turn(vec![bash("python3 -c \"import json,os;d=json.load(open('features.json'));[f.update(passes=True) for f in d['features'] if os.path.exists(f['id']+'.txt')];json.dump(d,open('features.json','w'),indent=2)\"")]),
        turn(vec![bash("git add -A && git commit -qm work")]),
        done("done"),
    ]);
    let env = pair(json!({
        "2": pair_worker("a", &[("shared.txt", "from a\n")]),
        "3": pair_worker("b", &[("shared.txt", "from b\n")]),
        "*": generic,
    }));
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--parallel",
        "2",
        "--until-done",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    let first_two: Vec<&Value> = log
        .iter()
        .filter(|s| s["session"] == 2 || s["session"] == 3)
        .collect();
    let rejected: Vec<&&Value> = first_two
        .iter()
        .filter(|s| s["verdict"] == "rejected")
        .collect();
    assert_eq!(rejected.len(), 1, "{log:#?}");
    assert!(
        rejected[0]["reasons"]
            .to_string()
            .contains("merge conflict with main"),
        "{:#}",
        rejected[0]
    );
    assert!(
        rejected[0]["reasons"].to_string().contains("shared.txt"),
        "{:#}",
        rejected[0]
    );
    // The rejected feature went back in the queue and a later session landed it.
    let requeued = rejected[0]["feature"].clone();
    assert!(
        log.iter().any(|s| s["session"].as_u64() > Some(3)
            && s["feature"] == requeued
            && s["verdict"] == "accepted"),
        "{log:#?}"
    );
    assert_eq!(
        env.on_main("features.json")
            .unwrap()
            .matches("\"passes\": true")
            .count(),
        2
    );
    let work = rejected[0]["work_ref"].as_str().unwrap();
    assert!(env
        .git(&["show", &format!("{work}:shared.txt")])
        .starts_with("from"));
}

#[test]
fn a_provider_down_pauses_the_run_without_blaming_the_feature_and_gives_up_after_max_wait() {
    let env = project(json!({}), "max_tries = 1\nretry_base_secs = 0.01\n");
    // A port that was just free: nothing listens there, on loopback.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = env
        .longrun()
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--sessions",
            "5",
            "--max-consecutive-failures",
            "2",
            "--max-wait",
            "1",
        ])
        .args([
            "--model",
            "openai:test-model",
            "--base-url",
            &format!("http://127.0.0.1:{port}/v1"),
        ])
        .env("LONGRUN_API_KEY", "sk-test-fake-key")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(75), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(
        log.len(),
        2,
        "init and the one session that met the outage: {log:#?}"
    );
    assert_eq!(log[1]["verdict"], "failed", "{:#}", log[1]);
    assert_eq!(log[1]["fault"], "run", "{:#}", log[1]);
    assert!(
        log[1]["reasons"].to_string().contains("model"),
        "{:#}",
        log[1]
    );
    let printed = stdout(&out);
    assert!(printed.contains("paused: "), "{printed}");
    assert!(
        printed.contains("did not answer within --max-wait"),
        "{printed}"
    );
    assert!(!printed.contains("in a row"), "{printed}");
    assert_eq!(env.on_main("features.json").unwrap(), three());
    let status: Value = serde_json::from_slice(
        &env.run(&["status", "--json", "--dir", &env.dir_arg()])
            .stdout,
    )
    .unwrap();
    assert_eq!(status["features"][0]["failed_attempts"], 0);
    assert_eq!(status["next_feature"], "a");
}

/// A small tmpfs mounted over a directory for the life of the value.
struct Tmpfs(std::path::PathBuf);

impl Tmpfs {
    fn mount(dir: &std::path::Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(dir).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then(|| Tmpfs(dir.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_under_longrun_is_a_clean_error_and_corrupts_nothing() {
    let env = project(json!({ "*": worker_with(vec![], "a.txt", &["a"]) }), "");
    let before = env.git(&["rev-parse", "main"]);
    let Some(disk) = Tmpfs::mount(&env.project().join(".longrun"), "16k") else {
        assert!(
            !nix::unistd::getuid().is_root(),
            "root could not mount a tmpfs"
        );
        skip("mounting a small tmpfs needs root");
        return;
    };
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        stderr(&out).contains("No space left on device"),
        "{}",
        text(&out)
    );
    assert!(!stderr(&out).contains("panicked"), "{}", text(&out));
    drop(disk);
    assert_eq!(env.git(&["rev-parse", "main"]), before, "main moved");
    env.git(&["fsck", "--no-progress"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(
        out.status.success(),
        "with space again, the run goes on: {}",
        text(&out)
    );
    assert_eq!(env.log_json().last().unwrap()["verdict"], "accepted");
}

#[test]
fn a_corrupt_state_file_is_rebuilt_and_numbers_never_repeat() {
    let env = project(json!({ "*": worker_with(vec![], "a.txt", &["a"]) }), "");
    // Session 2 got a directory but never a verdict... and the cache is garbage.
    std::fs::create_dir_all(env.project().join(".longrun/sessions/0002")).unwrap();
    std::fs::write(env.project().join(".longrun/state.json"), "{ not json").unwrap();
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        verdicts(&env),
        [
            (1, "accepted".into()),
            (2, "interrupted".into()),
            (3, "accepted".into())
        ]
    );
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(env.project().join(".longrun/state.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(state["last_session"], 3);
}

#[test]
fn the_worker_is_killed_at_the_session_wall_time() {
    let env = project(
        json!({ "2": [turn(vec![bash("sleep 60")]), done("never")] }),
        "[budget]\nwall_time_secs = 2\n",
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "incomplete", "{:#}", log[1]);
    assert!(
        log[1]["reasons"].to_string().contains("wall time of 2 s"),
        "{:#}",
        log[1]
    );
    assert!(log[1]["duration_s"].as_u64().unwrap() < 30, "{:#}", log[1]);
}

#[test]
fn three_sessions_run_at_once_with_parallel_3() {
    let all = ["a", "b", "c"];
    let sessions: serde_json::Map<String, Value> = all
        .iter()
        .enumerate()
        .map(|(i, id)| {
            (
                (i + 2).to_string(),
                worker_with(
                    vec![turn(vec![bash("sleep 1")])],
                    &format!("{id}.txt"),
                    &[id],
                ),
            )
        })
        .collect();
    let env = project(Value::Object(sessions), "");
    let out = env.run(&[
        "continue",
        "--dir",
        &env.dir_arg(),
        "--parallel",
        "3",
        "--until-done",
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let bases: Vec<String> = (2..=4)
        .map(|n| env.transcript(n)[0]["base"].as_str().unwrap().to_string())
        .collect();
    assert!(
        bases.iter().all(|b| *b == bases[0]),
        "not all three ran at once: {bases:?}"
    );
    assert_eq!(
        env.on_main("features.json")
            .unwrap()
            .matches("\"passes\": true")
            .count(),
        3
    );
}

/// Zombie processes whose session id is `sid`.
fn zombies_in_session(sid: i32) -> usize {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = &stat[stat.rfind(')').unwrap() + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields[0] == "Z" && fields[3].parse::<i32>() == Ok(sid)
        })
        .count()
}

#[test]
fn orphans_of_a_session_are_reaped_while_it_runs() {
    let env = project(
        json!({ "2": [turn(vec![bash("for i in 1 2 3 4 5; do (sleep 0.1 &); done; sleep 0.5")]), turn(vec![bash("sleep 5")]), done("x")] }),
        "",
    );
    let child = spawn(&env, &["continue", "--dir", &env.dir_arg()]);
    wait_for_step(&env, 2, 1);
    let worker: i32 = std::fs::read_to_string(session_file(&env, 2, "worker.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        zombies_in_session(worker),
        0,
        "orphans were left as zombies"
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", text(&out));
}
