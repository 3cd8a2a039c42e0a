//! A worker's request for several candidates of one answer (`[harness]
//! candidates`), served at once: each candidate is a request of its own to
//! the provider, counted against the session's budget and recorded in the
//! transcript as any other request.
//!
//! The candidates go out as parallel requests, never as one request with
//! OpenAI's `n`: llama-server (the local server the search is for) refuses
//! `n` above 1 and serves parallel requests in its slots (`--parallel K`),
//! and every provider answers parallel requests alike.
//!
//! Not here: which candidate is kept (the worker judges each by the
//! feature's check, in its sandbox).

use futures_util::future::join_all;

use crate::broker::OrchestratorMessage;
use crate::model::{
    ChatRequest, ChatResponse, ModelError, Provider, RequestContext, RetryNote, RetrySink,
};
use crate::trusted::record::transcript::{Entry, Transcript};
use crate::trusted::Reporter;

/// The candidates' requests, numbered in the session from `first_index`.
pub struct Batch {
    pub first_index: u32,
    pub requests: Vec<ChatRequest>,
}

/// One candidate as the provider answered it, with the retries on the way.
pub struct Served {
    pub result: Result<ChatResponse, ModelError>,
    pub retries: Vec<RetryNote>,
}

/// How many candidates are served of `asked`: at least one, at most `max`
/// (longrun.toml's, not the worker's word) and the steps left.
pub fn allowed(asked: u32, max: u32, steps_left: u32) -> u32 {
    asked.min(max).min(steps_left).max(1)
}

impl Batch {
    /// `count` requests like `request`, those after the first at
    /// `temperature` when it is set (the first is sampled as a single
    /// request would be).
    pub fn new(
        request: ChatRequest,
        count: u32,
        temperature: Option<f64>,
        first_index: u32,
    ) -> Batch {
        let later = ChatRequest {
            temperature: temperature.or(request.temperature),
            ..request.clone()
        };
        let mut requests = vec![request];
        requests.extend((1..count).map(|_| later.clone()));
        Batch {
            first_index,
            requests,
        }
    }

    pub fn len(&self) -> u32 {
        self.requests.len() as u32
    }

    /// Every candidate asked at once; each retry shown as it happens.
    pub async fn complete(
        &self,
        provider: &dyn Provider,
        session: u32,
        reporter: &Reporter,
    ) -> Vec<Served> {
        let asked = self.requests.iter().enumerate().map(|(i, request)| {
            let ctx = RequestContext {
                session,
                request_index: self.first_index + i as u32,
            };
            complete_one(provider, ctx, request, reporter)
        });
        join_all(asked).await
    }

    /// The requests, unanswered: the session stopped while they were awaited.
    pub fn record_unanswered(&self, transcript: &mut Transcript) -> anyhow::Result<()> {
        for (index, request) in self.numbered() {
            transcript.append(&Entry::Request {
                index,
                request: request.clone(),
                model: None,
            })?;
        }
        Ok(())
    }

    /// Each request with its index in the session.
    pub fn numbered(&self) -> impl Iterator<Item = (u32, &ChatRequest)> {
        (self.first_index..).zip(&self.requests)
    }
}

/// The worker's answer, of each candidate's as recorded (in order): the
/// responses that came back; with none, or with a failure no session
/// survives, the failure.
pub fn reply(
    answers: Vec<OrchestratorMessage>,
    asked: u32,
    notice: Option<String>,
) -> OrchestratorMessage {
    let mut responses = Vec::new();
    let mut failure = None;
    for answer in answers {
        match answer {
            OrchestratorMessage::ModelResponse { response, .. } => responses.push(response),
            failed => failure = worse(failure, failed),
        }
    }
    let fatal = matches!(
        failure,
        Some(OrchestratorMessage::ModelError { fatal: true, .. })
    );
    match failure {
        Some(failed) if fatal || responses.is_empty() => failed,
        _ => OrchestratorMessage::ModelCandidates {
            responses,
            asked,
            notice,
        },
    }
}

