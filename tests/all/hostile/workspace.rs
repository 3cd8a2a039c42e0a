//! The session's workspace and its git metadata: nothing a session commits
//! or leaves in its clone can alias the orchestrator's state, be followed as
//! a symlink, be opened as a repository by the orchestrator, or stop the run.

use serde_json::{json, Value};

use crate::common::*;

const SPEC: &str = "# Two features\nBuild a and b.\n";

fn two() -> String {
    features(&[("a", false, "test -f a.txt"), ("b", false, "test -f b.txt")])
}

/// The feature list with the given features passing.
fn passing(ids: &[&str]) -> String {
    features(&[
        ("a", ids.contains(&"a"), "test -f a.txt"),
        ("b", ids.contains(&"b"), "test -f b.txt"),
    ])
}

/// An honest worker for `id` (which must be the next feature), after `first` more turns.
fn honest(id: &str, done_before: &[&str], first: Vec<Value>) -> Value {
    let mut ids: Vec<&str> = done_before.to_vec();
    ids.push(id);
    let mut turns = first;
    turns.push(turn(vec![
        write_file(&format!("{id}.txt"), "done\n"),
        write_file("features.json", &passing(&ids)),
    ]));
    turns.push(turn(vec![bash("git add -A && git commit -qm work")]));
    turns.push(done("done"));
    Value::Array(turns)
}

/// A project whose initializer was accepted, the next sessions scripted as `workers` (2, 3, ...).
fn project(workers: Vec<Value>) -> Env {
    project_with(initializer(&two()), workers, "")
}

/// A project initialized by `init` with `toml_extra` in its longrun.toml.
fn project_with(init: Value, workers: Vec<Value>, toml_extra: &str) -> Env {
    setup(Env::new(), init, workers, toml_extra)
}

