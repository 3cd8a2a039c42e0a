//! Where `tracing` output goes: stderr at the level `-v`/`-vv` asks for, and,
//! for commands that run sessions, `.longrun/longrun.log` in the project.
//!
//! `RUST_LOG`, when set, is the filter for both. The log file is opened only
//! once `.longrun/` exists, so a command that fails on bad input leaves no
//! trace in a directory that is not a project yet.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tracing_subscriber::filter::FilterExt;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

/// The log file's name inside `.longrun/`.
pub const FILE_NAME: &str = "longrun.log";

/// The stderr filter for `-v` counted `verbose` times.
fn stderr_filter(verbose: u8) -> EnvFilter {
    let default = match verbose {
        0 => "warn",
        1 => "warn,longrun=info",
        _ => "info,longrun=debug",
    };
    from_env_or(default)
}

fn from_env_or(default: &str) -> EnvFilter {
    match std::env::var("RUST_LOG") {
        Ok(text) if !text.trim().is_empty() => {
            EnvFilter::try_new(text).unwrap_or_else(|_| EnvFilter::new(default))
        }
        _ => EnvFilter::new(default),
    }
}

/// Install the subscriber. `project` is the directory whose `.longrun/longrun.log`
/// receives the log, for the commands that run sessions there. `ansi`:
/// colour on stderr (a terminal, or `--color=always`).
pub fn init(verbose: u8, project: Option<&Path>, ansi: bool) {
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(AboveLive)
        .event_format(PlainLine { ansi })
        .with_filter(
            stderr_filter(verbose).and(tracing_subscriber::filter::filter_fn(
                // The terminal's status area shows each retry under its session.
                |meta| meta.target() != crate::model::RETRY_TARGET || !crate::view::live::drawing(),
            )),
        );
    let file = project.map(|dir| {
        tracing_subscriber::fmt::layer()
            .with_writer(ProjectLog::new(dir))
            .with_ansi(false)
            .with_filter(from_env_or("warn,longrun=debug"))
    });
    let _ = tracing_subscriber::registry()
        .with(stderr)
        .with(file)
        .try_init();
}

/// Appends to `DIR/.longrun/longrun.log`, opening it on the first write after
/// `.longrun/` exists; until then records are dropped.
#[derive(Clone)]
pub struct ProjectLog {
    path: PathBuf,
    file: Arc<Mutex<Option<File>>>,
}

impl ProjectLog {
    pub fn new(project: &Path) -> ProjectLog {
        ProjectLog {
            path: crate::trusted::state::longrun_dir(project).join(FILE_NAME),
            file: Arc::new(Mutex::new(None)),
        }
    }

    fn write_record(&self, buf: &[u8]) {
        let Ok(mut slot) = self.file.lock() else {
            return;
        };
        if slot.is_none() && self.path.parent().is_some_and(Path::is_dir) {
            *slot = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok();
        }
        if let Some(file) = slot.as_mut() {
            // A log that cannot be written must not stop the run.
            let _ = file.write_all(&one_line(buf));
        }
    }
}

/// A record as one line with no control characters: a message carrying
/// session-made text (a file name, a reason) cannot start a forged line.
fn one_line(record: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(record);
    let body = text.strip_suffix('\n').unwrap_or(&text);
    let mut line = crate::sanitize::text(&body.replace(['\n', '\r'], " "));
    line.push('\n');
    line.into_bytes()
}

/// stderr, written above the live status (never drawn over by it).
#[derive(Clone, Copy)]
struct AboveLive;

/// One record, written in one piece with the live status hidden.
struct AboveLiveRecord(Vec<u8>);

impl Write for AboveLiveRecord {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for AboveLiveRecord {
    fn drop(&mut self) {
        let bytes = std::mem::take(&mut self.0);
        crate::view::live::suspend(|| {
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(&bytes);
            let _ = err.flush();
        });
    }
}

impl<'a> MakeWriter<'a> for AboveLive {
    type Writer = AboveLiveRecord;
    fn make_writer(&'a self) -> AboveLiveRecord {
        AboveLiveRecord(Vec::new())
    }
}

/// A record on stderr as a person reads it: `warning: session 2: the
/// message`. No span context and no other internal fields; colour only when asked.
struct PlainLine {
    ansi: bool,
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainLine
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        let mut fields = MessageAndSession::default();
        event.record(&mut fields);
        let level = *event.metadata().level();
        let word = match level {
            tracing::Level::ERROR => "error",
            tracing::Level::WARN => "warning",
            tracing::Level::INFO => "info",
            tracing::Level::DEBUG => "debug",
            tracing::Level::TRACE => "trace",
        };
        let word = if self.ansi {
            let style = match level {
                tracing::Level::ERROR => console::Style::new().red().bold(),
                tracing::Level::WARN => console::Style::new().yellow().bold(),
                _ => console::Style::new().dim(),
            };
            style.force_styling(true).apply_to(word).to_string()
        } else {
            word.to_string()
        };
        let session = fields
            .session
            .map(|n| format!("session {n}: "))
            .unwrap_or_default();
        writeln!(writer, "{word}: {session}{}", fields.message)
    }
}

/// The `message` of an event and its `session` field, the rest left out.
#[derive(Default)]
struct MessageAndSession {
    message: String,
    session: Option<u64>,
}

impl tracing::field::Visit for MessageAndSession {
    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        if field.name() == "session" {
            self.session = Some(value);
        }
    }
    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        if field.name() == "session" {
            self.session = u64::try_from(value).ok();
        }
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_string();
        }
    }
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        }
    }
}

/// One formatted record, written to the file in one piece when dropped.
pub struct Record {
    log: ProjectLog,
    buf: Vec<u8>,
}

impl Write for Record {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        self.log.write_record(&self.buf);
    }
}

impl<'a> MakeWriter<'a> for ProjectLog {
    type Writer = Record;
    fn make_writer(&'a self) -> Record {
        Record {
            log: self.clone(),
            buf: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_wait_for_the_longrun_dir_then_append() {
        let dir = tempfile::tempdir().unwrap();
        let log = ProjectLog::new(dir.path());
        log.make_writer().write_all(b"dropped\n").unwrap();
        assert!(
            !dir.path().join(".longrun").exists(),
            "must not create .longrun"
        );
        std::fs::create_dir(dir.path().join(".longrun")).unwrap();
        log.make_writer().write_all(b"one\n").unwrap();
        log.make_writer().write_all(b"two\n").unwrap();
        let text = std::fs::read_to_string(dir.path().join(".longrun/longrun.log")).unwrap();
        assert_eq!(text, "one\ntwo\n");
        log.make_writer()
            .write_all(b"WARN name\nINFO forged\x1b[2K\0\n")
            .unwrap();
        let text = std::fs::read_to_string(dir.path().join(".longrun/longrun.log")).unwrap();
        assert_eq!(text, "one\ntwo\nWARN name INFO forged[2K\n");
    }
}
