//! The guided initializer: the harness leads a model that does not drive
//! tools well through the initializer's job in steps it can check.
//!
//! 1. The feature list, asked as a JSON array of `{description, steps}`;
//!    the harness gives the ids.
//! 2. For each feature, its acceptance test, written whole in one block.
//!    The harness names the file, runs the feature's check, and sends back
//!    once a test that passes with nothing built or cannot run; a test that
//!    is still unusable drops its feature, named in progress.md.
//! 3. The harness writes each check for the project's test framework,
//!    `init.sh`, `progress.md`, `.gitignore`, and commits.
//!
//! Verification is unchanged: the orchestrator runs every check on the
//! committed tree and accepts only checks that fail there.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::framework::{slug, Framework, Module};
use super::judge::{judge, TestJob};
use super::plan::{self, Planned};
use super::stub;
use crate::broker::{
    OrchestratorMessage, SessionEvent, WorkerEnd, WorkerLink, WorkerMessage, WorkerReport,
};
use crate::confined::Budget;
use crate::model::{ChatRequest, Message};
use crate::protocol::WorkerConfig;

/// Features planned at most; the rest of a longer list is left for `amend`.
const MAX_FEATURES: usize = 12;
/// Output caps: a plan of a dozen features, a test file of eight tests.
/// Uncapped, the 1.5B Qwen coder wrote one test file of 3,686 tokens, each
/// test a copy of the last with one more space, until the server's cap.
const PLAN_TOKENS: u32 = 1500;
/// On the dev specs its usable test answers took 150-460 tokens, and the
/// ones that repeat one assertion ran to any cap: a loop is cut at 700 and
/// kept up to its last whole line.
const TEST_TOKENS: u32 = 700;
/// Bytes of SPEC.md put in a prompt.
const SPEC_BYTES: usize = 24 * 1024;

const SYSTEM: &str = "You plan and test software projects. You answer exactly in the form asked, \
with no extra commentary.";

/// One feature with the test the model wrote for it.
struct Tested {
    planned: Planned,
    id: String,
    test: String,
    check: String,
}

/// What became of the features planned.
struct Outcome {
    kept: Vec<Tested>,
    dropped: Vec<(String, String)>,
}

/// The session the model asks through, and what it may spend.
struct Asker<'a> {
    link: &'a mut WorkerLink,
    budget: Budget,
    /// The longest model call so far: how long the next may take.
    longest: Duration,
}

impl Asker<'_> {
    /// One model call without tools, its answer at most `max_output_tokens`
    /// long; Err is why there is no answer.
    fn ask(
        &mut self,
        messages: Vec<Message>,
        max_output_tokens: u32,
    ) -> anyhow::Result<Result<String, String>> {
        if let Some(reason) = self.budget.exhausted() {
            return Ok(Err(reason));
        }
        self.budget.step();
        let request = ChatRequest {
            system: SYSTEM.into(),
            messages,
            tools: Vec::new(),
            temperature: None,
            stop: Vec::new(),
            max_output_tokens: Some(max_output_tokens),
        };
        let started = std::time::Instant::now();
        let answer = self.link.ask(request, false)?;
        self.longest = self.longest.max(started.elapsed());
        match answer {
            OrchestratorMessage::ModelResponse { response, notice } => {
                self.budget.spend(response.usage, response.cost_usd);
                if let Some(text) = notice {
                    self.notice(text)?;
                }
                Ok(Ok(response.text))
            }
            OrchestratorMessage::ModelError { message, .. } => Ok(Err(message)),
            OrchestratorMessage::ModelCandidates { .. } => {
                anyhow::bail!("the orchestrator answered one request with candidates")
            }
        }
    }

    /// Whether a test can still be asked for, judged, sent back once and
    /// committed before the wall-time budget ends the session: the harness
    /// keeps what it has rather than be killed with nothing committed.
    fn time_for_a_test(&self, check_timeout: Duration) -> bool {
        time_for_a_test(self.budget.time_left(), self.longest, check_timeout)
    }

    fn notice(&mut self, text: String) -> anyhow::Result<()> {
        self.link.send(&WorkerMessage::Event {
            event: SessionEvent::Notice { text },
        })
    }
}