/// The failure to answer with: the first, unless a later one is fatal.
fn worse(
    first: Option<OrchestratorMessage>,
    next: OrchestratorMessage,
) -> Option<OrchestratorMessage> {
    match (&first, &next) {
        (None, _) | (_, OrchestratorMessage::ModelError { fatal: true, .. }) => Some(next),
        _ => first,
    }
}

/// One candidate's answer; its retries are shown as they happen and kept
/// for the transcript.
async fn complete_one(
    provider: &dyn Provider,
    ctx: RequestContext,
    request: &ChatRequest,
    reporter: &Reporter,
) -> Served {
    reporter.model_asked(ctx.session, ctx.request_index);
    let (sink, mut notes) = RetrySink::channel();
    let answer = provider.complete(ctx, request, &sink);
    tokio::pin!(answer);
    let mut retries = Vec::new();
    let mut tell = |note: RetryNote| {
        reporter.retry(
            ctx.session,
            ctx.request_index,
            note.attempt,
            &note.reason,
            note.wait_ms,
        );
        retries.push(note);
    };
    loop {
        tokio::select! {
            biased;
            Some(note) = notes.recv() => tell(note),
            result = &mut answer => {
                while let Ok(note) = notes.try_recv() {
                    tell(note);
                }
                return Served { result, retries };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_served_candidates_are_capped_by_the_settings_and_the_steps_left() {
        assert_eq!(
            allowed(8, 4, 40),
            4,
            "longrun.toml's limit, not the worker's"
        );
        assert_eq!(allowed(8, 8, 3), 3, "no more than the steps left");
        assert_eq!(allowed(0, 8, 3), 1);
        assert_eq!(allowed(2, 8, 40), 2);
    }

    fn failed(message: &str, fatal: bool) -> OrchestratorMessage {
        OrchestratorMessage::ModelError {
            message: message.into(),
            fatal,
            kind: Default::default(),
        }
    }

    fn answered(text: &str) -> OrchestratorMessage {
        OrchestratorMessage::ModelResponse {
            response: ChatResponse {
                text: text.into(),
                tool_calls: Vec::new(),
                usage: Default::default(),
                cost_usd: 0.0,
                cut: None,
            },
            notice: None,
        }
    }

    #[test]
    fn the_worker_gets_the_answers_that_came_back_or_the_failure() {
        let some = reply(
            vec![failed("timed out", false), answered("b"), answered("c")],
            3,
            Some("stop now".into()),
        );
        match some {
            OrchestratorMessage::ModelCandidates {
                responses,
                asked,
                notice,
            } => {
                let texts: Vec<&str> = responses.iter().map(|r| r.text.as_str()).collect();
                assert_eq!((texts, asked), (vec!["b", "c"], 3));
                assert_eq!(notice.as_deref(), Some("stop now"));
            }
            other => panic!("{other:?}"),
        }
        let none = reply(
            vec![failed("first", false), failed("second", false)],
            2,
            None,
        );
        assert!(
            matches!(none, OrchestratorMessage::ModelError { message, .. } if message == "first")
        );
        // A failure no session survives (the key refused) ends the run
        // whatever else came back.
        let fatal = reply(vec![answered("a"), failed("key refused", true)], 2, None);
        assert!(matches!(
            fatal,
            OrchestratorMessage::ModelError { fatal: true, .. }
        ));
    }

    #[test]
    fn the_first_candidate_is_the_request_as_sent_the_others_at_the_temperature_given() {
        let request = ChatRequest {
            system: "s".into(),
            messages: Vec::new(),
            tools: Vec::new(),
            temperature: None,
            stop: vec!["[harness]".into()],
            max_output_tokens: None,
        };
        let batch = Batch::new(request.clone(), 3, Some(0.8), 5);
        let temperatures: Vec<_> = batch.requests.iter().map(|r| r.temperature).collect();
        assert_eq!(temperatures, [None, Some(0.8), Some(0.8)]);
        assert_eq!(batch.requests[0], request);
        assert_eq!(batch.requests[2].stop, request.stop);
        let indexes: Vec<u32> = batch.numbered().map(|(i, _)| i).collect();
        assert_eq!(indexes, [5, 6, 7]);
        let same = Batch::new(request, 2, None, 0);
        assert_eq!(same.requests[0], same.requests[1]);
    }
}
