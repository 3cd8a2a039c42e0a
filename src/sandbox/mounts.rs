//! A mount namespace of the sandbox's own: the whole tree read-only except
//! the writable paths, and, as root, /etc's root-only files covered.
//!
//! Landlock decides who may read, write and execute, but not who may change
//! a file's metadata: without this, a confined process could chmod (setuid
//! bits included) and touch any file it owns outside the workspace, and as
//! root that is every system file. A read-only mount answers EROFS to all
//! of it. And uid 0 owns /etc/shadow, so even with every capability dropped
//! it reads it as its owner; Landlock can only grant, never carve out, so
//! as root every /etc entry others may not read is covered: files by
//! /dev/null (empty to read), directories by an empty tmpfs with mode 000.
//!
//! The namespace is private (nothing propagates back) and is made while the
//! capabilities are still held (through the user namespace of the PID
//! namespace when unprivileged); seccomp denies mounting afterwards.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::mount::{mount, MsFlags};
use nix::sched::{unshare, CloneFlags};
use nix::sys::stat::{fstatat, Mode, SFlag};

use super::SandboxSpec;

/// Directories of /etc that hold world-readable files beside secrets (host
/// keys, TLS private keys, old passwords): looked into one level further.
const EXPANDED: &[&str] = &["ssh", "ssl", "security"];

/// Where the machine's Unix sockets live: the system and session buses,
/// systemd's own (`systemd-run` from it runs anything outside), container
/// daemons, X. Before Landlock ABI 9, connecting to a pathname socket is not
/// a file access Landlock controls, so they are covered by an empty tmpfs
/// (unless the profile's network is `host`, which confines nothing of it
/// and whose DNS may live in /run).
const SOCKET_DIRS: &[&str] = &["/run", "/tmp/.X11-unix", "/tmp/.ICE-unix"];

/// Where everyone's sockets and temp files live (tmux's at a known path,
/// ssh-agent's, X's): covered by an empty tmpfs too, with the sandbox's own
/// paths under it bound back in.
const TMP: &str = "/tmp";

/// What the layer did: lines for the trailers, and what it could not do.
pub struct MountsOutcome {
    pub layers: Vec<String>,
    pub warnings: Vec<String>,
    /// Hidden paths (credential files) inside a grant that could not be
    /// covered: Landlock leaves them out of its grants instead.
    pub uncovered: Vec<PathBuf>,
    /// Everything outside the writable paths is a read-only mount: without
    /// Landlock, this is the sandbox's filesystem boundary.
    pub read_only: bool,
}

/// The profile's hidden paths (the credential files) that exist and lie
/// inside something the sandbox is granted.
pub fn granted_hidden(spec: &SandboxSpec) -> Vec<PathBuf> {
    let grants: Vec<PathBuf> = spec
        .read_only_paths()
        .into_iter()
        .chain(spec.writable_paths())
        .collect();
    spec.profile
        .filesystem
        .hidden
        .iter()
        .filter(|h| std::fs::symlink_metadata(h).is_ok())
        .filter(|h| grants.iter().any(|g| h.starts_with(g)))
        .cloned()
        .collect()
}

