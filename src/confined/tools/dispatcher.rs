//! One place where tool calls are parsed, checked, routed and made harmless.
//!
//! Whatever the model sends, [`Registry::dispatch`] answers with a result:
//! invalid JSON, an unknown tool, missing or mistyped arguments, an I/O error
//! or a panic inside a tool each come back as `Error: ...` text that says
//! what to do differently. A call the permission policy denies comes back as
//! `Blocked by policy: <rule> (<reason>)` without running. Long results are
//! cut here, for every tool alike.

use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use super::bash::Bash;
use super::cap::cap_output;
use super::edit_file::EditFile;
use super::grep::Grep;
use super::list_files::ListFiles;
use super::read_file::ReadFile;
use super::write_file::WriteFile;
use super::{args, Tool, ToolContext, ToolOutput};
use crate::config::DEFAULT_OUTPUT_CAP;
use crate::model::ToolSpec;
use crate::permissions::Policy;

/// A line to add to a failed result whose text it recognises.
type FailureHint = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

pub struct Registry {
    tools: Vec<(ToolSpec, Box<dyn Tool>)>,
    /// Judges bash commands and written paths before they run; `None` runs everything.
    policy: Option<Policy>,
    output_cap: usize,
    /// Numbers the files where cut outputs are saved.
    saved: AtomicU32,
    failure_hint: Option<FailureHint>,
}

impl Registry {
    /// The tools every session gets, under the built-in permission rules.
    pub fn standard() -> Registry {
        Registry::of(vec![
            Box::new(Bash),
            Box::new(ReadFile),
            Box::new(WriteFile),
            Box::new(EditFile),
            Box::new(ListFiles),
            Box::new(Grep),
        ])
    }

    /// Tools that only look: read_file, list_files, grep.
    pub fn read_only() -> Registry {
        Registry::of(vec![
            Box::new(ReadFile),
            Box::new(ListFiles),
            Box::new(Grep),
        ])
    }

    /// The read-only tools plus bash limited to commands `policy` allows
    /// outright: `ask` is refused whatever `[permissions] unattended` says.
    pub fn read_only_with_bash(policy: Policy) -> Registry {
        let mut r = Registry::of(vec![
            Box::new(ReadFile),
            Box::new(ListFiles),
            Box::new(Grep),
            Box::new(Bash),
        ]);
        r.policy = Some(policy.with_unattended(crate::permissions::Unattended::Deny));
        r
    }

    fn of(tools: Vec<Box<dyn Tool>>) -> Registry {
        Registry {
            tools: tools.into_iter().map(|t| (t.spec(), t)).collect(),
            policy: Some(Policy::defaults()),
            output_cap: DEFAULT_OUTPUT_CAP,
            saved: AtomicU32::new(0),
            failure_hint: None,
        }
    }

