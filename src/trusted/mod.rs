//! The trusted side of the trust boundary. The orchestrator: init and continue, each session's lifecycle,
//! independent verification, and the verdict recorded on main.
//!
//! Only the orchestrator writes the project's main branch and `.longrun/`.
//!
//! Its rooms, lowest first; each imports only from the rooms before it (docs/design.md):
//! [`record`] (what is written down and read back), [`contract`] (the project, its settings
//! and models), [`verify`] (independent verification), [`session`] (one session from plan to
//! verdict) and [`run`] (`init`, the loop of sessions and the commands around it).

pub mod contract;
pub mod record;
pub mod run;
pub mod session;
pub mod verify;

pub use crate::schema::Verdict;
pub use contract::project::{resolve_model, Project};
pub use record::history::{FeatureStats, History, SessionRow};
pub use record::lock::rfc3339;
pub use record::reporter::{Mode, Reporter};
pub use record::{repo, state, transcript};
pub use run::amend::{add as add_feature, amend, list as list_features, reopen, NewFeature};
pub use run::continue_run::{continue_run, ContinueArgs};
pub use run::control::{retry, stop};
pub use run::demo::{demo, DemoArgs};
pub use run::gc::{gc, GcArgs};
pub use run::init::{init, InitArgs};
pub use run::pause::parse_duration;
pub use run::status::{log, status};