/// [`project_with`] in `env`, for sessions that need its paths.
fn setup(env: Env, init: Value, workers: Vec<Value>, toml_extra: &str) -> Env {
    let mut sessions = serde_json::Map::new();
    sessions.insert("1".into(), init);
    for (i, w) in workers.into_iter().enumerate() {
        sessions.insert((i + 2).to_string(), w);
    }
    let model = env.model(Value::Object(sessions));
    // A hostile session is not held back by the permission rules (which
    // guard against mistakes, not attacks): every command is allowed here.
    let toml = format!(
        "[model]\nprovider = \"scripted\"\nname = \"{}\"\n\n\
         [permissions]\nunattended = \"allow\"\n\n{toml_extra}",
        model.trim_start_matches("scripted:")
    );
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

/// A hostile session `n` ended `want` for `reason`, changing nothing on main but
/// its verdict commit, and the next session's honest work on the same feature landed.
fn assert_refused_then_control(env: &Env, before: &str, n: u64, want: &str, reason: &str) {
    assert_verdict(env, n, want, reason);
    assert_transcript_verdict(env, n as u32, want);
    let after = env.git(&["rev-parse", "main~1"]);
    // main moved by the control's merge only; the hostile session's commit is empty.
    let hostile = env.git(&["log", "--format=%H", "--first-parent", "-2", "main"]);
    let hostile = hostile.lines().nth(1).unwrap().to_string();
    assert_eq!(
        env.git(&["rev-parse", &format!("{hostile}^{{tree}}")]),
        env.git(&["rev-parse", &format!("{before}^{{tree}}")]),
        "the {want} session changed main's tree"
    );
    assert_eq!(after.trim(), hostile);
    assert_verdict(env, n + 1, "accepted", "");
    assert_eq!(env.on_main("a.txt").as_deref(), Some("done\n"));
    let fsck = crate::common::git_command()
        .arg("-C")
        .arg(env.project())
        .args(["fsck", "--full", "--no-dangling"])
        .output()
        .unwrap();
    assert!(fsck.status.success(), "{}", text(&fsck));
}

/// Session `n`'s verdict and reasons from `longrun log`.
fn verdict(env: &Env, n: u64) -> (String, String) {
    let log = env.log_json();
    let s = log
        .iter()
        .find(|s| s["session"] == n)
        .unwrap_or_else(|| panic!("no session {n} in {log:#?}"));
    (
        s["verdict"].as_str().unwrap_or("").to_string(),
        s["reasons"].to_string(),
    )
}

fn assert_verdict(env: &Env, n: u64, want: &str, reason: &str) {
    let (got, reasons) = verdict(env, n);
    assert_eq!(got, want, "session {n}: {reasons}");
    assert!(
        reasons.contains(reason),
        "session {n}: reasons {reasons} lack {reason:?}"
    );
}

/// Session `n`'s transcript records the verdict `want`.
fn assert_transcript_verdict(env: &Env, n: u32, want: &str) {
    let t = env.transcript(n);
    assert!(
        t.iter()
            .any(|e| e["type"] == "verdict" && e["verdict"] == want),
        "session {n}'s transcript lacks verdict {want}"
    );
}

// ---- Session state and the work tree ----

by_both!(
    committed_paths_under_dot_longrun_in_any_case_are_rejected_and_the_run_goes_on,
    committed_paths_under_dot_longrun_in_any_case_are_rejected_and_the_run_goes_on_as_uid_65534,
    reserved_paths
);

fn reserved_paths(by: By) {
    let plant = bash(
        "mkdir -p .longrun/sessions/0009 .LONGRUN && echo 1 > .longrun/sessions/0009/worker.pid \
         && echo x > .LONGRUN/x && git add -Af . && git commit -qm plant",
    );
    // git itself refuses to add `.Git`; plumbing makes the tree anyway.
    let craft = bash(
        "blob=$(echo y | git hash-object -w --stdin) \
         && sub=$(printf '100644 blob %s\tconfig\n' $blob | git mktree) \
         && top=$( (git ls-tree HEAD; printf '040000 tree %s\t.Git.\n' $sub) | git mktree) \
         && git update-ref HEAD $(git commit-tree $top -p HEAD -m crafted)",
    );
    let env = project(vec![
        honest("a", &[], vec![turn(vec![plant]), turn(vec![craft])]),
        honest("a", &[], vec![]),
    ]);
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "rejected", ".longrun/sessions/0009/worker.pid");
    assert_verdict(&env, 2, "rejected", ".LONGRUN/x");
    assert_verdict(&env, 2, "rejected", ".Git./config");
    assert_transcript_verdict(&env, 2, "rejected");
    // Nothing of it reached main or the project's state.
    assert!(env.on_main(".LONGRUN/x").is_none());
    assert!(!env.project().join(".longrun/sessions/0009").exists());
    // The control: the same feature done honestly by the next session lands.
    assert_verdict(&env, 3, "accepted", "");
    assert_eq!(env.on_main("a.txt").as_deref(), Some("done\n"));
}

by_both!(
    the_work_tree_sync_never_writes_through_a_symlink,
    the_work_tree_sync_never_writes_through_a_symlink_as_uid_65534,
    sync_through_symlink
);

fn sync_through_symlink(by: By) {
    let env = Env::new();
    let outside = env.path("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let link = format!(
        "ln -s {} lib && git add lib && git commit -qm link",
        outside.display()
    );
    let through = bash(
        "git rm -q lib && mkdir lib && printf '#!/bin/sh\\necho pwned\\n' > lib/payload \
         && chmod +x lib/payload && git add -A && git commit -qm payload",
    );
    let model = env.model(json!({
        "1": initializer(&two()),
        "2": honest("a", &[], vec![turn(vec![bash(&link)])]),
        "3": honest("b", &["a"], vec![turn(vec![through])]),
    }));
    assert!(env.init(SPEC, &model).status.success());
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "accepted", "");
    // The user checks the symlink out in the project (as `git checkout` does).
    let _ = std::fs::remove_file(env.project().join("lib"));
    env.git(&["checkout", "--", "lib"]);
    assert!(std::fs::symlink_metadata(env.project().join("lib"))
        .unwrap()
        .file_type()
        .is_symlink());
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    // The session's work is accepted and on main, but nothing was written outside.
    assert_verdict(&env, 3, "accepted", "");
    assert!(env.on_main("lib/payload").is_some());
    assert!(
        !outside.join("payload").exists(),
        "the sync wrote through the project's symlink"
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(std::fs::symlink_metadata(env.project().join("lib"))
        .unwrap()
        .file_type()
        .is_symlink());
}

