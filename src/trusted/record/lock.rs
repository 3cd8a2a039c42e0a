//! `.longrun/lock`: one run at a time per project.
//!
//! The lock is an advisory `flock` on the file, so the kernel releases it
//! when its holder dies however it dies; the file also names the holder's
//! pid, start time and host, for the message a second run prints.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::Path;

use anyhow::Context;
use nix::fcntl::{Flock, FlockArg};
use serde::{Deserialize, Serialize};

use crate::error::bad_input;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Holder {
    pub pid: u32,
    pub started: String,
    pub host: String,
}

/// Held for as long as the value lives.
pub struct RunLock {
    _file: Flock<File>,
}

impl Drop for RunLock {
    /// A run that ends cleanly leaves no holder behind, so the next run has
    /// no stale lock to report and `status` shows no run in progress.
    fn drop(&mut self) {
        let _ = self._file.set_len(0);
    }
}

/// Take the project's lock, or fail (exit 2) naming the run that holds it.
/// A lock file left by a dead run is taken over with a notice.
pub fn acquire(longrun_dir: &Path) -> anyhow::Result<RunLock> {
    std::fs::create_dir_all(longrun_dir)
        .with_context(|| format!("failed to create {}", longrun_dir.display()))?;
    let path = longrun_dir.join("lock");
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .with_context(|| format!("failed to open {}", path.display()))?;
    let mut file = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => locked,
        Err((mut file, _)) => {
            let holder = read_holder(&mut file);
            let who = match holder {
                Some(h) => format!("pid {} on {} (since {})", h.pid, h.host, h.started),
                None => "another process".to_string(),
            };
            return Err(bad_input(format!(
                "another longrun run holds {}: {who}; wait for it, or stop it with `longrun stop`",
                path.display()
            )));
        }
    };
    if let Some(stale) = read_holder(&mut file) {
        if stale.pid != std::process::id() {
            eprintln!(
                "longrun: taking over a stale lock left by pid {} on {} (since {}), which is gone",
                stale.pid, stale.host, stale.started
            );
        }
    }
    let me = Holder {
        pid: std::process::id(),
        started: now_rfc3339(),
        host: nix::unistd::gethostname()
            .map(|h| h.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(&serde_json::to_vec(&me)?)?;
    file.sync_all()?;
    Ok(RunLock { _file: file })
}

/// The run holding the project's lock, if its process is alive (for read-only views).
/// The file names the last holder; only a held flock means it is still running
/// (its pid may be reused, or be this very process after its run ended).
pub fn running_holder(longrun_dir: &Path) -> Option<Holder> {
    let mut file = File::open(longrun_dir.join("lock")).ok()?;
    let holder = read_holder(&mut file)?;
    if holder.pid == std::process::id() {
        return None;
    }
    match Flock::lock(file, FlockArg::LockSharedNonblock) {
        Ok(_free) => None,
        Err(_) => Some(holder),
    }
}

fn read_holder(file: &mut File) -> Option<Holder> {
    let mut text = String::new();
    file.rewind().ok()?;
    file.read_to_string(&mut text).ok()?;
    serde_json::from_str(&text).ok()
}

/// Now as a UTC timestamp, to the second.
pub fn now_rfc3339() -> String {
    rfc3339(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
    )
}

/// The last second humantime writes (9999-12-31T23:59:59Z).
const LAST_SECOND: u64 = 253_402_300_799;

/// A UTC timestamp for `secs` since the epoch, to the second; times outside
/// the years 1970 to 9999 (a commit's date is what its author wrote) read
/// as the nearest end.
pub fn rfc3339(secs: i64) -> String {
    let secs = u64::try_from(secs).unwrap_or(0).min(LAST_SECOND);
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    humantime::format_rfc3339_seconds(at).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_calendar_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_083_200 + 3_661), "2026-12-01T01:01:01Z");
        assert_eq!(rfc3339(-5), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(i64::MAX), "9999-12-31T23:59:59Z");
    }

    #[test]
    fn a_second_lock_is_refused_and_a_released_one_taken() {
        let dir = tempfile::tempdir().unwrap();
        let first = acquire(dir.path()).unwrap();
        let err = acquire(dir.path()).err().unwrap().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        assert!(acquire(dir.path()).is_ok());
    }
}
