//! Search in whole-file attempts (`[harness] candidates`): several answers
//! to one attempt, asked at once, each judged by the feature's check, the
//! best kept and repaired by the next attempt. Asserted on the requests the
//! model received, the transcript, the trailers and main.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use crate::mock_server::{stream_turns, Gate, MockServer, Reply, Wire};
use crate::models::{
    last_verdict, messages, notices, one_file_feature, set_whole_file, user_texts,
};

/// F001: m.py (`x = 0`) must say a, b and c; its check runs three unittest tests.
fn m_py_says_a_b_and_c() -> Value {
    let test = "import unittest\nbody = open('m.py').read()\n\n\
                class T(unittest.TestCase):\n    def test_a(self):\n        self.assertIn('a', body)\n\n\
                \x20   def test_b(self):\n        self.assertIn('b', body)\n\n\
                \x20   def test_c(self):\n        self.assertIn('c', body)\n\n\
                unittest.main()\n";
    one_file_feature(
        "Make m.py say a, b and c",
        "python3 t.py",
        &[("m.py", "x = 0\n"), ("t.py", test)],
    )
}

/// An answer writing m.py as `body`, with the usage the budget counts.
fn block(body: &str) -> Value {
    json!({"text": format!("m.py\n```python\n{body}\n```\n"),
           "usage": {"input_tokens": 100, "output_tokens": 10}})
}

fn said(text: &str) -> Value {
    json!({"text": text, "usage": {"input_tokens": 100, "output_tokens": 10}})
}

