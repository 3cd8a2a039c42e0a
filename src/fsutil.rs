//! Small filesystem helpers: atomic writes, and access beneath a directory
//! that never follows a symlink.
//!
//! Everything the orchestrator reads, writes or removes in a tree a session
//! could have touched (its workspace, a checkout, the project's work tree
//! after a merge) goes through [`Beneath`]: each path component is opened
//! with `O_NOFOLLOW` relative to the one before, so a symlink anywhere on
//! the path is an error, never a way out.

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
    /// A symlink at or on the way to `rel`, or anything but a regular file, is an error.
    pub fn read(&self, rel: &Path) -> anyhow::Result<Option<Vec<u8>>> {
        let Ok((dir, name)) = self.parent(rel, false)? else {
            return Ok(None);
        };
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = match openat(&dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(self.err(rel, "cannot open", e)),
        };
        let st = nix::sys::stat::fstat(&fd).map_err(|e| self.err(rel, "cannot stat", e))?;
        anyhow::ensure!(
            kind_of(&st) == Kind::File,
            "{}: not a regular file",
            self.shown.join(rel).display()
        );
        let mut bytes = Vec::new();
        std::fs::File::from(fd)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {}", self.shown.join(rel).display()))?;
        Ok(Some(bytes))
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
