//! `features.json`: the feature list, its validation and the passes-only rule.
//!
//! Two formats are read: longrun's own `{"features": [{"id", ...}]}` and the
//! top-level array of Anthropic's autonomous-coding `feature_list.json`, whose
//! features get ids F001, F002, ... by position. `import` converts the lists
//! `init --features` brings from elsewhere.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};
use serde_json::Value;

pub mod import;

pub const FILE_NAME: &str = "features.json";

/// A feature id: what trailers, refs and messages can carry as it is.
pub fn is_valid_id(id: &str) -> bool {
    crate::sanitize::is_safe_id(id)
}

/// One feature, as the orchestrator needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub id: String,
    pub description: String,
    /// A shell command that passes only when the feature works.
    pub check: Option<String>,
    pub passes: bool,
    /// The whole object as written, for the passes-only comparison.
    raw: Value,
}

/// Where a feature is in the list, as its errors name it (formatted only
/// when one is).
struct Position(usize);

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{FILE_NAME}: feature #{}", self.0 + 1)
    }
}

/// A parsed feature list.
#[derive(Debug, Clone, PartialEq)]
pub struct FeatureList {
    pub features: Vec<Feature>,
}

impl FeatureList {
    /// Parse the text of a `features.json`. The error says what is wrong and where.
    pub fn parse(text: &str) -> Result<FeatureList, String> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| format!("{FILE_NAME} is not valid JSON: {e}"))?;
        // Taken apart by value: each feature keeps its object as written.
        let (items, positional) = match value {
            Value::Array(items) => (items, true),
            Value::Object(mut map) => match map.remove("features") {
                Some(Value::Array(items)) => (items, false),
                Some(_) => return Err(format!("{FILE_NAME}: `features` must be an array")),
                None => {
                    return Err(format!(
                        "{FILE_NAME} has no `features` array: expected {{\"features\": [{{\"id\": ..., \"passes\": false}}]}}"
                    ))
                }
            },
            _ => return Err(format!("{FILE_NAME} must be an object with a `features` array")),
        };
        let features = items
            .into_iter()
            .enumerate()
            .map(|(i, item)| Feature::from_value(i, item, positional))
            .collect::<Result<Vec<_>, _>>()?;
        // Everything is keyed by id: a list that names one twice cannot be read right.
        let mut seen = HashSet::new();
        if let Some(dup) = features.iter().find(|f| !seen.insert(f.id.as_str())) {
            return Err(format!(
                "{FILE_NAME}: feature id `{}` appears more than once; ids must be unique",
                dup.id
            ));
        }
        Ok(FeatureList { features })
    }

    pub fn get(&self, id: &str) -> Option<&Feature> {
        self.features.iter().find(|f| f.id == id)
    }

    pub fn passing(&self) -> usize {
        self.features.iter().filter(|f| f.passes).count()
    }

    /// What any list must be: at least one feature, ids of letters, digits, `.`, `_`, `-`.
    pub fn shape_problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.features.is_empty() {
            problems.push(format!("{FILE_NAME} lists no features"));
        }
        for f in self.features.iter().filter(|f| !is_valid_id(&f.id)) {
            problems.push(format!(
                "{FILE_NAME}: feature id `{}` is not 1 to 64 of A-Z a-z 0-9 . _ -; rename it",
                printable(&f.id)
            ));
        }
        problems
    }

    /// The rules an initializer's list must meet. Without an imported list:
    /// the shape, and every feature starting false. With one (`init
    /// --features`), the initializer adds checks and nothing else: the same
    /// features in the same order, each field but `check` as imported.
    /// And, whichever way the list came, every feature has a check.
    pub fn initial_problems(&self, imported: Option<&FeatureList>) -> Vec<String> {
        let mut problems = self.list_problems(imported);
        for f in self.features.iter().filter(|f| f.check.is_none()) {
            problems.push(format!(
                "{FILE_NAME}: feature `{}` has no check; every feature needs a `check` \
                 command that fails until the feature works",
                printable(&f.id)
            ));
        }
        problems
    }

    fn list_problems(&self, imported: Option<&FeatureList>) -> Vec<String> {
        let mut problems = self.shape_problems();
        let Some(imported) = imported else {
            for f in self.features.iter().filter(|f| f.passes) {
                problems.push(format!(
                    "{FILE_NAME}: feature `{}` starts with passes: true; every feature must start false",
                    f.id
                ));
            }
            return problems;
        };
        let ids = |l: &FeatureList| l.features.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
        let (before, after) = (ids(imported), ids(self));
        if before != after {
            let before: Vec<&str> = before.iter().map(String::as_str).collect();
            let after: Vec<&str> = after.iter().map(String::as_str).collect();
            problems.push(
                describe_id_change(&before, &after)
                    .replace("a worker may not", "the initializer may not")
                    + " (the list was given with `init --features`)",
            );
            return problems;
        }
        for (b, h) in imported.features.iter().zip(&self.features) {
            if !b.same_but(h, "check") {
                problems.push(format!(
                    "{FILE_NAME}: feature `{}` was edited; the list was given with `init --features`, so only its `check` may be added",
                    b.id
                ));
            }
        }
        problems
    }
}

