//! Forged verification results (issue 11, item 5): each check is its own
//! confined process started by the orchestrator, its command an argument,
//! its output read from a pipe, its result its exit status. Nothing the
//! checked code writes decides a verdict, and no path of the host reaches
//! a transcript through it.

use serde_json::json;

use crate::common::*;
use crate::verified::{
    assert_accepted, assert_rejected, calc_project, honest_mul, list, session, verdict,
};

/// calc.py whose import does `attack` and whose mul is wrong.
fn wrong_mul_after(attack: &str) -> String {
    format!("import os\nimport glob\n{attack}\n\n\ndef mul(a, b):\n    return 0\n")
}

by_both!(
    checked_code_rewriting_result_files_and_check_scripts_forges_nothing,
    checked_code_rewriting_result_files_and_check_scripts_forges_nothing_as_uid_65534,
    forged_results
);

fn forged_results(by: By) {
    // Where the old runner kept its scripts and results, and everywhere
    // else the code can reach: every *.rc says 0, every *.sh exits 0.
    let attack = "for root in [os.environ.get('TMPDIR', '/tmp'), os.environ.get('HOME', '/'), '..', '../..']:\n    \
        for p in glob.glob(os.path.join(root, '**', '*'), recursive=True):\n        \
            try:\n                \
                if p.endswith('.rc'):\n                    open(p, 'w').write('0\\n')\n                \
                elif p.endswith('.sh'):\n                    open(p, 'w').write('exit 0\\n')\n            \
            except OSError:\n                pass\n\
        for d in ['longrun-checks', 'checks']:\n    \
            os.makedirs(os.path.join(os.environ.get('TMPDIR', '/tmp'), d), exist_ok=True)\n    \
            for i in range(8):\n        \
                open(os.path.join(os.environ.get('TMPDIR', '/tmp'), d, f'{i}.rc'), 'w').write('0\\n')";
    let env = calc_project(
        by,
        None,
        &[
            session(vec![
                write_file("calc.py", &wrong_mul_after(attack)),
                write_file("features.json", &list(true, false)),
            ]),
            honest_mul(),
        ],
    );
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_rejected(&env, 2, &["feature mul failed"], &list(true, false));
    assert_accepted(&env, 3);
}

by_both!(
    a_result_log_symlinked_to_proc_environ_leaks_no_key,
    a_result_log_symlinked_to_proc_environ_leaks_no_key_as_uid_65534,
    environ_log
);

fn environ_log(by: By) {
    const KEY: &str = "FAKE-KEY-5e1c7";
    // The old runner read `$TMPDIR/longrun-checks/N.log` after the run; the
    // code replaced them with links to the orchestrator's environment, and
    // prints its own environment too.
    let attack = "t = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'longrun-checks')\n\
        os.makedirs(t, exist_ok=True)\n\
        for i in range(8):\n    \
            p = os.path.join(t, f'{i}.log')\n    \
            try:\n        os.remove(p)\n    except OSError:\n        pass\n    \
            os.symlink('/proc/self/environ', p)\n\
        print(open('/proc/self/environ').read().replace('\\0', ' '))\n\
        print(open('/proc/1/environ').read().replace('\\0', ' ') if os.access('/proc/1/environ', os.R_OK) else '')";
    let env = calc_project(
        by,
        None,
        &[session(vec![
            write_file("calc.py", &wrong_mul_after(attack)),
            write_file("features.json", &list(true, false)),
        ])],
    );
    let out = env.run_with(by, |cmd| {
        cmd.args(["continue", "--dir", &env.dir_arg()])
            .env("OPENAI_API_KEY", KEY)
            .env("LONGRUN_API_KEY", KEY);
    });
    assert!(out.status.success(), "{}", text(&out));
    assert_rejected(&env, 2, &["feature mul failed"], &list(false, false));
    let transcript = serde_json::to_string(&env.transcript(2)).unwrap();
    assert!(!transcript.contains(KEY), "the key reached the transcript");
    // The check's own output did reach it: the code ran and printed.
    assert!(transcript.contains("PYTHONSAFEPATH=1"), "{transcript}");
    let log =
        std::fs::read_to_string(env.project().join(".longrun/longrun.log")).unwrap_or_default();
    assert!(!log.contains(KEY), "the key reached longrun.log");
    let history = env.git(&["log", "--all", "--format=%B"]);
    assert!(!history.contains(KEY), "the key reached git");
    assert!(!stdout(&out).contains(KEY) && !stderr(&out).contains(KEY));
}

by_both!(
    check_output_with_nul_and_invalid_utf8_is_recorded_and_the_run_goes_on,
    check_output_with_nul_and_invalid_utf8_is_recorded_and_the_run_goes_on_as_uid_65534,
    nul_output
);

fn nul_output(by: By) {
    let attack = "import sys\nsys.stdout.buffer.write(b'before\\0after \\xff\\xfe \\x1b[2J\\r\\n')\nsys.stdout.flush()";
    let env = calc_project(
        by,
        None,
        &[
            session(vec![
                write_file("calc.py", &wrong_mul_after(attack)),
                write_file("features.json", &list(true, false)),
            ]),
            honest_mul(),
        ],
    );
    let out = env.continue_by(by, 2);
    assert!(out.status.success(), "{}", text(&out));
    assert_rejected(&env, 2, &["feature mul failed"], &list(true, false));
    assert_accepted(&env, 3);
    let checks: Vec<String> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["type"] == "check")
        .map(|e| e["output_tail"].as_str().unwrap_or("").to_string())
        .collect();
    let all = checks.join("\n");
    assert!(all.contains("beforeafter \u{fffd}\u{fffd} [2J"), "{all:?}");
    assert!(!all.contains('\0') && !all.contains('\x1b') && !all.contains('\r'));
}

