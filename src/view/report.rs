//! `longrun report`: one self-contained HTML file about the project — the
//! features table, features passing over sessions, tokens and cost per
//! session, verdict counts, stuck features with their reasons, and every
//! session linked to its verdict commit. Styles and charts are inline; the
//! page loads nothing and runs no script. Everything comes from main's
//! history, so the report is the same on any clone.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use git2::Oid;

use super::chart::{self, Bar, Series};
use super::html::escape;
use super::text::{duration, short_id, tokens};
use crate::error::bad_input;
use crate::features::{self, FeatureList};
use crate::trusted::{rfc3339, History, Project, SessionRow, Verdict};

const STYLE: &str = include_str!("report.css");

const VERDICTS: [Verdict; 5] = [
    Verdict::Accepted,
    Verdict::Rejected,
    Verdict::Incomplete,
    Verdict::Interrupted,
    Verdict::Failed,
];

/// Write the report; returns where it went.
pub fn report(dir: &Path, out: Option<&Path>) -> anyhow::Result<PathBuf> {
    let project = Project::open(dir)?;
    let page = render(&project)?;
    let path = match out {
        Some(p) => p.to_path_buf(),
        None => project.longrun_dir().join("report.html"),
    };
    if out.is_none() {
        std::fs::create_dir_all(project.longrun_dir())?;
    }
    std::fs::write(&path, page).map_err(|e| {
        bad_input(format!(
            "cannot write the report to {}: {e}; pass --out with a file in a directory that exists",
            path.display()
        ))
    })?;
    Ok(path)
}

/// What the report shows, gathered from main.
struct Facts {
    name: String,
    features: FeatureList,
    history: std::sync::Arc<History>,
    max_attempts: u32,
    /// Features passing on main after each session, by session.
    passing: Vec<(u32, usize)>,
}

fn gather(project: &Project) -> anyhow::Result<Facts> {
    let history = project.history()?;
    let features = project.features()?.map_or_else(
        || FeatureList {
            features: Vec::new(),
        },
        |l| (*l).clone(),
    );
    let mut counts = PassingCounts::default();
    let passing = history
        .sessions
        .iter()
        .map(|s| Ok((s.session, counts.at(project, &s.commit)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Facts {
        name: project
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| project.dir.display().to_string()),
        features,
        history,
        max_attempts: project.config.run.max_attempts,
        passing,
    })
}

/// How many features pass in features.json, commit by commit. Most sessions
/// leave features.json as it was, so it is parsed again only when its blob
/// changed: one tree lookup per session, one parse per change.
#[derive(Default)]
struct PassingCounts {
    last: Option<(Oid, usize)>,
}

impl PassingCounts {
    /// How many features pass at `commit` (0 before there is a feature list).
    fn at(&mut self, project: &Project, commit: &str) -> anyhow::Result<usize> {
        let Ok(oid) = Oid::from_str(commit) else {
            return Ok(0);
        };
        let tree = project.repo.find_commit(oid)?.tree()?;
        let Some(entry) = tree.get_name(features::FILE_NAME) else {
            return Ok(0);
        };
        if let Some((blob, count)) = self.last {
            if blob == entry.id() {
                return Ok(count);
            }
        }
        let blob = project.repo.find_blob(entry.id())?;
        let count =
            FeatureList::parse(&String::from_utf8_lossy(blob.content())).map_or(0, |l| l.passing());
        self.last = Some((entry.id(), count));
        Ok(count)
    }
}

fn render(project: &Project) -> anyhow::Result<String> {
    let facts = gather(project)?;
    let mut body = String::new();
    body.push_str(&summary(&facts));
    body.push_str(&charts(&facts));
    body.push_str(&verdict_counts(&facts));
    body.push_str(&stuck(&facts));
    body.push_str(&features_table(&facts));
    body.push_str(&timeline(&facts));
    body.push_str(&sessions_table(&facts));
    body.push_str(&commits(&facts));
    Ok(format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>longrun report: {name}</title>\n<style>\n{STYLE}</style>\n</head>\n\
         <body>\n<header><h1>{name}</h1><p>longrun report, from main's first-parent history</p></header>\n\
         <main>\n{body}</main>\n</body>\n</html>\n",
        name = escape(&facts.name)
    ))
}

fn summary(f: &Facts) -> String {
    let (tin, tout) = f.history.tokens();
    let total = f.features.features.len();
    format!(
        r#"<section id="summary" class="cards">
<div class="card"><b id="passing">{}/{total}</b><span>features passing</span></div>
<div class="card"><b>{}</b><span>sessions</span></div>
<div class="card"><b>{} / {}</b><span>tokens in / out</span></div>
<div class="card"><b>${:.4}</b><span>cost</span></div>
<div class="card"><b id="cost-per-feature">{}</b><span>cost per accepted feature</span></div>
</section>
"#,
        f.features.passing(),
        f.history.sessions.len(),
        tokens(tin),
        tokens(tout),
        f.history.cost(),
        cost_per_feature(f)
    )
}

