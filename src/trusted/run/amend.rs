//! Amending the contract: `longrun features` (list, add, reopen), `longrun
//! amend` and `retry` of a passing feature. The contract is what sessions
//! are verified against: `features.json`, `SPEC.md`, and the protected and
//! frozen files. No session may change it (that rule lives in `rules.rs`
//! and `features.rs`); a person changes it here, with a commit of its own on
//! main that says so in its trailers (`Longrun-Role: human`), re-validated
//! as an initializer's list is: ids unique and safe, every feature with a
//! check, and the check of every feature added failing on the new tree.
//!
//! Nothing here runs while a run holds the project's lock.

use std::path::Path;

use anyhow::Context;
use git2::Oid;
use serde_json::Value;

use crate::error::bad_input;
use crate::features::{self, Feature, FeatureList};
use crate::sanitize;
use crate::schema::{trailer, ContractChange, Role, HUMAN};
use crate::trusted::verify::verification::{self, CheckRun};
use crate::trusted::{record::lock, record::repo, Project};

/// `longrun features`: one row per feature: id, passes, attempts, stuck, check.
pub fn list(dir: &Path, as_json: bool) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let list = features_on_main(&project)?;
    let history = project.history()?;
    let max = project.config.run.max_attempts;
    let stuck = |f: &Feature| !f.passes && history.is_stuck(&f.id, max);
    let closures = crate::trusted::verify::acceptance::closures_on_main(&project);
    let closure = |id: &str| closures.get(id).cloned().unwrap_or_default();
    if as_json {
        let rows: Vec<Value> = list
            .features
            .iter()
            .map(|f| {
                let s = history.stats(&f.id);
                serde_json::json!({
                    "id": f.id, "description": f.description, "check": f.check,
                    "passes": f.passes, "attempts": s.attempts,
                    "failed_attempts": s.failed_attempts, "stuck": stuck(f),
                    "frozen_closure": closure(&f.id),
                })
            })
            .collect();
        return Ok(format!("{}\n", serde_json::to_string_pretty(&rows)?));
    }
    let mut rows = vec![["ID", "PASSES", "ATTEMPTS", "STATE", "CHECK"].map(String::from)];
    for f in &list.features {
        let s = history.stats(&f.id);
        let state = if f.passes {
            "done"
        } else if stuck(f) {
            "stuck"
        } else {
            "open"
        };
        rows.push([
            f.id.clone(),
            if f.passes { "yes" } else { "no" }.into(),
            format!("{} ({} failed)", s.attempts, s.failed_attempts),
            state.into(),
            f.check.clone().unwrap_or_default(),
        ]);
    }
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    let mut out = crate::view::text::render_table(&rows);
    out.push_str(&frozen_closures(&closures));
    Ok(out)
}

/// What each check's closure holds frozen, one line per check, for `features`.
fn frozen_closures(closures: &std::collections::BTreeMap<String, Vec<String>>) -> String {
    let lines: Vec<String> = closures
        .iter()
        .filter(|(_, files)| !files.is_empty())
        .map(|(check, files)| {
            let files = sanitize::line(&files.join(", "));
            format!("  {}: {files}\n", sanitize::line(check))
        })
        .collect();
    match lines.is_empty() {
        true => String::new(),
        false => format!(
            "\nfrozen with each check (what it runs, imports or reads; no worker may change it):\n{}",
            lines.concat()
        ),
    }
}

/// What `features add` is given.
pub struct NewFeature {
    pub id: String,
    pub description: String,
    pub check: String,
}

