//! Inside a session: budgets, loop detection, the harness's checks before
//! the end, todos, skills, subagents, AGENTS.md and context management —
//! each asserted on the requests the model actually received.

use serde_json::{json, Value};

use crate::common::*;

const ONE_FEATURE: &[(&str, bool, &str)] = &[("F001", false, "test -f done.txt")];

/// A project whose initializer (session 1) leaves one feature, `extra` files
/// and `settings` replacing lines of longrun.toml; session 2 runs `worker`.
fn project_with(worker: Value, settings: &[(&str, &str)], extra: &[(&str, &str)]) -> Env {
    let env = Env::new();
    let list = features(ONE_FEATURE);
    let mut init = initializer(&list);
    let calls = init[0]["tool_calls"].as_array_mut().unwrap();
    for (path, content) in extra {
        calls.push(write_file(path, content));
    }
    let model = env.model(json!({"1": init, "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    if !settings.is_empty() {
        let path = env.project().join("longrun.toml");
        let mut toml = std::fs::read_to_string(&path).unwrap();
        for (from, to) in settings {
            assert!(toml.contains(from), "longrun.toml has no `{from}`");
            toml = toml.replacen(from, to, 1);
        }
        std::fs::write(&path, toml).unwrap();
        env.git(&["commit", "-qam", "settings for the test"]);
    }
    env
}

fn continue_one(env: &Env) {
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out));
}

/// The finished work of F001 in one turn: the file, passes true, a note, a commit.
fn finish_feature() -> Vec<Value> {
    vec![
        turn(vec![
            write_file("done.txt", "ok\n"),
            write_file(
                "features.json",
                &features(&[("F001", true, "test -f done.txt")]),
            ),
        ]),
        turn(vec![bash(
            "echo 'F001 done' >> progress.md && git add -A && git commit -qm F001",
        )]),
    ]
}

/// The last verdict commit's message on main.
fn last_verdict(env: &Env) -> String {
    env.git(&["log", "--first-parent", "-1", "--format=%B"])
}

