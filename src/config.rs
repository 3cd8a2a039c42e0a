//! `longrun.toml`: the project's committed settings.
//!
//! Parsed without side effects; every error names the file and the field.
//! Later layers (flags, environment) are applied by the callers that own them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::bad_input;

mod harness;
mod notify;
mod review;
pub use harness::{
    EditFormat, HarnessSettings, InitializerMode, DEFAULT_RETRY_TEMPERATURE, MAX_CANDIDATES,
};
pub use notify::NotifySection;
pub use review::{ReviewMode, ReviewSection};

pub const FILE_NAME: &str = "longrun.toml";

/// Paths no session may change, whatever `[run] protected` says: this file
/// (which decides everything that runs outside a session: the notify
/// command and its environment, model base URLs, the checks, the suite,
/// the review role, the sandbox profile) and the instruction files every
/// later session is given as its standing orders. Only a person changes
/// them (`longrun amend`).
pub const ALWAYS_PROTECTED: &[&str] = &[FILE_NAME, "AGENTS.md", "CLAUDE.md"];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub sandbox: SandboxSection,
    #[serde(default)]
    pub checks: ChecksSection,
    #[serde(default)]
    pub budget: BudgetSection,
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub tools: ToolsSection,
    #[serde(default)]
    pub permissions: crate::permissions::PermissionsConfig,
    #[serde(default)]
    pub harness: HarnessSettings,
    #[serde(default)]
    pub notify: NotifySection,
    #[serde(default)]
    pub review: ReviewSection,
}

/// `[model]`: which model the sessions use and how to reach it. Flags and the
/// environment (`--model`, `--base-url`, `LONGRUN_MODEL`, `LONGRUN_BASE_URL`) win.
/// The key itself is never here: only the name of the variable that holds it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    pub provider: Option<String>,
    pub name: Option<String>,
    /// The API's base URL, e.g. `https://openrouter.ai/api/v1`.
    pub base_url: Option<String>,
    /// The environment variable holding the key, instead of the provider's usual one.
    pub api_key_env: Option<String>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    /// The model family whose defaults fill in what is unset here and in
    /// `[harness]` (window, output cap, temperature, edit format, text-call
    /// recovery); unset, it is recognised in the model's name.
    pub family: Option<String>,
    /// The model's context window in tokens; overrides `[harness] context_window`.
    pub context_window: Option<u64>,
    /// Prices in USD per million tokens, overriding the built-in table.
    pub price_in_per_mtok: Option<f64>,
    pub price_out_per_mtok: Option<f64>,
    /// Price of input tokens read from the prompt cache (default: the input price).
    pub price_cached_per_mtok: Option<f64>,
    /// Seconds to connect (default 10).
    pub connect_timeout_secs: Option<f64>,
    /// Seconds to wait for the first byte of an answer (default 120).
    pub first_byte_timeout_secs: Option<f64>,
    /// Seconds a stream may stay silent (default 120).
    pub idle_timeout_secs: Option<f64>,
    /// Tries of one request, the first included (default 6).
    pub max_tries: Option<u32>,
    /// Backoff before the first retry, doubling each time, in seconds (default 1).
    pub retry_base_secs: Option<f64>,
    /// The longest backoff, in seconds (default 60).
    pub retry_cap_secs: Option<f64>,
    /// `[model.initializer]`, `[model.worker]`, `[model.subagent]`,
    /// `[model.reviewer]`: per-role settings, each field falling back to `[model]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializer: Option<Box<ModelSection>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<Box<ModelSection>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<Box<ModelSection>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewer: Option<Box<ModelSection>>,
}

/// The roles a model can be chosen for.
pub const MODEL_ROLES: &[&str] = &["initializer", "worker", "subagent", "reviewer"];

