//! `network = "registries"`: a confined process reaches the hosts its
//! profile lists through longrun's proxy, and nothing else. The registry is
//! a stand-in served on loopback (127.0.0.2, which inside the sandbox is not
//! the host's); no test here reaches anything but loopback, except the one
//! that installs from PyPI, run only when asked (`--ignored`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use crate::common::{command_by, skip, text, users, By};

/// A static file server on 127.0.0.2 that counts its connections: the
/// stand-in registry, or (never to be reached) another host.
pub struct StandIn {
    pub addr: SocketAddr,
    pub connections: Arc<AtomicU32>,
}

impl StandIn {
    /// Serve the files under `root` (a path ending in `/` serves its index.html).
    pub fn serve(root: &Path) -> StandIn {
        let listener = TcpListener::bind("127.0.0.2:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU32::new(0));
        let (count, root) = (Arc::clone(&connections), root.to_path_buf());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::SeqCst);
                let root = root.clone();
                std::thread::spawn(move || answer(stream, &root));
            }
        });
        StandIn { addr, connections }
    }

    /// `host:port`, as a profile lists it.
    pub fn host(&self) -> String {
        self.addr.to_string()
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn connections(&self) -> u32 {
        self.connections.load(Ordering::SeqCst)
    }
}

fn answer(mut stream: std::net::TcpStream, root: &Path) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return,
        }
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
    let path = path
        .split('?')
        .next()
        .unwrap_or("/")
        .trim_start_matches('/');
    let mut file = root.join(path);
    if path.is_empty() || path.ends_with('/') {
        file = file.join("index.html");
    }
    let reply = match std::fs::read(&file) {
        Ok(body) if !path.contains("..") => {
            let kind = match file.extension().and_then(|e| e.to_str()) {
                Some("html") => "text/html",
                _ => "application/octet-stream",
            };
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend(body);
            r
        }
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = stream.write_all(&reply);
}

/// A profile that reaches `hosts` only (no default registries).
pub fn profile_text(hosts: &[String], landlock: &str) -> String {
    let hosts: Vec<String> = hosts.iter().map(|h| format!("{h:?}")).collect();
    format!(
        "description = \"registries for a test\"\n\
         network = \"registries\"\n\
         landlock = \"{landlock}\"\n\
         [registries]\n\
         defaults = false\n\
         hosts = [{}]\n\
         [limits]\nprocesses = 512\nmemory_mb = 4096\nfile_size_mb = 1024\nopen_files = 1024\n",
        hosts.join(", ")
    )
}

/// A temp dir with a workspace and a profile, for `longrun sandbox`.
struct Place {
    root: tempfile::TempDir,
}

impl Place {
    fn new(profile: &str, user: By) -> Place {
        let root = tempfile::Builder::new()
            .prefix("longrun-registries-")
            .tempdir_in(if Path::new("/var/tmp").is_dir() {
                PathBuf::from("/var/tmp")
            } else {
                std::env::temp_dir()
            })
            .unwrap();
        std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let place = Place { root };
        std::fs::create_dir(place.workspace()).unwrap();
        std::fs::create_dir(place.root.path().join("home")).unwrap();
        if user == By::Nobody {
            for p in [place.workspace(), place.root.path().join("home")] {
                std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
            }
        }
        std::fs::write(place.root.path().join("profile.toml"), profile).unwrap();
        place
    }

    fn workspace(&self) -> PathBuf {
        self.root.path().join("work")
    }

    fn run(&self, user: By, env: &[(&str, &str)], script: &str) -> Output {
        let mut cmd = command_by(user, env!("CARGO_BIN_EXE_longrun"));
        cmd.args(["sandbox", "--profile", "./profile.toml", "--workspace"])
            .arg(self.workspace())
            .args(["--", "bash", "-c", script])
            .current_dir(self.root.path())
            .env("HOME", self.root.path().join("home"))
            .envs(env.iter().copied())
            .stdin(Stdio::null());
        cmd.output().unwrap()
    }
}