// ---- The session's git metadata ----

/// Turns that run `body` as a script (the permission rules, which are not a
/// security layer, would ask about some of it on a command line).
fn script(body: &str) -> Vec<Value> {
    vec![
        turn(vec![write_file("attack.sh", body)]),
        turn(vec![bash("bash attack.sh; rm -f attack.sh")]),
    ]
}

/// `turns`, then the end of the session: no honest work.
fn hostile(turns: Vec<Value>) -> Value {
    let mut turns = turns;
    turns.push(done("done"));
    Value::Array(turns)
}

/// Uncommitted work on `a` that looks finished: what a WIP commit would take.
fn uncommitted_a() -> Value {
    turn(vec![
        write_file("a.txt", "done\n"),
        write_file("features.json", &passing(&["a"])),
    ])
}

/// Session 2 runs `attack` (made with the env's paths), session 3 is honest on `a`.
fn attack_then_control_by(by: By, attack: impl Fn(&Env) -> Vec<Value>) -> (Env, String) {
    let env = Env::new();
    let attack = hostile(attack(&env));
    let env = setup(
        env,
        initializer(&two()),
        vec![attack, honest("a", &[], vec![])],
        "",
    );
    let before = env.git(&["rev-parse", "main"]).trim().to_string();
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    (env, before)
}

by_both!(
    a_dot_git_file_pointing_at_the_project_fails_the_session_and_lands_nothing,
    a_dot_git_file_pointing_at_the_project_fails_the_session_and_lands_nothing_as_uid_65534,
    dot_git_file
);

fn dot_git_file(by: By) {
    let (env, before) = attack_then_control_by(by, |env| {
        let git = env.project().join(".git");
        vec![
            uncommitted_a(),
            turn(vec![bash(&format!(
                "rm -rf .git && printf 'gitdir: {}\\n' > .git",
                git.display()
            ))]),
        ]
    });
    assert_refused_then_control(&env, &before, 2, "failed", "a .git file");
    assert!(
        !env.git(&["log", "--format=%s", "main"]).contains("WIP"),
        "a WIP commit landed on main"
    );
    assert!(env
        .git(&["for-each-ref", "refs/longrun/sessions/0002"])
        .is_empty());
}

by_both!(
    core_worktree_in_the_clone_fails_the_session,
    core_worktree_in_the_clone_fails_the_session_as_uid_65534,
    core_worktree
);

fn core_worktree(by: By) {
    let (env, before) = attack_then_control_by(by, |_| {
        vec![
            uncommitted_a(),
            turn(vec![bash("git config core.worktree /etc")]),
        ]
    });
    assert_refused_then_control(&env, &before, 2, "failed", "core.worktree");
    assert!(env
        .git(&["for-each-ref", "refs/longrun/sessions/0002"])
        .is_empty());
}

by_both!(
    a_commondir_in_the_clone_fails_the_session,
    a_commondir_in_the_clone_fails_the_session_as_uid_65534,
    commondir
);

fn commondir(by: By) {
    let (env, before) = attack_then_control_by(by, |env| {
        vec![
            uncommitted_a(),
            turn(vec![bash(&format!(
                "echo {} > .git/commondir",
                env.project().join(".git").display()
            ))]),
        ]
    });
    assert_refused_then_control(&env, &before, 2, "failed", "commondir");
}

by_both!(
    a_garbage_head_fails_the_session,
    a_garbage_head_fails_the_session_as_uid_65534,
    garbage_head
);

fn garbage_head(by: By) {
    let (env, before) = attack_then_control_by(by, |_| {
        vec![
            uncommitted_a(),
            turn(vec![bash(
                "git add -A && git commit -qm work && echo 'ref: refs/heads/../../x garbage' > .git/HEAD",
            )]),
        ]
    });
    assert_refused_then_control(&env, &before, 2, "failed", "could not be kept");
}