by_both!(
    a_project_path_with_a_space_verifies,
    a_project_path_with_a_space_verifies_as_uid_65534,
    path_with_a_space
);

fn path_with_a_space(by: By) {
    let env = Env::new();
    let dir = env.path("my project");
    let dir_arg = dir.display().to_string();
    let spec = env.write("spec.md", "# Two files\n");
    let two = features(&[
        ("a", false, "test -f 'a b.txt'"),
        ("b", false, "test -f b.txt"),
    ]);
    let done = features(&[
        ("a", true, "test -f 'a b.txt'"),
        ("b", false, "test -f b.txt"),
    ]);
    let model = env.model(json!({
        "1": initializer(&two),
        "2": worker(&[("a b.txt", "x\n")], &done),
    }));
    let out = env.run_by(
        by,
        &[
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &dir_arg,
            "--model",
            &model,
        ],
    );
    assert!(out.status.success(), "{}", text(&out));
    let out = env.run_by(by, &["continue", "--dir", &dir_arg, "--sessions", "1"]);
    assert!(out.status.success(), "{}", text(&out));
    let log = env.run(&["log", "--json", "--dir", &dir_arg]);
    let log: serde_json::Value = serde_json::from_slice(&log.stdout).unwrap();
    assert_eq!(log[1]["verdict"], "accepted", "{log:#}");
    let checks: Vec<(String, bool)> =
        std::fs::read_to_string(dir.join(".longrun/sessions/0002/transcript.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["type"] == "check")
            .map(|e| (e["name"].as_str().unwrap().to_string(), e["passed"] == true))
            .collect();
    assert_eq!(
        checks,
        [
            ("init.sh".to_string(), true),
            ("feature a".to_string(), true)
        ]
    );
}

by_both!(
    an_init_sh_that_fails_stops_the_checks_with_the_reason,
    an_init_sh_that_fails_stops_the_checks_with_the_reason_as_uid_65534,
    failing_init_sh
);

fn failing_init_sh(by: By) {
    let toml = "[run]\nprotected = [\"SPEC.md\", \"longrun.toml\"]\n";
    let env = calc_project(
        by,
        Some(toml),
        &[
            session(vec![
                write_file(
                    "init.sh",
                    "#!/usr/bin/env bash\necho setup broke >&2\nexit 3\n",
                ),
                write_file("calc.py", "def mul(a, b):\n    return a * b\n"),
                write_file("features.json", &list(true, false)),
            ]),
            honest_mul(),
        ],
    );
    env.continue_by(by, 2);
    assert_rejected(
        &env,
        2,
        &["init.sh failed (exit status 3): setup broke; no check ran"],
        &list(true, false),
    );
    let names: Vec<String> = env
        .transcript(2)
        .into_iter()
        .filter(|e| e["type"] == "check")
        .map(|e| e["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(names, ["init.sh"]);
    assert_accepted(&env, 3);
}

by_both!(
    a_global_check_that_cannot_run_is_named_apart_from_a_failure,
    a_global_check_that_cannot_run_is_named_apart_from_a_failure_as_uid_65534,
    global_check_cannot_run
);

fn global_check_cannot_run(by: By) {
    let toml = "[checks]\ncommands = [\"no-such-linter --strict\"]\n";
    let env = calc_project(by, Some(toml), &[honest_mul()]);
    env.continue_by(by, 1);
    let (v, why) = verdict(&env, 2);
    assert_eq!(v, "rejected", "{why}");
    assert!(
        why.contains("check 1 cannot run: `no-such-linter --strict` (command not found"),
        "{why}"
    );
    assert!(!why.contains("feature mul"), "{why}");
}

by_both!(
    each_check_gets_a_fresh_home_and_tmpdir,
    each_check_gets_a_fresh_home_and_tmpdir_as_uid_65534,
    fresh_home_and_tmpdir
);

fn fresh_home_and_tmpdir(by: By) {
    // init.sh leaves files in HOME and TMPDIR; the check sees neither.
    let toml = "[run]\nprotected = [\"SPEC.md\", \"longrun.toml\"]\n";
    let leave = "#!/usr/bin/env bash\nset -e\ntouch \"$HOME/left\" \"$TMPDIR/left\"\n";
    let see = "import os\nh = os.path.exists(os.path.join(os.environ['HOME'], 'left'))\n\
        t = os.path.exists(os.path.join(os.environ['TMPDIR'], 'left'))\n\n\n\
        def mul(a, b):\n    return a * b if not (h or t) else 0\n";
    let env = calc_project(
        by,
        Some(toml),
        &[session(vec![
            write_file("init.sh", leave),
            write_file("calc.py", see),
            write_file("features.json", &list(true, false)),
        ])],
    );
    env.continue_by(by, 1);
    assert_accepted(&env, 2);
}