fn user_texts(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

fn tool_results(request: &Value) -> Vec<String> {
    request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_repeated_call_gets_one_notice_and_a_second_loop_ends_the_session() {
    let ls = || turn(vec![bash("ls")]);
    let env = project_with(json!([ls(), ls(), ls(), ls(), ls(), ls(), ls()]), &[], &[]);
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(
        requests.len(),
        6,
        "the second loop ends the session at once"
    );
    let notice = "[harness] Loop detected: the same `bash` call 3 times in a row (ls).";
    assert!(
        !user_texts(&requests[2])
            .iter()
            .any(|t| t.starts_with(notice)),
        "no notice before the third call"
    );
    let texts = user_texts(&requests[3]);
    assert!(
        texts.last().unwrap().starts_with(notice),
        "{:?}",
        texts.last()
    );
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: incomplete"), "{msg}");
    assert!(
        msg.contains("Longrun-Reason: incomplete: stuck in a loop: the same `bash` call 3 times in a row (ls)"),
        "{msg}"
    );
    assert_eq!(
        msg.matches("Longrun-Loop: the same `bash` call").count(),
        2,
        "{msg}"
    );
    let loops: Vec<Value> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "loop_detected")
        .map(|e| e["event"]["ending"].clone())
        .collect();
    assert_eq!(loops, [json!(false), json!(true)]);
}

#[test]
fn writing_a_file_back_to_an_old_content_is_a_loop() {
    let w = |c: &str| turn(vec![write_file("a.txt", c)]);
    let env = project_with(
        json!([w("one"), w("two"), w("one"), done("stop")]),
        &[],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    let last = user_texts(&requests[3]);
    assert!(
        last.last()
            .unwrap()
            .contains("`a.txt` written back to a content it already had"),
        "{last:?}"
    );
}

#[test]
fn the_step_budget_warns_at_eighty_percent_and_ends_the_session() {
    let calls: Vec<Value> = (0..10)
        .map(|i| turn(vec![bash(&format!("echo {i}"))]))
        .collect();
    let env = project_with(json!(calls), &[("steps = 200", "steps = 5")], &[]);
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 5);
    let warning = "[harness] 80% of this session's step budget is spent: about 1 step left. Commit what works now";
    assert!(
        !user_texts(&requests[3])
            .iter()
            .any(|t| t.starts_with("[harness] 80%")),
        "no warning before 80%"
    );
    assert!(
        user_texts(&requests[4])
            .last()
            .unwrap()
            .starts_with(warning),
        "{:?}",
        user_texts(&requests[4])
    );
    let msg = last_verdict(&env);
    assert!(
        msg.contains("Longrun-Reason: budget: step limit of 5 reached"),
        "{msg}"
    );
    assert!(msg.contains("Longrun-Verdict: incomplete"), "{msg}");
}

#[test]
fn the_input_token_budget_counts_reported_usage() {
    let usage = json!({"input_tokens": 400, "output_tokens": 10});
    let calls: Vec<Value> = (0..6)
        .map(|i| json!({"tool_calls": [bash(&format!("echo {i}"))], "usage": usage}))
        .collect();
    let env = project_with(
        json!(calls),
        &[("# input_tokens = 5000000", "input_tokens = 1000")],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 3);
    assert!(
        user_texts(&requests[2])
            .last()
            .unwrap()
            .starts_with("[harness] 80% of this session's input-token budget is spent"),
        "{:?}",
        user_texts(&requests[2])
    );
    let msg = last_verdict(&env);
    assert!(
        msg.contains("Longrun-Reason: budget: input-token limit of 1000 reached (1200 used)"),
        "{msg}"
    );
}

#[test]
fn failing_checks_send_the_model_back_with_a_summary_until_they_pass() {
    let mut turns = vec![
        turn(vec![write_file("notes.txt", "started\n")]),
        turn(vec![bash("git add -A && git commit -qm start")]),
        done("finished, I think"),
    ];
    turns.extend(finish_feature());
    turns.push(done("now it is done"));
    let env = project_with(json!(turns), &[], &[]);
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 6, "the checks pass after the second stop");
    let summary = user_texts(&requests[3]).last().unwrap().clone();
    assert!(
        summary.starts_with(
            "[harness] Before this session may end, the harness ran its checks (round 1 of 3)"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("feature F001 check `test -f done.txt` failed."),
        "{summary}"
    );
    assert!(
        summary.contains("feature `F001` still has passes: false"),
        "{summary}"
    );
    assert!(summary.contains("progress.md was not updated"), "{summary}");
    let checks: Vec<(String, bool)> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "check_result")
        .map(|e| {
            (
                e["event"]["name"].as_str().unwrap().to_string(),
                e["event"]["passed"] == true,
            )
        })
        .collect();
    assert_eq!(
        checks,
        [
            ("session rules".to_string(), false),
            ("feature F001 check".to_string(), false),
            ("session rules".to_string(), true),
            ("feature F001 check".to_string(), true),
        ]
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
}

#[test]
fn the_check_summary_names_failing_tests_and_keeps_only_the_last_forty_lines() {
    let check = "seq 1 100; echo 'test parser::empty ... FAILED'; exit 1";
    let env = project_with(
        json!([done("nothing to do")]),
        &[("commands = []", &format!("commands = [{}]", json!(check)))],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    // An answer without any call while the check fails gets one nudge first.
    assert_eq!(requests.len(), 5, "a nudge, three rounds, then the end");
    let summary = user_texts(&requests[2]).last().unwrap().clone();
    assert!(summary.contains("check 1 `seq 1 100;"), "{summary}");
    assert!(
        summary.contains("Failing tests: parser::empty."),
        "{summary}"
    );
    assert!(
        summary.contains("\n100\ntest parser::empty ... FAILED\n[exit code 1]"),
        "{summary}"
    );
    assert!(
        !summary.contains("\n50\n"),
        "only the last 40 lines: {summary}"
    );
    assert!(user_texts(&requests[4])
        .last()
        .unwrap()
        .contains("(round 3 of 3)"));
}

#[test]
fn the_todo_list_is_shown_at_the_end_of_every_turn() {
    let todos = json!({"name": "write_todos", "arguments": {"todos": [
        {"content": "create done.txt", "status": "in_progress"},
        {"content": "mark F001", "status": "pending"}]}});
    let env = project_with(
        json!([turn(vec![todos]), turn(vec![bash("echo hi")])]),
        &[],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    let list = "[harness] Your todo list:\n- [~] create done.txt\n- [ ] mark F001\n";
    let first = tool_results(&requests[1]);
    assert_eq!(
        first.last().unwrap(),
        &format!("todo list saved: 2 items, 0 completed\n\n{list}")
    );
    let second = tool_results(&requests[2]);
    let last = second.last().unwrap();
    assert!(
        last.starts_with("hi") && last.ends_with(&format!("\n\n{list}")),
        "{last}"
    );
}

#[test]
fn agents_md_goes_into_the_system_prompt_capped_with_a_note() {
    let agents = format!("# House rules\nUse tabs.\n{}", "x".repeat(500));
    let env = project_with(
        json!([done("ok")]),
        &[("keep_turns = 10", "keep_turns = 10\nagents_md_bytes = 100")],
        &[("AGENTS.md", &agents)],
    );
    continue_one(&env);
    let requests = env.requests(2);
    let system = requests[0]["system"].as_str().unwrap();
    assert!(
        system.contains("## The project's instructions (AGENTS.md)\n\n# House rules\nUse tabs.\n"),
        "{system}"
    );
    assert!(
        system.contains(
            "(AGENTS.md is longer than 100 bytes and was cut here; read the file for the rest.)"
        ),
        "{system}"
    );
    assert!(!system.contains(&"x".repeat(100)), "{system}");
    // The same system prompt and tools in every request: the stable prefix.
    for r in &requests[1..] {
        assert_eq!(r["system"], requests[0]["system"]);
        assert_eq!(r["tools"], requests[0]["tools"]);
    }
}

#[test]
fn agents_md_and_claude_md_both_reach_the_system_prompt_a_copy_once() {
    let env = project_with(
        json!([done("ok")]),
        &[],
        &[
            ("AGENTS.md", "Use tabs.\n"),
            ("CLAUDE.md", "Run make test before committing.\n"),
        ],
    );
    continue_one(&env);
    let system = env.requests(2)[0]["system"].as_str().unwrap().to_string();
    assert!(
        system.contains("## The project's instructions (AGENTS.md)\n\nUse tabs.\n"),
        "{system}"
    );
    assert!(
        system.contains(
            "## The project's instructions (CLAUDE.md)\n\nRun make test before committing.\n"
        ),
        "{system}"
    );

    let same = project_with(
        json!([done("ok")]),
        &[],
        &[("AGENTS.md", "Use tabs.\n"), ("CLAUDE.md", "Use tabs.\n")],
    );
    continue_one(&same);
    let system = same.requests(2)[0]["system"].as_str().unwrap().to_string();
    assert_eq!(system.matches("Use tabs.").count(), 1, "{system}");
}

#[test]
fn a_task_subagent_gets_a_fresh_context_and_read_only_tools_and_returns_its_answer() {
    let usage = |n: u64| json!({"input_tokens": n, "output_tokens": 10});
    let task = json!({"name": "task", "arguments": {"description": "find the spec",
        "prompt": "What does SPEC.md say? Answer in one line."}});
    let turns = json!([
        {"tool_calls": [task], "usage": usage(100)},
        {"tool_calls": [{"name": "read_file", "arguments": {"path": "SPEC.md"}},
                        write_file("sneaky.txt", "no"), bash("curl http://example.invalid"),
                        bash("git log --oneline")], "usage": usage(600)},
        {"text": "SPEC.md asks for a tiny thing.", "usage": usage(600)},
        {"tool_calls": [bash("echo thanks")], "usage": usage(200)},
        done("done"),
    ]);
    let env = project_with(
        turns,
        &[("# input_tokens = 5000000", "input_tokens = 1500")],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(
        requests.len(),
        4,
        "the session's budget counts the subagent's tokens"
    );
    let sub = &requests[1];
    assert!(sub["system"]
        .as_str()
        .unwrap()
        .starts_with("You are a subagent"));
    let tools: Vec<&str> = sub["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read_file", "list_files", "grep", "bash"]);
    assert_eq!(
        user_texts(sub),
        ["What does SPEC.md say? Answer in one line."]
    );
    let results = tool_results(&requests[2]);
    assert!(results[0].contains("A tiny thing."), "{results:?}");
    assert!(results[1].starts_with("Error:"), "{results:?}");
    assert!(results[2].starts_with("Blocked by policy"), "{results:?}");
    assert!(results[3].contains("init"), "{results:?}");
    assert!(!env
        .project()
        .join(".longrun/sessions/0002/work/sneaky.txt")
        .exists());
    // Only the final answer goes back to the session.
    let back = tool_results(&requests[3]);
    assert_eq!(back, ["SPEC.md asks for a tiny thing."]);
    let roles: Vec<&str> = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "user"],
        "the last is the 80% warning"
    );
    let msg = last_verdict(&env);
    assert!(
        msg.contains("budget: input-token limit of 1500 reached (1500 used)"),
        "{msg}"
    );
}

#[test]
fn skills_from_the_repo_and_the_user_are_listed_and_loaded_on_demand() {
    let env = project_with(
        json!([
            turn(vec![
                json!({"name": "read_skill", "arguments": {"name": "style"}}),
                json!({"name": "read_skill", "arguments": {"name": "db"}})
            ]),
            done("ok"),
        ]),
        &[],
        &[(
            "skills/db/SKILL.md",
            "---\nname: db\ndescription: Migrations and the schema\n---\nRun make migrate first.\n",
        )],
    );
    let home = env.path("home");
    env.write(
        "home/.config/longrun/skills/style/SKILL.md",
        "# House style: short functions\nKeep functions under 40 lines.\n",
    );
    let out = env
        .longrun()
        .env("HOME", &home)
        .env_remove("XDG_CONFIG_HOME")
        .args(["continue", "--dir", &env.dir_arg(), "--sessions", "1"])
        .output()
        .unwrap();
    assert!(out.status.code().is_some(), "{}", text(&out));
    let requests = env.requests(2);
    let system = requests[0]["system"].as_str().unwrap();
    assert!(
        system.contains(
            "- `db`: Migrations and the schema\n- `style`: House style: short functions\n"
        ),
        "{system}"
    );
    assert!(!system.contains("make migrate"), "bodies load on demand");
    assert!(requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "read_skill"));
    let results = tool_results(&requests[1]);
    assert_eq!(
        results[0],
        "# House style: short functions\nKeep functions under 40 lines.\n"
    );
    assert_eq!(results[1], "Run make migrate first.\n");
}

