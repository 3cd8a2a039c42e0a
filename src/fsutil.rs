//! Small filesystem helpers: atomic writes, and access beneath a directory
//! that never follows a symlink.
//!
//! Everything the orchestrator reads, writes or removes in a tree a session
//! could have touched (its workspace, a checkout, the project's work tree
//! after a merge) goes through [`Beneath`]: each path component is opened
//! with `O_NOFOLLOW` relative to the one before, so a symlink anywhere on
//! the path is an error, never a way out.
//!
//! Every file a session or a check could have written is read through
//! [`read_bounded`] (or [`Beneath::read_bounded`]): opened with `O_NOFOLLOW
//! | O_NONBLOCK`, so a symlink is refused and a FIFO neither blocks the open
//! nor the read; anything but a regular file refused; at most a cap of
//! bytes read, so a sparse file of terabytes or one that grows while it is
//! read costs no more; and given up after a deadline.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{openat, OFlag};
use nix::sys::stat::{fchmod, fstatat, mkdirat, FileStat, Mode, SFlag};
use nix::unistd::{unlinkat, UnlinkatFlags};

/// Write `contents` to `path` atomically: a temp file in the same directory,
/// fsync, rename, fsync of the directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> anyhow::Result<()> {
    let dir = path
        .parent()
        .with_context(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("failed to create a temp file in {}", dir.display()))?;
    tmp.write_all(contents)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("failed to write {}", path.display()))?;
    tmp.persist(path)
        .map_err(|e| e.error)
        .with_context(|| format!("failed to replace {}", path.display()))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// A directory the orchestrator trusts, and access to what is beneath it
/// without following a symlink on the way.
pub struct Beneath {
    root: OwnedFd,
    shown: std::path::PathBuf,
}

/// What is at a path beneath the root, not following a final symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File,
    Dir,
    Symlink,
    Other,
}