impl ModelSection {
    /// The settings of `role`: its own section's fields over `[model]`'s.
    /// Prices are a model's own: a role section that names another model
    /// does not inherit `[model]`'s.
    pub fn for_role(&self, role: &str) -> ModelSection {
        let own = match role {
            "initializer" => self.initializer.as_deref(),
            "worker" => self.worker.as_deref(),
            "subagent" => self.subagent.as_deref(),
            "reviewer" => self.reviewer.as_deref(),
            _ => None,
        };
        let base = ModelSection {
            initializer: None,
            worker: None,
            subagent: None,
            reviewer: None,
            ..self.clone()
        };
        let Some(own) = own else {
            return base;
        };
        let names_model = own.provider.is_some() || own.name.is_some();
        macro_rules! pick {
            ($($f:ident),*) => { ModelSection { $($f: own.$f.clone().or(base.$f.clone()),)* ..base.clone() } };
        }
        let mut merged = pick!(
            provider,
            name,
            base_url,
            api_key_env,
            max_output_tokens,
            temperature,
            context_window,
            price_in_per_mtok,
            price_out_per_mtok,
            price_cached_per_mtok,
            connect_timeout_secs,
            first_byte_timeout_secs,
            idle_timeout_secs,
            max_tries,
            retry_base_secs,
            retry_cap_secs
        );
        if names_model {
            merged.price_in_per_mtok = own.price_in_per_mtok;
            merged.price_out_per_mtok = own.price_out_per_mtok;
            merged.price_cached_per_mtok = own.price_cached_per_mtok;
        }
        merged
    }
}

/// `[sandbox]`: the confinement profile and extra paths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxSection {
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Extra paths the session may read (and execute).
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    /// Extra paths the session may write.
    #[serde(default)]
    pub writable: Vec<PathBuf>,
    /// MiB a session's workspace may hold when its worker ends; over it the
    /// session fails. Its exported work (the kept ref) is capped at the same size.
    #[serde(default = "default_max_workspace_mb")]
    pub max_workspace_mb: u64,
    /// MiB of one uncommitted file the WIP commit keeps; larger ones are left
    /// out of the kept work, and the verdict says which.
    #[serde(default = "default_max_file_mb")]
    pub max_file_mb: u64,
    /// More hosts a `registries` network reaches, beside the profile's
    /// (`name`, `name:port`, `*.name`).
    #[serde(default)]
    pub registries: Vec<String>,
    /// Workspaces and verification checkouts are overlays on a cached
    /// checkout, written only where they differ from it, where the sandbox
    /// can mount one; false writes every tree whole.
    #[serde(default = "default_true")]
    pub overlay: bool,
}

fn default_true() -> bool {
    true
}

fn default_max_workspace_mb() -> u64 {
    4096
}
fn default_max_file_mb() -> u64 {
    100
}

fn default_profile() -> String {
    "default".into()
}

impl Default for SandboxSection {
    fn default() -> Self {
        SandboxSection {
            profile: default_profile(),
            read_only: Vec::new(),
            writable: Vec::new(),
            max_workspace_mb: default_max_workspace_mb(),
            max_file_mb: default_max_file_mb(),
            registries: Vec::new(),
            overlay: true,
        }
    }
}

/// `[checks]`: commands run after every worker session, in a fresh confined checkout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChecksSection {
    #[serde(default)]
    pub commands: Vec<String>,
    /// One command that runs the whole acceptance suite, in place of one
    /// regression check per passing feature; it names failures per feature
    /// in the file `LONGRUN_SUITE_RESULTS` gives it (see the README).
    #[serde(default)]
    pub suite: Option<String>,
    /// Seconds each check (and init.sh) may run during verification.
    #[serde(default = "default_check_timeout")]
    pub timeout_secs: u64,
    /// A verification checkout of more files than this links the files it
    /// holds the same as main from a cached checkout of main, read-only to
    /// the checks, instead of writing them (0: always).
    #[serde(default = "default_link_unchanged_above")]
    pub link_unchanged_above: usize,
}

fn default_link_unchanged_above() -> usize {
    1000
}

fn default_check_timeout() -> u64 {
    600
}

impl Default for ChecksSection {
    fn default() -> Self {
        ChecksSection {
            commands: Vec::new(),
            suite: None,
            timeout_secs: default_check_timeout(),
            link_unchanged_above: default_link_unchanged_above(),
        }
    }
}

