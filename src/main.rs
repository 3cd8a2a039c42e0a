//! The longrun binary: parse, set up logging, dispatch, turn errors into exit codes.

use std::process::ExitCode;

use clap::Parser;
use longrun::cli::{Cli, Command};
use longrun::error::{exit_code_for, Outcome};

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The worker and the exec helper confine themselves before any thread exists,
    // so they run before the async runtime is built.
    match cli.command {
        Command::Worker { config } => return longrun::session::run_worker(&config),
        Command::Exec { spec, argv } => return longrun::sandbox::exec_confined(&spec, &argv),
        _ => {}
    }
    init_tracing(cli.verbose);
    match run(cli) {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => {
            eprintln!("error: {}", message(&err));
            exit_code_for(&err)
        }
    }
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

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(dispatch(cli.command))
}

async fn dispatch(command: Command) -> anyhow::Result<Outcome> {
    use longrun::orchestrator as o;
    match command {
        Command::Init {
            spec,
            dir,
            model,
            quiet,
        } => {
            o::init(o::InitArgs {
                spec,
                dir: dir.dir,
                model,
                quiet,
            })
            .await
        }
        Command::Continue {
            dir,
            sessions,
            until_done,
            model,
            quiet,
            max_hours,
            max_consecutive_failures,
        } => {
            let args = o::ContinueArgs {
                sessions,
                until_done,
                model,
                quiet,
                max_hours,
                max_consecutive_failures,
                ..o::ContinueArgs::new(dir.dir)
            };
            o::continue_run(args).await
        }
        Command::Stop { dir } => {
            println!("{}", o::stop(&dir.dir)?);
            Ok(Outcome::Done)
        }
        Command::Retry { feature, dir } => {
            println!("{}", o::retry(&dir.dir, &feature)?);
            Ok(Outcome::Done)
        }
        Command::Status { dir, json } => {
            print!("{}", o::status(&dir.dir, json)?);
            Ok(Outcome::Done)
        }
        Command::Log { dir, json } => {
            print!("{}", o::log(&dir.dir, json)?);
            Ok(Outcome::Done)
        }
        Command::Demo { dir } => o::demo(o::DemoArgs { dir }).await,
        Command::Worker { .. } | Command::Exec { .. } => unreachable!("handled before the runtime"),
    }
}
