//! The verdict commit on main: its message and trailers.

use crate::schema::trailer;
use git2::Oid;

use super::{Project, Verdict};
use crate::model::Usage;
use crate::trusted::repo;

/// Everything a verdict commit says.
pub struct Record<'a> {
    pub number: u32,
    pub role: &'a str,
    pub feature: Option<&'a str>,
    pub verdict: Verdict,
    pub reasons: &'a [String],
    pub model: &'a str,
    pub usage: Usage,
    pub cost_usd: f64,
    pub steps: u32,
    pub duration_s: u64,
    pub sandbox: &'a [String],
    /// The session's work is kept at its ref (false when it never got a clone).
    pub work_kept: bool,
    /// What the loop detector found, one entry per trigger.
    pub loops: &'a [String],
}

pub fn work_ref(number: u32) -> String {
    format!("refs/longrun/sessions/{number:04}")
}

/// One line, safe as a trailer value.
fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn message(r: &Record) -> String {
    let what = match r.feature {
        Some(f) => format!("{}, {f}", r.role),
        None => r.role.to_string(),
    };
    let mut msg = format!("longrun: session {} ({what}) {}\n\n", r.number, r.verdict);
    if r.reasons.is_empty() {
        msg.push_str("Verified: every rule and check passed.\n\n");
    } else {
        for reason in r.reasons {
            msg.push_str(&format!("- {}\n", one_line(reason)));
        }
        msg.push('\n');
    }
    let mut t = vec![
        (trailer::SESSION, r.number.to_string()),
        (trailer::ROLE, r.role.to_string()),
    ];
    if let Some(f) = r.feature {
        t.push((trailer::FEATURE, f.to_string()));
    }
    t.push((trailer::VERDICT, r.verdict.to_string()));
    for reason in r.reasons {
        t.push((trailer::REASON, one_line(reason)));
    }
    t.extend([
        (trailer::MODEL, one_line(r.model)),
        (trailer::TOKENS_IN, r.usage.input_tokens.to_string()),
        (trailer::TOKENS_OUT, r.usage.output_tokens.to_string()),
        (trailer::TOKENS_CACHED, r.usage.cached_tokens.to_string()),
        (trailer::COST_USD, format!("{:.4}", r.cost_usd)),
        (trailer::STEPS, r.steps.to_string()),
        (trailer::DURATION_S, r.duration_s.to_string()),
    ]);
    if r.verdict != Verdict::Accepted && r.work_kept {
        t.push((trailer::WORK_REF, work_ref(r.number)));
    }
    for what in r.loops {
        t.push((trailer::LOOP, one_line(what)));
    }
    for layer in r.sandbox {
        t.push((trailer::SANDBOX, one_line(layer)));
    }
    for (k, v) in t {
        msg.push_str(&format!("{k}: {v}\n"));
    }
    msg
}

/// Write the verdict commit. An accepted session whose merge conflicts is
/// recorded as rejected instead; the verdict actually recorded is returned.
pub fn record(
    project: &Project,
    r: &Record,
    work: Oid,
) -> anyhow::Result<(Verdict, Vec<String>, Oid)> {
    if r.verdict == Verdict::Accepted {
        match repo::record_merge(&project.repo, work, &message(r)) {
            Ok(oid) => return Ok((Verdict::Accepted, Vec::new(), oid)),
            Err(e) => {
                let reasons = vec![format!("could not merge into main: {e:#}")];
                let rejected = Record {
                    verdict: Verdict::Rejected,
                    reasons: &reasons,
                    ..*r
                };
                let oid = repo::record_empty(&project.repo, &message(&rejected))?;
                return Ok((Verdict::Rejected, reasons, oid));
            }
        }
    }
    let oid = repo::record_empty(&project.repo, &message(r))?;
    Ok((r.verdict, r.reasons.to_vec(), oid))
}
