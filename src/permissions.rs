//! Allow / ask / deny rules over what a tool call would do.
//!
//! A bash command is parsed (see `permissions/shell.rs`) into every simple
//! command it would run, each judged by glob rules (longrun.toml's
//! `[permissions]` over the built-in defaults) and by built-in checks on the
//! paths it removes or writes; the strictest verdict wins. write_file and
//! edit_file are judged by their path. Sessions run unattended, so `ask`
//! resolves by `[permissions] unattended`. This module decides; the tool
//! dispatcher enforces, answering a denied call with `Blocked by policy: ...`.

mod decision;
mod defaults;
mod rules;
mod shell;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use rules::{Layers, Rule, RuleSet, Source};

pub use decision::{Decision, Permission};

/// What `ask` becomes when nobody is there to answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unattended {
    #[default]
    Deny,
    Allow,
}

/// Glob patterns of one tool, by verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleLists {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub ask: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `[permissions]` in longrun.toml.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// What `ask` becomes in a session: "deny" (the default) or "allow".
    #[serde(default)]
    pub unattended: Unattended,
    /// Patterns over bash commands, e.g. `"make *"`.
    #[serde(default)]
    pub bash: RuleLists,
    /// Patterns over workspace paths, e.g. `"migrations/**"`.
    #[serde(default)]
    pub write_file: RuleLists,
    #[serde(default)]
    pub edit_file: RuleLists,
}

/// The compiled rules of a project.
pub struct Policy {
    unattended: Unattended,
    bash: (RuleSet, RuleSet),
    write_file: (RuleSet, RuleSet),
    edit_file: (RuleSet, RuleSet),
}

impl Policy {
    /// The built-in rules alone, `ask` resolving to deny.
    pub fn defaults() -> Policy {
        Policy {
            unattended: Unattended::Deny,
            bash: (RuleSet::default(), builtin_bash()),
            write_file: (RuleSet::default(), builtin_paths("write_file")),
            edit_file: (RuleSet::default(), builtin_paths("edit_file")),
        }
    }

    /// The project's rules over the built-in ones; an invalid pattern is an
    /// error naming its table and list.
    pub fn new(config: &PermissionsConfig) -> anyhow::Result<Policy> {
        let mut policy = Policy::defaults().with_unattended(config.unattended);
        policy.bash.0 = project_rules("bash", &config.bash)?;
        policy.write_file.0 = project_rules("write_file", &config.write_file)?;
        policy.edit_file.0 = project_rules("edit_file", &config.edit_file)?;
        Ok(policy)
    }

    /// Package installs (`pip install`, `npm install`, `cargo fetch`, ...)
    /// allowed: the session's network reaches the package registries.
    pub fn with_registries(mut self) -> Policy {
        self.bash.1 = bash_rules(true);
        self
    }

    pub fn with_unattended(mut self, unattended: Unattended) -> Policy {
        self.unattended = unattended;
        self
    }

    /// The verdict on a bash command run in `workspace`.
    pub fn judge_bash(&self, command: &str, workspace: &Path) -> Decision {
        let workspace = absolute(workspace);
        let layers = Layers {
            project: &self.bash.0,
            defaults: &self.bash.1,
        };
        let units = shell::analyse(command, &workspace);
        let decisions = units
            .iter()
            .map(|u| rules::judge_unit(u, &layers, &workspace));
        rules::strictest(decisions).unwrap_or_else(|| Decision {
            verdict: Permission::Allow,
            rule: "built-in allow bash: nothing to run".into(),
            reason: "the command runs nothing".into(),
        })
    }

    /// The verdict on writing `path` with `tool` (write_file or edit_file);
    /// `None` for a path outside the workspace, which the tool itself refuses.
    pub fn judge_path(&self, tool: &str, path: &str, workspace: &Path) -> Option<Decision> {
        let sets = match tool {
            "write_file" => &self.write_file,
            "edit_file" => &self.edit_file,
            _ => return None,
        };
        let rel = rules::relative_path(path, &absolute(workspace))?;
        let layers = Layers {
            project: &sets.0,
            defaults: &sets.1,
        };
        Some(layers.judge(tool, &rel))
    }

    /// The decision on a tool call, for the tools that have rules.
    pub fn judge_call(
        &self,
        tool: &str,
        args: &serde_json::Value,
        workspace: &Path,
    ) -> Option<Decision> {
        match tool {
            "bash" => Some(self.judge_bash(args.get("command")?.as_str()?, workspace)),
            "write_file" | "edit_file" => {
                self.judge_path(tool, args.get("path")?.as_str()?, workspace)
            }
            _ => None,
        }
    }

    /// The verdict in an unattended session: `ask` resolved by `[permissions] unattended`.
    pub fn effective(&self, decision: &Decision) -> Permission {
        resolve(decision.verdict, self.unattended)
    }

    /// The answer to the model when the call may not run in a session.
    pub fn blocked(&self, decision: &Decision) -> Option<String> {
        blocked_message(decision, self.unattended)
    }

