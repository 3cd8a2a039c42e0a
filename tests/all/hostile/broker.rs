//! The broker and budgets: a tool process cannot speak on the worker's
//! broker socket (inherited at fd 3, reopened through /proc, or copied with
//! pidfd_getfd), and what the orchestrator counted (model requests, tokens)
//! is what it enforces and records, whatever the worker believes or says.

use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# One feature\nBuild a.\n";
/// Every scripted turn reports this usage, so that totals are known.
const IN: u64 = 100;
const OUT: u64 = 10;

fn one(passes: bool) -> String {
    features(&[("a", passes, "test -f a.txt")])
}

fn with_usage(mut t: Value) -> Value {
    t["usage"] = json!({"input_tokens": IN, "output_tokens": OUT});
    t
}

/// The attack: a tool process tries every way to the broker socket, seven
/// times over: write forged model requests and a forged sandbox report to
/// fd 3 and to every descriptor of its parent (the worker), and copy them
/// out with pidfd_getfd. Each attempt prints how it went.
const ATTACK: &str = r#"
import ctypes, os, sys
req = b'{"type":"model_request","request":{"system":"FORGED-REQUEST","messages":[],"tools":[]}}\n'
sbx = b'{"type":"event","event":{"kind":"sandbox","enforcement":{"layers":["FORGED-LAYER"],"warnings":[]}}}\n'

def attempt(what, fn):
    try:
        fn()
        print(what + ": WROTE")
    except OSError as e:
        print(what + ": refused", e.errno)

for i in range(7):
    attempt("fd3", lambda: os.write(3, req))
attempt("fd3 sandbox", lambda: os.write(3, sbx))
attempt("fd5 report", lambda: os.write(5, b'{"layers":["FORGED-LAYER"],"warnings":[]}\n'))
worker = os.getppid()
try:
    os.listdir("/proc/%d/fd" % worker)
    print("worker fds: LISTED")
except OSError as e:
    print("worker fds: refused", e.errno)
for fd in range(3, 9):
    def reopen():
        with open("/proc/%d/fd/%d" % (worker, fd), "wb") as f:
            f.write(req)
    attempt("proc fd %d" % fd, reopen)
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(worker)
for fd in range(3, 9):
    got = libc.syscall(438, pidfd, fd, 0)
    if got >= 0:
        attempt("pidfd_getfd %d" % fd, lambda: os.write(got, req * 7))
    else:
        print("pidfd_getfd %d: refused" % fd, ctypes.get_errno())
print("attack-over")
"#;

/// The worker for feature a: the attack (when asked), then honest work.
fn worker(attack: bool) -> Value {
    let mut turns = Vec::new();
    if attack {
        turns.push(turn(vec![
            write_file("attack.py", ATTACK),
            bash("python3 attack.py"),
        ]));
    }
    turns.push(turn(vec![
        write_file("a.txt", "done\n"),
        write_file("features.json", &one(true)),
    ]));
    turns.push(turn(vec![bash(
        "echo note >> progress.md && git add -A && git commit -qm work",
    )]));
    turns.push(done("done"));
    Value::Array(turns.into_iter().map(with_usage).collect())
}

/// A project of `env` run as `user`, with a home of its own beside the
/// project and the system's tools only.
pub struct As<'a> {
    pub env: &'a Env,
    pub user: By,
}

impl As<'_> {
    pub fn new(env: &Env, user: By) -> As<'_> {
        std::fs::create_dir_all(env.path("home")).unwrap();
        As { env, user }
    }

    /// longrun with what `add` puts on the command, run as the user (see
    /// [`Env::run_with`]).
    pub fn run(&self, add: impl FnOnce(&mut Command)) -> Output {
        self.env.run_with(self.user, |cmd| {
            cmd.env_remove("LONGRUN_FAILPOINT")
                .env("HOME", self.env.path("home"))
                // The system's tools only: the tests' own toolchain shims live
                // in a home the sessions are not given.
                .env("PATH", "/usr/local/bin:/usr/bin:/bin");
            add(cmd);
        })
    }

    pub fn init(&self, model: &str) -> Output {
        let spec = self.env.write("spec.md", SPEC);
        self.run(|cmd| {
            cmd.args(["init", spec.to_str().unwrap(), "--dir"])
                .arg(self.env.project())
                .args(["--model", model]);
        })
    }

    pub fn continue_run(&self, model: &str, extra_env: &[(&str, &str)]) -> Output {
        self.run(|cmd| {
            cmd.args(["continue", "--sessions", "1", "--model", model, "--dir"])
                .arg(self.env.project())
                .envs(extra_env.iter().copied());
        })
    }

    /// `git` in the project (any owner), stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let out = crate::common::git_command()
            .args(["-c", "safe.directory=*", "-C"])
            .arg(self.env.project())
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The message of main's last commit.
    pub fn last_message(&self) -> String {
        self.git(&["log", "-1", "--format=%B", "main"])
    }
}

