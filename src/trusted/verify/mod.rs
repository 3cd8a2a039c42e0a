//! Independent verification of a session's work: the frozen acceptance tests, each
//! confined step, the suite, and the optional reviewer.

pub(crate) mod acceptance;
pub(crate) mod review;
pub(crate) mod steps;
pub(crate) mod suite;
pub(crate) mod verification;
