//! `cargo bench --bench sandbox`: the median wall time of running /bin/true
//! through plain exec, through `longrun sandbox` (the default profile, as a
//! session gets it) and through bubblewrap, measured in one run, interleaved
//! so that machine load hits all alike, and printed as ratios. Run as root,
//! it also measures both as uid 65534 (through setpriv), where longrun
//! makes its PID namespace inside a user namespace.
//!
//! Two floors are measured beside them, because they bound what any
//! launcher can reach: `env /bin/true` (a wrapper that only execs the
//! command: two execs) and `unshare --pid --fork /bin/true` (a wrapper that
//! makes a PID namespace: two execs and a fork).

// A benchmark that cannot set up has nothing to report: it panics.
#![allow(clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 300;
const SETTLE: Duration = Duration::from_millis(20);

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this too,
    // as a smoke test: every variant starts, a few times each.
    let runs = if std::env::args().any(|a| a == "--bench") {
        RUNS
    } else {
        5
    };
    let workspace = tempfile::tempdir().expect("temp dir");
    let root = nix::unistd::getuid().is_root();
    if root {
        std::os::unix::fs::chown(workspace.path(), Some(65534), Some(65534)).expect("chown");
    }
    let ws = workspace.path().to_str().expect("utf-8 temp dir");
    let longrun = [
        env!("CARGO_BIN_EXE_longrun"),
        "sandbox",
        "--workspace",
        ws,
        "--",
        "/bin/true",
    ];
    let bwrap = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-net",
        "/bin/true",
    ];
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let unshare: &[&str] = if root {
        &["unshare", "--pid", "--fork", "/bin/true"]
    } else {
        &["unshare", "--user", "--pid", "--fork", "/bin/true"]
    };
    let mut variants: Vec<(&str, Vec<&str>)> = vec![
        ("plain exec", vec!["/bin/true"]),
        ("floor: env /bin/true", vec!["env", "/bin/true"]),
        ("floor: unshare --pid --fork", unshare.to_vec()),
        ("longrun sandbox", longrun.to_vec()),
        ("bubblewrap", bwrap.to_vec()),
    ];
    if root {
        variants.push((
            "plain exec, as uid 65534",
            [&nobody[..], &["/bin/true"]].concat(),
        ));
        variants.push((
            "longrun sandbox, as uid 65534",
            [&nobody[..], &longrun[..]].concat(),
        ));
    }
    variants.retain(|(name, argv)| {
        let ok = succeeds(&mut command(argv));
        if !ok {
            println!("  {name}: not measured (it failed; are bwrap and unshare installed?)");
        }
        ok
    });
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    for _ in 0..runs {
        for (i, (_, argv)) in variants.iter().enumerate() {
            times[i].push(time(&mut command(argv)));
            // Let the kernel finish what an exit defers (a network
            // namespace's teardown, above all) before the next start, so no
            // variant is charged for the one before it.
            std::thread::sleep(SETTLE);
        }
    }
    let medians: Vec<f64> = times.into_iter().map(|t| ms(median(t))).collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?");
    println!(
        "/bin/true, median wall time of {runs} runs each (spawn to exit), load average {load}:"
    );
    let by_name = |n: &str| {
        variants
            .iter()
            .position(|(v, _)| *v == n)
            .map(|i| medians[i])
    };
    for (i, (name, _)) in variants.iter().enumerate() {
        let base = if name.ends_with("65534") {
            by_name("plain exec, as uid 65534")
        } else {
            by_name("plain exec")
        };
        let ratio = base.map(|b| format!("  ({:.2}x plain exec)", medians[i] / b));
        println!(
            "  {name:<32}{:>8.3} ms{}",
            medians[i],
            ratio.unwrap_or_default()
        );
    }
    if let (Some(l), Some(b)) = (by_name("longrun sandbox"), by_name("bubblewrap")) {
        println!("  bubblewrap / longrun sandbox: {:.2}", b / l);
    }
}

fn command(argv: &[&str]) -> Command {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    c
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn time(cmd: &mut Command) -> Duration {
    let start = Instant::now();
    let ok = succeeds(cmd);
    let took = start.elapsed();
    assert!(ok, "{cmd:?} failed");
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
