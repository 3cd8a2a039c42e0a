//! What people read: `show`, `status`, `log`, `--help`, completions, the man
//! page and the log file, on real projects built with scripted models.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

/// A project with an accepted initializer whose model will reject session 2
/// on `f1` (its check fails) and accept session 3.
fn initialized_project() -> Env {
    project_with(|turns| turns)
}

/// [`initialized_project`] with each worker's script passed through `script`.
fn project_with(script: impl Fn(Value) -> Value) -> Env {
    let env = Env::new();
    let list = features(&[
        ("f1", false, "test -f a.txt"),
        ("f2", false, "test -f b.txt"),
    ]);
    let done = features(&[
        ("f1", true, "test -f a.txt"),
        ("f2", false, "test -f b.txt"),
    ]);
    let model = env.model(json!({
        "1": priced(initializer(&list)),
        "2": priced(script(worker(&[("wrong.txt", "oops\n")], &done))),
        "3": priced(script(worker(&[("a.txt", "hello\n")], &done))),
    }));
    let out = env.init("# Spec\nTwo files.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

/// [`initialized_project`] after sessions 2 (rejected) and 3 (accepted).
fn built_project() -> Env {
    let env = initialized_project();
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    env
}

/// Give every scripted turn a fixed usage (1000 in, 50 out), so that token
/// counts do not move when a prompt or a tool's wording changes. Three more
/// text-only turns answer the harness's check rounds when a session's checks fail.
fn priced(mut turns: Value) -> Value {
    let list = turns.as_array_mut().unwrap();
    list.extend((0..3).map(|_| json!({"text": "done"})));
    for turn in list {
        turn["usage"] = json!({"input_tokens": 1000, "output_tokens": 50});
    }
    turns
}

/// Snapshot settings that hide what changes from run to run.
fn stable(env: &Env) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    let root = env.root.path().display().to_string();
    s.add_filter(&regex::escape(&root), "[TMP]");
    s.add_filter(r"\b[0-9a-f]{40}\b", "[COMMIT]");
    s.add_filter(r"\b[0-9a-f]{7,8}\b", "[ID]");
    s.add_filter(r"\b\d+(\.\d+)?s\b", "[DUR]");
    s.add_filter(r"\b\d+m\d\ds\b", "[DUR]");
    s.add_filter(
        r"peak memory \d+ KiB, \d+\.\d ms",
        "peak memory [KIB], [MS]",
    );
    s.add_filter(r"disk: .*", "disk: [DISK]");
    s
}

fn run_ok(env: &Env, args: &[&str]) -> String {
    let out = env.run(args);
    assert!(out.status.success(), "longrun {args:?}: {}", text(&out));
    stdout(&out)
}

#[test]
fn show_prints_turns_calls_results_checks_and_the_verdict() {
    let env = built_project();
    let dir = env.dir_arg();
    let rejected = run_ok(&env, &["show", "2", "--dir", &dir]);
    assert!(
        rejected.starts_with("session 2 · worker · feature f1 · rejected\n"),
        "{rejected}"
    );
    assert!(
        rejected.contains("→ write_file content=(1 line, 5 bytes) path=wrong.txt"),
        "{rejected}"
    );
    assert!(rejected.contains("    ← created `wrong.txt`"), "{rejected}");
    assert!(
        rejected.contains("verify: feature f1 `test -f a.txt`: FAILED"),
        "{rejected}"
    );
    assert!(
        rejected.contains("verdict   rejected\n  - feature f1 failed"),
        "{rejected}"
    );
    let accepted = run_ok(&env, &["show", "0003", "--dir", &dir]);
    stable(&env).bind(|| insta::assert_snapshot!("show_accepted", accepted));
}

#[test]
fn show_json_has_the_turns_and_the_verdict_commit() {
    let env = built_project();
    let out = run_ok(&env, &["show", "3", "--dir", &env.dir_arg(), "--json"]);
    let view: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(view["session"], 3);
    assert_eq!(view["feature"], "f1");
    assert_eq!(view["turns"].as_array().unwrap().len(), 3);
    assert_eq!(view["turns"][0]["tool_calls"][0]["name"], "write_file");
    let result = view["turns"][0]["tool_calls"][0]["result"]
        .as_str()
        .unwrap();
    assert!(result.contains("a.txt"), "{result}");
    assert_eq!(view["verdict"]["verdict"], "accepted");
    let log = env.log_json();
    assert_eq!(view["verdict"]["commit"], log[2]["commit"]);
    assert_eq!(view["usage"]["input_tokens"], 3000);
    assert_eq!(view["usage"]["output_tokens"], 150);
}

#[test]
fn status_and_log_tables_snapshot() {
    let env = built_project();
    let dir = env.dir_arg();
    let status = run_ok(&env, &["status", "--dir", &dir]);
    let log = run_ok(&env, &["log", "--dir", &dir]);
    stable(&env).bind(|| {
        insta::assert_snapshot!("status", status);
        insta::assert_snapshot!("log", log);
    });
}

#[test]
fn help_snapshots() {
    let env = Env::new();
    let mut help = String::new();
    for args in [
        vec!["--help"],
        vec!["init", "--help"],
        vec!["continue", "--help"],
        vec!["show", "--help"],
    ] {
        help.push_str(&format!("$ longrun {}\n", args.join(" ")));
        help.push_str(&run_ok(&env, &args));
        help.push('\n');
    }
    insta::assert_snapshot!("help", help);
}

#[test]
fn completions_name_every_command_and_parse_in_bash() {
    let env = Env::new();
    let script = run_ok(&env, &["completions", "bash"]);
    for command in [
        "init",
        "continue",
        "status",
        "log",
        "show",
        "completions",
        "man",
    ] {
        assert!(script.contains(command), "bash completions lack {command}");
    }
    assert!(
        !script.contains("__worker"),
        "hidden commands must not complete"
    );
    let path = env.write("longrun.bash", &script);
    let out = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .output()
        .unwrap();
    assert!(out.status.success(), "bash -n: {}", text(&out));
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        assert!(!run_ok(&env, &["completions", shell]).is_empty(), "{shell}");
    }
    let out = env.run(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

#[test]
fn man_page_is_roff_with_every_command() {
    let env = Env::new();
    let page = run_ok(&env, &["man"]);
    assert!(page.contains(".TH LONGRUN 1"), "{page}");
    for command in ["init", "continue", "status", "log", "show", "completions"] {
        assert!(page.contains(&format!("longrun\\-{command}")) || page.contains(command));
    }
    assert!(!page.contains("__worker") && !page.contains("\\_\\_worker"));
}

fn log_file(env: &Env) -> String {
    std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap_or_default()
}

#[test]
fn runs_log_to_the_project_log_file_and_to_stderr_with_v() {
    let env = built_project();
    let log = log_file(&env);
    assert!(log.contains("session 1 (initializer): started"), "{log}");
    assert!(log.contains("session 3: accepted"), "{log}");
    // Plain runs keep stderr clean; -vv shows the same records there.
    let model = env.model(json!({"*": []}));
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--model", &model]);
    assert!(!stderr(&out).contains("DEBUG"), "{}", text(&out));
    let out = env.run(&[
        "-vv",
        "continue",
        "--dir",
        &env.dir_arg(),
        "--model",
        &model,
    ]);
    assert!(
        stderr(&out).contains("session 5 (worker, f2): started"),
        "{}",
        text(&out)
    );
}

#[test]
fn rust_log_sets_what_is_logged() {
    let env = built_project();
    let model = env.model(json!({"*": []}));
    let out = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg(), "--model", &model])
        .env("RUST_LOG", "debug")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("session 4 (worker, f2): started"),
        "{}",
        text(&out)
    );
    let before = log_file(&env).len();
    let out = env
        .longrun()
        .args(["continue", "--dir", &env.dir_arg(), "--model", &model])
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    assert!(!stderr(&out).contains("started"), "{}", text(&out));
    assert_eq!(log_file(&env).len(), before, "RUST_LOG=off logs nothing");
}

