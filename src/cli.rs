//! Command-line definitions (clap). Parsing only: no I/O here.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use crate::sandbox::SandboxCmd;

#[derive(Debug, Parser)]
#[command(
    name = "longrun",
    version,
    about = "Build software overnight with a coding agent, safely",
    long_about = "Build software overnight with a coding agent, safely.\n\n\
        `longrun init SPEC` turns a spec into a project with a feature list; \
        `longrun continue` then runs fresh, kernel-confined worker sessions, one feature each, \
        verifies every session independently and records it on main's first-parent history."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// More log output on stderr (-v info, -vv debug). RUST_LOG is honoured too.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Colour: auto (on a terminal, unless NO_COLOR), always or never.
    #[arg(long, value_name = "WHEN", default_value = "auto", value_parser = ["auto", "always", "never"], global = true)]
    pub color: String,
}

impl Global {
    /// Whether `stream` gets colour, as `--color` and NO_COLOR say.
    pub fn colour_on(&self, terminal: bool) -> bool {
        match self.color.as_str() {
            "always" => true,
            "never" => false,
            _ => terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
        }
    }
}

const SANDBOX_ABOUT: &str =
    "Run a command under exactly the confinement a session gets, with DIR writable";
const SANDBOX_LONG_ABOUT: &str = "Run a command under exactly the confinement a session gets, \
    with DIR writable.\n\n\
    Prints nothing of its own when all goes well and exits with the command's status.";

impl Cli {
    /// Parse the command line. `sandbox` and the hidden `__exec` start every
    /// confined command, so they are parsed without building the whole
    /// command line first (clap builds every subcommand's arguments up
    /// front: a third of a millisecond on each start).
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        match args.get(1).and_then(|a| a.to_str()) {
            Some(EXEC) => exec_args(&args).unwrap_or_else(Cli::parse),
            Some("sandbox") => sandbox_args(args),
            _ => Cli::parse(),
        }
    }
}

const EXEC: &str = "__exec";

/// `__exec --spec SPEC -- CMD...`, exactly as the orchestrator writes it.
fn exec_args(args: &[std::ffi::OsString]) -> Option<Cli> {
    let strings: Vec<&str> = args.iter().map(|a| a.to_str()).collect::<Option<_>>()?;
    match strings.as_slice() {
        [_, _, "--spec", spec, "--", argv @ ..] if !argv.is_empty() => Some(Cli {
            global: Global {
                verbose: 0,
                color: "never".into(),
            },
            command: Command::Exec {
                spec: spec.to_string(),
                argv: argv.iter().map(|a| a.to_string()).collect(),
            },
        }),
        _ => None,
    }
}

/// The command line `longrun sandbox` alone needs.
fn sandbox_command() -> clap::Command {
    let sandbox = clap::Command::new("sandbox")
        .about(SANDBOX_ABOUT)
        .long_about(SANDBOX_LONG_ABOUT);
    Global::augment_args(
        clap::Command::new("longrun")
            .bin_name("longrun")
            .version(env!("CARGO_PKG_VERSION")),
    )
    .subcommand(SandboxCmd::augment_args(sandbox))
}

fn sandbox_args(args: Vec<std::ffi::OsString>) -> Cli {
    use clap::FromArgMatches;
    let parsed = sandbox_command().try_get_matches_from(args).and_then(|m| {
        let global = Global::from_arg_matches(&m)?;
        // argv[1] is `sandbox`, so a match is its subcommand's.
        let sub = m.subcommand_matches("sandbox").unwrap_or(&m);
        Ok(Cli {
            global,
            command: Command::Sandbox(SandboxCmd::from_arg_matches(sub)?),
        })
    });
    parsed.unwrap_or_else(|e| e.exit())
}

fn parse_max_wait(text: &str) -> Result<std::time::Duration, String> {
    crate::trusted::parse_duration(text)
}

/// The project directory, shared by every command that works on a project.
#[derive(Debug, Args, Clone)]
pub struct DirArg {
    /// The project directory.
    #[arg(long, default_value = ".", value_name = "DIR")]
    pub dir: PathBuf,
}

