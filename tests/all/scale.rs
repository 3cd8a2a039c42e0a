//! Long runs: history read incrementally, bounded descriptors, compaction,
//! `longrun gc`, the disk `status` shows and `[checks] suite`.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

/// An accepted initializer over features f1..f3 (checks `test -f fN.txt`).
fn three_features(env: &Env, workers: &[(&str, Value)]) {
    let list = features(&[
        ("f1", false, "test -f f1.txt"),
        ("f2", false, "test -f f2.txt"),
        ("f3", false, "test -f f3.txt"),
    ]);
    let mut sessions = json!({"1": initializer(&list)});
    for (n, turns) in workers {
        sessions[*n] = turns.clone();
    }
    let out = env.init("# Spec\nThree files.\n", &env.model(sessions));
    assert!(out.status.success(), "{}", text(&out));
}

fn passing(done: &[&str]) -> String {
    let items: Vec<(&str, bool, &str)> = [
        ("f1", "test -f f1.txt"),
        ("f2", "test -f f2.txt"),
        ("f3", "test -f f3.txt"),
    ]
    .into_iter()
    .map(|(id, check)| (id, done.contains(&id), check))
    .collect();
    features(&items)
}

/// A worker that makes `id`'s file, marks `ids` passing, and deletes f1.txt.
fn makes_and_deletes_f1(id: &str, ids: &[&str]) -> Value {
    let n = id.trim_start_matches('f');
    json!([
        turn(vec![
            write_file(&format!("{id}.txt"), &format!("{n}\n")),
            write_file("features.json", &passing(ids)),
        ]),
        turn(vec![bash(
            "git rm -q f1.txt && git add -A && git commit -qm work"
        )]),
        done("done"),
    ])
}

fn packs(project: &Path) -> usize {
    std::fs::read_dir(project.join(".git/objects/pack"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".pack"))
                .count()
        })
        .unwrap_or(0)
}

