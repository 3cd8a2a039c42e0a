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
        Some(base) => features::list_at(repo, base)?.and_then(Result::ok),
        None => None,
    };
    match features::list_at(repo, head)? {
        None => problems.push(format!("the initializer left no {}", features::FILE_NAME)),
        Some(Ok(list)) => problems.extend(list.initial_problems(given.as_deref())),
        Some(Err(e)) => problems.push(e),
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
    let before = match features::list_at(repo, base)? {
        Some(list) => list,
        None => FeatureList::parse("").map(Into::into),
    };
    let Some(after) = features::list_at(repo, head)? else {
        return Ok(vec![format!("{} was deleted", features::FILE_NAME)]);
    };
    let mut problems = features::passes_only_between(&before, &after, assigned);
    if problems.is_empty() {
        let done = after
            .as_ref()
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

/// Paths the session's commits (those reachable from `head` and not from
/// `base`) add or change, each against its first parent, that could alias
/// the orchestrator's state or git's metadata once checked out: a
/// component `.longrun` or `.git` in any case, or one of the names a
/// filesystem takes for them. Each is named.
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
        // What the first parent holds is main's (checked when it landed) or
        // a commit of this walk: only what differs from it is read.
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let tree = commit.tree()?;
        reserved_in_tree(repo, (&tree, parent.as_ref()), "", &mut seen, &mut found)?;
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

/// The reserved paths in `tree` (under `prefix`) that `parent`, the tree
/// at the same path in the commit's first parent, does not hold the same.
fn reserved_in_tree(
    repo: &Repository,
    (tree, parent): (&git2::Tree, Option<&git2::Tree>),
    prefix: &str,
    seen: &mut std::collections::HashSet<Oid>,
    found: &mut Vec<String>,
) -> anyhow::Result<()> {
    if parent.is_some_and(|p| p.id() == tree.id()) || !seen.insert(tree.id()) {
        return Ok(());
    }
    for (entry, before) in crate::git::changed_entries(tree, parent) {
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
            let before = before
                .filter(|b| b.kind() == Some(git2::ObjectType::Tree))
                .and_then(|b| repo.find_tree(b.id()).ok());
            reserved_in_tree(
                repo,
                (&sub, before.as_ref()),
                &format!("{path}/"),
                seen,
                found,
            )?;
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

/// Glob patterns over tree paths, as `[run] protected` and `[run] frozen`
/// write them: case-insensitive, `*` within one component, `**` across
/// them, and a pattern without glob characters also covers everything below
/// it, so that `tests` protects `tests/test_mul.py`.
#[derive(Debug, Clone)]
pub struct PathSet {
    patterns: Vec<String>,
    set: globset::GlobSet,
}

impl PathSet {
    pub fn new(patterns: &[String]) -> Result<PathSet, String> {
        let mut builder = globset::GlobSetBuilder::new();
        let mut kept = Vec::new();
        for pattern in patterns {
            let p = pattern.trim().trim_start_matches("./").trim_matches('/');
            if p.is_empty() {
                continue;
            }
            let mut globs = vec![p.to_string()];
            if !p.contains(['*', '?', '[', '{']) {
                globs.push(format!("{p}/**"));
            }
            for g in globs {
                let glob = globset::GlobBuilder::new(&g)
                    .case_insensitive(true)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| format!("`{pattern}` is not a valid glob: {e}"))?;
                builder.add(glob);
            }
            kept.push(p.to_string());
        }
        let set = builder.build().map_err(|e| e.to_string())?;
        Ok(PathSet {
            patterns: kept,
            set,
        })
    }

    pub fn matches(&self, path: &str) -> bool {
        self.set.is_match(path)
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The patterns that name a path itself (no glob characters).
    pub fn plain(&self) -> impl Iterator<Item = &str> {
        self.patterns
            .iter()
            .filter(|p| !p.contains(['*', '?', '[', '{']))
            .map(String::as_str)
    }
}

/// `[run] protected` and `[run] frozen`, ready to match.
#[derive(Debug, Clone)]
pub struct PathRules {
    pub protected: PathSet,
    pub frozen: PathSet,
}

impl PathRules {
    pub fn new(protected: &[String], frozen: &[String]) -> Result<PathRules, String> {
        Ok(PathRules {
            protected: PathSet::new(protected)?,
            frozen: PathSet::new(frozen)?,
        })
    }

    /// No path protected or frozen.
    pub fn none() -> PathRules {
        let empty = || PathSet {
            patterns: Vec::new(),
            set: globset::GlobSet::empty(),
        };
        PathRules {
            protected: empty(),
            frozen: empty(),
        }
    }

    /// True when `path` is protected or frozen.
    pub fn fixed(&self, path: &str) -> bool {
        self.protected.matches(path) || self.frozen.matches(path)
    }

    /// Every protected or frozen path the commits from `base` to `head` add,
    /// change, delete or rename, each named. The initializer writes the
    /// project's files, so for it only paths that exist at `base` count.
    pub fn problems(
        &self,
        repo: &Repository,
        base: Oid,
        head: Oid,
        initializer: bool,
    ) -> anyhow::Result<Vec<String>> {
        let base_tree = repo.find_commit(base)?.tree()?;
        let mut problems = Vec::new();
        for path in crate::git::changed_paths(repo, base, head)? {
            if initializer && base_tree.get_path(std::path::Path::new(&path)).is_err() {
                continue;
            }
            if self.frozen.matches(&path) {
                problems.push(format!(
                    "frozen path {path} was changed: the acceptance tests are fixed by the \
                     initializer and run as they are on main; put your own tests elsewhere"
                ));
            } else if self.protected.matches(&path) {
                problems.push(format!("protected path {path} was changed"));
            }
        }
        Ok(problems)
    }
}

/// Directory names whose files are tests.
const TEST_DIRS: &[&str] = &["tests", "test", "spec", "__tests__"];

/// Where a path's test directory ends (`tests` of `tests/unit/test_a.py`),
/// or the path itself when its name is a test's, or None.
fn test_root(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split('/').collect();
    let (name, dirs) = parts.split_last()?;
    if let Some(i) = dirs
        .iter()
        .position(|d| TEST_DIRS.iter().any(|t| d.eq_ignore_ascii_case(t)))
    {
        return Some(parts[..=i].join("/"));
    }
    let lower = name.to_ascii_lowercase();
    let stem_parts: Vec<&str> = lower.split('.').collect();
    let test_named = lower.starts_with("test_")
        || stem_parts.first().is_some_and(|s| s.ends_with("_test"))
        || stem_parts.len() > 2 && stem_parts[1..stem_parts.len() - 1].contains(&"test")
        || stem_parts.len() > 2 && stem_parts[1..stem_parts.len() - 1].contains(&"spec");
    test_named.then(|| path.to_string())
}

/// True when `path` is a test by where it lies or by its name.
pub fn is_test_file(path: &str) -> bool {
    test_root(path.trim_start_matches("./")).is_some()
}

/// The tokens of a check that may name files: its words, the value of
/// `--opt=value` words, and the test files a dotted name after `-m
/// unittest` or `-m pytest` may be in (`tests.test_add` is
/// `tests/test_add.py`). Only test files by name, so that
/// `app.tests.test_x` never names the code in `app.py`.
pub fn named_paths(check: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (token, modules) in tokens(check) {
        out.push(token);
        out.extend(modules.into_iter().filter(|f| is_test_file(f)));
    }
    out
}

/// [`named_paths`], one group per token: the token itself, then a group of
/// the files a dotted module name may be in, longest first (unittest
/// imports the longest prefix that is a module, so
/// `test_duration.TestParse.test_s`, a module, a class and a method, is in
/// `test_duration.py`).
pub fn named_path_groups(check: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for (token, modules) in tokens(check) {
        out.push(vec![token]);
        if !modules.is_empty() {
            out.push(modules);
        }
    }
    out
}

/// Each token of `check` that may name a file, with the files its dotted
/// module name may be in (none unless it follows `unittest` or `pytest`).
fn tokens(check: &str) -> Vec<(String, Vec<String>)> {
    let words = shlex::split(check).unwrap_or_else(|| {
        check
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    });
    let mut out = Vec::new();
    let mut runner = false;
    for word in words
        .iter()
        .flat_map(|w| w.split([';', '&', '|', '(', ')']))
    {
        let value = word.rsplit_once('=').map_or(word, |(_, v)| v);
        let value = value.trim_start_matches("./");
        if value.is_empty() || value.starts_with('-') || value.contains("://") {
            continue;
        }
        if matches!(value, "unittest" | "pytest") {
            runner = true;
        }
        let dotted = value.contains('.')
            && !value.contains('/')
            && value
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let modules = match runner && dotted {
            true => {
                let parts: Vec<&str> = value.split('.').collect();
                (1..=parts.len())
                    .rev()
                    .map(|n| format!("{}.py", parts[..n].join("/")))
                    .collect()
            }
            false => Vec::new(),
        };
        out.push((value.to_string(), modules));
    }
    out
}

/// The acceptance tests of an initializer session from `base` to `head`:
/// the test directories it added files under, the test-named files it
/// added elsewhere, and the files a feature's check names that exist at
/// `head`. A file a check expects the work to create is not among them.
pub fn acceptance_paths(repo: &Repository, base: Oid, head: Oid) -> anyhow::Result<Vec<String>> {
    let base_tree = repo.find_commit(base)?.tree()?;
    let head_tree = repo.find_commit(head)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&base_tree), Some(&head_tree), None)?;
    let mut found = std::collections::BTreeSet::new();
    for delta in diff.deltas() {
        if delta.status() != git2::Delta::Added {
            continue;
        }
        if let Some(root) = delta
            .new_file()
            .path()
            .and_then(|p| p.to_str())
            .and_then(test_root)
        {
            found.insert(root);
        }
    }
    if let Some(Ok(list)) = features::list_at(repo, head)? {
        for check in list.features.iter().filter_map(|f| f.check.as_deref()) {
            for path in named_paths(check) {
                let is_file = head_tree
                    .get_path(std::path::Path::new(&path))
                    .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Blob));
                if is_file && !path.starts_with(".git") {
                    found.insert(path);
                }
            }
        }
    }
    // A file inside a frozen directory is covered by it.
    let dirs: Vec<String> = found.iter().cloned().collect();
    Ok(found
        .into_iter()
        .filter(|p| !dirs.iter().any(|d| p.starts_with(&format!("{d}/"))))
        .map(|p| globset::escape(&p))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn set(patterns: &[&str]) -> PathSet {
        PathSet::new(&patterns.iter().map(|p| p.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn a_plain_name_covers_its_directory_and_any_case() {
        let s = set(&["tests", "SPEC.md"]);
        assert!(s.matches("tests/test_mul.py"));
        assert!(s.matches("Tests/deep/x.py"));
        assert!(s.matches("spec.md"));
        assert!(!s.matches("tests_other/x.py"));
        assert!(!s.matches("src/tests.py"));
    }

    #[test]
    fn globs_keep_to_their_components() {
        let s = set(&["tests/*", "docs/*.md", "**/fixtures/**"]);
        assert!(s.matches("tests/test_mul.py"));
        assert!(!s.matches("tests/sub/test_mul.py"));
        assert!(s.matches("DOCS/a.MD"));
        assert!(!s.matches("docs/sub/a.md"));
        assert!(s.matches("a/b/fixtures/c.json"));
        assert!(PathSet::new(&["tests/[".to_string()]).is_err());
    }

    #[test]
    fn test_directories_and_test_names_are_acceptance_tests() {
        assert_eq!(test_root("tests/test_a.py").as_deref(), Some("tests"));
        assert_eq!(
            test_root("src/__tests__/a.js").as_deref(),
            Some("src/__tests__")
        );
        assert_eq!(test_root("src/a.test.js").as_deref(), Some("src/a.test.js"));
        assert_eq!(
            test_root("pkg/parse_test.go").as_deref(),
            Some("pkg/parse_test.go")
        );
        assert_eq!(test_root("test_cli.py").as_deref(), Some("test_cli.py"));
        assert_eq!(test_root("app.spec.ts").as_deref(), Some("app.spec.ts"));
        assert_eq!(test_root("src/contest.py"), None);
        assert_eq!(test_root("tests"), None);
    }

    #[test]
    fn a_check_names_its_files_and_modules() {
        let named = named_paths(
            "python3 -m unittest tests.test_add -q && bash ./checks/f1.sh --x=data/in.txt",
        );
        for want in ["tests/test_add.py", "checks/f1.sh", "data/in.txt"] {
            assert!(named.contains(&want.to_string()), "{named:?} lacks {want}");
        }
    }

    #[test]
    fn a_unittest_id_names_the_test_files_its_prefixes_may_be_and_never_the_code() {
        let groups = named_path_groups(
            "python3 -m unittest -v test_duration.TestParseDuration.test_seconds",
        );
        assert!(
            groups.contains(&vec![
                "test_duration/TestParseDuration/test_seconds.py".to_string(),
                "test_duration/TestParseDuration.py".to_string(),
                "test_duration.py".to_string(),
            ]),
            "{groups:?}"
        );
        let named = named_paths("python3 -m unittest app.tests.test_x.T.test_y");
        assert!(
            named.contains(&"app/tests/test_x.py".to_string()),
            "{named:?}"
        );
        assert!(
            !named.iter().any(|p| p == "app.py" || p == "app/tests.py"),
            "{named:?}"
        );
    }
}
