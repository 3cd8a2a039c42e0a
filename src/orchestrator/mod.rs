//! The orchestrator: init and continue, each session's lifecycle,
//! independent verification, and the verdict recorded on main.
//!
//! Only the orchestrator writes the project's main branch and `.longrun/`.

mod demo;
mod history;
mod init;
mod project;
mod record;
mod reporter;
mod run;
mod session;
mod status;
mod verdict;
mod verify;

pub use demo::{demo, DemoArgs};
pub use history::{FeatureStats, History, SessionRow};
pub use init::{init, InitArgs};
pub use project::{resolve_model, Project};
pub use reporter::Reporter;
pub use run::{continue_run, ContinueArgs};
pub use status::{log, status};
pub use verdict::Verdict;
