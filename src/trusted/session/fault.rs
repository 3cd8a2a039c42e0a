//! Who failed: a session that was not accepted failed by its work (rejected,
//! incomplete within its budget) or by the run (the provider, a run limit, an
//! interruption, the harness). Only the work's failures count against a
//! feature; a provider that stays unavailable pauses the run instead.

use std::time::Duration;

use super::serve::{Stop, WorkerRun};
use crate::model::ModelError;
use crate::schema::Fault;
use crate::trusted::Verdict;

/// Why the run must wait before its next session, and for how long at least.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pause {
    pub reason: String,
    /// The reset the provider named, if it named one.
    pub wait: Option<Duration>,
}

/// Who failed the session that ended as `run` says with `verdict`.
pub fn of(verdict: Verdict, run: &WorkerRun) -> Option<Fault> {
    if verdict == Verdict::Accepted {
        return None;
    }
    let by_run = match run.stop {
        // A signal to the orchestrator, its grace period, `--max-cost`.
        Stop::Interrupted | Stop::GraceOver | Stop::CostLimit => true,
        // The worker's process was not confined as it said: nothing of the
        // work ran, the machine (or the longrun binary) is at fault.
        Stop::Unconfined => true,
        // Its own budget, or a worker that broke the broker protocol.
        Stop::WallTime | Stop::Budget | Stop::Protocol => false,
        Stop::Exited => {
            run.fatal.is_some()
                || matches!(
                    run.model_error,
                    Some(ModelError::Unavailable { .. } | ModelError::Auth(_) | ModelError::Failed(_))
                )
                // The worker ended without a word and no signal killed it:
                // it could not start (confinement) or the harness broke.
                || (verdict == Verdict::Failed && run.report.is_none() && run.killed_by.is_none())
        }
    };
    Some(if by_run { Fault::Run } else { Fault::Work })
}

/// The pause a session's end asks for: its provider was unavailable.
pub fn pause(run: &WorkerRun) -> Option<Pause> {
    match &run.model_error {
        Some(ModelError::Unavailable { message, wait }) => Some(Pause {
            reason: message.clone(),
            wait: *wait,
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::broker::{WorkerEnd, WorkerReport};

    fn run(stop: Stop) -> WorkerRun {
        WorkerRun::new(stop)
    }

    fn reported(ended: WorkerEnd) -> WorkerRun {
        let mut r = run(Stop::Exited);
        let report: WorkerReport =
            serde_json::from_value(serde_json::json!({"ended": ended, "steps": 3})).unwrap();
        r.report = Some(report);
        r
    }

    #[test]
    fn the_works_failures_and_the_runs_are_told_apart() {
        let work = reported(WorkerEnd::Completed);
        assert_eq!(of(Verdict::Rejected, &work), Some(Fault::Work));
        assert_eq!(of(Verdict::Accepted, &work), None);
        assert_eq!(
            of(Verdict::Incomplete, &run(Stop::WallTime)),
            Some(Fault::Work)
        );
        assert_eq!(
            of(Verdict::Incomplete, &run(Stop::CostLimit)),
            Some(Fault::Run)
        );
        assert_eq!(
            of(Verdict::Interrupted, &run(Stop::Interrupted)),
            Some(Fault::Run)
        );
        let mut down = reported(WorkerEnd::Failed);
        down.model_error = Some(ModelError::Unavailable {
            message: "connection refused".into(),
            wait: None,
        });
        assert_eq!(of(Verdict::Failed, &down), Some(Fault::Run));
        assert_eq!(
            pause(&down).map(|p| p.reason),
            Some("connection refused".into())
        );
        let mut too_long = reported(WorkerEnd::Failed);
        too_long.model_error = Some(ModelError::ContextLength("too long".into()));
        assert_eq!(of(Verdict::Failed, &too_long), Some(Fault::Work));
        assert_eq!(pause(&too_long), None);
        // No report and no signal: the worker could not start.
        assert_eq!(of(Verdict::Failed, &run(Stop::Exited)), Some(Fault::Run));
        let mut killed = run(Stop::Exited);
        killed.killed_by = Some(9);
        assert_eq!(of(Verdict::Interrupted, &killed), Some(Fault::Work));
    }
}