fn has(program: &str) -> bool {
    Command::new("which")
        .arg(program)
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn registry_with_a_file() -> (tempfile::TempDir, StandIn) {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("pkg.txt"), "PACKAGE-CONTENT\n").unwrap();
    let registry = StandIn::serve(files.path());
    (files, registry)
}

#[test]
fn the_listed_host_is_reachable_through_the_proxy_and_nothing_else() {
    if !has("curl") {
        skip("no curl on this machine (.ci/run installs it)");
        return;
    }
    let (_files, registry) = registry_with_a_file();
    let other = StandIn::serve(Path::new("/nonexistent"));
    let profile = profile_text(&[registry.host()], "best-effort");
    // With every Landlock ABI, and with none: the network namespace holds.
    for abi in ["7", "0"] {
        for user in users() {
            let place = Place::new(&profile, user);
            let script = format!(
                "curl -fsS {ok}; echo \"through proxy: $?\"; \
                 curl -fsS -p {ok}; echo \"tunnelled: $?\"; \
                 curl -fsS {other}; echo \"other port: $?\"; \
                 curl -fsS -p {other}; echo \"other port tunnelled: $?\"; \
                 curl -fsS --noproxy '*' --max-time 5 {ok}; echo \"direct: $?\"; \
                 curl -fsS --noproxy '*' --max-time 5 http://127.0.0.1:{port}/; echo \"host loopback: $?\"",
                ok = registry.url("/pkg.txt"),
                other = other.url("/"),
                port = registry.addr.port(),
            );
            let before = registry.connections();
            let o = place.run(user, &[("LONGRUN_LANDLOCK_ABI", abi)], &script);
            let said = text(&o);
            let who = format!("abi {abi}, {user:?}");
            assert!(o.status.success(), "{who}: {said}");
            assert_eq!(said.matches("PACKAGE-CONTENT").count(), 2, "{who}: {said}");
            for line in ["through proxy: 0", "tunnelled: 0"] {
                assert!(said.contains(line), "{who}: {line}: {said}");
            }
            for step in [
                "other port",
                "other port tunnelled",
                "direct",
                "host loopback",
            ] {
                assert!(
                    !said.contains(&format!("{step}: 0")),
                    "{who}: {step}: {said}"
                );
            }
            assert!(
                said.contains(&format!("the proxy refused {}", other.host())),
                "{who}: {said}"
            );
            assert_eq!(registry.connections() - before, 2, "{who}: {said}");
        }
    }
    assert_eq!(other.connections(), 0, "the refused host was reached");
}

#[test]
fn the_proxy_environment_is_set_inside() {
    let profile = profile_text(&["127.0.0.2:9".to_string()], "best-effort");
    let place = Place::new(&profile, By::Root);
    let o = place.run(By::Root, &[], "env | sort | grep -i proxy");
    let said = text(&o);
    for var in [
        "HTTPS_PROXY",
        "https_proxy",
        "HTTP_PROXY",
        "npm_config_https_proxy",
    ] {
        assert!(
            said.contains(&format!("{var}=http://127.0.0.1:3128")),
            "{var}: {said}"
        );
    }
    assert!(said.contains("NO_PROXY=localhost,127.0.0.1,::1"), "{said}");
}

/// A wheel of a package `tinypkg` 1.0 holding `tinypkg.py`, and a PEP 503
/// index for it, under `root`.
fn simple_index(root: &Path) -> bool {
    let wheel = "tinypkg-1.0-py3-none-any.whl";
    std::fs::create_dir_all(root.join("simple/tinypkg")).unwrap();
    std::fs::create_dir_all(root.join("files")).unwrap();
    let made = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import zipfile\n\
             z = zipfile.ZipFile('{}/files/{wheel}', 'w')\n\
             z.writestr('tinypkg.py', 'WHO = \"tinypkg from the stand-in\"\\n')\n\
             d = 'tinypkg-1.0.dist-info/'\n\
             z.writestr(d + 'METADATA', 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 1.0\\n')\n\
             z.writestr(d + 'WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')\n\
             z.writestr(d + 'RECORD', '')\n\
             z.close()\n",
            root.display()
        ))
        .status()
        .is_ok_and(|s| s.success());
    std::fs::write(
        root.join("simple/tinypkg/index.html"),
        format!("<html><body><a href=\"../../files/{wheel}\">{wheel}</a></body></html>\n"),
    )
    .unwrap();
    std::fs::write(
        root.join("simple/index.html"),
        "<html><body><a href=\"tinypkg/\">tinypkg</a></body></html>\n",
    )
    .unwrap();
    made
}

