//! A longrun project: its directory, repo and committed settings.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use git2::Repository;

use crate::config::{self, Config};
use crate::error::bad_input;
use crate::features::{self, FeatureList};
use crate::model::ModelSpec;
use crate::trusted::record::repo;
use crate::trusted::History;

pub struct Project {
    pub dir: PathBuf,
    pub repo: Repository,
    pub config: Config,
    /// The sandbox profile `[sandbox] profile` names, resolved.
    pub profile: crate::sandbox::Profile,
    /// main's history as last read: a run reads each commit once.
    history: Mutex<Arc<History>>,
    /// The cached checkout of main verification links from (`checkout.rs`).
    pub(crate) checkout: Mutex<super::caches::Cache>,
    /// The recorded sessions whose work files are still to be removed.
    pub(crate) cleaned: Mutex<super::caches::Cleanup>,
    /// The last session number this process handed out.
    pub(crate) numbered: Mutex<Option<u32>>,
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
        check_family(&config, &dir.join(config::FILE_NAME))?;
        let field = format!(
            "{}: [sandbox] profile",
            dir.join(config::FILE_NAME).display()
        );
        let profile = project_profile(
            &config.sandbox.profile,
            &dir,
            &ProfileSource {
                dir: &dir,
                repo: &repo,
                protected: &config.run.protected,
                field: &field,
            },
        )?
        .with_registries(&config.sandbox.registries)
        .map_err(|e| {
            bad_input(format!(
                "{}: [sandbox] registries: {e:#}",
                dir.join(config::FILE_NAME).display()
            ))
        })?;
        Ok(Project {
            dir,
            repo,
            config,
            profile,
            history: Mutex::default(),
            checkout: Mutex::default(),
            cleaned: Mutex::default(),
            numbered: Mutex::default(),
        })
    }

    /// Use the sandbox profile `--profile` names for this run instead of the
    /// one in longrun.toml. A path is relative to the current directory.
    pub fn use_profile(&mut self, name_or_path: &str) -> anyhow::Result<()> {
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let field = format!("--profile {name_or_path}");
        self.profile = project_profile(
            name_or_path,
            &cwd,
            &ProfileSource {
                dir: &self.dir,
                repo: &self.repo,
                protected: &self.config.run.protected,
                field: &field,
            },
        )?
        .with_registries(&self.config.sandbox.registries)?;
        Ok(())
    }

    /// main's history, read from the commits added since the last call.
    pub fn history(&self) -> anyhow::Result<Arc<History>> {
        let mut cached = self
            .history
            .lock()
            .map_err(|_| anyhow::anyhow!("the history cache was poisoned"))?;
        if repo::main_head(&self.repo)? != cached.tip {
            Arc::make_mut(&mut cached).catch_up(&self.repo)?;
        }
        Ok(Arc::clone(&cached))
    }

    /// Drop the packs a repack deleted from the project's open repository
    /// ([`crate::git::forget_deleted_packs`]): a long run would otherwise
    /// slow down and grow with every pack it ever rolled up.
    pub fn forget_deleted_packs(&self) -> anyhow::Result<()> {
        crate::git::forget_deleted_packs(&self.repo)
            .with_context(|| format!("cannot open {} again", self.repo.path().display()))
    }

    /// The feature list on main, if the initializer has written one.
    pub fn features(&self) -> anyhow::Result<Option<Arc<FeatureList>>> {
        let Some(head) = repo::main_head(&self.repo)? else {
            return Ok(None);
        };
        match features::list_at(&self.repo, head)? {
            None => Ok(None),
            Some(parsed) => parsed.map(Some).map_err(|e| {
                bad_input(format!(
                    "{e} (on main in {}); fix it with a commit on main",
                    self.dir.display()
                ))
            }),
        }
    }

    /// `[run] protected` and what is protected whatever it says:
    /// [`config::ALWAYS_PROTECTED`], and each script on main that the
    /// notify command, a global check or the suite runs (they run outside a
    /// session, or decide every verdict).
    pub fn protected(&self) -> Vec<String> {
        let mut all = self.config.run.protected.clone();
        let named = self.files_settings_name().unwrap_or_default();
        let always = config::ALWAYS_PROTECTED.iter().map(|p| p.to_string());
        for path in always.chain(named) {
            let pattern = globset::escape(&path);
            if !all.contains(&pattern) {
                all.push(pattern);
            }
        }
        all
    }

    /// The files of main's tree that longrun.toml's commands run as programs.
    fn files_settings_name(&self) -> anyhow::Result<Vec<String>> {
        let Some(head) = repo::main_head(&self.repo)? else {
            return Ok(Vec::new());
        };
        let tree = self.repo.find_commit(head)?.tree()?;
        let c = &self.config;
        let commands = c
            .notify
            .command
            .iter()
            .chain(&c.checks.commands)
            .chain(&c.checks.suite);
        let mut files: Vec<String> = commands
            .flat_map(|command| crate::closure::run_scripts(&tree, command))
            .collect();
        files.sort();
        files.dedup();
        Ok(files)
    }

    pub fn longrun_dir(&self) -> PathBuf {
        crate::trusted::record::state::longrun_dir(&self.dir)
    }
}