#[test]
fn results_older_than_k_turns_become_stubs_and_the_prefix_stays_byte_identical() {
    let calls: Vec<Value> = (0..5)
        .map(|i| turn(vec![bash(&format!("printf 'line {i} %.0s' $(seq 1 40)"))]))
        .collect();
    let env = project_with(json!(calls), &[("keep_turns = 10", "keep_turns = 2")], &[]);
    continue_one(&env);
    let requests = env.requests(2);
    let results = tool_results(&requests[4]);
    assert_eq!(results.len(), 4);
    for (i, r) in results[..2].iter().enumerate() {
        let stub =
            format!("[harness: elided the result of `bash printf 'line {i} %.0s' $(seq 1 40)` (");
        assert!(
            r.starts_with(&stub)
                && r.ends_with("bytes) from an older turn; run it again if you need it]"),
            "{r}"
        );
    }
    for (i, r) in results[2..].iter().enumerate() {
        assert!(r.starts_with(&format!("line {} line", i + 2)), "{r}");
    }
    let prefix = |r: &Value| format!("{}{}", r["system"], r["tools"]);
    assert!(requests.iter().all(|r| prefix(r) == prefix(&requests[0])));
}

#[test]
fn near_the_window_the_model_writes_a_handoff_summary_and_the_session_goes_on_from_it() {
    let todos = json!({"name": "write_todos", "arguments": {"todos": [
        {"content": "create done.txt", "status": "pending"}]}});
    // The first answer reports more input tokens than bytes/4 suggests: the
    // estimate is calibrated by it and crosses the threshold at once.
    let turns = json!([
        {"tool_calls": [bash("echo first"), todos], "usage": {"input_tokens": 6000, "output_tokens": 10}},
        {"text": "SUMMARY: ran echo first; next, create done.txt"},
        turn(vec![bash("echo after")]),
        done("stop"),
    ]);
    let env = project_with(
        turns,
        &[
            ("context_window = 128000", "context_window = 8000"),
            ("check_rounds = 3", "check_rounds = 0"),
        ],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 4);
    let ask = &requests[1];
    assert_eq!(ask["system"], requests[0]["system"]);
    assert_eq!(ask["tools"], requests[0]["tools"]);
    let asked = ask["messages"].as_array().unwrap();
    assert_eq!(
        asked[0], requests[0]["messages"][0],
        "the same conversation, then the ask"
    );
    assert!(
        asked.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("Write a handoff summary"),
        "{:?}",
        asked.last()
    );
    let after = requests[2]["messages"].as_array().unwrap();
    assert_eq!(after.len(), 2, "{after:?}");
    assert_eq!(after[0], requests[0]["messages"][0]);
    let summary = after[1]["content"].as_str().unwrap();
    assert!(
        summary.contains("SUMMARY: ran echo first; next, create done.txt"),
        "{summary}"
    );
    assert!(
        summary.contains("Your todo list:\n- [ ] create done.txt"),
        "the todos survive: {summary}"
    );
    let compacted: Vec<Value> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "compacted")
        .collect();
    assert_eq!(compacted.len(), 1);
    assert!(compacted[0]["event"]["tokens_before"].as_u64().unwrap() > 5600);
}

