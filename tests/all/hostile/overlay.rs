//! Overlay workspaces (issue 14, item 2): a session's workspace and its
//! verification checkout are an overlay whose lower layer is the
//! orchestrator's cached checkout of a commit. A session tries every way to
//! change that lower layer from inside (writes, chmod, renames, links,
//! overlayfs's own xattrs, symlinks named like its files, its path on
//! disk): the cached checkout stays as the commit holds it, and the next
//! session sees main. Deletions, mode changes and symlinks reach the checks
//! exactly as the candidate holds them, and what checks write goes with
//! their verification.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::{json, Value};

use crate::common::*;

const FILES: usize = 12;

/// Every data file as main holds it but the ones `gone`, by a check.
fn intact(gone: &[usize]) -> String {
    let mut lines = Vec::new();
    for i in 0..FILES {
        match gone.contains(&i) {
            true => lines.push(format!("test ! -e data/d{i}")),
            false => lines.push(format!(
                "grep -qx 'data {i}' data/d{i} && test \"$(stat -c %a data/d{i})\" = 644"
            )),
        }
    }
    lines.push("test -x data/run.sh && test \"$(readlink data/link)\" = d0".into());
    lines.join(" && ")
}

fn list(ids: &[&str], done: &[&str]) -> String {
    let items: Vec<(&str, bool, String)> = ids
        .iter()
        .map(|id| (*id, done.contains(id), format!("test -f {id}.txt")))
        .collect();
    let items: Vec<(&str, bool, &str)> =
        items.iter().map(|(i, d, c)| (*i, *d, c.as_str())).collect();
    features(&items)
}

/// A project initialized with features `ids`, then a human commit of
/// tracked data (files, an executable, a symlink, a directory).
fn project(ids: &[&str], sessions: Value) -> Env {
    project_in(Env::new(), ids, sessions)
}

/// [`project`] in `env`, for sessions that need its paths.
fn project_in(env: Env, ids: &[&str], sessions: Value) -> Env {
    let mut all = serde_json::Map::new();
    all.insert("1".into(), initializer(&list(ids, &[])));
    if let Value::Object(rest) = sessions {
        all.extend(rest);
    }
    let model = env.model(Value::Object(all));
    let out = env.init("# Spec\nFiles.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    let project = env.project();
    std::fs::create_dir_all(project.join("data/sub")).unwrap();
    for i in 0..FILES {
        std::fs::write(project.join(format!("data/d{i}")), format!("data {i}\n")).unwrap();
    }
    std::fs::write(project.join("data/sub/inner"), "inner\n").unwrap();
    std::fs::write(project.join("data/run.sh"), "#!/bin/sh\necho run\n").unwrap();
    std::fs::set_permissions(
        project.join("data/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("d0", project.join("data/link")).unwrap();
    let toml_path = project.join("longrun.toml");
    let old = std::fs::read_to_string(&toml_path).unwrap();
    // The worker's own check rounds would run what it plants in its workspace.
    let new = old.replacen("check_rounds = 3", "check_rounds = 0", 1);
    assert!(new.contains("check_rounds = 0"), "no check_rounds");
    std::fs::write(&toml_path, new).unwrap();
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "data"]);
    env
}

/// Set `key` of `[section]` in longrun.toml to `value`, and commit it.
fn set_toml(env: &Env, section: &str, key: &str, value: impl Into<toml_edit::Value>) {
    let path = env.project().join("longrun.toml");
    let mut doc: toml_edit::DocumentMut = std::fs::read_to_string(&path).unwrap().parse().unwrap();
    doc[section][key] = toml_edit::value(value);
    std::fs::write(&path, doc.to_string()).unwrap();
    env.git(&["commit", "-qam", "settings"]);
}

fn commands(list: &[&str]) -> toml_edit::Array {
    list.iter().copied().collect()
}

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

fn assert_accepted(env: &Env, n: u64) {
    let (v, reasons) = verdict(env, n);
    assert_eq!(v, "accepted", "session {n}: {reasons}");
}

/// Whether session `n`'s sandbox mounted its workspace as an overlay, from
/// its trailers on main.
fn mounted_overlay(env: &Env, n: u32) -> bool {
    let log = env.git(&["log", "--first-parent", "--format=%B%x00", "main"]);
    let ours = format!("Longrun-Session: {n}\n");
    log.split('\0')
        .find(|m| m.contains(&ours))
        .unwrap_or_else(|| panic!("no commit of session {n}"))
        .contains("the workspace is an overlay")
}

/// Every cached checkout left holds data as main does now (`gone` removed),
/// with its modes, no other names, and no xattr at all.
fn assert_layers_intact(env: &Env, gone: &[usize]) {
    let layers = env.project().join(".longrun/checkout/layers");
    let dirs: Vec<_> = std::fs::read_dir(&layers)
        .expect("the cached checkouts were used")
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!dirs.is_empty());
    for dir in dirs {
        let data = dir.join("data");
        for i in (0..FILES).filter(|i| !gone.contains(i)) {
            let path = data.join(format!("d{i}"));
            let meta = std::fs::symlink_metadata(&path).unwrap();
            assert!(meta.is_file(), "{}", path.display());
            assert_eq!(
                meta.permissions().mode() & 0o7777,
                0o644,
                "{}",
                path.display()
            );
            assert_eq!(meta.nlink(), 1, "{}", path.display());
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text, format!("data {i}\n"), "{}", path.display());
        }
        let run = std::fs::symlink_metadata(data.join("run.sh")).unwrap();
        assert_eq!(run.permissions().mode() & 0o7777, 0o755);
        assert_eq!(
            std::fs::read_link(data.join("link")).unwrap(),
            Path::new("d0")
        );
        assert_eq!(
            std::fs::read_to_string(data.join("sub/inner")).unwrap(),
            "inner\n"
        );
        let names = std::fs::read_dir(&data).unwrap().count();
        assert_eq!(
            names,
            FILES - gone.len() + 3,
            "names added in {}",
            data.display()
        );
        for path in [
            data.clone(),
            data.join("sub"),
            data.join("d1"),
            data.join("d5"),
        ] {
            assert_eq!(xattrs(&path), "", "{}", path.display());
        }
    }
}