by_both!(
    a_corrupt_object_fails_the_session,
    a_corrupt_object_fails_the_session_as_uid_65534,
    corrupt_object
);

fn corrupt_object(by: By) {
    let (env, before) = attack_then_control_by(by, |_| {
        vec![
            uncommitted_a(),
            turn(vec![bash(
                "git add -A && git commit -qm work && h=$(git rev-parse HEAD) \
                 && f=.git/objects/$(echo $h | cut -c1-2)/$(echo $h | cut -c3-) && chmod u+w $f && echo junk > $f",
            )]),
        ]
    });
    assert_refused_then_control(&env, &before, 2, "failed", "could not be kept");
}

/// Every file under the project's `.git/objects` with its contents.
fn object_files(env: &Env) -> Vec<(String, Vec<u8>, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut dirs = vec![env.project().join(".git/objects")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                dirs.push(p);
            } else {
                out.push((
                    p.display().to_string(),
                    std::fs::read(&p).unwrap(),
                    meta.nlink(),
                ));
            }
        }
    }
    out.sort();
    out
}

by_both!(
    the_projects_objects_cannot_be_rewritten_or_hard_linked_from_a_session,
    the_projects_objects_cannot_be_rewritten_or_hard_linked_from_a_session_as_uid_65534,
    objects_stay_whole
);

/// The attack on the project's objects, the orchestrator running as root or
/// as uid 65534, which then owns every file the session aims at.
fn objects_stay_whole(by: By) {
    let env = Env::new();
    let rewrite = script(
        "alt=$(cat .git/objects/info/alternates)
         for f in $(find $alt -type f); do chmod u+w $f; printf junk > $f; done
         ln $(find $alt -type f | head -1) .git/objects/hardlink
         echo \"$alt\" > alternates.txt",
    );
    let env = setup(
        env,
        initializer(&two()),
        vec![honest("a", &[], rewrite)],
        "",
    );
    let objects = object_files(&env);
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    // The attack got nowhere, and the same session's honest work landed.
    assert_verdict(&env, 2, "accepted", "");
    let kept: Vec<_> = object_files(&env);
    for (path, bytes, _) in &objects {
        let now = kept.iter().find(|(p, _, _)| p == path);
        assert_eq!(now.map(|(_, b, _)| b), Some(bytes), "{path} was rewritten");
    }
    for (path, _, links) in &kept {
        assert_eq!(*links, 1, "{path} is hard-linked");
    }
    // The workspace shared the project's objects by alternates.
    let alt = env
        .on_main("alternates.txt")
        .unwrap_or_else(|| panic!("{:#?}", env.transcript(2)));
    assert!(alt.trim().ends_with(".git/objects"), "{alt}");
    let fsck = crate::common::git_command()
        .arg("-C")
        .arg(env.project())
        .args(["fsck", "--full"])
        .output()
        .unwrap();
    assert!(fsck.status.success(), "{}", text(&fsck));
}

by_both!(
    a_session_reads_only_the_projects_git_data_not_its_directory,
    a_session_reads_only_the_projects_git_data_not_its_directory_as_uid_65534,
    reads_only_git_data
);

