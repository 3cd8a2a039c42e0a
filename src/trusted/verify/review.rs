//! The optional reviewer (`[review] mode`): after verification passes, a
//! model reads the assigned feature, the diff and the check output and
//! answers accept or a reason. Its answer becomes the `Longrun-Review`
//! trailer; in `required` mode a refusal (or no usable answer) is a
//! rejection with its reason.

use std::sync::Arc;

use git2::Oid;

use super::verification::CheckRun;
use crate::features::Feature;
use crate::model::{ChatRequest, Message, Provider, RequestContext, RetrySink};
use crate::trusted::record::transcript::{Entry, Transcript};
use crate::trusted::Project;

const SYSTEM: &str = "You review one session of an autonomous coding run. The session was \
assigned one feature; its work already passed the feature's acceptance check and every other \
check, run independently. Judge whether the diff really implements the feature as described, \
without gaming the checks (hard-coded outputs, disabled or weakened tests, special cases for \
the test inputs), and without unrelated damage. Answer with one line: `ACCEPT`, or `REJECT: ` \
followed by the reason in one sentence a developer can act on.";

/// What the reviewer said.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    pub accepted: bool,
    /// The reason of a refusal, or why there was no usable answer.
    pub reason: Option<String>,
    pub model: String,
}

impl Answer {
    /// The `Longrun-Review` trailer's value.
    pub fn trailer(&self) -> String {
        match (&self.accepted, &self.reason) {
            (true, _) => format!("accept ({})", self.model),
            (false, Some(r)) => format!("reject ({}): {r}", self.model),
            (false, None) => format!("reject ({})", self.model),
        }
    }

    /// The rejection reason a required review gives.
    pub fn rejection(&self) -> Option<String> {
        (!self.accepted).then(|| {
            format!(
                "review: the reviewer ({}) refused: {}",
                self.model,
                self.reason.as_deref().unwrap_or("no reason given")
            )
        })
    }
}

/// The verified work of one session, as the reviewer reads it.
pub struct Work<'a> {
    pub number: u32,
    pub feature: &'a Feature,
    pub base: Oid,
    /// What main would become.
    pub candidate: Oid,
    pub checks: &'a [CheckRun],
}

/// Ask `reviewer` about `work`.
pub async fn review(
    project: &Project,
    reviewer: &Arc<dyn Provider>,
    work: Work<'_>,
    transcript: &mut Transcript,
) -> anyhow::Result<Answer> {
    let Work {
        number,
        feature,
        base,
        candidate,
        checks,
    } = work;
    let diff = crate::git::patch_text(
        &project.repo,
        base,
        candidate,
        project.config.review.max_diff_bytes,
    )?;
    let check_lines: Vec<String> = checks
        .iter()
        .map(|c| {
            format!(
                "- {} `{}`: {}\n{}",
                c.name,
                c.command,
                if c.passed { "passed" } else { "failed" },
                crate::progress::tail(&c.output_tail, 10)
            )
        })
        .collect();
    let content = format!(
        "The assigned feature:\n```json\n{}\n```\n\nThe checks, run on what main would become:\n{}\n\n\
         The diff of the session's work:\n```diff\n{diff}```\n\nAnswer `ACCEPT` or `REJECT: reason`.",
        feature.pretty_json(),
        check_lines.join("\n")
    );
    let request = ChatRequest {
        system: SYSTEM.to_string(),
        messages: vec![Message::User { content }],
        tools: Vec::new(),
        temperature: None,
        stop: Vec::new(),
        max_output_tokens: None,
    };
    let model = reviewer.describe();
    // The reviewer's own conversation: its first and only request.
    let ctx = RequestContext {
        session: number,
        request_index: 0,
    };
    transcript.append(&Entry::Request {
        index: u32::MAX,
        request: request.clone(),
        model: Some(format!("reviewer {model}")),
    })?;
    let answer = match reviewer.complete(ctx, &request, &RetrySink::none()).await {
        Ok(response) => {
            let text = response.text.clone();
            transcript.append(&Entry::Response {
                index: u32::MAX,
                response,
            })?;
            parse(&text)
        }
        Err(e) => Err(format!("the reviewer could not answer: {e}")),
    };
    Ok(match answer {
        Ok(None) => Answer {
            accepted: true,
            reason: None,
            model,
        },
        Ok(Some(reason)) | Err(reason) => Answer {
            accepted: false,
            reason: Some(crate::sanitize::line(&reason)),
            model,
        },
    })
}

/// `ACCEPT` → Ok(None); `REJECT: why` → Ok(Some(why)); anything else → Err.
fn parse(text: &str) -> Result<Option<String>, String> {
    let line = text
        .lines()
        .map(|l| l.trim().trim_matches('`').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let upper = line.to_ascii_uppercase();
    if upper.starts_with("ACCEPT") {
        return Ok(None);
    }
    if upper.starts_with("REJECT") {
        let why = line[6..].trim_start_matches([':', ' ', '-']).trim();
        return Ok(Some(if why.is_empty() {
            "no reason given".to_string()
        } else {
            why.to_string()
        }));
    }
    Err(format!(
        "the reviewer's answer was neither ACCEPT nor REJECT: `{}`",
        crate::view::text::truncate(line, 80)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_read_as_accept_or_a_reason() {
        assert_eq!(parse("ACCEPT"), Ok(None));
        assert_eq!(parse("\n`accept` — looks right"), Ok(None));
        assert_eq!(
            parse("REJECT: the test is skipped"),
            Ok(Some("the test is skipped".into()))
        );
        assert_eq!(parse("Reject"), Ok(Some("no reason given".into())));
        assert!(parse("maybe?").is_err());
        assert!(parse("").is_err());
    }
}
