//! Harness benchmarks: `cargo bench --bench harness` prints the figures.
//!
//! 1. Context: 300 steps whose tool outputs are 20 kB each, run through the
//!    worker's agent loop against an instant scripted model on a socket pair,
//!    with context management and without: the peak request and the total
//!    input tokens (bytes / 4, as the scripted model bills them).
//! 2. Overhead: 1,000 steps of in-process tools (read_file, list_files, grep)
//!    in a real `longrun continue` session with the scripted model: harness
//!    time per step, and the peak memory of the orchestrator and the worker.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) both run small,
//! as a smoke test; the figures are only meaningful from `cargo bench`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use longrun::broker::{OrchestratorMessage, WorkerLink, WorkerMessage};
use longrun::config::BudgetSection;
use longrun::config::HarnessSettings;
use longrun::confined::tools::{Registry, ToolContext};
use longrun::confined::{AgentLoop, Budget, Harness, Tools};
use longrun::model::{ChatResponse, ToolCall, Usage};
use serde_json::{json, Value};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (context_steps, overhead_steps) = if full { (300, 1000) } else { (20, 30) };
    context_benchmark(context_steps);
    overhead_benchmark(overhead_steps);
}

// ---- 1. context management ----

/// What the model was sent over one session.
#[derive(Debug, Default)]
struct Sent {
    requests: u32,
    peak_bytes: usize,
    total_tokens: u64,
    compactions: u32,
}

fn context_benchmark(steps: u32) {
    let dir = tempfile::tempdir().unwrap();
    let settings = HarnessSettings::default();
    let on = run_context_session(dir.path(), steps, &settings);
    let off = run_context_session(
        dir.path(),
        steps,
        &HarnessSettings {
            manage_context: false,
            ..settings.clone()
        },
    );
    let threshold = settings.compact_threshold();
    println!(
        "context: {steps} steps, 20 kB tool outputs, window {} tokens, compaction at {threshold}",
        settings.context_window
    );
    println!("  {:<28} {:>14} {:>14}", "", "managed", "unmanaged");
    println!(
        "  {:<28} {:>14} {:>14}",
        "requests", on.requests, off.requests
    );
    println!(
        "  {:<28} {:>14} {:>14}",
        "peak request (bytes)", on.peak_bytes, off.peak_bytes
    );
    println!(
        "  {:<28} {:>14} {:>14}",
        "peak request (tokens)",
        on.peak_bytes / 4,
        off.peak_bytes / 4
    );
    println!(
        "  {:<28} {:>14} {:>14}",
        "total input tokens", on.total_tokens, off.total_tokens
    );
    println!(
        "  {:<28} {:>14} {:>14}",
        "compactions", on.compactions, off.compactions
    );
    println!(
        "  peak under the threshold: {}; total {:.1}x smaller",
        (on.peak_bytes / 4) as u64 <= threshold,
        off.total_tokens as f64 / on.total_tokens.max(1) as f64
    );
}

/// The worker's loop against an instant model on the other end of a socket pair.
fn run_context_session(workspace: &Path, steps: u32, settings: &HarnessSettings) -> Sent {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let model = std::thread::spawn(move || serve_context_model(theirs));
    let mut link = WorkerLink::new(ours).unwrap();
    let registry = Registry::standard();
    let read_only = Registry::read_only();
    let ctx = ToolContext {
        workspace: workspace.to_path_buf(),
        tmp: workspace.to_path_buf(),
    };
    let harness = Harness {
        registry: &registry,
        read_only: &read_only,
        ctx: &ctx,
        settings,
        skills: &[],
        checks: None,
        files_to_change: &[],
    };
    let budget = Budget::new(BudgetSection {
        steps,
        ..BudgetSection::default()
    });
    let system = longrun::templates::WORKER_PROMPT.to_string();
    let first = "Implement feature F001.".to_string();
    let strategy = Box::new(Tools::new(settings));
    let mut agent = AgentLoop::session(harness, budget, system, first, strategy);
    agent.run(&mut link).unwrap();
    drop(link);
    model.join().unwrap()
}

/// Answers every request with a bash call printing 20 kB, and a compaction
/// request with a summary; bills bytes / 4 input tokens.
fn serve_context_model(stream: UnixStream) -> Sent {
    let mut writer = stream.try_clone().unwrap();
    let mut sent = Sent::default();
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        let Ok(WorkerMessage::ModelRequest { request, .. }) = serde_json::from_str(&line) else {
            continue;
        };
        let bytes = serde_json::to_vec(&request).unwrap().len();
        sent.requests += 1;
        sent.peak_bytes = sent.peak_bytes.max(bytes);
        sent.total_tokens += (bytes / 4) as u64;
        let compaction = request.messages.last().is_some_and(|m| {
            matches!(m, longrun::model::Message::User { content } if content.contains("handoff summary"))
        });
        let response = if compaction {
            sent.compactions += 1;
            respond(
                "Handoff: printed outputs so far; keep printing.",
                Vec::new(),
                bytes,
            )
        } else {
            let command = format!("yes 'a line of build output, much like a test log' | head -c 20000; echo; echo step {}", sent.requests);
            let call = ToolCall {
                id: format!("call_{}", sent.requests),
                name: "bash".into(),
                arguments: json!({ "command": command }).to_string(),
            };
            respond("", vec![call], bytes)
        };
        let mut out = serde_json::to_vec(&response).unwrap();
        out.push(b'\n');
        if writer.write_all(&out).is_err() {
            break;
        }
    }
    sent
}