/// Make the mount namespace for `spec`; with `own_proc` (the sandbox has a
/// PID namespace of its own), a /proc of that namespace.
pub fn restrict(spec: &SandboxSpec, own_proc: bool) -> anyhow::Result<MountsOutcome> {
    let writable = &spec.writable_paths();
    let mut outcome = MountsOutcome {
        layers: Vec::new(),
        warnings: Vec::new(),
        uncovered: Vec::new(),
        read_only: false,
    };
    let hidden = granted_hidden(spec);
    // A System V IPC namespace of its own too: the machine's shared memory
    // segments, semaphores and message queues are no path Landlock sees.
    match unshare(CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC) {
        Ok(()) => outcome
            .layers
            .push("ipc: own System V IPC namespace and /dev/shm".into()),
        Err(_) => {
            let ipc = "ipc: no IPC namespace: the machine's System V shared memory is reachable";
            if let Err(e) = unshare(CloneFlags::CLONE_NEWNS) {
                outcome.warnings.push(format!(
                    "mounts: no mount namespace ({e}): chmod and timestamps of files this \
                     user owns outside the workspace are not protected, and /dev/shm is the \
                     machine's"
                ));
                outcome.warnings.push(ipc.into());
                outcome.uncovered = hidden;
                anyhow::ensure!(
                    spec.layers.is_none(),
                    "no mount namespace ({e}): the workspace's overlay could not be mounted"
                );
                anyhow::ensure!(
                    !spec.read_only_links,
                    "no mount namespace ({e}): the files this checkout shares with the cached \
                     checkout of main could not be made read-only"
                );
                if !spec.read_only_inside.is_empty() {
                    outcome.warnings.push(
                        "mounts: the frozen and protected files are writable in the workspace \
                         (verification still runs them as they are on main)"
                            .into(),
                    );
                }
                return Ok(outcome);
            }
            outcome.warnings.push(ipc.into());
        }
    }
    if let Some(layers) = &spec.layers {
        // Private first, so that the overlay propagates nowhere; mounted
        // before the tree goes read-only, which would refuse its upper layer.
        make_private()?;
        mount_layers(&spec.workspace, layers).with_context(|| {
            format!(
                "cannot mount the overlay workspace at {}",
                spec.workspace.display()
            )
        })?;
        outcome.layers.push(format!(
            "mounts: the workspace is an overlay on {} read-only layer(s)",
            layers.lower.len()
        ));
    }
    match set_attr(Path::new("/"), true, MOUNT_ATTR_RDONLY, 0, libc::MS_PRIVATE) {
        Ok(()) => outcome.read_only = true,
        Err(nix::errno::Errno::ENOSYS) => {
            // Before Linux 5.12: private, but not read-only.
            mount(
                None::<&str>,
                "/",
                None::<&str>,
                MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                None::<&str>,
            )
            .context("cannot make the mount tree private")?;
            outcome.warnings.push(
                "mounts: no mount_setattr (Linux 5.12): chmod and timestamps of files this \
                 user owns outside the workspace are not protected"
                    .into(),
            );
        }
        Err(e) => return Err(e).context("cannot make the mount tree private and read-only"),
    }
    if own_proc {
        match mount_own_proc() {
            Ok(()) => outcome
                .layers
                .push("mounts: /proc shows only the sandbox's own processes".into()),
            Err(e) => outcome.warnings.push(format!(
                "mounts: the machine's /proc kept ({e}): other processes' command lines are readable"
            )),
        }
    }
    let hide = spec.profile.network != super::Network::Host;
    let tmp_covered = hide
        && match cover_tmp(writable, &spec.read_only_paths()) {
            Ok(covered) => covered,
            Err(e) => {
                outcome.warnings.push(format!(
                    "mounts: /tmp kept as the machine's ({e:#}): sockets there are reachable"
                ));
                false
            }
        };
    let under_tmp = |p: &PathBuf| tmp_covered && p.starts_with(TMP);
    // A private /dev/shm; where none can be made, the machine's is bound
    // back writable as before.
    let shm = Path::new(SHM);
    let own_shm = match private_shm(spec.profile.limits.memory_mb) {
        Ok(()) => true,
        Err(e) => {
            outcome
                .warnings
                .push(format!("ipc: the machine's /dev/shm kept ({e:#})"));
            false
        }
    };
    for path in writable
        .iter()
        .filter(|p| p.exists() && !under_tmp(p) && !(own_shm && p.as_path() == shm))
    {
        mount(
            Some(path),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .with_context(|| format!("cannot bind {} writable", path.display()))?;
        match set_attr(path, false, 0, MOUNT_ATTR_RDONLY, 0) {
            // Read-only on the host already (a locked mount): it stays so.
            Ok(()) | Err(nix::errno::Errno::EPERM) | Err(nix::errno::Errno::ENOSYS) => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot make {} writable", path.display()))
            }
        }
    }
    match bind_read_only_inside(&spec.read_only_inside) {
        Ok(0) => {}
        Ok(n) => outcome.layers.push(format!(
            "mounts: {n} frozen or protected path(s) in the workspace read-only"
        )),
        Err(e) => outcome.warnings.push(format!(
            "mounts: the frozen and protected files are writable in the workspace ({e:#}; \
             verification still runs them as they are on main)"
        )),
    }
    if spec.read_only_links {
        let n = bind_links_read_only(&spec.workspace).with_context(|| {
            format!(
                "cannot make the files {} shares with the cached checkout read-only",
                spec.workspace.display()
            )
        })?;
        outcome.layers.push(format!(
            "mounts: {n} unchanged file(s) shared with the cached checkout of main read-only"
        ));
    }
    // The working directory still names the read-only mount under the new
    // bind: enter it again by path.
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    std::env::set_current_dir(&cwd)
        .with_context(|| format!("cannot enter {} again", cwd.display()))?;
    outcome.layers.push(format!(
        "mounts: read-only but for the workspace{}",
        if spec.writable.is_empty() && spec.profile.filesystem.writable.is_empty() {
            ", tmp and home"
        } else {
            ", tmp, home and the extra writable paths"
        }
    ));
    let (covered, uncovered) = cover_credentials(&hidden);
    if !covered.is_empty() {
        outcome.layers.push(format!(
            "mounts: credential files hidden ({})",
            covered.join(", ")
        ));
    }
    outcome.uncovered = uncovered;
    if hide {
        let mut hidden = hide_socket_dirs(writable)?;
        if tmp_covered {
            hidden.push(TMP.to_string());
        }
        if !hidden.is_empty() {
            outcome.layers.push(format!(
                "mounts: {} hidden (the machine's Unix sockets and temp files)",
                hidden.join(", ")
            ));
        }
    }
    if nix::unistd::geteuid().is_root() {
        outcome.layers.push(hide_root_secrets()?);
    }
    Ok(outcome)
}

