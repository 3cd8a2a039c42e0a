//! Every error a new user can cause in init, continue, status, show, report
//! and longrun.toml: exit code 2 and one line on stderr that names the cause
//! and the fix. No backtrace, even with RUST_BACKTRACE set.

use std::process::Output;

use serde_json::json;

use crate::common::*;

/// Run longrun with a backtrace asked for, to prove none is printed.
fn fails(env: &Env, args: &[&str]) -> Output {
    env.longrun()
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .unwrap()
}

/// `out` exited `code` with exactly one `error:` line on stderr holding every part.
fn one_line(out: &Output, code: i32, parts: &[&str]) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{}", text(out));
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line, not {}: {err}", lines.len());
    assert!(lines[0].starts_with("error: "), "{err}");
    for bad in ["panicked", "backtrace", "Caused by", "RUST_BACKTRACE"] {
        assert!(!err.contains(bad), "{bad} in: {err}");
    }
    for part in parts {
        assert!(err.contains(part), "`{part}` missing from: {err}");
    }
}

fn spec(env: &Env) -> String {
    env.write("spec.md", "# Spec\nA file.\n")
        .display()
        .to_string()
}

fn a_model(env: &Env) -> String {
    env.model(json!({"1": initializer(&features(&[("f1", false, "test -f a.txt")]))}))
}

/// A project whose initializer session was accepted.
fn initialized() -> Env {
    let env = Env::new();
    let out = env.init("# Spec\nA file.\n", &a_model(&env));
    assert!(out.status.success(), "{}", text(&out));
    env
}