/// `longrun features add`: a feature appended to features.json on main,
/// whose check must fail on main's tree as it is (FAIL_TO_PASS).
pub async fn add(dir: &Path, new: NewFeature) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let _lock = take_lock(&project, "features add")?;
    let main = main_of(&project)?;
    let list = features_on_main(&project)?;
    if list.get(&new.id).is_some() {
        return Err(bad_input(format!(
            "features.json already has a feature `{}`; choose another --id, or `longrun features reopen {}`",
            features::printable(&new.id),
            features::printable(&new.id)
        )));
    }
    let mut items = feature_objects(&project, main)?;
    let mut object = serde_json::Map::new();
    object.insert("id".into(), new.id.clone().into());
    object.insert("description".into(), new.description.clone().into());
    object.insert("check".into(), new.check.clone().into());
    object.insert("passes".into(), false.into());
    items.push(object);
    let text = features::render(&items);
    let tree = tree_with(
        &project,
        main,
        &[(features::FILE_NAME, Some(text.into_bytes().into()))],
    )?;
    let change = Change {
        kind: ContractChange::Add,
        subject: format!("add feature {}", new.id),
        reasons: vec![format!(
            "added feature {}: {}",
            new.id,
            sanitize::line(&new.description)
        )],
        feature: Some(new.id.clone()),
    };
    let oid = validate_and_record(&project, main, tree, &change).await?;
    Ok(format!(
        "added feature {} (its check fails on main, as it must); recorded as {}",
        new.id,
        short(oid)
    ))
}

/// `longrun features reopen` and `retry` of a passing feature: passes set
/// back to false by a commit on main, and its failed attempts cleared.
pub fn reopen(dir: &Path, id: &str, why: Option<&str>) -> anyhow::Result<String> {
    let project = Project::open(dir)?;
    let _lock = take_lock(&project, "reopen")?;
    let main = main_of(&project)?;
    let list = features_on_main(&project)?;
    let Some(feature) = list.get(id) else {
        return Err(no_such_feature(&list, id));
    };
    if !feature.passes {
        return Err(bad_input(format!(
            "feature `{id}` does not pass; there is nothing to reopen (`longrun retry {id}` clears its failed attempts)"
        )));
    }
    let text = main_features_text(&project, main)?;
    let text = features::reset_passes(&text, &[id.to_string()]).map_err(bad_input)?;
    let tree = tree_with(
        &project,
        main,
        &[(features::FILE_NAME, Some(text.into_bytes().into()))],
    )?;
    let mut reasons = vec![format!("reopened feature {id}: passes set back to false")];
    reasons.extend(why.map(sanitize::line));
    let change = Change {
        kind: ContractChange::Reopen,
        subject: format!("reopen feature {id}"),
        reasons,
        feature: Some(id.to_string()),
    };
    let oid = repo::record_tree(&project.repo, main, tree, &change.message())?;
    Ok(format!(
        "feature {id} is open again: passes is false on main and its failed attempts are cleared; recorded as {}",
        short(oid)
    ))
}

/// `longrun amend -m WHY`: the contract files edited in the project's work
/// tree (features.json, SPEC.md, the protected and frozen files), recorded
/// on main as one commit. Other edits stay in the work tree, unrecorded.
pub async fn amend(dir: &Path, why: &str) -> anyhow::Result<String> {
    if why.trim().is_empty() {
        return Err(bad_input(
            "say why the contract changes: `longrun amend -m \"why\"`",
        ));
    }
    let project = Project::open(dir)?;
    let _lock = take_lock(&project, "amend")?;
    let main = main_of(&project)?;
    let on_main = project
        .repo
        .head()
        .ok()
        .and_then(|h| h.name().map(|n| n == "refs/heads/main"))
        .unwrap_or(false);
    if !on_main {
        return Err(bad_input(format!(
            "{} does not have main checked out; `git checkout main`, edit the contract there, then amend",
            project.dir.display()
        )));
    }
    let (contract, others) = edited_paths(&project)?;
    if contract.is_empty() {
        return Err(bad_input(format!(
            "nothing to amend: no contract file (features.json, SPEC.md, {}) differs from main in {}; edit one there first",
            fixed_patterns(&project).join(", "),
            project.dir.display()
        )));
    }
    let mut files = Vec::new();
    for path in &contract {
        files.push((path.as_str(), work_tree_file(&project, path)?));
    }
    let tree = tree_with(&project, main, &files)?;
    let mut reasons = vec![sanitize::line(why)];
    reasons.extend(
        contract
            .iter()
            .map(|p| format!("changed {}", sanitize::line(p))),
    );
    let change = Change {
        kind: ContractChange::Amend,
        subject: "amend the contract".into(),
        reasons,
        feature: None,
    };
    let oid = validate_and_record(&project, main, tree, &change).await?;
    let mut said = format!(
        "recorded the contract change as {}: {}",
        short(oid),
        contract.join(", ")
    );
    if !others.is_empty() {
        said.push_str(&format!(
            "\nleft unrecorded (not part of the contract): {}",
            others.join(", ")
        ));
    }
    Ok(said)
}

