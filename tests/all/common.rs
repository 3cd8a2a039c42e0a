//! Shared helpers for the integration tests: temp projects, the binary, scripted models.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

/// `git`, with an identity of its own: a fresh machine has none configured,
/// and the tests' own commits must not depend on the user's.
pub fn git_command() -> Command {
    let mut cmd = Command::new("git");
    cmd.envs(GIT_IDENTITY.iter().copied());
    cmd
}

/// The committer the tests' own git commands (and the longrun they run) use.
pub const GIT_IDENTITY: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "longrun test"),
    ("GIT_AUTHOR_EMAIL", "test@longrun.invalid"),
    ("GIT_COMMITTER_NAME", "longrun test"),
    ("GIT_COMMITTER_EMAIL", "test@longrun.invalid"),
];

/// How long a test waits for what should come at once (a line, a screen)
/// before it fails: generous, for a loaded machine. Tests wait for what they
/// expect, up to this; they never sleep for a fixed time instead.
pub const PATIENCE: std::time::Duration = std::time::Duration::from_secs(90);

/// A test that cannot run on this machine says so loudly, and under CI
/// (`CI` set, where .ci/run installs everything and runs as root) fails
/// instead, so that a missing prerequisite never passes as green.
pub fn skip(why: &str) {
    if std::env::var_os("CI").is_some() {
        panic!("cannot run under CI: {why}");
    }
    eprintln!("SKIPPED: {why}");
}

/// Who runs longrun: the tests' own user (root, as CI runs them), or
/// uid 65534, who then owns the temp dir and the project in it, so that
/// only the sandbox and the orchestrator's rules stand in a session's way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum By {
    Root,
    Nobody,
}

/// Whether this process can run longrun as uid 65534 (it must be root to
/// hand the temp dir over); says SKIPPED when not.
pub fn can_be_nobody() -> bool {
    let root = nix::unistd::geteuid().is_root();
    if !root {
        skip("the uid 65534 half of this test needs root");
    }
    root
}

/// Who runs longrun, for a test that tries both in turn: root, and uid
/// 65534 when the tests run as root (said, loudly, when they do not).
pub fn users() -> Vec<By> {
    let mut users = vec![By::Root];
    if can_be_nobody() {
        users.push(By::Nobody);
    }
    users
}

/// `program` run by `by`: for uid 65534, under setpriv as uid/gid 65534
/// with no groups.
pub fn command_by(by: By, program: &str) -> Command {
    match by {
        By::Root => Command::new(program),
        By::Nobody => {
            let mut cmd = Command::new("setpriv");
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", program]);
            cmd
        }
    }
}

/// Give `dir` and everything in it to `owner` (`uid:gid`).
pub fn chown_tree(dir: &Path, owner: &str) {
    let done = Command::new("chown")
        .args(["-R", owner])
        .arg(dir)
        .status()
        .expect("chown");
    assert!(done.success(), "chown -R {owner} {}", dir.display());
}