const MOUNT_ATTR_RDONLY: u64 = 0x1;

/// Make every mount of the namespace private (nothing propagates back).
fn make_private() -> anyhow::Result<()> {
    match set_attr(Path::new("/"), true, 0, 0, libc::MS_PRIVATE) {
        Err(nix::errno::Errno::ENOSYS) => mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        ),
        other => other,
    }
    .context("cannot make the mount tree private")
}

/// Mount the overlay of `layers` at `workspace`. Each layer is opened
/// without following a symlink and named to the kernel by its descriptor,
/// so no path is looked up twice and no comma or colon in a path is taken
/// for a separator. `userxattr` keeps overlayfs's own metadata in
/// `user.overlay.*` (the only kind a user namespace may write) and leaves
/// redirects and metacopy off, so the lower layer is read whole and
/// nothing in an upper layer points elsewhere; without an index, a lower
/// layer may be moved along while no overlay has it mounted.
fn mount_layers(workspace: &Path, layers: &super::Layers) -> anyhow::Result<()> {
    let open = |p: &Path| {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        nix::fcntl::open(p, flags, Mode::empty())
            .with_context(|| format!("cannot open the layer {}", p.display()))
    };
    let named = |fd: &OwnedFd| format!("/proc/self/fd/{}", fd.as_raw_fd());
    anyhow::ensure!(!layers.lower.is_empty(), "an overlay needs a lower layer");
    let lower = layers
        .lower
        .iter()
        .map(|p| open(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (upper, work) = (open(&layers.upper)?, open(&layers.work)?);
    let lowerdir: Vec<String> = lower.iter().map(named).collect();
    let options = format!(
        "userxattr,index=off,xino=off,lowerdir={},upperdir={},workdir={}",
        lowerdir.join(":"),
        named(&upper),
        named(&work)
    );
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(
        Some("overlay"),
        workspace,
        Some("overlay"),
        flags,
        Some(options.as_str()),
    )?;
    Ok(())
}

/// Bind every regular file beneath `workspace` with more than one link
/// read-only onto itself (see [`SandboxSpec::read_only_links`]), walking
/// without following a symlink. A directory that cannot be read is an
/// error: a link in it would stay writable. Returns how many were bound.
fn bind_links_read_only(workspace: &Path) -> anyhow::Result<usize> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    let root = nix::fcntl::open(workspace, flags, Mode::empty())?;
    let mut bound = 0;
    bind_links_in(&root, &mut bound)?;
    Ok(bound)
}

fn bind_links_in(dir: &OwnedFd, bound: &mut usize) -> anyhow::Result<()> {
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut listing = nix::dir::Dir::openat(dir, ".", flags, Mode::empty())?;
    let names: Vec<std::ffi::CString> = listing
        .iter()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_owned())
        .filter(|n| n.as_bytes() != b"." && n.as_bytes() != b"..")
        .collect();
    for name in names {
        let st = fstatat(dir, name.as_c_str(), AtFlags::AT_SYMLINK_NOFOLLOW)?;
        match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFDIR => {
                let sub = openat(dir, name.as_c_str(), flags, Mode::empty())?;
                bind_links_in(&sub, bound)?;
            }
            SFlag::S_IFREG if st.st_nlink > 1 => {
                bind_file_read_only(dir, &name)
                    .with_context(|| format!("cannot bind {}", name.to_string_lossy()))?;
                *bound += 1;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The kernel's `struct mount_attr` (mount_setattr(2)).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Bind the file `name` of `dir` read-only onto itself (open_tree,
/// mount_setattr, move_mount: no path is looked up twice, no symlink followed).
fn bind_file_read_only(dir: &OwnedFd, name: &std::ffi::CStr) -> nix::Result<()> {
    const OPEN_TREE_CLONE: libc::c_uint = 1;
    const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
    let open = OPEN_TREE_CLONE
        | libc::O_CLOEXEC as libc::c_uint
        | libc::AT_SYMLINK_NOFOLLOW as libc::c_uint;
    // SAFETY: a valid descriptor and C string; the kernel returns a new descriptor.
    let tree = unsafe { libc::syscall(libc::SYS_open_tree, dir.as_raw_fd(), name.as_ptr(), open) };
    let tree = nix::errno::Errno::result(tree)?;
    // SAFETY: the descriptor was just returned to us and is owned here alone.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as i32) };
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a valid descriptor, an empty C string and a mount_attr of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            tree.as_raw_fd(),
            c"".as_ptr(),
            libc::AT_EMPTY_PATH,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    nix::errno::Errno::result(rc)?;
    // SAFETY: valid descriptors and C strings.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            dir.as_raw_fd(),
            name.as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH,
        )
    };
    nix::errno::Errno::result(rc).map(drop)
}

/// Bind each of `paths` (inside the writable workspace) onto itself
/// read-only, directories first so that a file inside one stays covered.
/// A path that is missing or a symlink is skipped: a symlink is not the
/// file main holds, and verification puts the real one back. Returns how
/// many were bound.
fn bind_read_only_inside(paths: &[PathBuf]) -> anyhow::Result<usize> {
    let mut kept: Vec<(&PathBuf, bool)> = paths
        .iter()
        .filter_map(|p| {
            let meta = std::fs::symlink_metadata(p).ok()?;
            (!meta.file_type().is_symlink()).then_some((p, meta.is_dir()))
        })
        .collect();
    kept.sort_by_key(|(p, dir)| (!dir, p.components().count()));
    for (path, _) in &kept {
        mount(
            Some(path.as_path()),
            path.as_path(),
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .with_context(|| format!("cannot bind {}", path.display()))?;
        set_attr(path, true, MOUNT_ATTR_RDONLY, 0, 0)
            .with_context(|| format!("cannot make {} read-only", path.display()))?;
    }
    Ok(kept.len())
}

/// mount_setattr(2) on `path` (and, with `recursive`, every mount below).
fn set_attr(
    path: &Path,
    recursive: bool,
    set: u64,
    clear: u64,
    propagation: u64,
) -> nix::Result<()> {
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation,
        userns_fd: 0,
    };
    let path = std::ffi::CString::new(std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()))
        .map_err(|_| nix::errno::Errno::EINVAL)?;
    let flags = if recursive { AT_RECURSIVE } else { 0 };
    // SAFETY: a valid C string and a mount_attr of the size passed.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    nix::errno::Errno::result(rc).map(drop)
}

