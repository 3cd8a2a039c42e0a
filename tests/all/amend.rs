//! Amending the contract through the real binary: `features` lists, adds and
//! reopens; `amend` records the contract files a person edited; `retry`
//! reopens a passing feature. Each change is one commit on main with
//! `Longrun-Role: human`, validated first, and refused while a run is going.

use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# Two features\nBuild a and b.\n";

fn two_features() -> String {
    features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")])
}

/// A project whose initializer was accepted and whose session 2 made `a` pass.
fn project_with_a_passing() -> Env {
    let env = Env::new();
    let model = env.model(json!({
        "1": initializer(&two_features()),
        "2": worker(
            &[("a.txt", "done\n")],
            &features(&[("a", true, "test -f a.txt"), ("b", false, "test -f b.txt")]),
        ),
    }));
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(env.log_json()[1]["verdict"], "accepted");
    env
}

/// main's features.json, parsed: id -> (passes, check).
fn main_features(env: &Env) -> Vec<(String, bool, String)> {
    let v: Value = serde_json::from_str(&env.on_main("features.json").unwrap()).unwrap();
    v["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["id"].as_str().unwrap().to_string(),
                f["passes"].as_bool().unwrap(),
                f["check"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The trailers of main's last commit.
fn last_trailers(env: &Env) -> String {
    env.git(&["log", "-1", "--format=%(trailers:only,unfold)", "main"])
}

fn ok(out: &std::process::Output) -> String {
    assert!(out.status.success(), "{}", text(out));
    stdout(out)
}

#[test]
fn features_lists_each_feature_with_its_state() {
    let env = project_with_a_passing();
    let list = ok(&env.run(&["features", "--dir", &env.dir_arg()]));
    let row = |id: &str| {
        list.lines()
            .find(|l| l.starts_with(&format!("{id} ")))
            .unwrap_or_else(|| panic!("no row {id}: {list}"))
            .to_string()
    };
    assert!(
        row("a").contains("yes") && row("a").contains("test -f a.txt"),
        "{list}"
    );
    assert!(
        row("b").contains("no") && row("b").contains("open"),
        "{list}"
    );
    let json: Value = serde_json::from_str(&ok(&env.run(&[
        "features",
        "--json",
        "--dir",
        &env.dir_arg(),
    ])))
    .unwrap();
    assert_eq!(json[0]["id"], "a");
    assert_eq!(json[0]["passes"], true);
    assert_eq!(json[0]["attempts"], 1);
    assert_eq!(json[1]["stuck"], false);
}

#[test]
fn features_add_records_a_human_commit_with_the_feature() {
    let env = project_with_a_passing();
    let before = env.git(&["rev-parse", "main"]);
    let out = env.run(&[
        "features",
        "add",
        "--id",
        "c",
        "--description",
        "the c file",
        "--check",
        "test -f c.txt",
        "--dir",
        &env.dir_arg(),
    ]);
    ok(&out);
    assert_eq!(
        main_features(&env).last().unwrap(),
        &("c".to_string(), false, "test -f c.txt".to_string())
    );
    assert_eq!(
        env.git(&["rev-parse", "main^"]),
        before,
        "one commit on main"
    );
    let trailers = last_trailers(&env);
    assert!(trailers.contains("Longrun-Role: human"), "{trailers}");
    assert!(trailers.contains("Longrun-Contract: add"), "{trailers}");
    assert!(trailers.contains("Longrun-Feature: c"), "{trailers}");
    assert!(
        trailers.contains("Longrun-Reason: added feature c: the c file"),
        "{trailers}"
    );
    // The sessions' record is untouched: the human commit is no session.
    assert_eq!(env.log_json().len(), 2);
}

#[test]
fn an_added_feature_whose_check_already_passes_is_refused() {
    let env = project_with_a_passing();
    let before = env.git(&["rev-parse", "main"]);
    // a.txt exists on main already: this check is vacuous.
    let out = env.run(&[
        "features",
        "add",
        "--id",
        "c",
        "--description",
        "c",
        "--check",
        "test -f a.txt",
        "--dir",
        &env.dir_arg(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("vacuous check: feature c"),
        "{}",
        text(&out)
    );
    assert_eq!(env.git(&["rev-parse", "main"]), before, "main moved");
    // A duplicate id and a feature without a check are refused too.
    let out = env.run(&[
        "features",
        "add",
        "--id",
        "a",
        "--description",
        "again",
        "--check",
        "false",
        "--dir",
        &env.dir_arg(),
    ]);
    assert!(
        stderr(&out).contains("already has a feature `a`"),
        "{}",
        text(&out)
    );
    let out = env.run(&[
        "features",
        "add",
        "--id",
        "d",
        "--description",
        "d",
        "--check",
        " ",
        "--dir",
        &env.dir_arg(),
    ]);
    assert!(stderr(&out).contains("`d` has no check"), "{}", text(&out));
    assert_eq!(env.git(&["rev-parse", "main"]), before, "main moved");
}

#[test]
fn reopen_and_retry_set_a_passing_feature_back_to_failing() {
    let env = project_with_a_passing();
    ok(&env.run(&[
        "features",
        "reopen",
        "a",
        "-m",
        "the output is wrong",
        "--dir",
        &env.dir_arg(),
    ]));
    assert!(!main_features(&env)[0].1, "a still passes");
    let trailers = last_trailers(&env);
    assert!(trailers.contains("Longrun-Role: human"), "{trailers}");
    assert!(trailers.contains("Longrun-Contract: reopen"), "{trailers}");
    assert!(
        trailers.contains("Longrun-Reason: the output is wrong"),
        "{trailers}"
    );
    // The work tree follows main.
    let text_on_disk = std::fs::read_to_string(env.project().join("features.json")).unwrap();
    assert_eq!(Some(text_on_disk), env.on_main("features.json"));
    // Reopening what does not pass says so.
    let out = env.run(&["features", "reopen", "a", "--dir", &env.dir_arg()]);
    assert!(stderr(&out).contains("does not pass"), "{}", text(&out));

    let env = project_with_a_passing();
    let out = ok(&env.run(&["retry", "a", "--dir", &env.dir_arg()]));
    assert!(out.contains("open again"), "{out}");
    assert!(!main_features(&env)[0].1, "retry left a passing");
    assert!(last_trailers(&env).contains("Longrun-Contract: reopen"));
    let status: Value = serde_json::from_str(&ok(&env.run(&[
        "status",
        "--json",
        "--dir",
        &env.dir_arg(),
    ])))
    .unwrap();
    assert_eq!(status["passing"], 0, "{status:#}");
}

#[test]
fn amend_records_the_edited_contract_files_and_leaves_the_rest() {
    let env = project_with_a_passing();
    let project = env.project();
    std::fs::write(
        project.join("SPEC.md"),
        "# Two features\nBuild a, b and c.\n",
    )
    .unwrap();
    let mut list: Value =
        serde_json::from_str(&std::fs::read_to_string(project.join("features.json")).unwrap())
            .unwrap();
    list["features"].as_array_mut().unwrap().push(json!({
        "id": "c", "description": "c", "check": "test -f c.txt", "passes": false
    }));
    std::fs::write(project.join("features.json"), list.to_string()).unwrap();
    std::fs::write(project.join("notes.txt"), "mine\n").unwrap();
    let out = ok(&env.run(&["amend", "-m", "c was forgotten", "--dir", &env.dir_arg()]));
    assert!(out.contains("notes.txt"), "names what it left: {out}");
    assert_eq!(
        env.on_main("SPEC.md").unwrap(),
        "# Two features\nBuild a, b and c.\n"
    );
    assert_eq!(main_features(&env)[2].0, "c");
    assert_eq!(
        env.on_main("notes.txt"),
        None,
        "a file outside the contract was recorded"
    );
    let trailers = last_trailers(&env);
    assert!(trailers.contains("Longrun-Role: human"), "{trailers}");
    assert!(trailers.contains("Longrun-Contract: amend"), "{trailers}");
    assert!(
        trailers.contains("Longrun-Reason: c was forgotten"),
        "{trailers}"
    );
    assert!(
        trailers.contains("Longrun-Reason: changed SPEC.md"),
        "{trailers}"
    );
    assert!(
        trailers.contains("Longrun-Reason: changed features.json"),
        "{trailers}"
    );

    // An amended list is validated: a feature without a check is refused, main stays.
    let before = env.git(&["rev-parse", "main"]);
    let mut list = list.clone();
    list["features"][1].as_object_mut().unwrap().remove("check");
    std::fs::write(project.join("features.json"), list.to_string()).unwrap();
    let out = env.run(&["amend", "-m", "drop a check", "--dir", &env.dir_arg()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("`b` has no check"), "{}", text(&out));
    assert_eq!(env.git(&["rev-parse", "main"]), before);
}

#[test]
fn amend_is_refused_while_a_run_holds_the_lock() {
    let env = project_with_a_passing();
    let project = env.project();
    std::fs::write(project.join("SPEC.md"), "# changed\n").unwrap();
    let lock = project.join(".longrun/lock");
    // One process holds the lock, as a run would: killing it frees the lock.
    let mut holder = Command::new("bash")
        .args(["-c", "exec 9>>\"$0\" && flock 9 && exec sleep 60"])
        .arg(&lock)
        .stdin(Stdio::null())
        .spawn()
        .expect("bash");
    // Wait until the lock is held.
    for _ in 0..100 {
        let free = Command::new("flock")
            .args(["-n"])
            .arg(&lock)
            .arg("true")
            .status()
            .unwrap()
            .success();
        if !free {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let before = env.git(&["rev-parse", "main"]);
    let out = env.run(&["amend", "-m", "why", "--dir", &env.dir_arg()]);
    let reopen = env.run(&["features", "reopen", "a", "--dir", &env.dir_arg()]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let said = stderr(&out);
    assert!(said.contains("while a run is going"), "{said}");
    assert!(said.contains("longrun stop"), "names the fix: {said}");
    assert!(
        stderr(&reopen).contains("while a run is going"),
        "{}",
        text(&reopen)
    );
    assert_eq!(env.git(&["rev-parse", "main"]), before);
    // Once the run is gone, the same amend is recorded.
    ok(&env.run(&["amend", "-m", "why", "--dir", &env.dir_arg()]));
    assert_eq!(env.on_main("SPEC.md").unwrap(), "# changed\n");
}

#[test]
fn after_an_amend_of_an_acceptance_test_verification_runs_the_new_one() {
    let env = Env::new();
    let list = features(&[("a", false, "bash tests/check_a.sh")]);
    let init = json!([
        turn(vec![
            write_file("features.json", &list),
            write_file("tests/check_a.sh", "test -f a.txt\n"),
            write_file("init.sh", "#!/usr/bin/env bash\necho ready\n"),
            write_file("progress.md", "# Progress\n"),
        ]),
        turn(vec![bash(
            "chmod +x init.sh && git add -A && git commit -qm init"
        )]),
        done("initialized"),
    ]);
    let flipped = features(&[("a", true, "bash tests/check_a.sh")]);
    let model = env.model(json!({
        "1": init,
        "2": worker(&[("a.txt", "v1\n")], &flipped),
    }));
    ok(&env.init(SPEC, &model));
    let project = env.project();
    // The tests directory joins the contract, then its test is made stricter.
    let toml = std::fs::read_to_string(project.join("longrun.toml")).unwrap();
    let toml = if toml.contains("protected") {
        toml.replacen("protected = [", "protected = [\"tests\", ", 1)
    } else {
        format!("{toml}\n[run]\nprotected = [\"tests\", \"SPEC.md\", \"longrun.toml\"]\n")
    };
    std::fs::write(project.join("longrun.toml"), &toml).unwrap();
    ok(&env.run(&[
        "amend",
        "-m",
        "the tests are the contract",
        "--dir",
        &env.dir_arg(),
    ]));
    std::fs::write(project.join("tests/check_a.sh"), "grep -q v2 a.txt\n").unwrap();
    ok(&env.run(&["amend", "-m", "a must say v2", "--dir", &env.dir_arg()]));
    assert_eq!(
        env.on_main("tests/check_a.sh").unwrap(),
        "grep -q v2 a.txt\n"
    );
    // The worker writes v1, which the old test took and the new one does not.
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.log_json();
    assert_eq!(log[1]["verdict"], "rejected", "{:#}", log[1]);
    assert!(
        log[1]["reasons"].to_string().contains("check_a.sh"),
        "{:#}",
        log[1]
    );
}
