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

/// The man page, in roff.
pub fn man_page() -> Vec<u8> {
    let mut out = Vec::new();
    // Rendering into a Vec cannot fail on I/O.
    let _ = clap_mangen::Man::new(Cli::command()).render(&mut out);
    out
}
