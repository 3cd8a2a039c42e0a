//! How a session opens, as its strategy has it: which strategy, the first
//! message, and (whole-file) the feature's check run before the first turn.

use std::path::Path;

use super::attempts::Attempts;
use super::seam::Strategy;
use super::tools::Tools;
use super::whole_file::WholeFile;
use crate::broker::{SessionEvent, WorkerLink, WorkerMessage};
use crate::config::EditFormat;
use crate::confined::checks::{CheckOutcome, SessionChecks};
use crate::confined::edit_check::failing_summary;
use crate::confined::prompt;
use crate::protocol::WorkerConfig;

/// What a session starts from.
pub struct Start<'a> {
    pub config: &'a WorkerConfig,
    pub workspace: &'a Path,
    pub checks: &'a SessionChecks,
    /// The session's files to change ([`crate::confined::files_to_change::files_to_change`]).
    pub files: &'a [String],
    /// What `init.sh` said, for the first message.
    pub init_report: &'a str,
}

/// How the session opens.
pub enum Opening<'a> {
    /// The feature's check already passed and the harness committed it:
    /// the session is done without a model call (what was done).
    Done(String),
    /// The loop runs with `strategy` from `first`.
    Loop {
        strategy: Box<dyn Strategy + 'a>,
        first: String,
        /// The feature's check as it failed before the first turn, when it ran.
        failing: Option<CheckOutcome>,
    },
}

impl<'a> Start<'a> {
    /// The strategy the session's edit format names, and its first message.
    /// A whole-file model with the check after edits is shown the failing
    /// check up front (the 1.5B model otherwise spent its first turns
    /// running it, commit 7789655); with a retry temperature too, that
    /// message is attempt 1.
    pub fn open(&self, link: &mut WorkerLink) -> Opening<'a> {
        let harness = &self.config.harness;
        let whole_file = harness.edit_format() == EditFormat::WholeFile && harness.check_after_edit;
        let start_check = whole_file
            .then(|| self.checks.run_feature(self.workspace))
            .flatten();
        if let Some(done) = start_check
            .as_ref()
            .filter(|o| o.passed)
            .and_then(|o| self.done_at_start(o, link))
        {
            return Opening::Done(done);
        }
        let failing = start_check.filter(|o| !o.passed);
        let summary = failing.as_ref().map(failing_summary);
        let retries = whole_file && harness.retry_temperature.is_some();
        let attempts = retries
            .then(|| Attempts::new(self.config, self.workspace, self.files, summary.clone()));
        let first_attempt = attempts.as_ref().and_then(Attempts::first_message);
        let attempting = first_attempt.is_some();
        let strategy: Box<dyn Strategy + 'a> = match harness.edit_format() {
            EditFormat::WholeFile => Box::new(WholeFile::new(
                self.config,
                self.workspace,
                self.checks,
                self.files,
                whole_file,
                attempts,
                attempting,
            )),
            EditFormat::Tools => Box::new(Tools::new(harness)),
        };
        let first = first_attempt.unwrap_or_else(|| {
            prompt::first_message(
                self.config,
                self.workspace,
                self.init_report,
                summary.as_deref(),
            )
        });
        Opening::Loop {
            strategy,
            first,
            failing,
        }
    }

    /// The assigned feature's check already passes on the files as the
    /// session found them (work on main made it pass, as one test of several
    /// often does once another's code is in): with the harness's bookkeeping
    /// on, it marks the feature done and commits, and the session ends
    /// without a model call. Verification still runs the check again, from
    /// outside. None: the model is needed after all (the bookkeeping is
    /// off, or it failed).
    fn done_at_start(&self, outcome: &CheckOutcome, link: &mut WorkerLink) -> Option<String> {
        if !self.config.harness.commit_when_passing() {
            return None;
        }
        let id = self.checks.feature_id()?;
        let command = outcome.command.as_deref().unwrap_or("");
        let base = self.checks.base();
        let done =
            crate::confined::finish::commit_passing(self.workspace, id, base, command).ok()?;
        let text = format!(
            "{id}'s check `{command}` already passes on the files as the session found them: {}; no model call",
            done.unwrap_or_else(|| "nothing was left to commit".to_string())
        );
        let _ = link.send(&WorkerMessage::Event {
            event: SessionEvent::Notice { text: text.clone() },
        });
        Some(text)
    }
}