/// Run longrun under `ulimit -n LIMIT`.
fn run_limited(env: &Env, limit: u32, args: &[&str]) -> std::process::Output {
    let cmd = env.longrun();
    let program = cmd.get_program().to_owned();
    let mut bash = std::process::Command::new("bash");
    bash.current_dir(env.root.path())
        .env_remove("LONGRUN_MODEL")
        .arg("-c")
        .arg(format!("ulimit -n {limit} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(args);
    bash.output().expect("run longrun under a descriptor limit")
}

#[test]
fn a_history_of_many_packs_is_read_under_a_low_descriptor_limit_and_rolled_up() {
    let env = Env::new();
    three_features(
        &env,
        &[("2", worker(&[("f1.txt", "1\n")], &passing(&["f1"])))],
    );
    let project = env.project();
    // 150 commits on main, each in a pack of its own.
    env.git(&["config", "gc.auto", "0"]);
    for i in 0..150 {
        env.git(&["commit", "-q", "--allow-empty", "-m", &format!("note {i}")]);
        env.git(&["repack", "-q"]);
    }
    assert!(packs(&project) > 150);
    let status = run_limited(&env, 64, &["status", "--dir", &env.dir_arg()]);
    assert!(status.status.success(), "{}", text(&status));
    assert!(stdout(&status).contains("0/3 features passing"));
    // A session places its channels at fixed descriptors below 256, the
    // issue's limit for a whole run.
    let out = run_limited(
        &env,
        256,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "1"],
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(stdout(&out).contains("accepted"), "{}", text(&out));
    assert!(
        packs(&project) <= 24,
        "the packs were not rolled up: {}",
        packs(&project)
    );
    let log = env.log_json();
    assert_eq!(
        log.last().map(|s| s["verdict"].clone()),
        Some(json!("accepted"))
    );
}

/// The orchestrator's open descriptors after each session, from the
/// `session N resources: fds M, ...` lines of `.longrun/longrun.log`.
fn descriptors_per_session(project: &Path) -> Vec<(u32, usize)> {
    let log = std::fs::read_to_string(project.join(".longrun/longrun.log")).unwrap();
    log.lines()
        .filter_map(|l| {
            let rest = &l[l.find("session ")? + 8..];
            let (n, rest) = rest.split_once(" resources: fds ")?;
            let fds = rest.split(',').next()?.parse().ok()?;
            Some((n.parse().ok()?, fds))
        })
        .collect()
}

#[test]
fn open_descriptors_stay_flat_across_sessions_while_packs_pile_up() {
    let env = Env::new();
    three_features(
        &env,
        &[
            ("2", worker(&[("f1.txt", "1\n")], &passing(&["f1"]))),
            ("3", worker(&[("f2.txt", "2\n")], &passing(&["f1", "f2"]))),
            (
                "4",
                worker(&[("f3.txt", "3\n")], &passing(&["f1", "f2", "f3"])),
            ),
        ],
    );
    // Far more packs than the orchestrator may keep open: a history as
    // many sessions leave it before it is rolled up.
    env.git(&["config", "gc.auto", "0"]);
    for i in 0..100 {
        env.git(&["commit", "-q", "--allow-empty", "-m", &format!("note {i}")]);
        env.git(&["repack", "-q"]);
    }
    let out = run_limited(
        &env,
        256,
        &["continue", "--dir", &env.dir_arg(), "--sessions", "3"],
    );
    assert!(out.status.success(), "{}", text(&out));
    // Session 1 is the initializer's, in another process.
    let fds: Vec<(u32, usize)> = descriptors_per_session(&env.project())
        .into_iter()
        .filter(|(n, _)| *n > 1)
        .collect();
    let sessions: Vec<u32> = fds.iter().map(|(n, _)| *n).collect();
    assert_eq!(sessions, [2, 3, 4], "{fds:?}");
    let first = fds[0].1;
    for (n, count) in &fds {
        assert!(*count < 100, "session {n}: {count} descriptors open");
        assert!(
            *count <= first,
            "descriptors grew from {first} after session 2 to {count} after session {n}"
        );
    }
}

#[test]
fn gc_prunes_old_sessions_but_not_main_or_transcripts_and_status_shows_the_disk() {
    let env = Env::new();
    three_features(
        &env,
        &[
            ("2", worker(&[("wrong.txt", "x\n")], &passing(&["f1"]))),
            ("3", worker(&[("f1.txt", "1\n")], &passing(&["f1"]))),
            ("4", worker(&[("f2.txt", "2\n")], &passing(&["f1", "f2"]))),
        ],
    );
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "3"]);
    assert!(out.status.success(), "{}", text(&out));
    let before = env.log_json();
    assert_eq!(before.len(), 4);
    let status = env.run(&["status", "--dir", &env.dir_arg()]);
    assert!(
        stdout(&status).contains("disk: .longrun/ "),
        "{}",
        text(&status)
    );
    let status = env.run(&["status", "--dir", &env.dir_arg(), "--json"]);
    let value: Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert!(value["disk"]["git_bytes"].as_u64().unwrap() > 0);

    let out = env.run(&["gc", "--dir", &env.dir_arg(), "--keep", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("pruned 3 session ref(s)"),
        "{}",
        text(&out)
    );
    assert_eq!(env.log_json(), before, "main's history changed");
    let refs = env.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/longrun/sessions",
    ]);
    assert_eq!(refs.trim(), "refs/longrun/sessions/0004");
    let sessions = env.project().join(".longrun/sessions");
    for n in ["0001", "0002", "0003"] {
        assert!(sessions.join(n).join("transcript.jsonl").exists(), "{n}");
        assert!(!sessions.join(n).join("worker.json").exists(), "{n}");
    }
    assert!(
        sessions.join("0004/worker.json").exists(),
        "the newest is kept"
    );
    assert_eq!(env.on_main("f2.txt").as_deref(), Some("2\n"));
    let packs_left = packs(&env.project());
    assert_eq!(packs_left, 1, "gc repacks into one pack");
    let show = env.run(&["show", "2", "--dir", &env.dir_arg()]);
    assert!(show.status.success(), "{}", text(&show));
}