    /// Like [`Policy::blocked`], with `ask` refused whatever `unattended` says.
    pub fn blocked_unless_allowed(&self, decision: &Decision) -> Option<String> {
        blocked_message(decision, Unattended::Deny)
    }
}

fn resolve(verdict: Permission, unattended: Unattended) -> Permission {
    match (verdict, unattended) {
        (Permission::Ask, Unattended::Allow) => Permission::Allow,
        (Permission::Ask, Unattended::Deny) => Permission::Deny,
        (v, _) => v,
    }
}

fn blocked_message(decision: &Decision, unattended: Unattended) -> Option<String> {
    if resolve(decision.verdict, unattended) != Permission::Deny {
        return None;
    }
    let reason = match decision.verdict {
        Permission::Ask => format!(
            "{}; it needs approval and nobody is there to give it in an unattended session; do it another way, or the project can allow it in longrun.toml [permissions]",
            decision.reason
        ),
        _ => decision.reason.clone(),
    };
    Some(format!("Blocked by policy: {} ({reason})", decision.rule))
}

/// `longrun check-command`: the verdict on `command` run in `dir` under
/// `policy` (whose rules came from `rules_from`), the rule that decided it,
/// and what it means in an unattended session, as the command prints them;
/// and the verdict for its exit status.
pub fn check_command(
    command: &str,
    dir: &Path,
    policy: &Policy,
    rules_from: &str,
) -> anyhow::Result<(String, Permission)> {
    let decision = policy.judge_bash(command, dir);
    let in_session = match (decision.verdict, policy.unattended) {
        (Permission::Ask, Unattended::Deny) => {
            "deny (ask, and [permissions] unattended = \"deny\")"
        }
        (Permission::Ask, Unattended::Allow) => {
            "allow (ask, and [permissions] unattended = \"allow\")"
        }
        (Permission::Allow, _) => "allow",
        (Permission::Deny, _) => "deny",
    };
    let text = format!(
        "verdict: {}\nrule: {}\nreason: {}\nin a session: {in_session}\nrules from: {rules_from}\n",
        decision.verdict, decision.rule, decision.reason
    );
    Ok((text, decision.verdict))
}

/// The workspace as an absolute path, symlinks resolved when it exists.
fn absolute(workspace: &Path) -> PathBuf {
    workspace
        .canonicalize()
        .or_else(|_| std::env::current_dir().map(|d| d.join(workspace)))
        .unwrap_or_else(|_| workspace.to_path_buf())
}

fn builtin_bash() -> RuleSet {
    bash_rules(false)
}

/// The built-in bash rules; with `registries`, package installs are allowed.
fn bash_rules(registries: bool) -> RuleSet {
    let installs = defaults::BASH_ALLOW_WITH_REGISTRIES;
    let deny = defaults::BASH_DENY
        .iter()
        .map(|(p, r)| (Permission::Deny, *p, *r));
    let ask = defaults::BASH_ASK
        .iter()
        .filter(|p| !(registries && installs.contains(p)))
        .map(|p| (Permission::Ask, *p, "needs approval"));
    let allow = defaults::BASH_ALLOW
        .iter()
        .map(|p| (Permission::Allow, *p, "allowed"));
    let reason = "allowed: the network reaches the package registries only";
    let installs = installs
        .iter()
        .filter(|_| registries)
        .map(|p| (Permission::Allow, *p, reason));
    builtin("bash", deny.chain(ask).chain(installs).chain(allow))
}

fn builtin_paths(tool: &'static str) -> RuleSet {
    let deny = defaults::PATH_DENY
        .iter()
        .map(|(p, r)| (Permission::Deny, *p, *r));
    let ask = defaults::PATH_ASK
        .iter()
        .map(|p| (Permission::Ask, *p, "needs approval"));
    let allow = defaults::PATH_ALLOW
        .iter()
        .map(|p| (Permission::Allow, *p, "allowed"));
    builtin(tool, deny.chain(ask).chain(allow))
}

/// Built-in patterns are tested to compile; one that did not would be left out, not fatal.
fn builtin<'a>(
    tool: &'static str,
    rules: impl Iterator<Item = (Permission, &'a str, &'a str)>,
) -> RuleSet {
    RuleSet::of(
        rules
            .filter_map(|(v, p, r)| Rule::new(Source::BuiltIn, tool, v, p, r).ok())
            .collect(),
    )
}

fn project_rules(tool: &'static str, lists: &RuleLists) -> anyhow::Result<RuleSet> {
    let mut rules = Vec::new();
    for (verdict, patterns, reason) in [
        (Permission::Deny, &lists.deny, "denied by the project"),
        (
            Permission::Ask,
            &lists.ask,
            "needs approval by the project's rules",
        ),
        (Permission::Allow, &lists.allow, "allowed by the project"),
    ] {
        for p in patterns {
            let rule = Rule::new(Source::Project, tool, verdict, p, reason).map_err(|e| {
                crate::error::bad_input(format!(
                    "longrun.toml [permissions.{tool}] {verdict}: `{p}` is not a valid glob ({e}); fix or remove it"
                ))
            })?;
            rules.push(rule);
        }
    }
    Ok(RuleSet::of(rules))
}

#[cfg(test)]
mod tests;
