//! The project as its committed files define it: its directory, repository and
//! `longrun.toml`, the models that serve each role, and the checks that main is intact
//! before a run starts.

pub(crate) mod caches;
pub(crate) mod models;
pub(crate) mod preflight;
pub(crate) mod project;