impl Beneath {
    /// Open `root` itself (a path the orchestrator chose, so it may be followed).
    pub fn open(root: &Path) -> anyhow::Result<Beneath> {
        let fd = nix::fcntl::open(
            root,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .with_context(|| format!("cannot open {}", root.display()))?;
        Ok(Beneath {
            root: fd,
            shown: root.to_path_buf(),
        })
    }

    fn err(&self, rel: &Path, what: &str, e: Errno) -> anyhow::Error {
        let path = self.shown.join(rel);
        match e {
            Errno::ELOOP | Errno::ENOTDIR => anyhow::anyhow!(
                "{}: {what}: a component of the path is a symlink or not a directory",
                path.display()
            ),
            e => anyhow::anyhow!("{}: {what}: {e}", path.display()),
        }
    }

    /// The parent directory of `rel` (opened, created with `create`) and its last name.
    fn parent<'p>(
        &self,
        rel: &'p Path,
        create: bool,
    ) -> anyhow::Result<Result<(OwnedFd, &'p OsStr), Errno>> {
        let names = names(rel)?;
        let (last, dirs) = names
            .split_last()
            .with_context(|| format!("{}: an empty path", rel.display()))?;
        let mut fd = self
            .root
            .try_clone()
            .context("cannot duplicate a descriptor")?;
        for name in dirs {
            fd = match openat(&fd, *name, DIR_FLAGS, Mode::empty()) {
                Ok(next) => next,
                Err(Errno::ENOENT) if create => {
                    match mkdirat(&fd, *name, Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EEXIST) => {}
                        Err(e) => return Err(self.err(rel, "cannot create a directory", e)),
                    }
                    openat(&fd, *name, DIR_FLAGS, Mode::empty())
                        .map_err(|e| self.err(rel, "cannot open a directory", e))?
                }
                Err(Errno::ENOENT) => return Ok(Err(Errno::ENOENT)),
                Err(e) => return Err(self.err(rel, "cannot open a directory", e)),
            };
        }
        Ok(Ok((fd, last)))
    }

    /// The parent of `rel`, which must exist or be made.
    fn parent_made<'p>(&self, rel: &'p Path) -> anyhow::Result<(OwnedFd, &'p OsStr)> {
        self.parent(rel, true)?
            .map_err(|e| self.err(rel, "cannot open a directory", e))
    }

    /// What is at `rel`: a symlink on the way (not at the end) is an error.
    pub fn kind(&self, rel: &Path) -> anyhow::Result<Kind> {
        let Ok((dir, name)) = self.parent(rel, false)? else {
            return Ok(Kind::Missing);
        };
        match fstatat(&dir, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(kind_of(&st)),
            Err(Errno::ENOENT) => Ok(Kind::Missing),
            Err(e) => Err(self.err(rel, "cannot stat", e)),
        }
    }

    /// The contents of the regular file at `rel`, None when nothing is there.
    /// A symlink at or on the way to `rel`, anything but a regular file, or
    /// a file over [`Bounds::FILE`], is an error.
    pub fn read(&self, rel: &Path) -> anyhow::Result<Option<Vec<u8>>> {
        let Some(read) = self.read_bounded(rel, Bounds::FILE)? else {
            return Ok(None);
        };
        anyhow::ensure!(
            !read.cut,
            "{}: larger than {} bytes",
            self.shown.join(rel).display(),
            Bounds::FILE.cap
        );
        Ok(Some(read.bytes))
    }

    /// [`read_bounded`] of the file at `rel`, no symlink followed on the way.
    pub fn read_bounded(&self, rel: &Path, bounds: Bounds) -> anyhow::Result<Option<Bounded>> {
        let Ok((dir, name)) = self.parent(rel, false)? else {
            return Ok(None);
        };
        let fd = match openat(&dir, name, READ_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(self.err(rel, "cannot open", e)),
        };
        read_open(fd, &self.shown.join(rel), bounds).map(Some)
    }

    /// Make `rel` a regular file holding `bytes` with `mode`, creating the
    /// directories on the way. The file is written aside and renamed over
    /// whatever was there, so a symlink at `rel` is replaced, never written through.
    pub fn write(&self, rel: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
        let (dir, name) = self.parent_made(rel)?;
        let temp = format!(".longrun-tmp-{}-{}", std::process::id(), unique());
        let flags =
            OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = openat(&dir, temp.as_str(), flags, Mode::from_bits_truncate(0o600))
            .map_err(|e| self.err(rel, "cannot create a file", e))?;
        let written = fchmod(&fd, Mode::from_bits_truncate(mode))
            .map_err(std::io::Error::from)
            .and_then(|()| std::fs::File::from(fd).write_all(bytes));
        let placed = written.map_err(anyhow::Error::from).and_then(|()| {
            nix::fcntl::renameat(&dir, temp.as_str(), &dir, name)
                .map_err(|e| self.err(rel, "cannot rename into place", e))
        });
        if placed.is_err() {
            let _ = unlinkat(&dir, temp.as_str(), UnlinkatFlags::NoRemoveDir);
        }
        placed.with_context(|| format!("cannot write {}", self.shown.join(rel).display()))
    }

    /// Make `rel` a symlink to `target` (which is stored, never followed here).
    pub fn symlink(&self, rel: &Path, target: &Path) -> anyhow::Result<()> {
        let (dir, name) = self.parent_made(rel)?;
        nix::unistd::symlinkat(target, &dir, name)
            .map_err(|e| self.err(rel, "cannot create a symlink", e))
    }

    /// Make the directory `rel` (and those on the way).
    pub fn mkdir(&self, rel: &Path) -> anyhow::Result<()> {
        let (dir, name) = self.parent_made(rel)?;
        match mkdirat(&dir, name, Mode::from_bits_truncate(0o755)) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(self.err(rel, "cannot create a directory", e)),
        }
        openat(&dir, name, DIR_FLAGS, Mode::empty())
            .map(drop)
            .map_err(|e| self.err(rel, "cannot open a directory", e))
    }

    /// Remove the file or symlink at `rel`; nothing there is fine.
    pub fn remove_file(&self, rel: &Path) -> anyhow::Result<()> {
        let Ok((dir, name)) = self.parent(rel, false)? else {
            return Ok(());
        };
        match unlinkat(&dir, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) | Err(Errno::ENOENT) => Ok(()),
            Err(e) => Err(self.err(rel, "cannot remove", e)),
        }
    }
}

/// How to open a file a session could have written: never through a final
/// symlink, never blocking on a FIFO, never becoming a controlling terminal.
const READ_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_NONBLOCK)
    .union(OFlag::O_NOCTTY)
    .union(OFlag::O_CLOEXEC);

