//! Errors that decide the process exit code.
//!
//! Most code returns `anyhow::Result`; an error whose chain holds a
//! [`BadInput`] exits 2, anything else exits 1. Outcomes that are not errors
//! (stopped early, interrupted) are [`Outcome`] values.

use std::process::ExitCode;

/// Bad input or usage: the user can fix it. Exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Build an `anyhow::Error` that exits 2.
pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(message.into()))
}

/// How a command that did not fail ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Done as asked: exit 0.
    Done,
    /// `continue` stopped early: everything left is stuck, or a limit ran out. Exit 3.
    StoppedEarly,
    /// Interrupted by a signal: exit 130.
    Interrupted,
    /// The run itself failed after it started (provider unusable, a session could not be set up). Exit 1.
    RunFailed,
    /// A command whose answer is its exit status (`check-command`, `stop`).
    Exit(u8),
    /// The provider stayed unavailable for `--max-wait`: nothing is stuck;
    /// run `continue` again later. Exit 75 (EX_TEMPFAIL).
    ProviderUnavailable,
}

impl Outcome {
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(self.code())
    }

    /// The exit code as a number, for `--json` output.
    pub fn code(self) -> u8 {
        match self {
            Outcome::Done => 0,
            Outcome::RunFailed => 1,
            Outcome::StoppedEarly => 3,
            Outcome::ProviderUnavailable => 75,
            Outcome::Interrupted => 130,
            Outcome::Exit(code) => code,
        }
    }

    /// The outcome as `--json` output names it.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::RunFailed => "run_failed",
            Outcome::StoppedEarly => "stopped_early",
            Outcome::ProviderUnavailable => "provider_unavailable",
            Outcome::Interrupted => "interrupted",
            Outcome::Exit(_) => "exit",
        }
    }
}

/// The exit code for an error: 2 when its chain holds a [`BadInput`], else 1.
pub fn exit_code_for(err: &anyhow::Error) -> ExitCode {
    ExitCode::from(code_for(err))
}

/// [`exit_code_for`] as a number.
pub fn code_for(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|cause| cause.downcast_ref::<BadInput>().is_some())
    {
        2
    } else {
        1
    }
}
