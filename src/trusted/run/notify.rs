//! Notifications: the `[notify] command` (or `--notify`) hears about the
//! events a person cares about during a night's run.
//!
//! The command runs confined like a check (its own scratch workspace, tmp
//! and home, a scrubbed environment) but with the host network, since its
//! job is to reach a phone or a chat. It gets the event as one JSON object
//! on stdin and a one-line summary in `LONGRUN_SUMMARY`; it is killed after
//! `[notify] timeout_secs`. Whatever it does, the run goes on: a failure is
//! one line on the display and in the log.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::config::NotifySection;
use crate::sandbox::{Network, SandboxSpec};
use crate::trusted::{Project, Reporter};

/// Bytes of the notifier's output kept, for the failure line.
const OUTPUT_CAP: u64 = 4096;

/// Something a person wants to hear about.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// `run_finished`, `feature_stuck`, `rejected_in_a_row`, `run_paused`, `run_resumed`.
    pub kind: &'static str,
    /// One line, for a phone's lock screen.
    pub summary: String,
    /// The event's own fields.
    pub fields: Value,
}

impl Event {
    /// The JSON object the notifier reads on stdin.
    pub fn json(&self, project: &std::path::Path) -> Value {
        let mut value = json!({
            "type": self.kind,
            "time": crate::trusted::record::lock::now_rfc3339(),
            "project": project,
            "summary": self.summary,
        });
        if let (Value::Object(out), Value::Object(fields)) = (&mut value, &self.fields) {
            for (k, v) in fields {
                out.insert(k.clone(), v.clone());
            }
        }
        value
    }
}

/// The notifier of a run: the command and how to run it, and the
/// notifications under way. Each runs as its own task, so a slow notifier
/// never holds up the sessions in flight.
pub struct Notifier {
    inner: Arc<Command>,
    project: PathBuf,
    pending: Mutex<Vec<Pending>>,
}