/// The run's cost over the features its worker sessions got accepted.
fn cost_per_feature(f: &Facts) -> String {
    let accepted = f
        .history
        .sessions
        .iter()
        .filter(|s| s.role == "worker" && s.verdict == "accepted")
        .count();
    match (accepted, f.history.cost()) {
        (0, _) => "–".to_string(),
        (_, 0.0) => "–".to_string(),
        (n, c) => format!("${:.4}", c / n as f64),
    }
}

/// Each feature's attempts in order, their verdicts, and what it cost.
fn timeline(f: &Facts) -> String {
    let mut out = String::from(
        "<section id=\"timeline\">\n<h2>Feature timeline</h2>\n<table><thead><tr><th>id</th>\
         <th>attempts, in order</th><th>cost</th></tr></thead><tbody>\n",
    );
    for feature in &f.features.features {
        let sessions: Vec<&SessionRow> = f
            .history
            .sessions
            .iter()
            .filter(|s| s.feature.as_deref() == Some(feature.id.as_str()))
            .collect();
        let marks: Vec<String> = sessions
            .iter()
            .map(|s| {
                format!(
                    r##"<a href="#session-{n}" title="session {n}: {v}">{}</a>"##,
                    badge(&s.verdict),
                    n = s.session,
                    v = escape(&s.verdict)
                )
            })
            .collect();
        let cost: f64 = sessions.iter().map(|s| s.cost_usd).sum();
        let _ = writeln!(
            out,
            r#"<tr data-feature="{id}"><td><code>{id}</code></td><td class="timeline">{}</td><td class="num">${cost:.4}</td></tr>"#,
            if marks.is_empty() {
                "not tried yet".to_string()
            } else {
                marks.join("")
            },
            id = escape(&feature.id)
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

/// `text` escaped, with `inline code` in backticks set as code.
fn with_code(text: &str) -> String {
    let parts: Vec<&str> = text.split('`').collect();
    if parts.len() < 3 {
        return escape(text);
    }
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        // An odd count of backticks leaves the last one as it was.
        if i % 2 == 1 && i + 1 < parts.len() {
            let _ = write!(out, "<code>{}</code>", escape(part));
        } else if i % 2 == 1 {
            let _ = write!(out, "`{}", escape(part));
        } else {
            out.push_str(&escape(part));
        }
    }
    out
}

fn charts(f: &Facts) -> String {
    let mut out = String::from("<section id=\"charts\">\n");
    out.push_str("<h2>Features passing over sessions</h2>\n");
    out.push_str(&chart::passing_line(
        "chart-passing",
        &f.passing,
        f.features.features.len(),
    ));
    let series = [
        Series {
            name: "tokens in",
            color: "#0969da",
        },
        Series {
            name: "tokens out",
            color: "#bf8700",
        },
    ];
    let bars: Vec<Bar> = f
        .history
        .sessions
        .iter()
        .map(|s| Bar {
            session: s.session,
            values: vec![s.tokens_in as f64, s.tokens_out as f64],
            title: format!(
                "session {}: {} in / {} out tokens",
                s.session, s.tokens_in, s.tokens_out
            ),
        })
        .collect();
    out.push_str("<h2>Tokens per session</h2>\n");
    out.push_str(&chart::stacked_bars(
        "chart-tokens",
        "tokens per session",
        &bars,
        &series,
        &|v| tokens(v as u64),
    ));
    out.push_str(&chart::legend(&series));
    out.push_str(&cost_chart(f));
    out.push_str("</section>\n");
    out
}

fn cost_chart(f: &Facts) -> String {
    let series = [Series {
        name: "cost (USD)",
        color: "#8250df",
    }];
    let bars: Vec<Bar> = f
        .history
        .sessions
        .iter()
        .map(|s| Bar {
            session: s.session,
            values: vec![s.cost_usd],
            title: format!("session {}: ${:.4}", s.session, s.cost_usd),
        })
        .collect();
    let mut out = String::from("<h2>Cost per session</h2>\n");
    if f.history.cost() == 0.0 {
        out.push_str(
            "<p class=\"note\" id=\"no-cost\">No cost was recorded: the model's price is not known to longrun.</p>\n",
        );
        return out;
    }
    let max = bars.iter().map(|b| b.values[0]).fold(0.0, f64::max);
    out.push_str(&chart::stacked_bars(
        "chart-cost",
        "cost per session",
        &bars,
        &series,
        &chart::money(max, 4),
    ));
    out
}

fn verdict_counts(f: &Facts) -> String {
    let mut out = String::from(
        "<section id=\"verdicts\">\n<h2>Verdicts</h2>\n<table><thead><tr><th>verdict</th><th>sessions</th></tr></thead><tbody>\n",
    );
    for v in VERDICTS {
        let n = f
            .history
            .sessions
            .iter()
            .filter(|s| s.verdict() == Some(v))
            .count();
        let _ = writeln!(
            out,
            r#"<tr data-verdict="{v}"><td>{}</td><td class="num">{n}</td></tr>"#,
            badge(v.as_str())
        );
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

fn badge(verdict: &str) -> String {
    format!(r#"<span class="badge {v}">{v}</span>"#, v = escape(verdict))
}

fn stuck(f: &Facts) -> String {
    let stuck: Vec<_> = f
        .features
        .features
        .iter()
        .filter(|x| !x.passes && f.history.is_stuck(&x.id, f.max_attempts))
        .collect();
    let mut out = String::from("<section id=\"stuck\">\n<h2>Stuck features</h2>\n");
    if stuck.is_empty() {
        out.push_str("<p class=\"note\">None: no feature has run out of attempts.</p>\n");
    }
    for feature in stuck {
        let stats = f.history.stats(&feature.id);
        let _ = writeln!(
            out,
            "<div class=\"stuck-feature\" data-feature=\"{id}\"><h3>{id}</h3><p>{} — {} failed attempts; \
             <code>longrun retry {id}</code> tries it again.</p><ul>",
            with_code(&feature.description),
            stats.failed_attempts,
            id = escape(&feature.id)
        );
        for r in &stats.last_reasons {
            let _ = writeln!(out, "<li>{}</li>", with_code(r));
        }
        out.push_str("</ul></div>\n");
    }
    out.push_str("</section>\n");
    out
}

fn features_table(f: &Facts) -> String {
    let mut out = String::from(
        "<section id=\"features\">\n<h2>Features</h2>\n<table><thead><tr><th>id</th><th>passes</th>\
         <th>attempts</th><th>last verdict</th><th>description</th></tr></thead><tbody>\n",
    );
    for feature in &f.features.features {
        let stats = f.history.stats(&feature.id);
        let state = if feature.passes {
            "yes"
        } else if f.history.is_stuck(&feature.id, f.max_attempts) {
            "stuck"
        } else {
            "no"
        };
        let _ = writeln!(
            out,
            r#"<tr data-feature="{id}"><td><code>{id}</code></td><td><span class="state {state}">{state}</span></td><td class="num">{}</td><td>{}</td><td>{}</td></tr>"#,
            stats.attempts,
            stats
                .last_verdict
                .as_deref()
                .map(badge)
                .unwrap_or_else(|| "–".into()),
            with_code(&feature.description),
            id = escape(&feature.id)
        );
    }
    if f.features.features.is_empty() {
        out.push_str("<tr><td colspan=\"5\">No features yet: the initializer has not been accepted.</td></tr>\n");
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

fn sessions_table(f: &Facts) -> String {
    let mut out = String::from(
        "<section id=\"sessions\">\n<h2>Sessions</h2>\n<table><thead><tr><th>#</th><th>role</th>\
         <th>feature</th><th>verdict</th><th>steps</th><th>tokens in / out</th><th>cost</th>\
         <th>time</th><th>finished</th><th>commit</th><th>reason</th></tr></thead><tbody>\n",
    );
    for s in &f.history.sessions {
        out.push_str(&session_row(s));
    }
    out.push_str("</tbody></table>\n</section>\n");
    out
}

fn session_row(s: &SessionRow) -> String {
    format!(
        "<tr id=\"session-{n}\"><td class=\"num\">{n}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{} / {}</td><td class=\"num\">${:.4}</td>\
         <td class=\"num\">{}</td><td class=\"when\">{}</td><td><a class=\"commit\" href=\"#commit-{c}\"><code>{}</code></a></td><td>{}</td></tr>\n",
        escape(&s.role),
        escape(s.feature.as_deref().unwrap_or("–")),
        badge(&s.verdict),
        s.steps,
        tokens(s.tokens_in),
        tokens(s.tokens_out),
        s.cost_usd,
        duration(s.duration_s),
        finished(s.time),
        short_id(&s.commit),
        with_code(s.reasons.first().map(String::as_str).unwrap_or("")),
        n = s.session,
        c = escape(&s.commit)
    )
}

/// When the verdict was recorded, in UTC to the minute.
fn finished(time: i64) -> String {
    let stamp = rfc3339(time);
    format!("{} {}", &stamp[..10], &stamp[11..16])
}

/// The verdict commits, each with its full id and reasons: where the session rows link.
fn commits(f: &Facts) -> String {
    let mut out = String::from("<section id=\"commits\">\n<h2>Verdict commits</h2>\n");
    for s in f.history.sessions.iter().rev() {
        let _ = write!(
            out,
            "<div class=\"commit\" id=\"commit-{c}\"><p><a href=\"#session-{n}\">session {n}</a> {} \
             <code>{c}</code></p><p class=\"note\">model {} · <code>git show {}</code>{}</p>",
            badge(&s.verdict),
            escape(&s.model),
            short_id(&s.commit),
            s.work_ref
                .as_deref()
                .map(|r| format!(" · work kept at <code>{}</code>", escape(r)))
                .unwrap_or_default(),
            n = s.session,
            c = escape(&s.commit)
        );
        if !s.reasons.is_empty() {
            out.push_str("<ul>");
            for r in &s.reasons {
                let _ = write!(out, "<li>{}</li>", with_code(r));
            }
            out.push_str("</ul>");
        }
        out.push_str("</div>\n");
    }
    out.push_str("</section>\n");
    out
}
