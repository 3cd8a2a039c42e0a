//! The files a session is to change: the ones its feature names, and the
//! ones its tests import. The harness shows them, asks a whole-file model
//! to write them, and names them to a model that runs its failing check
//! without changing anything.

use std::path::Path;

use super::test_imports::{self, Import};
use crate::protocol::WorkerConfig;

/// Largest test file read for its imports, in bytes.
const TEST_BYTES: u64 = 64 * 1024;

/// Paths (a name with an extension) a text mentions, in order, once each;
/// none absolute or climbing out.
pub fn mentioned_paths(text: &str) -> Vec<String> {
    static PATH: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[A-Za-z0-9_][A-Za-z0-9_./-]*\.[A-Za-z0-9]+").ok()
    });
    let Some(re) = PATH.as_ref() else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for m in re.find_iter(text) {
        let name = m.as_str().trim_end_matches('.').to_string();
        let safe = !name.starts_with('/') && !name.split('/').any(|c| c == ".." || c == ".git");
        if safe && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

/// The files the session is to change: the ones the feature names (in its
/// description, steps or check) that exist and are neither acceptance
/// tests nor protected, and the ones it names that do not exist yet but
/// its tests import (to be written). When it names none, the files its
/// tests import ([`test_imports`]): what the harness shows, asks a
/// whole-file model to write, and tells a model to write when it runs a
/// failing check without changing anything.
pub fn files_to_change(config: &WorkerConfig, workspace: &Path) -> Vec<String> {
    let Some(feature) = &config.feature else {
        return Vec::new();
    };
    let rules = crate::rules::PathRules::new(&config.protected, &config.frozen)
        .unwrap_or_else(|_| crate::rules::PathRules::none());
    let changeable = |n: &str| {
        !rules.fixed(n)
            && !config.frozen.iter().any(|f| f == n)
            && n != crate::features::FILE_NAME
            && n != crate::progress::FILE_NAME
    };
    let mentioned = mentioned_paths(&feature.json);
    let tests = feature_tests(config, workspace, &mentioned, &rules);
    let imports: Vec<Import> = tests
        .iter()
        .filter_map(|t| Some((t, read_small(workspace, t)?)))
        .flat_map(|(t, text)| test_imports::imports(t, &text))
        .collect();
    let named: Vec<String> = mentioned
        .iter()
        .filter(|n| changeable(n) && is_file(workspace, n))
        .cloned()
        .collect();
    // A test the feature names is not the file to change when another is.
    let mut files: Vec<String> = named
        .iter()
        .filter(|n| !tests.contains(n))
        .cloned()
        .collect();
    for import in &imports {
        let to_write = import
            .candidates
            .iter()
            .find(|c| mentioned.contains(c) && changeable(c) && can_be_written(workspace, c));
        if let Some(c) = to_write.filter(|c| !files.contains(c)) {
            files.push(c.clone());
        }
    }
    if files.is_empty() {
        files = imported_files(workspace, &imports, &changeable);
    }
    if files.is_empty() {
        return named;
    }
    files
}

/// Most files a feature's tests may point at for the session to change;
/// more is a test of many modules, whose file to change the model finds.
const MAX_IMPORTED: usize = 4;

/// What the tests import: for each import its first candidate that is a
/// changeable file, or the file to write for one that names it (a
/// relative JavaScript import); none when more than [`MAX_IMPORTED`].
fn imported_files(
    workspace: &Path,
    imports: &[Import],
    changeable: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for import in imports {
        let ok = |c: &&String| changeable(c) && !test_imports::looks_like_test(c);
        let found = import
            .candidates
            .iter()
            .filter(ok)
            .find(|c| is_file(workspace, c))
            .or_else(|| {
                import
                    .candidates
                    .first()
                    .filter(|c| import.created && ok(c) && can_be_written(workspace, c))
            });
        if let Some(c) = found.filter(|c| !files.contains(c)) {
            files.push(c.clone());
        }
    }
    match files.len() > MAX_IMPORTED {
        true => Vec::new(),
        false => files,
    }
}

/// The feature's tests: the files it names that exist and are acceptance
/// tests (frozen or protected) or look like tests; when it names none, the
/// frozen paths that are files (not patterns).
fn feature_tests(
    config: &WorkerConfig,
    workspace: &Path,
    mentioned: &[String],
    rules: &crate::rules::PathRules,
) -> Vec<String> {
    let named: Vec<String> = mentioned
        .iter()
        .filter(|n| (rules.fixed(n) || test_imports::looks_like_test(n)) && is_file(workspace, n))
        .cloned()
        .collect();
    if !named.is_empty() {
        return named;
    }
    config
        .frozen
        .iter()
        .filter(|f| !f.contains(['*', '?', '[']) && is_file(workspace, f))
        .take(MAX_TESTS_READ)
        .cloned()
        .collect()
}

/// Most frozen test files read for their imports.
const MAX_TESTS_READ: usize = 20;

/// Whether `name` is a regular file of the workspace (not a symlink).
fn is_file(workspace: &Path, name: &str) -> bool {
    std::fs::symlink_metadata(workspace.join(name)).is_ok_and(|m| m.file_type().is_file())
}

/// Whether `name` can be written as a new file: nothing is there, and its
/// directory is the workspace or a real directory in it.
pub fn can_be_written(workspace: &Path, name: &str) -> bool {
    let path = workspace.join(name);
    let parent_ok = Path::new(name).parent().is_none_or(|p| {
        p.as_os_str().is_empty()
            || std::fs::symlink_metadata(workspace.join(p)).is_ok_and(|m| m.file_type().is_dir())
    });
    parent_ok && std::fs::symlink_metadata(path).is_err()
}

/// A regular file's text when it is small enough to show.
fn read_small(workspace: &Path, name: &str) -> Option<String> {
    let path = workspace.join(name);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    (meta.file_type().is_file() && meta.len() <= TEST_BYTES)
        .then(|| std::fs::read_to_string(path).ok())
        .flatten()
}
