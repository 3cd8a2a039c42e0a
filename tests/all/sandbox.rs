//! Confinement, through `longrun sandbox` and real sessions: every escape
//! attempt must fail, beside controls that must succeed. Each escape runs
//! both as the user running the tests (root here) and as an unprivileged
//! user (uid 65534, through setpriv) when the tests run as root.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{self, command_by, skip, stderr, text, users, By, Env};

const NOBODY: u32 = 65534;

/// A temp root holding a workspace and a stand-in for the real home, with a
/// secret in it; everything reachable (not writable) by the unprivileged user.
struct Place {
    root: tempfile::TempDir,
}

impl Place {
    fn new(user: By) -> Place {
        // Under /var/tmp, not /tmp: inside, /tmp is an empty tmpfs with only
        // the sandbox's own paths bound back, and a real home is not there.
        let base = Path::new("/var/tmp");
        let base = if base.is_dir() {
            base.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let root = tempfile::Builder::new()
            .prefix("longrun-sbx-")
            .tempdir_in(base)
            .unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let place = Place { root };
        std::fs::create_dir_all(place.workspace()).unwrap();
        std::fs::create_dir_all(place.home().join(".cargo")).unwrap();
        std::fs::write(place.home().join("secret.txt"), "TOP-SECRET-VALUE\n").unwrap();
        std::fs::write(place.home().join(".cargo/tool.txt"), "toolchain\n").unwrap();
        if user == By::Nobody {
            for p in [place.workspace(), place.home(), place.home().join(".cargo")] {
                chown_nobody(&p);
            }
            for p in [
                place.home().join("secret.txt"),
                place.home().join(".cargo/tool.txt"),
            ] {
                chown_nobody(&p);
            }
        }
        place
    }

    fn workspace(&self) -> PathBuf {
        self.root.path().join("work")
    }

    /// The stand-in for the invoking user's real home (HOME of longrun).
    fn home(&self) -> PathBuf {
        self.root.path().join("realhome")
    }

    /// Write a profile file beside the workspace; returns its path.
    fn profile(&self, name: &str, body: &str) -> PathBuf {
        let p = self.root.path().join(name);
        std::fs::write(&p, body).unwrap();
        p
    }

    /// `longrun sandbox [extra] -- bash -c script` as `user`, HOME = the stand-in home.
    fn command(&self, user: By, extra: &[&str], script: &str) -> Command {
        let mut cmd = command_by(user, env!("CARGO_BIN_EXE_longrun"));
        cmd.arg("sandbox")
            .arg("--workspace")
            .arg(self.workspace())
            .args(extra)
            .args(["--", "bash", "-c", script])
            .current_dir(self.root.path())
            .env("HOME", self.home())
            .env("LONGRUN_TEST_SECRET", "hunter2-not-for-sessions")
            .stdin(Stdio::null());
        cmd
    }

    fn run(&self, user: By, extra: &[&str], script: &str) -> Output {
        self.command(user, extra, script).output().unwrap()
    }
}

fn chown_nobody(p: &Path) {
    std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
}

fn out(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Run `script` in the sandbox as every user; `check` sees the output.
fn each_user(extra: &[&str], script: &str, check: impl Fn(By, &Place, &Output)) {
    for user in users() {
        let place = Place::new(user);
        let o = place.run(user, extra, script);
        check(user, &place, &o);
    }
}

/// How many times `said` reports a write refused: by Landlock (EACCES) or
/// by the read-only mount everything outside the writable paths is (EROFS).
fn denials(said: &str) -> usize {
    said.matches("Permission denied").count() + said.matches("Read-only file system").count()
}

// ---- escape attempts ----

#[test]
fn modes_and_times_of_files_outside_cannot_be_changed() {
    // Landlock does not govern chmod or utimes: before the read-only mounts,
    // a confined root could set the setuid bit on any system file.
    use std::os::unix::fs::MetadataExt;
    for user in users() {
        let place = Place::new(user);
        let mine = place.home().join("mine.sh");
        std::fs::write(&mine, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o644)).unwrap();
        if user == By::Nobody {
            chown_nobody(&mine);
        }
        let before = std::fs::metadata(&mine).unwrap();
        let system = std::fs::metadata("/usr/bin/env").unwrap().mtime();
        let m = mine.display();
        let script = format!(
            "chmod 4777 {m}; echo rc=$?; touch -d 2001-01-01 {m}; echo rc=$?; \
             touch -d 2001-01-01 /usr/bin/env; echo rc=$?; \
             touch inside && chmod 755 inside && echo inside-ok"
        );
        let said = out(&place.run(user, &[], &script));
        assert_eq!(said.matches("rc=1").count(), 3, "{user:?}: {said}");
        assert!(said.contains("inside-ok"), "{user:?}: {said}");
        let after = std::fs::metadata(&mine).unwrap();
        assert_eq!(after.mode(), before.mode(), "{user:?}: {said}");
        assert_eq!(after.mtime(), before.mtime(), "{user:?}: {said}");
        assert_eq!(std::fs::metadata("/usr/bin/env").unwrap().mtime(), system);
    }
}

#[test]
fn writes_outside_the_workspace_are_denied() {
    let marker = format!("/tmp/longrun-escape-{}", std::process::id());
    for user in users() {
        let place = Place::new(user);
        let real = place.home().display().to_string();
        let script = format!(
            "touch {real}/pwned; echo rc=$?; touch {marker}; echo rc=$?; \
             echo x > {real}/.cargo/pwned; echo rc=$?; echo ok > inside.txt; echo rc=$?"
        );
        let said = out(&place.run(user, &[], &script));
        assert!(said.contains("rc=1\nrc=1\nrc=1\nrc=0"), "{user:?}: {said}");
        assert_eq!(denials(&said), 3, "{user:?}: {said}");
        assert!(!place.home().join("pwned").exists());
        assert!(!place.home().join(".cargo/pwned").exists());
        assert!(!Path::new(&marker).exists(), "{user:?} wrote {marker}");
        assert_eq!(
            std::fs::read_to_string(place.workspace().join("inside.txt")).unwrap(),
            "ok\n"
        );
    }
}

#[test]
fn secrets_in_the_real_home_cannot_be_read_directly_or_through_a_symlink() {
    for user in users() {
        let place = Place::new(user);
        std::os::unix::fs::symlink(
            place.home().join("secret.txt"),
            place.workspace().join("link"),
        )
        .unwrap();
        let real = place.home().display().to_string();
        let script =
            format!("cat {real}/secret.txt; cat link; ls {real}; cat {real}/.cargo/tool.txt");
        let said = out(&place.run(user, &[], &script));
        assert!(!said.contains("TOP-SECRET-VALUE"), "{user:?}: {said}");
        assert_eq!(
            said.matches("Permission denied").count(),
            3,
            "{user:?}: {said}"
        );
        // The toolchain directory the default profile lists (~/.cargo) stays readable.
        assert!(said.contains("toolchain"), "{user:?}: {said}");
    }
}

#[test]
fn root_cannot_read_the_password_hashes_while_etc_stays_readable() {
    // uid 0 owns /etc/shadow, so dropping capabilities alone leaves it
    // readable; as root the sandbox covers it (empty to read), and anyone
    // else is refused by its mode.
    each_user(
        &[],
        "cat /etc/shadow /etc/gshadow; ls /etc/ssl/private; echo rc=$?; \
         grep -c root /etc/passwd; ls /etc/ssl/certs > /dev/null && echo certs",
        |user, _, o| {
            let said = out(o);
            assert!(!said.contains("root:"), "{user:?}: {said}");
            assert!(said.contains("rc=2"), "{user:?}: {said}");
            assert!(said.contains("Permission denied"), "{user:?}: {said}");
            assert!(
                said.contains("\n1\n") || said.starts_with("1\n"),
                "{user:?}: {said}"
            );
            assert!(said.contains("certs"), "{user:?}: {said}");
        },
    );
}

#[test]
fn the_machines_shared_memory_is_not_reachable_but_the_sandboxes_own_works() {
    // POSIX shared memory in /dev/shm, and a System V segment.
    let pid = std::process::id();
    let posix = PathBuf::from(format!("/dev/shm/longrun-test-{pid}"));
    std::fs::write(&posix, "TOP-SECRET-SHM\n").unwrap();
    std::fs::set_permissions(&posix, std::fs::Permissions::from_mode(0o666)).unwrap();
    let made = Command::new("ipcmk")
        .args(["-M", "4096", "-p", "0666"])
        .output()
        .unwrap();
    let id = String::from_utf8_lossy(&made.stdout)
        .split_whitespace()
        .last()
        .unwrap_or_default()
        .to_string();
    assert!(
        made.status.success() && !id.is_empty(),
        "ipcmk: {}",
        text(&made)
    );
    each_user(
        &[],
        &format!(
            "cat {p}; ipcs -m | grep -c '^0x'; echo mine > /dev/shm/inside-{pid} && echo shm-ok",
            p = posix.display()
        ),
        |user, _, o| {
            let said = out(o);
            assert!(!said.contains("TOP-SECRET-SHM"), "{user:?}: {said}");
            assert!(
                said.lines().any(|l| l == "0"),
                "{user:?}: segments visible: {said}"
            );
            assert!(said.contains("shm-ok"), "{user:?}: {said}");
        },
    );
    let _ = Command::new("ipcrm").args(["-m", &id]).status();
    let _ = std::fs::remove_file(&posix);
    let leaked = Path::new(&format!("/dev/shm/inside-{pid}")).exists();
    assert!(!leaked, "the sandbox's /dev/shm is the machine's");
}

#[test]
fn other_processes_and_their_command_lines_are_not_in_proc() {
    // A secret on some other program's command line, outside the sandbox.
    let mut outside = Command::new("python3")
        .args(["-c", "import time; time.sleep(60)", "TOP-SECRET-ARGV-31337"])
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !std::fs::read(format!("/proc/{}/cmdline", outside.id()))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("31337"))
    {
        assert!(
            Instant::now() < deadline,
            "the outside process did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The pattern does not match itself on grep's own command line.
    each_user(
        &[],
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'TOP-SECRET-ARGV-3133[7]'; \
         ls -d /proc/[0-9]* | wc -l; cat /proc/self/status | grep -c NSpid",
        |user, _, o| {
            let said = out(o);
            let mut lines = said.lines();
            assert_eq!(lines.next(), Some("0"), "{user:?}: {said}");
            let visible: usize = lines
                .next()
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(999);
            assert!(
                visible < 10,
                "{user:?}: {visible} processes visible: {said}"
            );
            assert_eq!(lines.next(), Some("1"), "{user:?}: own /proc works: {said}");
        },
    );
    let _ = outside.kill();
    let _ = outside.wait();
}

#[test]
fn the_parents_environment_is_not_inherited_nor_readable_in_proc() {
    each_user(
        &[],
        "env; cat /proc/$PPID/environ; echo rc=$?; tr '\\0' '\\n' < /proc/1/environ; echo rc=$?",
        |user, _, o| {
            let said = out(o);
            assert!(!said.contains("hunter2"), "{user:?}: {said}");
            assert!(said.contains("TMPDIR="), "{user:?}: {said}");
            assert_eq!(said.matches("rc=1").count(), 2, "{user:?}: {said}");
        },
    );
}

#[test]
fn tcp_and_udp_to_a_listener_outside_fail_without_network() {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let (tp, up) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let script = format!(
        "echo hi > /dev/tcp/127.0.0.1/{tp}; echo rc=$?; echo hi > /dev/udp/127.0.0.1/{up}; echo rc=$?"
    );
    for mode in ["none", "loopback"] {
        each_user(&["--network", mode], &script, |user, _, o| {
            let said = out(o);
            // UDP sends in the private namespace of loopback mode go nowhere
            // without an error; the listener below shows they did not arrive.
            let failed = if mode == "none" { 2 } else { 1 };
            assert_eq!(
                said.matches("rc=1").count(),
                failed,
                "{mode} {user:?}: {said}"
            );
        });
    }
    assert!(tcp.accept().is_err(), "a connection reached the listener");
    let mut buf = [0u8; 16];
    assert!(
        udp.recv(&mut buf).is_err(),
        "a datagram reached the listener"
    );
    // The control: with the host network the same connection arrives.
    let place = Place::new(By::Root);
    let o = place.run(By::Root, &["--network", "host"], &script);
    assert!(out(&o).contains("rc=0\nrc=0"), "{}", text(&o));
    let deadline = Instant::now() + Duration::from_secs(5);
    while tcp.accept().is_err() {
        assert!(Instant::now() < deadline, "host mode did not connect");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn raw_sockets_are_denied_in_every_network_mode() {
    let script = "/usr/bin/python3 -c 'import socket\n\
        try:\n    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); print(\"raw: opened\")\n\
        except OSError as e: print(\"raw:\", e.errno)'";
    for mode in ["none", "loopback", "host"] {
        each_user(&["--network", mode], script, |user, _, o| {
            let said = out(o);
            assert!(
                said.contains("raw: 1") || said.contains("raw: 13"),
                "{mode} {user:?}: {said}"
            );
        });
    }
}

#[test]
fn abstract_unix_sockets_outside_are_unreachable_but_inside_work() {
    use std::os::linux::net::SocketAddrExt;
    let name = format!("longrun-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let listener = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    listener.set_nonblocking(true).unwrap();
    let script = format!(
        "/usr/bin/python3 -c 'import socket\n\
s = socket.socket(socket.AF_UNIX)\n\
try:\n    s.connect(\"\\0{name}\"); print(\"outside: connected\")\n\
except OSError as e: print(\"outside:\", e.errno)\n\
srv = socket.socket(socket.AF_UNIX); srv.bind(\"\\0{name}-inside\"); srv.listen(1)\n\
c = socket.socket(socket.AF_UNIX); c.connect(\"\\0{name}-inside\"); print(\"inside: connected\")'"
    );
    each_user(&[], &script, |user, _, o| {
        let said = out(o);
        assert!(said.contains("outside: 1\n"), "{user:?}: {said}");
        assert!(said.contains("inside: connected"), "{user:?}: {said}");
    });
    assert!(
        listener.accept().is_err(),
        "a sandboxed process reached the socket"
    );
}

#[test]
fn unix_sockets_under_run_and_tmp_are_unreachable_but_inside_work() {
    // Before Landlock ABI 9, connecting to a pathname socket is no file
    // access Landlock controls: /run (system and session buses, systemd's
    // own socket, container daemons) and /tmp (tmux's socket sits at a known
    // path there) are covered instead.
    if !nix::unistd::getuid().is_root() {
        skip("only root can make a socket under /run");
        return;
    }
    let pid = std::process::id();
    let tmux_like = PathBuf::from(format!("/tmp/longrun-tmux-{pid}"));
    std::fs::create_dir_all(&tmux_like).unwrap();
    std::fs::set_permissions(&tmux_like, std::fs::Permissions::from_mode(0o777)).unwrap();
    for path in [
        PathBuf::from(format!("/run/longrun-test-{pid}.sock")),
        tmux_like.join("default"),
    ] {
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let p = path.display();
        let script = format!(
            "/usr/bin/python3 -c 'import socket\n\
s = socket.socket(socket.AF_UNIX)\n\
try:\n    s.connect(\"{p}\"); print(\"outside: connected\")\n\
except OSError as e: print(\"outside:\", e.errno)\n\
srv = socket.socket(socket.AF_UNIX); srv.bind(\"inside.sock\"); srv.listen(1)\n\
c = socket.socket(socket.AF_UNIX); c.connect(\"inside.sock\"); print(\"inside: connected\")'"
        );
        each_user(&[], &script, |user, _, o| {
            let said = out(o);
            assert!(
                !said.contains("outside: connected"),
                "{user:?}: {p}: {said}"
            );
            assert!(said.contains("inside: connected"), "{user:?}: {said}");
        });
        let reached = listener.accept().is_ok();
        let _ = std::fs::remove_file(&path);
        assert!(!reached, "a sandboxed process reached {p}");
    }
    let _ = std::fs::remove_dir_all(&tmux_like);
}

#[test]
fn a_sandbox_inside_a_sandbox_runs_with_what_it_could_not_enforce_said() {
    // Inside, seccomp denies every namespace: the inner longrun has no PID
    // or mount namespace of its own, falls back to rlimits and says so,
    // and still runs the command under the outer confinement and its own
    // seccomp and Landlock layers.
    for user in users() {
        let place = Place::new(user);
        let inner = place.workspace().join("longrun");
        std::fs::hard_link(env!("CARGO_BIN_EXE_longrun"), &inner)
            .or_else(|_| std::fs::copy(env!("CARGO_BIN_EXE_longrun"), &inner).map(drop))
            .unwrap();
        let said = out(&place.run(
            user,
            &[],
            "./longrun sandbox --workspace . -- sh -c 'echo inner-ok; touch made-inside'; echo rc=$?",
        ));
        assert!(said.contains("inner-ok\nrc=0"), "{user:?}: {said}");
        assert!(
            place.workspace().join("made-inside").exists(),
            "{user:?}: {said}"
        );
        assert!(
            said.contains("longrun sandbox: not enforced: mounts: no mount namespace"),
            "{user:?}: {said}"
        );
        if user == By::Root && nix::unistd::getuid().is_root() {
            assert!(
                said.contains("not enforced: limits: neither a PID namespace limit nor a cgroup"),
                "{user:?}: {said}"
            );
        }
    }
}

/// The state letter of `pid` in /proc (T when stopped).
fn state(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rsplit(") ")
        .next()
        .and_then(|s| s.chars().next())
        .unwrap_or('?')
}

#[test]
fn the_parent_cannot_be_stopped_or_traced() {
    // The sandbox runs under a `sh` parent; if the escape worked, sh would stop.
    // Inside its own PID namespace $PPID is 0, so the parent is named by the
    // pid it has outside, which `sh` puts in place of __PARENT__.
    let script = "kill -STOP __PARENT__; echo kill=$?; \
        /usr/bin/python3 -c 'import ctypes, os\n\
libc = ctypes.CDLL(None, use_errno=True)\n\
print(\"ptrace:\", libc.ptrace(16, __PARENT__, 0, 0), ctypes.get_errno())'";
    for user in users() {
        let place = Place::new(user);
        let inner = place.command(user, &[], script);
        let mut argv: Vec<String> = vec![inner.get_program().to_string_lossy().into()];
        argv.extend(inner.get_args().map(|a| a.to_string_lossy().into_owned()));
        let quoted: Vec<String> = argv
            .iter()
            .map(|a| shell_quote(a).replace("__PARENT__", "'\"$$\"'"))
            .collect();
        let mut sh = Command::new("sh")
            .arg("-c")
            .arg(format!("{}; echo parent-ran-on", quoted.join(" ")))
            .current_dir(place.root.path())
            .env("HOME", place.home())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while sh.try_wait().unwrap().is_none() {
            if state(sh.id()) == 'T' || Instant::now() > deadline {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(sh.id() as i32),
                    nix::sys::signal::Signal::SIGCONT,
                );
                let _ = sh.kill();
                panic!("{user:?}: the sandbox stopped its parent");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut said = String::new();
        sh.stdout.take().unwrap().read_to_string(&mut said).unwrap();
        sh.stderr.take().unwrap().read_to_string(&mut said).unwrap();
        assert!(said.contains("kill=1"), "{user:?}: {said}");
        assert!(said.contains("ptrace: -1 1"), "{user:?}: {said}");
        assert!(said.contains("parent-ran-on"), "{user:?}: {said}");
    }
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn user_namespaces_and_mounts_are_denied() {
    each_user(
        &[],
        "unshare -U true; echo userns=$?; unshare -n true; echo netns=$?; \
         mkdir -p m; mount -t tmpfs none m; echo mount=$?",
        |user, _, o| {
            let said = out(o);
            assert!(said.contains("userns=1"), "{user:?}: {said}");
            assert!(said.contains("netns=1"), "{user:?}: {said}");
            assert!(
                said.contains("mount=32") || said.contains("mount=1"),
                "{user:?}: {said}"
            );
        },
    );
}

#[test]
fn a_setuid_binary_grants_no_privilege() {
    for user in users() {
        let place = Place::new(user);
        // A setuid-root copy of cat: run directly by the unprivileged user it
        // would run as root (the control below); inside, it must not.
        let suid = place.workspace().join("suidcat");
        std::fs::copy("/bin/cat", &suid).unwrap();
        std::os::unix::fs::chown(&suid, Some(0), Some(0)).unwrap();
        std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let o = place.run(
            user,
            &[],
            "./suidcat /proc/self/status | grep -E '^(Uid|CapEff)'",
        );
        let said = out(&o);
        assert!(
            said.contains("CapEff:\t0000000000000000"),
            "{user:?}: {said}"
        );
        if user == By::Nobody {
            assert!(
                said.contains("Uid:\t65534\t65534\t65534"),
                "{user:?}: {said}"
            );
            let control = Command::new("setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&suid)
                .arg("/proc/self/status")
                .output()
                .unwrap();
            assert!(
                out(&control).contains("Uid:\t65534\t0\t0"),
                "control: {}",
                out(&control)
            );
        }
    }
}

const SMALL_LIMITS: &str = "description = \"tight limits for a test\"\n\
    [limits]\nprocesses = 24\nmemory_mb = 1024\nfile_size_mb = 1\nopen_files = 64\n";

#[test]
fn a_fork_bomb_stops_at_the_process_limit() {
    let script = "/usr/bin/python3 -c 'import os, time\n\
n = 0\n\
try:\n    while n < 200:\n        if os.fork() == 0:\n            time.sleep(3); os._exit(0)\n        n += 1\n\
except OSError as e: print(\"fork failed:\", e.errno)\n\
print(\"forked\", n)'";
    for user in users() {
        let place = Place::new(user);
        let profile = place.profile("small.toml", SMALL_LIMITS);
        let o = place.run(user, &["--profile", profile.to_str().unwrap()], script);
        let said = out(&o);
        assert!(said.contains("fork failed: 11"), "{user:?}: {said}");
        let n: u32 = said
            .lines()
            .find_map(|l| l.strip_prefix("forked "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(999);
        assert!(n < 24, "{user:?}: forked {n}");
    }
    // The machine is fine: a process starts outside at once.
    assert!(Command::new("true").status().unwrap().success());
}

#[test]
fn writing_past_the_file_size_limit_fails() {
    for user in users() {
        let place = Place::new(user);
        let profile = place.profile("small.toml", SMALL_LIMITS);
        let o = place.run(
            user,
            &["--profile", profile.to_str().unwrap()],
            "head -c 3000000 /dev/zero > big; echo rc=$?",
        );
        let said = out(&o);
        assert!(!said.contains("rc=0"), "{user:?}: {said}");
        let size = std::fs::metadata(place.workspace().join("big"))
            .unwrap()
            .len();
        assert!(size <= 1 << 20, "{user:?}: wrote {size} bytes");
    }
}

#[test]
fn a_memory_hog_fails_to_allocate_and_the_machine_is_fine() {
    // 1.5 GiB of address space, not touched: cheap to grant, but past the limit.
    let script = "/usr/bin/python3 -c 'import mmap\ntry:\n    m = mmap.mmap(-1, 3 << 29); print(\"hog: allocated\")\n\
        except OSError as e: print(\"hog: failed\", e.errno)'";
    for user in users() {
        let place = Place::new(user);
        let profile = place.profile("small.toml", SMALL_LIMITS);
        let o = place.run(user, &["--profile", profile.to_str().unwrap()], script);
        let said = out(&o);
        assert!(said.contains("hog: failed 12"), "{user:?}: {said}");
        // The control: without the limit the same allocation succeeds.
        let o = place.run(user, &[], script);
        assert!(out(&o).contains("hog: allocated"), "{user:?}: {}", text(&o));
    }
}

const BEST_EFFORT: &str =
    "description = \"whatever the kernel enforces\"\nlandlock = \"best-effort\"\n\
    [limits]\nprocesses = 256\nmemory_mb = 2048\nfile_size_mb = 64\nopen_files = 256\n";

#[test]
fn a_kernel_without_everything_is_refused_only_by_a_required_profile() {
    let place = Place::new(By::Root);
    let o = place
        .command(By::Root, &["--profile", "strict"], "echo ran")
        .env("LONGRUN_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    let said = out(&o);
    assert_eq!(o.status.code(), Some(1), "{said}");
    assert!(!said.contains("ran"), "{said}");
    assert!(
        said.contains("TCP bind and connect rules (ABI 4)"),
        "{said}"
    );
    assert!(
        said.contains("signal and abstract Unix socket scoping (ABI 6)"),
        "{said}"
    );
    assert!(said.contains("best-effort"), "the fix is named: {said}");

    // The default profile is best-effort: it runs and says what it lacks.
    let o = place
        .command(By::Root, &[], "echo ran")
        .env("LONGRUN_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    let said = out(&o);
    assert!(said.contains("ran"), "{said}");
    assert!(said.contains("not enforced: landlock TCP bind"), "{said}");

    let profile = place.profile("be.toml", BEST_EFFORT);
    let real = place.home().display().to_string();
    let o = place
        .command(
            By::Root,
            &["--profile", profile.to_str().unwrap()],
            &format!("echo ran; cat {real}/secret.txt"),
        )
        .env("LONGRUN_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    let said = out(&o);
    assert!(said.contains("ran"), "{said}");
    assert!(
        said.contains("not enforced: landlock TCP bind and connect rules (ABI 4)"),
        "{said}"
    );
    // What ABI 3 enforces still holds.
    assert!(!said.contains("TOP-SECRET"), "{said}");
}

// ---- controls ----

#[test]
fn sandbox_prints_nothing_and_exits_with_the_commands_status() {
    each_user(&[], "exit 7", |user, _, o| {
        assert_eq!(o.status.code(), Some(7), "{user:?}: {}", text(o));
        assert!(o.stdout.is_empty() && o.stderr.is_empty(), "{}", text(o));
    });
}

#[test]
fn git_devices_python_multiprocessing_and_node_work_inside() {
    let script = "set -e; git init -q repo; cd repo; echo hi > a; git add a; \
        git commit -qm first; git log --oneline | wc -l; echo x > /dev/null; \
        head -c 4 /dev/urandom | wc -c; \
        /usr/bin/python3 -c 'from multiprocessing import Pool\nif __name__ == \"__main__\":\n    print(\"pool\", sum(Pool(2).map(abs, range(-5, 5))))'; \
        node -e 'console.log(\"node\", require(\"child_process\").execSync(\"echo child\").toString().trim())'";
    each_user(&[], script, |user, _, o| {
        let said = out(o);
        assert!(o.status.success(), "{user:?}: {said}");
        assert!(
            said.starts_with("1\n4\npool 25\nnode child"),
            "{user:?}: {said}"
        );
    });
}

#[test]
fn a_small_rust_project_builds_and_tests_inside() {
    // Uses the real toolchain (~/.cargo, ~/.rustup), so the real HOME.
    let Some(home) = std::env::var_os("HOME") else {
        panic!("HOME is not set");
    };
    let place = Place::new(By::Root);
    let o = place
        .command(
            By::Root,
            &[],
            "set -e; cargo new -q --offline demo; cd demo; \
             printf '#[test]\\nfn adds() { assert_eq!(1 + 1, 2); }\\n' >> src/main.rs; \
             cargo build -q --offline; cargo test -q --offline 2>&1 | grep 'test result'",
        )
        .env("HOME", &home)
        .output()
        .unwrap();
    let said = out(&o);
    assert!(o.status.success(), "{said}");
    assert!(said.contains("1 passed"), "{said}");
}

#[test]
fn loopback_mode_serves_and_connects_inside() {
    let script = "/usr/bin/python3 -c 'import socket\n\
srv = socket.socket(); srv.bind((\"127.0.0.1\", 0)); srv.listen(1)\n\
c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()\n\
c.sendall(b\"ping\"); print(\"got\", a.recv(4).decode())'";
    each_user(&["--network", "loopback"], script, |user, _, o| {
        assert!(out(o).contains("got ping"), "{user:?}: {}", text(o));
    });
    // Without the loopback mode the same server cannot even be made.
    let place = Place::new(By::Root);
    let o = place.run(By::Root, &[], script);
    assert!(out(&o).contains("Operation not permitted"), "{}", text(&o));
}

#[test]
fn doctor_reports_the_machine_and_every_profile() {
    let env = common::Env::new();
    let o = env.run(&["doctor"]);
    let said = out(&o);
    assert_eq!(o.status.code(), Some(0), "{said}");
    for needle in [
        "kernel: Linux",
        "landlock: ABI",
        "seccomp filters: yes",
        "user namespaces:",
        "process limit: held by each session's PID namespace",
        "cgroups: ",
        "git: git version",
        "profile default: can be enforced as written",
        "profile loopback:",
        "profile strict:",
    ] {
        assert!(said.contains(needle), "missing {needle:?} in:\n{said}");
    }
}

#[test]
fn a_bad_profile_names_the_file_and_the_field() {
    let place = Place::new(By::Root);
    let bad = place.profile(
        "bad.toml",
        "description = \"x\"\nnetwork = \"wifi\"\n[limits]\nprocesses = 1\nmemory_mb = 1\nfile_size_mb = 1\nopen_files = 64\n",
    );
    let o = place.run(By::Root, &["--profile", bad.to_str().unwrap()], "true");
    let said = out(&o);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(
        said.contains("bad.toml") && said.contains("network"),
        "{said}"
    );
    let o = place.run(By::Root, &["--profile", "nope"], "true");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        out(&o).contains("default, loopback, strict"),
        "{}",
        text(&o)
    );
}

// ---- sessions ----

#[test]
fn a_session_cannot_write_the_main_repo_or_see_the_key_and_records_its_confinement() {
    let env = Env::new();
    let project = env.project();
    // The writes go through python3, which the permission policy allows
    // (a plain `echo x > /outside` it would block first), so that what
    // refuses them here is the kernel.
    let probe = format!(
        "python3 -c \"open('{p}/pwned', 'w')\"; echo rc=$?; head -1 {p}/SPEC.md; env | grep -c FAKE-KEY-123; true",
        p = project.display()
    );
    let features = common::features(&[("F001", false, "test -f a.txt")]);
    let mut session = common::initializer(&features);
    session.as_array_mut().unwrap().insert(
        0,
        common::turn(vec![
            common::bash(&probe),
            common::bash(&format!(
                "python3 -c \"open('{}/pwned2', 'w')\"",
                project.display()
            )),
        ]),
    );
    let model = env.model(serde_json::json!({ "1": session }));
    let o = env
        .init_command("# Tally spec\n", &model)
        .env("OPENAI_API_KEY", "FAKE-KEY-123")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        !project.join("pwned").exists(),
        "the session wrote the main repo"
    );
    let requests = serde_json::to_string(&env.requests(1)).unwrap();
    assert!(requests.contains("Read-only file system"), "{requests}");
    assert!(requests.contains("rc=1"), "{requests}");
    assert!(
        requests.contains("# Tally spec"),
        "the main repo is readable: {requests}"
    );
    assert!(
        requests.contains("\\n0\\n"),
        "the key reached the session: {requests}"
    );
    // The failed call's result names the profile and what it allows; the one
    // that succeeded has no hint.
    assert!(
        requests.contains("[sandbox: profile default (no network;"),
        "no denial hint: {requests}"
    );
    let last = serde_json::to_string(env.requests(1).last().unwrap()).unwrap();
    assert_eq!(last.matches("[sandbox: profile").count(), 1, "{last}");
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    for needle in [
        "Longrun-Sandbox: profile default",
        "Longrun-Sandbox: capabilities: none",
        "Longrun-Sandbox: seccomp:",
        "Longrun-Sandbox: landlock: fully enforced",
        "Longrun-Sandbox: network: none",
    ] {
        assert!(
            message.contains(needle),
            "missing {needle:?} in:\n{message}"
        );
    }
}

#[test]
fn a_required_profile_is_refused_on_a_weaker_kernel_and_best_effort_is_recorded() {
    let features = common::features(&[("F001", false, "test -f a.txt")]);
    let init = |env: &Env| {
        let model = env.model(serde_json::json!({ "1": common::initializer(&features) }));
        env.init_command("# spec\n", &model)
            .env("LONGRUN_LANDLOCK_ABI", "3")
            .output()
            .unwrap()
    };
    // The strict profile requires everything: refused before anything is written.
    let env = Env::new();
    let model = env.model(serde_json::json!({ "1": common::initializer(&features) }));
    let o = env
        .init_command("# spec\n", &model)
        .args(["--profile", "strict"])
        .env("LONGRUN_LANDLOCK_ABI", "3")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        stderr(&o).contains("TCP bind and connect rules (ABI 4)"),
        "{}",
        text(&o)
    );
    assert!(!env.project().exists(), "nothing may be written");

    // A best-effort profile runs, and the trailers say what was not enforced.
    let env = Env::new();
    let profile = env.write("be.toml", BEST_EFFORT);
    std::fs::create_dir_all(env.project()).unwrap();
    std::fs::write(
        env.project().join("longrun.toml"),
        format!("[sandbox]\nprofile = \"{}\"\n", profile.display()),
    )
    .unwrap();
    let o = init(&env);
    assert!(o.status.success(), "{}", text(&o));
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    assert!(message.contains("Longrun-Verdict: accepted"), "{message}");
    for needle in [
        "Longrun-Sandbox: landlock: partially enforced (ABI 3;",
        "Longrun-Sandbox: not enforced: landlock TCP bind and connect rules (ABI 4)",
        "Longrun-Sandbox: not enforced: landlock signal and abstract Unix socket scoping (ABI 6)",
    ] {
        assert!(
            message.contains(needle),
            "missing {needle:?} in:\n{message}"
        );
    }
}

/// `init` with `--profile`, from a one-line spec.
fn init_with_profile(env: &Env, model: &str, profile: &str) -> Output {
    env.init_command("# spec\n", model)
        .args(["--profile", profile])
        .output()
        .unwrap()
}

#[test]
fn profile_flag_picks_the_profile_for_init_and_for_one_run() {
    let env = Env::new();
    let (a, b) = ("test -f a.txt", "test -f b.txt");
    let features = common::features(&[("F001", false, a), ("F002", false, b)]);
    let f1 = common::features(&[("F001", true, a), ("F002", false, b)]);
    let f2 = common::features(&[("F001", true, a), ("F002", true, b)]);
    let model = env.model(serde_json::json!({
        "1": common::initializer(&features),
        "2": common::worker(&[("a.txt", "a\n")], &f1),
        "3": common::worker(&[("b.txt", "b\n")], &f2),
    }));
    let dir = env.dir_arg();
    let o = init_with_profile(&env, &model, "strict");
    assert!(o.status.success(), "{}", text(&o));
    let toml = env.on_main("longrun.toml").unwrap();
    assert!(toml.contains("profile = \"strict\""), "{toml}");
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains("Longrun-Sandbox: profile strict"),
        "{message}"
    );

    // A bad --profile on continue: exit 2, named, and nothing recorded.
    let before = env.git(&["rev-parse", "main"]);
    let o = env.run(&["continue", "--dir", &dir, "--profile", "nosuch"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = stderr(&o);
    assert!(said.contains("--profile nosuch"), "{said}");
    assert!(said.contains("default, loopback, strict"), "{said}");
    assert_eq!(env.git(&["rev-parse", "main"]), before);

    // --profile on continue holds for that run only: longrun.toml is unchanged.
    let o = env.run(&["continue", "--dir", &dir, "--profile", "loopback"]);
    assert!(o.status.success(), "{}", text(&o));
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains("Longrun-Sandbox: profile loopback"),
        "{message}"
    );
    assert!(
        message.contains("Longrun-Sandbox: network: loopback"),
        "{message}"
    );
    assert_eq!(env.on_main("longrun.toml").unwrap(), toml);
    let o = env.run(&["continue", "--dir", &dir]);
    assert!(o.status.success(), "{}", text(&o));
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    assert!(
        message.contains("Longrun-Sandbox: profile strict"),
        "{message}"
    );
}

#[test]
fn a_bad_profile_on_init_writes_nothing() {
    let env = Env::new();
    let dir = env.dir_arg();
    let o = init_with_profile(&env, "scripted:none.json", "./missing.toml");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let said = stderr(&o);
    assert!(said.contains("--profile ./missing.toml"), "{said}");
    assert!(said.contains("missing.toml"), "{said}");
    assert!(!env.project().exists(), "init created {dir}");
}
