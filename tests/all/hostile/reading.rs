//! What a session can read: the credential files inside a granted
//! toolchain directory read as empty, and the sandbox profile is never a
//! file a session could have changed (a bundled name, a path outside the
//! project, or a protected file of the project as it is on main).

use serde_json::{json, Value};

use super::broker::{tool_result, trailers, As};
use crate::common::*;

fn one(passes: bool) -> String {
    features(&[("a", passes, "test -f a.txt")])
}

/// An honest worker for feature a, after `first` turns.
fn worker(first: Vec<Value>) -> Value {
    let mut turns = first;
    turns.push(turn(vec![
        write_file("a.txt", "done\n"),
        write_file("features.json", &one(true)),
    ]));
    turns.push(turn(vec![bash(
        "echo note >> progress.md && git add -A && git commit -qm work",
    )]));
    turns.push(done("done"));
    Value::Array(turns)
}

fn init(who: &As, model: &str, extra: &[&str]) {
    let spec = who.env.write("spec.md", "# One feature\nBuild a.\n");
    let o = who.run(|cmd| {
        cmd.args(["init", spec.to_str().unwrap(), "--dir"])
            .arg(who.env.project())
            .args(["--model", model])
            .args(extra);
    });
    assert!(o.status.success(), "{:?}: {}", who.user, text(&o));
}

#[test]
fn credential_files_inside_a_toolchain_grant_read_as_empty() {
    for user in users() {
        let env = Env::new();
        let who = As::new(&env, user);
        // The real home (HOME of longrun), whose ~/.cargo the default profile grants.
        let home = env.path("home");
        env.write(
            "home/.cargo/credentials.toml",
            "[registry]\ntoken = \"CARGO-SECRET-TOKEN\"\n",
        );
        env.write("home/.cargo/credentials", "token = \"OLD-CARGO-SECRET\"\n");
        env.write("home/.cargo/config.toml", "# TOOLCHAIN-CONFIG\n");
        let read = format!(
            "python3 -c \"import sys\nfor p in sys.argv[1:]:\n  try: print(p, repr(open(p).read()))\n  except OSError as e: print(p, 'refused', e.errno)\" \
             {h}/.cargo/credentials.toml {h}/.cargo/credentials {h}/.cargo/config.toml; echo read-over",
            h = home.display()
        );
        let model = env.model(json!({
            "1": initializer(&one(false)),
            "2": worker(vec![turn(vec![bash(&read)])]),
        }));
        init(&who, &model, &[]);
        let o = who.continue_run(&model, &[]);
        assert!(o.status.success(), "{user:?}: {}", text(&o));
        let message = who.last_message();
        assert_eq!(
            trailers(&message, "Longrun-Verdict"),
            ["accepted"],
            "{message}"
        );
        let layers = trailers(&message, "Longrun-Sandbox").join("\n");
        assert!(
            layers.contains("mounts: credential files hidden")
                && layers.contains(".cargo/credentials.toml"),
            "{user:?}: {layers}"
        );
        let t = env.transcript(2);
        let result = tool_result(&t, "read-over");
        assert!(
            result.contains("/.cargo/credentials.toml ''"),
            "{user:?}: {result}"
        );
        assert!(
            result.contains("/.cargo/credentials ''"),
            "{user:?}: {result}"
        );
        // The control: the rest of the toolchain directory is readable.
        assert!(result.contains("TOOLCHAIN-CONFIG"), "{user:?}: {result}");
        let all = serde_json::to_string(&t).unwrap();
        assert!(!all.contains("CARGO-SECRET-TOKEN"), "{user:?}");
        assert!(!all.contains("OLD-CARGO-SECRET"), "{user:?}");
        // Nothing on the host changed.
        let kept = std::fs::read_to_string(home.join(".cargo/credentials.toml")).unwrap();
        assert!(kept.contains("CARGO-SECRET-TOKEN"));
    }
}

const PROFILE: &str = "description = \"the project's own profile\"\nnetwork = \"none\"\n\n[limits]\nprocesses = 512\nmemory_mb = 4096\nfile_size_mb = 1024\nopen_files = 1024\n";
const LOOSE: &str = "description = \"LOOSENED\"\nnetwork = \"host\"\n\n[filesystem]\nwritable = [\"/\"]\n\n[limits]\nprocesses = 512\nmemory_mb = 4096\nfile_size_mb = 1024\nopen_files = 1024\n";

by_both!(
    a_project_profile_is_protected_and_read_as_it_is_on_main,
    a_project_profile_is_protected_and_read_as_it_is_on_main_as_uid_65534,
    project_profile
);

