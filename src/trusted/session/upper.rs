//! What a session changed in an overlay workspace, read from the overlay's
//! upper layer: the paths `__export` looks at to commit what was left
//! uncommitted, so that the export costs what changed and not what the tree
//! holds.
//!
//! Overlayfs writes the upper layer only for what changes through the
//! overlay: a file or symlink made or changed (copied up whole: metacopy is
//! off), a character device 0/0 (a whiteout) for a name gone, a directory
//! marked opaque (`user.overlay.opaque`, the mount uses `userxattr`) where a
//! directory was made over a name gone, and the directories leading to
//! them. So every path of the merged view that can differ from the lower
//! layer is at or beneath a path listed here. The session wrote this
//! directory: it is read as data, one directory descriptor at a time,
//! never following a symlink, and what is listed is only a hint to the
//! export of the session's own work, which the import checks as before.

use std::ffi::{CStr, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{openat, AtFlags, OFlag};
use nix::sys::stat::{fstatat, Mode, SFlag};

/// Below this depth a directory is listed whole, not walked: a walk of the
/// orchestrator's never goes as deep as a session can nest directories.
const MAX_DEPTH: usize = 64;

/// The paths (relative, `/`-separated, sorted) where the merged view of the
/// overlay whose upper layer is `upper` may differ from its lower layer:
/// each non-directory of the upper layer (a changed or new file or symlink,
/// or a whiteout), and each directory whose lower contents are hidden
/// (opaque or redirected), cannot be read here, or lies too deep, as a
/// whole. The workspace's own `.git` is left out. A directory merged with
/// the lower one is walked instead of listed.
pub fn changed_paths(upper: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let root = nix::fcntl::open(upper, DIR_FLAGS, Mode::empty())
        .with_context(|| format!("cannot open {}", upper.display()))?;
    let mut found = Vec::new();
    walk(&root, &[], 0, &mut found)?;
    found.sort();
    Ok(found)
}

/// Depth first, so that only the directories leading to the one being
/// read are open (at most [`MAX_DEPTH`]), however many a session made side
/// by side: the orchestrator's descriptors are bounded.
fn walk(
    dir: &OwnedFd,
    prefix: &[u8],
    depth: usize,
    found: &mut Vec<Vec<u8>>,
) -> anyhow::Result<()> {
    for name in names(dir).with_context(|| format!("cannot list {}", shown(prefix)))? {
        if prefix.is_empty() && name == b".git" {
            continue;
        }
        let path = join(prefix, &name);
        match walk_into(dir, &name, depth) {
            Ok(Some(sub)) => walk(&sub, &path, depth + 1, found)?,
            Ok(None) => found.push(path),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", shown(&path))),
        }
    }
    Ok(())
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

/// The directory `name` in `dir` to walk, when it is one whose lower
/// contents show through; None when `name` is to be listed as it is.
fn walk_into(dir: &OwnedFd, name: &[u8], depth: usize) -> anyhow::Result<Option<OwnedFd>> {
    let name = OsStr::from_bytes(name);
    let st = match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        // Gone since it was listed: listed, so the export looks.
        Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFDIR || depth >= MAX_DEPTH
    {
        return Ok(None);
    }
    let sub = match openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(sub) => sub,
        // A directory its owner made unreadable: the export reads it whole.
        Err(Errno::EACCES) | Err(Errno::ENOENT) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    Ok((!hides_lower(&sub)).then_some(sub))
}

/// Whether overlayfs marked the directory as hiding what the lower layer
/// holds at its path (opaque), or as standing for another of its
/// directories (redirect): either way it is listed whole.
fn hides_lower(dir: &OwnedFd) -> bool {
    const MARKS: [&CStr; 4] = [
        c"user.overlay.opaque",
        c"user.overlay.redirect",
        c"trusted.overlay.opaque",
        c"trusted.overlay.redirect",
    ];
    MARKS.iter().any(|mark| has_xattr(dir, mark))
}

/// Whether the open file `fd` has the extended attribute `name` (any error
/// but "no such attribute" counts as having it: the directory is listed whole).
fn has_xattr(fd: &OwnedFd, name: &CStr) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid descriptor and C string; a null buffer of length 0
    // asks only for the size.
    let n = unsafe {
        libc::fgetxattr(
            fd.as_fd().as_raw_fd(),
            name.as_ptr(),
            std::ptr::null_mut(),
            0,
        )
    };
    n >= 0 || !matches!(Errno::last(), Errno::ENODATA | Errno::ENOTSUP)
}

/// The names in a directory, `.` and `..` left out.
fn names(dir: &OwnedFd) -> anyhow::Result<Vec<Vec<u8>>> {
    // A fresh descriptor of the same directory: a duplicate would share its offset.
    let mut listing = nix::dir::Dir::openat(dir, ".", DIR_FLAGS, Mode::empty())?;
    let mut names = Vec::new();
    for entry in listing.iter() {
        let name = entry?.file_name().to_bytes().to_vec();
        if name != b"." && name != b".." {
            names.push(name);
        }
    }
    Ok(names)
}

fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    match prefix.is_empty() {
        true => name.to_vec(),
        false => [prefix, b"/", name].concat(),
    }
}

