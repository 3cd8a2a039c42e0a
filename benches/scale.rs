//! `cargo bench --bench scale`: one long `longrun continue` per project
//! shape, with a scripted model doing trivial valid work (each session makes
//! its feature's file `FNNNNN.txt` and flips its `passes`), run under
//! `ulimit -n 256`, printing every 50 sessions:
//!
//! - the orchestrator's time per session by phase (from the `session N
//!   phases:` lines of `.longrun/longrun.log`), and the time between
//!   sessions; "orch" is the session's wall time less the worker and the
//!   checks' own run time;
//! - verification (the checks' run) against the passing features;
//! - the orchestrator's open descriptors and resident memory, sampled when
//!   the verdict is printed;
//! - the disk under `.longrun/` and `.git/`.
//! - `probe`: the machine's pace, the same fixed work timed in the bench
//!   after every verdict (the row's median), and at the end the growth
//!   once that is taken out.
//!
//! Shapes: `flat`, 10 features passing at the start and every feature's
//! mark a line of one file (the tree stays the same size: what grows is
//! history); `small` and `large`, 10 and 300 passing at the start and a
//! file per feature (the tree grows one file per session); and `big`, a
//! 5,000-file, 50 MB repository with 10. The regressions
//! run as one `[checks] suite` (`--no-suite`: one check per feature).
//!
//! ```sh
//! cargo bench --bench scale                          # 1,000 / 1,000 / 100 sessions
//! cargo bench --bench scale -- --sessions 300 --big-sessions 50 --only small,large,big
//! cargo bench --bench scale -- --only small --passing 1000 --sessions 40 --every 20
//! cargo bench --bench scale -- --only small --split  # and a fresh run at the end's size
//! cargo bench --bench scale -- --only small --paired 6  # and session 50 beside the last
//! ```
//!
//! `--paired ROUNDS` compares the run's last session with its first row's
//! on the same minutes of the machine: a young project of the same shape
//! (at session `--every`) and the run's own take turns, 20 sessions each
//! (`cargo test` runs one round of a session each),
//! and each round's ratio of their medians is printed.
//!
//! `--split` parts the growth: after each shape's run, a fresh project at
//! its last row's size (as many features passing and files, the same
//! features.json) runs one row of sessions, so the growth shows as what the
//! size accounts for and what history and the process's age add.
//!
//! Under `cargo test --all-targets` (no `--bench` argument) every shape runs
//! a few sessions as a smoke test.

// A benchmark that cannot set up has nothing to report: it panics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{json, Value};

struct Shape {
    name: &'static str,
    passing: usize,
    files: usize,
    sessions: usize,
    /// Every feature's mark is a line of one file (`done.txt`) instead of a
    /// file of its own: the tree stays the same size, so what grows is history.
    one_file: bool,
    /// Features in features.json: the passing ones, one per session, and 5 more.
    features: usize,
}

impl Shape {
    fn new(
        name: &'static str,
        passing: usize,
        files: usize,
        sessions: usize,
        one_file: bool,
    ) -> Shape {
        Shape {
            name,
            passing,
            files,
            sessions,
            one_file,
            features: passing + sessions + 5,
        }
    }

    /// The same project as this run's last row sees it (as many features
    /// passing, as many files, the same features.json), without its
    /// history: a fresh run of `every` sessions.
    fn at_the_end(&self, every: usize) -> Shape {
        Shape {
            passing: self.passing + self.sessions.saturating_sub(every),
            sessions: every,
            ..*self
        }
    }
}

