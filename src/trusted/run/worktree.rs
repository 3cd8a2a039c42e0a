//! The user's work tree, before `continue` moves main: uncommitted changes to
//! tracked files are refused (or stashed with `--stash`), and a longrun.toml
//! that is not main's is said to be ignored.

use crate::config;
use crate::error::bad_input;
use crate::trusted::record::repo;
use crate::trusted::{Project, Reporter};

/// Refuse, or stash with `stash`, uncommitted changes to tracked files; warn
/// when the work tree's longrun.toml is not main's.
pub fn check(project: &Project, stash: bool, reporter: &Reporter) -> anyhow::Result<()> {
    let changed = crate::git::tracked_changes(&project.repo)?;
    let dir = project.dir.display();
    if !changed.is_empty() && !stash {
        let toml = changed.iter().any(|p| p == config::FILE_NAME);
        return Err(bad_input(format!(
            "the work tree of {dir} has uncommitted changes to tracked files ({}), and main \
             moves underneath them as sessions land{}; commit them, or run continue with \
             --stash to stash them (`git stash pop` brings them back)",
            list(&changed),
            if toml {
                " (longrun.toml: a run uses main's settings, never the work tree's)"
            } else {
                ""
            }
        )));
    }
    if !changed.is_empty() {
        repo::stash(&project.dir, "longrun continue: stashed before the run")?;
        reporter.line(&format!(
            "stashed the uncommitted changes to {} (`git -C {dir} stash pop` brings them back)",
            list(&changed)
        ));
    }
    warn_if_settings_differ(project, reporter)
}

fn warn_if_settings_differ(project: &Project, reporter: &Reporter) -> anyhow::Result<()> {
    let Some(head) = repo::main_head(&project.repo)? else {
        return Ok(());
    };
    let on_main = repo::read_file_at(&project.repo, head, config::FILE_NAME)?;
    let on_disk = std::fs::read_to_string(project.dir.join(config::FILE_NAME)).ok();
    if on_disk != on_main {
        reporter.line(&format!(
            "warning: {} in the work tree differs from main's; this run uses main's \
             (commit it on main for it to apply)",
            config::FILE_NAME
        ));
    }
    Ok(())
}

fn list(paths: &[String]) -> String {
    let mut shown = paths
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > 10 {
        shown.push_str(&format!(" and {} more", paths.len() - 10));
    }
    shown
}