/// POSIX shared memory and semaphores (Python's multiprocessing needs them).
const SHM: &str = "/dev/shm";

/// An empty /dev/shm of the sandbox's own, no larger than its memory limit
/// (tmpfs pages are not held by RLIMIT_AS): the machine's is where other
/// programs keep their POSIX shared memory.
fn private_shm(memory_mb: u64) -> anyhow::Result<()> {
    if !Path::new(SHM).is_dir() {
        return Ok(());
    }
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let options = format!("mode=1777,size={memory_mb}m");
    mount(
        Some("tmpfs"),
        SHM,
        Some("tmpfs"),
        flags,
        Some(options.as_str()),
    )
    .context("cannot mount a private /dev/shm")
}

/// A procfs of our PID namespace over /proc: without it, every process of
/// the machine is listed there, command lines (where secrets are sometimes
/// passed) included. Read-only: Landlock grants /proc reading only anyway.
fn mount_own_proc() -> nix::Result<()> {
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC | MsFlags::MS_RDONLY;
    mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>)
}

/// Cover /tmp with an empty tmpfs and bind back the paths the sandbox uses
/// under it (its workspace, tmp and home, the main repo, read-only ones
/// read-only), then make the tmpfs read-only. False when /tmp is not a
/// directory, or the profile grants /tmp itself or a parent of it.
fn cover_tmp(writable: &[PathBuf], read_only: &[PathBuf]) -> anyhow::Result<bool> {
    let tmp = Path::new(TMP);
    let all = || writable.iter().chain(read_only);
    let is_dir = std::fs::symlink_metadata(tmp).is_ok_and(|m| m.is_dir());
    if !is_dir || all().any(|p| tmp.starts_with(p)) {
        return Ok(false);
    }
    // Opened before /tmp is covered (and after the namespace exists, so
    // that they name its mounts); parents first, so that a path inside
    // another lands on top of it.
    let mut keep: Vec<(PathBuf, std::fs::File, bool)> = Vec::new();
    for (path, writable) in writable
        .iter()
        .map(|p| (p, true))
        .chain(read_only.iter().map(|p| (p, false)))
    {
        if path.starts_with(tmp) {
            if let Ok(file) = open_path(path) {
                keep.push((path.clone(), file, writable));
            }
        }
    }
    keep.sort_by_key(|(p, _, _)| p.components().count());
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(
        Some("tmpfs"),
        tmp,
        Some("tmpfs"),
        flags,
        Some("size=64k,mode=755"),
    )
    .context("cannot cover /tmp")?;
    bind_back(tmp, &keep).inspect_err(|_| {
        // Undo the cover, so that the paths under /tmp are there as before.
        let _ = nix::mount::umount2(tmp, nix::mount::MntFlags::MNT_DETACH);
    })?;
    Ok(true)
}