/// `longrun features` without an action lists them.
#[derive(Debug, Subcommand)]
pub enum FeaturesAction {
    /// Add a feature (passes: false) whose check must fail on main as it is now.
    Add {
        /// Its id: 1 to 64 of A-Z a-z 0-9 . _ -
        #[arg(long)]
        id: String,
        /// What the feature is, in a sentence.
        #[arg(long)]
        description: String,
        /// A shell command that passes only when the feature works.
        #[arg(long, value_name = "CMD")]
        check: String,
        #[command(flatten)]
        dir: DirArg,
    },
    /// Set a passing feature back to failing, so that `continue` works on it again.
    Reopen {
        /// The feature id, as in features.json.
        id: String,
        /// Why it is reopened (a Longrun-Reason trailer).
        #[arg(short, long, value_name = "WHY")]
        message: Option<String>,
        #[command(flatten)]
        dir: DirArg,
    },
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a project from a spec: commit SPEC.md and longrun.toml, then run the initializer session.
    Init {
        /// The spec, a Markdown file describing what to build.
        spec: PathBuf,
        #[command(flatten)]
        dir: DirArg,
        /// The model, as PROVIDER:NAME: openai:gpt-4o, anthropic:claude-sonnet-4-5, ollama:llama3.2, scripted:model.json.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The model of one role (initializer, worker, subagent, reviewer), as ROLE=PROVIDER:NAME; repeatable; over --model.
        #[arg(long = "model-for", value_name = "ROLE=MODEL")]
        model_for: Vec<String>,
        /// The provider's base URL (OpenRouter, vLLM, llama.cpp, LM Studio); written to longrun.toml.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The sandbox profile: default, loopback, strict, or a profile file; written to longrun.toml.
        #[arg(long, value_name = "NAME|PATH")]
        profile: Option<String>,
        /// Start from this feature list instead of writing one: a longrun features.json, an Anthropic quickstart feature_list.json or a ralph prd.json.
        #[arg(long, value_name = "FILE")]
        features: Option<PathBuf>,
        /// No live progress display: one plain line per event (the default when stdout is not a terminal).
        #[arg(long, short, conflicts_with = "json")]
        quiet: bool,
        /// Print one JSON object per event, one a line, for scripts.
        #[arg(long)]
        json: bool,
        /// Redo an init whose initializer was never accepted, with these flags (as `init` again does).
        #[arg(long)]
        force: bool,
        /// How long to wait for a provider that stays unavailable before giving up (exit 75): 90, 30m, 4h.
        #[arg(long, value_name = "DURATION", default_value = "6h", value_parser = parse_max_wait)]
        max_wait: std::time::Duration,
    },
    /// Run worker sessions, one feature each, verified and recorded on main.
    Continue {
        #[command(flatten)]
        dir: DirArg,
        /// How many worker sessions to run (default 1, or no limit with --until-done).
        #[arg(long, value_name = "N")]
        sessions: Option<u32>,
        /// Keep going until every feature passes or every remaining one is stuck.
        #[arg(long)]
        until_done: bool,
        /// The model, as PROVIDER:NAME; overrides LONGRUN_MODEL and longrun.toml.
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The model of one role (initializer, worker, subagent, reviewer), as ROLE=PROVIDER:NAME; repeatable; over --model.
        #[arg(long = "model-for", value_name = "ROLE=MODEL")]
        model_for: Vec<String>,
        /// The provider's base URL; overrides LONGRUN_BASE_URL and longrun.toml.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The sandbox profile for this run's sessions; overrides [sandbox] profile in longrun.toml.
        #[arg(long, value_name = "NAME|PATH")]
        profile: Option<String>,
        /// Start no new session once this run has cost USD dollars; a session that crosses it is stopped.
        #[arg(long, value_name = "USD")]
        max_cost: Option<f64>,
        /// No live progress display: one plain line per event (the default when stdout is not a terminal).
        #[arg(long, short, conflicts_with = "json")]
        quiet: bool,
        /// Print one JSON object per event, one a line, for scripts.
        #[arg(long)]
        json: bool,
        /// Start no new session once the run has lasted H hours.
        #[arg(long, value_name = "H")]
        max_hours: Option<f64>,
        /// Stop when N sessions in a row end without acceptance (default 5; 0: never).
        #[arg(long, value_name = "N")]
        max_consecutive_failures: Option<u32>,
        /// Run N sessions at once, each on its own feature in its own clone; merges go one at a time.
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
        parallel: u32,
        /// A shell command told about the run's events (event JSON on stdin, $LONGRUN_SUMMARY); overrides [notify] command.
        #[arg(long, value_name = "CMD")]
        notify: Option<String>,
        /// How long to wait for a provider that stays unavailable before giving up (exit 75): 90, 30m, 4h.
        #[arg(long, value_name = "DURATION", default_value = "6h", value_parser = parse_max_wait)]
        max_wait: std::time::Duration,
        /// Stash uncommitted changes to tracked files (git stash) instead of refusing to start.
        #[arg(long)]
        stash: bool,
    },
    /// Ask a running `continue` to stop after its current session; exits 1 when no run is going.
    Stop {
        #[command(flatten)]
        dir: DirArg,
    },
    /// Clear a feature's failed attempts so that `continue` tries it again; a passing feature is reopened.
    Retry {
        /// The feature id, as in features.json.
        feature: String,
        #[command(flatten)]
        dir: DirArg,
    },
    /// Free disk: prune old sessions' directories and work refs, then repack.
    #[command(
        long_about = "Free disk: prune old sessions' directories and work refs, then repack.\n\n\
        Every session recorded on main but the newest --keep loses its directory under \
        .longrun/sessions/ (its transcript is kept unless --transcripts) and its work ref \
        refs/longrun/sessions/NNNN; git's objects are then repacked into one pack and what no ref \
        reaches any more is dropped. main's history (every verdict commit, all accepted work) is \
        never touched, nor a session without a verdict. It does not run beside `continue`."
    )]
    Gc {
        #[command(flatten)]
        dir: DirArg,
        /// Keep the newest N sessions whatever their age.
        #[arg(long, value_name = "N", default_value_t = 20)]
        keep: u32,
        /// Prune only sessions recorded more than DAYS days ago.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<f64>,
        /// Remove the pruned sessions' transcripts too (`longrun show` then has nothing to show).
        #[arg(long)]
        transcripts: bool,
    },
    /// List the features (id, passes, attempts, stuck, check); add one or reopen one with a commit on main.
    Features {
        #[command(subcommand)]
        action: Option<FeaturesAction>,
        #[command(flatten)]
        dir: DirArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Record the contract files edited in the project's work tree (features.json, SPEC.md, frozen and protected files) as a commit on main.
    #[command(
        long_about = "Record the contract files edited in the project's work tree (features.json, \
        SPEC.md, the frozen acceptance tests and the protected files) as one commit on main, \
        marked `Longrun-Role: human` with the reason given.\n\n\
        The change is validated first: features.json must parse, its ids be unique and safe, \
        every feature have a check, and the check of every feature added must fail on the new \
        tree (run confined, as verification runs it). Refused while a run is going."
    )]
    Amend {
        /// Why the contract changes (a Longrun-Reason trailer).
        #[arg(short, long, value_name = "WHY")]
        message: String,
        #[command(flatten)]
        dir: DirArg,
    },
    /// Features passing, attempts, verdicts, the sessions in progress, the next feature, tokens.
    Status {
        #[command(flatten)]
        dir: DirArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Never cut descriptions to the terminal's width.
        #[arg(long, short)]
        wide: bool,
    },
    /// One row per session, read from the trailers on main's first-parent history.
    Log {
        #[command(flatten)]
        dir: DirArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Never cut reasons to the terminal's width.
        #[arg(long, short)]
        wide: bool,
    },
    /// One session from its transcript: turns, tool calls, results, checks and the verdict.
    Show {
        /// The session number as `longrun log` lists it, `last`, or -N for the Nth from the last (-1 is the last).
        #[arg(allow_hyphen_values = true)]
        session: String,
        #[command(flatten)]
        dir: DirArg,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write one self-contained HTML report: features, charts, verdicts, stuck features.
    Report {
        #[command(flatten)]
        dir: DirArg,
        /// Where to write it (default DIR/.longrun/report.html).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Print a shell completion script (for example: longrun completions bash > ~/.local/share/bash-completion/completions/longrun).
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print a man page (roff): `longrun man > longrun.1`, `longrun man continue > longrun-continue.1`.
    Man {
        /// The subcommand whose page to print (default: the whole of longrun).
        command: Option<String>,
        /// Write every page (longrun.1, longrun-init.1, ...) into DIR instead.
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        out: Option<PathBuf>,
    },
    /// Build a small bundled project with the bundled scripted model: no key, no network.
    Demo {
        /// Where to build it (default: a new directory under the system temp dir).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// The sandbox profile for its sessions: default, loopback, strict, or a profile file.
        #[arg(long, value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    #[command(about = SANDBOX_ABOUT, long_about = SANDBOX_LONG_ABOUT)]
    Sandbox(SandboxCmd),
    /// What confinement this machine enforces; exits 0 when sessions can run under the default profile.
    Doctor,
    /// Print the permission verdict on a bash command and the rule that decided it; exits 0 allow, 1 ask, 2 deny.
    #[command(name = "check-command")]
    CheckCommand {
        /// The command line, as a session's bash tool would receive it.
        command: String,
        #[command(flatten)]
        dir: DirArg,
    },
    /// The session worker (started by the orchestrator).
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(long)]
        config: PathBuf,
    },
    /// Export a session's work (started confined by the orchestrator after the worker).
    #[command(name = "__export", hide = true)]
    Export {
        /// The session's sandbox spec, as JSON.
        #[arg(long)]
        spec: String,
        /// The commit the session started from.
        #[arg(long)]
        base: String,
        /// Bytes of pack the orchestrator keeps at most.
        #[arg(long)]
        max_bytes: u64,
        /// Uncommitted files larger than this are left out of the WIP commit.
        #[arg(long)]
        max_file_bytes: u64,
        /// Stdin holds the paths the session changed, each ended by a NUL:
        /// only they (and what the index holds otherwise than the base) are staged.
        #[arg(long)]
        changed_on_stdin: bool,
    },
    /// Confine this process as SPEC says, then exec the command.
    #[command(name = "__exec", hide = true)]
    Exec {
        #[arg(long)]
        spec: String,
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn sandbox_alone_is_the_same_command_line_as_in_the_whole_cli() {
        let mut whole = Cli::command();
        whole.build();
        let mut whole = whole
            .find_subcommand("sandbox")
            .cloned()
            .unwrap_or_else(|| panic!("no sandbox subcommand"));
        let mut alone = sandbox_command();
        alone.build();
        let mut alone = alone
            .find_subcommand("sandbox")
            .cloned()
            .unwrap_or_else(|| panic!("no sandbox subcommand"));
        assert_eq!(
            alone.render_long_help().to_string(),
            whole.render_long_help().to_string()
        );
    }

    #[test]
    fn exec_is_parsed_exactly_as_the_orchestrator_writes_it() {
        let args = |a: &[&str]| a.iter().map(std::ffi::OsString::from).collect::<Vec<_>>();
        let cli = exec_args(&args(&[
            "longrun", "__exec", "--spec", "{}", "--", "true", "x",
        ]));
        match cli.map(|c| c.command) {
            Some(Command::Exec { spec, argv }) => {
                assert_eq!(spec, "{}");
                assert_eq!(argv, ["true", "x"]);
            }
            other => panic!("{other:?}"),
        }
        // Anything else goes to clap, which explains what is wrong.
        assert!(exec_args(&args(&["longrun", "__exec", "--spec", "{}", "--"])).is_none());
        assert!(exec_args(&args(&["longrun", "__exec", "--", "true"])).is_none());
    }
}
