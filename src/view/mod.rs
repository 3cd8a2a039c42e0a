//! What people read after (and while) a run: the live status and event
//! lines, `show`, `report`, completions and the man page, and the text
//! helpers the terminal views share.

mod chart;
pub mod events;
mod html;
pub mod live;
mod manual;
mod report;
mod session_view;
mod show;
pub mod text;

pub use manual::{completions, man_page, write_man_pages};
pub use report::report;
pub use session_view::SessionView;
pub use show::show;