use std::os::unix::fs::MetadataExt;

/// The names of `path`'s extended attributes (any namespace we may list).
fn xattrs(path: &Path) -> String {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    let mut buf = vec![0u8; 4096];
    // SAFETY: a valid C string and a buffer of the length passed.
    let n = unsafe { libc::llistxattr(c.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    assert!(n >= 0, "llistxattr {}", path.display());
    String::from_utf8_lossy(&buf[..n as usize]).replace('\0', " ")
}

/// Every way to change a lower file or directory from inside the overlay,
/// each allowed to fail; then the session's view put back by git.
fn attack(cache: &Path) -> String {
    format!(
        r#"for f in data/d*; do
  echo evil >> "$f"; true > "$f"; chmod 777 "$f"; touch -d 2001-01-01 "$f"
  truncate -s 1 "$f"; ln "$f" "$f.link"; mv "$f" "$f.moved"
done 2>/dev/null
for p in data data/sub data/d1.moved data/d5.moved; do
  for x in user.overlay.opaque user.overlay.redirect user.overlay.origin user.overlay.metacopy \
           trusted.overlay.opaque trusted.overlay.redirect; do
    python3 -c "import os,sys; os.setxattr(sys.argv[1], sys.argv[2], b'y')" "$p" "$x"
  done
done 2>/dev/null
rm -rf data/sub; ln -s /etc/passwd data/d3; ln -s ../../.. data/sub
mkdir -p data/d4.moved/x; chmod 000 data/d4.moved
for d in {cache}/layers/*/data; do echo evil >> "$d/d2"; rm -f "$d/d6"; done 2>/dev/null
chmod 755 data/d4.moved; rm -rf data
git checkout -q -- . && git status --porcelain
exit 0
"#,
        cache = cache.display()
    )
}

fn session_cannot_change_its_lower_layer(by: By) {
    let env = Env::new();
    let cache = env.project().join(".longrun/checkout");
    let ids = ["f1", "f2"];
    // Session 2 attacks, then deletes d11 and does f1 honestly; session 3
    // sees main as it is (d11 gone) before doing f2.
    let seen = format!("{} && echo ok > seen.txt", intact(&[11]));
    let sessions = json!({
        "2": [
            turn(vec![write_file("attack.sh", &attack(&cache)), bash("sh attack.sh; rm attack.sh")]),
            turn(vec![write_file("f1.txt", "1\n"), write_file("features.json", &list(&ids, &["f1"]))]),
            turn(vec![bash("git rm -q data/d11 && test ! -e data/d11 && git add -A && git commit -qm work")]),
            done("done"),
        ],
        "3": [
            turn(vec![bash(&seen)]),
            turn(vec![write_file("f2.txt", "2\n"), write_file("features.json", &list(&ids, &["f1", "f2"]))]),
            turn(vec![bash("git add -A && git commit -qm work")]),
            done("done"),
        ],
    });
    let env = project_in(env, &ids, sessions);
    set_toml(&env, "checks", "commands", commands(&[&intact(&[11])]));
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_accepted(&env, 2);
    assert!(mounted_overlay(&env, 2), "session 2 ran without an overlay");
    // The deletion the session made through the overlay is the import's.
    assert!(env.on_main("data/d11").is_none());
    assert_eq!(env.on_main("data/d10").as_deref(), Some("data 10\n"));
    // The next session saw main, not the attack, and its checks passed on it.
    assert_accepted(&env, 3);
    assert_eq!(env.on_main("seen.txt").as_deref(), Some("ok\n"));
    assert_layers_intact(&env, &[11]);
}

by_both!(
    a_session_cannot_change_the_cached_checkout_under_its_overlay,
    a_session_cannot_change_the_cached_checkout_under_its_overlay_as_uid_65534,
    session_cannot_change_its_lower_layer
);

/// What session 2 changes in the data: a deletion, a change, an addition,
/// an executable bit each way, a new symlink, a retargeted one, a
/// directory become a file and a file become a directory.
const CHANGES: &str = "git rm -q data/d1 && echo changed > data/d2 && echo new > data/new \
    && chmod +x data/d3 && chmod -x data/run.sh && ln -s d4 data/link4 && ln -sfn d5 data/link \
    && git rm -rq data/sub && echo file > data/sub && git rm -q data/d6 && mkdir data/d6 \
    && echo inner > data/d6/inner && git add -A";

/// The checkout is the candidate, exactly: git finds nothing to report.
const CLEAN: &str = "test -z \"$(git status --porcelain)\"";

fn checks_see_exactly_the_candidate(by: By, overlay: bool) {
    let ids = ["f1", "f2", "f3"];
    let worker = |id: &str, passing: &[&str], extra: &str| {
        json!([
            turn(vec![
                write_file(&format!("{id}.txt"), "x\n"),
                write_file("features.json", &list(&ids, passing))
            ]),
            turn(vec![bash(&format!(
                "{extra} git add -A && git commit -qm work"
            ))]),
            done("done"),
        ])
    };
    let sessions = json!({
        "2": worker("f1", &["f1"], &format!("{CHANGES} &&")),
        "3": worker("f2", &["f1", "f2"], ""),
        "4": worker("f3", &["f1", "f2", "f3"], ""),
    });
    let env = project(&ids, sessions);
    // The first check: the tree is the candidate's. The second writes in
    // the checkout, and each regression check (run side by side, from
    // session 3) beside it: none of it may reach the next verification.
    let leak = "echo leak > leaked.txt && mkdir -p data/made && echo x > data/made/x";
    set_toml(&env, "checks", "commands", commands(&[CLEAN, leak]));
    set_toml(&env, "run", "regressions_every", 1);
    set_toml(&env, "sandbox", "overlay", overlay);
    let out = env.continue_by(by, 3);
    assert!(out.status.success(), "{}", text(&out));
    for n in 2..=4 {
        assert_accepted(&env, n);
        assert_eq!(mounted_overlay(&env, n as u32), overlay, "session {n}");
    }
    assert!(env.on_main("data/d1").is_none());
    assert_eq!(env.on_main("data/sub").as_deref(), Some("file\n"));
    assert_eq!(env.on_main("data/d6/inner").as_deref(), Some("inner\n"));
    assert!(env.on_main("leaked.txt").is_none());
    let mode = |path: &str| {
        let line = env.git(&["ls-tree", "main", path]);
        line.split(' ').next().unwrap_or("").to_string()
    };
    assert_eq!(mode("data/d3"), "100755");
    assert_eq!(mode("data/run.sh"), "100644");
    assert_eq!(mode("data/link"), "120000");
    if overlay {
        assert_layers_intact_after_changes(&env);
    }
}

/// The cached checkouts hold main's tree as it is after session 2's changes.
fn assert_layers_intact_after_changes(env: &Env) {
    let layers = env.project().join(".longrun/checkout/layers");
    for dir in std::fs::read_dir(&layers)
        .unwrap()
        .map(|e| e.unwrap().path())
    {
        let data = dir.join("data");
        assert!(!data.join("d1").exists());
        assert_eq!(
            std::fs::read_to_string(data.join("d2")).unwrap(),
            "changed\n"
        );
        assert!(!data.join("leaked.txt").exists() && !dir.join("leaked.txt").exists());
        assert!(!data.join("made").exists());
        assert_eq!(
            std::fs::read_link(data.join("link")).unwrap(),
            Path::new("d5")
        );
    }
}

fn checks_on_an_overlay(by: By) {
    checks_see_exactly_the_candidate(by, true);
}

fn checks_written_whole(by: By) {
    checks_see_exactly_the_candidate(by, false);
}

by_both!(
    checks_run_on_exactly_the_candidate_and_their_writes_do_not_last,
    checks_run_on_exactly_the_candidate_and_their_writes_do_not_last_as_uid_65534,
    checks_on_an_overlay
);

by_both!(
    without_overlays_checks_run_on_exactly_the_candidate_written_whole,
    without_overlays_checks_run_on_exactly_the_candidate_written_whole_as_uid_65534,
    checks_written_whole
);

fn parallel_sessions_keep_their_own_base(by: By) {
    let ids = ["a", "b", "c"];
    // Session 3 is slow: session 2 lands and session 4 starts on the new
    // main while 3 still works on the old one, which must not change under it.
    let view = |id: &str, slow: bool| {
        let wait = if slow { "sleep 4 && " } else { "" };
        let base_only = if slow { " && test ! -e a.txt" } else { "" };
        format!(
            "{wait}{}{base_only} && echo ok > seen-{id}.txt",
            intact(&[])
        )
    };
    let worker = |id: &str, passing: &[&str], slow: bool| {
        json!([
            turn(vec![bash(&view(id, slow))]),
            turn(vec![
                write_file(&format!("{id}.txt"), "x\n"),
                write_file("features.json", &list(&ids, passing))
            ]),
            turn(vec![bash("git add -A && git commit -qm work")]),
            done("done"),
        ])
    };
    let sessions = json!({
        "2": worker("a", &["a"], false),
        "3": worker("b", &["b"], true),
        // Started once session 2 landed: on a main where a passes.
        "4": worker("c", &["a", "c"], false),
    });
    let env = project(&ids, sessions);
    let dir = env.dir_arg();
    let args = [
        "continue",
        "--dir",
        &dir,
        "--sessions",
        "3",
        "--parallel",
        "2",
    ];
    let out = env.run_by(by, &args);
    assert!(out.status.success(), "{}", text(&out));
    let mut seen = 0;
    for n in 2..=4u64 {
        let (v, reasons) = verdict(&env, n);
        // Parallel sessions may conflict in features.json; never fail.
        assert!(
            v == "accepted" || reasons.contains("conflict"),
            "session {n}: {v} {reasons}"
        );
        assert!(mounted_overlay(&env, n as u32), "session {n}");
        if v == "accepted" {
            seen += 1;
        }
    }
    assert!(
        seen >= 2,
        "{}",
        env.git(&["log", "--first-parent", "--format=%B", "main"])
    );
    for id in ids {
        if env.on_main(&format!("{id}.txt")).is_some() {
            assert_eq!(
                env.on_main(&format!("seen-{id}.txt")).as_deref(),
                Some("ok\n")
            );
        }
    }
    assert_layers_intact(&env, &[]);
    // Session 4's base had a layer of its own: 3's was held, never moved.
    let layers = std::fs::read_dir(env.project().join(".longrun/checkout/layers")).unwrap();
    assert!(
        layers.count() >= 2,
        "one cached checkout served two bases at once"
    );
}

by_both!(
    parallel_sessions_each_see_their_own_base_through_the_overlay,
    parallel_sessions_each_see_their_own_base_through_the_overlay_as_uid_65534,
    parallel_sessions_keep_their_own_base
);

/// What session 2 leaves uncommitted, one change of each kind an overlay's
/// upper layer records differently: files and directories deleted (a
/// whiteout), a directory become a file and a file a directory (an opaque
/// directory), a directory emptied, modes changed and nothing else (a copy
/// up), symlinks made and retargeted, a directory of the lower layer
/// renamed (overlayfs refuses, `mv` copies then deletes), a file renamed,
/// new files deep in new directories, a file changed back to what it was,
/// names git keeps apart from its own (`.git` in a file's name, a
/// directory named like a repository), and untracked build output and
/// ignored files, which stay out.
const UNCOMMITTED: &str = r#"set -e
rm data/d1
rm -r data/sub
rm data/d2 && mkdir data/d2 && echo inner > data/d2/inner
rm -r tree/todir && echo now a file > tree/todir
rm tree/emptied/*
chmod +x data/d3 && chmod -x data/run.sh
ln -s d4 data/newlink && ln -sfn d5 data/link
mv tree/moved tree/renamed
mv data/d6 data/d6.renamed
echo more >> data/d7 && echo same > tree/same && echo same > tree/same.new
mkdir -p new/deep/er && echo x > new/deep/er/x && echo y > new/y
echo t > tree/.gitkeep && echo g > data/a.git && mkdir -p tree/x.git && echo z > tree/x.git/z
mkdir -p build/__pycache__ && echo c > build/__pycache__/m.pyc && echo o > tree/out.log
"#;

/// Data beside [`project`]'s for [`UNCOMMITTED`] to change.
fn add_tree(env: &Env) {
    let p = env.project();
    for (path, text) in [
        ("tree/todir/a", "a\n"),
        ("tree/todir/b/c", "c\n"),
        ("tree/emptied/a", "a\n"),
        ("tree/emptied/b", "b\n"),
        ("tree/moved/a", "a\n"),
        ("tree/moved/in/b", "b\n"),
        ("tree/same", "same\n"),
        (".gitignore", "*.log\n"),
    ] {
        std::fs::create_dir_all(p.join(path).parent().unwrap()).unwrap();
        std::fs::write(p.join(path), text).unwrap();
    }
    env.git(&["add", "-A"]);
    env.git(&["commit", "-qm", "tree"]);
}

/// Session 2's kept work (every entry of its ref's tree with its mode and
/// id) when it runs `script` and leaves what it did uncommitted, with
/// overlay workspaces or without; or its verdict's reasons when nothing
/// was kept.
fn kept_uncommitted(by: By, overlay: bool, script: &str) -> Result<String, String> {
    let ids = ["f1"];
    let sessions = json!({
        "2": [turn(vec![bash(script)]), done("done")],
    });
    let env = project(&ids, sessions);
    add_tree(&env);
    set_toml(&env, "sandbox", "overlay", overlay);
    let out = env.continue_by(by, 1);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mounted_overlay(&env, 2), overlay);
    let log = std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap();
    assert!(!log.contains("compares the whole work tree"), "{log}");
    let (verdict, reasons) = verdict(&env, 2);
    assert_ne!(verdict, "accepted");
    let kept = "refs/longrun/sessions/0002";
    if env.git(&["for-each-ref", kept]).is_empty() {
        return Err(reasons);
    }
    let subject = env.git(&["log", "-1", "--format=%s", kept]);
    assert_eq!(
        subject.contains("WIP"),
        reasons.contains("uncommitted changes"),
        "{subject} {reasons}"
    );
    let entries = env.git(&["ls-tree", "-r", "-t", "--full-tree", kept]);
    // The one difference the two runs are meant to have.
    let settings = "\tlongrun.toml";
    let kept: String = entries
        .lines()
        .filter(|l| !l.ends_with(settings))
        .map(|l| format!("{l}\n"))
        .collect();
    Ok(format!("{subject}{kept}"))
}

fn uncommitted_work_is_kept_exactly(by: By) {
    let layered = kept_uncommitted(by, true, UNCOMMITTED).unwrap();
    assert!(layered.starts_with("longrun: WIP"), "{layered}");
    // The same as `git add -A` over the whole tree commits.
    assert_eq!(
        Ok(layered.clone()),
        kept_uncommitted(by, false, UNCOMMITTED)
    );
    let entry = |path: &str| {
        layered
            .lines()
            .find(|l| l.ends_with(&format!("\t{path}")))
            .map(|l| l.split(' ').take(2).collect::<Vec<_>>().join(" "))
    };
    for gone in [
        "data/d1",
        "data/sub",
        "data/sub/inner",
        "data/d6",
        "tree/todir/a",
        "tree/todir/b",
        "tree/emptied",
        "tree/moved",
        "tree/moved/in/b",
        "tree/out.log",
        "build/__pycache__/m.pyc",
    ] {
        assert_eq!(entry(gone), None, "{gone} in\n{layered}");
    }
    for (path, kind) in [
        ("data/d2", "040000 tree"),
        ("data/d2/inner", "100644 blob"),
        ("tree/todir", "100644 blob"),
        ("data/d3", "100755 blob"),
        ("data/run.sh", "100644 blob"),
        ("data/newlink", "120000 blob"),
        ("data/link", "120000 blob"),
        ("tree/renamed/a", "100644 blob"),
        ("tree/renamed/in/b", "100644 blob"),
        ("data/d6.renamed", "100644 blob"),
        ("data/d7", "100644 blob"),
        ("tree/same", "100644 blob"),
        ("tree/same.new", "100644 blob"),
        ("new/deep/er/x", "100644 blob"),
        ("new/y", "100644 blob"),
        ("tree/.gitkeep", "100644 blob"),
        ("data/a.git", "100644 blob"),
        ("tree/x.git/z", "100644 blob"),
        ("data/d0", "100644 blob"),
    ] {
        assert_eq!(entry(path).as_deref(), Some(kind), "{path} in\n{layered}");
    }
}

by_both!(
    uncommitted_work_is_kept_as_a_whole_tree_add_keeps_it,
    uncommitted_work_is_kept_as_a_whole_tree_add_keeps_it_as_uid_65534,
    uncommitted_work_is_kept_exactly
);

/// Staged with `git add` and never committed: the work tree and the index
/// agree, so the export stages nothing again and takes the index as the
/// session left it (which it does not write back).
const STAGED_ONLY: &str =
    "echo staged > tree/staged && echo more >> data/d7 && git add tree/staged data/d7";

fn staged_work_is_kept_as_the_index_holds_it(by: By) {
    let layered = kept_uncommitted(by, true, STAGED_ONLY).unwrap();
    assert!(layered.starts_with("longrun: WIP"), "{layered}");
    assert!(layered.contains("\ttree/staged\n"), "{layered}");
    assert_eq!(Ok(layered), kept_uncommitted(by, false, STAGED_ONLY));
}

by_both!(
    staged_work_left_uncommitted_is_kept_as_wip,
    staged_work_left_uncommitted_is_kept_as_wip_as_uid_65534,
    staged_work_is_kept_as_the_index_holds_it
);

/// Names git takes for its own, left uncommitted: `.git` in another case
/// and its aliases, and a directory holding a `.git` file that points
/// elsewhere.
const GIT_NAMES: &str = r#"mkdir -p tree/.GIT && echo x > tree/.GIT/x && echo y > tree/GIT~1 && echo z > data/.git.
mkdir -p gitfile && echo 'gitdir: /etc' > gitfile/.git && echo g > gitfile/g
echo kept > tree/kept
"#;

fn git_names_fail_the_export_either_way(by: By) {
    let layered = kept_uncommitted(by, true, GIT_NAMES);
    assert_eq!(layered, kept_uncommitted(by, false, GIT_NAMES));
    // libgit2 stages no name git would take for its own: the session's
    // export fails naming it, and nothing of it is kept, either way.
    let why = layered.expect_err("a `.git` alias was kept");
    assert!(why.contains("invalid path"), "{why}");
}

by_both!(
    git_like_names_left_uncommitted_fail_the_export_as_a_whole_tree_add_does,
    git_like_names_left_uncommitted_fail_the_export_as_a_whole_tree_add_does_as_uid_65534,
    git_names_fail_the_export_either_way
);
