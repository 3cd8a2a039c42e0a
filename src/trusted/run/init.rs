//! `longrun init SPEC`: a new project from a spec, and its initializer session.

use std::path::{Path, PathBuf};

use anyhow::Context;

use super::continue_run::Interrupt;
use crate::config::{self, Config};
use crate::error::{bad_input, Outcome};
use crate::features::{self, import::Imported};
use crate::trusted::contract::models::{ModelChoice, Models};
use crate::trusted::record::repo;
use crate::trusted::{resolve_model, Mode, Project, Reporter, Verdict};

pub struct InitArgs {
    pub spec: PathBuf,
    pub dir: PathBuf,
    pub model: Option<String>,
    pub base_url: Option<String>,
    /// `--profile`: the sandbox profile, written to a new longrun.toml.
    pub profile: Option<String>,
    /// `--features`: a feature list to start from, committed as features.json.
    pub features: Option<PathBuf>,
    /// `--model-for ROLE=MODEL`.
    pub model_for: Vec<String>,
    pub quiet: bool,
    /// `--json`: one JSON object per event on stdout.
    pub json: bool,
    /// `--force`: redo an init whose initializer was never accepted (as `init`
    /// again does); a project with an accepted initializer is still refused.
    pub force: bool,
    /// How long a paused initializer waits for the provider.
    pub max_wait: std::time::Duration,
}

/// Read and convert `--features FILE`; anything wrong is bad input naming the file.
fn read_features(path: &Path) -> anyhow::Result<Imported> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        bad_input(format!(
            "cannot read the feature list {}: {e}; pass a features.json, feature_list.json or prd.json",
            path.display()
        ))
    })?;
    features::import::import(&text, &path.display().to_string()).map_err(bad_input)
}

/// What init says about an imported list before the initializer starts.
fn describe_import(imported: &Imported, path: &Path) -> String {
    let n = imported.list.features.len();
    let mut line = format!(
        "imported {} from {} ({})",
        plural(n, "feature"),
        path.display(),
        imported.format.describe()
    );
    let passing = imported.passing();
    if !passing.is_empty() {
        line.push_str(&format!(
            "; {} marked passing ({}) stay so only if their checks pass at init",
            passing.len(),
            passing.join(", ")
        ));
    }
    line
}

/// `1 feature`, `2 features`.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// Read the spec; missing, empty or non-UTF-8 is bad input.
fn read_spec(path: &Path) -> anyhow::Result<String> {
    let bytes = std::fs::read(path).map_err(|e| {
        bad_input(format!(
            "cannot read the spec {}: {e}; pass the path of a Markdown spec",
            path.display()
        ))
    })?;
    let text = String::from_utf8(bytes).map_err(|_| {
        bad_input(format!(
            "the spec {} is not UTF-8 text; save it as UTF-8",
            path.display()
        ))
    })?;
    if text.trim().is_empty() {
        return Err(bad_input(format!(
            "the spec {} is empty; describe what to build in it first",
            path.display()
        )));
    }
    Ok(text)
}