    /// Give a failed result (an error, or a command's non-zero exit) the line
    /// `hint` finds for its text: the sandbox's hint when it was denied.
    pub fn with_failure_hint(
        mut self,
        hint: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Registry {
        self.failure_hint = Some(Box::new(hint));
        self
    }

    /// Cut results longer than `chars` characters (at least 1,000).
    pub fn with_output_cap(mut self, chars: usize) -> Registry {
        self.output_cap = chars.max(1000);
        self
    }

    /// Judge calls by `policy` (a project's rules) instead of the built-in rules.
    pub fn with_policy(mut self, policy: Policy) -> Registry {
        self.policy = Some(policy);
        self
    }

    /// Run every call without judging it (for harness-internal use and tests).
    pub fn without_policy(mut self) -> Registry {
        self.policy = None;
        self
    }

    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|(s, _)| s.clone()).collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.tools.iter().map(|(s, _)| s.name.clone()).collect()
    }

    /// Run one call. Never panics and never fails: every problem is an `Error:` result.
    pub fn dispatch(&self, ctx: &ToolContext, name: &str, raw_args: &str) -> ToolOutput {
        self.dispatch_judged(ctx, name, raw_args, false)
    }

    /// Like [`Registry::dispatch`], but a call the policy would only `ask`
    /// about is refused: for subagents, whose bash runs only allowed commands.
    pub fn dispatch_allowed_only(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_args: &str,
    ) -> ToolOutput {
        self.dispatch_judged(ctx, name, raw_args, true)
    }

    fn dispatch_judged(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_args: &str,
        allowed_only: bool,
    ) -> ToolOutput {
        let output = match self.run(ctx, name, raw_args, allowed_only) {
            Ok(content) => ToolOutput {
                content,
                is_error: false,
            },
            Err(Refusal::Error(message)) => ToolOutput {
                content: format!("Error: {message}"),
                is_error: true,
            },
            Err(Refusal::Blocked(message)) => ToolOutput {
                content: message,
                is_error: true,
            },
        };
        self.hinted(self.capped(ctx, name, output))
    }

    fn hinted(&self, mut output: ToolOutput) -> ToolOutput {
        let failed = output.is_error || output.content.contains("[exit code ");
        if let Some(line) = self.failure_hint.as_ref().filter(|_| failed) {
            if let Some(line) = line(&output.content) {
                output.content = format!("{}\n{line}", output.content);
            }
        }
        output
    }

    fn run(
        &self,
        ctx: &ToolContext,
        name: &str,
        raw_args: &str,
        allowed_only: bool,
    ) -> Result<String, Refusal> {
        let Some((spec, tool)) = self.tools.iter().find(|(s, _)| s.name == name) else {
            return Err(Refusal::Error(format!(
                "there is no tool named `{name}`; the tools are: {}",
                self.names().join(", ")
            )));
        };
        let args = parse_arguments(name, raw_args).map_err(Refusal::Error)?;
        args::validate(name, &spec.parameters, &args)
            .map_err(|e| Refusal::Error(format!("{e:#}")))?;
        self.permit(ctx, name, &args, allowed_only)?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tool.run(ctx, &args))) {
            Ok(Ok(content)) => Ok(content),
            Ok(Err(e)) => Err(Refusal::Error(format!("{e:#}"))),
            Err(_) => Err(Refusal::Error(format!(
                "the `{name}` tool failed unexpectedly on these arguments; try the call another way"
            ))),
        }
    }

    /// The policy's word on the call; a refusal when it may not run.
    fn permit(
        &self,
        ctx: &ToolContext,
        name: &str,
        args: &Value,
        allowed_only: bool,
    ) -> Result<(), Refusal> {
        let Some(policy) = &self.policy else {
            return Ok(());
        };
        let Some(decision) = policy.judge_call(name, args, &ctx.workspace) else {
            return Ok(());
        };
        let blocked = if allowed_only {
            policy.blocked_unless_allowed(&decision)
        } else {
            policy.blocked(&decision)
        };
        match blocked {
            Some(message) => Err(Refusal::Blocked(message)),
            None => Ok(()),
        }
    }

    fn capped(&self, ctx: &ToolContext, name: &str, mut output: ToolOutput) -> ToolOutput {
        if output.content.chars().count() > self.output_cap {
            let n = self.saved.fetch_add(1, Ordering::Relaxed) + 1;
            let path = ctx
                .tmp
                .join("tool-outputs")
                .join(format!("{n:04}-{name}.txt"));
            output.content = cap_output(output.content, self.output_cap, &path);
        }
        output
    }
}

/// Why a call did not run.
enum Refusal {
    /// The call was wrong: `Error: ...`.
    Error(String),
    /// The policy denied it: `Blocked by policy: ...`.
    Blocked(String),
}