struct Options {
    every: usize,
    suite: bool,
    keep: bool,
    /// After each shape's run, a fresh run at its last row's size.
    split: bool,
    /// After each shape's run, this many rounds of a young project and the
    /// run's own one side by side.
    paired: usize,
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let sessions: usize = value("--sessions").map_or(if full { 1000 } else { 3 }, |v| {
        v.parse().expect("--sessions N")
    });
    let big_sessions: usize = value("--big-sessions").map_or(if full { 100 } else { 2 }, |v| {
        v.parse().expect("--big-sessions N")
    });
    let only = value("--only").unwrap_or_else(|| "flat,small,large,big".into());
    let options = Options {
        every: value("--every")
            .map_or(if full { 50 } else { 1 }, |v| v.parse().expect("--every N")),
        suite: !args.iter().any(|a| a == "--no-suite"),
        keep: args.iter().any(|a| a == "--keep"),
        split: args.iter().any(|a| a == "--split"),
        // One round under `cargo test`, so that the mode is run too.
        paired: value("--paired")
            .map_or(usize::from(!full), |v| v.parse().expect("--paired ROUNDS")),
    };
    let (small, large, files) = if full { (10, 300, 5000) } else { (2, 5, 50) };
    // --passing N: the flat, small and big shapes start with N features
    // passing (what session N of a long run has, without its history).
    let small: usize = value("--passing").map_or(small, |v| v.parse().expect("--passing N"));
    let mut shapes = [
        Shape::new("flat", small, 0, sessions, true),
        Shape::new("small", small, 0, sessions, false),
        Shape::new("large", large, 0, sessions, false),
        Shape::new("big", small, files, big_sessions, false),
    ];
    // The paired rounds' sessions each need a feature of their own.
    for shape in &mut shapes {
        shape.features += options.paired * paired_batch(&options);
    }
    for shape in shapes
        .iter()
        .filter(|s| only.split(',').any(|o| o == s.name))
    {
        let rows = run_shape(shape, &options, |dir, rows| {
            print_growth(rows);
            if options.paired > 0 && rows.len() > 1 {
                paired(shape, dir, &options);
            }
        });
        if options.split && shape.sessions > 2 * options.every {
            let fresh = run_shape(&shape.at_the_end(options.every), &options, |_, _| {});
            print_split(&rows, &fresh);
        }
    }
}