/// Limits on a read of a file a session or a check could have written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The most bytes read.
    pub cap: u64,
    /// Past this the read stops with an error, whatever it holds.
    pub deadline: std::time::Duration,
    /// Keep the last `cap` bytes (a log's tail) instead of the first.
    pub tail: bool,
}

impl Bounds {
    /// A file of the project's own: at most 256 MiB, in 60 s.
    pub const FILE: Bounds = Bounds::head(256 << 20, 60);

    /// The first `cap` bytes within `secs` seconds.
    pub const fn head(cap: u64, secs: u64) -> Bounds {
        Bounds {
            cap,
            deadline: std::time::Duration::from_secs(secs),
            tail: false,
        }
    }

    /// The last `cap` bytes within `secs` seconds.
    pub const fn tail(cap: u64, secs: u64) -> Bounds {
        Bounds {
            tail: true,
            ..Bounds::head(cap, secs)
        }
    }
}

/// What a bounded read found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bounded {
    pub bytes: Vec<u8>,
    /// The file held more than the cap when it was read (or grew past it):
    /// `bytes` is its first (or, for a tail, its last) `cap` bytes.
    pub cut: bool,
}

/// Read the regular file at `path`, which a session or a check could have
/// written, within `bounds`; None when nothing is there. A symlink at the
/// end of the path, a FIFO, a socket, a device or a directory is an error,
/// and none of them blocks or is followed. The directories on the way are
/// the orchestrator's (use [`Beneath::read_bounded`] where they are not).
pub fn read_bounded(path: &Path, bounds: Bounds) -> anyhow::Result<Option<Bounded>> {
    let fd = match nix::fcntl::open(path, READ_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => anyhow::bail!("{}: a symlink, not followed", path.display()),
        Err(e) => anyhow::bail!("{}: cannot open: {e}", path.display()),
    };
    read_open(fd, path, bounds).map(Some)
}

/// The bytes of the open file `fd` within `bounds`, when it is a regular file.
fn read_open(fd: OwnedFd, shown: &Path, bounds: Bounds) -> anyhow::Result<Bounded> {
    let st =
        nix::sys::stat::fstat(&fd).with_context(|| format!("cannot stat {}", shown.display()))?;
    let kind = kind_of(&st);
    anyhow::ensure!(
        kind == Kind::File,
        "{}: not a regular file ({}), not read",
        shown.display(),
        match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
            SFlag::S_IFIFO => "a FIFO",
            SFlag::S_IFCHR | SFlag::S_IFBLK => "a device",
            SFlag::S_IFSOCK => "a socket",
            SFlag::S_IFDIR => "a directory",
            _ => "not a file",
        }
    );
    let size = u64::try_from(st.st_size).unwrap_or(0);
    let mut file = std::fs::File::from(fd);
    let mut cut = size > bounds.cap;
    if bounds.tail && cut {
        use std::io::Seek;
        file.seek(std::io::SeekFrom::Start(size - bounds.cap))
            .with_context(|| format!("cannot read {}", shown.display()))?;
    }
    let start = std::time::Instant::now();
    let mut bytes = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    // One byte past the cap tells a file that grew past it.
    while (bytes.len() as u64) <= bounds.cap {
        anyhow::ensure!(
            start.elapsed() < bounds.deadline,
            "{}: not read within {} s",
            shown.display(),
            bounds.deadline.as_secs()
        );
        let want = usize::try_from(bounds.cap + 1 - bytes.len() as u64)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        match file.read(&mut buf[..want]) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown.display())),
        }
    }
    if bytes.len() as u64 > bounds.cap {
        bytes.truncate(usize::try_from(bounds.cap).unwrap_or(usize::MAX));
        cut = true;
    }
    Ok(Bounded { bytes, cut })
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn kind_of(st: &FileStat) -> Kind {
    match SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFREG => Kind::File,
        SFlag::S_IFDIR => Kind::Dir,
        SFlag::S_IFLNK => Kind::Symlink,
        _ => Kind::Other,
    }
}

/// The plain names of a relative path; `..`, `.`, a root or a prefix is an error.
fn names(rel: &Path) -> anyhow::Result<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(anyhow::anyhow!(
                "{}: not a plain relative path",
                rel.display()
            )),
        })
        .collect()
}