/// Two calls as long as the longest so far (the test and one send-back),
/// its check twice, and the commit fit in `left`.
fn time_for_a_test(left: Duration, longest: Duration, check_timeout: Duration) -> bool {
    let margin = Duration::from_secs(20) + check_timeout.min(Duration::from_secs(60));
    left > longest * 2 + margin
}

/// Run the guided initializer; whatever happens becomes the report.
pub fn run_guided(config: &WorkerConfig, workspace: &Path, link: &mut WorkerLink) -> WorkerReport {
    let mut asker = Asker {
        link,
        budget: Budget::new(config.budget.clone()),
        longest: Duration::ZERO,
    };
    let (ended, reason) = match guide(config, workspace, &mut asker) {
        Ok(Ok(summary)) => (WorkerEnd::Completed, summary),
        Ok(Err(why)) => (WorkerEnd::Failed, why),
        Err(e) => (WorkerEnd::Failed, format!("{e:#}")),
    };
    WorkerReport {
        ended,
        reason: Some(reason),
        steps: asker.budget.steps(),
        passes_others: Vec::new(),
    }
}

fn guide(
    config: &WorkerConfig,
    ws: &Path,
    asker: &mut Asker,
) -> anyhow::Result<Result<String, String>> {
    let Some(spec) = read_spec(ws) else {
        return Ok(Err("there is no SPEC.md in the project to plan from".into()));
    };
    let framework = Framework::detect(&spec, ws);
    let module = framework.module(&spec, ws);
    for (path, text) in framework.scaffold(&module, ws) {
        write(ws, &path, &text)?;
    }
    let names = stub::spec_names(&spec);
    let api = stub::Api::of(&spec, &names);
    write_stub(ws, framework, &module, &names, &api)?;
    let planned = match plan::from_spec(&spec, MAX_FEATURES) {
        Some(list) => {
            asker.notice("the features are SPEC.md's own list".into())?;
            let missing = uncovered(&list, &names);
            completed(list, &missing)
        }
        None => match ask_plan(asker, &spec, &names)? {
            Ok(p) => p,
            Err(why) => return Ok(Err(format!("the model gave no feature list: {why}"))),
        },
    };
    // How long a test's call takes is what the budget check needs; the
    // plan's, asked with a larger output cap, is not one.
    asker.longest = Duration::ZERO;
    asker.notice(format!(
        "planned {} feature(s); writing their acceptance tests ({}, code in {})",
        planned.len(),
        framework.name(),
        module.file
    ))?;
    let prefix = prompt_prefix(&spec, &planned, framework, &module);
    let timeout = Duration::from_secs(config.check_timeout_secs);
    let mut known = names;
    let target = Target {
        framework,
        module: &module,
        timeout,
        api: &api,
    };
    let outcome = write_tests(asker, ws, &prefix, planned, &mut known, &target)?;
    if outcome.kept.is_empty() {
        return Ok(Err(format!(
            "no feature got an acceptance test that fails before the work: {}",
            named(&outcome.dropped)
        )));
    }
    let imported = kept_imports(ws, framework, &module, &outcome.kept);
    write_stub(
        ws,
        framework,
        &module,
        if imported.is_empty() {
            &known
        } else {
            &imported
        },
        &api,
    )?;
    write_contract(ws, framework, &module, &outcome)?;
    let message = format!(
        "Plan {} feature(s) with acceptance tests\n\nWritten by the guided initializer ({}).",
        outcome.kept.len(),
        framework.name()
    );
    super::super::commit::commit_all(ws, &message)?;
    Ok(Ok(summary(&outcome)))
}

fn summary(outcome: &Outcome) -> String {
    let mut text = format!(
        "planned {} feature(s), each with an acceptance test that fails before the work",
        outcome.kept.len()
    );
    if !outcome.dropped.is_empty() {
        text.push_str(&format!("; dropped {}", named(&outcome.dropped)));
    }
    text
}