/// Set up `shape` and run it; its rows' times. `then` gets the project
/// and the rows after the run.
fn run_shape(
    shape: &Shape,
    options: &Options,
    then: impl FnOnce(&Path, &[RowTimes]),
) -> Vec<RowTimes> {
    let root = tempfile::Builder::new()
        .prefix("longrun-scale-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let dir = root.path().join("project");
    // --keep: the project stays for a look, also when the run fails.
    let root_path = root.path().to_path_buf();
    let root = if options.keep {
        let _ = root.keep();
        None
    } else {
        Some(root)
    };
    if options.keep {
        println!("project: {}", dir.display());
    }
    let started = Instant::now();
    set_up(&dir, &root_path, shape, options);
    println!(
        "\n{} ({} features passing at the start{}; set up in {:.0} s; regressions as {})",
        shape.name,
        shape.passing,
        if shape.files > 0 {
            format!(", {} files / {} MB of data", shape.files, shape.files / 100)
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64(),
        if options.suite {
            "one suite"
        } else {
            "one check per feature"
        }
    );
    print_header();
    let rows = run(&dir, shape, options.every, 2);
    println!("(times in ms per session, means over the row's sessions; orch: the phases but worker and checks; between: the rest of the wall time)");
    then(&dir, &rows);
    drop(root);
    rows
}

/// Sessions per batch of `--paired`: 20, or a row's when rows are shorter.
fn paired_batch(options: &Options) -> usize {
    options.every.min(20)
}

/// `--paired ROUNDS`: the run's project (at its last session) and a young
/// one of the same shape (at session `every`, the first row's), each
/// running a batch of sessions in turn, the order swapped every round.
/// The machine's pace moves over a long run (by half on this one, other
/// tenants' doing); two batches a minute apart share it, so each round's
/// ratio is the growth alone: history, tree and passing features, though
/// not the age of one long-running process.
fn paired(shape: &Shape, old: &Path, options: &Options) {
    let root = tempfile::Builder::new()
        .prefix("longrun-scale-young-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let young = root.path().join("project");
    set_up(&young, root.path(), shape, options);
    let start = Shape {
        sessions: options.every,
        ..*shape
    };
    println!(
        "\npaired: a young {} project, its first {} sessions",
        shape.name, options.every
    );
    print_header();
    let mut next = [
        run(&young, &start, options.every, 2)
            .last()
            .map_or(2, |r| r.session + 1),
        shape.sessions as u32 + 1,
    ];
    let batch = Shape {
        sessions: paired_batch(options),
        ..*shape
    };
    println!(
        "\npaired: {} rounds of {} sessions, young and old in turn",
        options.paired, batch.sessions
    );
    print_header();
    let mut ratios = Vec::new();
    // Every session's phases, young and old, over all rounds.
    let mut sessions: [Vec<BTreeMap<String, f64>>; 2] = [Vec::new(), Vec::new()];
    for round in 0..options.paired {
        let mut medians = [0.0; 2];
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let dir = if side == 0 { young.as_path() } else { old };
            let rows = run(dir, &batch, batch.sessions, next[side]);
            let last = rows.last().expect("a batch's row");
            medians[side] = last.median_ms;
            let phases = read_phases(&dir.join(".longrun/longrun.log"));
            sessions[side].extend(
                phases
                    .range(next[side]..=last.session)
                    .map(|(_, m)| m.clone()),
            );
            next[side] = last.session + 1;
        }
        let ratio = medians[1] / medians[0].max(f64::MIN_POSITIVE);
        println!(
            "round {}: young {:.1} ms, old {:.1} ms: {ratio:.2}x",
            round + 1,
            medians[0],
            medians[1]
        );
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    let n = ratios.len();
    let median = (ratios[(n - 1) / 2] + ratios[n / 2]) / 2.0;
    if let (Some(low), Some(high)) = (ratios.first(), ratios.last()) {
        println!(
            "paired, session {} against session {}: orchestrator median {median:.2}x (rounds {low:.2}x to {high:.2}x)",
            options.every,
            shape.sessions,
        );
    }
    // Where the difference is: each phase's median over every session of
    // the rounds (a batch's first session, which opens the project, is one
    // in twenty).
    let median_of = |side: &[BTreeMap<String, f64>], phase: &str| {
        let mut v: Vec<f64> = side
            .iter()
            .map(|m| m.get(phase).copied().unwrap_or(0.0))
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let parts: Vec<String> = PHASES
        .iter()
        .chain(&["checks"])
        .map(|p| {
            let (y, o) = (median_of(&sessions[0], p), median_of(&sessions[1], p));
            format!("{p} {y:.1} -> {o:.1} ({:+.1})", o - y)
        })
        .collect();
    println!(
        "paired, by phase (median ms, young -> old): {}",
        parts.join(", ")
    );
}

/// The project after its initializer: `passing` features already done by a
/// human commit, one more feature per session to come.
fn set_up(dir: &Path, root: &Path, shape: &Shape, options: &Options) {
    let total = shape.features;
    let ids: Vec<String> = (1..=total).map(|i| format!("F{i:05}")).collect();
    let line = |id: &str, passes: bool| {
        let (what, check) = match shape.one_file {
            true => (
                format!("done.txt has the line {id}"),
                format!("grep -qx {id} done.txt"),
            ),
            false => (format!("file {id}.txt exists"), format!("test -f {id}.txt")),
        };
        format!(
            r#"{{"id": "{id}", "category": "functional", "description": "{what}", "steps": ["make it"], "check": "{check}", "passes": {passes}}}"#
        )
    };
    let list = |done: usize| {
        let lines: Vec<String> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| line(id, i < done))
            .collect();
        format!("{{\"features\": [\n{}\n]}}\n", lines.join(",\n"))
    };
    let init_calls = vec![
        json!({"name": "write_file", "arguments": {"path": "features.json", "content": list(0)}}),
        json!({"name": "write_file", "arguments": {"path": "init.sh", "content": "#!/usr/bin/env bash\necho ready\n"}}),
        json!({"name": "write_file", "arguments": {"path": "progress.md", "content": "# Progress\n"}}),
        json!({"name": "write_file", "arguments": {"path": "tests/suite.sh", "content": suite(shape.one_file)}}),
    ];
    let init = json!([
        {"tool_calls": init_calls},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "chmod +x init.sh && git add -A && git commit -qm init"}}]},
        {"text": "initialized"}
    ]);
    let work = json!([
        {"tool_calls": [{"name": "bash", "arguments": {"command": work(shape.one_file)}}]},
        {"text": "done"}
    ]);
    let model = root.join("model.json");
    std::fs::write(
        &model,
        json!({"sessions": {"1": init, "*": work}}).to_string(),
    )
    .unwrap();
    std::fs::write(root.join("spec.md"), "# Spec\nOne file per feature.\n").unwrap();
    let out = longrun(root)
        .args(["init", "spec.md", "--dir"])
        .arg(dir)
        .arg("--model")
        .arg(format!("scripted:{}", model.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "init: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A human commit: the first features done, the settings for the run.
    // The data of a large repository: incompressible, 10 kB a file.
    if shape.files > 0 {
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..shape.files {
            let bytes: Vec<u8> = (0..10_000)
                .map(|_| {
                    // xorshift64: as incompressible as random data, and repeatable.
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 24) as u8
                })
                .collect();
            std::fs::write(data.join(format!("f{i:05}")), &bytes).unwrap();
        }
    }
    match shape.one_file {
        true => {
            let lines: String = ids[..shape.passing]
                .iter()
                .map(|id| format!("{id}\n"))
                .collect();
            std::fs::write(dir.join("done.txt"), lines).unwrap();
        }
        false => {
            for id in &ids[..shape.passing] {
                std::fs::write(dir.join(format!("{id}.txt")), "ok\n").unwrap();
            }
        }
    }
    std::fs::write(dir.join("features.json"), list(shape.passing)).unwrap();
    let toml = std::fs::read_to_string(dir.join("longrun.toml")).unwrap();
    let mut toml = toml
        .replacen("steps = 200", "steps = 5", 1)
        .replacen("check_rounds = 3", "check_rounds = 0", 1)
        .replacen("unattended = \"deny\"", "unattended = \"allow\"", 1);
    assert!(toml.contains("unattended = \"allow\""), "{toml}");
    if options.suite {
        toml = toml.replacen("[checks]", "[checks]\nsuite = \"bash tests/suite.sh\"", 1);
    }
    std::fs::write(dir.join("longrun.toml"), toml).unwrap();
    git(dir, &["add", "-A"]);
    git(
        dir,
        &[
            "commit",
            "-qm",
            "benchmark: the first features, the run's settings",
        ],
    );
}