/// Session 2 tries to read the project's directory and `.longrun/`; as
/// uid 65534 it owns them, so only the sandbox stands in its way.
fn reads_only_git_data(by: By) {
    let env = Env::new();
    let p = env.project();
    let body = format!(
        "cat {p}/.longrun/longrun.log > leak-log.txt 2>&1
         ls {p}/.longrun/sessions > leak-ls.txt 2>&1
         cat {p}/.longrun/sessions/0001/transcript.jsonl > leak-t.txt 2>&1
         cat {p}/SPEC.md > leak-spec.txt 2>&1
         echo 1 > ../worker.pid 2> leak-w.txt
         git fetch -q {p}/.git refs/heads/main && echo fetched > fetch.txt",
        p = p.display()
    );
    let env = setup(
        env,
        initializer(&two()),
        vec![honest("a", &[], script(&body))],
        "",
    );
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "accepted", "");
    for leak in ["leak-log.txt", "leak-ls.txt", "leak-t.txt", "leak-spec.txt"] {
        // Nothing but the tools' own complaints.
        let said = env.on_main(leak).unwrap_or_default();
        assert!(
            said.lines()
                .all(|l| l.starts_with("cat: ") || l.starts_with("ls: ")),
            "{leak}: {said}"
        );
    }
    // The orchestrator's own files in the session directory are as it wrote them.
    let pid = std::fs::read_to_string(p.join(".longrun/sessions/0002/worker.pid")).unwrap();
    assert_ne!(pid.trim(), "1");
    // Earlier attempts stay reachable: the project's git data is readable.
    assert_eq!(env.on_main("fetch.txt").as_deref(), Some("fetched\n"));
}

// ---- A session cannot stop the run ----

by_both!(
    deleting_init_sh_is_refused_and_later_runs_still_start,
    deleting_init_sh_is_refused_and_later_runs_still_start_as_uid_65534,
    delete_init_sh
);

fn delete_init_sh(by: By) {
    let env = project(vec![
        honest(
            "a",
            &[],
            // init.sh is read-only in the sandbox: removed from the index, ignored in the tree.
            vec![turn(vec![bash(
                "git rm -q --cached init.sh && echo /init.sh >> .gitignore && git add .gitignore && git commit -qm gone",
            )])],
        ),
        honest("a", &[], vec![]),
        honest("b", &["a"], vec![]),
    ]);
    let before = env.git(&["rev-parse", "main"]).trim().to_string();
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_refused_then_control(&env, &before, 2, "rejected", "init.sh");
    assert!(env.on_main("init.sh").is_some());
    // The next run starts (its preflight needs init.sh on main) and lands b.
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 4, "accepted", "");
}

/// features.json with one feature per line, so that two sessions' flips touch adjacent lines.
fn compact(a: bool, b: bool) -> String {
    let one = |id: &str, passes: bool| {
        json!({"id": id, "category": "functional", "description": format!("feature {id}"),
               "steps": ["do it"], "check": format!("test -f {id}.txt"), "passes": passes})
        .to_string()
    };
    format!(
        "{{\"features\": [\n{},\n{}\n]}}\n",
        one("a", a),
        one("b", b)
    )
}

by_both!(
    a_committed_merge_union_attribute_cannot_break_features_json_under_parallel,
    a_committed_merge_union_attribute_cannot_break_features_json_under_parallel_as_uid_65534,
    merge_union_under_parallel
);

fn merge_union_under_parallel(by: By) {
    let init = json!([
        turn(vec![
            write_file("features.json", &compact(false, false)),
            write_file(
                ".gitattributes",
                "features.json merge=union\n* merge=union\n"
            ),
            write_file("init.sh", "#!/usr/bin/env bash\nset -e\necho ready\n"),
            write_file("progress.md", "# Progress\n"),
        ]),
        turn(vec![bash(
            "chmod +x init.sh && git add -A && git commit -qm init"
        )]),
        done("initialized"),
    ]);
    let flip = |id: &str, a: bool, b: bool| {
        json!([
            turn(vec![
                write_file(&format!("{id}.txt"), "done\n"),
                write_file("features.json", &compact(a, b)),
            ]),
            turn(vec![bash("git add -A && git commit -qm work")]),
            done("done"),
        ])
    };
    let env = project_with(
        init,
        vec![flip("a", true, false), flip("b", false, true)],
        "",
    );
    let dir = env.dir_arg();
    let parallel = [
        "continue",
        "--dir",
        &dir,
        "--sessions",
        "2",
        "--parallel",
        "2",
    ];
    let out = env.run_by(by, &parallel);
    assert!(out.status.success(), "{}", text(&out));
    let (v2, r2) = verdict(&env, 2);
    let (v3, r3) = verdict(&env, 3);
    let accepted = [&v2, &v3]
        .iter()
        .filter(|v| v.as_str() == "accepted")
        .count();
    assert_eq!(accepted, 1, "2: {v2} {r2}\n3: {v3} {r3}");
    let refused = if v2 == "accepted" { &r3 } else { &r2 };
    assert!(
        refused.contains("merge conflict") || refused.contains("after the merge"),
        "{refused}"
    );
    // main's features.json is still one valid list with exactly one feature passing.
    let list: Value = serde_json::from_str(&env.on_main("features.json").unwrap()).unwrap();
    let passing: Vec<&Value> = list["features"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["passes"] == true)
        .collect();
    assert_eq!(list["features"].as_array().unwrap().len(), 2, "{list:#}");
    assert_eq!(passing.len(), 1, "{list:#}");
    let status = env.run_by(by, &["status", "--dir", &env.dir_arg()]);
    assert!(status.status.success(), "{}", text(&status));
}

