//! Shell completions and the man page, generated from the clap definitions so
//! they never drift from the real flags.

use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(
        shell,
        &mut without_hidden(Cli::command()),
        "longrun",
        &mut out,
    );
    out
}

/// The command tree less its hidden subcommands (the worker entry points),
/// which clap_complete would otherwise offer.
fn without_hidden(cmd: clap::Command) -> clap::Command {
    let visible: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    clap::Command::new("longrun")
        .version(env!("CARGO_PKG_VERSION"))
        .args(cmd.get_arguments().cloned())
        .subcommands(visible)
}

/// The man page of longrun, or of one of its subcommands, in roff.
pub fn man_page(command: Option<&str>) -> anyhow::Result<Vec<u8>> {
    let top = without_hidden(Cli::command());
    let Some(name) = command else {
        return Ok(render_page(top, None));
    };
    let names: Vec<String> = top
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    match top.find_subcommand(name) {
        Some(sub) => Ok(render_page(sub.clone(), Some(name))),
        None => Err(crate::error::bad_input(format!(
            "there is no subcommand `{name}`; man pages exist for: {}",
            names.join(", ")
        ))),
    }
}

/// Every page, as `longrun.1` and `longrun-COMMAND.1` in `dir`; returns their names.
pub fn write_man_pages(dir: &std::path::Path) -> anyhow::Result<Vec<String>> {
    std::fs::create_dir_all(dir)?;
    let top = without_hidden(Cli::command());
    let mut names = vec![None];
    names.extend(
        top.get_subcommands()
            .map(|s| Some(s.get_name().to_string())),
    );
    let mut written = Vec::new();
    for name in names {
        let file = match &name {
            Some(n) => format!("longrun-{n}.1"),
            None => "longrun.1".to_string(),
        };
        std::fs::write(dir.join(&file), man_page(name.as_deref())?)?;
        written.push(file);
    }
    Ok(written)
}

fn render_page(cmd: clap::Command, sub: Option<&str>) -> Vec<u8> {
    let title = match sub {
        Some(n) => format!("longrun-{n}"),
        None => "longrun".to_string(),
    };
    let cmd = match sub {
        Some(n) => cmd
            .display_name(format!("longrun-{n}"))
            .bin_name(format!("longrun {n}")),
        None => cmd.bin_name("longrun"),
    };
    let man = clap_mangen::Man::new(cmd.clone())
        .title(title.to_uppercase())
        .source(format!("longrun {}", env!("CARGO_PKG_VERSION")));
    let mut out = Vec::new();
    // Rendering into a Vec cannot fail on I/O.
    let _ = man.render_title(&mut out);
    let _ = man.render_name_section(&mut out);
    let _ = man.render_synopsis_section(&mut out);
    let _ = man.render_description_section(&mut out);
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        let _ = man.render_options_section(&mut out);
    }
    if sub.is_none() {
        let _ = man.render_subcommands_section(&mut out);
    }
    out.extend_from_slice(sections(sub).as_bytes());
    if sub.is_none() {
        let _ = man.render_version_section(&mut out);
    }
    out
}

/// EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO, in roff.
fn sections(sub: Option<&str>) -> String {
    let mut roff = String::from(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in exit_statuses(sub) {
        roff.push_str(&format!(".TP\n\\fB{code}\\fR\n{}\n", escape(meaning)));
    }
    let env = environment(sub);
    if !env.is_empty() {
        roff.push_str(".SH ENVIRONMENT\n");
        for (name, meaning) in env {
            roff.push_str(&format!(".TP\n\\fB{name}\\fR\n{}\n", escape(meaning)));
        }
    }
    let files = files(sub);
    if !files.is_empty() {
        roff.push_str(".SH FILES\n");
        for (path, meaning) in files {
            roff.push_str(&format!(
                ".TP\n\\fI{}\\fR\n{}\n",
                escape(path),
                escape(meaning)
            ));
        }
    }
    roff.push_str(".SH \"SEE ALSO\"\n");
    let see: Vec<String> = match sub {
        Some(_) => vec!["\\fBlongrun\\fR(1)".to_string()],
        None => Cli::command()
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("\\fBlongrun\\-{}\\fR(1)", s.get_name().replace('-', "\\-")))
            .collect(),
    };
    roff.push_str(&see.join(", "));
    roff.push('\n');
    roff
}

/// roff text: a leading dot or quote would start a request; backslashes escape.
fn escape(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    match text.chars().next() {
        Some('.') | Some('\'') => format!("\\&{text}"),
        _ => text,
    }
}

const RUN_STATUSES: &[(&str, &str)] = &[
    ("0", "done as asked"),
    ("1", "a run-level failure: the provider is unusable, confinement could not be set up, the initializer was not accepted"),
    ("2", "bad input or usage: a bad spec, a broken longrun.toml, an unknown model string, a missing key, not a longrun project, another run holds the lock"),
    ("3", "stopped early: everything left is stuck, or a limit ran out (--max-hours, --max-cost, --max-consecutive-failures, longrun stop)"),
    ("130", "interrupted by Ctrl-C or SIGTERM; longrun continue picks up from there"),
];

const READ_STATUSES: &[(&str, &str)] = &[
    ("0", "printed"),
    (
        "1",
        "an unexpected error (an unreadable repository, a write error)",
    ),
    (
        "2",
        "bad input: not a longrun project, an unknown session or feature",
    ),
];