/// The worker's one command: the first feature not passing gets its mark
/// (its file, or its line in done.txt) and flips.
fn work(one_file: bool) -> String {
    let mark = match one_file {
        true => r#"echo "$id" >> done.txt"#,
        false => r#"echo ok > "$id.txt""#,
    };
    format!(
        r#"id=$(grep -m1 '"passes": false' features.json | sed -E 's/.*"id": "([^"]+)".*/\1/') && {mark} && sed -i '0,/"passes": false/s//"passes": true/' features.json && git add -A && git commit -qm "$id""#
    )
}

/// The acceptance suite: every passing feature's mark, one JSON line each.
fn suite(one_file: bool) -> String {
    let test = match one_file {
        true => r#"grep -qx "$id" done.txt"#,
        false => r#"[ -f "$id.txt" ]"#,
    };
    format!(
        r#"#!/usr/bin/env bash
out=${{LONGRUN_SUITE_RESULTS:-/dev/null}}
grep '"passes": true' features.json | sed -E 's/.*"id": "([^"]+)".*/\1/' | while read -r id; do
  if {test}; then p=true; else p=false; fi
  echo "{{\"feature\":\"$id\",\"passed\":$p}}"
done > "$out"
! grep -q '"passed":false' "$out"
"#
    )
}

/// What was measured after a session's verdict.
struct Sample {
    session: u32,
    wall_s: f64,
    fds: usize,
    rss_kib: u64,
    /// Of the RSS, what is not file pages (git's mapped packs are file pages).
    anon_kib: u64,
    longrun_bytes: u64,
    transcript_bytes: u64,
    git_bytes: u64,
    /// The orchestrator's own CPU time (all its threads, not its children)
    /// since the last row, in ms.
    cpu_ms: f64,
    /// The median of the row's [`probe`]s, in ms.
    probe_ms: f64,
}

/// A row's orchestrator figures, for the summary after the run.
struct RowTimes {
    session: u32,
    median_ms: f64,
    cpu_ms: f64,
    probe_ms: f64,
}