by_both!(
    recovery_never_signals_a_planted_pid,
    recovery_never_signals_a_planted_pid_as_uid_65534,
    planted_pid
);

fn planted_pid(by: By) {
    let env = project(vec![json!([]), honest("a", &[], vec![])]);
    // A session leader, as a worker is: what recovery would end with its
    // session; the orchestrator's own user's, so that it could.
    let mut sleeper = command_by(by, "sleep");
    sleeper.arg("300");
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut sleeper, || {
            nix::unistd::setsid()
                .map(drop)
                .map_err(std::io::Error::from)
        });
    }
    let mut sleeper = sleeper.spawn().unwrap();
    let pid = sleeper.id();
    // Session 2 has a directory but no verdict, and its pid files name the sleeper:
    // once without the start time the orchestrator records, once with a wrong one.
    let dir = env.project().join(".longrun/sessions/0002");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("worker.pid"), pid.to_string()).unwrap();
    let out = env.continue_by(by, 0);
    assert!(out.status.success(), "{}", text(&out));
    std::fs::write(dir.join("worker.start"), "1").unwrap();
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        sleeper.try_wait().unwrap().is_none(),
        "recovery killed an unrelated process"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    sleeper.wait().unwrap();
    // The control: the session was recorded as interrupted, and the run went on.
    assert_verdict(&env, 2, "interrupted", "");
    assert_verdict(&env, 3, "accepted", "");
}

// ---- Bounds ----

by_both!(
    an_oversized_workspace_fails_the_session_and_keeps_nothing_over_the_cap,
    an_oversized_workspace_fails_the_session_and_keeps_nothing_over_the_cap_as_uid_65534,
    oversized_workspace
);

fn oversized_workspace(by: By) {
    let big = turn(vec![bash("head -c 3000000 /dev/urandom > big.bin")]);
    refused_over_the_cap(by, big, 1, "over 1 MiB");
}

/// Session 2 takes `extra` besides its honest work, under a workspace cap
/// of `cap_mb`: it fails saying `why`, nothing of it is kept, and session
/// 3 lands.
fn refused_over_the_cap(by: By, extra: Value, cap_mb: u32, why: &str) {
    let env = project_with(
        initializer(&two()),
        vec![honest("a", &[], vec![extra]), honest("a", &[], vec![])],
        &format!("[sandbox]\nmax_workspace_mb = {cap_mb}\n"),
    );
    let before = env.git(&["rev-parse", "main"]).trim().to_string();
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_refused_then_control(&env, &before, 2, "failed", why);
    assert_verdict(&env, 2, "failed", "nothing of it was kept");
    assert!(env
        .git(&["for-each-ref", "refs/longrun/sessions/0002"])
        .is_empty());
}

by_both!(
    a_committed_file_that_unpacks_past_the_cap_fails_the_session_and_keeps_nothing,
    a_committed_file_that_unpacks_past_the_cap_fails_the_session_and_keeps_nothing_as_uid_65534,
    compressed_bomb
);