fn exit_statuses(sub: Option<&str>) -> Vec<(&'static str, &'static str)> {
    match sub {
        None | Some("continue") | Some("demo") => RUN_STATUSES.to_vec(),
        Some("init") => vec![
            ("0", "the initializer session was accepted"),
            ("1", "the initializer session was not accepted (its reasons are printed), or a run-level failure"),
            ("2", "bad input: the spec, the feature list, --profile, the model, a directory that already holds a project or has uncommitted changes"),
            ("130", "interrupted; longrun continue runs the initializer again"),
        ],
        Some("stop") => vec![
            ("0", "a running continue was asked to stop after its current session"),
            ("1", "no run is going in the project: nothing was asked"),
            ("2", "not a longrun project"),
        ],
        Some("check-command") => vec![
            ("0", "allow"),
            ("1", "ask (what a session does then is printed as `in a session`)"),
            ("2", "deny, or a longrun.toml that cannot be read (the error is printed on stderr)"),
        ],
        Some("doctor") => vec![
            ("0", "the default profile can be fully enforced on this machine"),
            ("1", "some layer cannot be enforced (each is named)"),
        ],
        Some("sandbox") => vec![
            ("N", "the command's own exit status"),
            ("1", "confinement could not be set up"),
            ("2", "bad usage: an unknown profile or network mode"),
        ],
        Some("completions") | Some("man") => vec![
            ("0", "printed (or written)"),
            ("1", "a write error"),
            ("2", "an unknown subcommand"),
        ],
        Some(_) => READ_STATUSES.to_vec(),
    }
}

fn environment(sub: Option<&str>) -> Vec<(&'static str, &'static str)> {
    let model = [
        ("LONGRUN_MODEL", "the model as PROVIDER:NAME, under --model and over [model] in longrun.toml"),
        ("LONGRUN_BASE_URL", "the provider's base URL, under --base-url and over longrun.toml"),
        ("LONGRUN_API_KEY", "the API key, for any provider; read by the orchestrator only, never given to a session"),
        ("OPENAI_API_KEY, ANTHROPIC_API_KEY", "the provider's own key variable, when LONGRUN_API_KEY is unset (or the variable [model] api_key_env names)"),
    ];
    let common = [
        (
            "RUST_LOG",
            "log filter for stderr and .longrun/longrun.log (as -v and -vv)",
        ),
        ("NO_COLOR", "no colour in the live display"),
    ];
    let width = [(
        "COLUMNS",
        "the width tables are cut to when stdout is not a terminal (--wide: never cut)",
    )];
    match sub {
        None => model.iter().chain(&common).chain(&width).copied().collect(),
        Some("init") | Some("continue") => model.iter().chain(&common).copied().collect(),
        Some("status") | Some("log") => width.iter().chain(&common).copied().collect(),
        Some("sandbox") | Some("doctor") => vec![(
            "HOME, XDG_CONFIG_HOME",
            "where user skills and profiles are found; a session gets its own HOME",
        )],
        Some(_) => common.to_vec(),
    }
}

fn files(sub: Option<&str>) -> Vec<(&'static str, &'static str)> {
    let project = [
        ("SPEC.md", "the spec given to init"),
        (
            "features.json",
            "the feature list, in priority order; only passes changes after init",
        ),
        (
            "longrun.toml",
            "model, sandbox profile, checks, budgets, permissions, run rules (committed)",
        ),
        (
            "init.sh",
            "idempotent setup, run before every session and every verification",
        ),
        ("progress.md", "the notes each session leaves for the next"),
    ];
    let state = [
        (".longrun/lock", "held by the running init or continue"),
        (
            ".longrun/stop",
            "made by longrun stop; the run stops after its current session",
        ),
        (".longrun/state.json", "the last session number handed out"),
        (".longrun/longrun.log", "the run's log"),
        (
            ".longrun/sessions/NNNN/transcript.jsonl",
            "every request and answer of a session, written by the orchestrator only",
        ),
        (
            ".longrun/report.html",
            "where longrun report writes by default",
        ),
    ];
    match sub {
        None | Some("init") | Some("continue") | Some("status") => {
            project.iter().chain(&state).copied().collect()
        }
        Some("stop") => vec![state[0], state[1]],
        Some("show") => vec![state[4]],
        Some("report") => vec![state[5]],
        Some("log") | Some("retry") => vec![(
            "main's first-parent history",
            "the verdict trailers every view is read from",
        )],
        Some("check-command") => vec![project[2]],
        Some("sandbox") | Some("doctor") => vec![(
            "~/.config/longrun/profiles/NAME.toml",
            "user sandbox profiles, besides the bundled default, loopback and strict",
        )],
        Some(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_has_exit_status_environment_or_files_and_points_at_pages_that_exist() {
        let top = String::from_utf8(man_page(None).unwrap()).unwrap();
        for section in [
            ".SH \"EXIT STATUS\"",
            ".SH ENVIRONMENT",
            ".SH FILES",
            ".SH \"SEE ALSO\"",
        ] {
            assert!(top.contains(section), "{section} missing");
        }
        let subs: Vec<String> = without_hidden(Cli::command())
            .get_subcommands()
            .map(|s| s.get_name().to_string())
            .collect();
        for sub in &subs {
            let page = String::from_utf8(man_page(Some(sub)).unwrap()).unwrap();
            assert!(page.contains(".SH \"EXIT STATUS\""), "{sub}");
            assert!(
                page.contains(&format!("longrun\\-{}", sub.replace('-', "\\-"))),
                "{sub}"
            );
            assert!(
                top.contains(&format!("\\fBlongrun\\-{}\\fR(1)", sub.replace('-', "\\-"))),
                "{sub}"
            );
        }
        assert!(man_page(Some("nope")).is_err());
    }
}