/// The machine's speed, measured beside the run: the same fixed work (a
/// 1,015-feature features.json parsed into JSON values and dropped, work
/// of the kind the orchestrator does) timed in this process after every
/// verdict. The run's rows move with the machine too (the worker and the
/// checks, separate processes doing the same work each session, move
/// with them); a row's probe says by how much, so that a change of the
/// machine's pace in the middle of a run is told apart from growth.
struct Probe {
    text: String,
    taken: Vec<f64>,
}

impl Probe {
    fn new() -> Probe {
        let features: Vec<Value> = (1..=1015)
            .map(|i| {
                json!({"id": format!("F{i:05}"), "category": "functional",
                       "description": format!("feature {i}"), "steps": ["make it"],
                       "check": format!("test -f F{i:05}.txt"), "passes": i % 2 == 0})
            })
            .collect();
        Probe {
            text: json!({ "features": features }).to_string(),
            taken: Vec::new(),
        }
    }

    fn take(&mut self) {
        let started = Instant::now();
        let parsed: Value = serde_json::from_str(&self.text).unwrap();
        drop(std::hint::black_box(parsed));
        self.taken.push(started.elapsed().as_secs_f64() * 1000.0);
    }

    /// The median since the last row, and a fresh start.
    fn row(&mut self) -> f64 {
        self.taken.sort_by(f64::total_cmp);
        let median = self.taken.get(self.taken.len() / 2).copied().unwrap_or(0.0);
        self.taken.clear();
        median
    }
}

/// Run `continue --sessions N` under `ulimit -n 256`, printing a row every
/// `every` verdicts; the rows' times.
/// `first`: the number of the first session to come.
fn run(dir: &Path, shape: &Shape, every: usize, first: u32) -> Vec<RowTimes> {
    let sessions = shape.sessions;
    let mut from = first;
    let mut child = Command::new("bash")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_longrun"))
        .args([
            "continue",
            "--json",
            "--sessions",
            &sessions.to_string(),
            "--dir",
        ])
        .arg(dir)
        .env_remove("LONGRUN_MODEL")
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut last = Instant::now();
    let mut last_cpu = cpu_ms(pid);
    let mut rows = Vec::new();
    let mut seen = 0;
    let mut outcome = Value::Null;
    let mut probe = Probe::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let Ok(event) = serde_json::from_str::<Value>(&line.unwrap()) else {
            continue;
        };
        match event["type"].as_str() {
            Some("verdict") => {
                assert_eq!(event["verdict"], "accepted", "{event}");
                seen += 1;
                probe.take();
                if seen % every == 0 || seen == sessions {
                    let wall_s = last.elapsed().as_secs_f64();
                    last = Instant::now();
                    let (fds, rss_kib, anon_kib) = (
                        open_fds(pid),
                        status_kib(pid, "VmRSS:"),
                        status_kib(pid, "RssAnon:"),
                    );
                    let (git_bytes, longrun_bytes) = disk(dir);
                    let cpu_now = cpu_ms(pid);
                    let sample = Sample {
                        session: event["session"].as_u64().unwrap_or(0) as u32,
                        wall_s,
                        fds,
                        rss_kib,
                        anon_kib,
                        longrun_bytes,
                        transcript_bytes: transcripts(dir),
                        git_bytes,
                        cpu_ms: cpu_now - last_cpu,
                        probe_ms: probe.row(),
                    };
                    last_cpu = cpu_now;
                    // The phases line follows the verdict by the cleanup.
                    let mut phases = read_phases(&dir.join(".longrun/longrun.log"));
                    for _ in 0..100 {
                        if phases.contains_key(&sample.session) {
                            break;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        phases = read_phases(&dir.join(".longrun/longrun.log"));
                    }
                    rows.push(print_row(&sample, from, &phases, shape.passing));
                    from = sample.session + 1;
                }
            }
            Some("run_finished") => outcome = event,
            _ => {}
        }
    }
    let status = child.wait().unwrap();
    assert!(status.success(), "continue failed: {outcome}");
    assert_eq!(seen, sessions, "{outcome}");
    rows
}

