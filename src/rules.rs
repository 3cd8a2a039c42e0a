//! The rules a session's commits must meet, read from git trees: the
//! initializer's required files and the worker's passes-only rule on
//! features.json. Verification applies them (trusted); the worker's own
//! checks before it ends reuse them (confined).

use git2::{Oid, Repository};

use crate::git::{file_mode_at, read_file_at};
use crate::{features, progress};
use features::FeatureList;

/// The rules an initializer's commit must meet; the worker's own checks reuse them.
/// A `features.json` already at `base` was given (`init --features`): the
/// initializer adds checks to it and changes nothing else.
pub fn initializer_problems(
    repo: &Repository,
    base: Option<Oid>,
    head: Oid,
) -> anyhow::Result<Vec<String>> {
    let mut problems = Vec::new();
    let given = match base {
        Some(base) => read_file_at(repo, base, features::FILE_NAME)?
            .and_then(|text| FeatureList::parse(&text).ok()),
        None => None,
    };
    match read_file_at(repo, head, features::FILE_NAME)? {
        None => problems.push(format!("the initializer left no {}", features::FILE_NAME)),
        Some(text) => match FeatureList::parse(&text) {
            Ok(list) => problems.extend(list.initial_problems(given.as_ref())),
            Err(e) => problems.push(e),
        },
    }
    match file_mode_at(repo, head, "init.sh")? {
        None => problems.push("the initializer left no init.sh".into()),
        Some(mode) if mode != 0o100755 => {
            problems.push("init.sh is not executable (commit it with mode 755)".into())
        }
        Some(_) => {}
    }
    if read_file_at(repo, head, progress::FILE_NAME)?.is_none() {
        problems.push(format!("the initializer left no {}", progress::FILE_NAME));
    }
    Ok(problems)
}

/// The features.json rules a worker's commit must meet; the worker's own checks reuse them.
pub fn worker_problems(
    repo: &Repository,
    base: Oid,
    head: Oid,
    assigned: &str,
) -> anyhow::Result<Vec<String>> {
    let before = read_file_at(repo, base, features::FILE_NAME)?.unwrap_or_default();
    let Some(after) = read_file_at(repo, head, features::FILE_NAME)? else {
        return Ok(vec![format!("{} was deleted", features::FILE_NAME)]);
    };
    let mut problems = features::passes_only_problems(&before, &after, assigned);
    if problems.is_empty() {
        let done = FeatureList::parse(&after)
            .ok()
            .and_then(|l| l.get(assigned).map(|f| f.passes));
        if done != Some(true) {
            problems.push(format!(
                "feature `{assigned}` still has passes: false; the session did not mark it done"
            ));
        }
    }
    Ok(problems)
}

/// Most reserved paths named in one problem.
const NAMED_PATHS: usize = 10;

/// Paths in the trees of the session's commits (those reachable from `head`
/// and not from `base`) that could alias the orchestrator's state or git's
/// metadata once checked out: a component `.longrun` or `.git` in any case,
/// or one of the names a filesystem takes for them. Each is named.
pub fn reserved_path_problems(
    repo: &Repository,
    base: Oid,
    head: Oid,
) -> anyhow::Result<Vec<String>> {
    let mut walk = repo.revwalk()?;
    walk.push(head)?;
    if repo.find_commit(base).is_ok() {
        walk.hide(base)?;
    }
    let mut seen = std::collections::HashSet::new();
    let mut found = Vec::new();
    for oid in walk {
        let commit = repo.find_commit(oid?)?;
        reserved_in_tree(repo, &commit.tree()?, "", &mut seen, &mut found)?;
    }
    found.sort();
    found.dedup();
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let more = found.len().saturating_sub(NAMED_PATHS);
    let mut named = found
        .iter()
        .take(NAMED_PATHS)
        .map(|p| format!("`{}`", printable(p)))
        .collect::<Vec<_>>()
        .join(", ");
    if more > 0 {
        named.push_str(&format!(" and {more} more"));
    }
    Ok(vec![format!(
        "commits hold reserved paths (a `.git` or `.longrun` component, in any case or alias, is never allowed): {named}"
    )])
}