fn named(dropped: &[(String, String)]) -> String {
    dropped
        .iter()
        .map(|(what, why)| format!("{what} ({why})"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn read_spec(ws: &Path) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(ws.join("SPEC.md"))
        .ok()?
        .take(SPEC_BYTES as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    (!text.trim().is_empty()).then_some(text)
}

fn write(ws: &Path, path: &str, text: &str) -> anyhow::Result<()> {
    let full = ws.join(path);
    if let Some(dir) = full.parent() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(std::fs::write(full, text)?)
}

/// Ask for the feature list; once more with what was wrong. Functions the
/// spec names that no feature covers after that get a feature each.
fn ask_plan(
    asker: &mut Asker,
    spec: &str,
    names: &[String],
) -> anyhow::Result<Result<Vec<Planned>, String>> {
    let mut messages = vec![Message::User {
        content: plan_request(spec, names),
    }];
    let mut why = String::new();
    for round in 0..2 {
        let answer = match asker.ask(messages.clone(), PLAN_TOKENS)? {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        let parsed = plan::parse(&answer);
        if let Ok(list) = &parsed {
            let missing = uncovered(list, names);
            if missing.is_empty() || round == 1 {
                return Ok(Ok(completed(list.clone(), &missing)));
            }
            why = format!(
                "the plan leaves out {}: every function the spec names belongs to a feature. Reply with the whole JSON array again",
                missing.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            );
        }
        if let Err(e) = parsed {
            why = e;
        }
        messages.push(Message::Assistant {
            text: answer,
            tool_calls: Vec::new(),
        });
        messages.push(Message::User {
            content: format!("[harness] {why}."),
        });
    }
    Ok(Err(why))
}

fn plan_request(spec: &str, names: &[String]) -> String {
    let named =
        match names.is_empty() {
            true => String::new(),
            false => format!(
            " The spec names these functions: {}; give each its own feature, in the spec's order.",
            names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
        ),
        };
    format!(
        "SPEC.md:\n```markdown\n{spec}\n```\n\nList the features this spec asks for, in the order to build them \
         (foundations first), each small enough to build and test on its own, at most {MAX_FEATURES}.{named} \
         Reply with a JSON array only, one object per feature:\n```json\n[{{\"description\": \"`name(args)`: what it \
         does, with the exact behaviour the spec gives\", \"steps\": [\"one way to see it works\"]}}]\n```"
    )
}

/// The names no planned feature's description mentions.
fn uncovered(list: &[Planned], names: &[String]) -> Vec<String> {
    names
        .iter()
        .filter(|n| !list.iter().any(|p| mentions(&p.description, n)))
        .cloned()
        .collect()
}

fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + name.len()..].chars().next();
        let word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        !word(before) && !word(after)
    })
}

/// `list` with a feature for each name in `missing`, and at most [`MAX_FEATURES`].
fn completed(mut list: Vec<Planned>, missing: &[String]) -> Vec<Planned> {
    list.retain(|p| !p.description.trim().is_empty());
    for name in missing {
        list.push(Planned {
            description: format!("`{name}`: as SPEC.md describes it"),
            steps: Vec::new(),
        });
    }
    list.truncate(MAX_FEATURES);
    list
}

/// The names the kept tests import from the module: what its final stub holds.
fn kept_imports(ws: &Path, framework: Framework, module: &Module, kept: &[Tested]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for t in kept {
        let text = std::fs::read_to_string(ws.join(&t.test)).unwrap_or_default();
        for name in stub::imported_names(&text, framework, module) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
    }
    names
}

/// The module under test as stubs of `names`, where the harness may write it.
fn write_stub(
    ws: &Path,
    framework: Framework,
    module: &Module,
    names: &[String],
    api: &stub::Api,
) -> anyhow::Result<()> {
    let current = std::fs::read_to_string(ws.join(&module.file)).ok();
    if !stub::replaceable(current.as_deref()) {
        return Ok(());
    }
    match stub::render(framework, names, api) {
        Some(text) => write(ws, &module.file, &text),
        None => Ok(()),
    }
}