/// Per session, the milliseconds of each phase the orchestrator logged.
fn read_phases(log: &Path) -> BTreeMap<u32, BTreeMap<String, f64>> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(at) = line.find("session ") else {
            continue;
        };
        let rest = &line[at + 8..];
        let Some((number, phases)) = rest.split_once(" phases: ") else {
            continue;
        };
        let Ok(number) = number.parse::<u32>() else {
            continue;
        };
        let mut map = BTreeMap::new();
        for part in phases.split(", ") {
            let mut words = part.split_whitespace();
            if let (Some(name), Some(ms)) = (words.next(), words.next()) {
                map.insert(name.to_string(), ms.parse().unwrap_or(0.0));
            }
        }
        out.insert(number, map);
    }
    out
}

const PHASES: [&str; 9] = [
    "prepare", "import", "queue", "rules", "checkout", "verify", "record", "cleanup", "worker",
];

fn print_header() {
    print!(
        "{:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "sessions", "wall", "orch", "orch med", "orch cpu", "between"
    );
    for p in PHASES {
        print!(" {p:>8}");
    }
    println!(
        " {:>8} {:>8} {:>5} {:>8} {:>8} {:>10} {:>12} {:>10} {:>6}",
        "checks",
        "passing",
        "fds",
        "RSS MB",
        "anon MB",
        ".longrun/",
        "transcripts",
        ".git/",
        "probe"
    );
}

/// One row: the sessions after `from` up to the sample's. `passing`:
/// features passing before session 2, the first worker session.
fn print_row(
    s: &Sample,
    from: u32,
    phases: &BTreeMap<u32, BTreeMap<String, f64>>,
    passing: usize,
) -> RowTimes {
    let batch: Vec<&BTreeMap<String, f64>> =
        phases.range(from..=s.session).map(|(_, m)| m).collect();
    let n = batch.len().max(1) as f64;
    let mean = |p: &str| {
        batch
            .iter()
            .map(|m| m.get(p).copied().unwrap_or(0.0))
            .sum::<f64>()
            / n
    };
    let total: f64 = batch.iter().map(|m| m.values().sum::<f64>()).sum::<f64>() / n;
    let wall_ms = s.wall_s * 1000.0 / f64::from(s.session + 1 - from);
    let orch = total - mean("worker") - mean("checks");
    // Per session, so that one slow session (a roll-up, the machine busy
    // elsewhere) does not move the row.
    let mut each: Vec<f64> = batch
        .iter()
        .map(|m| {
            let all: f64 = m.values().sum();
            let outside = |p: &str| m.get(p).copied().unwrap_or(0.0);
            all - outside("worker") - outside("checks")
        })
        .collect();
    each.sort_by(f64::total_cmp);
    let median_ms = each.get(each.len() / 2).copied().unwrap_or(0.0);
    let cpu_ms = s.cpu_ms / f64::from(s.session + 1 - from);
    print!(
        "{:>8} {:>8.0} {:>8.1} {:>8.1} {:>8.1} {:>8.1}",
        s.session,
        wall_ms,
        orch,
        median_ms,
        cpu_ms,
        (wall_ms - total).max(0.0)
    );
    for p in PHASES {
        print!(" {:>8.1}", mean(p));
    }
    // Every session is accepted (checked): one more passes each time.
    let passing = passing + s.session as usize - 1;
    println!(
        " {:>8.1} {:>8} {:>5} {:>8.1} {:>8.1} {:>10} {:>12} {:>10} {:>6.2}",
        mean("checks"),
        passing,
        s.fds,
        s.rss_kib as f64 / 1024.0,
        s.anon_kib as f64 / 1024.0,
        mb(s.longrun_bytes),
        mb(s.transcript_bytes),
        mb(s.git_bytes),
        s.probe_ms
    );
    RowTimes {
        session: s.session,
        median_ms,
        cpu_ms,
        probe_ms: s.probe_ms,
    }
}