/// The fields of a feature in the order people read them; others follow, by name.
const FIELD_ORDER: &[&str] = &["id", "category", "description", "steps", "check", "passes"];

/// A `features.json` text for `features` (JSON objects), fields in reading order.
pub fn render(features: &[serde_json::Map<String, Value>]) -> String {
    let indent = |text: String, by: &str| text.replace('\n', &format!("\n{by}"));
    let items: Vec<String> = features
        .iter()
        .map(|f| {
            let mut keys: Vec<&String> = f.keys().collect();
            let rank = |k: &str| {
                FIELD_ORDER
                    .iter()
                    .position(|o| *o == k)
                    .unwrap_or(usize::MAX)
            };
            keys.sort_by_key(|k| (rank(k), (*k).clone()));
            let fields: Vec<String> = keys
                .iter()
                .map(|k| {
                    let value = serde_json::to_string_pretty(&f[k.as_str()]).unwrap_or_default();
                    format!(
                        "      {}: {}",
                        Value::from(k.as_str()),
                        indent(value, "      ")
                    )
                })
                .collect();
            format!("    {{\n{}\n    }}", fields.join(",\n"))
        })
        .collect();
    format!("{{\n  \"features\": [\n{}\n  ]\n}}\n", items.join(",\n"))
}

/// `text` with the features `ids` set to `passes: false` (for imported
/// features whose checks failed at init).
pub fn reset_passes(text: &str, ids: &[String]) -> Result<String, String> {
    set_passes(text, ids, false)
}

/// `text` with the features `ids` set to `passes: value`, every other field
/// kept (what the passes-only rule compares is the JSON, not the layout).
pub fn set_passes(text: &str, ids: &[String], passes: bool) -> Result<String, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("{FILE_NAME}: {e}"))?;
    let mut features: Vec<serde_json::Map<String, Value>> = match value.get("features") {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_object().cloned())
            .collect(),
        _ => return Err(format!("{FILE_NAME} has no `features` array")),
    };
    for f in &mut features {
        if f.get("id")
            .and_then(Value::as_str)
            .is_some_and(|id| ids.iter().any(|i| i == id))
        {
            f.insert("passes".into(), Value::Bool(passes));
        }
    }
    Ok(render(&features))
}

