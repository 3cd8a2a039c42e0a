//! The project and its contract: `longrun init`, amending features, the models that
//! serve each role, and the checks before a run starts.

pub(crate) mod amend;
pub(crate) mod init;
pub(crate) mod models;
pub(crate) mod preflight;
pub(crate) mod project;