fn reserved_in_tree(
    repo: &Repository,
    tree: &git2::Tree,
    prefix: &str,
    seen: &mut std::collections::HashSet<Oid>,
    found: &mut Vec<String>,
) -> anyhow::Result<()> {
    if !seen.insert(tree.id()) {
        return Ok(());
    }
    for entry in tree.iter() {
        let name = String::from_utf8_lossy(entry.name_bytes()).into_owned();
        let path = format!("{prefix}{name}");
        let is_tree = entry.kind() == Some(git2::ObjectType::Tree);
        if is_reserved_name(entry.name_bytes()) {
            // Named down to the files, so the problem says what was planted.
            let mut below = Vec::new();
            if is_tree {
                files_below(repo, entry.id(), &format!("{path}/"), &mut below)?;
            }
            if below.is_empty() {
                below.push(path);
            }
            found.extend(below);
        } else if is_tree {
            let sub = repo.find_tree(entry.id())?;
            reserved_in_tree(repo, &sub, &format!("{path}/"), seen, found)?;
        }
    }
    Ok(())
}

/// The paths of the files under the tree `id`, up to a bound.
fn files_below(
    repo: &Repository,
    id: Oid,
    prefix: &str,
    out: &mut Vec<String>,
) -> anyhow::Result<()> {
    for entry in repo.find_tree(id)?.iter() {
        if out.len() > NAMED_PATHS {
            return Ok(());
        }
        let path = format!("{prefix}{}", String::from_utf8_lossy(entry.name_bytes()));
        match entry.kind() {
            Some(git2::ObjectType::Tree) => {
                files_below(repo, entry.id(), &format!("{path}/"), out)?
            }
            _ => out.push(path),
        }
    }
    Ok(())
}

/// True for a path component that is, or a filesystem could take for,
/// `.git` or `.longrun`: any ASCII case, trailing dots and spaces, an NTFS
/// stream suffix, HFS+'s ignored code points, the 8.3 short names; and
/// for names no checkout can hold (`.`, `..`, empty, holding `/` or NUL).
pub fn is_reserved_name(name: &[u8]) -> bool {
    if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') || name.contains(&0)
    {
        return true;
    }
    let text = String::from_utf8_lossy(name);
    let mut plain: String = text
        .chars()
        .filter(|c| !is_hfs_ignored(*c))
        .collect::<String>()
        .to_ascii_lowercase();
    if let Some(colon) = plain.find(':') {
        plain.truncate(colon);
    }
    let plain = plain.trim_end_matches(['.', ' ']);
    if plain == ".git" || plain == ".longrun" {
        return true;
    }
    ["git~", "longru~"].iter().any(|short| {
        plain
            .strip_prefix(short)
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Code points HFS+ ignores when it compares names.
fn is_hfs_ignored(c: char) -> bool {
    matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
}

/// A session-made path as it may be shown: one line, control characters removed.
pub fn printable(path: &str) -> String {
    crate::sanitize::line(path)
}

#[cfg(test)]
mod tests {
    use super::is_reserved_name;

    #[test]
    fn git_and_longrun_in_every_spelling_are_reserved() {
        for name in [
            ".git",
            ".GIT",
            ".Git. ",
            ".git::$INDEX_ALLOCATION",
            "git~1",
            "GIT~12",
            ".g\u{200c}it",
            ".longrun",
            ".LONGRUN",
            ".longrun.",
            "LONGRU~1",
            "..",
            ".",
            "",
        ] {
            assert!(is_reserved_name(name.as_bytes()), "{name:?}");
        }
        for name in [
            ".gitignore",
            ".github",
            "git",
            "longrun",
            ".gitattributes",
            "git~",
        ] {
            assert!(!is_reserved_name(name.as_bytes()), "{name:?}");
        }
    }
}
