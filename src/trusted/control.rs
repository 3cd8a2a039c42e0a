//! `longrun stop` and `longrun retry`: steering a project between sessions.

use std::path::Path;

use super::run::stop_file;
use super::{lock, Project};
use crate::error::bad_input;
use crate::trusted::repo;

/// Ask a running `continue` to stop after its current session.
pub fn stop(dir: &Path) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let path = stop_file(&project);
    crate::fsutil::write_atomic(&path, b"stop\n")?;
    Ok(format!(
        "asked the run in {} to stop after its current session ({})",
        project.dir.display(),
        path.display()
    ))
}

/// Record on main that `feature`'s failed attempts no longer count.
pub fn retry(dir: &Path, feature: &str) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let list = project.features()?.ok_or_else(|| {
        bad_input("the project has no features.json on main yet; run `longrun continue` first")
    })?;
    let Some(f) = list.get(feature) else {
        let ids: Vec<&str> = list.features.iter().map(|f| f.id.as_str()).collect();
        return Err(bad_input(format!(
            "no feature `{feature}` in features.json; the ids are: {}",
            ids.join(", ")
        )));
    };
    if f.passes {
        return Err(bad_input(format!(
            "feature `{feature}` already passes; there is nothing to retry"
        )));
    }
    let _lock = lock::acquire(&project.longrun_dir())?;
    let failed = project.history()?.stats(feature).failed_attempts;
    let message = format!(
        "longrun: retry {feature}\n\nIts {failed} failed attempt(s) no longer count toward being stuck.\n\n{}: {feature}\n", crate::schema::trailer::RETRY
    );
    repo::record_empty(&project.repo, &message)?;
    Ok(format!(
        "feature {feature} will be tried again ({failed} failed attempts cleared)"
    ))
}
