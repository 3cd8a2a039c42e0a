//! What a person sees on a terminal: longrun runs in a tmux pane (a real
//! terminal), the test reads the screen with `capture-pane` and types keys
//! with `send-keys`. Sessions stand still at a failpoint (`PHASE:N=FIFO`)
//! while the test looks, and go on when it writes the FIFO: every wait is for
//! something on the screen, up to [`PATIENCE`], never for a fixed time.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use crate::common::*;
use crate::display::{project, worker, TWO};
use crate::mock_server::*;

/// A tmux server of the test's own (its own socket and no user config),
/// with one pane running one longrun command; killed when dropped.
struct Terminal {
    socket: PathBuf,
}

impl Terminal {
    /// Run longrun with `args` and `vars` in a WIDTH x HEIGHT pane, or say
    /// why not (no tmux here).
    fn start(env: &Env, args: &[&str], vars: &[(&str, String)]) -> Option<Terminal> {
        if Command::new("tmux").arg("-V").output().is_err() {
            skip("tmux is not installed (apt-get install tmux)");
            return None;
        }
        // The pane stays after longrun exits, for the test to read its last screen.
        let config = env.write("tmux.conf", "set -g remain-on-exit on\nset -g status off\n");
        let term = Terminal {
            socket: env.path("tmux.sock"),
        };
        let mut cmd = term.tmux();
        cmd.arg("-f").arg(&config).args([
            "new-session",
            "-d",
            "-x",
            &WIDTH.to_string(),
            "-y",
            &HEIGHT.to_string(),
            "-c",
        ]);
        cmd.arg(env.root.path());
        for (k, v) in vars {
            cmd.args(["-e", &format!("{k}={v}")]);
        }
        // After longrun, the shell says whether the terminal echoes typing
        // again (longrun turns echo off while it draws); `trap :` lets the
        // shell outlive a Ctrl-C meant for longrun.
        let script = "trap : INT; \"$0\" \"$@\"; status=$?; \
                      echo \"after the run: $(stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo')\"; \
                      echo \"exit status $status\"; \
                      exit $status";
        cmd.args(["--", "sh", "-c", script])
            .arg(env!("CARGO_BIN_EXE_longrun"))
            .args(args);
        let out = cmd.output().expect("tmux new-session");
        assert!(out.status.success(), "{}", text(&out));
        Some(term)
    }

    /// tmux on this test's server, with the environment longrun gets in the
    /// other tests (the server passes its own on to the pane).
    fn tmux(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.arg("-S").arg(&self.socket);
        let others = ["LONGRUN_MODEL", "LONGRUN_FAILPOINT", "RUST_LOG", "TMUX"];
        for var in PROVIDER_VARS.into_iter().chain(others) {
            cmd.env_remove(var);
        }
        cmd.envs(GIT_IDENTITY.iter().copied());
        cmd
    }

    /// What the pane shows now, with what scrolled above it (tmux scrolls a
    /// line away to say that the pane is dead, and says it: that is left out),
    /// trailing blanks trimmed.
    fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-S", "-", "-t", "0"])
            .output()
            .expect("tmux capture-pane");
        assert!(out.status.success(), "{}", text(&out));
        let screen = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<&str> = screen
            .lines()
            .map(str::trim_end)
            .filter(|l| !l.starts_with("Pane is dead"))
            .collect();
        lines.join("\n").trim_end().to_string()
    }

    /// The first screen that shows every one of `texts`.
    fn wait_for(&self, texts: &[&str]) -> String {
        self.wait_until(&format!("{texts:?}"), |screen| {
            texts.iter().all(|t| screen.contains(t))
        })
    }

    /// The first screen `shows` `what` on; fails with the last screen seen
    /// when none does within [`PATIENCE`].
    fn wait_until(&self, what: &str, shows: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let screen = self.screen();
            if shows(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "waited for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// Wait for longrun to exit; its status and last screen, which must say
    /// that the terminal echoes typing again. The shell that ran it prints
    /// the status last (the screen, not tmux's dead-pane state, which can lag).
    fn wait_exit(&self) -> (i32, String) {
        let screen = self.wait_until("longrun to exit", |screen| {
            screen
                .lines()
                .last()
                .is_some_and(|l| l.starts_with("exit status "))
        });
        let (before, last) = screen.rsplit_once('\n').unwrap_or(("", &screen));
        let code = last["exit status ".len()..].trim().parse().unwrap();
        assert!(before.ends_with("after the run: echo"), "{screen}");
        (code, before.to_string())
    }

    fn keys(&self, keys: &str) {
        let out = self
            .tmux()
            .args(["send-keys", "-t", "0", keys])
            .output()
            .expect("tmux send-keys");
        assert!(out.status.success(), "{}", text(&out));
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").output();
    }
}

const WIDTH: u16 = 150;
const HEIGHT: u16 = 40;

/// A failpoint's named pipe: the session it holds waits until [`release`].
fn hold_pipe(env: &Env, name: &str) -> PathBuf {
    let path = env.path(name);
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
    path
}

/// Let the session held at `fifo` go on (opening blocks until it is held).
fn release(fifo: &Path) {
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(fifo)
            .expect("open the failpoint's pipe"),
    );
}

