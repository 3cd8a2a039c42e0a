//! Judging what a command line runs: glob rules over each simple command,
//! and the built-in checks on the paths commands remove or write.
//!
//! Glob rules come from longrun.toml first, then the built-in defaults; in
//! each set deny patterns are tried before ask, and ask before allow. The
//! path checks (rm, dd, writing commands, redirections) always apply, so no
//! allow rule makes `rm -rf /` pass.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use super::decision::{Decision, Permission};
use super::shell::{normalize, Arg, Invocation, Unit};

/// Where a rule comes from, as shown in a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    BuiltIn,
    Project,
}

/// One glob rule.
pub struct Rule {
    source: Source,
    tool: &'static str,
    verdict: Permission,
    pattern: String,
    reason: String,
    globs: Vec<Glob>,
}

impl Rule {
    /// A rule on bash commands (`*` crosses `/`; `X *` also matches `X`) or on paths.
    pub fn new(
        source: Source,
        tool: &'static str,
        verdict: Permission,
        pattern: &str,
        reason: &str,
    ) -> Result<Rule, globset::Error> {
        let is_bash = tool == "bash";
        let mut texts = vec![pattern.to_string()];
        if let Some(bare) = pattern.strip_suffix(" *").filter(|_| is_bash) {
            texts.push(bare.to_string());
        }
        let globs = texts
            .iter()
            .map(|g| {
                GlobBuilder::new(g)
                    .literal_separator(!is_bash)
                    .backslash_escape(true)
                    .build()
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Rule {
            source,
            tool,
            verdict,
            pattern: pattern.to_string(),
            reason: reason.to_string(),
            globs,
        })
    }

    /// How the rule is named in a decision: `built-in deny bash "curl *"`.
    fn describe(&self) -> String {
        let source = match self.source {
            Source::BuiltIn => "built-in",
            Source::Project => "longrun.toml",
        };
        format!(
            "{source} {} {} \"{}\"",
            self.verdict, self.tool, self.pattern
        )
    }

    fn decide(&self, subject: &str) -> Decision {
        Decision {
            verdict: self.verdict,
            rule: self.describe(),
            reason: format!("{}: `{subject}`", self.reason),
        }
    }
}

/// Ordered rules: the first that matches decides. All globs are matched at
/// once through one set, so judging stays cheap with hundreds of rules.
pub struct RuleSet {
    rules: Vec<Rule>,
    set: GlobSet,
    /// For each glob of `set`, the rule it belongs to.
    owner: Vec<usize>,
}

impl Default for RuleSet {
    fn default() -> Self {
        RuleSet::of(Vec::new())
    }
}

impl RuleSet {
    /// Deny rules first, then ask, then allow; in the given order within each.
    pub fn of(mut rules: Vec<Rule>) -> RuleSet {
        rules.sort_by_key(|r| std::cmp::Reverse(r.verdict));
        let mut builder = GlobSetBuilder::new();
        let mut owner = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            for g in &rule.globs {
                builder.add(g.clone());
                owner.push(i);
            }
        }
        // Each glob compiled alone already, so the set builds; an empty set is the fallback.
        let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
        RuleSet { rules, set, owner }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    pub fn first_match(&self, text: &str) -> Option<&Rule> {
        let first = self
            .set
            .matches(text)
            .into_iter()
            .map(|g| self.owner[g])
            .min()?;
        self.rules.get(first)
    }
}

/// The glob rules of one tool: the project's over the built-in ones.
pub struct Layers<'a> {
    pub project: &'a RuleSet,
    pub defaults: &'a RuleSet,
}

impl Layers<'_> {
    /// The decision for `subject`; `tool` names the fallback rule.
    pub fn judge(&self, tool: &str, subject: &str) -> Decision {
        match self
            .project
            .first_match(subject)
            .or_else(|| self.defaults.first_match(subject))
        {
            Some(rule) => rule.decide(subject),
            None => Decision {
                verdict: Permission::Ask,
                rule: format!("built-in ask {tool}: no rule matches"),
                reason: format!("`{subject}` is not on the allowed list"),
            },
        }
    }
}