/// `[model] family`, when set, names a family the model module knows
/// (checked here, above both config.rs and model/, which it joins).
pub fn check_family(config: &Config, origin: &Path) -> anyhow::Result<()> {
    let Some(family) = &config.model.family else {
        return Ok(());
    };
    let known = crate::model::family::known();
    if known.iter().any(|k| k.eq_ignore_ascii_case(family.trim())) {
        return Ok(());
    }
    Err(bad_input(format!(
        "{}: [model] family = {family:?} is not a known model family; use one of {} or remove it to detect the family from the model's name",
        origin.display(),
        known.join(", ")
    )))
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

/// Where a project's profile may come from, and how errors name the setting.
struct ProfileSource<'a> {
    dir: &'a Path,
    repo: &'a Repository,
    protected: &'a [String],
    /// `longrun.toml: [sandbox] profile` or `--profile X`.
    field: &'a str,
}

/// The profile `setting` names (a path relative to `base`): a bundled
/// name; a file outside the project; or a protected file of the project,
/// read as it is on main. Never a file of the project's work tree as it
/// is: accepted sessions write there, and a session must not loosen the
/// sandbox of the next one.
fn project_profile(
    setting: &str,
    base: &Path,
    src: &ProfileSource,
) -> anyhow::Result<crate::sandbox::Profile> {
    use crate::sandbox::Profile;
    let field = src.field;
    let looks_like_path = setting.contains('/') || setting.ends_with(".toml");
    if crate::sandbox::bundled_names().contains(&setting) || !looks_like_path {
        return Profile::resolve(setting, base).with_context(|| field.to_string());
    }
    let path = real_parent(&base.join(setting));
    let Some(rel) = inside(&path, src.dir) else {
        return Profile::resolve(&path.display().to_string(), base)
            .with_context(|| field.to_string());
    };
    if !protects(src.protected, &rel) {
        return Err(bad_input(format!(
            "{field}: {rel} is a file of the project that is not protected, so a session could \
             change it and loosen the sandbox of the next one; add \"{rel}\" to [run] protected \
             in longrun.toml (it is then read as it is on main), or give a bundled profile or a \
             path outside the project"
        )));
    }
    let head = repo::main_head(src.repo)?.context("main has no commits")?;
    let text = repo::read_file_at(src.repo, head, &rel)?.ok_or_else(|| {
        bad_input(format!(
            "{field}: {rel} is not committed on main; commit it there (a project's profile is \
             read as it is on main), or give a path outside the project"
        ))
    })?;
    Profile::parse(&text, &format!("{rel} (on main)")).with_context(|| field.to_string())
}

/// `path` with its directory resolved (symlinks and `..`), when it exists.
fn real_parent(path: &Path) -> PathBuf {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return path.to_path_buf();
    };
    match parent.canonicalize() {
        Ok(parent) => parent.join(name),
        Err(_) => path.to_path_buf(),
    }
}

/// `path` relative to the project `dir` (with `/`), when it lies inside it.
fn inside(path: &Path, dir: &Path) -> Option<String> {
    let dir = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let rel = path.strip_prefix(&dir).ok()?;
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// Whether `[run] protected` covers the project file `rel`, matched as
/// verification matches it (globs, any case, a plain name covers what lies
/// below it).
fn protects(protected: &[String], rel: &str) -> bool {
    crate::rules::PathSet::new(protected).is_ok_and(|set| set.matches(rel))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_paths_cover_files_and_what_lies_in_directories() {
        let protected = vec!["SPEC.md".to_string(), "sandbox/".to_string()];
        assert!(protects(&protected, "SPEC.md"));
        assert!(protects(&protected, "spec.md"));
        assert!(protects(&protected, "sandbox/p.toml"));
        assert!(!protects(&protected, "sandboxes/p.toml"));
        assert!(!protects(&protected, "p.toml"));
        let globs = vec!["profiles/*.toml".to_string()];
        assert!(protects(&globs, "profiles/p.toml"));
        assert!(!protects(&globs, "profiles/deep/p.toml"));
    }

    #[test]
    fn paths_inside_the_project_are_named_relative_to_it() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().canonicalize().unwrap();
        std::fs::create_dir(dir.join("sub")).unwrap();
        let p = real_parent(&dir.join("sub/../sub/p.toml"));
        assert_eq!(inside(&p, &dir).as_deref(), Some("sub/p.toml"));
        assert_eq!(inside(Path::new("/etc/p.toml"), &dir), None);
        assert_eq!(inside(&dir, &dir), None);
    }
}