#[test]
fn the_same_failure_after_three_edits_and_an_ab_alternation_are_loops() {
    let fail = || turn(vec![bash("echo 'assertion failed: 2 == 3'; exit 1")]);
    let edit = |c: &str| turn(vec![write_file("src.txt", c)]);
    let (a, b) = (
        || turn(vec![bash("cat src.txt")]),
        || turn(vec![bash("ls")]),
    );
    let env = project_with(
        json!([
            fail(),
            edit("1"),
            edit("2"),
            edit("3"),
            fail(),
            a(),
            b(),
            a(),
            b(),
            a(),
            b(),
            a()
        ]),
        &[],
        &[],
    );
    continue_one(&env);
    let requests = env.requests(2);
    let first = user_texts(&requests[5]);
    assert!(
        first.last().unwrap().starts_with(
            "[harness] Loop detected: `echo 'assertion failed: 2 == 3'; exit 1` failing with the same output after 3 edits."
        ),
        "{first:?}"
    );
    assert_eq!(requests.len(), 11, "the alternation ends the session");
    let msg = last_verdict(&env);
    assert!(
        msg.contains("Longrun-Reason: incomplete: stuck in a loop: the same two calls alternating 3 times (cat src.txt / ls)"),
        "{msg}"
    );
}

#[test]
fn a_context_length_error_compacts_and_the_retry_goes_on_from_the_summary() {
    use crate::mock_server::{error, stream_turns, turn_reply, MockServer, Wire};
    let env = Env::new();
    let mut script = vec![
        error(
            400,
            "This model's maximum context length is 8192 tokens",
            &[],
        ),
        turn_reply(
            Wire::Openai,
            &done("SUMMARY: nothing done yet; write features.json first"),
            90,
            true,
        ),
    ];
    script.extend(stream_turns(
        Wire::Openai,
        &initializer(&features(ONE_FEATURE)),
        1,
    ));
    let server = MockServer::start(Wire::Openai, script);
    crate::providers::prepare(&env, &server, "openai:gpt-4o", "");
    let out = crate::providers::init(&env);
    assert!(out.status.success(), "{}", text(&out));
    let sent = server.requests();
    assert_eq!(
        sent.len(),
        5,
        "the request, the compaction ask, the retry, two more turns"
    );
    let messages = |i: usize| sent[i].body["messages"].as_array().unwrap().clone();
    let ask = messages(1);
    assert!(
        ask.last().unwrap()["content"]
            .as_str()
            .unwrap()
            .contains("Write a handoff summary"),
        "{ask:?}"
    );
    let retry = messages(2);
    let summary = retry
        .iter()
        .find_map(|m| m["content"].as_str().filter(|c| c.contains("SUMMARY:")));
    assert!(
        summary.is_some_and(|s| s.starts_with("[harness] This session's context was compacted")),
        "{retry:?}"
    );
    assert_eq!(
        sent[0].body["messages"][0], retry[0],
        "the system prompt is the same"
    );
    assert_eq!(sent[0].body["tools"], sent[2].body["tools"]);
    assert!(env
        .transcript(1)
        .iter()
        .any(|e| e["event"]["kind"] == "compacted"));
}

#[test]
fn the_wall_time_budget_ends_the_session_with_its_own_reason() {
    let env = project_with(
        json!([
            turn(vec![bash("sleep 3")]),
            turn(vec![bash("echo late")]),
            done("never")
        ]),
        &[("wall_time_secs = 1800", "wall_time_secs = 2")],
        &[],
    );
    continue_one(&env);
    assert_eq!(
        env.requests(2).len(),
        1,
        "no model call once the time is up"
    );
    let msg = last_verdict(&env);
    assert!(
        msg.contains("Longrun-Reason: budget: wall time of 2 s reached"),
        "{msg}"
    );
}
