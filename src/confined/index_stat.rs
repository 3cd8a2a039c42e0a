//! The stat data of the workspace's index, filled in before anything else
//! runs in the session.
//!
//! The orchestrator writes a workspace's index from the tree alone, without
//! stat data (it never sees the files as the sandbox does: an overlay's
//! lower layer, another user namespace). Without it, the first `git status`
//! or `git add -A`, and the export's commit, read and hash every file, and
//! git writes each blob again as a loose object beside the read-only shared
//! object store it cannot freshen: a 5,000-file tree cost seconds and 5,000
//! files to remove per session. The worker, before init.sh and the model,
//! stats each file of the index that is still what the orchestrator put
//! there (same kind, and the size of the entry's blob) and records what it
//! sees.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use git2::{IndexEntry, IndexTime, Repository};

const MODE_FILE: u32 = 0o100644;
const MODE_EXEC: u32 = 0o100755;
const MODE_LINK: u32 = 0o120000;

/// Fill in the stat data of every index entry whose file in `workspace` is
/// of the entry's kind and its blob's size; returns how many. An entry that does not
/// match is left as it was (git hashes it, as before).
pub fn fill(workspace: &Path) -> anyhow::Result<usize> {
    let repo = Repository::open(workspace)?;
    let odb = repo.odb()?;
    let mut index = repo.index()?;
    let entries: Vec<IndexEntry> = index.iter().collect();
    let mut filled = 0;
    for mut entry in entries {
        let Ok(path) = std::str::from_utf8(&entry.path) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(workspace.join(path)) else {
            continue;
        };
        let kind = meta.file_type();
        let same_kind = match entry.mode {
            MODE_FILE => kind.is_file() && meta.mode() & 0o111 == 0,
            MODE_EXEC => kind.is_file() && meta.mode() & 0o111 != 0,
            MODE_LINK => kind.is_symlink(),
            _ => false,
        };
        // An index written from a tree records no size: the blob's is the file's.
        let size = match odb.read_header(entry.id) {
            Ok((size, _)) => size as u64,
            Err(_) => continue,
        };
        if !same_kind || size != meta.len() {
            continue;
        }
        entry.file_size = meta.len() as u32;
        // The index's own widths: git truncates these the same way.
        entry.ctime = IndexTime::new(meta.ctime() as i32, meta.ctime_nsec() as u32);
        entry.mtime = IndexTime::new(meta.mtime() as i32, meta.mtime_nsec() as u32);
        entry.dev = meta.dev() as u32;
        entry.ino = meta.ino() as u32;
        entry.uid = meta.uid();
        entry.gid = meta.gid();
        index.add(&entry)?;
        filled += 1;
    }
    index.write()?;
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_get_the_stat_data_of_their_unchanged_files_and_status_stays_right() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("a.txt"), "a\n").unwrap();
        std::fs::write(dir.path().join("changed.txt"), "old\n").unwrap();
        let mut index = repo.index().unwrap();
        index.add_path(Path::new("a.txt")).unwrap();
        index.add_path(Path::new("changed.txt")).unwrap();
        // As the orchestrator writes it: the tree's entries, no stat data.
        let tree = index.write_tree().unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        let tree_obj = repo.find_tree(tree).unwrap();
        repo.commit(Some("HEAD"), &sig, &sig, "base", &tree_obj, &[])
            .unwrap();
        let mut bare = repo.index().unwrap();
        bare.clear().unwrap();
        bare.read_tree(&repo.find_tree(tree).unwrap()).unwrap();
        bare.write().unwrap();
        std::fs::write(dir.path().join("changed.txt"), "new and longer\n").unwrap();

        assert_eq!(
            fill(dir.path()).unwrap(),
            1,
            "the changed file is left alone"
        );
        let mut index = repo.index().unwrap();
        index.read(true).unwrap();
        let a = index.get_path(Path::new("a.txt"), 0).unwrap();
        let meta = std::fs::metadata(dir.path().join("a.txt")).unwrap();
        assert_eq!(
            (a.ino, a.mtime.seconds(), a.file_size),
            (meta.ino() as u32, meta.mtime() as i32, 2)
        );
        let changed = index.get_path(Path::new("changed.txt"), 0).unwrap();
        assert_eq!(changed.ino, 0);
        let statuses = repo.statuses(None).unwrap();
        let dirty: Vec<String> = statuses
            .iter()
            .filter_map(|s| s.path().map(str::to_string))
            .collect();
        assert_eq!(dirty, ["changed.txt"]);
    }
}
