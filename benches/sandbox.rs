//! `cargo bench --bench sandbox`: the median wall time of running /bin/true
//! through plain exec, through `longrun sandbox` (the default profile, as a
//! session gets it) and through bubblewrap, measured in one run, interleaved
//! so that machine load hits all three alike, and printed as ratios.

// A benchmark that cannot set up has nothing to report: it panics.
#![allow(clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 300;

fn main() {
    let workspace = tempfile::tempdir().expect("temp dir");
    let plain = || Command::new("/bin/true");
    let longrun = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_longrun"));
        c.arg("sandbox")
            .arg("--workspace")
            .arg(workspace.path())
            .args(["--", "/bin/true"]);
        c
    };
    let bwrap = || {
        let mut c = Command::new("bwrap");
        c.args([
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--unshare-net",
            "/bin/true",
        ]);
        c
    };
    let have_bwrap = succeeds(&mut bwrap());
    assert!(
        succeeds(&mut longrun()),
        "longrun sandbox -- /bin/true failed"
    );
    let mut times: [Vec<Duration>; 3] = Default::default();
    for _ in 0..RUNS {
        times[0].push(time(&mut plain()));
        times[1].push(time(&mut longrun()));
        if have_bwrap {
            times[2].push(time(&mut bwrap()));
        }
    }
    let [p, l, b] = times.map(median);
    println!("/bin/true, median wall time of {RUNS} runs each (spawn to exit):");
    println!("  plain exec        {:>7.3} ms", ms(p));
    println!(
        "  longrun sandbox   {:>7.3} ms  ({:.2}x plain exec)",
        ms(l),
        ms(l) / ms(p)
    );
    if have_bwrap {
        println!(
            "  bubblewrap        {:>7.3} ms  ({:.2}x plain exec; longrun sandbox is {:.2}x faster)",
            ms(b),
            ms(b) / ms(p),
            ms(b) / ms(l)
        );
    } else {
        println!(
            "  bubblewrap        not measured: bwrap is not installed (apt-get install bubblewrap)"
        );
    }
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