/// Bind each kept path back onto the new tmpfs at `tmp`, then make the
/// tmpfs read-only.
fn bind_back(tmp: &Path, keep: &[(PathBuf, std::fs::File, bool)]) -> anyhow::Result<()> {
    for (path, file, writable) in keep {
        let dir = file.metadata().map(|m| m.is_dir()).unwrap_or(true);
        make_mount_point(path, dir)
            .with_context(|| format!("cannot make {} again under the new /tmp", path.display()))?;
        let source = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(file));
        mount(
            Some(source.as_str()),
            path,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .with_context(|| format!("cannot bind {} under the new /tmp", path.display()))?;
        if *writable {
            match set_attr(path, false, 0, MOUNT_ATTR_RDONLY, 0) {
                Ok(()) | Err(nix::errno::Errno::EPERM) => {}
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("cannot make {} writable", path.display()))
                }
            }
        }
    }
    set_attr(tmp, false, MOUNT_ATTR_RDONLY, 0, 0).context("cannot make the new /tmp read-only")
}

/// An O_PATH descriptor of `path`: enough to bind it, whatever its mode.
fn open_path(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open(path)
}

/// Where a kept path goes on the new /tmp: a directory, or an empty file.
/// Inside a path already bound back it exists as it is.
fn make_mount_point(path: &Path, dir: bool) -> std::io::Result<()> {
    if dir {
        return std::fs::create_dir_all(path);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    if path.exists() {
        return Ok(());
    }
    std::fs::File::create(path).map(drop)
}

/// Cover each of SOCKET_DIRS that exists with an empty read-only tmpfs,
/// except where a writable path lies inside it. Returns what was covered.
fn hide_socket_dirs(writable: &[PathBuf]) -> anyhow::Result<Vec<String>> {
    let mut hidden = Vec::new();
    for dir in SOCKET_DIRS.iter().map(Path::new) {
        let real = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
        if !real || writable.iter().any(|w| w.starts_with(dir)) {
            continue;
        }
        empty_tmpfs(dir, "755").with_context(|| format!("cannot cover {}", dir.display()))?;
        hidden.push(dir.display().to_string());
    }
    Ok(hidden)
}

/// Cover each credential file (by /dev/null) or directory (by an empty
/// tmpfs of mode 000) that a grant would make readable; last, so that no
/// bind of a grant lands on top. Returns what was covered, by name, and
/// what could not be.
fn cover_credentials(paths: &[PathBuf]) -> (Vec<String>, Vec<PathBuf>) {
    let (mut covered, mut failed) = (Vec::new(), Vec::new());
    for path in paths {
        let dir = std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        match cover(&Secret {
            path: path.clone(),
            dir,
        }) {
            Ok(()) => covered.push(path.display().to_string()),
            Err(_) => failed.push(path.clone()),
        }
    }
    (covered, failed)
}

/// As root, cover what only root may read in /etc.
fn hide_root_secrets() -> anyhow::Result<String> {
    let secrets = root_only(Path::new("/etc"), EXPANDED);
    for secret in &secrets {
        cover(secret).with_context(|| format!("cannot cover {}", secret.path.display()))?;
    }
    let names: Vec<String> = secrets
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    Ok(match names.is_empty() {
        true => "secrets: no root-only entries in /etc".to_string(),
        false => format!(
            "secrets: root-only entries of /etc hidden ({})",
            names.join(", ")
        ),
    })
}

/// Cover `at` with an empty, read-only tmpfs whose root has `mode`.
fn empty_tmpfs(at: &Path, mode: &str) -> nix::Result<()> {
    let flags = MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    let options = format!("size=4k,mode={mode}");
    mount(
        Some("tmpfs"),
        at,
        Some("tmpfs"),
        flags,
        Some(options.as_str()),
    )
}

fn cover(secret: &Secret) -> nix::Result<()> {
    if secret.dir {
        empty_tmpfs(&secret.path, "000")
    } else {
        mount(
            Some("/dev/null"),
            &secret.path,
            None::<&str>,
            MsFlags::MS_BIND,
            None::<&str>,
        )
    }
}

/// An entry of /etc that others may not read.
#[derive(Debug, PartialEq, Eq)]
struct Secret {
    path: PathBuf,
    dir: bool,
}

/// The entries of `dir` that others may not read (symlinks judged by their
/// targets); in those named in `expand`, one level further. A stat per
/// entry and nothing more: this runs on every start as root.
fn root_only(dir: &Path, expand: &[&str]) -> Vec<Secret> {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let dir = meta.is_dir();
        if meta.mode() & 0o004 == 0 {
            if dir || meta.is_file() {
                found.push(Secret { path, dir });
            }
        } else if dir && expand.iter().any(|e| entry.file_name() == *e) {
            found.extend(root_only(&path, &[]));
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_others_may_not_read_is_found_and_named_dirs_are_looked_into() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        for (name, m) in [("passwd", 0o644), ("shadow", 0o640), ("sudoers", 0o440)] {
            std::fs::write(root.join(name), "x").unwrap();
            mode(&root.join(name), m);
        }
        for sub in ["ssh", "apt"] {
            std::fs::create_dir(root.join(sub)).unwrap();
            std::fs::write(root.join(sub).join("key"), "k").unwrap();
            mode(&root.join(sub).join("key"), 0o600);
            std::fs::write(root.join(sub).join("conf"), "c").unwrap();
        }
        std::fs::create_dir(root.join("private")).unwrap();
        mode(&root.join("private"), 0o700);
        std::os::unix::fs::symlink(root.join("shadow"), root.join("link")).unwrap();
        let got: Vec<(String, bool)> = root_only(root, &["ssh"])
            .into_iter()
            .map(|s| {
                (
                    s.path.strip_prefix(root).unwrap().display().to_string(),
                    s.dir,
                )
            })
            .collect();
        let want = [
            ("link", false),
            ("private", true),
            ("shadow", false),
            ("ssh/key", false),
            ("sudoers", false),
        ];
        let want: Vec<(String, bool)> = want.iter().map(|(p, d)| (p.to_string(), *d)).collect();
        assert_eq!(got, want);
    }
}
