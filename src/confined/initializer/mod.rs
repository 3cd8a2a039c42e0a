//! The initializer's guided form, for models that do not drive tools well:
//! the harness asks for the plan and each feature's test in turn and
//! writes the rest itself. The open form is the agent loop with the
//! initializer's prompt (`[harness] initializer = "open"`).

mod framework;
mod guided;
mod judge;
mod plan;
mod stub;

pub use guided::run_guided;