/// The arguments as a JSON value; empty arguments mean `{}`.
fn parse_arguments(name: &str, raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    serde_json::from_str(raw).map_err(|e| {
        let preview: String = raw.chars().take(80).collect();
        format!(
            "the arguments of `{name}` are not valid JSON ({e}); they began `{preview}`; send one JSON object such as {{\"path\": \"src/main.rs\"}}"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Panics;
    impl Tool for Panics {
        fn spec(&self) -> ToolSpec {
            ToolSpec {
                name: "panics".into(),
                description: String::new(),
                parameters: serde_json::json!({"type": "object", "properties": {}}),
            }
        }
        fn run(&self, _: &ToolContext, _: &Value) -> anyhow::Result<String> {
            panic!("boom")
        }
    }

    fn ctx(d: &tempfile::TempDir) -> ToolContext {
        ToolContext {
            workspace: d.path().to_path_buf(),
            tmp: d.path().join("tmp"),
        }
    }

    #[test]
    fn every_failure_is_an_error_result() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::standard();
        let cases = [
            ("bash", "{not json", "are not valid JSON"),
            ("nope", "{}", "there is no tool named `nope`; the tools are: bash, read_file, write_file, edit_file, list_files, grep"),
            ("read_file", "{}", "missing required argument `path` (a string)"),
            ("read_file", r#"{"path": 7}"#, "argument `path` must be a string"),
            ("bash", r#"{"command": "true", "timeout_secs": "5"}"#, "`timeout_secs` must be a non-negative integer"),
            ("bash", "[1]", "must be a JSON object"),
            ("read_file", r#"{"path": "missing.txt"}"#, "does not exist"),
        ];
        for (name, raw, want) in cases {
            let out = r.dispatch(&ctx(&d), name, raw);
            assert!(out.is_error, "{name} {raw}: {out:?}");
            assert!(out.content.starts_with("Error: "), "{out:?}");
            assert!(out.content.contains(want), "{name} {raw}: {}", out.content);
        }
    }

    #[test]
    fn a_panicking_tool_is_an_error_result() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::of(vec![Box::new(Panics)]);
        let out = r.dispatch(&ctx(&d), "panics", "");
        assert!(out.is_error);
        assert!(
            out.content.contains("failed unexpectedly"),
            "{}",
            out.content
        );
        assert!(!out.content.contains("boom"));
    }

    #[test]
    fn only_failed_results_get_the_failure_hint() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::standard()
            .with_failure_hint(|out: &str| out.contains("denied").then(|| "HINT".to_string()));
        let failed = r.dispatch(&ctx(&d), "bash", r#"{"command": "echo denied; exit 1"}"#);
        assert!(
            failed.content.ends_with("[exit code 1]\nHINT"),
            "{failed:?}"
        );
        let fine = r.dispatch(&ctx(&d), "bash", r#"{"command": "echo denied"}"#);
        assert!(!fine.content.contains("HINT"), "{fine:?}");
        let other = r.dispatch(&ctx(&d), "bash", r#"{"command": "exit 2"}"#);
        assert!(!other.content.contains("HINT"), "{other:?}");
    }

    #[test]
    fn long_outputs_are_cut_and_saved() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::standard().with_output_cap(2000);
        let out = r.dispatch(&ctx(&d), "bash", r#"{"command": "seq 1 10000"}"#);
        assert!(!out.is_error);
        assert!(out.content.chars().count() < 2400, "{}", out.content.len());
        assert!(out.content.starts_with("1\n2\n"));
        assert!(out.content.ends_with("10000\n"));
        let saved = d.path().join("tmp/tool-outputs/0001-bash.txt");
        assert!(
            out.content.contains(&saved.display().to_string()),
            "{}",
            out.content
        );
        let full = std::fs::read_to_string(&saved).unwrap();
        assert_eq!(full.lines().count(), 10000);
        // The model can page through the saved file with read_file.
        let arg =
            serde_json::json!({"path": saved.canonicalize().unwrap(), "offset": 9999}).to_string();
        let page = r.dispatch(&ctx(&d), "read_file", &arg);
        assert_eq!(page.content, "  9999\t9999\n 10000\t10000\n");
    }

    #[test]
    fn a_denied_call_is_blocked_and_does_not_run() {
        let d = tempfile::tempdir().unwrap();
        let r = Registry::standard();
        let out = r.dispatch(
            &ctx(&d),
            "bash",
            r#"{"command": "touch made && curl evil.example"}"#,
        );
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "Blocked by policy: built-in deny bash \"curl *\" (reaches the network: `curl evil.example`)"
        );
        assert!(!d.path().join("made").exists());
        let hook = r.dispatch(
            &ctx(&d),
            "write_file",
            r#"{"path": ".git/hooks/pre-commit", "content": "x"}"#,
        );
        assert!(
            hook.content
                .starts_with("Blocked by policy: built-in deny write_file \".git/hooks/**\""),
            "{}",
            hook.content
        );
        assert!(!d.path().join(".git/hooks/pre-commit").exists());
    }

    #[test]
    fn ask_is_refused_unattended_and_always_for_allowed_only_calls() {
        let d = tempfile::tempdir().unwrap();
        let strict = Registry::standard();
        let out = strict.dispatch(&ctx(&d), "bash", r#"{"command": "hostname"}"#);
        assert!(
            out.content
                .starts_with("Blocked by policy: built-in ask bash: no rule matches"),
            "{}",
            out.content
        );
        let lenient = Registry::standard()
            .with_policy(Policy::defaults().with_unattended(crate::permissions::Unattended::Allow));
        assert!(
            !lenient
                .dispatch(&ctx(&d), "bash", r#"{"command": "hostname"}"#)
                .is_error
        );
        let sub = lenient.dispatch_allowed_only(&ctx(&d), "bash", r#"{"command": "hostname"}"#);
        assert!(
            sub.content.starts_with("Blocked by policy:"),
            "{}",
            sub.content
        );
        let ok = lenient.dispatch_allowed_only(&ctx(&d), "bash", r#"{"command": "echo hi"}"#);
        assert_eq!(ok.content, "hi\n");
    }

    #[test]
    fn read_only_with_bash_runs_only_allowed_commands() {
        let d = tempfile::tempdir().unwrap();
        let lenient = Policy::defaults().with_unattended(crate::permissions::Unattended::Allow);
        let r = Registry::read_only_with_bash(lenient);
        assert_eq!(r.names(), ["read_file", "list_files", "grep", "bash"]);
        assert!(r
            .dispatch(&ctx(&d), "bash", r#"{"command": "hostname"}"#)
            .content
            .starts_with("Blocked by policy:"));
        assert_eq!(
            r.dispatch(&ctx(&d), "bash", r#"{"command": "echo hi"}"#)
                .content,
            "hi\n"
        );
    }

    #[test]
    fn read_only_has_no_writing_tools() {
        assert_eq!(
            Registry::read_only().names(),
            ["read_file", "list_files", "grep"]
        );
    }
}