fn shown(path: &[u8]) -> String {
    crate::rules::printable(&String::from_utf8_lossy(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(paths: Vec<Vec<u8>>) -> Vec<String> {
        paths
            .into_iter()
            .map(|p| String::from_utf8(p).unwrap())
            .collect()
    }

    #[test]
    fn lists_what_the_upper_layer_holds_but_the_workspace_git() {
        let dir = tempfile::tempdir().unwrap();
        let up = dir.path();
        std::fs::create_dir_all(up.join(".git/objects")).unwrap();
        std::fs::create_dir_all(up.join("src/deep")).unwrap();
        std::fs::create_dir_all(up.join("empty")).unwrap();
        std::fs::create_dir_all(up.join("src/.git")).unwrap();
        std::fs::write(up.join("src/deep/a.rs"), "a").unwrap();
        std::fs::write(up.join("src/.git/config"), "x").unwrap();
        std::fs::write(up.join("top"), "t").unwrap();
        std::os::unix::fs::symlink("/etc", up.join("link")).unwrap();
        let found = text(changed_paths(up).unwrap());
        assert_eq!(found, ["link", "src/.git/config", "src/deep/a.rs", "top"]);
    }

    #[test]
    fn an_opaque_or_unreadable_directory_is_listed_whole() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let up = dir.path();
        for dir in ["opaque/in", "shut/in"] {
            std::fs::create_dir_all(up.join(dir)).unwrap();
            std::fs::write(up.join(dir).join("f"), "f").unwrap();
        }
        let c = std::ffi::CString::new(up.join("opaque").as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid path and value.
        let set = unsafe {
            libc::setxattr(
                c.as_ptr(),
                c"user.overlay.opaque".as_ptr(),
                b"y".as_ptr().cast(),
                1,
                0,
            )
        };
        let shut = up.join("shut");
        std::fs::set_permissions(&shut, std::fs::Permissions::from_mode(0o000)).unwrap();
        let root = nix::unistd::geteuid().is_root();
        let found = text(changed_paths(up).unwrap());
        std::fs::set_permissions(&shut, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut want = vec![];
        // tmpfs before 6.6 keeps no user xattrs: then the directory is walked.
        want.push(if set == 0 { "opaque" } else { "opaque/in/f" });
        // Root reads a directory of mode 000 all the same.
        want.push(if root { "shut/in/f" } else { "shut" });
        assert_eq!(found, want);
    }

    #[test]
    fn many_directories_side_by_side_are_all_listed_and_none_left_open() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2000 {
            let sub = dir.path().join(format!("d{i:04}"));
            std::fs::create_dir(&sub).unwrap();
            std::fs::write(sub.join("f"), "x").unwrap();
        }
        let found = changed_paths(dir.path()).unwrap();
        assert_eq!(found.len(), 2000);
        assert_eq!(found[0], b"d0000/f");
        // Nothing of the walk stays open after it. Only descriptors into this
        // directory count: other tests in this process open files meanwhile.
        let walked = dir.path().canonicalize().unwrap();
        let into_dir = std::fs::read_dir("/proc/self/fd")
            .unwrap()
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.starts_with(&walked))
            .count();
        assert_eq!(into_dir, 0);
    }

    #[test]
    fn nesting_past_the_depth_bound_is_listed_not_walked() {
        let dir = tempfile::tempdir().unwrap();
        let mut deep = dir.path().to_path_buf();
        for _ in 0..MAX_DEPTH + 5 {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::write(deep.join("f"), "f").unwrap();
        let found = text(changed_paths(dir.path()).unwrap());
        let want = vec!["d"; MAX_DEPTH + 1].join("/");
        assert_eq!(found, [want]);
    }
}