#[test]
fn init_with_a_missing_spec() {
    let env = Env::new();
    let out = fails(
        &env,
        &[
            "init",
            "nope.md",
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(
        &out,
        2,
        &[
            "cannot read the spec nope.md",
            "No such file",
            "pass the path of a Markdown spec",
        ],
    );
    assert!(
        !env.project().exists(),
        "a failed init leaves nothing behind"
    );
}

#[test]
fn init_with_a_directory_as_spec() {
    let env = Env::new();
    let out = fails(
        &env,
        &[
            "init",
            ".",
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(
        &out,
        2,
        &[
            "cannot read the spec .",
            "Is a directory",
            "pass the path of a Markdown spec",
        ],
    );
}

#[test]
fn init_with_an_empty_spec() {
    let env = Env::new();
    let spec = env.write("empty.md", " \n\n");
    let out = fails(
        &env,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(&out, 2, &["is empty", "describe what to build in it first"]);
}

#[test]
fn init_with_a_spec_that_is_not_utf8() {
    let env = Env::new();
    let spec = env.path("latin1.md");
    std::fs::write(&spec, b"# Caf\xe9\n").unwrap();
    let out = fails(
        &env,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(
        &out,
        2,
        &["latin1.md is not UTF-8 text", "save it as UTF-8"],
    );
}

#[test]
fn init_in_a_dirty_repo() {
    let env = Env::new();
    std::fs::create_dir_all(env.project()).unwrap();
    crate::common::git_command()
        .arg("-C")
        .arg(env.project())
        .args(["init", "-q"])
        .status()
        .unwrap();
    std::fs::write(env.project().join("notes.txt"), "mine\n").unwrap();
    let out = fails(
        &env,
        &[
            "init",
            &spec(&env),
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(
        &out,
        2,
        &[
            "has uncommitted changes (notes.txt)",
            "commit or stash them first",
        ],
    );
}

#[test]
fn init_where_the_dir_is_a_file() {
    let env = Env::new();
    let file = env.write("afile", "x");
    let out = fails(
        &env,
        &[
            "init",
            &spec(&env),
            "--dir",
            file.to_str().unwrap(),
            "--model",
            &a_model(&env),
        ],
    );
    one_line(
        &out,
        2,
        &[
            "cannot create the project directory",
            "afile",
            "pass --dir with a directory",
        ],
    );
}

#[test]
fn init_twice() {
    let env = Env::new();
    let model = a_model(&env);
    assert!(env.init("# Spec\nA file.\n", &model).status.success());
    let out = fails(
        &env,
        &[
            "init",
            &spec(&env),
            "--dir",
            &env.dir_arg(),
            "--model",
            &model,
        ],
    );
    one_line(
        &out,
        2,
        &[
            "already holds a longrun project",
            "run `longrun continue --dir",
        ],
    );
}

#[test]
fn init_without_a_model() {
    let env = Env::new();
    let out = fails(&env, &["init", &spec(&env), "--dir", &env.dir_arg()]);
    one_line(
        &out,
        2,
        &[
            "no model chosen",
            "pass --model PROVIDER:NAME",
            "LONGRUN_MODEL",
        ],
    );
}

#[test]
fn unknown_model_strings() {
    let env = Env::new();
    let spec = spec(&env);
    let dir = env.dir_arg();
    let cases: [(&str, &[&str]); 4] = [
        (
            "gpt-4o",
            &[
                "model `gpt-4o` has no provider",
                "write it as PROVIDER:NAME",
                "scripted:PATH",
            ],
        ),
        (
            "nosuch:model",
            &["unknown model provider `nosuch`", "use one of", "openai:"],
        ),
        (
            "scripted:",
            &[
                "names no model after `scripted:`",
                "write it as PROVIDER:NAME",
            ],
        ),
        (
            "scripted:missing.json",
            &[
                "cannot read scripted model",
                "missing.json",
                "check the path given by --model",
            ],
        ),
    ];
    for (model, parts) in cases {
        let out = fails(&env, &["init", &spec, "--dir", &dir, "--model", model]);
        one_line(&out, 2, parts);
    }
    let out = env
        .longrun()
        .args(["init", &spec, "--dir", &dir])
        .env("LONGRUN_MODEL", "gpt-4o")
        .output()
        .unwrap();
    one_line(&out, 2, &["model `gpt-4o` has no provider"]);
}

/// A prepared longrun.toml holding `toml`, then `init`.
fn init_with_toml(toml: &str) -> Output {
    let env = Env::new();
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(env.project().join("longrun.toml"), toml).unwrap();
    fails(
        &env,
        &[
            "init",
            &spec(&env),
            "--dir",
            &env.dir_arg(),
            "--model",
            &a_model(&env),
        ],
    )
}

#[test]
fn broken_longrun_toml_names_the_line_and_the_field() {
    one_line(
        &init_with_toml("[budget\nsteps = 3\n"),
        2,
        &[
            "longrun.toml:1:8 is not valid",
            "unclosed table",
            "fix that field or remove it",
        ],
    );
    one_line(
        &init_with_toml("[budget]\nstep = 3\n"),
        2,
        &[
            "longrun.toml:2:1 is not valid",
            "unknown field `step`",
            "expected one of `steps`",
        ],
    );
    one_line(
        &init_with_toml("[budget]\nsteps = \"many\"\n"),
        2,
        &[
            "longrun.toml:2:9 is not valid",
            "invalid type: string \"many\"",
            "fix that field",
        ],
    );
    one_line(
        &init_with_toml("[nonsense]\n"),
        2,
        &[
            "longrun.toml:1:2 is not valid (`[nonsense]`)",
            "unknown field `nonsense`",
        ],
    );
}

#[test]
fn a_broken_longrun_toml_committed_on_main_stops_every_command() {
    let env = initialized();
    std::fs::write(
        env.project().join("longrun.toml"),
        "[run]\nmax_attempts = -1\n",
    )
    .unwrap();
    env.git(&["commit", "-qam", "break the settings"]);
    let dir = env.dir_arg();
    for args in [
        vec!["status", "--dir", &dir],
        vec!["log", "--dir", &dir],
        vec!["continue", "--dir", &dir],
    ] {
        one_line(
            &fails(&env, &args),
            2,
            &[
                "longrun.toml:2:16 is not valid",
                "max_attempts",
                "fix that field",
            ],
        );
    }
}

#[test]
fn not_a_longrun_project() {
    let env = Env::new();
    std::fs::create_dir_all(env.project()).unwrap();
    let dir = env.dir_arg();
    let commands: [&[&str]; 6] = [
        &["status", "--dir", &dir],
        &["log", "--dir", &dir],
        &["continue", "--dir", &dir],
        &["show", "1", "--dir", &dir],
        &["report", "--dir", &dir],
        &["retry", "f1", "--dir", &dir],
    ];
    for args in commands {
        one_line(
            &fails(&env, args),
            2,
            &["is not a longrun project", "run `longrun init SPEC --dir"],
        );
    }
    // A git repo without longrun.toml is not one either.
    crate::common::git_command()
        .arg("-C")
        .arg(env.project())
        .args(["init", "-q"])
        .status()
        .unwrap();
    one_line(
        &fails(&env, &["status", "--dir", &dir]),
        2,
        &["is not a longrun project"],
    );
}

#[test]
fn a_project_dir_that_does_not_exist() {
    let env = Env::new();
    let out = fails(&env, &["status", "--dir", "nowhere"]);
    one_line(
        &out,
        2,
        &[
            "nowhere does not exist or is not a directory",
            "pass --dir with the project's directory",
        ],
    );
}

#[test]
fn continue_without_init_sh_on_main() {
    let env = initialized();
    env.git(&["rm", "-q", "init.sh"]);
    env.git(&["commit", "-qm", "drop init.sh"]);
    let out = fails(&env, &["continue", "--dir", &env.dir_arg()]);
    one_line(
        &out,
        2,
        &[
            "init.sh is missing on main",
            "every session runs it first",
            "restore it and commit it",
        ],
    );
}

#[test]
fn continue_with_init_sh_not_executable() {
    let env = initialized();
    env.git(&["update-index", "--chmod=-x", "init.sh"]);
    env.git(&["commit", "-qm", "init.sh loses its x bit"]);
    let out = fails(&env, &["continue", "--dir", &env.dir_arg()]);
    one_line(
        &out,
        2,
        &["init.sh on main", "is not executable", "chmod +x init.sh"],
    );
}

#[test]
fn continue_with_a_broken_features_json_on_main() {
    let env = initialized();
    std::fs::write(env.project().join("features.json"), "{ not json").unwrap();
    env.git(&["commit", "-qam", "break the feature list"]);
    let out = fails(&env, &["continue", "--dir", &env.dir_arg()]);
    one_line(
        &out,
        2,
        &[
            "features.json is not valid JSON",
            "fix it with a commit on main",
        ],
    );
}

#[test]
fn show_a_session_that_does_not_exist() {
    let env = initialized();
    let dir = env.dir_arg();
    one_line(
        &fails(&env, &["show", "9", "--dir", &dir]),
        2,
        &["there is no session 9", "`longrun log --dir"],
    );
    one_line(
        &fails(&env, &["show", "latest", "--dir", &dir]),
        2,
        &["`latest` is not a session number", "longrun show 2"],
    );
    // Recorded on main, but the transcript is on another machine.
    std::fs::remove_dir_all(env.project().join(".longrun/sessions/0001")).unwrap();
    one_line(
        &fails(&env, &["show", "1", "--dir", &dir]),
        2,
        &["session 1 is recorded on main", "transcript", "`git show"],
    );
}

#[test]
fn report_into_a_directory_that_does_not_exist() {
    let env = initialized();
    let out = fails(
        &env,
        &[
            "report",
            "--dir",
            &env.dir_arg(),
            "--out",
            "no/such/dir/r.html",
        ],
    );
    one_line(
        &out,
        2,
        &[
            "cannot write the report to no/such/dir/r.html",
            "pass --out with a file in a directory that exists",
        ],
    );
}