#[test]
fn status_reads_without_creating_a_log() {
    let env = built_project();
    std::fs::remove_file(env.project().join(".longrun/longrun.log")).unwrap();
    run_ok(&env, &["status", "--dir", &env.dir_arg()]);
    assert!(!Path::new(&env.project().join(".longrun/longrun.log")).exists());
}

#[test]
fn continue_json_prints_one_event_per_line() {
    let env = initialized_project();
    let out = run_ok(
        &env,
        &[
            "continue",
            "--dir",
            &env.dir_arg(),
            "--sessions",
            "2",
            "--json",
        ],
    );
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types.first(), Some(&"session_started"), "{types:?}");
    assert_eq!(types.last(), Some(&"run_finished"), "{types:?}");
    for t in ["tool_call", "check_result", "verdict"] {
        assert!(types.contains(&t), "no {t} in {types:?}");
    }
    let started: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "session_started")
        .collect();
    assert_eq!(started[1]["session"], 3);
    assert_eq!(
        (started[1]["index"].clone(), started[1]["of"].clone()),
        (json!(2), json!(2))
    );
    let verdicts: Vec<&Value> = events.iter().filter(|e| e["type"] == "verdict").collect();
    assert_eq!(verdicts[0]["verdict"], "rejected");
    assert!(verdicts[0]["reasons"][0].as_str().unwrap().contains("f1"));
    assert_eq!(verdicts[1]["verdict"], "accepted");
    assert_eq!(verdicts[1]["tokens_in"], 3000);
    assert_eq!(verdicts[1]["tokens_out"], 150);
    assert_eq!(verdicts[1]["commit"], env.log_json()[2]["commit"]);
    let verify = events
        .iter()
        .find(|e| e["type"] == "check_result" && e["phase"] == "verify")
        .expect("a verify check");
    assert_eq!(verify["session"], 2);
    let end = events.last().unwrap();
    assert_eq!(end["outcome"], "done");
    assert_eq!(end["exit_code"], 0);
    assert_eq!(
        (end["sessions"].clone(), end["accepted"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(
        (end["passing"].clone(), end["total"].clone()),
        (json!(1), json!(2))
    );
    let sum: u64 = verdicts
        .iter()
        .map(|v| v["tokens_in"].as_u64().unwrap())
        .sum();
    assert_eq!(
        end["tokens_in"], sum,
        "the run's total is its sessions' sum"
    );
}

#[test]
fn continue_json_reports_the_outcome_of_a_stopped_run() {
    let env = initialized_project();
    let dir = env.dir_arg();
    let model = env.model(json!({"*": []}));
    let out = env.run(&[
        "continue",
        "--dir",
        &dir,
        "--model",
        &model,
        "--until-done",
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let last: Value = serde_json::from_str(stdout(&out).lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "run_finished");
    assert_eq!(last["outcome"], "stopped_early");
    assert_eq!(last["exit_code"], 3);
    let out = env.run(&["continue", "--dir", &dir, "--json", "--quiet"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "--json and --quiet conflict: {}",
        text(&out)
    );
}

/// Run longrun with stdout on a pseudo-terminal; returns what the terminal got.
fn on_terminal(env: &Env, args: &[&str]) -> String {
    use std::io::Read;
    let size = nix::pty::Winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).unwrap();
    let mut child = env
        .longrun()
        .args(args)
        .env("TERM", "xterm-256color")
        .stdout(std::process::Stdio::from(pty.slave))
        .spawn()
        .unwrap();
    let mut master = std::fs::File::from(pty.master);
    let mut bytes = Vec::new();
    // Reading ends with EIO once the child closed its side.
    let _ = master.read_to_end(&mut bytes);
    assert!(
        child.wait().unwrap().success(),
        "{}",
        String::from_utf8_lossy(&bytes)
    );
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn a_terminal_gets_a_live_status_and_the_verdicts() {
    // The commit takes a moment, so that the status is drawn while it runs
    // (it redraws every 120 ms), however fast the machine.
    let env = project_with(|turns| {
        let text = turns
            .to_string()
            .replace("git commit -qm work", "git commit -qm work && sleep 0.5");
        serde_json::from_str(&text).unwrap()
    });
    let screen = on_terminal(
        &env,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "2"],
    );
    assert!(
        screen.contains("session 2 (1 of 2) · f1 · working · step"),
        "{screen}"
    );
    assert!(
        screen.contains("session 3 (2 of 2) · f1 · working · step"),
        "{screen}"
    );
    assert!(screen.contains("3.0k in / 150 out tokens"), "{screen}");
    assert!(
        screen.contains("write_file"),
        "the last tool call shows: {screen}"
    );
    // The phases, the tool running now, and the failing checks under their round.
    for part in [
        "· checking round 1/3 ·",
        "· verifying ·",
        "running bash echo note >> progress.md",
        "  checking round 2/3",
        "session 2 (worker, f1):",
    ] {
        assert!(screen.contains(part), "{part} missing: {screen}");
    }
    assert!(
        screen.contains("\x1b["),
        "the status redraws with escape codes"
    );
    assert!(
        screen.contains("session 3 · f1 · \x1b[1maccepted"),
        "{screen}"
    );
    assert!(
        screen.contains("run done: 2 sessions this run (1 accepted), 1/2 features passing"),
        "{screen}"
    );
}

#[test]
fn quiet_on_a_terminal_prints_plain_lines() {
    let env = initialized_project();
    let screen = on_terminal(&env, &["continue", "--dir", &env.dir_arg(), "--quiet"]);
    assert!(
        screen.contains("session 2 (worker, f1): started\r\n"),
        "{screen}"
    );
    assert!(screen.contains("  step 1: write_file"), "{screen}");
    assert!(!screen.contains("\x1b["), "no escape codes: {screen:?}");
}

/// Set to 1 to skip rendering the report in a browser (the rest of its test still runs).
const SKIP_BROWSER: &str = "LONGRUN_SKIP_BROWSER";

/// The headless Chromium CI installs; the report test fails loudly without it,
/// unless told to skip.
fn chromium() -> String {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        let found = std::process::Command::new("sh")
            .args(["-c", &format!("command -v {name}")])
            .output()
            .unwrap();
        if found.status.success() {
            return String::from_utf8_lossy(&found.stdout).trim().to_string();
        }
    }
    panic!(
        "chromium is not installed; the report test needs it: apt-get install -y chromium \
         (.ci/run does this), or set {SKIP_BROWSER}=1 to skip rendering the report"
    );
}

/// Run headless Chromium on `page` with `args`, confined to `profile`, killed after two minutes.
fn headless(page: &Path, profile: &Path, args: &[String]) -> std::process::Output {
    let child = std::process::Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if rx
            .recv_timeout(std::time::Duration::from_secs(120))
            .is_err()
        {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    });
    let out = child.wait_with_output().unwrap();
    let _ = tx.send(());
    out
}

/// Distinct RGB colours in a PNG, and its size.
fn png_colors(path: &Path) -> (usize, u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(
        channels >= 3,
        "expected an RGB screenshot, got {:?}",
        info.color_type
    );
    let colors: std::collections::HashSet<[u8; 3]> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|p| [p[0], p[1], p[2]])
        .collect();
    (colors.len(), info.width, info.height)
}

#[test]
fn report_is_one_self_contained_page_that_renders_in_chromium() {
    let env = built_project();
    let page = env.path("report.html");
    let out = run_ok(
        &env,
        &[
            "report",
            "--dir",
            &env.dir_arg(),
            "--out",
            page.to_str().unwrap(),
        ],
    );
    assert_eq!(out, format!("wrote {}\n", page.display()));
    let html = std::fs::read_to_string(&page).unwrap();
    // Fetches nothing: no script, no stylesheet link, no external address.
    for needle in [
        "<script", "<link", "src=", "url(", "@import", "http://", "https://", "//",
    ] {
        let hits: Vec<_> = html
            .match_indices(needle)
            .map(|(i, _)| &html[i.saturating_sub(40)..i + 20])
            .collect();
        assert!(
            hits.is_empty() || (needle == "//" && hits.iter().all(|h| !h.contains("=\"//"))),
            "{needle} in the report: {hits:?}"
        );
    }
    for href in html.split("href=\"").skip(1) {
        assert!(
            href.starts_with('#'),
            "links stay in the page: {}",
            &href[..30.min(href.len())]
        );
    }

    if std::env::var(SKIP_BROWSER).as_deref() == Ok("1") {
        eprintln!(
            "SKIPPED: the report was not rendered in Chromium ({SKIP_BROWSER}=1); \
             its HTML was checked"
        );
        return;
    }
    let profile = tempfile::tempdir().unwrap();
    let dom = headless(&page, profile.path(), &["--dump-dom".into()]);
    assert!(dom.status.success(), "chromium --dump-dom: {}", text(&dom));
    let dom = stdout(&dom);
    assert!(
        dom.contains("<title>longrun report: project</title>"),
        "{dom}"
    );
    assert!(dom.contains(r#"<b id="passing">1/2</b>"#), "{dom}");
    for id in ["chart-passing", "chart-tokens"] {
        assert!(dom.contains(&format!(r#"<svg id="{id}""#)), "no {id}");
    }
    // The scripted model has no price: no empty cost chart, a note instead.
    assert!(!dom.contains(r#"<svg id="chart-cost""#), "{dom}");
    assert!(dom.contains(r#"id="no-cost""#), "{dom}");
    // Charts take the page's width.
    assert!(dom.contains(r#"class="chart" role="img""#) && !dom.contains(r#"width="720""#));
    // The timeline: f1 rejected then accepted, f2 not tried.
    let timeline = &dom[dom.find(r#"<section id="timeline">"#).unwrap()..];
    let timeline = &timeline[..timeline.find("</section>").unwrap()];
    let f1 = &timeline[timeline.find(r#"<tr data-feature="f1">"#).unwrap()..];
    let f1 = &f1[..f1.find("</tr>").unwrap()];
    assert!(
        f1.find("badge rejected").unwrap() < f1.find("badge accepted").unwrap(),
        "{f1}"
    );
    assert!(timeline.contains("not tried yet"), "{timeline}");
    // Backticks in a reason are code.
    assert!(dom.contains("<code>test -f a.txt</code>"), "{dom}");
    // Three sessions: a point and a linked bar for each, and a row linking to its commit.
    let passing = &dom[dom.find(r#"id="chart-passing""#).unwrap()..];
    let passing = &passing[..passing.find("</svg>").unwrap()];
    assert_eq!(passing.matches("<circle").count(), 3);
    assert!(passing.contains("session 3: 1 of 2 passing"), "{passing}");
    for (i, row) in env.log_json().iter().enumerate() {
        let n = i + 1;
        let commit = row["commit"].as_str().unwrap();
        assert!(
            dom.contains(&format!(r#"<tr id="session-{n}">"#)),
            "no row for session {n}"
        );
        assert!(
            dom.contains(&format!(r##"href="#commit-{commit}""##)),
            "session {n} links to {commit}"
        );
        assert!(
            dom.contains(&format!(r#"id="commit-{commit}""#)),
            "commit {commit} is in the page"
        );
    }
    assert!(dom.contains(r#"<tr data-verdict="accepted"><td><span class="badge accepted">accepted</span></td><td class="num">2</td></tr>"#), "{dom}");
    assert!(dom.contains(r#"<tr data-verdict="rejected"><td><span class="badge rejected">rejected</span></td><td class="num">1</td></tr>"#), "{dom}");
    assert!(dom.contains(r#"<tr data-feature="f1">"#) && dom.contains(r#"<tr data-feature="f2">"#));
    assert!(
        dom.contains("feature f1 failed"),
        "the rejection's reason is shown"
    );

    let shot = env.path("report.png");
    let out = headless(
        &page,
        profile.path(),
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,1800".into(),
        ],
    );
    assert!(
        out.status.success(),
        "chromium --screenshot: {}",
        text(&out)
    );
    let (colors, width, height) = png_colors(&shot);
    assert_eq!((width, height), (1280, 1800));
    // A blank or unstyled page has a handful of colours; charts, badges and anti-aliased text have hundreds.
    assert!(
        colors > 200,
        "the screenshot looks blank: {colors} distinct colours"
    );
}

#[test]
fn report_shows_stuck_features_with_their_reasons() {
    let env = initialized_project();
    let dir = env.dir_arg();
    let model = env.model(json!({"*": []}));
    let out = env.run(&["continue", "--dir", &dir, "--model", &model, "--until-done"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    run_ok(&env, &["report", "--dir", &dir]);
    let html = std::fs::read_to_string(env.project().join(".longrun/report.html")).unwrap();
    let stuck = &html[html.find(r#"<section id="stuck">"#).unwrap()..];
    let stuck = &stuck[..stuck.find("</section>").unwrap()];
    // One style each: the box of a stuck feature is not the `stuck` badge.
    assert!(
        stuck.contains(r#"<div class="stuck-feature" data-feature="f1">"#),
        "{stuck}"
    );
    assert!(!html.contains("\n.stuck {"), "no second rule for .stuck");
    // f1 ran out of attempts; f2 had two when the run stopped on five failures in a row.
    assert!(stuck.contains(r#"data-feature="f1""#), "{stuck}");
    assert!(!stuck.contains(r#"data-feature="f2""#), "{stuck}");
    assert!(stuck.contains("3 failed attempts"), "{stuck}");
    assert!(
        stuck.contains("still has passes: false"),
        "the last reason is listed: {stuck}"
    );
    assert!(stuck.contains("longrun retry f1"), "{stuck}");
}