/// The decision for one unit of a command line.
pub fn judge_unit(unit: &Unit, bash: &Layers<'_>, workspace: &Path) -> Decision {
    match unit {
        Unit::Run(inv) => judge_invocation(inv, bash, workspace),
        Unit::Write { target, cwd } => judge_redirect(target, cwd.as_deref(), workspace),
        Unit::Unknown(what) => Decision {
            verdict: Permission::Ask,
            rule: "built-in ask bash: known only at run time".into(),
            reason: what.clone(),
        },
        Unit::Unparseable(what) => Decision {
            verdict: Permission::Ask,
            rule: "built-in ask bash: unparseable command".into(),
            reason: what.clone(),
        },
    }
}

fn judge_invocation(inv: &Invocation, bash: &Layers<'_>, workspace: &Path) -> Decision {
    let line = command_line(&inv.words);
    let shown = shown_line(&inv.words);
    let mut glob = bash.judge("bash", &line);
    glob.reason = glob
        .reason
        .replace(&format!("`{line}`"), &format!("`{shown}`"));
    let mut decisions = vec![glob];
    decisions.extend(path_checks(inv, workspace, &shown));
    strictest(decisions).unwrap_or_else(|| bash.judge("bash", &line))
}

/// The words as a reader should see them: quoted where the shell would need it,
/// so `echo "; rm -rf /"` does not read as two commands.
fn shown_line(words: &[Arg]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "_-./=:,+@%^*~".contains(c);
    words
        .iter()
        .map(|w| match w {
            Arg::Static(t) if t.is_empty() => "''".to_string(),
            Arg::Static(t) if !t.chars().all(safe) => format!("'{}'", t.replace('\'', "'\\''")),
            other => other.text().to_string(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The words as one line for glob rules; git's `-C DIR` and `--no-pager` are left out
/// so that `git -C sub push` meets the rule for `git push`.
fn command_line(words: &[Arg]) -> String {
    let mut texts: Vec<&str> = words.iter().map(Arg::text).collect();
    if texts.first() == Some(&"git") {
        let i = 1;
        while i < texts.len() {
            match texts[i] {
                "-C" if i + 1 < texts.len() => {
                    texts.drain(i..i + 2);
                }
                "--no-pager" | "--paginate" | "-P" => {
                    texts.remove(i);
                }
                _ => break,
            }
        }
    }
    texts.join(" ")
}

/// The first of the strictest decisions.
pub fn strictest(decisions: impl IntoIterator<Item = Decision>) -> Option<Decision> {
    decisions.into_iter().fold(None, |best, d| match best {
        Some(b) if b.verdict >= d.verdict => Some(b),
        _ => Some(d),
    })
}

/// Where a path argument points.
#[derive(Debug, PartialEq)]
enum Place {
    Inside(PathBuf),
    Root,
    Home,
    Outside(PathBuf),
    /// /dev/null, /dev/stdout and the like: writing there harms nothing.
    Sink,
    Device(PathBuf),
    Unknown,
}

fn place(arg: &Arg, cwd: Option<&Path>, workspace: &Path) -> Place {
    let Arg::Static(text) = arg else {
        return Place::Unknown;
    };
    if text == "~" || text.starts_with('~') {
        return Place::Home;
    }
    let joined = if text.starts_with('/') {
        PathBuf::from(text)
    } else {
        match cwd {
            Some(cwd) => cwd.join(text),
            None => return Place::Unknown,
        }
    };
    let Some(path) = normalize(&joined) else {
        return Place::Root;
    };
    classify(path, workspace)
}

fn classify(path: PathBuf, workspace: &Path) -> Place {
    const SINKS: [&str; 5] = [
        "/dev/null",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/tty",
        "/dev/zero",
    ];
    if path == Path::new("/") || is_glob_at_root(&path) {
        return Place::Root;
    }
    if let Ok(rel) = path.strip_prefix(workspace) {
        return Place::Inside(rel.to_path_buf());
    }
    if SINKS.iter().any(|s| path == Path::new(s)) || path.starts_with("/dev/fd") {
        return Place::Sink;
    }
    if path.starts_with("/dev") {
        return Place::Device(path);
    }
    Place::Outside(path)
}

/// `/*` and the like remove everything at the root.
fn is_glob_at_root(path: &Path) -> bool {
    path.parent() == Some(Path::new("/"))
        && path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.contains(['*', '?', '[']))
}

fn in_git_hooks(place: &Place) -> bool {
    matches!(place, Place::Inside(rel) if rel.starts_with(".git/hooks"))
}

fn deny(rule: &str, reason: String) -> Decision {
    Decision {
        verdict: Permission::Deny,
        rule: format!("built-in deny bash: {rule}"),
        reason,
    }
}

fn ask(rule: &str, reason: String) -> Decision {
    Decision {
        verdict: Permission::Ask,
        rule: format!("built-in ask bash: {rule}"),
        reason,
    }
}

/// The words that are not options (everything after `--` counts).
fn operands(args: &[Arg]) -> Vec<&Arg> {
    let mut out = Vec::new();
    let mut options_done = false;
    for a in args {
        let t = a.text();
        if !options_done && t == "--" {
            options_done = true;
        } else if options_done || !t.starts_with('-') || t == "-" {
            out.push(a);
        }
    }
    out
}

/// Checks on the paths a command removes or writes.
fn path_checks(inv: &Invocation, workspace: &Path, line: &str) -> Vec<Decision> {
    let Some(name) = inv.words.first().and_then(Arg::known) else {
        return Vec::new();
    };
    let args = &inv.words[1..];
    let cwd = inv.cwd.as_deref();
    match name {
        "rm" | "rmdir" | "unlink" | "shred" => {
            removal_checks(args, cwd, workspace, line, inv.stdin_args)
        }
        "dd" => dd_checks(args, cwd, workspace, line),
        // mv also removes its sources.
        "mv" => operands(args)
            .into_iter()
            .filter_map(|a| write_check(a, cwd, workspace, line))
            .collect(),
        "sed" | "perl" if edits_in_place(args) => operands(args)
            .into_iter()
            .skip(1)
            .filter_map(|a| write_check(a, cwd, workspace, line))
            .collect(),
        "cp" | "install" | "ln" => {
            let dest = target_dir_option(args).or_else(|| operands(args).last().copied());
            dest.into_iter()
                .filter_map(|d| write_check(d, cwd, workspace, line))
                .collect()
        }
        "touch" | "mkdir" | "tee" | "truncate" => operands(args)
            .into_iter()
            .filter_map(|a| write_check(a, cwd, workspace, line))
            .collect(),
        "chmod" | "chown" | "chgrp" => operands(args)
            .into_iter()
            .skip(1)
            .filter_map(|a| write_check(a, cwd, workspace, line))
            .collect(),
        _ => Vec::new(),
    }
}

/// `sed -i` / `perl -i` rewrite the files they are given.
fn edits_in_place(args: &[Arg]) -> bool {
    args.iter().any(|a| {
        let t = a.text();
        t.starts_with("-i") || t == "--in-place" || (t.starts_with("-p") && t.contains('i'))
    })
}

/// `-t DIR` / `--target-directory=DIR` of cp, mv, install, ln.
fn target_dir_option(args: &[Arg]) -> Option<&Arg> {
    let i = args
        .iter()
        .position(|a| a.text() == "-t" || a.text() == "--target-directory")?;
    args.get(i + 1)
}

fn removal_checks(
    args: &[Arg],
    cwd: Option<&Path>,
    workspace: &Path,
    line: &str,
    stdin_args: bool,
) -> Vec<Decision> {
    let targets = operands(args);
    let mut out = Vec::new();
    if stdin_args {
        out.push(ask(
            "removal of paths read from stdin",
            format!("what `{line}` removes is known only at run time"),
        ));
    }
    for t in targets {
        let d = match place(t, cwd, workspace) {
            Place::Root => deny(
                "rm of /",
                format!("removes the root of the file system: `{line}`"),
            ),
            Place::Home => deny(
                "rm of ~",
                format!("removes in the home directory: `{line}`"),
            ),
            Place::Outside(_) | Place::Device(_) | Place::Sink => deny(
                "rm outside the workspace",
                format!("removes `{}`, outside the workspace: `{line}`", t.text()),
            ),
            p if in_git_hooks(&p) => deny(
                "writes to .git/hooks",
                format!("changes git hooks: `{line}`"),
            ),
            Place::Inside(_) => continue,
            Place::Unknown => ask(
                "removal of a path known only at run time",
                format!("`{}` is known only at run time: `{line}`", t.text()),
            ),
        };
        out.push(d);
    }
    out
}

fn dd_checks(args: &[Arg], cwd: Option<&Path>, workspace: &Path, line: &str) -> Vec<Decision> {
    args.iter()
        .filter_map(|a| {
            let target = a.text().strip_prefix("of=")?;
            let arg = match a {
                Arg::Static(_) => Arg::Static(target.to_string()),
                Arg::Dynamic(_) => Arg::Dynamic(target.to_string()),
            };
            match place(&arg, cwd, workspace) {
                Place::Device(_) | Place::Root => Some(deny(
                    "dd to a device",
                    format!("writes to a device: `{line}`"),
                )),
                _ => write_check(&arg, cwd, workspace, line),
            }
        })
        .collect()
}

/// A command writing `target`: outside the workspace or into .git/hooks is denied.
fn write_check(target: &Arg, cwd: Option<&Path>, workspace: &Path, line: &str) -> Option<Decision> {
    match place(target, cwd, workspace) {
        Place::Root | Place::Home | Place::Outside(_) | Place::Device(_) => Some(deny(
            "writes outside the workspace",
            format!(
                "writes `{}`, outside the workspace: `{line}`",
                target.text()
            ),
        )),
        p if in_git_hooks(&p) => Some(deny(
            "writes to .git/hooks",
            format!("changes git hooks: `{line}`"),
        )),
        _ => None,
    }
}

fn judge_redirect(target: &Arg, cwd: Option<&Path>, workspace: &Path) -> Decision {
    let shown = format!("> {}", target.text());
    match place(target, cwd, workspace) {
        Place::Sink => Decision {
            verdict: Permission::Allow,
            rule: "built-in allow bash: redirection to a sink".into(),
            reason: shown,
        },
        Place::Inside(rel) if rel.starts_with(".git/hooks") => deny(
            "writes to .git/hooks",
            format!("changes git hooks: `{shown}`"),
        ),
        Place::Inside(_) => Decision {
            verdict: Permission::Allow,
            rule: "built-in allow bash: redirection inside the workspace".into(),
            reason: shown,
        },
        Place::Device(_) => deny(
            "redirection to a device",
            format!("writes to a device: `{shown}`"),
        ),
        Place::Root | Place::Home | Place::Outside(_) => deny(
            "redirection outside the workspace",
            format!("writes `{}`, outside the workspace", target.text()),
        ),
        Place::Unknown => ask(
            "redirection to a path known only at run time",
            format!("`{shown}` is known only at run time"),
        ),
    }
}

/// Where a write_file / edit_file path lands, relative to the workspace; `None` outside it.
pub fn relative_path(raw: &str, workspace: &Path) -> Option<String> {
    let joined = if raw.starts_with('/') {
        PathBuf::from(raw)
    } else {
        workspace.join(raw)
    };
    let path = normalize(&joined)?;
    let rel = path.strip_prefix(workspace).ok()?;
    Some(rel.to_string_lossy().into_owned())
}