/// pip, which longrun does not bundle: the system's, when it has one.
fn system_pip() -> Option<&'static str> {
    let ok = Command::new("/usr/bin/python3")
        .args(["-m", "pip", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    ok.then_some("/usr/bin/python3 -m pip")
}

#[test]
fn pip_installs_from_the_stand_in_index_and_not_from_another_host() {
    let Some(pip) = system_pip() else {
        skip("no /usr/bin/python3 with pip on this machine (Debian's python3-pip)");
        return;
    };
    let files = tempfile::tempdir().unwrap();
    assert!(simple_index(files.path()), "could not build the test wheel");
    let registry = StandIn::serve(files.path());
    let other = StandIn::serve(files.path());
    let profile = profile_text(&[registry.host()], "best-effort");
    let place = Place::new(&profile, By::Root);
    let script = format!(
        "export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PIP_NO_INPUT=1\n\
         {pip} install --index-url {ok} --target ./deps tinypkg && \
         PYTHONPATH=./deps /usr/bin/python3 -c 'import tinypkg; print(tinypkg.WHO)'\n\
         {pip} install --retries 0 --timeout 5 --index-url {bad} --target ./deps2 tinypkg; \
         echo \"other host: $?\"",
        ok = registry.url("/simple/"),
        bad = other.url("/simple/"),
    );
    let o = place.run(By::Root, &[], &script);
    let said = text(&o);
    assert!(said.contains("tinypkg from the stand-in"), "{said}");
    assert!(!said.contains("other host: 0"), "{said}");
    assert!(registry.connections() >= 2, "{said}");
    assert_eq!(other.connections(), 0, "{said}");
}

/// Opt-in (it reaches the real PyPI): cargo test --test all -- --ignored pypi.
#[test]
#[ignore = "reaches the real PyPI: cargo test --test all -- --ignored pypi"]
fn a_real_package_installs_from_pypi_with_the_default_registries() {
    let Some(pip) = system_pip() else {
        panic!("there is no /usr/bin/python3 with pip (Debian's python3-pip)");
    };
    let profile = "description = \"the default registries\"\nnetwork = \"registries\"\n\
                   landlock = \"best-effort\"\n[limits]\nprocesses = 512\nmemory_mb = 4096\n\
                   file_size_mb = 1024\nopen_files = 1024\n";
    let place = Place::new(profile, By::Root);
    let script = format!(
        "{pip} install --no-cache-dir --disable-pip-version-check --target ./deps six==1.16.0 && \
         PYTHONPATH=./deps /usr/bin/python3 -c 'import six; print(\"six\", six.__version__)'; \
         curl -fsS --max-time 10 https://example.com/ >/dev/null; echo \"example.com: $?\""
    );
    let o = place.run(By::Root, &[], &script);
    let said = text(&o);
    assert!(said.contains("six 1.16.0"), "{said}");
    assert!(!said.contains("example.com: 0"), "{said}");
}

/// Python that fetches `url` and prints the body, or says why not.
fn fetch(url: &str) -> String {
    format!(
        "/usr/bin/python3 -c \"import urllib.request as u\ntry: print('GOT', u.urlopen('{url}', timeout=10).read().decode().strip())\nexcept Exception as e: print('FAILED', e)\""
    )
}

#[test]
fn a_session_that_opts_in_reaches_the_registry_and_the_record_names_every_host() {
    let env = crate::common::Env::new();
    let (_files, registry) = registry_with_a_file();
    let other = StandIn::serve(Path::new("/nonexistent"));
    let profile = env.write(
        "registries.toml",
        &profile_text(&[registry.host()], "best-effort"),
    );
    let features = crate::common::features(&[("F001", false, "test -f a.txt")]);
    let mut turns = crate::common::initializer(&features);
    turns.as_array_mut().unwrap().insert(
        0,
        crate::common::turn(vec![
            crate::common::bash(&fetch(&registry.url("/pkg.txt"))),
            crate::common::bash(&fetch(&other.url("/"))),
            crate::common::bash(&fetch(&registry.url("/pkg.txt"))),
        ]),
    );
    let model = env.model(serde_json::json!({ "1": turns }));
    let o = env
        .init_command("# spec\n", &model)
        .args(["--profile"])
        .arg(&profile)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let requests = env.requests(1);
    let results = serde_json::to_string(&requests[1]).unwrap();
    assert!(results.contains("GOT PACKAGE-CONTENT"), "{results}");
    assert!(results.contains("FAILED HTTP Error 403"), "{results}");
    assert_eq!(other.connections(), 0);

    let transcript = env.transcript(1);
    let network: Vec<&serde_json::Value> = transcript
        .iter()
        .filter(|e| e["type"] == "network" && e["during"] == "session")
        .collect();
    assert_eq!(network.len(), 1, "{transcript:?}");
    let contacts = &network[0]["contacts"];
    let port = |p: u16| serde_json::json!(p);
    assert!(
        contacts
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["port"] == port(registry.addr.port())
                && c["allowed"] == true
                && c["connections"] == 2),
        "{contacts}"
    );
    assert!(
        contacts
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["port"] == port(other.addr.port()) && c["allowed"] == false),
        "{contacts}"
    );
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    for line in [
        format!("Longrun-Network: {} allowed x2", registry.host()),
        format!("Longrun-Network: {} refused x1", other.host()),
        "Longrun-Sandbox: network: package registries through longrun's proxy".to_string(),
    ] {
        assert!(message.contains(&line), "{line}: {message}");
    }
}