/// `text` (a rendered longrun.toml) with `path` added to `[run] protected`.
fn protect(text: &str, path: &str) -> String {
    let quoted = toml::Value::String(path.to_string()).to_string();
    text.lines()
        .map(|line| match line.strip_prefix("protected = [") {
            Some(rest) if rest.ends_with(']') => {
                let items = rest.trim_end_matches(']').trim();
                match items.is_empty() {
                    true => format!("protected = [{quoted}]"),
                    false => format!("protected = [{items}, {quoted}]"),
                }
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

pub async fn init(args: InitArgs) -> anyhow::Result<Outcome> {
    let spec_text = read_spec(&args.spec)?;
    let imported = args.features.as_deref().map(read_features).transpose()?;
    // A bad --profile is refused before anything is written.
    let profile = match &args.profile {
        Some(p) => Some(crate::trusted::contract::project::profile_setting(
            p, &args.dir,
        )?),
        None => None,
    };
    // So is a machine that cannot confine a session as that profile says.
    crate::sandbox::preflight(&profile_for_preflight(&args)?)?;
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| {
            bad_input(format!(
                "cannot create the project directory {}: {e}; pass --dir with a directory to create or an empty one",
                args.dir.display()
            ))
        })?;
    let dir = args.dir.canonicalize()?;
    let spec_path = args.spec.canonicalize()?;
    let list_path = args
        .features
        .as_deref()
        .map(Path::canonicalize)
        .transpose()?;
    let repo = repo::init_or_open(&dir)?;
    let committed = committed_settings(&repo)?;
    if committed.is_some() && initializer_accepted(&repo)? {
        return Err(bad_input(format!(
            "{} already holds a longrun project whose initializer was accepted; \
             run `longrun continue --dir {}` instead",
            dir.display(),
            dir.display()
        )));
    }
    repo::ensure_excluded(&repo, "/.longrun/")?;
    // A second init racing this one, or a continue already running, holds the lock.
    let early_lock =
        crate::trusted::record::lock::acquire(&crate::trusted::record::state::longrun_dir(&dir))?;
    // The spec itself, the feature list and a prepared longrun.toml may be waiting, uncommitted.
    // A profile file inside the project is committed with the settings and
    // protected: sessions read it as it is on main and cannot change it.
    let profile_file = profile
        .as_deref()
        .and_then(|p| p.strip_prefix("./"))
        .map(str::to_string);
    let allowed = |p: &str| {
        p == config::FILE_NAME
            || profile_file.as_deref() == Some(p)
            || dir.join(p) == spec_path
            || Some(dir.join(p)) == list_path
            || (imported.is_some() && p == features::FILE_NAME)
    };
    let dirty: Vec<String> = repo::dirty_paths(&repo)?
        .into_iter()
        .filter(|p| !allowed(p))
        .collect();
    if !dirty.is_empty() {
        return Err(bad_input(format!(
            "{} has uncommitted changes ({}); commit or stash them first",
            dir.display(),
            dirty.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
        )));
    }

    // Settings: a prepared longrun.toml wins; otherwise the default, with the model if given.
    let toml_path = dir.join(config::FILE_NAME);
    let on_disk = std::fs::read_to_string(&toml_path).ok();
    let redo = committed.is_some();
    // Redoing: a longrun.toml edited since (or the committed one, when no flag
    // corrects it) is kept; flags render it again from them and what was committed.
    let prepared = match (&committed, &on_disk) {
        (Some(c), Some(d)) => d != c || no_flags(&args),
        (None, Some(_)) => true,
        (_, None) => false,
    };
    let config = if prepared {
        Config::load(&dir)?
    } else if let Some(text) = &committed {
        Config::parse(text, &toml_path)?
    } else {
        Config::default()
    };
    crate::trusted::contract::project::check_family(&config, &toml_path)?;
    let model = resolve_model(args.model.as_deref(), &config, &dir)?;
    let choice = ModelChoice {
        model: args.model.clone(),
        model_for: args.model_for.clone(),
        base_url: args.base_url.clone(),
    };
    let models = Models::open(&choice, &config, &dir, false)?;
    if !prepared {
        let base_url = args.base_url.clone().or(config.model.base_url.clone());
        let kept_profile =
            (config.sandbox.profile != "default").then(|| config.sandbox.profile.clone());
        let mut text = Config::render_initial(
            Some((model.kind.prefix(), &model.name)),
            base_url.as_deref(),
            profile.as_deref().or(kept_profile.as_deref()),
        );
        if let Some(file) = &profile_file {
            text = protect(&text, file);
        }
        // `--model-for ROLE=MODEL` is kept too, so that `continue` uses it.
        for item in &args.model_for {
            let Some((role, _)) = item.split_once('=') else {
                continue;
            };
            let (spec, _) =
                crate::trusted::contract::models::resolve_role(role, &choice, &config, &dir)?;
            text.push_str(&Config::render_role(role, spec.kind.prefix(), &spec.name));
        }
        std::fs::write(&toml_path, text)
            .with_context(|| format!("failed to write {}", toml_path.display()))?;
    }
    std::fs::write(dir.join("SPEC.md"), &spec_text)?;
    let mut paths = vec!["SPEC.md", config::FILE_NAME];
    if let Some(file) = &profile_file {
        paths.push(file);
    }
    let mut message = if redo {
        "longrun: the spec and settings again (the initializer was never accepted)".to_string()
    } else {
        "longrun: add the spec and settings".to_string()
    };
    if let (Some(imported), Some(path)) = (&imported, &args.features) {
        std::fs::write(dir.join(features::FILE_NAME), &imported.text)?;
        paths.push(features::FILE_NAME);
        message = format!(
            "longrun: add the spec, settings and feature list\n\nThe feature list was imported from {} ({}).",
            path.display(),
            imported.format.describe()
        );
    }
    repo::commit_paths(&repo, &paths, &message)?;
    if redo {
        // The work tree follows main: it held what the commit now holds.
        repo::resync_worktree(&repo)?;
    }

    let mut project = Project::open(&dir)?;
    if let Some(profile) = &args.profile {
        project.use_profile(profile)?;
    }
    let _lock = early_lock;
    let reporter = Reporter::new(Mode::pick(args.quiet, args.json))
        .with_check_rounds(project.config.harness.check_rounds);
    if redo {
        reporter.line(
            "the earlier initializer was never accepted: running it again with these settings",
        );
    }
    if let (Some(imported), Some(path)) = (&imported, &args.features) {
        reporter.line(&describe_import(imported, path));
    }
    let interrupt = Interrupt::install()?;
    crate::trusted::session::recover::recover_all(&project, &reporter)?;
    let outcome =
        super::continue_run::initialize(&project, &models, &reporter, &interrupt, args.max_wait)
            .await?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(ended) => return Ok(ended),
    };
    if interrupt.is_set() {
        return Ok(Outcome::Interrupted);
    }
    if outcome.verdict != Verdict::Accepted {
        eprintln!(
            "error: the initializer session ended {}; no worker session starts before an initializer is accepted. Reasons:",
            outcome.verdict
        );
        for r in &outcome.reasons {
            eprintln!("  - {}", crate::sanitize::line(r));
        }
        eprintln!(
            "Run `longrun init SPEC --dir {}` again (with corrected flags), or \
             `longrun continue --dir {}`, to try the initializer again.",
            dir.display(),
            dir.display()
        );
        return Ok(Outcome::RunFailed);
    }
    let count = project.features()?.map(|l| l.features.len()).unwrap_or(0);
    reporter.line(&format!(
        "initialized {}: {}. Next: longrun continue --dir {} --sessions N",
        dir.display(),
        plural(count, "feature"),
        dir.display()
    ));
    Ok(Outcome::Done)
}

fn no_flags(args: &InitArgs) -> bool {
    args.model.is_none()
        && args.model_for.is_empty()
        && args.base_url.is_none()
        && args.profile.is_none()
}

/// longrun.toml on main, when a project was started here.
fn committed_settings(repo: &git2::Repository) -> anyhow::Result<Option<String>> {
    match repo::main_head(repo)? {
        Some(head) => repo::read_file_at(repo, head, config::FILE_NAME),
        None => Ok(None),
    }
}

fn initializer_accepted(repo: &git2::Repository) -> anyhow::Result<bool> {
    Ok(crate::trusted::History::from_log(&repo::first_parent_log(repo)?).initialized())
}

/// The profile the initializer will run under, resolved without writing
/// anything: `--profile`, else a prepared or committed longrun.toml's, else default.
fn profile_for_preflight(args: &InitArgs) -> anyhow::Result<crate::sandbox::Profile> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    if let Some(p) = &args.profile {
        return crate::sandbox::Profile::resolve(p, &cwd);
    }
    let toml_path = args.dir.join(config::FILE_NAME);
    let name = match std::fs::read_to_string(&toml_path) {
        Ok(text) => Config::parse(&text, &toml_path)?.sandbox.profile,
        Err(_) => "default".to_string(),
    };
    crate::sandbox::Profile::resolve(&name, &args.dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_file_is_added_to_the_protected_paths() {
        let text = "[run]\nprotected = [\"SPEC.md\", \"longrun.toml\"]\nx = 1\n";
        assert_eq!(
            protect(text, "sandbox/p.toml"),
            "[run]\nprotected = [\"SPEC.md\", \"longrun.toml\", \"sandbox/p.toml\"]\nx = 1\n"
        );
        assert_eq!(
            protect("protected = []\n", "p.toml"),
            "protected = [\"p.toml\"]\n"
        );
    }
}
