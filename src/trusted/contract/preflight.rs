//! Checks before `continue` starts a session, for what a user may have broken
//! on main by hand. Each names the file and the fix; the verdict rules catch
//! what sessions break.

use crate::error::bad_input;
use crate::trusted::record::repo;
use crate::trusted::Project;

/// Once initialized, every session starts by running `init.sh`: it must be
/// on main, executable.
pub fn check(project: &Project) -> anyhow::Result<()> {
    if !project.history()?.initialized() {
        return Ok(());
    }
    let Some(head) = repo::main_head(&project.repo)? else {
        return Ok(());
    };
    let dir = project.dir.display();
    match repo::file_mode_at(&project.repo, head, "init.sh")? {
        None => Err(bad_input(format!(
            "init.sh is missing on main in {dir}, and every session runs it first; \
             restore it and commit it (`git -C {dir} log --oneline -- init.sh` shows where it went)"
        ))),
        Some(mode) if mode & 0o111 == 0 => Err(bad_input(format!(
            "init.sh on main in {dir} is not executable; \
             run `chmod +x init.sh` there and commit it"
        ))),
        Some(_) => Ok(()),
    }
}
