//! Independent verification of a session's work: the cached checkouts and workspaces it
//! runs in, the frozen acceptance tests, each confined step, the suite, and the optional
//! reviewer.

pub(crate) mod acceptance;
pub(crate) mod checkout;
pub(crate) mod review;
pub(crate) mod steps;
pub(crate) mod suite;
pub(crate) mod verification;
pub(crate) mod workspace;