/// 8 MiB of zeros is 8 KB as a git object: committed, then its file
/// removed, it leaves a workspace far under the cap and a history that
/// unpacks far over it.
fn compressed_bomb(by: By) {
    let bomb = turn(vec![bash(
        "head -c 8388608 /dev/zero > z && oid=$(git hash-object -w z) && rm z \
         && git update-index --add --cacheinfo 100644,$oid,zeros.bin && git commit -qm bomb",
    )]);
    refused_over_the_cap(by, bomb, 4, "over the cap of 4 MiB");
}

by_both!(
    an_uncommitted_file_over_the_cap_is_left_out_of_the_kept_work_and_named,
    an_uncommitted_file_over_the_cap_is_left_out_of_the_kept_work_and_named_as_uid_65534,
    uncommitted_file_over_the_cap
);

fn uncommitted_file_over_the_cap(by: By) {
    let leave = turn(vec![bash(
        "head -c 2000000 /dev/urandom > big.bin && echo small > small.txt",
    )]);
    let mut session = honest("a", &[], vec![]);
    let turns = session.as_array_mut().unwrap();
    turns.insert(turns.len() - 1, leave);
    let env = project_with(
        initializer(&two()),
        vec![session],
        "[sandbox]\nmax_file_mb = 1\n",
    );
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "rejected", "left out of the kept work: big.bin");
    let kept = env.git(&["ls-tree", "--name-only", "refs/longrun/sessions/0002"]);
    assert!(kept.lines().any(|l| l == "small.txt"), "{kept}");
    assert!(!kept.lines().any(|l| l == "big.bin"), "{kept}");
}

/// The names in session `n`'s directory.
fn session_files(env: &Env, n: u32) -> Vec<String> {
    let dir = env.project().join(format!(".longrun/sessions/{n:04}"));
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

by_both!(
    after_the_verdict_only_the_record_of_a_session_stays_unless_kept,
    after_the_verdict_only_the_record_of_a_session_stays_unless_kept_as_uid_65534,
    session_cleanup
);

fn session_cleanup(by: By) {
    let env = project(vec![honest("a", &[], vec![])]);
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "accepted", "");
    let names = session_files(&env, 2);
    for gone in ["work", "work.left", "tmp", "home", "verify"] {
        assert!(!names.iter().any(|n| n == gone), "{gone} stayed: {names:?}");
    }
    for kept in ["transcript.jsonl", "worker.json", "worker.log"] {
        assert!(names.iter().any(|n| n == kept), "{kept} went: {names:?}");
    }
    assert!(!env
        .project()
        .join(".longrun/import")
        .read_dir()
        .unwrap()
        .any(|_| true));

    let env = project_with(
        initializer(&two()),
        vec![honest("a", &[], vec![]), honest("b", &["a"], vec![])],
        "[run]\nkeep_sessions = 1\n",
    );
    assert!(env.continue_by(by, 1).status.success());
    assert!(session_files(&env, 2).iter().any(|n| n == "work"));
    assert!(env.continue_by(by, 1).status.success());
    assert!(!session_files(&env, 2).iter().any(|n| n == "work"));
    assert!(session_files(&env, 3).iter().any(|n| n == "work"));
}

by_both!(
    verification_runs_at_the_path_of_the_workers_workspace_on_a_fresh_tree,
    verification_runs_at_the_path_of_the_workers_workspace_on_a_fresh_tree_as_uid_65534,
    verify_at_the_workers_path
);

