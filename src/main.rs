//! The longrun binary: parse, set up logging, dispatch, turn errors into exit codes.

use std::process::ExitCode;

use longrun::cli::{Cli, Command, FeaturesAction};
use longrun::error::{exit_code_for, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse_args();
    // The worker and the exec helper confine themselves before any thread exists,
    // so they run before the async runtime is built.
    match cli.command {
        Command::Worker { config } => {
            longrun::git::set_limits();
            return longrun::confined::run_worker(&config);
        }
        Command::Export {
            spec,
            base,
            max_bytes,
            max_file_bytes,
            changed_on_stdin,
        } => {
            let caps = longrun::confined::ExportCaps {
                max_bytes,
                max_file_bytes,
                changed_on_stdin,
            };
            return longrun::confined::run_export(&spec, &base, caps);
        }
        Command::Exec { spec, argv } => return longrun::sandbox::exec_confined(&spec, &argv),
        Command::Completions { shell } => return print_bytes(&longrun::view::completions(shell)),
        Command::Man { command, out } => return man(command.as_deref(), out.as_deref()),
        Command::Sandbox(args) => return longrun::sandbox::run_sandbox(args),
        Command::Doctor => return longrun::sandbox::doctor(),
        _ => {}
    }
    let (out_colour, err_colour) = {
        use std::io::IsTerminal;
        (
            cli.global.colour_on(std::io::stdout().is_terminal()),
            cli.global.colour_on(std::io::stderr().is_terminal()),
        )
    };
    console::set_colors_enabled(out_colour);
    console::set_colors_enabled_stderr(err_colour);
    longrun::logging::init(
        cli.global.verbose,
        project_log_dir(&cli.command),
        err_colour,
    );
    match run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => {
            eprintln!("error: {}", longrun::sanitize::text(&message(&err)));
            exit_code_for(&err)
        }
    }
}

/// What a view prints, without the control characters session-made text
/// in it (file names, output, ids) may carry.
fn safe(text: &str) -> String {
    longrun::sanitize::text(text)
}

/// The error chain as one readable line.
fn message(err: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

/// The project whose `.longrun/longrun.log` gets the log: the commands that run sessions.
fn project_log_dir(command: &Command) -> Option<&std::path::Path> {
    match command {
        Command::Init { dir, .. } | Command::Continue { dir, .. } => Some(&dir.dir),
        Command::Demo { dir, .. } => dir.as_deref(),
        _ => None,
    }
}

/// `longrun man [COMMAND]` prints a page; `--out DIR` writes them all.
fn man(command: Option<&str>, out: Option<&std::path::Path>) -> ExitCode {
    if let Some(dir) = out {
        return match longrun::view::write_man_pages(dir) {
            Ok(names) => {
                println!("wrote {} pages into {}", names.len(), dir.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {}", message(&e));
                exit_code_for(&e)
            }
        };
    }
    match longrun::view::man_page(command) {
        Ok(page) => print_bytes(&page),
        Err(e) => {
            eprintln!("error: {}", message(&e));
            exit_code_for(&e)
        }
    }
}

fn print_bytes(bytes: &[u8]) -> ExitCode {
    use std::io::Write;
    match std::io::stdout().write_all(bytes) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    longrun::git::set_limits();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(dispatch(cli.command))
}

/// `longrun features [add|reopen]`.
async fn features(
    action: Option<FeaturesAction>,
    dir: std::path::PathBuf,
    json: bool,
) -> anyhow::Result<Outcome> {
    use longrun::trusted as o;
    let said = match action {
        None => o::list_features(&dir, json)?,
        Some(FeaturesAction::Add {
            id,
            description,
            check,
            dir,
        }) => {
            let new = o::NewFeature {
                id,
                description,
                check,
            };
            format!("{}\n", o::add_feature(&dir.dir, new).await?)
        }
        Some(FeaturesAction::Reopen { id, message, dir }) => {
            format!("{}\n", o::reopen(&dir.dir, &id, message.as_deref())?)
        }
    };
    print!("{}", safe(&said));
    Ok(Outcome::Done)
}

async fn dispatch(command: Command) -> anyhow::Result<Outcome> {
    use longrun::trusted as o;
    match command {
        Command::Init {
            spec,
            dir,
            model,
            model_for,
            base_url,
            profile,
            features,
            quiet,
            json,
            force,
            max_wait,
        } => {
            o::init(o::InitArgs {
                spec,
                dir: dir.dir,
                model,
                model_for,
                base_url,
                profile,
                features,
                quiet,
                json,
                force,
                max_wait,
            })
            .await
        }
        Command::Continue {
            dir,
            sessions,
            until_done,
            model,
            model_for,
            base_url,
            profile,
            quiet,
            json,
            max_hours,
            max_cost,
            max_consecutive_failures,
            parallel,
            notify,
            max_wait,
            stash,
        } => {
            let args = o::ContinueArgs {
                sessions,
                until_done,
                model,
                model_for,
                base_url,
                profile,
                quiet,
                json,
                max_hours,
                max_cost,
                max_consecutive_failures,
                parallel,
                notify,
                max_wait,
                stash,
                ..o::ContinueArgs::new(dir.dir)
            };
            o::continue_run(args).await
        }
        Command::Stop { dir } => o::stop(&dir.dir),
        Command::Retry { feature, dir } => {
            println!("{}", safe(&o::retry(&dir.dir, &feature)?));
            Ok(Outcome::Done)
        }
        Command::Gc {
            dir,
            keep,
            older_than,
            transcripts,
        } => {
            let args = o::GcArgs {
                keep,
                older_than_days: older_than,
                transcripts,
            };
            print!("{}", o::gc(&dir.dir, &args)?);
            Ok(Outcome::Done)
        }
        Command::Features { action, dir, json } => features(action, dir.dir, json).await,
        Command::Amend { message, dir } => {
            println!("{}", safe(&o::amend(&dir.dir, &message).await?));
            Ok(Outcome::Done)
        }
        Command::Status { dir, json, wide } => {
            print!("{}", safe(&o::status(&dir.dir, json, wide)?));
            Ok(Outcome::Done)
        }
        Command::Log { dir, json, wide } => {
            print!("{}", safe(&o::log(&dir.dir, json, wide)?));
            Ok(Outcome::Done)
        }
        Command::Show { session, dir, json } => {
            print!("{}", safe(&longrun::view::show(&dir.dir, &session, json)?));
            Ok(Outcome::Done)
        }
        Command::Report { dir, out } => {
            let path = longrun::view::report(&dir.dir, out.as_deref())?;
            println!("wrote {}", path.display());
            Ok(Outcome::Done)
        }
        Command::Demo { dir, profile } => o::demo(o::DemoArgs { dir, profile }).await,
        Command::CheckCommand { command, dir } => {
            let (policy, from) = longrun::config::Config::policy_at(&dir.dir)?;
            let (text, verdict) =
                longrun::permissions::check_command(&command, &dir.dir, &policy, &from)?;
            print!("{text}");
            Ok(Outcome::Exit(verdict.exit_code()))
        }
        Command::Worker { .. }
        | Command::Export { .. }
        | Command::Exec { .. }
        | Command::Completions { .. }
        | Command::Man { .. }
        | Command::Sandbox(_)
        | Command::Doctor => Err(anyhow::anyhow!(
            "internal error: this command runs before the async runtime starts"
        )),
    }
}
