//! What this process holds for its project between sessions, beside the
//! repository: the cached checkouts it made (`verify/checkout.rs` keeps them)
//! and the recorded sessions whose work files are still to be removed
//! (`session/lifecycle.rs` removes them).

use git2::Oid;

/// What this process knows of the cached checkouts.
#[derive(Debug, Default)]
pub struct Cache {
    /// The commit the cached checkout of main holds, once written by this process.
    pub(crate) commit: Option<Oid>,
    /// Whether a step's sandbox binds links read-only here (probed once).
    pub(crate) bindable: Option<bool>,
    /// Whether a sandbox here mounts an overlay workspace (probed once).
    pub(crate) overlay: Option<bool>,
    /// The lower layers this process made.
    pub(crate) layers: Vec<Layer>,
}

/// One lower layer: its directory is `layers/<id>`.
#[derive(Debug)]
pub struct Layer {
    pub(crate) id: u32,
    /// None while it is being written.
    pub(crate) commit: Option<Oid>,
    /// Leases held on it.
    pub(crate) users: usize,
}

/// The recorded sessions whose work files `session/lifecycle.rs` has yet to remove.
#[derive(Debug, Default)]
pub struct Cleanup {
    /// The session directories were looked through once.
    pub(crate) scanned: bool,
    /// Recorded sessions whose files are still there, kept for now.
    pub(crate) pending: std::collections::BTreeSet<u32>,
    /// The newest session recorded.
    pub(crate) newest: u32,
}