#[test]
fn a_suite_runs_once_and_names_the_regression_by_feature() {
    let env = Env::new();
    // Session 3 claims f2 but deletes f1.txt: the suite must blame f1.
    let breaks_f1 = makes_and_deletes_f1("f2", &["f1", "f2"]);
    three_features(
        &env,
        &[
            ("2", worker(&[("f1.txt", "1\n")], &passing(&["f1"]))),
            ("3", breaks_f1),
        ],
    );
    let suite = r#"r=0; for f in f1 f2 f3; do if [ -f $f.txt ]; then p=true; else p=false; r=1; fi; echo "{\"feature\":\"$f\",\"passed\":$p}" >> "$LONGRUN_SUITE_RESULTS"; done; exit $r"#;
    let toml_path = env.project().join("longrun.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    let toml = toml.replacen("[checks]", &format!("[checks]\nsuite = '{suite}'"), 1);
    assert!(
        toml.contains("suite ="),
        "no [checks] table in longrun.toml"
    );
    std::fs::write(&toml_path, toml).unwrap();
    env.git(&["commit", "-qam", "a suite for the regressions"]);

    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--sessions", "2"]);
    assert!(text(&out).contains("session 3"), "{}", text(&out));
    let log = env.log_json();
    let s3 = log.iter().find(|s| s["session"] == 3).expect("session 3");
    assert_eq!(s3["verdict"], "rejected", "{s3}");
    let reasons = s3["reasons"].to_string();
    assert!(
        reasons.contains("regression: this session broke feature f1"),
        "{reasons}"
    );
    assert!(!reasons.contains("feature f3"), "{reasons}");
    let check_of_f1 = env
        .transcript(3)
        .into_iter()
        .find(|e| e.to_string().contains("regression check of f1"))
        .expect("a check entry for f1");
    assert!(
        check_of_f1.to_string().contains("LONGRUN_SUITE_RESULTS"),
        "{check_of_f1}"
    );
}

#[test]
fn regressions_that_pass_are_one_line_and_one_that_fails_is_named() {
    let env = Env::new();
    // Sessions 2 and 3 make f1 and f2; session 4 makes f3 and deletes f1.txt.
    let breaks_f1 = makes_and_deletes_f1("f3", &["f1", "f2", "f3"]);
    three_features(
        &env,
        &[
            ("2", worker(&[("f1.txt", "1\n")], &passing(&["f1"]))),
            ("3", worker(&[("f2.txt", "2\n")], &passing(&["f1", "f2"]))),
            ("4", breaks_f1),
        ],
    );
    let out = env.run(&[
        "continue",
        "--json",
        "--dir",
        &env.dir_arg(),
        "--sessions",
        "3",
    ]);
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let checks_of = |n: u32| -> Vec<String> {
        events
            .iter()
            .filter(|e| e["type"] == "check_result" && e["session"] == n)
            .map(|e| format!("{} {}", e["name"].as_str().unwrap_or(""), e["passed"]))
            .collect()
    };
    // Session 3: f1's check passed again, as one line.
    let three = checks_of(3);
    assert!(
        three.contains(&"regression checks: 1 passing feature still passes true".to_string()),
        "{three:?}"
    );
    assert!(
        !three.iter().any(|c| c.starts_with("regression check of")),
        "{three:?}"
    );
    let entries: Vec<String> = env
        .transcript(3)
        .into_iter()
        .filter(|e| e["type"] == "check" || e.get("passed").is_some())
        .map(|e| e.to_string())
        .collect();
    assert_eq!(
        entries.iter().filter(|e| e.contains("regression")).count(),
        1,
        "{entries:?}"
    );
    // Session 4: f2 still passes (one line), f1 is named as broken.
    let four = checks_of(4);
    assert!(
        four.contains(&"regression checks: 1 passing feature still passes true".to_string()),
        "{four:?}"
    );
    assert!(
        four.contains(&"regression check of f1 false".to_string()),
        "{four:?}"
    );
    let log = env.log_json();
    let s4 = log.iter().find(|s| s["session"] == 4).expect("session 4");
    assert_eq!(s4["verdict"], "rejected", "{s4}");
    assert!(
        s4["reasons"].to_string().contains("broke feature f1"),
        "{s4}"
    );
}