/// Initialise, turn on whole-file attempts with `settings` (lines
/// longrun.toml has commented out) and run one worker session of `worker`.
fn run(env: &Env, worker: Value, settings: &[&str]) {
    let model = env.model(json!({"1": m_py_says_a_b_and_c(), "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    set_whole_file(env, settings);
    env.git(&["commit", "-qam", "whole-file attempts that search"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
}

/// The value of trailer `name` on main's last first-parent commit.
fn trailer(env: &Env, name: &str) -> String {
    let msg = last_verdict(env);
    let line = msg
        .lines()
        .find(|l| l.starts_with(&format!("{name}: ")))
        .unwrap_or_else(|| panic!("no {name} in {msg}"));
    line[name.len() + 2..].to_string()
}

#[test]
fn an_attempt_asks_for_candidates_keeps_the_best_by_the_check_and_the_next_repairs_it() {
    let env = Env::new();
    let worker = json!([
        // Attempt 1, three candidates: 1, 2 and no test of 3 passing.
        block("print('a')"),
        block("print('a b')"),
        said("I cannot write this."),
        // Attempt 2 (repair_candidates unset: one answer).
        block("print('a b c')"),
        said("Done."),
    ]);
    let settings = ["retry_temperature = 0.8", "candidates = 3"];
    run(&env, worker, &settings);

    let requests = env.requests(2);
    assert_eq!(requests.len(), 5, "{requests:#?}");
    // The three candidates are one request: the first as a single answer
    // would be asked, the others at the retry temperature.
    for r in &requests[1..3] {
        assert_eq!(messages(r), messages(&requests[0]));
        assert_eq!(r["temperature"], 0.8, "{r:#}");
    }
    assert!(
        requests[0].get("temperature").is_none(),
        "{:#}",
        requests[0]
    );
    let notices = notices(&env, 2);
    assert!(
        notices.iter().any(|n| n
            == "attempt 1: 3 candidates, each written and judged by the feature's check \
                (1: 1 of 3 tests passing; 2: 2 of 3 tests passing; 3: no file written); \
                candidate 2 is the answer"),
        "{notices:#?}"
    );
    // The next attempt repairs the best candidate, shown with its failing
    // test's assertion.
    let repair = user_texts(&requests[3]);
    assert_eq!(repair.len(), 1, "a fresh attempt: {repair:#?}");
    let repair = &repair[0];
    assert!(repair.contains("m.py\n```\nprint('a b')\n```"), "{repair}");
    assert!(
        repair.contains("Attempt 2. The best attempt so far is shown above under \"To change:\". Its check `python3 t.py` on it: it fails (2 of 3 tests passing); failing tests: test_c: AssertionError: 'c' not found in \"print('a b')\\n\""),
        "{repair}"
    );
    assert!(
        repair.contains("Change it so that the failing tests pass too"),
        "{repair}"
    );
    assert!(!repair.contains("print('a')\n"), "{repair}");
    assert_eq!(requests[3]["temperature"], 0.8);
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.git(&["show", "main:m.py"]).trim(), "print('a b c')");
    // Every candidate is a model request on the session's budget.
    assert_eq!(trailer(&env, "Longrun-Steps"), "5");
    assert_eq!(trailer(&env, "Longrun-Tokens-In"), "500");
    assert_eq!(trailer(&env, "Longrun-Tokens-Out"), "50");
    let responses = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["type"] == "response")
        .count();
    assert_eq!(responses, 5);
}

#[test]
fn a_session_whose_steps_end_after_the_candidates_keeps_the_best_one() {
    let env = Env::new();
    let worker = json!([
        block("print('a b')"),
        block("print('x')"),
        block("print('c')"),
        block("print('never asked')"),
    ]);
    let env_settings = ["retry_temperature = 0.8", "candidates = 3"];
    let model = env.model(json!({"1": m_py_says_a_b_and_c(), "2": worker}));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    set_whole_file(&env, &env_settings);
    let toml = env.project().join("longrun.toml");
    let body = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, body.replacen("\nsteps = 200", "\nsteps = 3", 1)).unwrap();
    env.git(&["commit", "-qam", "three steps"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.code().is_some(), "{}", text(&out));

    assert_eq!(env.requests(2).len(), 3);
    assert_eq!(trailer(&env, "Longrun-Steps"), "3");
    assert!(!last_verdict(&env).contains("Longrun-Verdict: accepted"));
    // The first candidate, the best by the check, is the session's work,
    // though the last checked wrote `print('c')`.
    let kept = env.git(&["show", "refs/longrun/sessions/0002:m.py"]);
    assert_eq!(kept.trim(), "print('a b')");
}

#[test]
fn one_candidate_asks_as_before() {
    // candidates = 1 (the default) asks one request per attempt and never
    // repairs from the best: attempt 2 writes the file anew.
    let env = Env::new();
    let worker = json!([
        block("print('a b')"),
        block("print('a b c')"),
        said("Done.")
    ]);
    run(&env, worker, &["retry_temperature = 0.8", "candidates = 1"]);
    let requests = env.requests(2);
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let second = &user_texts(&requests[1])[0];
    assert!(second.contains("its content is left out"), "{second}");
    assert!(!second.contains("m.py\n```\nprint('a b')"), "{second}");
    assert!(
        !second.contains("The best attempt so far is shown"),
        "{second}"
    );
    assert!(
        !notices(&env, 2).iter().any(|n| n.contains("candidates")),
        "no search"
    );
}

#[test]
fn through_the_openai_wire_the_candidates_are_asked_at_once() {
    // Each answer is held until all three requests have arrived: asked one
    // after another, the first would never be answered.
    let env = Env::new();
    let mut script = stream_turns(Wire::Openai, &m_py_says_a_b_and_c(), 1);
    let asked_before = script.len();
    let gate = Gate::default();
    // Whichever request gets which answer, the one that passes is kept.
    let answers = [
        json!({"text": "m.py\n```python\nprint('a')\n```\n"}),
        json!({"text": "m.py\n```python\nprint('a b c')\n```\n"}),
        json!({"text": "Nothing."}),
    ];
    for (i, answer) in answers.iter().enumerate() {
        let reply = stream_turns(Wire::Openai, &json!([answer]), 10 + i as u32).remove(0);
        script.push(Reply::Gated(gate.clone(), Box::new(reply)));
    }
    script.extend(stream_turns(Wire::Openai, &json!([{"text": "Done."}]), 20));
    let server = std::sync::Arc::new(MockServer::start(Wire::Openai, script));
    crate::providers::prepare(
        &env,
        &server,
        "openai:qwen2.5-coder-1.5b-instruct",
        "\n[harness]\ninitializer = \"open\"\ncandidates = 3",
    );
    let out = crate::providers::init(&env);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(server.requests().len(), asked_before);

    let watcher = {
        let (server, gate) = (server.clone(), gate.clone());
        std::thread::spawn(move || {
            let started = Instant::now();
            let all = loop {
                let arrived = server.requests().len() - asked_before;
                if arrived >= 3 || started.elapsed() > Duration::from_secs(60) {
                    break arrived;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            gate.open();
            all
        })
    };
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        watcher.join().unwrap(),
        3,
        "all three asked before any answer"
    );
    let requests = server.requests();
    let mut temperatures: Vec<String> = requests[asked_before..asked_before + 3]
        .iter()
        .map(|r| r.body["temperature"].to_string())
        .collect();
    temperatures.sort();
    // The family's temperature for the first, the retry temperature for the others.
    assert_eq!(temperatures, ["0.2", "0.8", "0.8"]);
    for r in &requests[asked_before..asked_before + 3] {
        assert_eq!(r.body["messages"], requests[asked_before].body["messages"]);
    }
    assert!(last_verdict(&env).contains("Longrun-Verdict: accepted"));
    assert_eq!(env.git(&["show", "main:m.py"]).trim(), "print('a b c')");
}