/// What every test request starts with, so a local server's prompt cache
/// holds it across the requests: the spec and the whole plan.
fn prompt_prefix(spec: &str, planned: &[Planned], framework: Framework, module: &Module) -> String {
    let list: Vec<String> = planned
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}: {}", feature_id(i), p.description))
        .collect();
    format!(
        "SPEC.md:\n```markdown\n{spec}\n```\n\nThe features, in order:\n{}\n\nThe code will go in `{}` \
         (not written yet). Acceptance tests are {} files that import it: `{}`.\n\n",
        list.join("\n"),
        module.file,
        framework.name(),
        framework.import_line(module)
    )
}

fn feature_id(index: usize) -> String {
    format!("F{:03}", index + 1)
}

fn write_tests(
    asker: &mut Asker,
    ws: &Path,
    prefix: &str,
    planned: Vec<Planned>,
    names: &mut Vec<String>,
    target: &Target,
) -> anyhow::Result<Outcome> {
    let Target {
        framework,
        module,
        timeout,
        api,
    } = *target;
    let mut outcome = Outcome {
        kept: Vec::new(),
        dropped: Vec::new(),
    };
    for (i, p) in planned.into_iter().enumerate() {
        let id = feature_id(i);
        if !outcome.kept.is_empty() && !asker.time_for_a_test(timeout) {
            let why = "no time was left in the session's wall-time budget".to_string();
            asker.notice(format!("left out {id} ({}): {why}", p.description))?;
            outcome
                .dropped
                .push((format!("{id} `{}`", p.description), why));
            continue;
        }
        let own: Vec<String> = names
            .iter()
            .filter(|n| mentions(&p.description, n))
            .cloned()
            .collect();
        let word = own.first().cloned().unwrap_or_else(|| slug(&p.description));
        let test = framework.test_path(&id, &word);
        let check = framework.check(&test);
        let job = TestJob {
            id: &id,
            planned: &p,
            test: &test,
            check: &check,
            framework,
            module,
            timeout,
            names: if own.is_empty() {
                names.clone()
            } else {
                own.clone()
            },
            api,
        };
        match write_test(asker, ws, prefix, &job, names)? {
            Ok(()) => outcome.kept.push(Tested {
                planned: p,
                id,
                test,
                check,
            }),
            Err(why) => {
                let _ = std::fs::remove_file(ws.join(&test));
                asker.notice(format!("dropped {id} ({}): {why}", p.description))?;
                outcome
                    .dropped
                    .push((format!("{id} `{}`", p.description), why));
            }
        }
    }
    Ok(outcome)
}

/// What every feature's test is written for: the framework, the module
/// under test, how long a check may run.
#[derive(Clone, Copy)]
struct Target<'a> {
    framework: Framework,
    module: &'a Module,
    timeout: Duration,
    api: &'a stub::Api,
}

/// Ask for one feature's test, write it and judge it; send an unusable
/// one back once. Err: why the feature has no usable test.
fn write_test(
    asker: &mut Asker,
    ws: &Path,
    prefix: &str,
    job: &TestJob,
    names: &mut Vec<String>,
) -> anyhow::Result<Result<(), String>> {
    let mut messages = vec![Message::User {
        content: format!("{prefix}{}", test_request(job)),
    }];
    let mut why = String::new();
    for _ in 0..2 {
        let answer = match asker.ask(messages.clone(), TEST_TOKENS)? {
            Ok(a) => a,
            Err(e) => return Ok(Err(e)),
        };
        let feedback = match test_block(&answer, job.framework) {
            None => format!(
                "no ```{} block with the test was found",
                job.framework.language()
            ),
            Some(body) => {
                write(ws, job.test, &body)?;
                let imported = stub::imported_names(&body, job.framework, job.module);
                let new: Vec<String> = imported
                    .into_iter()
                    .filter(|n| !names.contains(n))
                    .collect();
                if !new.is_empty() {
                    names.extend(new);
                    write_stub(ws, job.framework, job.module, names, job.api)?;
                }
                match judge(ws, job) {
                    Ok(()) => return Ok(Ok(())),
                    Err(e) => e,
                }
            }
        };
        why = feedback.lines().next().unwrap_or_default().to_string();
        messages.push(Message::Assistant {
            text: answer,
            tool_calls: Vec::new(),
        });
        messages.push(Message::User {
            content: format!("[harness] This test cannot be used: {feedback}\nWrite the whole file `{}` again, fixed.", job.test),
        });
    }
    Ok(Err(why))
}

