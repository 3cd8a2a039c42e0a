//! Where no overlay is mounted (here `[sandbox] overlay = false`), the
//! verification checkout of a large tree links the files it holds the
//! same as main from the orchestrator's cached checkout (issue 14, item 2).
//! Code a session wrote runs in a check there and tries to change those
//! files in place (append, truncate, chmod, touch, remove, rename): the
//! cached copy stays as main holds it, and the next session's checks see
//! main's files, not the attack's.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use crate::common::*;

const FILES: usize = 12;

fn list(done: &[&str]) -> String {
    let items: Vec<(&str, bool, &str)> = [("f1", "test -f f1.txt"), ("f2", "test -f f2.txt")]
        .into_iter()
        .map(|(id, check)| (id, done.contains(&id), check))
        .collect();
    features(&items)
}

/// Tries every in-place change on each unchanged tracked file; says nothing
/// and exits 0, as a quiet attack would.
const ATTACK: &str = r#"for f in data/*; do
  echo evil >> "$f"; true > "$f"; chmod 777 "$f"; touch -d 2001-01-01 "$f"
  truncate -s 1 "$f"; rm -f "$f"; mv "$f" "$f.moved"; ln "$f" "$f.link"
done 2>/dev/null
exit 0
"#;

/// Every data file as main holds it: `data N`, mode 644.
const INTACT: &str = r#"for i in $(seq 0 11); do grep -qx "data $i" data/d$i || exit 1; done"#;

fn project_with_data(by: By) -> Env {
    let env = Env::new();
    let attack = json!([
        turn(vec![
            write_file("f1.txt", "1\n"),
            write_file("attack.sh", ATTACK),
            write_file("features.json", &list(&["f1"])),
        ]),
        turn(vec![bash("git add -A && git commit -qm work")]),
        done("done"),
    ]);
    let honest = worker(&[("f2.txt", "2\n")], &list(&["f1", "f2"]));
    let sessions = json!({"1": initializer(&list(&[])), "2": attack, "3": honest});
    let out = env.init("# Spec\nTwo files.\n", &env.model(sessions));
    assert!(out.status.success(), "{}", text(&out));
    // A human commit: tracked data, and checks that run the session's code
    // and then look at the data; every checkout links (above = 0).
    let project = env.project();
    std::fs::create_dir_all(project.join("data")).unwrap();
    for i in 0..FILES {
        std::fs::write(project.join(format!("data/d{i}")), format!("data {i}\n")).unwrap();
    }
    let toml_path = project.join("longrun.toml");
    let toml = std::fs::read_to_string(&toml_path).unwrap();
    // Without overlays (`[sandbox] overlay = false`): the linked checkout.
    let commands = format!(
        "[checks]\nlink_unchanged_above = 0\ncommands = ['if [ -f attack.sh ]; then sh attack.sh; fi', '{INTACT}']"
    );
    // The worker's own check rounds would run the attack in its workspace.
    let toml = toml
        .replacen("check_rounds = 3", "check_rounds = 0", 1)
        .replacen("commands = []", "", 1)
        .replacen("[checks]", &commands, 1)
        .replacen("[sandbox]", "[sandbox]\noverlay = false", 1);
    assert!(toml.contains("link_unchanged_above"), "no [checks] table");
    assert!(toml.contains("check_rounds = 0"), "no check_rounds");
    assert!(toml.contains("overlay = false"), "no [sandbox] table");
    std::fs::write(&toml_path, toml).unwrap();
    env.git(&["add", "-A"]);
    env.git(&[
        "commit",
        "-qm",
        "data, and checks that run the session's code",
    ]);
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    env
}

fn assert_cache_intact(env: &Env) {
    let cached = env.project().join(".longrun/checkout/tree/data");
    for i in 0..FILES {
        let path = cached.join(format!("d{i}"));
        let meta = std::fs::symlink_metadata(&path).expect("the cached checkout was used");
        assert_eq!(
            meta.permissions().mode() & 0o7777,
            0o644,
            "{}",
            path.display()
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("data {i}\n"),
            "{}",
            path.display()
        );
    }
    let names = std::fs::read_dir(&cached).unwrap().count();
    assert_eq!(
        names, FILES,
        "the attack added names to the cached checkout"
    );
}

fn attack_on_linked_files(by: By) {
    let env = project_with_data(by);
    let log = env.log_json();
    let verdict = |n: u64| {
        let s = log.iter().find(|s| s["session"] == n).expect("session");
        (s["verdict"].clone(), s["reasons"].to_string())
    };
    // The attack's own checks pass: nothing it tried took, quietly.
    assert_eq!(verdict(2).0, "accepted", "{}", verdict(2).1);
    assert_cache_intact(&env);
    // The control: the next session's checks run on main's data, linked.
    assert_eq!(verdict(3).0, "accepted", "{}", verdict(3).1);
    assert_eq!(env.on_main("data/d7").as_deref(), Some("data 7\n"));
    for i in 0..FILES {
        let on_disk = std::fs::read_to_string(env.project().join(format!("data/d{i}"))).unwrap();
        assert_eq!(on_disk, format!("data {i}\n"));
    }
}

by_both!(
    checked_code_cannot_change_the_files_a_checkout_links_from_main,
    checked_code_cannot_change_the_files_a_checkout_links_from_main_as_uid_65534,
    attack_on_linked_files
);