fn project_profile(by: By) {
    let env = Env::new();
    let who = As::new(&env, by);
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("profile.toml"), PROFILE).unwrap();
    // Session 2 tries to loosen the profile for the sessions after it; session
    // 3 does the same work honestly.
    let model = env.model(json!({
        "1": initializer(&one(false)),
        // The profile is read-only in the sandbox: the loosened one goes
        // into the commit through the index alone.
        "2": worker(vec![turn(vec![
            write_file("loose.tmp", LOOSE),
            bash("git update-index --cacheinfo 100644,$(git hash-object -w loose.tmp),profile.toml \
                  && git update-index --skip-worktree profile.toml && rm loose.tmp"),
        ])]),
        "3": worker(vec![]),
    }));
    let profile = env.project().join("profile.toml");
    init(&who, &model, &["--profile", profile.to_str().unwrap()]);
    let toml = env.on_main("longrun.toml").unwrap();
    assert!(toml.contains("profile = \"./profile.toml\""), "{toml}");
    assert!(toml.contains("\"profile.toml\"]"), "not protected: {toml}");
    assert_eq!(env.on_main("profile.toml").as_deref(), Some(PROFILE));
    let message = who.last_message();
    assert!(
        trailers(&message, "Longrun-Sandbox").contains(&"profile profile.toml (on main)"),
        "{message}"
    );

    let o = who.continue_run(&model, &[]);
    assert!(o.status.code().is_some(), "{}", text(&o));
    let message = who.last_message();
    assert_eq!(
        trailers(&message, "Longrun-Verdict"),
        ["rejected"],
        "{message}"
    );
    assert!(
        trailers(&message, "Longrun-Reason")
            .iter()
            .any(|r| r.contains("profile.toml")),
        "{message}"
    );
    assert_eq!(env.on_main("profile.toml").as_deref(), Some(PROFILE));

    // Whatever the work tree holds, the profile is main's. (Uncommitted, the
    // edit would stop `continue`: here it is committed on a branch of the user's.)
    env.git(&["checkout", "-q", "-b", "mine"]);
    std::fs::write(env.project().join("profile.toml"), LOOSE).unwrap();
    env.git(&["commit", "-qam", "a looser profile on my branch"]);
    let o = who.continue_run(&model, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let message = who.last_message();
    assert_eq!(
        trailers(&message, "Longrun-Verdict"),
        ["accepted"],
        "{message}"
    );
    let layers = trailers(&message, "Longrun-Sandbox").join("\n");
    assert!(
        layers.contains("profile profile.toml (on main)"),
        "{layers}"
    );
    assert!(!layers.contains("network: host"), "{layers}");
}

by_both!(
    an_unprotected_project_file_as_profile_is_refused_naming_the_field_and_the_fix,
    an_unprotected_project_file_as_profile_is_refused_naming_the_field_and_the_fix_as_uid_65534,
    unprotected_profile
);

fn unprotected_profile(by: By) {
    let env = Env::new();
    let who = As::new(&env, by);
    let model = env.model(json!({"1": initializer(&one(false)), "2": worker(vec![])}));
    init(&who, &model, &[]);
    // --profile naming a file of the project, from inside it.
    std::fs::write(env.project().join("loose.toml"), LOOSE).unwrap();
    who.git(&["add", "loose.toml"]);
    who.git(&[
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@x",
        "commit",
        "-qm",
        "add loose.toml",
    ]);
    let o = who.run(|cmd| {
        cmd.current_dir(env.project()).args([
            "continue",
            "--sessions",
            "1",
            "--model",
            &model,
            "--profile",
            "./loose.toml",
        ]);
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("--profile ./loose.toml: loose.toml is a file of the project"),
        "{}",
        text(&o)
    );
    // The same in longrun.toml.
    // The user points longrun.toml at a file of the project without protecting it.
    let toml = env.on_main("longrun.toml").unwrap();
    let toml = toml.replace("profile = \"default\"", "profile = \"./loose.toml\"");
    std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    who.git(&["add", "longrun.toml"]);
    who.git(&[
        "-c",
        "user.name=u",
        "-c",
        "user.email=u@x",
        "commit",
        "-qm",
        "use loose.toml",
    ]);
    let before = who.git(&["rev-parse", "main"]);
    let o = who.continue_run(&model, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = stderr(&o);
    assert!(
        said.contains(
            "[sandbox] profile: loose.toml is a file of the project that is not protected"
        ),
        "{said}"
    );
    assert!(
        said.contains("add \"loose.toml\" to [run] protected"),
        "{said}"
    );
    assert_eq!(who.git(&["rev-parse", "main"]), before, "a session ran");
}

#[test]
fn without_a_mount_namespace_credential_files_are_left_out_of_the_landlock_grants() {
    // Inside a sandbox, seccomp denies namespaces: an inner sandbox has no
    // mount namespace to cover the files with, so Landlock leaves them out.
    for user in users() {
        let base = std::path::Path::new("/var/tmp");
        let root = tempfile::Builder::new()
            .prefix("longrun-cred-")
            .tempdir_in(if base.is_dir() {
                base.to_path_buf()
            } else {
                std::env::temp_dir()
            })
            .unwrap();
        let work = root.path().join("work");
        std::fs::create_dir_all(work.join("inner-ws")).unwrap();
        std::fs::create_dir_all(work.join("home/.cargo")).unwrap();
        std::fs::write(work.join("home/.cargo/credentials.toml"), "NESTED-SECRET\n").unwrap();
        std::fs::write(work.join("home/.cargo/config.toml"), "NESTED-CONFIG\n").unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_longrun"), work.join("longrun")).unwrap();
        if user == By::Nobody {
            chown_tree(root.path(), "65534:65534");
        }
        let mut cmd = command_by(user, env!("CARGO_BIN_EXE_longrun"));
        let script = "HOME=$PWD/home ./longrun sandbox --workspace inner-ws -- sh -c \
                      \"cat $PWD/home/.cargo/credentials.toml; echo rc=\\$?; cat $PWD/home/.cargo/config.toml\"";
        let o = cmd
            .args(["sandbox", "--workspace"])
            .arg(&work)
            .args(["--", "bash", "-c", script])
            .current_dir(&work)
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        let said = format!("{}{}", stdout(&o), stderr(&o));
        assert!(said.contains("rc=1"), "{user:?}: {said}");
        assert!(!said.contains("NESTED-SECRET"), "{user:?}: {said}");
        assert!(said.contains("NESTED-CONFIG"), "{user:?}: {said}");
        assert!(
            said.contains("not enforced: credentials: not covered by a mount"),
            "{user:?}: {said}"
        );
    }
}