/// `FS_TOPDIR_FL` of linux/fs.h (`chattr +T`), which the libc crate does not name.
const FS_TOPDIR_FL: libc::c_long = 0x0002_0000;

/// Ask the filesystem to place each new subdirectory of `dir` as if it
/// were a top-level one (`chattr +T`), where it supports that (ext2/3/4);
/// elsewhere nothing happens. Returns whether the flag is set.
///
/// For the session directories: a run creates and removes a whole tree
/// per session. ext4 places a new directory's files in its parent's block
/// group, and without a journal it skips, file by file, every inode freed
/// in the last 30 seconds, so writing a tree where the previous session's
/// was just removed costs time in proportion to the churn (measured here:
/// 500 files took 26 ms in a fresh group and 296 ms after 200 rounds in
/// the same one). Spread over groups, each session starts where nothing
/// was just freed.
pub fn spread_subdirectories(dir: &Path) -> bool {
    let Ok(fd) = nix::fcntl::open(dir, DIR_FLAGS, Mode::empty()) else {
        return false;
    };
    use std::os::fd::AsRawFd;
    let mut flags: libc::c_long = 0;
    // SAFETY: FS_IOC_GETFLAGS writes one long through the pointer, which
    // points at a live local; the descriptor is open for the whole call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) } != 0 {
        return false;
    }
    if flags & FS_TOPDIR_FL != 0 {
        return true;
    }
    flags |= FS_TOPDIR_FL;
    // SAFETY: as above; FS_IOC_SETFLAGS only reads the long.
    unsafe { libc::ioctl(fd.as_raw_fd(), libc::FS_IOC_SETFLAGS, &flags) == 0 }
}

/// Remove the directory tree at `path` without following any symlink in it,
/// making directories writable on the way (a session may have left them
/// read-only). Nothing there is fine.
pub fn remove_tree(path: &Path) -> anyhow::Result<()> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        anyhow::bail!("{}: refusing to remove a root", path.display());
    };
    let parent = match nix::fcntl::open(parent, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(()),
        Err(e) => return Err(anyhow::anyhow!("cannot open {}: {e}", parent.display())),
    };
    remove_entry(&parent, name).with_context(|| format!("cannot remove {}", path.display()))
}

fn remove_entry(dir: &OwnedFd, name: &std::ffi::OsStr) -> anyhow::Result<()> {
    match unlinkat(dir, name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => return Ok(()),
        Err(Errno::EISDIR) | Err(Errno::EPERM) => {}
        Err(e) => return Err(anyhow::anyhow!("{}: {e}", name.to_string_lossy())),
    }
    let fd = match openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(()),
        // A directory of mode 000 (overlayfs leaves one in its scratch
        // directory): made readable first, as its owner may.
        Err(Errno::EACCES) => open_unreadable(dir, name)
            .map_err(|e| anyhow::anyhow!("{}: {e}", name.to_string_lossy()))?,
        Err(e) => return Err(anyhow::anyhow!("{}: {e}", name.to_string_lossy())),
    };
    let _ = fchmod(&fd, Mode::from_bits_truncate(0o700));
    let children: Vec<std::ffi::OsString> = list(&fd)?;
    for child in children {
        remove_entry(&fd, &child)?;
    }
    match unlinkat(dir, name, UnlinkatFlags::RemoveDir) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(e) => Err(anyhow::anyhow!("{}: {e}", name.to_string_lossy())),
    }
}

/// The directory `name` in `dir` that its owner may not read: chmod 700
/// through an O_PATH descriptor of it (never through a symlink), then opened.
fn open_unreadable(dir: &OwnedFd, name: &std::ffi::OsStr) -> nix::Result<OwnedFd> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::PermissionsExt;
    let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let path = openat(dir, name, flags, Mode::empty())?;
    let magic = format!("/proc/self/fd/{}", path.as_raw_fd());
    std::fs::set_permissions(&magic, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| Errno::from_raw(e.raw_os_error().unwrap_or(libc::EACCES)))?;
    openat(dir, name, DIR_FLAGS, Mode::empty())
}

/// The names in a directory, `.` and `..` left out.
fn list(fd: &OwnedFd) -> anyhow::Result<Vec<std::ffi::OsString>> {
    use std::os::unix::ffi::OsStrExt;
    // A fresh descriptor of the same directory: a duplicate would share its offset.
    let mut dir = nix::dir::Dir::openat(fd, ".", DIR_FLAGS, Mode::empty())?;
    let mut names = Vec::new();
    for entry in dir.iter() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            names.push(std::ffi::OsStr::from_bytes(name).to_os_string());
        }
    }
    Ok(names)
}