/// Snapshot `screen` with its moving parts made still: the spinner,
/// clocks and durations, commits.
fn snapshot(name: &str, screen: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"(?m)^[\u{2800}-\u{28FF}] (session)", "* $1");
    settings.add_filter(r"\b\d\d:\d\d:\d\d\b", "[CLOCK]");
    settings.add_filter(r"\b\d+(\.\d+)?s\b", "[DUR]");
    settings.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    settings.bind(|| insta::assert_snapshot!(name, screen));
}

/// A fake key for the mock provider.
const KEY: &str = "sk-test-FAKE-terminal";

/// One session on a terminal: its first model request fails and is tried
/// again, then it runs a command, and the user presses Ctrl-C. The warning
/// is printed whole above the status, the status says the phase and the
/// command running, and the Ctrl-C is acknowledged while the session still
/// runs, on a line that stays.
#[test]
fn a_terminal_shows_the_retry_the_running_tool_and_the_ctrl_c_whole() {
    let env = Env::new();
    let one = &TWO[..1];
    let gate = Gate::default();
    let turns = worker("a.txt", &["a"], one);
    let server = MockServer::start(Wire::Openai, a_retry_held_by(&gate, &turns));
    crate::providers::prepare(&env, &server, "openai:gpt-4o", "");
    let list = features(&[("a", false, "test -f a.txt")]);
    let model = env.model(json!({"1": initializer(&list)}));
    let out = env.init("# Spec\nOne file.\n", &model);
    assert!(out.status.success(), "{}", text(&out));

    let fifo = hold_pipe(&env, "hold-2");
    let vars = [
        (
            "LONGRUN_FAILPOINT",
            format!("agent-loop:2={}", fifo.display()),
        ),
        ("LONGRUN_API_KEY", KEY.to_string()),
    ];
    let dir = env.dir_arg();
    let Some(term) = Terminal::start(&env, &["continue", "--dir", &dir, "--sessions", "1"], &vars)
    else {
        return;
    };
    // The provider holds its answer to the second try: the retry is on
    // screen now. (Each wait names a frame's first and last line, so that a
    // screen caught between the clearing of a frame and its drawing does
    // not count.)
    let status = "session 2 (1 of 1) · a · working";
    let retrying = term.wait_for(&["try 1 failed", status, "(request 0, try 2)"]);
    snapshot("terminal_retry", &retrying);
    gate.open();
    let running = term.wait_for(&[status, "running bash"]);
    snapshot("terminal_running_tool", &running);
    term.keys("C-c");
    let stopping = term.wait_for(&["stopping after this session", status, "running bash"]);
    // Acknowledged at once: the session is still held, with no verdict yet.
    assert!(!stopping.contains("accepted"), "{stopping}");
    release(&fifo);
    let (code, last) = term.wait_exit();
    snapshot("terminal_after_ctrl_c", &last);
    assert!(last.contains("stopping after this session"), "{last}");
    assert_eq!(code, 130, "{last}");
    // The screen told the retry once, under its session; the log keeps the warning.
    let log = std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap();
    assert!(log.contains("model request failed (try 1 of 6)"), "{log}");
}

/// Under --parallel, the status area has one status per running session,
/// each with its own feature and command.
#[test]
fn under_parallel_a_terminal_shows_one_status_per_session() {
    let env = project(json!({
        "2": worker("a.txt", &["a"], TWO),
        "3": worker("b.txt", &["b"], TWO),
    }));
    let (two, three) = (hold_pipe(&env, "hold-2"), hold_pipe(&env, "hold-3"));
    let holds = format!(
        "agent-loop:2={},agent-loop:3={}",
        two.display(),
        three.display()
    );
    let dir = env.dir_arg();
    let args = [
        "continue",
        "--dir",
        &dir,
        "--sessions",
        "2",
        "--parallel",
        "2",
    ];
    let Some(term) = Terminal::start(&env, &args, &[("LONGRUN_FAILPOINT", holds)]) else {
        return;
    };
    let both = term.wait_until("two sessions running a command", |screen| {
        screen.matches("running bash").count() == 2
            && screen.contains("session 2 (1 of 2) · a · working")
            && screen.contains("session 3 (2 of 2) · b · working")
    });
    snapshot("terminal_parallel", &both);
    // One after the other, for a screen that is the same every time.
    release(&two);
    let first = term.wait_for(&["✓ session 2", "session 3 (2 of 2) · b · working"]);
    assert!(!first.contains("session 2 (1 of 2)"), "{first}");
    release(&three);
    let (code, last) = term.wait_exit();
    snapshot("terminal_parallel_done", &last);
    assert_eq!(code, 0, "{last}");
}
