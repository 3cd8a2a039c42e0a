//! Model strategies behind one seam: the agent loop knows only
//! [`Strategy`]; `tools` (models that call tools) and `whole-file` (small
//! models, with attempts, refocus and earlier work) implement it.

mod attempts;
mod blocks;
mod candidates;
mod earlier_work;
mod messages;
mod opening;
mod saved;
mod seam;
mod tools;
mod whole_file;

pub use opening::{Opening, Start};
pub use seam::{Restart, Strategy, Turn};
pub use tools::Tools;
