//! `longrun status` and `longrun log`: read-only views of the project,
//! decided from main's history (features.json and the verdict trailers).

use std::path::Path;

use serde_json::json;

use super::continue_run::next_feature_besides;
use crate::trusted::Project;
use crate::view::text::{bytes, duration, fit_last_column, output_width, render_table};

/// The first reason, and how many more there are.
fn reason_cell(reasons: &[String]) -> String {
    match reasons {
        [] => String::new(),
        [one] => one.clone(),
        [first, rest @ ..] => format!("{first} (+{} more)", rest.len()),
    }
}

pub fn status(dir: &Path, as_json: bool, wide: bool) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let history = project.history()?;
    let features = project
        .features()?
        .map(|l| l.features.clone())
        .unwrap_or_default();
    let max = project.config.run.max_attempts;
    let (tokens_in, tokens_out) = history.tokens();
    let passing = features.iter().filter(|f| f.passes).count();
    let running = crate::trusted::record::lock::running_holder(&project.longrun_dir());
    // While a run is going, its sessions without a verdict are in progress, not crashed.
    let (in_progress, unrecorded) = if running.is_some() {
        (
            crate::trusted::session::in_progress::sessions(&project, &history),
            Vec::new(),
        )
    } else {
        (
            Vec::new(),
            crate::trusted::session::recover::unrecorded(&project, &history),
        )
    };
    let busy: Vec<String> = in_progress
        .iter()
        .filter_map(|s| s.feature.clone())
        .collect();
    let next = next_feature_besides(&project, &history, &busy, &[])?;
    let accepted = history
        .sessions
        .iter()
        .filter(|s| s.verdict == "accepted")
        .count();
    let disk = super::gc::Disk::of(&project);
    if as_json {
        let rows: Vec<_> = features
            .iter()
            .map(|f| {
                let s = history.stats(&f.id);
                json!({
                    "id": f.id, "description": f.description, "passes": f.passes,
                    "attempts": s.attempts, "failed_attempts": s.failed_attempts, "run_faults": s.run_faults,
                    "stuck": !f.passes && history.is_stuck(&f.id, max),
                    "in_progress": busy.contains(&f.id),
                    "last_verdict": s.last_verdict, "last_reasons": s.last_reasons,
                })
            })
            .collect();
        let value = json!({
            "project": project.dir, "passing": passing, "total": features.len(),
            "initialized": history.initialized(), "features": rows,
            "next_feature": next.map(|f| f.id), "sessions": history.sessions.len(),
            "accepted_sessions": accepted,
            "in_progress": in_progress,
            "unrecorded_sessions": unrecorded,
            "running_pid": running.as_ref().map(|h| h.pid),
            "tokens_in": tokens_in, "tokens_out": tokens_out, "cost_usd": history.cost(),
            "disk": {"longrun_bytes": disk.longrun, "git_bytes": disk.git},
            "sandbox": {"profile": project.profile.name, "network": project.profile.network.as_str(),
                        "not_enforced": history.not_enforced()},
            "models": crate::trusted::contract::models::describe_config(&project.config, &project.dir),
        });
        return Ok(serde_json::to_string_pretty(&value)? + "\n");
    }
    let mut out = format!("{passing}/{} features passing\n\n", features.len());
    if features.is_empty() {
        out.push_str("no features yet: the initializer has not been accepted\n\n");
    } else {
        let mut table = vec![vec![
            "ID".to_string(),
            "PASSES".into(),
            "ATTEMPTS".into(),
            "LAST VERDICT".into(),
            "DESCRIPTION".into(),
        ]];
        for f in &features {
            let s = history.stats(&f.id);
            let stuck = !f.passes && history.is_stuck(&f.id, max);
            table.push(vec![
                f.id.clone(),
                if f.passes {
                    "yes".into()
                } else if busy.contains(&f.id) {
                    "working".into()
                } else if stuck {
                    "STUCK".into()
                } else {
                    "no".into()
                },
                s.attempts.to_string(),
                s.last_verdict.clone().unwrap_or_else(|| "-".into()),
                f.description.clone(),
            ]);
        }
        fit_last_column(&mut table, output_width(wide));
        out.push_str(&render_table(&table));
        out.push('\n');
        for f in features
            .iter()
            .filter(|f| !f.passes && history.is_stuck(&f.id, max))
        {
            let why = history.stats(&f.id).last_reasons.join("; ");
            out.push_str(&format!(
                "stuck: {} ({why}); `longrun retry {}` tries it again\n",
                f.id, f.id
            ));
        }
    }
    if let Some(h) = &running {
        out.push_str(&format!(
            "a run is in progress: pid {} on {}, since {}\n",
            h.pid, h.host, h.started
        ));
    }
    for s in &in_progress {
        let what = match &s.feature {
            Some(f) => format!("{} {f}", s.role),
            None => s.role.clone(),
        };
        out.push_str(&format!(
            "in progress: session {} ({what}) · {} · step {} · {} · {}\n",
            s.session,
            s.phase,
            s.step,
            duration(s.elapsed_s),
            s.model
        ));
    }
    for n in &unrecorded {
        out.push_str(&format!(
            "session {n} has no verdict (interrupted); `longrun continue` records it and keeps its work\n"
        ));
    }
    out.push_str(&format!(
        "next feature: {}\nsessions recorded: {} ({} accepted)\ntokens: {tokens_in} in, {tokens_out} out; cost ${:.4}\n",
        next.map(|f| f.id).unwrap_or_else(|| "none".into()),
        history.sessions.len(),
        accepted,
        history.cost()
    ));
    let closures = crate::trusted::verify::acceptance::closures_on_main(&project);
    let frozen: std::collections::BTreeSet<&String> = closures.values().flatten().collect();
    if !frozen.is_empty() {
        out.push_str(&format!(
            "frozen with the checks: {} file(s) they run, import or read (`longrun features` lists them)\n",
            frozen.len()
        ));
    }
    out.push_str(&format!(
        "models: {}\n",
        crate::trusted::contract::models::describe_config(&project.config, &project.dir)
    ));
    out.push_str(&format!(
        "disk: .longrun/ {}, .git/ {}\n",
        bytes(disk.longrun),
        bytes(disk.git)
    ));
    out.push_str(&sandbox_line(&project.profile));
    for what in history.not_enforced() {
        out.push_str(&format!(
            "  not enforced on this machine (latest session): {what}\n"
        ));
    }
    Ok(out)
}

