//! The trusted side of the trust boundary. The orchestrator: init and continue, each session's lifecycle,
//! independent verification, and the verdict recorded on main.
//!
//! Only the orchestrator writes the project's main branch and `.longrun/`.

mod acceptance;
mod amend;
mod checkout;
mod compact;
mod confinement;
mod control;
mod demo;
mod dependencies;
mod failpoint;
mod fault;
mod gc;
mod history;
mod import;
mod in_progress;
mod init;
mod lock;
mod models;
mod notify;
mod pause;
mod preflight;
mod project;
pub mod proxy;
mod record;
mod recover;
pub mod repo;
mod reporter;
mod review;
mod run;
mod serve;
mod session;
mod signals;
pub mod state;
mod status;
mod steps;
mod suite;
mod timing;
pub mod transcript;
mod upper;
mod verify;
mod workspace;
mod worktree;

pub use crate::schema::Verdict;
pub use amend::{add as add_feature, amend, list as list_features, reopen, NewFeature};
pub use control::{retry, stop};
pub use demo::{demo, DemoArgs};
pub use gc::{gc, GcArgs};
pub use history::{FeatureStats, History, SessionRow};
pub use init::{init, InitArgs};
pub use lock::rfc3339;
pub use pause::parse_duration;
pub use project::{resolve_model, Project};
pub use reporter::{Mode, Reporter};
pub use run::{continue_run, ContinueArgs};
pub use status::{log, status};
