//! The harness's own commits in a session's workspace: everything in the
//! work tree but build output, signed as the harness. Both the check after
//! an edit (`edit_check.rs`) and the bookkeeping of a passing feature
//! (`finish.rs`) commit this way.

use std::path::Path;

use git2::{IndexAddOption, Oid, Repository};

use crate::git::is_build_output;

/// Everything in the work tree into `index`, but build output; deletions too.
pub(super) fn stage_all(index: &mut git2::Index) -> anyhow::Result<()> {
    let mut skip_build_output =
        |path: &Path, _: &[u8]| -> i32 { i32::from(is_build_output(&path.to_string_lossy())) };
    index.add_all(["*"], IndexAddOption::DEFAULT, Some(&mut skip_build_output))?;
    index.update_all(["*"], None)?;
    Ok(())
}

/// Commit everything in the work tree but build output on HEAD (or as the
/// first commit), as the harness.
pub(super) fn commit_all(workspace: &Path, message: &str) -> anyhow::Result<Oid> {
    let repo = Repository::open(workspace)?;
    let sig = harness_signature()?;
    let mut index = repo.index()?;
    stage_all(&mut index)?;
    index.write()?;
    let tree = repo.find_tree(index.write_tree()?)?;
    let parent = repo.head().ok().and_then(|h| h.peel_to_commit().ok());
    let parents: Vec<&git2::Commit> = parent.iter().collect();
    Ok(repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)?)
}

/// The author and committer of the harness's own commits.
pub(super) fn harness_signature() -> anyhow::Result<git2::Signature<'static>> {
    Ok(git2::Signature::now(
        "longrun harness",
        "harness@longrun.invalid",
    )?)
}