/// `[budget]`: what one session may spend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSection {
    /// Model requests per session (a subagent's and a compaction's included).
    #[serde(default = "default_steps")]
    pub steps: u32,
    /// Wall time per session, in seconds; the worker is killed past it.
    #[serde(default = "default_wall_time")]
    pub wall_time_secs: u64,
    /// Input tokens per session, subagents included; no limit when unset.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    /// Output tokens per session, subagents included; no limit when unset.
    #[serde(default)]
    pub output_tokens: Option<u64>,
    /// US dollars per session, as the provider's prices say; no limit when unset.
    #[serde(default)]
    pub cost_usd: Option<f64>,
}

fn default_steps() -> u32 {
    200
}
fn default_wall_time() -> u64 {
    1800
}

impl Default for BudgetSection {
    fn default() -> Self {
        BudgetSection {
            steps: default_steps(),
            wall_time_secs: default_wall_time(),
            input_tokens: None,
            output_tokens: None,
            cost_usd: None,
        }
    }
}

/// `[run]`: rules across sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Failed attempts after which a feature is stuck and skipped.
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    /// Which failing feature the next session takes.
    #[serde(default)]
    pub pick: Pick,
    /// Glob patterns of paths a worker session may not add, change, delete
    /// or rename (case-insensitive; a plain name also covers what is below it).
    #[serde(default = "default_protected")]
    pub protected: Vec<String>,
    /// Glob patterns of the acceptance tests, as `protected`: read-only in a
    /// worker's sandbox, and verification runs them as they are on main.
    /// Written by longrun when the initializer is accepted.
    #[serde(default)]
    pub frozen: Vec<String>,
    /// Seconds a session gets to commit what works after the first Ctrl-C or SIGTERM.
    #[serde(default = "default_grace")]
    pub grace_secs: u64,
    /// Re-run the checks of every passing feature at every Nth session's verification (0: never).
    #[serde(default = "default_regressions_every")]
    pub regressions_every: u32,
    /// Stop `continue` after this many sessions in a row end without acceptance.
    #[serde(default = "default_max_failures")]
    pub max_consecutive_failures: u32,
    /// How many of the latest sessions keep their workspace, tmp and home
    /// after the verdict, for debugging (the transcript always stays).
    #[serde(default)]
    pub keep_sessions: u32,
}

fn default_grace() -> u64 {
    60
}
fn default_regressions_every() -> u32 {
    1
}
fn default_max_failures() -> u32 {
    5
}

fn default_max_attempts() -> u32 {
    3
}
fn default_protected() -> Vec<String> {
    vec!["SPEC.md".into(), FILE_NAME.into(), "init.sh".into()]
}

/// `[run] pick`: which failing (and not stuck) feature the next session takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pick {
    /// The first in features.json's order: a failed feature is tried again
    /// until it is stuck (features that build on the ones before them).
    #[default]
    InOrder,
    /// The one with the fewest failed attempts, ties in features.json's
    /// order: each failing feature gets a session before any gets another
    /// (independent features, such as one per test, where one the model
    /// cannot do yet should not hold back the others).
    LeastFailed,
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            max_attempts: default_max_attempts(),
            pick: Pick::default(),
            protected: default_protected(),
            frozen: Vec::new(),
            grace_secs: default_grace(),
            regressions_every: default_regressions_every(),
            max_consecutive_failures: default_max_failures(),
            keep_sessions: 0,
        }
    }
}

impl RunSection {
    /// A `protected` list must cover longrun.toml: with it left out, an
    /// accepted session could rewrite what runs outside every later one
    /// (the notify command and the variables it is given, base URLs,
    /// checks). It is protected all the same; the list is refused so that
    /// no one reads it as saying otherwise.
    fn refuse_unprotected_settings(&self, origin: &Path) -> anyhow::Result<()> {
        let covers =
            crate::rules::PathSet::new(&self.protected).is_ok_and(|s| s.matches(FILE_NAME));
        if covers {
            return Ok(());
        }
        Err(bad_input(format!(
            "{}: [run] protected leaves out {FILE_NAME}, which decides what runs outside \
             every session (notify, base URLs, checks, suite, review) and is always \
             protected; add \"{FILE_NAME}\" to [run] protected and commit it",
            origin.display()
        )))
    }
}

