//! The integration tests: one binary, one module per area. Each test runs the
//! real binary on a temp project with a scripted model.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod mock_server;

mod amend;
mod display;
mod e2e;
mod errors;
mod hostile;
mod imports;
mod initializer;
mod kernels;
mod models;
mod notify;
mod outages;
mod permissions;
mod providers;
mod reading;
mod registries;
mod resume;
mod roles;
mod sandbox;
mod scale;
mod search;
mod session;
mod source;
mod terminal;
mod tools;
mod verdicts;
mod verified;
mod views;
mod worktree;
