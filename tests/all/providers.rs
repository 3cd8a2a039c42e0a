//! The real providers (openai:, anthropic:) against a mock server on
//! 127.0.0.1: the requests they send, the answers they read (whole and
//! streamed), every fault they must ride through or report, tokens and cost,
//! `--max-cost`, and the key that must never leave the orchestrator.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::*;
use crate::mock_server::*;

/// A fake key: any file, object or log that holds it is a leak.
const KEY: &str = "sk-test-FAKE-0d9f3c1a-longrun";

fn one_feature() -> String {
    features(&[("F001", false, "test -f done.txt")])
}

/// The worker's part: write the file (with non-ASCII text), pass, commit.
fn worker_turns() -> Value {
    worker(
        &[("done.txt", "fertig ✓ — naïve café\n")],
        &features(&[("F001", true, "test -f done.txt")]),
    )
}

/// The longrun binary with no provider variables but our fake key.
pub fn longrun(env: &Env) -> Command {
    let mut cmd = env.longrun();
    for var in PROVIDER_VARS {
        cmd.env_remove(var);
    }
    cmd.env("LONGRUN_API_KEY", KEY);
    cmd
}

fn run(env: &Env, args: &[&str]) -> Output {
    longrun(env).args(args).output().expect("run longrun")
}

/// Prepare longrun.toml in the project (init keeps a prepared one), with fast retries.
pub fn prepare(env: &Env, server: &MockServer, model: &str, extra: &str) {
    let (provider, name) = model.split_once(':').unwrap();
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(
        env.project().join("longrun.toml"),
        format!(
            "[model]\nprovider = \"{provider}\"\nname = \"{name}\"\nbase_url = \"{}\"\n\
             retry_base_secs = 0.01\nretry_cap_secs = 0.05\n{extra}\n",
            server.base_url()
        ),
    )
    .unwrap();
}

/// `init` with the prepared settings.
pub fn init(env: &Env) -> Output {
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    run(
        env,
        &["init", spec.to_str().unwrap(), "--dir", &env.dir_arg()],
    )
}

fn entries(env: &Env, session: u32, kind: &str) -> Vec<Value> {
    env.transcript(session)
        .into_iter()
        .filter(|e| e["type"] == kind)
        .collect()
}

fn trailer(env: &Env, name: &str) -> Vec<String> {
    env.git(&[
        "log",
        "--first-parent",
        &format!("--format=%(trailers:key={name},valueonly)"),
    ])
    .lines()
    .filter(|l| !l.is_empty())
    .map(str::to_string)
    .collect()
}

/// Every file under `dir`, the packed and loose git objects decompressed,
/// and the commands' output: none may hold the key.
fn assert_key_never_written(env: &Env, outputs: &[&Output]) {
    fn walk(dir: &Path, found: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                walk(&path, found);
            } else if kind.is_file() {
                let bytes = std::fs::read(&path).unwrap_or_default();
                if bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes()) {
                    found.push(path.display().to_string());
                }
            }
        }
    }
    let mut found = Vec::new();
    walk(&env.project(), &mut found);
    assert!(found.is_empty(), "the key was written to {found:?}");
    let objects = crate::common::git_command()
        .arg("-C")
        .arg(env.project())
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap();
    assert!(objects.status.success());
    assert!(objects.stdout.len() > 1000, "git objects were read");
    assert!(!String::from_utf8_lossy(&objects.stdout).contains(KEY));
    for out in outputs {
        assert!(!text(out).contains(KEY), "the key was printed");
    }
}

// ---- request shape ----