fn respond(text: &str, tool_calls: Vec<ToolCall>, bytes: usize) -> OrchestratorMessage {
    OrchestratorMessage::ModelResponse {
        response: ChatResponse {
            text: text.into(),
            tool_calls,
            usage: Usage {
                input_tokens: (bytes / 4) as u64,
                output_tokens: 20,
                cached_tokens: 0,
            },
            cost_usd: 0.0,
            cut: None,
        },
        notice: None,
    }
}

// ---- 2. harness overhead and memory ----

fn overhead_benchmark(steps: usize) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("project");
    let model = root.path().join("model.json");
    std::fs::write(&model, overhead_model(steps).to_string()).unwrap();
    let spec = root.path().join("spec.md");
    std::fs::write(&spec, "# Spec\nA benchmark.\n").unwrap();
    let model_arg = format!("scripted:{}", model.display());
    let out = longrun()
        .args([
            "init",
            spec.to_str().unwrap(),
            "--dir",
            dir.to_str().unwrap(),
            "--model",
            &model_arg,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let toml = std::fs::read_to_string(dir.join("longrun.toml")).unwrap();
    let toml = toml
        .replacen("steps = 200", &format!("steps = {}", steps + 5), 1)
        .replacen("check_rounds = 3", "check_rounds = 0", 1);
    std::fs::write(dir.join("longrun.toml"), toml).unwrap();
    git(&dir, &["commit", "-qam", "benchmark settings"]);

    let started = Instant::now();
    let mut child = longrun()
        .args([
            "continue",
            "--dir",
            dir.to_str().unwrap(),
            "--sessions",
            "1",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut orchestrator_kib = 0;
    while child.try_wait().unwrap().is_none() {
        orchestrator_kib = orchestrator_kib.max(peak_kib(child.id()));
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = started.elapsed();
    let stats = worker_stats(&dir.join(".longrun/sessions/0002/transcript.jsonl"));
    let steps_done = stats["steps"].as_u64().unwrap_or(0).max(1);
    let harness_us = stats["harness_micros"].as_u64().unwrap_or(0) as f64 / steps_done as f64;
    println!("overhead: {steps_done} steps of in-process tools (read_file, list_files, grep), scripted model");
    println!(
        "  harness time per step (worker, excluding model and tools): {:.3} ms",
        harness_us / 1000.0
    );
    println!(
        "  session wall time per step (everything: broker, transcript, tools): {:.3} ms",
        wall.as_secs_f64() * 1000.0 / steps_done as f64
    );
    println!(
        "  peak RSS, worker: {:.1} MiB",
        stats["peak_rss_kib"].as_u64().unwrap_or(0) as f64 / 1024.0
    );
    println!(
        "  peak RSS, orchestrator: {:.1} MiB",
        orchestrator_kib as f64 / 1024.0
    );
}

/// An initializer, then `steps` turns cycling through six read-only calls.
fn overhead_model(steps: usize) -> Value {
    let features = json!({"features": [{"id": "F001", "category": "functional",
        "description": "bench", "steps": ["x"], "check": "test -f bench.txt", "passes": false}]});
    let init = json!([
        {"tool_calls": [
            {"name": "write_file", "arguments": {"path": "features.json", "content": format!("{features:#}\n")}},
            {"name": "write_file", "arguments": {"path": "init.sh", "content": "#!/usr/bin/env bash\necho ready\n"}},
            {"name": "write_file", "arguments": {"path": "progress.md", "content": "# Progress\n"}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "chmod +x init.sh && git add -A && git commit -qm init"}}]},
        {"text": "initialized"}
    ]);
    let cycle = [
        json!({"name": "read_file", "arguments": {"path": "SPEC.md"}}),
        json!({"name": "read_file", "arguments": {"path": "features.json"}}),
        json!({"name": "list_files", "arguments": {}}),
        json!({"name": "grep", "arguments": {"pattern": "F001"}}),
        json!({"name": "read_file", "arguments": {"path": "progress.md"}}),
        json!({"name": "grep", "arguments": {"pattern": "echo"}}),
    ];
    let turns: Vec<Value> = (0..steps)
        .map(|i| {
            json!({"tool_calls": [cycle[i % cycle.len()].clone()],
                        "usage": {"input_tokens": 1000, "output_tokens": 20}})
        })
        .collect();
    json!({"sessions": {"1": init, "2": turns}})
}

/// The worker's own figures, from the event it sends before it finishes.
fn worker_stats(transcript: &Path) -> Value {
    let text = std::fs::read_to_string(transcript).unwrap();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["event"]["kind"] == "worker_stats")
        .map(|e| e["event"].clone())
        .unwrap_or(Value::Null)
}

/// VmHWM (peak resident memory) of a live process, in KiB.
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn longrun() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.env_remove("LONGRUN_MODEL").env("RUST_LOG", "off");
    cmd
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
