//! Which model serves which role: the initializer, the workers, their
//! subagents and the optional reviewer.
//!
//! For each role the model is, first found: `--model-for ROLE=MODEL`,
//! `--model`, `LONGRUN_MODEL`, `[model.ROLE]` and then `[model]` in
//! longrun.toml. The other settings of a role (base URL, timeouts, prices)
//! are `[model.ROLE]`'s over `[model]`'s. Roles that end up with the same
//! model and settings share one provider.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use crate::config::{Config, ModelSection, MODEL_ROLES};
use crate::error::bad_input;
use crate::model::{open_provider, ModelSpec, Provider};

/// The providers of a run, by role.
#[derive(Clone)]
pub struct Models {
    pub initializer: Arc<dyn Provider>,
    pub worker: Arc<dyn Provider>,
    pub subagent: Arc<dyn Provider>,
    /// Only opened when `[review] mode` is not off.
    pub reviewer: Option<Arc<dyn Provider>>,
}

/// How a run chooses its models: the flags.
#[derive(Debug, Clone, Default)]
pub struct ModelChoice {
    /// `--model`.
    pub model: Option<String>,
    /// `--model-for ROLE=MODEL`, as given.
    pub model_for: Vec<String>,
    /// `--base-url`.
    pub base_url: Option<String>,
}

impl ModelChoice {
    /// `--model-for` as (role, model) pairs; an unknown role or a missing `=` is bad input.
    fn per_role(&self) -> anyhow::Result<Vec<(&str, &str)>> {
        self.model_for
            .iter()
            .map(|item| {
                let (role, model) = item.split_once('=').ok_or_else(|| {
                    bad_input(format!(
                        "--model-for {item}: expected ROLE=MODEL, for example --model-for worker=openai:gpt-4o-mini"
                    ))
                })?;
                if !MODEL_ROLES.contains(&role) {
                    return Err(bad_input(format!(
                        "--model-for {item}: `{role}` is not a role; the roles are {}",
                        MODEL_ROLES.join(", ")
                    )));
                }
                Ok((role, model))
            })
            .collect()
    }
}

/// The model of `role`, as the flags, the environment and `config` choose it.
pub fn resolve_role(
    role: &str,
    choice: &ModelChoice,
    config: &Config,
    dir: &Path,
) -> anyhow::Result<(ModelSpec, ModelSection)> {
    let section = config.model.for_role(role);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    if let Some((_, model)) = choice
        .per_role()?
        .into_iter()
        .rev()
        .find(|(r, _)| *r == role)
    {
        return Ok((ModelSpec::parse(model, &cwd)?, section));
    }
    // `--model`, then LONGRUN_MODEL, then the role's section over [model].
    let mut flat = config.clone();
    flat.model = section.clone();
    Ok((
        crate::trusted::resolve_model(choice.model.as_deref(), &flat, dir)?,
        section,
    ))
}

impl Models {
    /// Open a provider per role (shared where they are the same).
    pub fn open(
        choice: &ModelChoice,
        config: &Config,
        dir: &Path,
        review: bool,
    ) -> anyhow::Result<Models> {
        let mut opened: Vec<(String, ModelSection, Arc<dyn Provider>)> = Vec::new();
        let mut open = |role: &str| -> anyhow::Result<Arc<dyn Provider>> {
            let (spec, section) = resolve_role(role, choice, config, dir)?;
            let key = format!("{}:{}", spec.kind.prefix(), spec.name);
            if let Some((_, _, p)) = opened.iter().find(|(k, s, _)| *k == key && *s == section) {
                return Ok(Arc::clone(p));
            }
            let provider = open_provider(&spec, &section, choice.base_url.as_deref())
                .with_context(|| format!("the {role} model"))?;
            opened.push((key, section, Arc::clone(&provider)));
            Ok(provider)
        };
        Ok(Models {
            initializer: open("initializer")?,
            worker: open("worker")?,
            subagent: open("subagent")?,
            reviewer: if review {
                Some(open("reviewer")?)
            } else {
                None
            },
        })
    }
}

/// The models longrun.toml (and LONGRUN_MODEL) choose, by role, for
/// `status`: the one model when all agree, else `initializer X · worker Y · ...`.
pub fn describe_config(config: &Config, dir: &Path) -> String {
    let choice = ModelChoice::default();
    let mut roles: Vec<(&str, String)> = ["initializer", "worker", "subagent"]
        .iter()
        .map(|role| {
            let model = resolve_role(role, &choice, config, dir)
                .map(|(spec, _)| spec.display())
                .unwrap_or_else(|_| "(none chosen)".into());
            (*role, model)
        })
        .collect();
    if config.review.mode != crate::config::ReviewMode::Off {
        let model = resolve_role("reviewer", &choice, config, dir)
            .map(|(spec, _)| spec.display())
            .unwrap_or_else(|_| "(none chosen)".into());
        roles.push(("reviewer", model));
    }
    if roles.iter().all(|(_, m)| *m == roles[0].1) {
        return roles[0].1.clone();
    }
    roles
        .iter()
        .map(|(r, m)| format!("{r} {m}"))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// A session's model as trailers and status name it: `openai:gpt-4o`, or
/// `openai:gpt-4o (subagents openai:gpt-4o-mini)` when its subagents use another.
pub fn session_model(own: &Arc<dyn Provider>, subagent: Option<&Arc<dyn Provider>>) -> String {
    match subagent.map(|s| s.describe()) {
        Some(other) if other != own.describe() => {
            format!("{} (subagents {other})", own.describe())
        }
        _ => own.describe(),
    }
}