/// Chat Completions requests: schemas, role order, and every tool result answering a call by id.
fn assert_openai_shape(request: &Recorded) {
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let body = &request.body;
    assert_eq!(body["model"], "gpt-4o");
    let tools = body["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["function"]["name"] == "bash"));
    for t in tools {
        assert_eq!(t["type"], "function");
        assert!(!t["function"]["description"].as_str().unwrap().is_empty());
        assert_eq!(t["function"]["parameters"]["type"], "object", "{t}");
    }
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate().skip(1) {
        match m["role"].as_str().unwrap() {
            "assistant" => {
                assert!(open.is_empty(), "calls left unanswered before message {i}");
                open = m["tool_calls"]
                    .as_array()
                    .map(|c| {
                        c.iter()
                            .map(|c| c["id"].as_str().unwrap().to_string())
                            .collect()
                    })
                    .unwrap_or_default();
            }
            "tool" => {
                let id = m["tool_call_id"].as_str().unwrap();
                let at = open.iter().position(|o| o == id);
                assert!(at.is_some(), "tool result {id} answers no open call");
                open.remove(at.unwrap());
            }
            "user" => assert!(
                open.is_empty(),
                "a user message before every call got its result"
            ),
            other => panic!("unexpected role {other}"),
        }
    }
}

/// Messages requests: headers, cache breakpoints, alternating roles, tool_result ids.
fn assert_anthropic_shape(request: &Recorded) {
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(request.header("x-api-key"), Some(KEY));
    let body = &request.body;
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(body["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
    let tools = body["tools"].as_array().unwrap();
    for t in tools {
        assert_eq!(t["input_schema"]["type"], "object", "{t}");
    }
    assert_eq!(tools.last().unwrap()["cache_control"]["type"], "ephemeral");
    let messages = body["messages"].as_array().unwrap();
    let last = messages.last().unwrap()["content"].as_array().unwrap();
    assert_eq!(last.last().unwrap()["cache_control"]["type"], "ephemeral");
    let mut asked: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        let want = if i % 2 == 0 { "user" } else { "assistant" };
        assert_eq!(m["role"], want, "roles alternate, user first");
        let blocks = m["content"].as_array().unwrap();
        if want == "assistant" {
            asked = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| b["id"].as_str().unwrap().to_string())
                .collect();
            continue;
        }
        let answered: Vec<String> = blocks
            .iter()
            .take_while(|b| b["type"] == "tool_result")
            .map(|b| b["tool_use_id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            answered, asked,
            "message {i} answers the calls before it, first"
        );
        assert!(blocks[answered.len()..]
            .iter()
            .all(|b| b["type"] != "tool_result"));
        asked.clear();
    }
}

// ---- the whole path ----

#[test]
fn init_and_continue_through_the_openai_provider() {
    let env = Env::new();
    let mut script = stream_turns(Wire::Openai, &initializer(&one_feature()), 1);
    script.extend(stream_turns(Wire::Openai, &worker_turns(), 10));
    let server = MockServer::start(Wire::Openai, script);
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let url = server.base_url();
    let out_init = run(
        &env,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            "openai:gpt-4o",
            "--base-url",
            &url,
        ],
    );
    assert!(out_init.status.success(), "{}", text(&out_init));
    // --base-url on init is kept in the committed settings, so continue needs no flag.
    assert!(env.on_main("longrun.toml").unwrap().contains(&url));
    let out = run(&env, &["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(trailer(&env, "Longrun-Verdict"), ["accepted", "accepted"]);
    assert_eq!(
        env.on_main("done.txt").unwrap(),
        "fertig ✓ — naïve café\n",
        "text split mid-character arrived whole"
    );

    let requests = server.requests();
    assert!(requests.len() >= 6);
    for r in &requests {
        assert_openai_shape(r);
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["stream_options"]["include_usage"], true);
    }
    // Tokens and cost per session, from the usage chunks and gpt-4o's price:
    // 600 fresh at $2.50, 400 cached at $1.25, 50 out at $10 per million.
    let per_session: Vec<usize> = [2, 1]
        .iter()
        .map(|&s| entries(&env, s, "response").len())
        .collect();
    assert_eq!(per_session.iter().sum::<usize>(), requests.len());
    let cost = |n: usize| format!("{:.4}", n as f64 * 0.0025);
    assert_eq!(
        trailer(&env, "Longrun-Tokens-In"),
        per_session
            .iter()
            .map(|n| (*n as u64 * USAGE_IN).to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        trailer(&env, "Longrun-Tokens-Cached"),
        per_session
            .iter()
            .map(|n| (*n as u64 * USAGE_CACHED).to_string())
            .collect::<Vec<_>>()
    );
    assert_eq!(
        trailer(&env, "Longrun-Cost-USD"),
        per_session.iter().map(|n| cost(*n)).collect::<Vec<_>>()
    );
    let status = run(&env, &["status", "--json", "--dir", &env.dir_arg()]);
    assert!(status.status.success(), "{}", text(&status));
    assert_key_never_written(&env, &[&out_init, &out, &status]);
}

#[test]
fn init_and_continue_through_the_anthropic_provider() {
    let env = Env::new();
    // The same call three times in a row makes the harness add a note right
    // after the tool results: it must join their user turn, after them.
    let mut worker = worker_turns().as_array().unwrap().clone();
    for _ in 0..3 {
        worker.insert(0, turn(vec![bash("echo same")]));
    }
    let mut script = stream_turns(Wire::Anthropic, &initializer(&one_feature()), 1);
    script.extend(stream_turns(Wire::Anthropic, &json!(worker), 10));
    let server = MockServer::start(Wire::Anthropic, script);
    prepare(&env, &server, "anthropic:claude-sonnet-4-5", "");
    let out_init = init(&env);
    assert!(out_init.status.success(), "{}", text(&out_init));
    let out = run(&env, &["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(trailer(&env, "Longrun-Verdict"), ["accepted", "accepted"]);
    assert_eq!(
        trailer(&env, "Longrun-Model")[0],
        "anthropic:claude-sonnet-4-5"
    );

    let requests = server.requests();
    for r in &requests {
        assert_anthropic_shape(r);
    }
    let merged = requests.iter().any(|r| {
        r.body["messages"].as_array().unwrap().iter().any(|m| {
            let blocks = m["content"].as_array().unwrap();
            blocks.len() >= 2
                && blocks[0]["type"] == "tool_result"
                && blocks.last().unwrap()["type"] == "text"
                && blocks.last().unwrap()["text"]
                    .as_str()
                    .unwrap()
                    .contains("[harness]")
        })
    });
    assert!(
        merged,
        "a harness note after tool results joined their turn"
    );
    // Anthropic counts cache reads apart; ours includes them: 600 + 400 in.
    let n = entries(&env, 2, "response").len() as u64;
    assert_eq!(
        trailer(&env, "Longrun-Tokens-In")[0],
        (n * USAGE_IN).to_string()
    );
    // claude-sonnet-4-5: 600 at $3, 400 cache reads at $0.30, 50 out at $15.
    assert_eq!(
        trailer(&env, "Longrun-Cost-USD")[0],
        format!("{:.4}", n as f64 * 0.00267)
    );
    assert_key_never_written(&env, &[&out_init, &out]);
}

#[test]
fn whole_answers_work_when_the_server_does_not_stream() {
    let env = Env::new();
    let script: Vec<Reply> = initializer(&one_feature())
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(i, t)| ok_json(openai_message(t, i as u32)))
        .collect();
    let server = MockServer::start(Wire::Openai, script);
    prepare(&env, &server, "openai:gpt-4o", "");
    let out = init(&env);
    assert!(out.status.success(), "{}", text(&out));
    assert!(entries(&env, 1, "retry").is_empty());
}

// ---- faults ----

/// An initializer run whose first request meets `fault`; the rest is the normal script.
fn init_after(fault: Reply, wire: Wire, extra: &str) -> (Env, MockServer, Output) {
    let env = Env::new();
    let mut script = vec![fault];
    script.extend(stream_turns(wire, &initializer(&one_feature()), 1));
    let server = MockServer::start(wire, script);
    let model = match wire {
        Wire::Openai => "openai:gpt-4o",
        Wire::Anthropic => "anthropic:claude-sonnet-4-5",
    };
    prepare(&env, &server, model, extra);
    let out = init(&env);
    (env, server, out)
}

/// The initializer was accepted after exactly one retry, whose reason contains `why`.
fn survived_one_retry(env: &Env, server: &MockServer, out: &Output, why: &str) -> Value {
    assert!(out.status.success(), "{}", text(out));
    assert_eq!(trailer(env, "Longrun-Verdict"), ["accepted"]);
    let retries = entries(env, 1, "retry");
    assert_eq!(retries.len(), 1, "{retries:?}");
    assert_eq!(retries[0]["index"], 0);
    assert_eq!(retries[0]["attempt"], 1);
    let reason = retries[0]["reason"].as_str().unwrap();
    assert!(reason.contains(why), "{reason}");
    assert_eq!(
        server.requests().len(),
        entries(env, 1, "response").len() + 1
    );
    retries[0].clone()
}

#[test]
fn a_500_is_retried_and_show_tells_of_it() {
    let (env, server, out) = init_after(error(500, "upstream broke", &[]), Wire::Openai, "");
    let why = "500 Internal Server Error: upstream broke";
    survived_one_retry(&env, &server, &out, why);
    // Off a terminal the warning is one plain line: no colour, no internal fields.
    let err = stderr(&out);
    assert!(
        err.contains("warning: session 1: model request failed (try 1 of 6)"),
        "{err}"
    );
    assert!(
        !err.contains('\x1b') && !err.contains("request="),
        "{err:?}"
    );
    // The plain display says so too, under its session.
    assert!(
        stdout(&out).contains(
            "  model request 0: try 1 failed (500 Internal Server Error: upstream broke)"
        ),
        "{}",
        text(&out)
    );
    let show = run(&env, &["show", "1", "--dir", &env.dir_arg()]);
    assert!(
        stdout(&show).contains(&format!("retry: try 1 failed ({why})")),
        "{}",
        text(&show)
    );
}

#[test]
fn a_429_waits_as_retry_after_says() {
    let (env, server, out) = init_after(
        error(429, "slow down", &[("retry-after", "1")]),
        Wire::Openai,
        "",
    );
    let retry = survived_one_retry(&env, &server, &out, "429");
    // Honoured even past retry_cap_secs (0.05 s here).
    assert_eq!(retry["wait_ms"], 1000);
}

#[test]
fn an_overloaded_anthropic_waits_as_retry_after_ms_says() {
    let (env, server, out) = init_after(
        error(529, "Overloaded", &[("retry-after-ms", "120")]),
        Wire::Anthropic,
        "",
    );
    let retry = survived_one_retry(&env, &server, &out, "Overloaded");
    assert_eq!(retry["wait_ms"], 120);
}

#[test]
fn a_reset_connection_is_retried() {
    let (env, server, out) = init_after(Reply::Reset, Wire::Openai, "");
    survived_one_retry(&env, &server, &out, "Connection reset by peer");
}

#[test]
fn a_stream_cut_inside_a_tool_call_is_asked_again() {
    for wire in [Wire::Openai, Wire::Anthropic] {
        let first = initializer(&one_feature())[0].clone();
        let sse = match wire {
            Wire::Openai => openai_events(&first, 1),
            Wire::Anthropic => anthropic_events(&first, 1),
        };
        // In the last piece of the first call's arguments (its path), after
        // the call and its first pieces arrived.
        let (env, server, out) = init_after(cut_stream(&sse, "features.json"), wire, "");
        survived_one_retry(&env, &server, &out, "inside a tool call");
        assert!(env.on_main("features.json").unwrap().contains("F001"));
    }
}

/// A model that repeats the same two lines until its output cap (as the
/// 1.5B model did at temperature 0): longrun stops reading once the
/// repetition is plain (the server sees the client hang up, long before the
/// cap), keeps the answer marked as cut in the transcript, tells the model
/// why without handing the repetition back, and asks again; the session
/// goes on and is accepted. No retry: the answer came, it was just useless.
#[test]
fn a_runaway_answer_is_stopped_and_the_model_told_why() {
    for wire in [Wire::Openai, Wire::Anthropic] {
        let (env, server, out) = init_after(runaway(wire), wire, "");
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(trailer(&env, "Longrun-Verdict"), ["accepted"]);
        assert_eq!(server.hang_ups(), 1, "{wire:?}");
        assert!(entries(&env, 1, "retry").is_empty());
        let responses = entries(&env, 1, "response");
        let cut = responses[0]["response"]["cut"].as_str().unwrap_or_default();
        assert!(cut.contains("the same 2 lines"), "{wire:?}: {cut}");
        assert!(responses[1]["response"].get("cut").is_none());
        // What an answer stopped early cost is estimated: no usage came with it.
        assert!(responses[0]["response"]["usage"]["output_tokens"].as_u64() > Some(100));
        let notices: Vec<String> = entries(&env, 1, "event")
            .iter()
            .filter(|e| e["event"]["kind"] == "notice")
            .map(|e| e["event"]["text"].to_string())
            .collect();
        assert!(
            notices
                .iter()
                .any(|n| n.contains("the harness stopped the answer")),
            "{notices:?}"
        );
        let asked_again = server.requests()[1].body.to_string();
        assert!(
            asked_again.contains("Your last answer was stopped before its end"),
            "{asked_again}"
        );
        assert!(
            asked_again.matches("if n == 7").count() < 16,
            "the repetition went back to the model: {asked_again}"
        );
    }
}

#[test]
fn a_malformed_json_body_is_retried() {
    let broken = Reply::Body {
        status: 200,
        headers: Vec::new(),
        body: "{\"choices\": [{\"message\": {\"content\": \"hi\"".into(),
    };
    let (env, server, out) = init_after(broken, Wire::Openai, "");
    survived_one_retry(&env, &server, &out, "not valid JSON");
}

#[test]
fn a_slow_first_byte_times_out_and_is_retried() {
    let slow = Reply::Slow(
        std::time::Duration::from_secs(3),
        Box::new(ok_json(json!({"choices": []}))),
    );
    let (env, server, out) = init_after(slow, Wire::Openai, "first_byte_timeout_secs = 0.3");
    survived_one_retry(&env, &server, &out, "no answer within 0.3 s");
}

#[test]
fn a_stream_that_falls_silent_times_out_and_is_retried() {
    let first = initializer(&one_feature())[0].clone();
    let sse = openai_events(&first, 1);
    let stall = Reply::Stall {
        first: sse.as_bytes()[..sse.len() / 2].to_vec(),
        wait: std::time::Duration::from_secs(3),
    };
    let (env, server, out) = init_after(stall, Wire::Openai, "idle_timeout_secs = 0.3");
    survived_one_retry(&env, &server, &out, "the stream was silent for 0.3 s");
}

#[test]
fn a_server_that_is_not_there_is_tried_max_tries_times() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let env = Env::new();
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(
        env.project().join("longrun.toml"),
        format!(
            "[model]\nprovider = \"openai\"\nname = \"gpt-4o\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\n\
             max_tries = 2\nretry_base_secs = 0.01\n"
        ),
    )
    .unwrap();
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let out = run(
        &env,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--max-wait",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(75), "{}", text(&out));
    assert!(stdout(&out).contains("--max-wait"), "{}", text(&out));
    assert_eq!(trailer(&env, "Longrun-Fault"), ["run"]);
    let retries = entries(&env, 1, "retry");
    assert_eq!(retries.len(), 1);
    assert!(
        retries[0]["reason"]
            .as_str()
            .unwrap()
            .contains("Connection refused"),
        "{retries:?}"
    );
    let reasons = trailer(&env, "Longrun-Reason");
    assert!(reasons[0].contains("gave up after 2 tries"), "{reasons:?}");
}

#[test]
fn a_server_that_refuses_streaming_is_asked_without_it() {
    let refuse = Reply::Body {
        status: 400,
        headers: Vec::new(),
        body: json!({"error": {"message": "stream is not supported"}}).to_string(),
    };
    let env = Env::new();
    let mut script = vec![refuse];
    script.extend(
        initializer(&one_feature())
            .as_array()
            .unwrap()
            .iter()
            .map(|t| ok_json(openai_message(t, 5))),
    );
    let server = MockServer::start(Wire::Openai, script);
    prepare(&env, &server, "openai:gpt-4o", "");
    let out = init(&env);
    assert!(out.status.success(), "{}", text(&out));
    let streamed: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body["stream"] == true)
        .collect();
    assert!(streamed[0], "the first try streams");
    assert!(streamed[1..].iter().all(|s| !s), "{streamed:?}");
}

#[test]
fn an_auth_error_stops_the_run_cleanly() {
    let (env, server, out) = init_after(error(401, "invalid x-api-key", &[]), Wire::Anthropic, "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = stderr(&out);
    assert!(err.contains("invalid x-api-key"), "{err}");
    assert!(
        err.contains("LONGRUN_API_KEY"),
        "names where the key came from: {err}"
    );
    assert_eq!(server.requests().len(), 1, "an auth error is not retried");
    assert_eq!(trailer(&env, "Longrun-Verdict"), ["failed"]);
    assert!(!err.contains(KEY));
}

#[test]
fn a_bad_request_fails_the_session_with_the_providers_words() {
    let (env, server, out) = init_after(error(400, "tools.0.name: invalid", &[]), Wire::Openai, "");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(server.requests().len(), 1, "a 400 is not retried");
    let reasons = trailer(&env, "Longrun-Reason");
    assert!(
        reasons[0].contains("400 Bad Request: tools.0.name: invalid"),
        "{reasons:?}"
    );
}

#[test]
fn a_context_length_error_compacts_once_then_fails_the_session_as_context_length() {
    let too_long = || {
        error(
            400,
            "This model's maximum context length is 8192 tokens",
            &[],
        )
    };
    let env = Env::new();
    let server = MockServer::start(Wire::Openai, vec![too_long(), too_long(), too_long()]);
    prepare(&env, &server, "openai:gpt-4o", "");
    let out = init(&env);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // The request, the worker's compaction ask, the request once more: no HTTP retries.
    assert_eq!(server.requests().len(), 3);
    assert!(entries(&env, 1, "retry").is_empty());
    let kinds: Vec<Value> = entries(&env, 1, "model_error")
        .iter()
        .map(|e| e["kind"].clone())
        .collect();
    assert_eq!(kinds, ["context_length"; 3]);
    assert_eq!(trailer(&env, "Longrun-Verdict"), ["failed"]);
    let reasons = trailer(&env, "Longrun-Reason");
    assert!(reasons[0].contains("context length"), "{reasons:?}");
}

#[test]
fn retries_end_after_max_tries_with_each_one_recorded() {
    let fault = || error(503, "no capacity", &[]);
    let env = Env::new();
    let server = MockServer::start(Wire::Openai, vec![fault(), fault(), fault(), fault()]);
    prepare(&env, &server, "openai:gpt-4o", "max_tries = 3");
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let out = run(
        &env,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--max-wait",
            "0",
        ],
    );
    assert_eq!(out.status.code(), Some(75), "{}", text(&out));
    assert_eq!(server.requests().len(), 3);
    let attempts: Vec<u64> = entries(&env, 1, "retry")
        .iter()
        .map(|r| r["attempt"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2]);
    let reasons = trailer(&env, "Longrun-Reason");
    assert!(reasons[0].contains("gave up after 3 tries"), "{reasons:?}");
}

#[test]
fn a_missing_key_exits_2_naming_the_variable() {
    let env = Env::new();
    let spec = env.write("spec.md", "# Spec\n");
    let out = longrun(&env)
        .env_remove("LONGRUN_API_KEY")
        .args([
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            "anthropic:claude-sonnet-4-5",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("set ANTHROPIC_API_KEY"),
        "{}",
        text(&out)
    );
}

// ---- cost limit ----

#[test]
fn max_cost_stops_the_session_that_crosses_it_and_starts_no_other() {
    let env = Env::new();
    // Each answer costs $0.60 in: 1000 tokens at $600 per million (cached alike).
    let prices = "price_in_per_mtok = 600.0\nprice_out_per_mtok = 0.0";
    let mut script = stream_turns(Wire::Openai, &initializer(&one_feature()), 1);
    let slow_worker = json!([
        turn(vec![bash("echo one")]),
        turn(vec![bash("echo two")]),
        turn(vec![bash("echo three")]),
        turn(vec![bash("echo four")]),
        done("done"),
    ]);
    script.extend(stream_turns(Wire::Openai, &slow_worker, 10));
    let server = MockServer::start(Wire::Openai, script);
    prepare(&env, &server, "openai:gpt-4o", prices);
    let out = init(&env);
    assert!(out.status.success(), "{}", text(&out));
    let before = server.requests().len();
    let out = run(
        &env,
        &[
            "continue",
            "--dir",
            &env.dir_arg(),
            "--sessions",
            "3",
            "--max-cost",
            "1.5",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // $0.60, $1.20, $1.80: the third answer crosses $1.50 and the session stops there.
    assert_eq!(server.requests().len() - before, 3);
    let verdicts = trailer(&env, "Longrun-Verdict");
    assert_eq!(
        verdicts,
        ["incomplete", "accepted"],
        "one worker session only"
    );
    let reason = env.git(&["log", "-1", "--format=%B"]);
    assert!(reason.contains("--max-cost"), "{reason}");
    assert_eq!(trailer(&env, "Longrun-Cost-USD")[0], "1.8000");
}

#[test]
fn max_cost_is_one_limit_for_sessions_running_in_parallel() {
    let env = Env::new();
    let prices = "price_in_per_mtok = 600.0\nprice_out_per_mtok = 0.0";
    let two = features(&[
        ("F001", false, "test -f a.txt"),
        ("F002", false, "test -f b.txt"),
    ]);
    let mut script = stream_turns(Wire::Openai, &initializer(&two), 1);
    let busy: Vec<Value> = (0..8)
        .map(|i| turn(vec![bash(&format!("echo {i}"))]))
        .collect();
    script.extend(stream_turns(Wire::Openai, &json!(busy), 10));
    let server = MockServer::start(Wire::Openai, script);
    prepare(&env, &server, "openai:gpt-4o", prices);
    let out = init(&env);
    assert!(out.status.success(), "{}", text(&out));
    let before = server.requests().len();
    let out = run(
        &env,
        &[
            "continue",
            "--dir",
            &env.dir_arg(),
            "--until-done",
            "--parallel",
            "2",
            "--max-cost",
            "1.5",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    // $0.60 an answer: the third crosses $1.50; the other session stops at its next answer.
    let answered = server.requests().len() - before;
    assert!((3..=4).contains(&answered), "{answered} answers");
    let verdicts = trailer(&env, "Longrun-Verdict");
    assert_eq!(
        verdicts,
        ["incomplete", "incomplete", "accepted"],
        "no third session"
    );
    let reasons = trailer(&env, "Longrun-Reason");
    assert!(
        reasons.iter().filter(|r| r.contains("--max-cost")).count() >= 2,
        "{reasons:?}"
    );
}