/// Bytes used by the tree at `path` (allocated blocks, hard links counted
/// once per visit), symlinks not followed; stops counting past `cap`.
pub fn tree_size(path: &Path, cap: u64) -> anyhow::Result<u64> {
    let fd = nix::fcntl::open(path, DIR_FLAGS, Mode::empty())
        .with_context(|| format!("cannot open {}", path.display()))?;
    let mut total = 0u64;
    add_size(&fd, cap, &mut total).with_context(|| format!("cannot measure {}", path.display()))?;
    Ok(total)
}

fn add_size(dir: &OwnedFd, cap: u64, total: &mut u64) -> anyhow::Result<()> {
    for name in list(dir)? {
        if *total > cap {
            return Ok(());
        }
        let st = match fstatat(
            dir,
            name.as_os_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(st) => st,
            Err(Errno::ENOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        *total = total.saturating_add((st.st_blocks as u64).saturating_mul(512));
        if kind_of(&st) == Kind::Dir {
            match openat(dir, name.as_os_str(), DIR_FLAGS, Mode::empty()) {
                Ok(sub) => add_size(&sub, cap, total)?,
                Err(Errno::ENOENT) | Err(Errno::EACCES) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn session_directories_are_spread_where_the_filesystem_can() {
        let dir = tempfile::tempdir().unwrap();
        let set = spread_subdirectories(dir.path());
        // ext4 (this machine's disk) keeps the flag; tmpfs has no such flag.
        let lsattr = std::process::Command::new("lsattr")
            .arg("-d")
            .arg(dir.path())
            .output();
        if let Some(out) = lsattr.ok().filter(|o| o.status.success()) {
            let shown = String::from_utf8_lossy(&out.stdout);
            let flags = shown.split_whitespace().next().unwrap_or("");
            assert_eq!(flags.contains('T'), set, "{shown}");
        } else {
            assert!(!set, "set where lsattr cannot read flags");
        }
        // Again: already set, nothing changes.
        assert_eq!(spread_subdirectories(dir.path()), set);
        assert!(!spread_subdirectories(&dir.path().join("missing")));
    }
    use super::*;

    #[test]
    fn a_symlinked_directory_on_the_way_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("link")).unwrap();
        let b = Beneath::open(root.path()).unwrap();
        assert!(b.write(Path::new("link/x"), b"x", 0o644).is_err());
        assert!(!outside.path().join("x").exists());
        assert!(b.read(Path::new("link/x")).is_err());
    }

    #[test]
    fn a_symlink_at_the_end_is_replaced_not_written_through() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("victim");
        std::fs::write(&target, "before").unwrap();
        std::os::unix::fs::symlink(&target, root.path().join("f")).unwrap();
        let b = Beneath::open(root.path()).unwrap();
        assert!(b.read(Path::new("f")).is_err());
        b.write(Path::new("f"), b"after", 0o644).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "before");
        assert_eq!(
            std::fs::read_to_string(root.path().join("f")).unwrap(),
            "after"
        );
        assert!(std::fs::symlink_metadata(root.path().join("f"))
            .unwrap()
            .is_file());
    }

    #[test]
    fn dot_dot_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let b = Beneath::open(&root.path().join(".")).unwrap();
        assert!(b.write(Path::new("../x"), b"x", 0o644).is_err());
        assert!(b.write(Path::new("/etc/x"), b"x", 0o644).is_err());
    }

    #[test]
    fn remove_tree_does_not_follow_links_and_handles_read_only_dirs() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "k").unwrap();
        let t = root.path().join("t");
        std::fs::create_dir_all(t.join("a/b")).unwrap();
        std::fs::write(t.join("a/b/f"), "f").unwrap();
        std::os::unix::fs::symlink(outside.path(), t.join("a/out")).unwrap();
        std::fs::set_permissions(t.join("a"), std::fs::Permissions::from_mode(0o500)).unwrap();
        remove_tree(&t).unwrap();
        assert!(!t.exists());
        assert!(outside.path().join("keep").exists());
        remove_tree(&t).unwrap();
    }

    /// A FIFO with no writer: opening it for reading without O_NONBLOCK
    /// would block for ever.
    fn fifo(path: &Path) {
        nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o644)).unwrap();
    }

    fn bounds() -> Bounds {
        Bounds::head(1 << 20, 5)
    }

    #[test]
    fn a_fifo_is_refused_at_once_not_waited_on() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("results");
        fifo(&p);
        let start = std::time::Instant::now();
        let e = read_bounded(&p, bounds()).unwrap_err().to_string();
        assert!(e.contains("a FIFO"), "{e}");
        let e = Beneath::open(root.path())
            .unwrap()
            .read_bounded(Path::new("results"), bounds())
            .unwrap_err()
            .to_string();
        assert!(e.contains("a FIFO"), "{e}");
        assert!(start.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn a_symlink_is_not_followed_even_to_a_readable_file() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("secret");
        std::fs::write(&target, "key").unwrap();
        let link = root.path().join("results");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let e = read_bounded(&link, bounds()).unwrap_err().to_string();
        assert!(e.contains("symlink"), "{e}");
        std::os::unix::fs::symlink("/proc/self/environ", root.path().join("env")).unwrap();
        assert!(read_bounded(&root.path().join("env"), bounds()).is_err());
    }

    #[test]
    fn a_device_node_is_refused() {
        // /dev/zero would give bytes for ever; one made in place the same.
        let e = read_bounded(Path::new("/dev/zero"), bounds()).unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let root = tempfile::tempdir().unwrap();
        let made = root.path().join("zero");
        let dev = nix::sys::stat::makedev(1, 5);
        if nix::sys::stat::mknod(&made, SFlag::S_IFCHR, Mode::from_bits_truncate(0o644), dev)
            .is_ok()
        {
            let e = read_bounded(&made, bounds()).unwrap_err();
            assert!(e.to_string().contains("a device"), "{e}");
        }
    }

    #[test]
    fn a_huge_sparse_file_costs_only_the_cap() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("sparse");
        let f = std::fs::File::create(&p).unwrap();
        f.set_len(1 << 40).unwrap();
        let start = std::time::Instant::now();
        let read = read_bounded(&p, bounds()).unwrap().unwrap();
        assert!(read.cut);
        assert_eq!(read.bytes.len(), 1 << 20);
        let tail = read_bounded(&p, Bounds::tail(4096, 5)).unwrap().unwrap();
        assert!(tail.cut && tail.bytes.len() == 4096);
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_file_that_grows_while_read_stops_at_the_cap() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("growing");
        std::fs::write(&p, b"start\n").unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let (p, stop) = (p.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let _ = f.write_all(&[b'x'; 65536]);
                }
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let read = read_bounded(&p, bounds()).unwrap().unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writer.join().unwrap();
        assert!(read.bytes.len() <= 1 << 20);
        assert!(read.bytes.starts_with(b"start\n"));
    }

    #[test]
    fn a_read_past_its_deadline_is_an_error_and_a_plain_file_reads_whole() {
        let root = tempfile::tempdir().unwrap();
        let p = root.path().join("plain");
        std::fs::write(&p, "one\ntwo\n").unwrap();
        let read = read_bounded(&p, bounds()).unwrap().unwrap();
        assert_eq!(
            (read.bytes.as_slice(), read.cut),
            (&b"one\ntwo\n"[..], false)
        );
        let tail = read_bounded(&p, Bounds::tail(4, 5)).unwrap().unwrap();
        assert_eq!((tail.bytes.as_slice(), tail.cut), (&b"two\n"[..], true));
        let never = Bounds {
            deadline: std::time::Duration::ZERO,
            ..bounds()
        };
        let e = read_bounded(&p, never).unwrap_err().to_string();
        assert!(e.contains("not read within"), "{e}");
        assert!(read_bounded(&root.path().join("missing"), bounds())
            .unwrap()
            .is_none());
    }

    #[test]
    fn tree_size_counts_files_not_link_targets() {
        let root = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![1u8; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("out")).unwrap();
        std::fs::write(root.path().join("small"), vec![1u8; 4096]).unwrap();
        let size = tree_size(root.path(), u64::MAX).unwrap();
        assert!(size < 1 << 19, "{size}");
        assert!(size >= 4096, "{size}");
    }
}
