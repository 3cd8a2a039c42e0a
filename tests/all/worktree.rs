//! The user's work tree: `continue` refuses uncommitted changes to tracked
//! files (or stashes them with --stash) and says when longrun.toml is not
//! main's; an init whose initializer was never accepted can be redone.

use serde_json::json;

use crate::common::*;

fn one(passes: bool) -> String {
    features(&[("F001", passes, "test -f done.txt")])
}

fn initialized() -> Env {
    let env = Env::new();
    let model = env.model(json!({
        "1": initializer(&one(false)),
        "*": worker(&[("done.txt", "done\n")], &one(true)),
    }));
    let out = env.init("# Spec\nA tiny thing.\n", &model);
    assert!(out.status.success(), "{}", text(&out));
    env
}

#[test]
fn continue_refuses_uncommitted_changes_naming_them_and_stash_puts_them_aside() {
    let env = initialized();
    std::fs::write(
        env.project().join("progress.md"),
        "# Progress\nmy own notes\n",
    )
    .unwrap();
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(stderr(&out).contains("progress.md"), "{}", text(&out));
    assert!(stderr(&out).contains("--stash"), "{}", text(&out));
    assert_eq!(env.log_json().len(), 1, "no session started");
    // Untracked files are the user's business and do not count.
    std::fs::write(env.project().join("scratch.txt"), "x\n").unwrap();
    let out = env.run(&["continue", "--dir", &env.dir_arg(), "--stash"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("stashed the uncommitted changes to progress.md"),
        "{}",
        text(&out)
    );
    assert_eq!(env.log_json().len(), 2);
    let stashed = env.git(&["stash", "show", "-p", "stash@{0}"]);
    assert!(stashed.contains("my own notes"), "{stashed}");
    assert!(env.project().join("scratch.txt").exists());
}

#[test]
fn an_edited_longrun_toml_is_named_and_one_main_does_not_have_is_warned_of() {
    let env = initialized();
    let toml = env.project().join("longrun.toml");
    let original = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{original}\n[budget]\nmax_steps = 3\n")).unwrap();
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        stderr(&out).contains("longrun.toml: a run uses main's settings"),
        "{}",
        text(&out)
    );
    // Committed on a branch of the user's own, it still differs from main's:
    // said, not refused.
    env.git(&["checkout", "-q", "-b", "mine"]);
    env.git(&["commit", "-qam", "my settings"]);
    let out = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stdout(&out).contains("warning: longrun.toml in the work tree differs from main's"),
        "{}",
        text(&out)
    );
}

#[test]
fn an_init_whose_initializer_failed_is_redone_with_corrected_flags() {
    let env = Env::new();
    // The first model leaves nothing behind: the initializer fails.
    let broken = env.model(json!({ "1": [done("nothing to do")] }));
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let first = env.init("# Spec\nA tiny thing.\n", &broken);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert!(
        stderr(&first).contains("init SPEC --dir"),
        "{}",
        text(&first)
    );
    let good = env.write(
        "good.json",
        &json!({ "sessions": { "*": initializer(&one(false)) } }).to_string(),
    );
    let good = format!("scripted:{}", good.display());
    let again = env.run(&[
        "init",
        spec.to_str().unwrap(),
        "--dir",
        &env.dir_arg(),
        "--model",
        &good,
        "--force",
    ]);
    assert!(again.status.success(), "{}", text(&again));
    let toml = env.on_main("longrun.toml").unwrap();
    assert!(
        toml.contains("good.json"),
        "the corrected model is committed: {toml}"
    );
    let log = env.log_json();
    assert_eq!(log.last().unwrap()["verdict"], "accepted", "{log:#?}");
    // Once accepted, init refuses.
    let third = env.run(&["init", spec.to_str().unwrap(), "--dir", &env.dir_arg()]);
    assert_eq!(third.status.code(), Some(2), "{}", text(&third));
    assert!(stderr(&third).contains("was accepted"), "{}", text(&third));
}
