//! Earlier sessions' work, tried by a whole-file session before its model
//! is asked.
//!
//! In the lift run session 9 wrote, at its last attempt before its time
//! ran out, a parser passing nine of thirteen tests; it ended unaccepted
//! with that parser at its ref, and every later session started from main
//! without it (commit 2e21c02). The orchestrator now sends the files the
//! latest sessions not accepted changed from main; only the files the
//! feature names are written, each checked as after an edit.

use std::path::Path;

use super::attempts::attempt_from;
use super::saved::Saved;
use crate::broker::{SessionEvent, WorkerLink, WorkerMessage};
use crate::confined::checks::SessionChecks;
use crate::confined::edit_check::EditCheck;
use crate::fsutil::Beneath;
use crate::protocol::EarlierWork;

/// What a session tries earlier work with.
pub struct Trial<'a> {
    pub workspace: &'a Path,
    pub checks: &'a SessionChecks,
    /// The session's files to change: the only files written.
    pub files: &'a [String],
}

impl Trial<'_> {
    /// Try each of `work` like an attempt. One that passes this feature's
    /// check and keeps every other that passed is committed, and the
    /// session needs no model call (returns what was done). Otherwise the
    /// files are put back as found, and the best of them is the session's
    /// best state so far: when it makes other features' checks pass, the
    /// attempts that build on the best start from it.
    pub fn run(
        &self,
        link: &mut WorkerLink,
        edit_check: &mut EditCheck,
        work: &[EarlierWork],
    ) -> anyhow::Result<Option<String>> {
        // Never through a symlink (one that is not a regular file: nothing is tried).
        let tree = Beneath::open(self.workspace)?;
        let Some(found) = Saved::take(&tree, self.workspace, self.files) else {
            return Ok(None);
        };
        let mut tried = Vec::new();
        let mut seen: Vec<Vec<&(String, String)>> = Vec::new();
        for earlier in work {
            let files: Vec<&(String, String)> = earlier
                .files
                .iter()
                .filter(|(path, _)| self.files.contains(path))
                .collect();
            // A session keeps the state it tried from an earlier one when
            // that is the one to build on: the same files, checked once.
            if files.is_empty() || seen.contains(&files) {
                continue;
            }
            seen.push(files.clone());
            for (path, text) in &files {
                tree.write(Path::new(path), text.as_bytes(), found.mode_of(path))?;
            }
            tried.push(earlier.session.to_string());
            if self.passes(edit_check) {
                let text = format!(
                    "the work of session {} (not accepted) passes this feature's check and keeps the \
                     features that passed: the harness committed it; no model call",
                    earlier.session
                );
                send_notice(link, text.clone())?;
                return Ok(Some(text));
            }
        }
        if tried.is_empty() {
            return Ok(None);
        }
        self.put_back(&tree, &found, edit_check)?;
        let builds = attempt_from(edit_check, self.checks, self.workspace, self.files, 0)
            .best
            .is_some();
        send_notice(
            link,
            format!(
                "tried the work of session(s) {} (not accepted) before asking the model: \
                 this feature's check still fails{}",
                tried.join(", "),
                match builds {
                    true => "; the attempts that build on the best state start from it",
                    false => "",
                }
            ),
        )?;
        Ok(None)
    }

    /// The checks as after an edit; whether the state passes and the harness committed it.
    fn passes(&self, edit_check: &mut EditCheck) -> bool {
        edit_check.after_turn(self.checks, self.workspace, 0);
        let committed = self.checks.base().is_some_and(|base| {
            git2::Repository::open(self.workspace)
                .ok()
                .and_then(|r| crate::git::head(&r))
                .is_some_and(|head| head != base)
        });
        edit_check.passed() && committed
    }

    /// The files as found again, and the edit check judging from them.
    fn put_back(
        &self,
        tree: &Beneath,
        found: &Saved<'_>,
        edit_check: &mut EditCheck,
    ) -> anyhow::Result<()> {
        found.put_back(tree)?;
        edit_check.found_again(self.workspace);
        Ok(())
    }
}

fn send_notice(link: &mut WorkerLink, text: String) -> anyhow::Result<()> {
    link.send(&WorkerMessage::Event {
        event: SessionEvent::Notice { text },
    })
}
