//! Which failures are tried again, and how long to wait first: exponential
//! backoff with jitter, or what the server asked for in `Retry-After` /
//! `retry-after-ms`.

use std::time::Duration;

use rand::Rng;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use super::settings::RetryPolicy;
use super::ModelError;

/// The target of a model request's retry warning, which the live display
/// shows itself (stderr then leaves it out; the log keeps it).
pub const RETRY_TARGET: &str = "longrun::retry";

/// Why one try failed.
#[derive(Debug)]
pub enum Fault {
    /// Worth another try, after `after` if the server said so.
    Transient {
        reason: String,
        after: Option<Duration>,
    },
    /// Final: no retry can help.
    Final(ModelError),
    /// The server does not stream: ask again without streaming.
    StreamRefused,
}

impl Fault {
    pub fn transient(reason: impl Into<String>) -> Fault {
        Fault::Transient {
            reason: reason.into(),
            after: None,
        }
    }
}

/// One retry, as logged and recorded in the transcript.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RetryNote {
    /// The try that failed, 1 for the first.
    pub attempt: u32,
    pub reason: String,
    pub wait_ms: u64,
}

/// Where a provider tells of each retry as it happens (the display shows
/// it then, not after the answer), or nowhere.
#[derive(Debug, Clone, Default)]
pub struct RetrySink(Option<tokio::sync::mpsc::UnboundedSender<RetryNote>>);

impl RetrySink {
    /// A sink and the receiver its notes arrive at, in order.
    pub fn channel() -> (RetrySink, tokio::sync::mpsc::UnboundedReceiver<RetryNote>) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        (RetrySink(Some(tx)), rx)
    }

    /// Retries nobody is told of (the log still has them).
    pub fn none() -> RetrySink {
        RetrySink(None)
    }

    pub fn tell(&self, note: RetryNote) {
        if let Some(tx) = &self.0 {
            // A receiver that is gone no longer cares.
            let _ = tx.send(note);
        }
    }
}

/// Statuses a later try may get past: timeouts, conflicts, rate limits,
/// server errors and Anthropic's "overloaded".
pub fn is_retried(status: StatusCode) -> bool {
    matches!(
        status.as_u16(),
        408 | 409 | 429 | 500 | 502 | 503 | 504 | 529
    )
}

/// The wait a server asked for: `retry-after-ms`, else `Retry-After` in seconds.
/// (An HTTP date in `Retry-After` is not honoured: the backoff applies then.)
pub fn server_wait(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| -> Option<f64> {
        let v: f64 = headers.get(name)?.to_str().ok()?.trim().parse().ok()?;
        (v.is_finite() && v >= 0.0).then_some(v)
    };
    number("retry-after-ms")
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The longest wait a session sits through; a provider that asks for more
/// (a usage limit that resets in hours) pauses the run instead.
pub const LONGEST_WAIT: Duration = Duration::from_secs(600);

/// The wait before try `attempt + 1`: the server's wish if any, else
/// `base * 2^(attempt-1)`, at most the cap, with jitter in its upper half.
pub fn wait(policy: &RetryPolicy, attempt: u32, asked: Option<Duration>) -> Duration {
    if let Some(asked) = asked {
        // Honoured past the cap (the server knows best), but not for hours.
        return asked.min(policy.cap.max(LONGEST_WAIT));
    }
    let exp = policy
        .base
        .saturating_mul(1u32 << attempt.saturating_sub(1).min(20));
    let full = exp.min(policy.cap);
    let jitter = rand::rng().random_range(0.5..=1.0);
    full.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_tries: 6,
            base: Duration::from_secs(1),
            cap: Duration::from_secs(60),
        }
    }

    #[test]
    fn backoff_doubles_with_jitter_up_to_the_cap() {
        for attempt in 1..=10 {
            let full = Duration::from_secs((1u64 << (attempt - 1)).min(60));
            for _ in 0..20 {
                let w = wait(&policy(), attempt, None);
                assert!(w <= full && w >= full / 2, "attempt {attempt}: {w:?}");
            }
        }
    }

    #[test]
    fn the_server_wait_wins_over_the_backoff() {
        let mut h = HeaderMap::new();
        h.insert("retry-after", "7".parse().unwrap());
        assert_eq!(server_wait(&h), Some(Duration::from_secs(7)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(server_wait(&h), Some(Duration::from_millis(250)));
        assert_eq!(
            wait(&policy(), 1, server_wait(&h)),
            Duration::from_millis(250)
        );
        let mut date = HeaderMap::new();
        date.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(server_wait(&date), None);
    }

    #[test]
    fn a_long_server_wait_is_honoured_up_to_ten_minutes() {
        assert_eq!(
            wait(&policy(), 1, Some(Duration::from_secs(90))),
            Duration::from_secs(90)
        );
        assert_eq!(
            wait(&policy(), 1, Some(Duration::from_secs(3600))),
            Duration::from_secs(600)
        );
    }

    #[test]
    fn exactly_the_documented_statuses_are_retried() {
        let retried: Vec<u16> = (400..600)
            .filter(|&s| is_retried(StatusCode::from_u16(s).unwrap()))
            .collect();
        assert_eq!(retried, [408, 409, 429, 500, 502, 503, 504, 529]);
    }
}
