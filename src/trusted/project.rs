//! A longrun project: its directory, repo and committed settings.

use std::path::{Path, PathBuf};

use anyhow::Context;
use git2::Repository;

use super::History;
use crate::config::{self, Config};
use crate::error::bad_input;
use crate::features::{self, FeatureList};
use crate::model::ModelSpec;
use crate::trusted::repo;

pub struct Project {
    pub dir: PathBuf,
    pub repo: Repository,
    pub config: Config,
    /// The sandbox profile `[sandbox] profile` names, resolved.
    pub profile: crate::sandbox::Profile,
}

impl Project {
    /// Open the longrun project at `dir`; a clear error when it is not one.
    pub fn open(dir: &Path) -> anyhow::Result<Project> {
        let not_project = || {
            bad_input(format!(
                "{} is not a longrun project: run `longrun init SPEC --dir {}` first",
                dir.display(),
                dir.display()
            ))
        };
        if !dir.is_dir() {
            return Err(bad_input(format!(
                "{} does not exist or is not a directory; pass --dir with the project's directory",
                dir.display()
            )));
        }
        let dir = dir
            .canonicalize()
            .with_context(|| format!("cannot resolve {}", dir.display()))?;
        let repo = Repository::open(&dir).map_err(|_| not_project())?;
        if repo
            .workdir()
            .map(|w| w.canonicalize().ok() != Some(dir.clone()))
            .unwrap_or(true)
        {
            return Err(not_project());
        }
        let head = repo::main_head(&repo)?.ok_or_else(not_project)?;
        let toml = repo::read_file_at(&repo, head, config::FILE_NAME)?.ok_or_else(not_project)?;
        let config = Config::parse(&toml, &dir.join(config::FILE_NAME))?;
        let profile = crate::sandbox::Profile::resolve(&config.sandbox.profile, &dir)
            .with_context(|| {
                format!(
                    "{}: [sandbox] profile",
                    dir.join(config::FILE_NAME).display()
                )
            })?;
        Ok(Project {
            dir,
            repo,
            config,
            profile,
        })
    }

    /// Use the sandbox profile `--profile` names for this run instead of the
    /// one in longrun.toml. A path is relative to the current directory.
    pub fn use_profile(&mut self, name_or_path: &str) -> anyhow::Result<()> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        self.profile = crate::sandbox::Profile::resolve(name_or_path, &cwd)
            .with_context(|| format!("--profile {name_or_path}"))?;
        Ok(())
    }

    pub fn history(&self) -> anyhow::Result<History> {
        Ok(History::from_log(&repo::first_parent_log(&self.repo)?))
    }

    /// The feature list on main, if the initializer has written one.
    pub fn features(&self) -> anyhow::Result<Option<FeatureList>> {
        let Some(head) = repo::main_head(&self.repo)? else {
            return Ok(None);
        };
        match repo::read_file_at(&self.repo, head, features::FILE_NAME)? {
            None => Ok(None),
            Some(text) => FeatureList::parse(&text).map(Some).map_err(|e| {
                bad_input(format!(
                    "{e} (on main in {}); fix it with a commit on main",
                    self.dir.display()
                ))
            }),
        }
    }

    pub fn longrun_dir(&self) -> PathBuf {
        crate::trusted::state::longrun_dir(&self.dir)
    }
}

/// The model to use: `--model`, then `LONGRUN_MODEL`, then `[model]` in longrun.toml.
/// Flag and environment paths resolve against the current directory; the file's
/// against the project directory.
pub fn resolve_model(
    flag: Option<&str>,
    config: &Config,
    project_dir: &Path,
) -> anyhow::Result<ModelSpec> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    if let Some(text) = flag {
        return ModelSpec::parse(text, &cwd);
    }
    if let Ok(text) = std::env::var("LONGRUN_MODEL") {
        if !text.trim().is_empty() {
            return ModelSpec::parse(text.trim(), &cwd);
        }
    }
    match (&config.model.provider, &config.model.name) {
        (Some(provider), Some(name)) => ModelSpec::from_parts(provider, name, project_dir),
        (Some(_), None) | (None, Some(_)) => Err(bad_input(format!(
            "{}: [model] needs both `provider` and `name`",
            project_dir.join(config::FILE_NAME).display()
        ))),
        (None, None) => Err(bad_input(
            "no model chosen: pass --model PROVIDER:NAME (for example --model scripted:model.json), \
             set LONGRUN_MODEL, or set provider and name under [model] in longrun.toml",
        )),
    }
}

/// What `init --profile` writes to `[sandbox] profile`, once the profile
/// resolves: a bundled name as is, a file relative to the project when it
/// is inside it (so the setting travels with the repo), else its absolute path.
pub fn profile_setting(name_or_path: &str, project: &Path) -> anyhow::Result<String> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    crate::sandbox::Profile::resolve(name_or_path, &cwd)
        .with_context(|| format!("--profile {name_or_path}"))?;
    if crate::sandbox::bundled_names().contains(&name_or_path) {
        return Ok(name_or_path.to_string());
    }
    let path = cwd.join(name_or_path);
    let path = path.canonicalize().unwrap_or(path);
    let project = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    Ok(match path.strip_prefix(&project) {
        Ok(inside) => format!("./{}", inside.display()),
        Err(_) => path.display().to_string(),
    })
}