/// A person's change, as its commit tells it.
struct Change {
    kind: ContractChange,
    subject: String,
    reasons: Vec<String>,
    feature: Option<String>,
}

impl Change {
    fn message(&self) -> String {
        let mut text = format!(
            "longrun: {}\n\nA change to the contract, made by a person, not by a session.\n\n",
            self.subject
        );
        text.push_str(&format!("{}: {HUMAN}\n", trailer::ROLE));
        text.push_str(&format!("{}: {}\n", trailer::CONTRACT, self.kind.as_str()));
        if let Some(id) = &self.feature {
            text.push_str(&format!("{}: {id}\n", trailer::FEATURE));
            if self.kind == ContractChange::Reopen {
                // Its failed attempts no longer count, as after `retry`.
                text.push_str(&format!("{}: {id}\n", trailer::RETRY));
            }
        }
        for reason in &self.reasons {
            text.push_str(&format!(
                "{}: {}\n",
                trailer::REASON,
                sanitize::line(reason)
            ));
        }
        text
    }
}

/// Check the new tree's feature list, run the checks of the features it
/// adds, and record it on main if all is well; else say what is wrong.
async fn validate_and_record(
    project: &Project,
    main: Oid,
    tree: Oid,
    change: &Change,
) -> anyhow::Result<Oid> {
    let before = features_on_main(project)?;
    let candidate = main_commit_of(project, main, tree)?;
    let text =
        repo::read_file_at(&project.repo, candidate, features::FILE_NAME)?.unwrap_or_default();
    let (after, mut problems) = match FeatureList::parse(&text) {
        Ok(list) => {
            let problems = list_problems(&list, &before);
            (Some(list), problems)
        }
        Err(e) => (
            None,
            vec![format!("{e}; fix features.json and amend again")],
        ),
    };
    if problems.is_empty() {
        if let Some(after) = &after {
            let added: Vec<&Feature> = after
                .features
                .iter()
                .filter(|f| before.get(&f.id).is_none())
                .collect();
            problems.extend(fail_to_pass(project, candidate, &added).await?);
        }
    }
    if !problems.is_empty() {
        return Err(bad_input(format!(
            "the change is not recorded: {}",
            problems.join("; ")
        )));
    }
    // What the checks it adds or changes depend on is frozen with them.
    let changed: Vec<String> = after
        .iter()
        .flat_map(|l| &l.features)
        .filter(|f| {
            before
                .get(&f.id)
                .is_none_or(|b| (&b.check, b.files()) != (&f.check, f.files()))
        })
        .map(|f| f.id.clone())
        .collect();
    let tree =
        crate::trusted::verify::acceptance::tree_with_closure(project, candidate, tree, &changed)?;
    repo::record_tree(&project.repo, main, tree, &change.message())
}

/// A commit of `tree` on top of `main`, on no ref, to read from and check out.
fn main_commit_of(project: &Project, main: Oid, tree: Oid) -> anyhow::Result<Oid> {
    let repo = &project.repo;
    let sig = repo::signature()?;
    let parent = repo.find_commit(main)?;
    let oid = repo.commit(
        None,
        &sig,
        &sig,
        "longrun: a contract change under validation",
        &repo.find_tree(tree)?,
        &[&parent],
    )?;
    Ok(oid)
}

/// What a changed list must be: the shape, every feature with a check, and
/// every feature it adds starting as not passing.
fn list_problems(after: &FeatureList, before: &FeatureList) -> Vec<String> {
    let mut problems = after.shape_problems();
    for f in &after.features {
        if f.check.as_deref().is_none_or(|c| c.trim().is_empty()) {
            problems.push(format!(
                "features.json: feature `{}` has no check; give it a `check` command that passes only when it works",
                features::printable(&f.id)
            ));
        }
        if f.passes && before.get(&f.id).is_none() {
            problems.push(format!(
                "features.json: the added feature `{}` starts with passes: true; an added feature starts false",
                features::printable(&f.id)
            ));
        }
    }
    problems
}