/// An id as it can be shown: control characters as `?`, at most 64 characters.
pub fn printable(id: &str) -> String {
    id.chars()
        .take(64)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

impl Feature {
    fn from_value(index: usize, item: Value, positional: bool) -> Result<Feature, String> {
        let at = Position(index);
        let obj = item
            .as_object()
            .ok_or_else(|| format!("{at} is not an object"))?;
        let id = if positional {
            format!("F{:03}", index + 1)
        } else {
            match obj.get("id") {
                Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
                Some(Value::String(_)) => return Err(format!("{at} has an empty `id`")),
                Some(_) => return Err(format!("{at}: `id` must be a string")),
                None => return Err(format!("{at} has no `id`")),
            }
        };
        let passes = match obj.get("passes") {
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(format!("{at} (`{id}`): `passes` must be true or false")),
            None => return Err(format!("{at} (`{id}`) has no `passes` field")),
        };
        let description = match obj.get("description") {
            Some(Value::String(s)) => s.clone(),
            None => String::new(),
            Some(_) => return Err(format!("{at} (`{id}`): `description` must be a string")),
        };
        let check = match obj.get("check") {
            // No process can be given it as an argument.
            Some(Value::String(s)) if s.contains('\0') => {
                return Err(format!(
                    "{at} (`{}`): `check` holds a NUL byte; write the command without it",
                    printable(&id)
                ))
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
            Some(Value::String(_)) | Some(Value::Null) | None => None,
            Some(_) => {
                return Err(format!(
                    "{at} (`{id}`): `check` must be a shell command string"
                ))
            }
        };
        if let Some(steps) = obj.get("steps") {
            if !steps.is_array() {
                return Err(format!(
                    "{at} (`{id}`): `steps` must be an array of strings"
                ));
            }
        }
        Ok(Feature {
            id,
            description,
            check,
            passes,
            raw: item,
        })
    }

    /// The feature's object as written, pretty-printed.
    pub fn pretty_json(&self) -> String {
        serde_json::to_string_pretty(&self.raw).unwrap_or_default()
    }

    /// Every field but `key` is the same in `other`, as JSON. Compared in
    /// place: a run compares every feature of the list each session.
    fn same_but(&self, other: &Feature, key: &str) -> bool {
        let (Value::Object(a), Value::Object(b)) = (&self.raw, &other.raw) else {
            return self.raw == other.raw;
        };
        let fields =
            |m: &serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(key));
        fields(a) == fields(b)
            && a.iter()
                .filter(|(k, _)| k.as_str() != key)
                .all(|(k, v)| b.get(k) == Some(v))
    }
}

/// Parsed versions of `features.json`, newest last, keyed by blob id.
static PARSED: Mutex<Vec<(Oid, Parsed)>> = Mutex::new(Vec::new());

/// How many parsed versions are kept: main's, a session's base and head,
/// the candidate's, with room for sessions side by side.
const PARSED_KEPT: usize = 8;

/// A version of the list as parsed: the list, or what is wrong with it.
pub type Parsed = Result<Arc<FeatureList>, String>;

/// `features.json` at `commit`: None where the commit has none, else the
/// list or what is wrong with it. Each version (blob) is parsed once per
/// process and shared: a run reads main's list several times a session,
/// and a list of a thousand features takes milliseconds to parse. A blob's
/// id is the hash of its content, so a version is the same in every repository.
pub fn list_at(repo: &Repository, commit: Oid) -> anyhow::Result<Option<Parsed>> {
    let Some(entry) = crate::git::entry_at(repo, commit, FILE_NAME)? else {
        return Ok(None);
    };
    let id = entry.id();
    if let Some(hit) = cached(id) {
        return Ok(Some(hit));
    }
    let blob = entry.to_object(repo)?.peel_to_blob()?;
    let parsed = FeatureList::parse(&String::from_utf8_lossy(blob.content())).map(Arc::new);
    if let Ok(mut kept) = PARSED.lock() {
        if kept.len() >= PARSED_KEPT {
            kept.drain(..1);
        }
        kept.push((id, parsed.clone()));
    }
    Ok(Some(parsed))
}

/// The parsed version of blob `id`, when kept; it becomes the newest.
fn cached(id: Oid) -> Option<Parsed> {
    let mut kept = PARSED.lock().ok()?;
    let at = kept.iter().position(|(k, _)| *k == id)?;
    let hit = kept.remove(at);
    let parsed = hit.1.clone();
    kept.push(hit);
    Some(parsed)
}

/// The passes-only rule between a session's base and its head: same ids in the
/// same order, every field but `passes` equal as JSON, and only `assigned`
/// changed, false to true. Returns the reasons it was broken, if any.
pub fn passes_only_problems(base: &str, head: &str, assigned: &str) -> Vec<String> {
    passes_only_between(
        &FeatureList::parse(base),
        &FeatureList::parse(head),
        assigned,
    )
}

/// [`passes_only_problems`] between two lists as parsed.
pub fn passes_only_between<B, H>(
    base: &Result<B, String>,
    head: &Result<H, String>,
    assigned: &str,
) -> Vec<String>
where
    B: std::borrow::Borrow<FeatureList>,
    H: std::borrow::Borrow<FeatureList>,
{
    let base = match base {
        Ok(list) => list.borrow(),
        Err(e) => return vec![format!("the base {FILE_NAME} does not parse: {e}")],
    };
    let head = match head {
        Ok(list) => list.borrow(),
        Err(e) => return vec![format!("the session left a broken {FILE_NAME}: {e}")],
    };
    let base_ids: Vec<&str> = base.features.iter().map(|f| f.id.as_str()).collect();
    let head_ids: Vec<&str> = head.features.iter().map(|f| f.id.as_str()).collect();
    if base_ids != head_ids {
        return vec![describe_id_change(&base_ids, &head_ids)];
    }
    let mut problems = Vec::new();
    for (b, h) in base.features.iter().zip(&head.features) {
        if !b.same_but(h, "passes") {
            problems.push(format!(
                "{FILE_NAME}: feature `{}` was edited; only its `passes` field may change",
                b.id
            ));
        }
        match (b.passes, h.passes) {
            (false, true) if b.id != assigned => problems.push(format!(
                "{FILE_NAME}: feature `{}` was set to passes: true, but this session was assigned `{assigned}`",
                b.id
            )),
            (true, false) => problems.push(format!(
                "{FILE_NAME}: feature `{}` went from passes: true to false",
                b.id
            )),
            _ => {}
        }
    }
    problems
}

fn describe_id_change(base: &[&str], head: &[&str]) -> String {
    let removed: Vec<&str> = base
        .iter()
        .filter(|id| !head.contains(id))
        .copied()
        .collect();
    let added: Vec<&str> = head
        .iter()
        .filter(|id| !base.contains(id))
        .copied()
        .collect();
    if !removed.is_empty() {
        format!(
            "{FILE_NAME}: feature(s) {} were removed; features may never be removed",
            removed.join(", ")
        )
    } else if !added.is_empty() {
        format!(
            "{FILE_NAME}: feature(s) {} were added; a worker may not add features",
            added.join(", ")
        )
    } else {
        format!(
            "{FILE_NAME}: features were reordered; the order is the priority and may not change"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"{"features": [
        {"id": "a", "description": "one", "steps": ["x"], "passes": false},
        {"id": "b", "description": "two", "passes": false}
    ]}"#;

    /// A commit of `text` as features.json (or of no features.json).
    fn commit_list(repo: &Repository, text: Option<&str>) -> Oid {
        let mut tree = repo.treebuilder(None).unwrap();
        if let Some(text) = text {
            let blob = repo.blob(text.as_bytes()).unwrap();
            tree.insert(FILE_NAME, blob, 0o100644).unwrap();
        }
        let tree = repo.find_tree(tree.write().unwrap()).unwrap();
        let sig = git2::Signature::now("t", "t@example.com").unwrap();
        repo.commit(None, &sig, &sig, "list", &tree, &[]).unwrap()
    }

    #[test]
    fn a_version_of_the_list_is_parsed_once_and_each_version_reads_as_itself() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let head = BASE.replacen("false", "true", 1);
        let (a, b) = (
            commit_list(&repo, Some(BASE)),
            commit_list(&repo, Some(&head)),
        );
        let first = list_at(&repo, a).unwrap().unwrap().unwrap();
        let again = list_at(&repo, a).unwrap().unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same blob is parsed once");
        let other = list_at(&repo, b).unwrap().unwrap().unwrap();
        assert_eq!(
            (first.passing(), other.passing()),
            (0, 1),
            "each version is its own"
        );
        // More versions than are kept: every one still reads right.
        for n in 0..(PARSED_KEPT * 2) {
            let text = format!(r#"{{"features": [{{"id": "f{n}", "passes": false}}]}}"#);
            let list = list_at(&repo, commit_list(&repo, Some(&text)))
                .unwrap()
                .unwrap()
                .unwrap();
            assert_eq!(list.features[0].id, format!("f{n}"));
        }
        assert_eq!(list_at(&repo, a).unwrap().unwrap().unwrap().passing(), 0);
        let broken = commit_list(&repo, Some("{not json"));
        let err = list_at(&repo, broken).unwrap().unwrap().unwrap_err();
        assert!(err.contains("not valid JSON"), "{err}");
        assert!(list_at(&repo, commit_list(&repo, None)).unwrap().is_none());
    }

    #[test]
    fn a_field_added_removed_or_changed_beside_passes_is_an_edit() {
        let base = r#"{"features": [{"id": "a", "description": "one", "passes": false}]}"#;
        for head in [
            r#"{"features": [{"id": "a", "description": "one", "passes": true, "extra": 1}]}"#,
            r#"{"features": [{"id": "a", "passes": true}]}"#,
            r#"{"features": [{"id": "a", "description": "One", "passes": true}]}"#,
        ] {
            let problems = passes_only_problems(base, head, "a");
            assert!(
                problems.iter().any(|p| p.contains("was edited")),
                "{head}: {problems:?}"
            );
        }
        let reordered = r#"{"features": [{"passes": true, "description": "one", "id": "a"}]}"#;
        assert_eq!(
            passes_only_problems(base, reordered, "a"),
            Vec::<String>::new(),
            "the order of the fields is not an edit"
        );
    }

    #[test]
    fn flipping_the_assigned_feature_is_allowed_whatever_the_formatting() {
        let head = r#"{"features":[{"passes":true,"steps":["x"],"description":"one","id":"a"},
            {"id":"b","description":"two","passes":false}]}"#;
        assert_eq!(passes_only_problems(BASE, head, "a"), Vec::<String>::new());
    }

    #[test]
    fn editing_a_description_is_refused() {
        let head = BASE.replace("\"two\"", "\"2\"");
        let problems = passes_only_problems(BASE, &head, "a");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("`b` was edited"), "{problems:?}");
    }

    #[test]
    fn flipping_another_feature_is_refused() {
        let head = BASE.replace(r#""two", "passes": false"#, r#""two", "passes": true"#);
        let problems = passes_only_problems(BASE, &head, "a");
        assert!(
            problems[0].contains("`b` was set to passes: true"),
            "{problems:?}"
        );
    }

    #[test]
    fn removing_and_reordering_are_refused() {
        let removed =
            r#"{"features": [{"id": "a", "description": "one", "steps": ["x"], "passes": false}]}"#;
        assert!(passes_only_problems(BASE, removed, "a")[0].contains("b were removed"));
        let reordered = r#"{"features": [
            {"id": "b", "description": "two", "passes": false},
            {"id": "a", "description": "one", "steps": ["x"], "passes": false}]}"#;
        assert!(passes_only_problems(BASE, reordered, "a")[0].contains("reordered"));
    }

    #[test]
    fn the_array_format_gets_positional_ids() {
        let list = FeatureList::parse(
            r#"[{"category": "functional", "description": "d", "steps": [], "passes": false},
                {"category": "style", "description": "e", "steps": [], "passes": false}]"#,
        )
        .map_err(|e| e.to_string());
        let ids: Vec<String> = list
            .map(|l| l.features.into_iter().map(|f| f.id).collect())
            .unwrap_or_default();
        assert_eq!(ids, ["F001", "F002"]);
    }

    #[test]
    fn initial_lists_must_be_nonempty_safe_and_false() {
        let list = FeatureList::parse(r#"{"features": []}"#).map_err(|e| e.to_string());
        assert_eq!(list.map(|l| l.initial_problems(None).len()).ok(), Some(1));
        let bad = r#"{"features": [{"id": "a b", "check": "t", "passes": false},
            {"id": "c", "check": "t", "passes": true}]}"#;
        let problems = FeatureList::parse(bad)
            .map(|l| l.initial_problems(None))
            .unwrap_or_default();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`a b`"), "{problems:?}");
        assert!(
            problems[1].contains("`c` starts with passes: true"),
            "{problems:?}"
        );
    }

    #[test]
    fn every_initial_feature_needs_a_check() {
        let unchecked = r#"{"features": [{"id": "a", "passes": false}, {"id": "b", "check": "", "passes": false}]}"#;
        let problems = FeatureList::parse(unchecked)
            .map(|l| l.initial_problems(None))
            .unwrap_or_default();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`a` has no check"), "{problems:?}");
    }

    #[test]
    fn a_rendered_list_reads_id_first_and_parses_back_the_same() {
        let list = r#"{"features": [{"passes": true, "steps": ["a", "b"], "id": "F1", "zz": 1, "check": "t"},
                                    {"id": "F2", "passes": true}]}"#;
        let text = reset_passes(list, &["F1".to_string()]).unwrap();
        assert!(
            text.starts_with("{\n  \"features\": [\n    {\n      \"id\": \"F1\",\n      \"steps\": [\n        \"a\","),
            "{text}"
        );
        let back = FeatureList::parse(&text).unwrap();
        assert_eq!(back.features.len(), 2);
        assert!(!back.features[0].passes && back.features[1].passes);
        assert_eq!(back.features[0].check.as_deref(), Some("t"));
    }

    #[test]
    fn a_list_naming_an_id_twice_does_not_parse() {
        let dup =
            r#"{"features": [{"id": "F001", "passes": true}, {"id": "F001", "passes": false}]}"#;
        let e = FeatureList::parse(dup).unwrap_err();
        assert!(e.contains("`F001` appears more than once"), "{e}");
    }

    #[test]
    fn after_an_import_the_initializer_may_add_checks_and_keep_passes() {
        let parse = |t: &str| FeatureList::parse(t).unwrap();
        let imported = parse(
            r#"{"features": [{"id": "a", "description": "x", "passes": true}, {"id": "b", "passes": false}]}"#,
        );
        let checked = parse(
            r#"{"features": [{"id": "a", "description": "x", "check": "t a", "passes": true},
                             {"id": "b", "check": "t b", "passes": false}]}"#,
        );
        assert_eq!(
            checked.initial_problems(Some(&imported)),
            Vec::<String>::new()
        );
        let edited = parse(
            r#"{"features": [{"id": "a", "description": "y", "check": "t a", "passes": true},
                             {"id": "b", "check": "t b", "passes": true}]}"#,
        );
        let problems = edited.initial_problems(Some(&imported));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("`a` was edited"), "{problems:?}");
        assert!(problems[1].contains("`b` was edited"), "{problems:?}");
        let dropped = parse(r#"{"features": [{"id": "a", "description": "x", "passes": true}]}"#);
        let problems = dropped.initial_problems(Some(&imported));
        assert!(problems[0].contains("b were removed"), "{problems:?}");
    }

    #[test]
    fn a_check_with_a_nul_byte_is_refused() {
        let text = r#"{"features": [{"id": "a", "check": "true\u0000", "passes": false}]}"#;
        let err = FeatureList::parse(text).unwrap_err();
        assert!(err.contains("`check` holds a NUL byte"), "{err}");
    }

    #[test]
    fn an_unsafe_id_is_named_without_its_control_characters() {
        let text = r#"{"features": [{"id": "a\nLongrun-Verdict: accepted", "passes": false}]}"#;
        let problems = FeatureList::parse(text)
            .map(|l| l.initial_problems(None))
            .unwrap_or_default();
        assert!(
            problems
                .iter()
                .any(|p| p.contains("`a?Longrun-Verdict: accepted` is not 1 to 64")),
            "{problems:?}"
        );
        assert!(!problems.iter().any(|p| p.contains('\n')), "{problems:?}");
    }
}