/// A profile with no network for the worker and the stand-in registry for init.sh.
fn init_only_profile(registry: &StandIn) -> String {
    profile_text(&[registry.host()], "best-effort").replace(
        "network = \"registries\"\n",
        "network = \"none\"\ninit_network = \"registries\"\n",
    )
}

/// An init.sh that installs from the stand-in registry (through the proxy:
/// `init_network` is registries) and fails when another host answers; an
/// initializer and a worker on top, both accepted, and what was recorded.
/// `on_failure` follows the install command; `check` is the feature's check.
fn init_sh_installs_then_the_worker_builds(on_failure: &str, check: &str) {
    if !has("curl") {
        skip("no curl on this machine (.ci/run installs it)");
        return;
    }
    use crate::common::{bash, done, turn, write_file};
    let env = crate::common::Env::new();
    let (_files, registry) = registry_with_a_file();
    let other = StandIn::serve(Path::new("/nonexistent"));
    let profile = env.write("init-registries.toml", &init_only_profile(&registry));
    // The proxy's channel reaches the confining helper on stdin: what
    // init.sh runs with is a stdin that is no socket, no descriptor 4 and
    // no variable naming it.
    let init_sh = format!(
        "#!/usr/bin/env bash\nset -e\n\
         if [ -S /proc/self/fd/0 ] || [ -e /proc/self/fd/4 ] || [ -n \"${{LONGRUN_PROXY_ON_STDIN:-}}\" ]; then echo 'the channel leaked'; exit 1; fi\n\
         if [ ! -f deps/pkg.txt ]; then mkdir -p deps; curl -fsS {} -o deps/pkg.txt{on_failure}; fi\n\
         if curl -fsS --max-time 5 {} >/dev/null 2>&1; then echo 'reached another host'; exit 1; fi\n\
         echo ready\n",
        registry.url("/pkg.txt"),
        other.url("/"),
    );
    let features = crate::common::features(&[("F001", false, check)]);
    let passed = crate::common::features(&[("F001", true, check)]);
    let model = env.model(serde_json::json!({
        "1": [
            turn(vec![
                write_file("features.json", &features),
                write_file("init.sh", &init_sh),
                write_file(".gitignore", "deps/\n"),
                write_file("progress.md", "# Progress\n"),
            ]),
            turn(vec![bash("chmod +x init.sh && git add -A && git commit -qm init")]),
            done("initialized"),
        ],
        "2": [
            turn(vec![bash("cat deps/pkg.txt")]),
            turn(vec![
                write_file("done.txt", "done\n"),
                write_file("features.json", &passed),
            ]),
            turn(vec![bash("git add -A && git commit -qm F001")]),
            done("done"),
        ],
    }));
    let o = env
        .init_command("# spec\n", &model)
        .arg("--profile")
        .arg(&profile)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let o = env.run(&["continue", "--dir", &env.dir_arg()]);
    assert!(o.status.success(), "{}", text(&o));
    let log = env.log_json();
    let verdicts: Vec<&str> = log.iter().map(|s| s["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["accepted", "accepted"], "{log:?}");
    assert_eq!(other.connections(), 0, "another host was reached");

    // The worker, without network, found the package installed and init.sh fine.
    let requests = serde_json::to_string(&env.requests(2)).unwrap();
    assert!(requests.contains("PACKAGE-CONTENT"), "{requests}");
    assert!(requests.contains("exited 0"), "{requests}");
    // Installed before the worker started, through the proxy, and recorded.
    let transcript = env.transcript(2);
    let before = transcript
        .iter()
        .find(|e| e["type"] == "network" && e["during"] == "init.sh before the session")
        .unwrap_or_else(|| panic!("{transcript:?}"));
    let hosts = serde_json::to_string(&before["contacts"]).unwrap();
    assert!(
        hosts.contains(&format!("{}", registry.addr.port())),
        "{hosts}"
    );
    let message = env.git(&["log", "-1", "--format=%B", "main"]);
    for line in [
        format!("Longrun-Network: {} allowed", registry.host()),
        format!("Longrun-Network: {} refused", other.host()),
    ] {
        assert!(message.contains(&line), "{line}: {message}");
    }
}

#[test]
fn the_worker_finds_what_init_sh_installed_before_it_started_without_network_itself() {
    init_sh_installs_then_the_worker_builds(" || true", "test -f done.txt");
}

#[test]
fn init_sh_installs_from_the_registry_and_the_project_is_built_while_another_host_fails() {
    init_sh_installs_then_the_worker_builds(
        "",
        "grep -q PACKAGE-CONTENT deps/pkg.txt && test -f done.txt",
    );
}

#[test]
fn without_a_network_namespace_registries_gives_no_network_and_the_command_runs() {
    // Inside a sandbox, seccomp denies every namespace: an inner registries
    // sandbox cannot have one, so it gets no network at all (AF_UNIX only),
    // and what it runs still runs (init.sh asks for registries by default).
    let profile = profile_text(&[], "best-effort").replace(
        "network = \"registries\"\n",
        "network = \"none\"\ninit_network = \"none\"\n",
    );
    let place = Place::new(&profile, By::Root);
    let inner = place.workspace().join("longrun");
    std::fs::copy(env!("CARGO_BIN_EXE_longrun"), &inner).unwrap();
    let script = "./longrun sandbox --workspace . --network registries -- bash -c \
                  'echo inner-ran; /usr/bin/python3 -c \"import socket; socket.socket()\" 2>&1 | tail -1'; \
                  echo rc=$?";
    let o = place.run(By::Root, &[], script);
    let said = text(&o);
    assert!(said.contains("inner-ran"), "{said}");
    assert!(said.contains("PermissionError"), "{said}");
    assert!(said.contains("rc=0"), "{said}");
}
