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