/// The issue's measure: the orchestrator's time per session at the end of
/// the run against its first row, by the rows' medians and CPU times.
fn print_growth(rows: &[RowTimes]) {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return;
    };
    if rows.len() < 2 {
        return;
    }
    let highest = |f: fn(&RowTimes) -> f64| rows.iter().map(f).fold(f64::MIN, f64::max);
    let ratio = |a: f64, b: f64| if a > 0.0 { b / a } else { 0.0 };
    println!(
        "growth, session {} to {}: orchestrator median {:.1} -> {:.1} ms ({:.2}x; highest row {:.2}x), \
         CPU {:.1} -> {:.1} ms ({:.2}x; highest row {:.2}x)",
        first.session,
        last.session,
        first.median_ms,
        last.median_ms,
        ratio(first.median_ms, last.median_ms),
        ratio(first.median_ms, highest(|r| r.median_ms)),
        first.cpu_ms,
        last.cpu_ms,
        ratio(first.cpu_ms, last.cpu_ms),
        ratio(first.cpu_ms, highest(|r| r.cpu_ms)),
    );
    // Each row's median over its probe: what is left of the growth once
    // the machine's own change of pace is taken out.
    let per_probe = |r: &RowTimes| ratio(r.probe_ms, r.median_ms);
    println!(
        "machine, session {} to {}: probe {:.2} -> {:.2} ms ({:.2}x); orchestrator median per probe {:.2}x (highest row {:.2}x)",
        first.session,
        last.session,
        first.probe_ms,
        last.probe_ms,
        ratio(first.probe_ms, last.probe_ms),
        ratio(per_probe(first), per_probe(last)),
        ratio(
            per_probe(first),
            rows.iter().map(per_probe).fold(f64::MIN, f64::max)
        ),
    );
}

/// `--split`: the run's growth parted into what the project's size accounts
/// for (a fresh run at the last row's size, against the first row) and the
/// rest: history and the process's age (the last row against the fresh run).
fn print_split(rows: &[RowTimes], fresh: &[RowTimes]) {
    let (Some(first), Some(last), Some(alone)) = (rows.first(), rows.last(), fresh.first()) else {
        return;
    };
    let ratio = |a: f64, b: f64| if a > 0.0 { b / a } else { 0.0 };
    println!(
        "split: a fresh run at session {}'s size: median {:.1} ms, CPU {:.1} ms; \
         the size {:.2}x (median) / {:.2}x (CPU) of session {}, history and age {:.2}x / {:.2}x",
        last.session,
        alone.median_ms,
        alone.cpu_ms,
        ratio(first.median_ms, alone.median_ms),
        ratio(first.cpu_ms, alone.cpu_ms),
        first.session,
        ratio(alone.median_ms, last.median_ms),
        ratio(alone.cpu_ms, last.cpu_ms),
    );
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// The CPU time process `pid` has used, its threads but not its children, in ms.
fn cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's name in parentheses: state is field 3, utime 14, stime 15.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect());
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|v| v.parse::<f64>().ok()))
        .sum();
    // SAFETY: sysconf only reads a constant.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    ticks * 1000.0 / per_second
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// A `kB` field of /proc/PID/status.
fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Allocated bytes under `.git/` and `.longrun/`, not following symlinks; a
/// file hard-linked several times counts once, under `.git/` when it is there
/// (clones share git's objects by hard links).
/// Allocated bytes of every session's `transcript.jsonl` (kept for good:
/// the target for `.longrun/` is counted without them).
fn transcripts(dir: &Path) -> u64 {
    std::fs::read_dir(dir.join(".longrun/sessions"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| std::fs::metadata(e.path().join("transcript.jsonl")).ok())
                .map(|m| m.blocks() * 512)
                .sum()
        })
        .unwrap_or(0)
}

fn disk(dir: &Path) -> (u64, u64) {
    fn walk(path: &Path, linked: &mut HashSet<(u64, u64)>) -> u64 {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return 0;
        };
        if meta.nlink() > 1 && !meta.is_dir() && !linked.insert((meta.dev(), meta.ino())) {
            return 0;
        }
        let own = meta.blocks() * 512;
        if !meta.is_dir() {
            return own;
        }
        own + std::fs::read_dir(path)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| walk(&e.path(), linked))
                    .sum::<u64>()
            })
            .unwrap_or(0)
    }
    let mut linked = HashSet::new();
    let git = walk(&dir.join(".git"), &mut linked);
    (git, walk(&dir.join(".longrun"), &mut linked))
}

fn longrun(cwd: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_longrun"));
    cmd.current_dir(cwd)
        .env_remove("LONGRUN_MODEL")
        .env("RUST_LOG", "off");
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