/// The values of trailer `key` in `message`.
pub fn trailers<'a>(message: &'a str, key: &str) -> Vec<&'a str> {
    let prefix = format!("{key}: ");
    message
        .lines()
        .filter_map(|l| l.strip_prefix(prefix.as_str()))
        .collect()
}

fn transcript_of(env: &Env, n: u32) -> Vec<Value> {
    env.transcript(n)
}

/// The first tool result sent to the model that holds `needle`.
pub fn tool_result(t: &[Value], needle: &str) -> String {
    t.iter()
        .filter(|e| e["type"] == "request")
        .flat_map(|e| {
            e["request"]["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_string())
        .find(|c| c.contains(needle))
        .unwrap_or_else(|| panic!("no tool result holds {needle:?}: {t:#?}"))
}

fn sum_usage(t: &[Value], key: &str) -> u64 {
    t.iter()
        .filter(|e| e["type"] == "response")
        .map(|e| e["response"]["usage"][key].as_u64().unwrap_or(0))
        .sum()
}

/// Init (accepted) and one worker session scripted as `w`, run as `user`.
fn run_one<'a>(
    env: &'a Env,
    user: By,
    w: Value,
    toml: Option<&str>,
    failpoint: Option<&str>,
) -> As<'a> {
    let who = As::new(env, user);
    if let Some(toml) = toml {
        std::fs::create_dir_all(env.project()).unwrap();
        std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    }
    let init: Vec<Value> = initializer(&one(false))
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(with_usage)
        .collect();
    let model = env.model(json!({"1": init, "2": w}));
    let o = who.init(&model);
    assert!(o.status.success(), "{user:?}: {}", text(&o));
    let fp = failpoint.map(|f| ("LONGRUN_FAILPOINT", f));
    let o = who.continue_run(&model, fp.as_slice());
    assert!(
        o.status.code().is_some(),
        "{user:?}: continue crashed: {}",
        text(&o)
    );
    who
}

#[test]
fn a_tool_cannot_reach_the_broker_socket_and_the_record_is_the_orchestrators() {
    for user in users() {
        for attack in [false, true] {
            let env = Env::new();
            let who = run_one(&env, user, worker(attack), None, None);
            let message = who.last_message();
            let at = format!("{user:?}, attack {attack}");
            // The control and the attacked session alike: accepted.
            assert_eq!(
                trailers(&message, "Longrun-Verdict"),
                ["accepted"],
                "{at}: {message}"
            );
            let t = transcript_of(&env, 2);
            let requests = t.iter().filter(|e| e["type"] == "request").count() as u64;
            let turns = if attack { 4 } else { 3 };
            assert_eq!(requests, turns, "{at}: the worker's requests only");
            // Steps and tokens: what the orchestrator brokered.
            assert_eq!(trailers(&message, "Longrun-Steps"), [turns.to_string()]);
            assert_eq!(sum_usage(&t, "input_tokens"), turns * IN, "{at}");
            assert_eq!(
                trailers(&message, "Longrun-Tokens-In"),
                [(turns * IN).to_string()],
                "{at}"
            );
            assert_eq!(
                trailers(&message, "Longrun-Tokens-Out"),
                [(turns * OUT).to_string()],
                "{at}"
            );
            let all = serde_json::to_string(&t).unwrap();
            assert!(!message.contains("FORGED"), "{at}: {message}");
            assert!(
                !t.iter()
                    .any(|e| e["type"] == "request" && e["request"]["system"] == "FORGED-REQUEST"),
                "{at}: a forged request was brokered"
            );
            let sandbox_events = t
                .iter()
                .filter(|e| e["type"] == "event" && e["event"]["kind"] == "sandbox")
                .count();
            assert_eq!(sandbox_events, 1, "{at}");
            assert!(
                !all.contains("protocol_violation"),
                "{at}: nothing of the tool's reached the orchestrator"
            );
            assert!(
                trailers(&message, "Longrun-Sandbox")
                    .iter()
                    .all(|l| !l.contains("FORGED")),
                "{at}"
            );
            // The orchestrator's own look at the worker, from outside.
            let checked = trailers(&message, "Longrun-Sandbox")
                .into_iter()
                .find(|l| l.starts_with("checked by the orchestrator in /proc/"))
                .unwrap_or_else(|| panic!("{at}: no line of the orchestrator's: {message}"));
            assert!(
                checked.contains(": no_new_privs, seccomp filter, empty capability sets"),
                "{at}: {checked}"
            );
            // Where the worker had its own PID namespace, the kernel says so too.
            let own_pids = trailers(&message, "Longrun-Sandbox")
                .iter()
                .any(|l| l.starts_with("lifetime: own"));
            assert_eq!(
                checked.contains("PID namespace of its own"),
                own_pids,
                "{at}: {checked}"
            );
            if attack {
                // What the tool saw: every way refused.
                let result = tool_result(&t, "fd3: ");
                // (Listing the worker's descriptor numbers is harmless; as
                // root the non-dumpable worker's /proc entries are root's.)
                assert_eq!(
                    result.matches("fd3: refused 9").count(),
                    7,
                    "{at}: {result}"
                );
                assert!(result.contains("fd5 report: refused 9"), "{at}: {result}");
                assert!(result.contains("proc fd 3: refused"), "{at}: {result}");
                assert!(result.contains("pidfd_getfd 3: refused"), "{at}: {result}");
                assert!(!result.contains("WROTE"), "{at}: {result}");
            }
        }
    }
}

/// A worker that acts as a compromised one would (fault injection: it
/// believes it has seven times its budget) is held to the session's budget
/// by the orchestrator: stopped, `incomplete` with the reason, and the
/// trailers count what was brokered.
#[test]
fn a_worker_spending_seven_times_its_budget_is_stopped_by_the_orchestrator() {
    for user in users() {
        for (name, toml, limit_words) in [
            (
                "steps",
                "[budget]\nsteps = 3\n",
                "step limit of 3 model requests",
            ),
            (
                "tokens",
                "[budget]\ninput_tokens = 250\n",
                "input-token limit of 250 (300 used)",
            ),
        ] {
            // A worker that never stops on its own: seven times the turns.
            let mut turns: Vec<Value> = (0..20)
                .map(|i| turn(vec![bash(&format!("echo step {i}"))]))
                .collect();
            turns.push(turn(vec![
                write_file("a.txt", "done\n"),
                write_file("features.json", &one(true)),
            ]));
            turns.push(turn(vec![bash(
                "echo note >> progress.md && git add -A && git commit -qm work",
            )]));
            turns.push(done("done"));
            let w = Value::Array(turns.into_iter().map(with_usage).collect());
            let env = Env::new();
            let who = run_one(&env, user, w, Some(toml), Some("worker-overspends:2"));
            let at = format!("{user:?}, {name}");
            let message = who.last_message();
            assert_eq!(
                trailers(&message, "Longrun-Verdict"),
                ["incomplete"],
                "{at}: {message}"
            );
            let reasons = trailers(&message, "Longrun-Reason").join("\n");
            assert!(
                reasons.contains(&format!(
                    "budget: {limit_words} reached, counted by the orchestrator"
                )),
                "{at}: {reasons}"
            );
            let t = transcript_of(&env, 2);
            let requests = t.iter().filter(|e| e["type"] == "request").count() as u64;
            assert_eq!(requests, 3, "{at}: brokered past the budget");
            assert_eq!(trailers(&message, "Longrun-Steps"), ["3"], "{at}");
            assert_eq!(
                trailers(&message, "Longrun-Tokens-In"),
                [(3 * IN).to_string()],
                "{at}"
            );
            // The worker's work is kept, not merged.
            assert!(who
                .git(&["show", "main:features.json"])
                .contains("\"passes\": false"));
        }
    }
}

by_both!(
    protocol_violations_are_recorded_not_believed_and_not_fatal,
    protocol_violations_are_recorded_not_believed_and_not_fatal_as_uid_65534,
    protocol_violations
);

/// A worker that breaks the protocol (fault injection: a malformed line, a
/// line that is not UTF-8, a second sandbox report forging a layer) is not
/// believed and not fatal: each violation is in the transcript, the forged
/// layer is in no trailer, and the honest work is accepted.
fn protocol_violations(by: By) {
    let env = Env::new();
    let who = run_one(&env, by, worker(false), None, Some("worker-forges:2"));
    let message = who.last_message();
    assert_eq!(
        trailers(&message, "Longrun-Verdict"),
        ["accepted"],
        "{message}"
    );
    assert!(!message.contains("FORGED"), "{message}");
    assert!(
        trailers(&message, "Longrun-Sandbox")
            .iter()
            .any(|l| l.starts_with("landlock:")),
        "{message}"
    );
    let t = transcript_of(&env, 2);
    let violations: Vec<String> = t
        .iter()
        .filter(|e| e["type"] == "protocol_violation")
        .map(|e| e["what"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(violations.len(), 3, "{violations:#?}");
    assert!(violations[0].contains("malformed"), "{violations:#?}");
    assert!(violations[1].contains("malformed"), "{violations:#?}");
    assert!(
        violations[2].contains("sandbox report on the broker socket was ignored"),
        "{violations:#?}"
    );
    let log = std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap();
    assert!(log.contains("broker protocol violation"), "{log}");
}

/// A worker that confines nothing and reports that it did (fault injection:
/// a compromised binary or a broken kernel layer) is seen through from
/// outside: the orchestrator reads the sender's pid from the kernel, finds
/// no seccomp filter and no no_new_privs in /proc, and stops it before it
/// runs anything: no model request, no tool, nothing kept, a `failed`
/// verdict counted against the run rather than the feature.
#[test]
fn a_worker_whose_confinement_report_the_kernel_contradicts_runs_nothing() {
    for user in users() {
        let env = Env::new();
        let w = json!([
            turn(vec![bash(
                "touch /tmp/../$HOME/../RAN-UNCONFINED; echo ran"
            )]),
            done("done"),
        ]);
        let who = run_one(&env, user, w, None, Some("worker-unconfined:2"));
        let at = format!("{user:?}");
        let message = who.last_message();
        assert_eq!(
            trailers(&message, "Longrun-Verdict"),
            ["failed"],
            "{at}: {message}"
        );
        assert_eq!(trailers(&message, "Longrun-Fault"), ["run"], "{at}");
        let reasons = trailers(&message, "Longrun-Reason").join("\n");
        for words in [
            "confinement report does not hold",
            "the kernel shows no no_new_privs for the worker",
            "the kernel shows no seccomp filter for the worker",
            "the kernel shows no PID namespace of its own for the worker",
            "stopped before it ran anything",
        ] {
            assert!(reasons.contains(words), "{at}: {words}: {reasons}");
        }
        assert!(
            trailers(&message, "Longrun-Sandbox")
                .iter()
                .any(|l| l.starts_with("checked by the orchestrator in /proc/")),
            "{at}: {message}"
        );
        let t = transcript_of(&env, 2);
        assert_eq!(
            t.iter().filter(|e| e["type"] == "request").count(),
            0,
            "{at}: a model request was brokered"
        );
        assert_eq!(trailers(&message, "Longrun-Steps"), ["0"], "{at}");
        assert!(
            !std::fs::read_dir(env.root.path())
                .unwrap()
                .chain(std::fs::read_dir(env.project().join(".longrun/sessions/0002")).unwrap())
                .any(|e| e.unwrap().file_name() == "RAN-UNCONFINED"),
            "{at}: a tool ran"
        );
        assert!(who
            .git(&["show", "main:features.json"])
            .contains("\"passes\": false"));
    }
}

by_both!(
    init_sh_does_not_hold_the_broker_socket,
    init_sh_does_not_hold_the_broker_socket_as_uid_65534,
    init_sh_socket
);

/// init.sh, which the worker runs before the first model call through the
/// same spawn as a bash call, does not hold the broker socket either.
fn init_sh_socket(by: By) {
    let env = Env::new();
    let who = As::new(&env, by);
    let init =
        "#!/usr/bin/env bash\n(echo x >&3) 2>/dev/null && echo INIT-HELD-FD3 || echo init-no-fd3\n";
    let first = json!([
        turn(vec![
            write_file("features.json", &one(false)),
            write_file("init.sh", init),
            write_file("progress.md", "# Progress\n"),
        ]),
        turn(vec![bash(
            "chmod +x init.sh && git add -A && git commit -qm init"
        )]),
        done("initialized"),
    ]);
    let model = env.model(json!({"1": first, "2": worker(false)}));
    let o = who.init(&model);
    assert!(o.status.success(), "{}", text(&o));
    let o = who.continue_run(&model, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        trailers(&who.last_message(), "Longrun-Verdict"),
        ["accepted"]
    );
    let t = serde_json::to_string(&env.transcript(2)).unwrap();
    assert!(t.contains("init-no-fd3"), "{t}");
    assert!(!t.contains("INIT-HELD-FD3"), "{t}");
}

by_both!(
    a_worker_lying_about_what_its_work_passes_only_reorders_open_features,
    a_worker_lying_about_what_its_work_passes_only_reorders_open_features_as_uid_65534,
    lying_hints
);

/// The worker's report names the other features its work makes pass, and
/// the run takes those next. A worker that lies (fault injection: its
/// report names a passing feature, unknown ids, a path, a forged trailer,
/// the open feature F003 its work does not pass, and a hundred more) gets
/// F003 taken next and nothing else: F003 is not accepted without its check
/// passing, and none of what it said reaches the output, a commit or main.
/// The control, the same run with an honest worker, takes F002 again.
fn lying_hints(by: By) {
    let three = |a: bool| {
        features(&[
            ("F001", a, "test -f a.txt"),
            ("F002", false, "test -f b.txt"),
            ("F003", false, "test -f c.txt"),
        ])
    };
    for lies in [false, true] {
        let env = Env::new();
        let who = As::new(&env, by);
        let model = env.model(json!({
            "1": initializer(&three(false)),
            "2": crate::common::worker(&[("a.txt", "a\n")], &three(true)),
            // F002: work kept (it is committed), but not b.txt.
            "3": [turn(vec![bash("echo x > x.txt && git add -A && git commit -qm try")]),
                  done("done")],
            "4": [done("nothing to do")]
        }));
        let o = who.init(&model);
        assert!(o.status.success(), "{by:?}: {}", text(&o));
        let o = who.run(|cmd| {
            cmd.args(["continue", "--sessions", "3", "--model", &model, "--dir"])
                .arg(env.project());
            if lies {
                cmd.env("LONGRUN_FAILPOINT", "worker-hints:3");
            }
        });
        let at = format!("{by:?}, lies {lies}");
        assert!(o.status.code().is_some(), "{at}: {}", text(&o));
        let sessions: Vec<(String, String)> = env
            .log_json()
            .iter()
            .filter(|s| s["role"] == "worker")
            .map(|s| (s["feature"].to_string(), s["verdict"].to_string()))
            .collect();
        let (fourth, said) = if lies {
            (
                "F003",
                "session 4 takes F003: the worker of session 3 (not accepted) reported",
            )
        } else {
            ("F002", "session 4 takes F002")
        };
        let taken: Vec<&str> = sessions.iter().map(|(f, _)| f.trim_matches('"')).collect();
        assert_eq!(taken, ["F001", "F002", fourth], "{at}: {}", text(&o));
        let accepted: Vec<bool> = sessions.iter().map(|(_, v)| v == "\"accepted\"").collect();
        assert_eq!(accepted, [true, false, false], "{at}: {sessions:?}");
        let out = text(&o);
        assert_eq!(out.contains(said), lies, "{at}: {out}");
        let everything = format!(
            "{out}\n{}\n{}",
            who.git(&["log", "--all", "--format=%B"]),
            who.git(&["show", "main:features.json"])
        );
        for forged in ["FORGED-HINT", "etc/passwd", "F999", "takes F001"] {
            assert!(!everything.contains(forged), "{at}: {forged}: {everything}");
        }
        let main = who.git(&["show", "main:features.json"]);
        assert_eq!(main, three(true), "{at}");
    }
}