/// FAIL_TO_PASS for the features a change adds: each check runs on the new
/// tree, confined as verification runs it, and must not pass there.
async fn fail_to_pass(
    project: &Project,
    candidate: Oid,
    added: &[&Feature],
) -> anyhow::Result<Vec<String>> {
    if added.is_empty() {
        return Ok(Vec::new());
    }
    let place_dir = project.longrun_dir().join("amend");
    let place = verification::prepare_checkout(project, &place_dir, candidate)?;
    let mut problems = Vec::new();
    for f in added {
        let runs = verification::run_checks(project, &place, Role::Worker, Some(f), &[]).await;
        match runs {
            Ok(runs) => problems.extend(check_problem(f, &runs)),
            Err(e) => problems.push(format!("feature {}'s check could not be run: {e:#}", f.id)),
        }
    }
    crate::fsutil::remove_tree(&place_dir)
        .with_context(|| format!("failed to remove {}", place_dir.display()))?;
    Ok(problems)
}

/// Why `f`'s run on the new tree refuses the change, if it does.
fn check_problem(f: &Feature, runs: &[CheckRun]) -> Option<String> {
    let name = format!("feature {}", f.id);
    let check = f.check.as_deref().unwrap_or("");
    match runs.iter().find(|r| r.name == name) {
        Some(run) if run.passed => Some(format!(
            "vacuous check: feature {}'s check `{check}` already passes on main, before anything is built; \
             an added feature's check must fail until the feature works (write the test it runs first)",
            f.id
        )),
        Some(_) => None,
        None => Some(format!(
            "feature {}'s check `{check}` did not run: {}",
            f.id,
            runs.iter()
                .find(|r| !r.passed)
                .map(|r| format!("{} failed first", r.name))
                .unwrap_or_else(|| "nothing ran".into())
        )),
    }
}

/// The project's lock, or why the change must wait.
fn take_lock(project: &Project, what: &str) -> anyhow::Result<lock::RunLock> {
    lock::acquire(&project.longrun_dir()).map_err(|e| {
        bad_input(format!(
            "{what} changes the contract, which cannot happen while a run is going: {e:#}"
        ))
    })
}

fn main_of(project: &Project) -> anyhow::Result<Oid> {
    repo::main_head(&project.repo)?.ok_or_else(|| bad_input("main has no commits yet"))
}

fn features_on_main(project: &Project) -> anyhow::Result<FeatureList> {
    project.features()?.map(|l| (*l).clone()).ok_or_else(|| {
        bad_input("the project has no features.json on main yet; run `longrun continue` first")
    })
}

fn main_features_text(project: &Project, main: Oid) -> anyhow::Result<String> {
    repo::read_file_at(&project.repo, main, features::FILE_NAME)?
        .ok_or_else(|| bad_input("the project has no features.json on main"))
}

/// features.json's objects on main, in order, as written.
fn feature_objects(
    project: &Project,
    main: Oid,
) -> anyhow::Result<Vec<serde_json::Map<String, Value>>> {
    let value: Value = serde_json::from_str(&main_features_text(project, main)?)?;
    match value.get("features") {
        Some(Value::Array(items)) => Ok(items
            .iter()
            .filter_map(|v| v.as_object().cloned())
            .collect()),
        _ => Err(bad_input(
            "features.json on main is not longrun's {\"features\": [...]}; amend it by hand first",
        )),
    }
}

fn no_such_feature(list: &FeatureList, id: &str) -> anyhow::Error {
    let ids: Vec<&str> = list.features.iter().map(|f| f.id.as_str()).collect();
    bad_input(format!(
        "no feature `{}` in features.json; the ids are: {}",
        features::printable(id),
        ids.join(", ")
    ))
}

/// main's tree with `files` put in (Some: the bytes, a regular file) or taken out (None).
fn tree_with(
    project: &Project,
    main: Oid,
    files: &[(&str, Option<WorkFile>)],
) -> anyhow::Result<Oid> {
    let repo = &project.repo;
    let mut tree = repo.find_commit(main)?.tree_id();
    for (path, file) in files {
        let entry = match file {
            Some(file) => Some((repo.blob(&file.bytes)?, file.mode as i32)),
            None => None,
        };
        let parts: Vec<&str> = path.split('/').collect();
        tree = put(repo, Some(tree), &parts, entry)?;
    }
    Ok(tree)
}