/// `[tools]`: how the session's tools behave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsSection {
    /// Characters of one tool result the model sees; longer results are cut
    /// to head and tail, the whole saved in the session tmp.
    #[serde(default = "default_output_cap")]
    pub output_cap: usize,
}

/// The default cap, in characters, on what one tool call hands back.
pub const DEFAULT_OUTPUT_CAP: usize = 30_000;

/// `[tools] output_cap` when longrun.toml (or worker.json) does not say.
pub fn default_output_cap() -> usize {
    DEFAULT_OUTPUT_CAP
}

impl Default for ToolsSection {
    fn default() -> Self {
        ToolsSection {
            output_cap: default_output_cap(),
        }
    }
}

/// The line a span starts on, quoted, so the message names the field even
/// when the parser's message does not.
fn source_line(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(start) = span.map(|s| s.start.min(text.len())) else {
        return String::new();
    };
    let line_start = text
        .get(..start)
        .and_then(|b| b.rfind('\n'))
        .map_or(0, |i| i + 1);
    let line = text
        .get(line_start..)
        .and_then(|t| t.lines().next())
        .unwrap_or("")
        .trim();
    if line.is_empty() {
        String::new()
    } else {
        format!(" (`{}`)", crate::view::text::truncate(line, 60))
    }
}

/// `:LINE:COLUMN` of where a span starts, so that a parse error stays one line.
fn position(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    let Some(start) = span.map(|s| s.start.min(text.len())) else {
        return String::new();
    };
    let before = text.get(..start).unwrap_or("");
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!(":{line}:{column}")
}

impl Config {
    /// The permission policy of the project at `dir`: its longrun.toml's
    /// rules when there is one, else the built-in ones; and where they came from.
    pub fn policy_at(dir: &Path) -> anyhow::Result<(crate::permissions::Policy, String)> {
        let toml = dir.join(FILE_NAME);
        if !toml.is_file() {
            let from = "the built-in defaults".to_string();
            return Ok((crate::permissions::Policy::defaults(), from));
        }
        let config = Config::load(dir)?;
        let policy = crate::permissions::Policy::new(&config.permissions)?;
        Ok((policy, toml.display().to_string()))
    }

    /// Parse `text`, naming `origin` (the file) in any error.
    pub fn parse(text: &str, origin: &Path) -> anyhow::Result<Config> {
        let config: Config = toml::from_str(text).map_err(|e| {
            bad_input(format!(
                "{}{} is not valid{}: {}; fix that field or remove it to use the default",
                origin.display(),
                position(text, e.span()),
                source_line(text, e.span()),
                e.message().trim_end()
            ))
        })?;
        // Bad glob patterns are caught here, not when a session starts.
        crate::permissions::Policy::new(&config.permissions)?;
        if let Some(t) = config.harness.retry_temperature {
            if !(0.0..=2.0).contains(&t) {
                return Err(bad_input(format!(
                    "{}: [harness] retry_temperature = {t} is out of range; use a value from 0 to 2 (0.8 suits small local models), or remove it",
                    origin.display()
                )));
            }
        }
        for (field, n) in [
            ("candidates", config.harness.candidates),
            ("repair_candidates", config.harness.repair_candidates),
        ] {
            if !(1..=MAX_CANDIDATES).contains(&n) {
                return Err(bad_input(format!(
                    "{}: [harness] {field} = {n} is out of range; use a number from 1 (one answer per attempt) to {MAX_CANDIDATES}, or remove it",
                    origin.display()
                )));
            }
        }
        for (field, patterns) in [
            ("protected", &config.run.protected),
            ("frozen", &config.run.frozen),
        ] {
            crate::rules::PathSet::new(patterns).map_err(|e| {
                bad_input(format!(
                    "{}: [run] {field}: {e}; fix the pattern (`tests/**`, `docs/*.md`)",
                    origin.display()
                ))
            })?;
        }
        config.run.refuse_unprotected_settings(origin)?;
        Ok(config)
    }

