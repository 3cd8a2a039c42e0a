//! The default profile on every Landlock ABI from none to the newest
//! (simulated with LONGRUN_LANDLOCK_ABI): it runs with what the kernel
//! offers, says once what it could not enforce and records it; the strict
//! profile refuses before anything is written.

use serde_json::{json, Value};

use crate::common::*;

fn project_at_abi(abi: u32) -> (Env, std::process::Output, std::process::Output) {
    let env = Env::new();
    let one = features(&[("F001", false, "test -f done.txt")]);
    let model = env.model(json!({
        "1": initializer(&one),
        "2": worker(&[("done.txt", "done\n")], &features(&[("F001", true, "test -f done.txt")])),
    }));
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let init = env
        .longrun()
        .env("LONGRUN_LANDLOCK_ABI", abi.to_string())
        .args([
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            &model,
        ])
        .output()
        .unwrap();
    let cont = env
        .longrun()
        .env("LONGRUN_LANDLOCK_ABI", abi.to_string())
        .args(["continue", "--dir", &env.dir_arg()])
        .output()
        .unwrap();
    (env, init, cont)
}

#[test]
fn the_default_profile_runs_on_every_landlock_abi_and_says_what_it_lacks_once() {
    for abi in 0..=7u32 {
        let (env, init, cont) = project_at_abi(abi);
        assert!(init.status.success(), "ABI {abi}: {}", text(&init));
        assert!(cont.status.success(), "ABI {abi}: {}", text(&cont));
        let lacks = abi < 6;
        for out in [&init, &cont] {
            let said = stdout(out).matches("not enforced").count();
            assert_eq!(
                said,
                usize::from(lacks),
                "ABI {abi}, once a run: {}",
                text(out)
            );
        }
        let log = env.log_json();
        assert_eq!(log.len(), 2, "ABI {abi}");
        for row in &log {
            assert_eq!(row["verdict"], "accepted", "ABI {abi}: {row:#}");
        }
        let trailers = env.git(&["log", "-1", "--format=%B", "main"]);
        let recorded: Vec<&str> = trailers
            .lines()
            .filter(|l| l.starts_with("Longrun-Sandbox: not enforced: "))
            .collect();
        match abi {
            0 => {
                assert_eq!(recorded.len(), 1, "{trailers}");
                assert!(
                    recorded[0].contains("read-only mount namespace"),
                    "{trailers}"
                );
            }
            1..=5 => {
                assert_eq!(recorded.len(), 6 - abi as usize, "ABI {abi}: {trailers}");
                assert!(
                    recorded.iter().all(|l| l.contains("landlock")),
                    "{trailers}"
                );
            }
            _ => assert!(recorded.is_empty(), "ABI {abi}: {trailers}"),
        }
        let status: Value = serde_json::from_slice(
            &env.run(&["status", "--json", "--dir", &env.dir_arg()])
                .stdout,
        )
        .unwrap();
        assert_eq!(
            status["sandbox"]["not_enforced"].as_array().map(Vec::len),
            Some(recorded.len()),
            "ABI {abi}: {status:#}"
        );
        let plain = stdout(&env.run(&["status", "--dir", &env.dir_arg()]));
        assert_eq!(plain.contains("not enforced"), lacks, "ABI {abi}: {plain}");
    }
}

#[test]
fn the_strict_profile_refuses_an_older_kernel_before_anything_is_written() {
    let env = Env::new();
    let model = env.model(json!({ "1": initializer(&features(&[("F001", false, "false")])) }));
    let spec = env.write("spec.md", "# Spec\nA tiny thing.\n");
    let out = env
        .longrun()
        .env("LONGRUN_LANDLOCK_ABI", "4")
        .args([
            "init",
            spec.to_str().unwrap(),
            "--dir",
            &env.dir_arg(),
            "--model",
            &model,
            "--profile",
            "strict",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("profile strict") && err.contains("ABI 5"),
        "{err}"
    );
    assert!(!env.project().exists(), "nothing may be written");
    let demo = env
        .longrun()
        .env("LONGRUN_LANDLOCK_ABI", "4")
        .args([
            "demo",
            "--profile",
            "strict",
            "--dir",
            env.path("demo").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(demo.status.code(), Some(2), "{}", text(&demo));
    assert!(!env.path("demo").exists());
}