/// A notification under way: its event type and its task.
type Pending = (&'static str, JoinHandle<Result<(), String>>);

/// The command and its confinement.
struct Command {
    command: String,
    settings: NotifySection,
    spec: SandboxSpec,
    scratch: PathBuf,
    /// Notifications started, naming each one's own scratch directory.
    started: std::sync::atomic::AtomicU32,
    /// One notification at a time, in the order they were sent (the lock is fair).
    order: tokio::sync::Mutex<()>,
}

impl Notifier {
    /// The run's notifier: `--notify` over `[notify] command`; none when neither is set.
    pub fn new(project: &Project, flag: Option<&str>) -> Option<Notifier> {
        let settings = project.config.notify.clone();
        let command = flag
            .map(str::to_string)
            .or_else(|| settings.command.clone())
            .filter(|c| !c.trim().is_empty())?;
        let scratch = project.longrun_dir().join("notify");
        // A session's confinement, less the project, plus the host network.
        let mut spec = crate::trusted::verify::workspace::sandbox_spec(
            project,
            &scratch.join("work"),
            &scratch.join("tmp"),
            &scratch.join("home"),
            Vec::new(),
        );
        spec.profile.network = Network::Host;
        spec.read_only = Vec::new();
        spec.writable = settings.writable.clone();
        Some(Notifier {
            inner: Arc::new(Command {
                command,
                settings,
                spec,
                scratch,
                started: Default::default(),
                order: Default::default(),
            }),
            project: project.dir.clone(),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// How many sessions in a row without acceptance are worth a notice.
    pub fn after_rejections(&self) -> u32 {
        self.inner.settings.after_rejections
    }

    /// Start telling the command about `event`, and report the notifications
    /// that have ended badly since the last call.
    pub fn send(&self, event: Event, reporter: &Reporter) {
        tracing::info!("notify: {} ({})", event.kind, event.summary);
        let input = event.json(&self.project).to_string() + "\n";
        let command = Arc::clone(&self.inner);
        let kind = event.kind;
        let task = tokio::spawn(async move { command.run(&event, &input).await });
        self.pending().push((kind, task));
        self.report(reporter);
    }

    /// Wait for every notification under way (each is time-limited) and report failures.
    pub async fn finish(&self, reporter: &Reporter) {
        let pending: Vec<_> = std::mem::take(&mut *self.pending());
        for (kind, task) in pending {
            let result = task.await.unwrap_or_else(|e| Err(e.to_string()));
            failed(reporter, kind, result);
        }
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, Vec<Pending>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Report the notifications that ended; keep the others.
    fn report(&self, reporter: &Reporter) {
        let mut pending = self.pending();
        let (done, running): (Vec<_>, Vec<_>) =
            pending.drain(..).partition(|(_, t)| t.is_finished());
        *pending = running;
        drop(pending);
        for (kind, task) in done {
            // A finished task's result is ready at once.
            let result = futures_util::FutureExt::now_or_never(task)
                .map(|r| r.unwrap_or_else(|e| Err(e.to_string())))
                .unwrap_or(Ok(()));
            failed(reporter, kind, result);
        }
    }
}

fn failed(reporter: &Reporter, kind: &str, result: Result<(), String>) {
    if let Err(problem) = result {
        reporter.line(&format!(
            "notify: the command failed on {kind} ({problem}); the run goes on"
        ));
    }
}

impl Command {
    async fn run(&self, event: &Event, input: &str) -> Result<(), String> {
        let _turn = self.order.lock().await;
        let n = self
            .started
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let scratch = self.scratch.join(n.to_string());
        let spec = SandboxSpec {
            workspace: scratch.join("work"),
            tmp: scratch.join("tmp"),
            home: scratch.join("home"),
            ..self.spec.clone()
        };
        fresh(&scratch, &spec).map_err(|e| format!("cannot make {}: {e}", scratch.display()))?;
        let argv = vec!["bash".to_string(), "-c".to_string(), self.command.clone()];
        let mut cmd = crate::sandbox::command(&spec, &argv).map_err(|e| e.to_string())?;
        cmd.env("LONGRUN_SUMMARY", &event.summary)
            .env("LONGRUN_EVENT", event.kind);
        for name in &self.settings.env {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = tokio::process::Command::from(cmd)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("cannot start it: {e}"))?;
        let pid = child.id();
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let limit = Duration::from_secs(self.settings.timeout_secs.max(1));
        let ran = tokio::time::timeout(limit, async {
            if let Some(mut s) = stdin.take() {
                // A notifier that does not read its stdin is fine.
                let _ = s.write_all(input.as_bytes()).await;
            }
            let (out, err) = tokio::join!(capped(stdout.take()), capped(stderr.take()));
            (child.wait().await, out + &err)
        })
        .await;
        if let Some(pid) = pid {
            // Whatever it left running goes with its process group.
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = std::fs::remove_dir_all(&scratch);
        match ran {
            Err(_) => Err(format!("killed after {} s", limit.as_secs())),
            Ok((Err(e), _)) => Err(e.to_string()),
            Ok((Ok(status), _)) if status.success() => Ok(()),
            Ok((Ok(status), output)) => {
                let last = output
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .map(|l| format!(": {}", crate::view::text::truncate(l.trim(), 120)))
                    .unwrap_or_default();
                Err(format!(
                    "exit {}{last}",
                    status
                        .code()
                        .map_or("by a signal".into(), |c| c.to_string())
                ))
            }
        }
    }
}

/// Empty scratch directories for one notification.
fn fresh(scratch: &std::path::Path, spec: &SandboxSpec) -> std::io::Result<()> {
    if std::fs::symlink_metadata(scratch).is_ok() {
        std::fs::remove_dir_all(scratch)?;
    }
    for d in [&spec.workspace, &spec.tmp, &spec.home] {
        std::fs::create_dir_all(d)?;
    }
    Ok(())
}

/// Up to [`OUTPUT_CAP`] bytes of a pipe, the rest drained.
async fn capped<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>) -> String {
    let Some(pipe) = pipe else {
        return String::new();
    };
    let mut kept = Vec::new();
    let mut pipe = pipe.take(OUTPUT_CAP);
    let _ = pipe.read_to_end(&mut kept).await;
    let mut rest = pipe.into_inner();
    let _ = tokio::io::copy(&mut rest, &mut tokio::io::sink()).await;
    String::from_utf8_lossy(&kept).into_owned()
}

/// The run ended.
pub fn run_finished(outcome: &str, code: u8, passing: usize, total: usize) -> Event {
    let how = match outcome {
        "run_failed" | "error" => "failed",
        other => other,
    };
    Event {
        kind: "run_finished",
        summary: format!(
            "longrun: run {}: {passing}/{total} features passing",
            how.replace('_', " ")
        ),
        fields: json!({"outcome": outcome, "exit_code": code, "passing": passing, "total": total}),
    }
}

/// The provider stopped answering and the run waits for it.
pub fn run_paused(reason: &str) -> Event {
    Event {
        kind: "run_paused",
        summary: format!(
            "longrun: paused, waiting for the provider: {}",
            crate::sanitize::line(reason)
        ),
        fields: json!({"reason": crate::sanitize::line(reason)}),
    }
}

/// The provider answered again and the run went on by itself.
pub fn run_resumed(waited: std::time::Duration) -> Event {
    Event {
        kind: "run_resumed",
        summary: format!("longrun: resumed after {} s paused", waited.as_secs()),
        fields: json!({"waited_s": waited.as_secs_f64()}),
    }
}

/// A feature reached its attempt limit and is skipped from now on.
pub fn feature_stuck(feature: &str, attempts: u32, reasons: &[String]) -> Event {
    Event {
        kind: "feature_stuck",
        summary: format!(
            "longrun: feature {feature} is stuck after {}",
            crate::view::text::count(attempts.into(), "failed attempt")
        ),
        fields: json!({"feature": feature, "failed_attempts": attempts, "reasons": reasons}),
    }
}

/// Sessions in a row ended without acceptance.
pub fn rejected_in_a_row(streak: &[String]) -> Event {
    Event {
        kind: "rejected_in_a_row",
        summary: format!(
            "longrun: {} in a row ended without acceptance",
            crate::view::text::count(streak.len() as u64, "session")
        ),
        fields: json!({"count": streak.len(), "sessions": streak}),
    }
}