/// `tree` (None: an empty one) with `entry` at `parts`, or without what is there.
fn put(
    repo: &git2::Repository,
    tree: Option<Oid>,
    parts: &[&str],
    entry: Option<(Oid, i32)>,
) -> anyhow::Result<Oid> {
    let tree = tree.map(|t| repo.find_tree(t)).transpose()?;
    let mut builder = repo.treebuilder(tree.as_ref())?;
    match parts {
        [] => anyhow::bail!("an empty path"),
        [name] => match entry {
            Some((blob, mode)) => {
                builder.insert(name, blob, mode)?;
            }
            None => {
                if builder.get(name)?.is_some() {
                    builder.remove(name)?;
                }
            }
        },
        [dir, rest @ ..] => {
            let below = builder
                .get(dir)?
                .filter(|e| e.kind() == Some(git2::ObjectType::Tree))
                .map(|e| e.id());
            let sub = put(repo, below, rest, entry)?;
            if repo.find_tree(sub)?.is_empty() {
                if builder.get(dir)?.is_some() {
                    builder.remove(dir)?;
                }
            } else {
                builder.insert(dir, sub, 0o040000)?;
            }
        }
    }
    Ok(builder.write()?)
}

/// A file as a tree holds it.
struct WorkFile {
    bytes: Vec<u8>,
    mode: u32,
}

impl From<Vec<u8>> for WorkFile {
    fn from(bytes: Vec<u8>) -> WorkFile {
        WorkFile {
            bytes,
            mode: 0o100644,
        }
    }
}

/// A contract file as the person left it in the work tree: None when deleted.
fn work_tree_file(project: &Project, path: &str) -> anyhow::Result<Option<WorkFile>> {
    use std::os::unix::fs::PermissionsExt;
    let full = project.dir.join(path);
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", full.display())),
    };
    if !meta.is_file() {
        return Err(bad_input(format!(
            "{} is not a regular file; the contract holds plain files, so replace it with one",
            full.display()
        )));
    }
    // Read as any file a session could have left: no FIFO swapped in after the stat blocks it.
    let read = crate::fsutil::read_bounded(&full, crate::fsutil::Bounds::FILE)?;
    let Some(crate::fsutil::Bounded { bytes, cut: false }) = read else {
        return Err(bad_input(format!(
            "{} changed while it was read, or is over 256 MiB; the contract holds small plain files",
            full.display()
        )));
    };
    let mode = if meta.permissions().mode() & 0o111 != 0 {
        0o100755
    } else {
        0o100644
    };
    Ok(Some(WorkFile { bytes, mode }))
}

/// The paths that differ from main in the work tree: those of the contract, and the rest.
fn edited_paths(project: &Project) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let dirty = crate::git::uncommitted_paths(&project.repo)?;
    let mut contract = Vec::new();
    let mut others = Vec::new();
    for path in dirty {
        let reserved = path
            .split('/')
            .any(|c| crate::rules::is_reserved_name(c.as_bytes()));
        if !reserved && in_contract(project, &path) {
            contract.push(path);
        } else {
            others.push(sanitize::line(&path));
        }
    }
    Ok((contract, others))
}

/// The patterns of `[run] protected` and `[run] frozen` in longrun.toml.
fn fixed_patterns(project: &Project) -> Vec<String> {
    let mut patterns = project.protected();
    patterns.extend(project.config.run.frozen.iter().cloned());
    patterns
}

/// Whether `path` is part of the contract: features.json, SPEC.md, or a
/// protected or frozen path (globs, as verification matches them).
fn in_contract(project: &Project, path: &str) -> bool {
    if path == features::FILE_NAME || path == "SPEC.md" {
        return true;
    }
    crate::trusted::verify::acceptance::path_rules(project).is_ok_and(|rules| rules.fixed(path))
}

fn short(oid: Oid) -> String {
    oid.to_string()[..10].to_string()
}
