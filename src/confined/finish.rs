//! When the assigned feature's check passes after an edit, the harness does
//! the bookkeeping a session must leave (`[harness] commit_when_passing`):
//! the feature's `passes` set to true in features.json, a line in
//! progress.md, everything committed.
//!
//! Small models write working code and then stumble on this: a JSON edit, a
//! note, a commit. Nothing about the verdict changes: verification runs the
//! check again, in a fresh checkout of what was committed, with the tests as
//! they are on main.
//!
//! Not here: running the check (`edit_check.rs`), the rules (`checks.rs`).

use std::path::Path;

use git2::{Oid, Repository};

use crate::features::{self, FeatureList};
use crate::git::{read_file_at, uncommitted_paths};
use crate::progress;

/// Make the work tree say the feature is done and commit it. `base` is the
/// session's base commit: features.json is rebuilt from it (so nothing but
/// the assigned feature's `passes` differs), and progress.md gets a line
/// when the session has not written one. Returns what was done, or None
/// when everything was already done and committed.
pub fn commit_passing(
    workspace: &Path,
    feature_id: &str,
    base: Option<Oid>,
    check: &str,
) -> anyhow::Result<Option<String>> {
    let repo = Repository::open(workspace)?;
    let mut done = Vec::new();
    if mark_passing(&repo, workspace, feature_id, base)? {
        done.push(format!(
            "set {feature_id}'s passes to true in {}",
            features::FILE_NAME
        ));
    }
    if note_progress(&repo, workspace, feature_id, base, check)? {
        done.push(format!("noted it in {}", progress::FILE_NAME));
    }
    if uncommitted_paths(&repo)?.is_empty() {
        return Ok(None);
    }
    let message = format!(
        "{feature_id}: its check passes\n\nCommitted by the harness after the check `{check}` passed."
    );
    let oid = super::commit::commit_all(workspace, &message)?;
    let short = oid.to_string().chars().take(7).collect::<String>();
    done.push(format!("committed the work ({short})"));
    let last = done.pop().unwrap_or_default();
    Ok(Some(match done.is_empty() {
        true => last,
        false => format!("{} and {last}", done.join(", ")),
    }))
}

/// features.json as at the base, with the feature passing; true if it changed.
fn mark_passing(
    repo: &Repository,
    workspace: &Path,
    feature_id: &str,
    base: Option<Oid>,
) -> anyhow::Result<bool> {
    let path = workspace.join(features::FILE_NAME);
    let now = std::fs::read_to_string(&path).unwrap_or_default();
    let already = FeatureList::parse(&now)
        .ok()
        .and_then(|l| l.get(feature_id).map(|f| f.passes))
        == Some(true);
    let from = match base {
        Some(b) => read_file_at(repo, b, features::FILE_NAME)?.unwrap_or_else(|| now.clone()),
        None => now.clone(),
    };
    if already && features::passes_only_problems(&from, &now, feature_id).is_empty() {
        return Ok(false);
    }
    let text = features::set_passes(&from, &[feature_id.to_string()], true)
        .map_err(|e| anyhow::anyhow!(e))?;
    std::fs::write(&path, text)?;
    Ok(true)
}

/// A line in progress.md when the session left it as it was; true if written.
fn note_progress(
    repo: &Repository,
    workspace: &Path,
    feature_id: &str,
    base: Option<Oid>,
    check: &str,
) -> anyhow::Result<bool> {
    let path = workspace.join(progress::FILE_NAME);
    let now = std::fs::read_to_string(&path).unwrap_or_default();
    let before = match base {
        Some(b) => read_file_at(repo, b, progress::FILE_NAME)?.unwrap_or_default(),
        None => String::new(),
    };
    if now != before {
        return Ok(false);
    }
    let mut text = now;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!(
        "\n- {feature_id}: done; its check `{check}` passes (committed by the harness).\n"
    ));
    std::fs::write(&path, text)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FEATURES: &str = r#"{"features": [
  {"id": "F001", "category": "functional", "description": "parse", "steps": [], "check": "true", "passes": false},
  {"id": "F002", "category": "functional", "description": "more", "steps": [], "check": "true", "passes": false}
]}
"#;

    fn project() -> (tempfile::TempDir, Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        std::fs::write(dir.path().join("features.json"), FEATURES).unwrap();
        std::fs::write(dir.path().join("progress.md"), "# Progress\n").unwrap();
        std::fs::write(dir.path().join("duration.py"), "def f(): pass\n").unwrap();
        let base = super::super::commit::commit_all(dir.path(), "base").unwrap();
        drop(repo);
        (dir, base)
    }

    #[test]
    fn a_passing_feature_is_marked_noted_and_committed() {
        let (dir, base) = project();
        std::fs::write(dir.path().join("duration.py"), "def f(): return 1\n").unwrap();
        let done = commit_passing(dir.path(), "F001", Some(base), "python3 -m unittest")
            .unwrap()
            .unwrap();
        assert!(done.contains("set F001's passes to true"), "{done}");
        assert!(done.contains("noted it in progress.md"), "{done}");
        let repo = Repository::open(dir.path()).unwrap();
        assert!(uncommitted_paths(&repo).unwrap().is_empty());
        let head = repo.head().unwrap().peel_to_commit().unwrap().id();
        // What the rules verification applies see: only F001 went true, progress.md changed.
        assert!(crate::rules::worker_problems(&repo, base, head, "F001")
            .unwrap()
            .is_empty());
        let changed = crate::git::changed_paths(&repo, base, head).unwrap();
        assert!(changed.contains(&"progress.md".to_string()), "{changed:?}");
        assert!(changed.contains(&"duration.py".to_string()), "{changed:?}");
        // Done and committed: a second call has nothing to do.
        let again = commit_passing(dir.path(), "F001", Some(base), "python3 -m unittest").unwrap();
        assert_eq!(again, None);
    }

    #[test]
    fn a_features_json_the_model_broke_is_rebuilt_from_the_base() {
        let (dir, base) = project();
        std::fs::write(
            dir.path().join("features.json"),
            r#"{"features": [{"id": "F001", "passes": true}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("progress.md"),
            "# Progress\n\nF001 works.\n",
        )
        .unwrap();
        let done = commit_passing(dir.path(), "F001", Some(base), "true")
            .unwrap()
            .unwrap();
        assert!(
            !done.contains("noted it"),
            "the model's own note is kept: {done}"
        );
        let repo = Repository::open(dir.path()).unwrap();
        let head = repo.head().unwrap().peel_to_commit().unwrap().id();
        assert!(crate::rules::worker_problems(&repo, base, head, "F001")
            .unwrap()
            .is_empty());
        let progress = std::fs::read_to_string(dir.path().join("progress.md")).unwrap();
        assert_eq!(progress, "# Progress\n\nF001 works.\n");
    }
}