fn test_request(job: &TestJob) -> String {
    let steps = match job.planned.steps.is_empty() {
        true => String::new(),
        false => format!(" Steps: {}.", job.planned.steps.join("; ")),
    };
    format!(
        "Write the acceptance test of {} only: {}{steps}\nIt is the {} file `{}`; it imports the code with \
         `{}` and must fail until the feature is built. Test exactly the behaviour the spec asks for, with \
         concrete inputs and the expected values the spec gives: 3 to 8 small tests, standard library only, \
         no network, no files, no randomness. Do not implement the feature.\nReply with the path on one line \
         and the whole file in one ```{} block, shaped like this:\n```{}\n{}```",
        job.id,
        job.planned.description,
        job.framework.name(),
        job.test,
        job.framework.import_line(job.module),
        job.framework.language(),
        job.framework.language(),
        skeleton(job)
    )
}

/// The test's shape: what it imports, and a call of the first function
/// (or method) the feature is about, not of a class's constructor.
fn skeleton(job: &TestJob) -> String {
    let imports = job.api.imports(&job.names);
    let capital = |n: &&String| n.starts_with(|c: char| c.is_ascii_uppercase());
    let (setup, call) = match job.names.iter().find(|n| !capital(n)).or(job.names.first()) {
        Some(name) => job.api.call(job.framework, name),
        None => (String::new(), "the_function".to_string()),
    };
    job.framework
        .skeleton(job.module, &imports, (&setup, &call), job.id)
}

/// The test in an answer: the longest closed block that reads like a
/// test in the framework's language (an implementation block beside it is
/// left out).
fn test_block(answer: &str, framework: Framework) -> Option<String> {
    let markers: &[&str] = match framework {
        Framework::Unittest => &["unittest", "def test"],
        Framework::Pytest => &["def test", "assert "],
        Framework::NodeTest => &["node:test", "test(", "it("],
        Framework::CargoTest => &["#[test]"],
    };
    let body = crate::confined::text_calls::fences(answer)
        .into_iter()
        .filter_map(|f| match f.closed {
            true => Some(f.body),
            false => whole_tests(&f.body, framework),
        })
        .filter(|b| markers.iter().any(|m| b.contains(m)))
        .max_by_key(String::len)?;
    let mut body = body;
    if !body.ends_with('\n') {
        body.push('\n');
    }
    Some(body)
}

/// A block cut off by the output cap, up to its last whole test: the
/// tests before the one it was writing when cut are kept. A Python block
/// whose first test was cut (a small model repeating one assertion until
/// the cap) keeps that test up to its last whole line.
fn whole_tests(body: &str, framework: Framework) -> Option<String> {
    let end = match framework {
        Framework::Unittest | Framework::Pytest => {
            let last = body
                .rfind("\n    def test")
                .or_else(|| body.rfind("\ndef test"))?;
            let before = body[..last]
                .rfind("\n    def test")
                .or_else(|| body[..last].rfind("\ndef test"));
            match before {
                Some(_) => last,
                None => body.rfind('\n').filter(|end| *end > last)?,
            }
        }
        Framework::NodeTest => match body.rfind("\n});\n") {
            Some(end) => end + 5,
            None => return cut_first_test(body, "test(", "});\n"),
        },
        Framework::CargoTest => body.rfind("\n}\n")? + 3,
    };
    Some(body[..end].trim_end().to_string() + "\n")
}

/// A block cut inside its first `opener` test: its whole lines, closed.
fn cut_first_test(body: &str, opener: &str, close: &str) -> Option<String> {
    let start = body.find(opener)?;
    let end = body.rfind('\n').filter(|end| *end > start)?;
    Some(format!("{}\n{close}", body[..end].trim_end()))
}

