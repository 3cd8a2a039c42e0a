//! A paused run: the provider stayed unreachable, overloaded or rate limited
//! through a session's retries. The run starts no session and waits, with a
//! capped backoff (or until the reset the provider named), asking the
//! provider one small request at a time, and goes on by itself once it
//! answers. It gives up after `--max-wait`; a signal ends the wait at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::continue_run::Interrupt;
use crate::model::{ModelError, Provider};
use crate::trusted::session::fault::Pause;
use crate::trusted::Reporter;

/// `--max-wait` when not given: a night's usage-limit reset fits.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(6 * 3600);

/// How the wait ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resume {
    /// The provider answered; the run goes on.
    Resumed,
    /// A signal came while waiting.
    Interrupted,
    /// `--max-wait` passed without an answer.
    GaveUp { reason: String },
    /// The provider answered, refusing the key: no session can succeed.
    Fatal(String),
}

/// The backoff between probes: `base * 2^n`, at most `cap`.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    pub base: Duration,
    pub cap: Duration,
}

impl Backoff {
    /// From `[model] retry_base_secs` and `retry_cap_secs` (1 s and 60 s by default).
    pub fn from_settings(section: &crate::config::ModelSection) -> Backoff {
        let secs = |v: Option<f64>, default: f64| {
            Duration::from_secs_f64(v.filter(|v| v.is_finite() && *v >= 0.0).unwrap_or(default))
        };
        Backoff {
            base: secs(section.retry_base_secs, 1.0),
            cap: secs(section.retry_cap_secs, 60.0),
        }
    }

    fn delay(&self, probe: u32) -> Duration {
        self.base
            .saturating_mul(1u32 << probe.min(20))
            .min(self.cap)
    }
}

/// Wait until the provider answers, up to `max_wait`.
pub async fn wait_out(
    provider: &Arc<dyn Provider>,
    pause: &Pause,
    backoff: Backoff,
    max_wait: Duration,
    reporter: &Reporter,
    interrupt: &Interrupt,
) -> Resume {
    let started = Instant::now();
    let mut reason = pause.reason.clone();
    let mut named = pause.wait;
    let mut said = None::<Instant>;
    for probe in 0u32.. {
        let waited = started.elapsed();
        if waited >= max_wait {
            return Resume::GaveUp { reason };
        }
        let delay = named
            .unwrap_or_else(|| backoff.delay(probe))
            .min(max_wait - waited);
        // Said when the pause starts, then at most every ten minutes.
        if said.is_none_or(|t| t.elapsed() >= Duration::from_secs(600)) {
            reporter.paused(&reason, delay, waited, max_wait);
            said = Some(Instant::now());
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = interrupt.wait_for(1) => return Resume::Interrupted,
        }
        let asked = Instant::now();
        let answer = tokio::select! {
            answer = provider.probe() => answer,
            _ = interrupt.wait_for(1) => return Resume::Interrupted,
        };
        match answer {
            Ok(()) => {
                tracing::info!(
                    "the provider answered after {:.1} s paused (probe took {:.3} s)",
                    started.elapsed().as_secs_f64(),
                    asked.elapsed().as_secs_f64()
                );
                reporter.resumed(started.elapsed());
                return Resume::Resumed;
            }
            Err(ModelError::Unavailable { message, wait }) => {
                reason = message;
                named = wait;
            }
            Err(ModelError::Auth(message)) => return Resume::Fatal(message),
            // Anything else is an answer: the provider is back; the session will see.
            Err(other) => {
                tracing::info!("the provider answered the probe with: {other}");
                reporter.resumed(started.elapsed());
                return Resume::Resumed;
            }
        }
    }
    Resume::GaveUp { reason }
}

/// Parse `--max-wait`: seconds, or a number with s, m or h.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.char_indices().last() {
        Some((i, c @ ('s' | 'm' | 'h'))) => (&t[..i], c),
        _ => (t, 's'),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: give seconds, or a number with s, m or h (for example 90, 30m, 4h)"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` is not a duration of zero or more"));
    }
    let scale = match unit {
        'h' => 3600.0,
        'm' => 60.0,
        _ => 1.0,
    };
    Ok(Duration::from_secs_f64(value * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_wait_reads_seconds_minutes_and_hours() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_duration("4h"), Ok(Duration::from_secs(4 * 3600)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1").is_err());
    }

    #[test]
    fn the_backoff_doubles_up_to_its_cap() {
        let b = Backoff {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        };
        let delays: Vec<u64> = (0..8).map(|n| b.delay(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60]);
    }
}