    /// Read `DIR/longrun.toml`; a missing file gives the defaults.
    pub fn load(project_dir: &Path) -> anyhow::Result<Config> {
        let path = project_dir.join(FILE_NAME);
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
            Err(e) => Err(bad_input(format!("cannot read {}: {e}", path.display()))),
        }
    }

    /// The file `init` commits: every setting written out with a comment.
    /// `base_url` is written when `init` was given `--base-url`, and the
    /// sandbox profile when it was given `--profile`.
    pub fn render_initial(
        model: Option<(&str, &str)>,
        base_url: Option<&str>,
        profile: Option<&str>,
    ) -> String {
        let mut model = match model {
            Some((provider, name)) => format!(
                "provider = {}\nname = {}\n",
                toml_string(provider),
                toml_string(name)
            ),
            None => "# provider = \"openai\"\n# name = \"gpt-4o\"\n".to_string(),
        };
        match base_url {
            Some(url) => model.push_str(&format!("base_url = {}\n", toml_string(url))),
            None => model.push_str("# base_url = \"https://openrouter.ai/api/v1\"\n"),
        }
        crate::templates::LONGRUN_TOML
            .replace("{{model}}", &model)
            .replace("{{profile}}", &toml_string(profile.unwrap_or("default")))
    }
}

impl Config {
    /// A `[model.ROLE]` table naming the role's own model, for longrun.toml.
    pub fn render_role(role: &str, provider: &str, name: &str) -> String {
        format!(
            "\n[model.{role}]\nprovider = {}\nname = {}\n",
            toml_string(provider),
            toml_string(name)
        )
    }
}

fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_protected_list_that_leaves_out_longrun_toml_is_refused_naming_the_fix() {
        let path = Path::new("/p/longrun.toml");
        let err = Config::parse("[run]\nprotected = [\"SPEC.md\"]\n", path).unwrap_err();
        let err = format!("{err:#}");
        assert!(
            err.contains("/p/longrun.toml: [run] protected leaves out longrun.toml")
                && err.contains("add \"longrun.toml\" to [run] protected"),
            "{err}"
        );
        for covered in [
            "[\"longrun.toml\"]",
            "[\"*.toml\"]",
            "[\"LONGRUN.TOML\", \"x\"]",
        ] {
            let text = format!("[run]\nprotected = {covered}\n");
            assert!(Config::parse(&text, path).is_ok(), "{covered}");
        }
        assert!(Config::parse("", path).is_ok());
    }

    #[test]
    fn candidates_out_of_range_name_the_field_and_the_range() {
        let path = Path::new("/p/longrun.toml");
        for (text, field) in [
            ("candidates = 0", "candidates = 0"),
            ("repair_candidates = 17", "repair_candidates = 17"),
        ] {
            let err = Config::parse(&format!("[harness]\n{text}\n"), path).unwrap_err();
            assert!(
                format!("{err:#}").contains(&format!(
                    "/p/longrun.toml: [harness] {field} is out of range; use a number from 1 (one answer per attempt) to 16"
                )),
                "{err:#}"
            );
        }
        let unset = Config::parse("", path).unwrap().harness;
        assert_eq!((unset.candidates, unset.repair_candidates), (1, 1));
        assert!(!unset.searches());
        let set = Config::parse("[harness]\ncandidates = 4\n", path)
            .unwrap()
            .harness;
        assert_eq!((set.max_candidates(), set.searches()), (4, true));
    }

    #[test]
    fn a_retry_temperature_out_of_range_names_the_field_and_the_range() {
        let path = Path::new("/p/longrun.toml");
        let err = Config::parse("[harness]\nretry_temperature = 3.5\n", path).unwrap_err();
        assert!(
            format!("{err:#}").contains(
                "/p/longrun.toml: [harness] retry_temperature = 3.5 is out of range; use a value from 0 to 2"
            ),
            "{err:#}"
        );
        let ok = Config::parse("[harness]\nretry_temperature = 0.8\n", path).unwrap();
        assert_eq!(ok.harness.retry_temperature, Some(0.8));
    }
}