/// features.json, init.sh, progress.md and .gitignore for what was kept.
fn write_contract(
    ws: &Path,
    framework: Framework,
    module: &Module,
    outcome: &Outcome,
) -> anyhow::Result<()> {
    let features: Vec<Map<String, Value>> = outcome
        .kept
        .iter()
        .map(|t| feature_json(t, module))
        .collect();
    write(
        ws,
        crate::features::FILE_NAME,
        &crate::features::render(&features),
    )?;
    if !ws.join("init.sh").exists() {
        write(ws, "init.sh", &framework.init_script())?;
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(ws.join("init.sh"), std::fs::Permissions::from_mode(0o755))?;
    write(
        ws,
        crate::progress::FILE_NAME,
        &progress(framework, module, outcome),
    )?;
    let ignore = std::fs::read_to_string(ws.join(".gitignore")).unwrap_or_default();
    let missing: String = framework
        .gitignore()
        .lines()
        .filter(|l| !ignore.lines().any(|have| have == *l))
        .map(|l| format!("{l}\n"))
        .collect();
    write(ws, ".gitignore", &format!("{ignore}{missing}"))
}

fn feature_json(t: &Tested, module: &Module) -> Map<String, Value> {
    let mut steps = t.planned.steps.clone();
    steps.push(format!("write {} so that {} passes", module.file, t.test));
    let value = json!({
        "id": t.id,
        "category": "functional",
        "description": t.planned.description,
        "steps": steps,
        "check": t.check,
        "files": [module.file],
        "passes": false,
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn progress(framework: Framework, module: &Module, outcome: &Outcome) -> String {
    let mut text = format!(
        "# Progress\n\nPlanned from SPEC.md by the guided initializer.\n\n- The code goes in `{}`.\n\
         - Each feature's acceptance test is a {} file under `tests/`; its `check` in features.json runs it.\n\
         - The tests are frozen: change the code, never the tests.\n",
        module.file,
        framework.name()
    );
    for t in &outcome.kept {
        text.push_str(&format!(
            "- {}: {} (`{}`)\n",
            t.id, t.planned.description, t.test
        ));
    }
    if !outcome.dropped.is_empty() {
        text.push_str(&format!(
            "\nLeft out (no usable test): {}. Add them with `longrun features add` once their tests are written.\n",
            named(&outcome.dropped)
        ));
    }
    text.push_str("\nNext: the first feature with `\"passes\": false`.\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_is_asked_for_only_while_two_calls_and_a_check_still_fit() {
        let s = Duration::from_secs;
        assert!(time_for_a_test(s(300), s(60), s(600)));
        assert!(
            !time_for_a_test(s(150), s(60), s(600)),
            "120 s of calls and 80 s of margin"
        );
        assert!(time_for_a_test(s(150), s(60), s(5)));
    }

    #[test]
    fn the_test_block_is_the_test_not_the_implementation_beside_it() {
        let answer = "calc.py\n```python\ndef add(a, b):\n    return a + b\n```\n\ntests/test_f001_add.py\n```python\nimport unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n```\n";
        let body = test_block(answer, Framework::Unittest).unwrap();
        assert!(body.starts_with("import unittest"), "{body}");
        assert_eq!(test_block("no code here", Framework::Unittest), None);
        assert_eq!(
            test_block("```python\nx = 1\n```", Framework::Unittest),
            None
        );
        let cut = "```python\nimport unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(1, 1)\n\n    def test_b(self):\n        self.assertEq";
        let kept = test_block(cut, Framework::Unittest).unwrap();
        assert!(
            kept.ends_with("self.assertEqual(1, 1)\n") && !kept.contains("test_b"),
            "{kept}"
        );
        let one = "```python\nimport unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(1), 2)\n        self.assertEqual(f(2), 3)\n        self.as";
        assert_eq!(
            test_block(one, Framework::Unittest).as_deref(),
            Some("import unittest\nclass T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(1), 2)\n        self.assertEqual(f(2), 3)\n"),
            "a first test cut in its body is kept up to its last whole line"
        );
        let js = "```javascript\nconst test = require('node:test');\n\ntest('a', () => {\n  assert.strictEqual(f(1), 2);\n  assert.str";
        assert_eq!(
            test_block(js, Framework::NodeTest).as_deref(),
            Some("const test = require('node:test');\n\ntest('a', () => {\n  assert.strictEqual(f(1), 2);\n});\n")
        );
    }
}
