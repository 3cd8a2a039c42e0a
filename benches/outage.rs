//! `cargo bench --bench outage`: a provider outage in a real `longrun
//! continue` against a mock provider on loopback. The provider is down (a
//! closed port) when the worker session starts; once the run has paused it
//! stays down a while longer, then comes back on the same port. Printed:
//! the time from the provider coming back to the run resuming (its
//! `resumed` event) and to the next session starting, and what the outage
//! cost: sessions started while paused, attempts counted against the
//! feature, sessions recorded as the run's fault.
//!
//! The time to resume is bounded by the pause's backoff cap
//! (`[model] retry_cap_secs`, 60 s by default): it is measured with the
//! default backoff (1 s doubling to 60 s) and with a 5 s cap. Under
//! `cargo test --all-targets` (no `--bench` argument) it runs once with a
//! fast backoff, as a smoke test.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/all/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../tests/all/mock_server.rs"]
mod mock_server;

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{features, initializer, worker, Env};
use mock_server::{closed_port, ok_json, openai_message, stream_turns, MockServer, Wire};
use serde_json::{json, Value};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let cases: &[(&str, f64, f64, Duration)] = if full {
        &[
            (
                "default backoff (1 s doubling to 60 s)",
                1.0,
                60.0,
                Duration::from_secs(20),
            ),
            ("retry_cap_secs = 5", 1.0, 5.0, Duration::from_secs(20)),
        ]
    } else {
        &[(
            "smoke: 0.05 s doubling to 0.2 s",
            0.05,
            0.2,
            Duration::from_millis(500),
        )]
    };
    let trials = if full { 3 } else { 1 };
    println!(
        "outage: provider down when the session starts, back after the run has paused for a while"
    );
    for (label, base, cap, down) in cases {
        let mut rows = Vec::new();
        for _ in 0..trials {
            rows.push(outage(*base, *cap, *down));
        }
        report(label, *down, &rows);
    }
}

/// What one outage cost.
struct Trial {
    /// From the provider listening again to the run's `resumed` event.
    to_resumed: Duration,
    /// From the provider listening again to the next `session_started`.
    to_session: Duration,
    sessions_while_paused: usize,
    failed_attempts: u64,
    run_faults: usize,
    accepted: bool,
}

fn report(label: &str, down: Duration, rows: &[Trial]) {
    let secs = |f: &dyn Fn(&Trial) -> Duration| {
        let mut v: Vec<f64> = rows.iter().map(|r| f(r).as_secs_f64()).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        (v[v.len() / 2], v[v.len() - 1])
    };
    let (med_r, max_r) = secs(&|r| r.to_resumed);
    let (med_s, max_s) = secs(&|r| r.to_session);
    println!(
        "  {label}; down {:.1} s after the pause began, {} trial(s):",
        down.as_secs_f64(),
        rows.len()
    );
    println!("    provider back -> run resumed         median {med_r:7.3} s  max {max_r:7.3} s");
    println!("    provider back -> next session starts median {med_s:7.3} s  max {max_s:7.3} s");
    println!(
        "    sessions started while paused: {}; attempts counted against the feature: {}; \
         sessions recorded Longrun-Fault: run: {}; feature accepted after: {}",
        rows.iter()
            .map(|r| r.sessions_while_paused)
            .max()
            .unwrap_or(0),
        rows.iter().map(|r| r.failed_attempts).max().unwrap_or(0),
        rows.iter().map(|r| r.run_faults).max().unwrap_or(0),
        rows.iter().all(|r| r.accepted)
    );
}

fn one(passes: bool) -> String {
    features(&[("F001", passes, "test -f done.txt")])
}

fn outage(base: f64, cap: f64, down: Duration) -> Trial {
    let env = Env::new();
    let init_server = MockServer::start(
        Wire::Openai,
        stream_turns(Wire::Openai, &initializer(&one(false)), 1),
    );
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(
        env.project().join("longrun.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\nbase_url = \"{}\"\n\
             max_tries = 2\nretry_base_secs = {base}\nretry_cap_secs = {cap}\n",
            init_server.base_url()
        ),
    )
    .unwrap();
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let out = longrun(&env)
        .args(["init", spec.to_str().unwrap(), "--dir", &env.dir_arg()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let port = closed_port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let mut child = longrun(&env)
        .args([
            "continue",
            "--dir",
            &env.dir_arg(),
            "--json",
            "--base-url",
            &base_url,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel::<(Instant, Value)>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send((Instant::now(), v));
            }
        }
    });
    let mut events = Vec::new();
    wait_for(&rx, &mut events, "paused");
    std::thread::sleep(down);
    let mut script = vec![ok_json(openai_message(&json!({"text": "ok"}), 50))];
    script.extend(stream_turns(
        Wire::Openai,
        &worker(&[("done.txt", "done\n")], &one(true)),
        60,
    ));
    let _back = MockServer::start_on(port, Wire::Openai, script);
    let up = Instant::now();
    let resumed = wait_for(&rx, &mut events, "resumed");
    let started = wait_for(&rx, &mut events, "session_started");
    assert!(child.wait().unwrap().success());
    let paused_at = events
        .iter()
        .position(|(_, e)| e["type"] == "paused")
        .unwrap();
    let resumed_at = events
        .iter()
        .position(|(_, e)| e["type"] == "resumed")
        .unwrap();
    let status: Value = serde_json::from_slice(
        &longrun(&env)
            .args(["status", "--json", "--dir", &env.dir_arg()])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let log: Vec<Value> = serde_json::from_slice(
        &longrun(&env)
            .args(["log", "--json", "--dir", &env.dir_arg()])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    Trial {
        to_resumed: resumed.saturating_duration_since(up),
        to_session: started.saturating_duration_since(up),
        sessions_while_paused: events[paused_at..resumed_at]
            .iter()
            .filter(|(_, e)| e["type"] == "session_started")
            .count(),
        failed_attempts: status["features"][0]["failed_attempts"]
            .as_u64()
            .unwrap_or(99),
        run_faults: log.iter().filter(|s| s["fault"] == "run").count(),
        accepted: status["features"][0]["passes"] == true,
    }
}

/// Collect events until one of `kind`; its time.
fn wait_for(
    rx: &mpsc::Receiver<(Instant, Value)>,
    seen: &mut Vec<(Instant, Value)>,
    kind: &str,
) -> Instant {
    loop {
        let (at, event) = rx
            .recv_timeout(Duration::from_secs(300))
            .unwrap_or_else(|_| {
                panic!(
                    "no {kind} event; saw {:#?}",
                    seen.iter().map(|(_, e)| e).collect::<Vec<_>>()
                )
            });
        let found = event["type"] == kind;
        seen.push((at, event));
        if found {
            return at;
        }
    }
}

fn longrun(env: &Env) -> std::process::Command {
    let mut cmd = env.longrun();
    for var in ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "LONGRUN_BASE_URL"] {
        cmd.env_remove(var);
    }
    cmd.env("LONGRUN_API_KEY", "sk-test-FAKE-bench")
        .env("RUST_LOG", "off");
    cmd
}
