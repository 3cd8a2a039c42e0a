//! `longrun stop` and `longrun retry`: steering a project between sessions.

use std::path::Path;

use super::continue_run::stop_file;
use crate::error::{bad_input, Outcome};
use crate::trusted::record::repo;
use crate::trusted::{record::lock, Project};

/// Ask a running `continue` to stop after its current session. With no run
/// going there is nothing to ask: it says so and exits 1, leaving no stop
/// file behind for a later run to find.
pub fn stop(dir: &Path) -> anyhow::Result<Outcome> {
    let project = Project::open(dir)?;
    let Some(holder) = lock::running_holder(&project.longrun_dir()) else {
        eprintln!(
            "no run is going in {}; there is nothing to stop",
            project.dir.display()
        );
        return Ok(Outcome::Exit(1));
    };
    let path = stop_file(&project);
    crate::fsutil::write_atomic(&path, b"stop\n")?;
    println!(
        "asked the run in {} (pid {}) to stop after its current session",
        project.dir.display(),
        holder.pid
    );
    Ok(Outcome::Exit(0))
}

/// Record on main that `feature`'s failed attempts no longer count; a
/// passing feature is reopened (passes set back to false) as well.
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
        // A passing feature is tried again only once it is open again.
        return super::amend::reopen(dir, feature, Some("reopened by `longrun retry`"));
    }
    let _lock = lock::acquire(&project.longrun_dir())?;
    let failed = project.history()?.stats(feature).failed_attempts;
    let message = format!(
        "longrun: retry {feature}\n\nIts failed attempts ({failed}) no longer count toward being stuck.\n\n{}: {feature}\n", crate::schema::trailer::RETRY
    );
    repo::record_empty(&project.repo, &message)?;
    Ok(format!(
        "feature {feature} will be tried again ({} cleared)",
        crate::view::text::count(failed.into(), "failed attempt")
    ))
}
