//! What people read after (and while) a run: `show`, `report`, completions
//! and the man page, and the text helpers the terminal views share.

pub mod events;
pub mod live;
mod manual;
mod session_view;
mod show;
pub mod text;

pub use manual::{completions, man_page};
pub use session_view::SessionView;
pub use show::show;