fn verify_at_the_workers_path(by: By) {
    // A check that passes only where the work was done; and a file the worker
    // left untracked (ignored) that would make the other check pass if it
    // were looked at.
    let list = features(&[
        ("a", false, "test \"$(cat a.txt)\" = \"$(pwd)\""),
        ("b", false, "test -f b.txt"),
    ]);
    let flip = |ids: &[&str]| {
        let mut v: Value = serde_json::from_str(&list).unwrap();
        for f in v["features"].as_array_mut().unwrap() {
            if ids.contains(&f["id"].as_str().unwrap()) {
                f["passes"] = json!(true);
            }
        }
        serde_json::to_string_pretty(&v).unwrap() + "\n"
    };
    let (a_done, b_done) = (flip(&["a"]), flip(&["a", "b"]));
    let worker_a = json!([
        turn(vec![write_file("features.json", &a_done)]),
        turn(vec![bash(
            "pwd > a.txt && git add -A && git commit -qm work"
        )]),
        done("done"),
    ]);
    let worker_b = json!([
        turn(vec![
            write_file(".gitignore", "b.txt\n"),
            write_file("b.txt", "left behind\n"),
            write_file("features.json", &b_done),
        ]),
        turn(vec![bash("git add -A && git commit -qm work")]),
        done("done"),
    ]);
    let env = project_with(initializer(&list), vec![worker_a, worker_b], "");
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_verdict(&env, 2, "accepted", "");
    let path = env.on_main("a.txt").unwrap();
    assert!(
        path.trim().ends_with(".longrun/sessions/0002/work"),
        "{path}"
    );
    assert_verdict(&env, 3, "rejected", "feature b failed");
}

/// The attack: finish `a` honestly, then write raw objects into the clone's
/// own store (as any process in the workspace can) for a commit whose tree
/// holds an entry named `NAME` of mode `MODE`, which git itself would never
/// write: `..`, a name with a slash, an empty name, two entries of one name,
/// a mode git does not know. Each is a tree whose checkout would write outside the
/// workspace or alias another path if the orchestrator took names as paths.
const FORGE_TREE: &str = r#"
import hashlib, os, subprocess, sys, zlib
mode, name = sys.argv[1].encode(), sys.argv[2].encode()
def put(kind, body):
    data = kind + b" " + str(len(body)).encode() + b"\0" + body
    oid = hashlib.sha1(data).hexdigest()
    path = os.path.join(".git/objects", oid[:2], oid[2:])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(zlib.compress(data))
    return oid
blob = put(b"blob", b"ESCAPED\n")
inner = put(b"tree", b"100644 ESCAPED\0" + bytes.fromhex(blob))
target = inner if mode == b"40000" else blob
base = subprocess.check_output(["git", "cat-file", "tree", "HEAD^{tree}"])
tree = put(b"tree", mode + b" " + name + b"\0" + bytes.fromhex(target) + base)
commit = subprocess.check_output(["git", "commit-tree", tree, "-p", "HEAD", "-m", "work"]).strip()
subprocess.check_call(["git", "update-ref", "HEAD", commit])
print("forged", commit.decode())
"#;

by_both!(
    tree_entries_git_would_never_write_fail_the_session_and_write_nothing_outside,
    tree_entries_git_would_never_write_fail_the_session_and_write_nothing_outside_as_uid_65534,
    forged_tree_entries
);

fn forged_tree_entries(by: By) {
    for (mode, name) in [
        ("40000", ".."),
        ("40000", "."),
        ("100644", "../../../ESCAPED-FILE"),
        ("100644", "sub/../../ESCAPED-FILE"),
        ("100644", ""),
        ("100644", "a.txt"),
        ("100666", "odd-mode"),
    ] {
        let at = format!("{by:?}, {mode} {name:?}");
        let (env, before) = attack_then_control_by(by, |_| {
            vec![
                uncommitted_a(),
                turn(vec![write_file("forge.py", FORGE_TREE)]),
                turn(vec![bash(&format!(
                    "git add a.txt features.json && git commit -qm work \
                     && python3 forge.py '{mode}' '{name}' && rm forge.py"
                ))]),
            ]
        });
        let (verdict, reasons) = verdict(&env, 2);
        assert_ne!(verdict, "accepted", "{at}: {reasons}");
        assert_refused_then_control(&env, &before, 2, "failed", "could not be kept");
        assert!(
            env.git(&["for-each-ref", "refs/longrun/sessions/0002"])
                .is_empty(),
            "{at}: the forged tree was kept"
        );
        let escaped: Vec<_> = walkdir(env.root.path())
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains("ESCAPED"))
                    && !p.starts_with(env.project().join(".git"))
            })
            .collect();
        assert!(escaped.is_empty(), "{at}: {escaped:?} ({reasons})");
    }
}

/// Every path under `dir`, symlinks not followed.
fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}