/// The profile sessions run under; the host network is called out, being unconfined.
fn sandbox_line(profile: &crate::sandbox::Profile) -> String {
    let network = match profile.network {
        crate::sandbox::Network::Host => "host (not confined)",
        other => other.as_str(),
    };
    format!("sandbox: profile {}, network {network}\n", profile.name)
}

pub fn log(dir: &Path, as_json: bool, wide: bool) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let history = project.history()?;
    if as_json {
        return Ok(serde_json::to_string_pretty(&history.sessions)? + "\n");
    }
    let mut table = vec![vec![
        "SESSION".to_string(),
        "ROLE".into(),
        "FEATURE".into(),
        "VERDICT".into(),
        "STEPS".into(),
        "TOKENS IN/OUT".into(),
        "COST".into(),
        "TIME".into(),
        "COMMIT".into(),
        "REASON".into(),
    ]];
    for s in &history.sessions {
        table.push(vec![
            s.session.to_string(),
            s.role.clone(),
            s.feature.clone().unwrap_or_else(|| "-".into()),
            s.verdict.clone(),
            s.steps.to_string(),
            format!("{}/{}", s.tokens_in, s.tokens_out),
            format!("${:.4}", s.cost_usd),
            format!("{}s", s.duration_s),
            s.commit.chars().take(8).collect(),
            reason_cell(&s.reasons),
        ]);
    }
    if history.sessions.is_empty() {
        return Ok("no sessions yet\n".into());
    }
    fit_last_column(&mut table, output_width(wide));
    Ok(render_table(&table))
}