/// Two tests of one attack, `$attack(By::Root)` and `$attack(By::Nobody)`,
/// the second skipped (loudly) when the tests do not run as root. (The
/// benches include this file too, and use no macro.)
#[allow(unused_macros)]
macro_rules! by_both {
    ($as_root:ident, $as_nobody:ident, $attack:ident) => {
        #[test]
        fn $as_root() {
            $attack($crate::common::By::Root);
        }

        #[test]
        fn $as_nobody() {
            if $crate::common::can_be_nobody() {
                $attack($crate::common::By::Nobody);
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use by_both;

/// The variables that would point longrun at a real provider or through a
/// proxy: the provider tests' commands run without them.
pub const PROVIDER_VARS: [&str; 9] = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "LONGRUN_API_KEY",
    "LONGRUN_BASE_URL",
    "http_proxy",
    "https_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
];

/// A temp directory holding a project dir and whatever a test writes beside it.
pub struct Env {
    pub root: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Env {
        Env {
            root: tempfile::Builder::new()
                .prefix("longrun-test-")
                .tempdir()
                .expect("temp dir"),
        }
    }

    /// The project directory (not created).
    pub fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// Write a file beside the project; returns its path.
    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write");
        p
    }

    /// Write a scripted model and return its `scripted:PATH` string.
    pub fn model(&self, sessions: Value) -> String {
        let p = self.write("model.json", &json!({ "sessions": sessions }).to_string());
        format!("scripted:{}", p.display())
    }

    /// The longrun binary with a clean environment, run in the temp root.
    pub fn longrun(&self) -> Command {
        self.longrun_by(By::Root)
    }

    /// [`Env::longrun`] as `by`; uid 65534 gets a HOME in the temp dir.
    fn longrun_by(&self, by: By) -> Command {
        let mut cmd = command_by(by, env!("CARGO_BIN_EXE_longrun"));
        cmd.current_dir(self.root.path());
        cmd.env_remove("LONGRUN_MODEL");
        cmd.env_remove("RUST_LOG");
        cmd.envs(GIT_IDENTITY.iter().copied());
        if by == By::Nobody {
            let home = self.path("nobody-home");
            std::fs::create_dir_all(&home).expect("mkdir");
            cmd.env("HOME", home);
        }
        cmd
    }

    /// Run longrun as `by`, with what `add` puts on the command (arguments,
    /// environment). For uid 65534 the temp dir, project included, is
    /// handed to it for the run (its HOME in there too) and taken back
    /// after, for the test's own git to read. Needs the tests to run as
    /// root; [`by_both`] skips the uid 65534 half otherwise.
    pub fn run_with(&self, by: By, add: impl FnOnce(&mut Command)) -> Output {
        let mut cmd = self.longrun_by(by);
        add(&mut cmd);
        if by == By::Nobody {
            self.chown("65534:65534");
        }
        let out = cmd.output().expect("run longrun");
        if by == By::Nobody {
            self.chown("0:0");
        }
        out
    }

    /// [`Env::run_by`], stopped (SIGKILL to the longrun it started) and
    /// failed when it takes over `limit`: for what must not stall the run.
    pub fn run_within(&self, by: By, args: &[&str], limit: std::time::Duration) -> Output {
        let mut cmd = self.longrun_by(by);
        cmd.args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if by == By::Nobody {
            self.chown("65534:65534");
        }
        let mut child = cmd.spawn().expect("run longrun");
        let start = std::time::Instant::now();
        while child.try_wait().expect("wait for longrun").is_none() {
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                if by == By::Nobody {
                    self.chown("0:0");
                }
                panic!("longrun {args:?} was still running after {limit:?}: stalled");
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let out = child.wait_with_output().expect("longrun's output");
        if by == By::Nobody {
            self.chown("0:0");
        }
        out
    }

    fn chown(&self, owner: &str) {
        chown_tree(self.root.path(), owner);
    }

    /// Run longrun with `args` as `by`.
    pub fn run_by(&self, by: By, args: &[&str]) -> Output {
        self.run_with(by, |cmd| {
            cmd.args(args);
        })
    }

    /// `continue` the project for `sessions` sessions, as `by`.
    pub fn continue_by(&self, by: By, sessions: u32) -> Output {
        let sessions = sessions.to_string();
        let dir = self.dir_arg();
        self.run_by(by, &["continue", "--dir", &dir, "--sessions", &sessions])
    }

    /// Run longrun with `args`; returns the output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.longrun().args(args).output().expect("run longrun")
    }

    /// `init` the project from `spec` with `model`.
    pub fn init(&self, spec: &str, model: &str) -> Output {
        self.init_by(By::Root, spec, model)
    }

    /// `init` the project from `spec` with `model`, as `by`.
    pub fn init_by(&self, by: By, spec: &str, model: &str) -> Output {
        let args = self.init_args(spec, model);
        self.run_with(by, |cmd| {
            cmd.args(&args);
        })
    }

    /// `longrun init` of the project from `spec` with `model`, for a test
    /// to add flags or environment to.
    pub fn init_command(&self, spec: &str, model: &str) -> Command {
        let mut cmd = self.longrun();
        cmd.args(self.init_args(spec, model));
        cmd
    }

    /// The arguments of `init` from `spec` (written beside the project).
    fn init_args(&self, spec: &str, model: &str) -> Vec<String> {
        let spec_path = self.write("spec.md", spec);
        vec![
            "init".into(),
            spec_path.display().to_string(),
            "--dir".into(),
            self.dir_arg(),
            "--model".into(),
            model.into(),
        ]
    }

    pub fn dir_arg(&self) -> String {
        self.project().display().to_string()
    }

    /// `longrun log --json` of the project, parsed.
    pub fn log_json(&self) -> Vec<Value> {
        let out = self.run(&["log", "--json", "--dir", &self.dir_arg()]);
        assert!(out.status.success(), "log failed: {}", text(&out));
        serde_json::from_slice(&out.stdout).expect("log --json is JSON")
    }

    /// A file's text on main (from git, not the work tree).
    pub fn on_main(&self, path: &str) -> Option<String> {
        let out = git_command()
            .arg("-C")
            .arg(self.project())
            .args(["show", &format!("main:{path}")])
            .output()
            .expect("git show");
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `git` in the project, stdout as text.
    pub fn git(&self, args: &[&str]) -> String {
        let out = git_command()
            .arg("-C")
            .arg(self.project())
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every transcript entry of session `n`.
    pub fn transcript(&self, n: u32) -> Vec<Value> {
        let p = self
            .project()
            .join(format!(".longrun/sessions/{n:04}/transcript.jsonl"));
        let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        t.lines()
            .map(|l| serde_json::from_str(l).expect("transcript line"))
            .collect()
    }

    /// The model requests session `n` sent, as recorded by the orchestrator.
    pub fn requests(&self, n: u32) -> Vec<Value> {
        self.transcript(n)
            .into_iter()
            .filter(|e| e["type"] == "request")
            .map(|e| e["request"].clone())
            .collect()
    }
}

/// stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---- building scripted turns ----

pub fn bash(command: &str) -> Value {
    json!({"name": "bash", "arguments": {"command": command}})
}

pub fn write_file(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

pub fn turn(calls: Vec<Value>) -> Value {
    json!({"text": "", "tool_calls": calls})
}

pub fn done(text: &str) -> Value {
    json!({"text": text})
}

/// A features.json with the given (id, passes, check) entries.
pub fn features(items: &[(&str, bool, &str)]) -> String {
    let list: Vec<Value> = items
        .iter()
        .map(|(id, passes, check)| {
            json!({"id": id, "category": "functional", "description": format!("feature {id}"),
                   "steps": ["do it"], "check": check, "passes": passes})
        })
        .collect();
    serde_json::to_string_pretty(&json!({ "features": list })).unwrap() + "\n"
}

/// An initializer session that writes `features_json`, an init.sh and progress.md, and commits.
pub fn initializer(features_json: &str) -> Value {
    json!([
        turn(vec![
            write_file("features.json", features_json),
            write_file("init.sh", "#!/usr/bin/env bash\nset -e\necho ready\n"),
            write_file("progress.md", "# Progress\n"),
        ]),
        turn(vec![bash(
            "chmod +x init.sh && git add -A && git commit -qm init"
        )]),
        done("initialized"),
    ])
}

/// A worker session that writes `files`, replaces features.json with `features_json`, and commits.
pub fn worker(files: &[(&str, &str)], features_json: &str) -> Value {
    let mut calls: Vec<Value> = files.iter().map(|(p, c)| write_file(p, c)).collect();
    calls.push(write_file("features.json", features_json));
    json!([
        turn(calls),
        turn(vec![bash(
            "echo note >> progress.md && git add -A && git commit -qm work"
        )]),
        done("done"),
    ])
}

pub fn exists(p: &Path) -> bool {
    p.exists()
}
