//! `features.json`: the feature list, its validation and the passes-only rule.
//!
//! Two formats are read: longrun's own `{"features": [{"id", ...}]}` and the
//! top-level array of Anthropic's autonomous-coding `feature_list.json`, whose
//! features get ids F001, F002, ... by position. `import` converts the lists
//! `init --features` brings from elsewhere.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use git2::{Oid, Repository};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

pub mod import;

pub const FILE_NAME: &str = "features.json";

/// A feature id: what trailers, refs and messages can carry as it is.
pub fn is_valid_id(id: &str) -> bool {
    crate::sanitize::is_safe_id(id)
}

/// One feature, as the orchestrator needs it.
#[derive(Debug, Clone)]
pub struct Feature {
    pub id: String,
    pub description: String,
    /// A shell command that passes only when the feature works.
    pub check: Option<String>,
    pub passes: bool,
    /// The object's text as written, for the passes-only comparison: kept
    /// as text (one allocation), read as JSON only where two differ.
    raw: Box<RawValue>,
}

impl Feature {
    /// The feature's object as written in features.json.
    pub fn raw_text(&self) -> &str {
        self.raw.get()
    }
}

impl PartialEq for Feature {
    fn eq(&self, other: &Feature) -> bool {
        (&self.id, &self.description, &self.check, self.passes)
            == (&other.id, &other.description, &other.check, other.passes)
            && self.raw.get() == other.raw.get()
    }
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
        Placed::parse(text).map(|placed| placed.list)
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

/// A list as parsed, with where each feature's object is in its text: what
/// a later version that differs only inside one of them is derived from.
struct Placed {
    list: FeatureList,
    /// Byte ranges of the features' objects, in order.
    spans: Vec<Range<usize>>,
    /// The top-level array format: ids are positions.
    positional: bool,
}

impl Placed {
    fn parse(text: &str) -> Result<Placed, String> {
        let invalid = |e: serde_json::Error| format!("{FILE_NAME} is not valid JSON: {e}");
        // Taken apart as text: each feature keeps its object as written, and
        // nothing of the list is built as JSON values (a run reads a new
        // version every session; a thousand features are 100,000s of them).
        let (items, positional): (Vec<&RawValue>, bool) = match first_byte(text) {
            Some(b'[') => (serde_json::from_str(text).map_err(invalid)?, true),
            Some(b'{') => {
                let mut top: HashMap<String, &RawValue> =
                    serde_json::from_str(text).map_err(invalid)?;
                match top.remove("features") {
                    Some(items) if first_byte(items.get()) == Some(b'[') => {
                        (serde_json::from_str(items.get()).map_err(invalid)?, false)
                    }
                    Some(_) => return Err(format!("{FILE_NAME}: `features` must be an array")),
                    None => {
                        return Err(format!(
                            "{FILE_NAME} has no `features` array: expected {{\"features\": [{{\"id\": ..., \"passes\": false}}]}}"
                        ))
                    }
                }
            }
            _ => {
                serde_json::from_str::<&RawValue>(text).map_err(invalid)?;
                return Err(format!(
                    "{FILE_NAME} must be an object with a `features` array"
                ));
            }
        };
        let features = items
            .iter()
            .enumerate()
            .map(|(i, item)| Feature::from_raw(i, item, positional))
            .collect::<Result<Vec<_>, _>>()?;
        // Everything is keyed by id: a list that names one twice cannot be read right.
        let mut seen = HashSet::new();
        if let Some(dup) = features.iter().find(|f| !seen.insert(f.id.as_str())) {
            return Err(format!(
                "{FILE_NAME}: feature id `{}` appears more than once; ids must be unique",
                dup.id
            ));
        }
        let spans = items.iter().map(|item| span_in(text, item.get())).collect();
        Ok(Placed {
            list: FeatureList { features },
            spans,
            positional,
        })
    }
}

/// The first byte of `text` that is not JSON whitespace.
fn first_byte(text: &str) -> Option<u8> {
    text.bytes()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
}

/// Where `part`, a slice of `text`, lies in it.
fn span_in(text: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - text.as_ptr() as usize;
    start..start + part.len()
}

/// The fields of a feature the orchestrator reads, each as written; any
/// other field is kept only in the feature's text.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    passes: Option<&'a RawValue>,
    #[serde(borrow)]
    description: Option<&'a RawValue>,
    #[serde(borrow)]
    check: Option<&'a RawValue>,
    #[serde(borrow)]
    steps: Option<&'a RawValue>,
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
    fn from_raw(index: usize, item: &RawValue, positional: bool) -> Result<Feature, String> {
        let at = Position(index);
        if first_byte(item.get()) != Some(b'{') {
            return Err(format!("{at} is not an object"));
        }
        let fields: Fields = serde_json::from_str(item.get())
            .map_err(|e| format!("{at}: {e}; write each field once"))?;
        let value = |raw: Option<&RawValue>| -> Result<Option<Value>, String> {
            raw.map(|r| serde_json::from_str(r.get()))
                .transpose()
                .map_err(|e| format!("{at}: {e}"))
        };
        let id = if positional {
            format!("F{:03}", index + 1)
        } else {
            match value(fields.id)? {
                Some(Value::String(s)) if !s.trim().is_empty() => s,
                Some(Value::String(_)) => return Err(format!("{at} has an empty `id`")),
                Some(_) => return Err(format!("{at}: `id` must be a string")),
                None => return Err(format!("{at} has no `id`")),
            }
        };
        let passes = match value(fields.passes)? {
            Some(Value::Bool(b)) => b,
            Some(_) => return Err(format!("{at} (`{id}`): `passes` must be true or false")),
            None => return Err(format!("{at} (`{id}`) has no `passes` field")),
        };
        let description = match value(fields.description)? {
            Some(Value::String(s)) => s,
            None => String::new(),
            Some(_) => return Err(format!("{at} (`{id}`): `description` must be a string")),
        };
        let check = match value(fields.check)? {
            // No process can be given it as an argument.
            Some(Value::String(s)) if s.contains('\0') => {
                return Err(format!(
                    "{at} (`{}`): `check` holds a NUL byte; write the command without it",
                    printable(&id)
                ))
            }
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
            Some(Value::String(_)) | Some(Value::Null) | None => None,
            Some(_) => {
                return Err(format!(
                    "{at} (`{id}`): `check` must be a shell command string"
                ))
            }
        };
        if let Some(steps) = fields.steps {
            if first_byte(steps.get()) != Some(b'[') {
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
            raw: item.to_owned(),
        })
    }

    /// The feature's object as written, pretty-printed (as written, where
    /// it is too deep to read as JSON values).
    pub fn pretty_json(&self) -> String {
        serde_json::from_str::<Value>(self.raw.get())
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or_else(|_| self.raw.get().to_string())
    }

    /// The feature's object, as JSON values; None where it is too deep to read.
    fn object(&self) -> Option<serde_json::Map<String, Value>> {
        match serde_json::from_str(self.raw.get()) {
            Ok(Value::Object(map)) => Some(map),
            _ => None,
        }
    }

    /// Every field but `key` is the same in `other`, as JSON. The same text
    /// is the same JSON; only features whose texts differ are read as
    /// values (a run compares every feature of the list each session, and
    /// one of them changed).
    fn same_but(&self, other: &Feature, key: &str) -> bool {
        if self.raw.get() == other.raw.get() {
            return true;
        }
        let (Some(a), Some(b)) = (self.object(), other.object()) else {
            return false;
        };
        let fields =
            |m: &serde_json::Map<String, Value>| m.len() - usize::from(m.contains_key(key));
        fields(&a) == fields(&b)
            && a.iter()
                .filter(|(k, _)| k.as_str() != key)
                .all(|(k, v)| b.get(k) == Some(v))
    }
}

/// Versions of `features.json` as read, newest last.
static PARSED: Mutex<Vec<Version>> = Mutex::new(Vec::new());

/// How many versions are kept: main's, a session's base and head, the
/// candidate's, with room for sessions side by side.
const PARSED_KEPT: usize = 8;

/// A version of the list as parsed: the list, or what is wrong with it.
pub type Parsed = Result<Arc<FeatureList>, String>;

/// One version: its blob, what it parsed to, and (when it parsed) its
/// text and where its features are in it.
struct Version {
    blob: Oid,
    parsed: Parsed,
    text: String,
    spans: Vec<Range<usize>>,
    positional: bool,
}

impl Version {
    /// The list `text` holds, read from this version where the two differ
    /// only inside one feature's object (a session's head differs from its
    /// base in the `passes` it flipped): that object is parsed, the other
    /// features are this version's. The result is what parsing the whole
    /// text gives: outside that object the two texts are the same bytes, and
    /// in its place stands one whole JSON object. None where the change is
    /// elsewhere, or the new object is not one or does not read as a
    /// feature (a whole parse then says what is wrong).
    fn derive(&self, text: &str) -> Option<Placed> {
        let list = self.parsed.as_ref().ok()?;
        let (old, new) = (self.text.as_bytes(), text.as_bytes());
        let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let room = old.len().min(new.len()) - prefix;
        let suffix = old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take(room)
            .take_while(|(a, b)| a == b)
            .count();
        let k = self
            .spans
            .partition_point(|s| s.start <= prefix)
            .checked_sub(1)?;
        let span = &self.spans[k];
        if old.len() - suffix > span.end {
            return None;
        }
        // Where the spans after it are now: shifted by the change in length.
        let moved = |at: usize| (at + new.len()).checked_sub(old.len());
        let end = moved(span.end)?;
        let part = text.get(span.start..end)?;
        let raw: &RawValue = serde_json::from_str(part).ok()?;
        if raw.get().len() != part.len() {
            return None;
        }
        let feature = Feature::from_raw(k, raw, self.positional).ok()?;
        if feature.id != list.features[k].id && list.features.iter().any(|f| f.id == feature.id) {
            return None;
        }
        let mut features = list.features.clone();
        features[k] = feature;
        let mut spans = Vec::with_capacity(self.spans.len());
        spans.extend_from_slice(&self.spans[..k]);
        spans.push(span.start..end);
        for s in &self.spans[k + 1..] {
            spans.push(moved(s.start)?..moved(s.end)?);
        }
        Some(Placed {
            list: FeatureList { features },
            spans,
            positional: self.positional,
        })
    }
}

/// `features.json` at `commit`: None where the commit has none, else the
/// list or what is wrong with it. Each version (blob) is parsed once per
/// process and shared: a run reads main's list several times a session,
/// and a list of a thousand features takes milliseconds to parse; a new
/// version that differs from a kept one inside one feature is derived from
/// it. A blob's id is the hash of its content, so a version is the same in
/// every repository.
pub fn list_at(repo: &Repository, commit: Oid) -> anyhow::Result<Option<Parsed>> {
    let Some(entry) = crate::git::entry_at(repo, commit, FILE_NAME)? else {
        return Ok(None);
    };
    let id = entry.id();
    if let Some(hit) = cached(id) {
        return Ok(Some(hit));
    }
    let blob = entry.to_object(repo)?.peel_to_blob()?;
    let text = String::from_utf8_lossy(blob.content()).into_owned();
    let derived = PARSED
        .lock()
        .ok()
        .and_then(|kept| kept.iter().rev().find_map(|v| v.derive(&text)));
    let version = match derived.map_or_else(|| Placed::parse(&text), Ok) {
        Ok(placed) => Version {
            blob: id,
            parsed: Ok(Arc::new(placed.list)),
            text,
            spans: placed.spans,
            positional: placed.positional,
        },
        Err(e) => Version {
            blob: id,
            parsed: Err(e),
            text: String::new(),
            spans: Vec::new(),
            positional: false,
        },
    };
    let parsed = version.parsed.clone();
    if let Ok(mut kept) = PARSED.lock() {
        if kept.len() >= PARSED_KEPT {
            kept.drain(..1);
        }
        kept.push(version);
    }
    Ok(Some(parsed))
}

/// The parsed version of blob `id`, when kept; it becomes the newest.
fn cached(id: Oid) -> Option<Parsed> {
    let mut kept = PARSED.lock().ok()?;
    let at = kept.iter().position(|v| v.blob == id)?;
    let hit = kept.remove(at);
    let parsed = hit.parsed.clone();
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

    /// Kept version of `text`, as `list_at` keeps one.
    fn version(text: &str) -> Version {
        let placed = Placed::parse(text).unwrap();
        Version {
            blob: Oid::zero(),
            parsed: Ok(Arc::new(placed.list)),
            text: text.to_string(),
            spans: placed.spans,
            positional: placed.positional,
        }
    }

    /// A derived version is exactly the whole parse: list and spans.
    fn assert_derives_as_parsed(from: &Version, text: &str) -> bool {
        let Some(derived) = from.derive(text) else {
            return false;
        };
        let whole = Placed::parse(text).unwrap_or_else(|e| panic!("derived, but {e}: {text}"));
        assert_eq!(derived.list, whole.list, "{text}");
        assert_eq!(derived.spans, whole.spans, "{text}");
        true
    }

    #[test]
    fn a_change_inside_one_feature_is_derived_as_a_whole_parse_reads_it() {
        let base = r#"{"features": [
            {"id": "a", "description": "one", "steps": ["x"], "passes": false},
            {"id": "b", "description": "tw\u006f", "passes": false},
            {"id": "c", "passes": false, "check": "t"}
        ], "note": {"x": [1, 2]}}"#;
        let from = version(base);
        for (head, derived) in [
            (base.replacen("false", "true", 1), true),
            (
                base.replacen(
                    r#""passes": false, "check""#,
                    r#""passes": true, "check""#,
                    1,
                ),
                true,
            ),
            (base.replace("\"one\"", "\"one, longer now\""), true),
            (base.replace("\"c\"", "\"d\""), true),
            // Two features touched, or the change outside any: read whole.
            (base.replace("false", "true"), false),
            (base.replace("[1, 2]", "[1, 3]"), false),
            (base.replace("\n        ]", "]"), false),
            // What a whole parse refuses is left to it, to say why.
            (base.replace("\"c\"", "\"a\""), false),
            (base.replace("\"c\", ", "\"c\"}, {\"id\": \"e\", "), false),
            (base.replacen("false", "fals", 1), false),
            (
                base.replacen("\"passes\": false", "\"passes\": 1", 1),
                false,
            ),
            (base.replacen("{\"id\": \"a\"", " {\"id\": \"a\"", 1), false),
        ] {
            assert_eq!(assert_derives_as_parsed(&from, &head), derived, "{head}");
        }
        let array =
            r#"[{"description": "d", "passes": false}, {"description": "e", "passes": false}]"#;
        let head = array.replacen("false", "true", 1);
        assert!(assert_derives_as_parsed(&version(array), &head));
        assert_eq!(Placed::parse(&head).unwrap().list.features[1].id, "F002");
    }

    #[test]
    fn any_edit_is_derived_as_a_whole_parse_reads_it_or_left_to_one() {
        // Random edits of a list, each a few bytes of JSON replacing a few:
        // a derived list must be what parsing the whole text gives.
        let base = render(
            &(1..=12)
                .map(|i| {
                    let mut f = serde_json::Map::new();
                    f.insert("id".into(), format!("F{i:03}").into());
                    f.insert("description".into(), format!("feature {i} \"q\"").into());
                    f.insert("steps".into(), serde_json::json!(["a", {"b": [i]}]));
                    f.insert("passes".into(), (i % 3 == 0).into());
                    f
                })
                .collect::<Vec<_>>(),
        );
        let from = version(&base);
        let pieces = [
            "",
            "true",
            "false",
            "\"",
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            " ",
            "\\",
            "\"F001\"",
            "\"id\"",
            "\"passes\": true",
            "}, {",
            "\"x\": 1,",
            "é",
            "\u{1F600}",
            "\n",
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut derived = 0;
        for _ in 0..3000 {
            let mut text = base.clone();
            for _ in 0..=next(2) {
                let at = next(text.len());
                let len = next(4).min(text.len() - at);
                let (Some(_), Some(_)) = (text.get(..at), text.get(at + len..)) else {
                    continue;
                };
                text.replace_range(at..at + len, pieces[next(pieces.len())]);
            }
            if assert_derives_as_parsed(&from, &text) {
                derived += 1;
            }
        }
        assert!(derived > 100, "only {derived} edits were derived");
    }

    #[test]
    fn a_field_written_twice_is_refused() {
        let text = r#"{"features": [{"id": "a", "passes": false, "passes": true}]}"#;
        let err = FeatureList::parse(text).unwrap_err();
        assert!(
            err.contains("feature #1") && err.contains("duplicate field `passes`"),
            "{err}"
        );
    }

    #[test]
    fn features_too_deep_to_read_as_values_are_not_the_same() {
        let deep = |inner: &str| {
            format!(
                r#"{{"features": [{{"id": "a", "passes": false, "x": {}{inner}{}}}]}}"#,
                "[".repeat(300),
                "]".repeat(300)
            )
        };
        let (one, two) = (deep("1"), deep("2"));
        let problems = passes_only_problems(&one, &two, "a");
        assert!(
            problems.iter().any(|p| p.contains("`a` was edited")),
            "{problems:?}"
        );
        assert_eq!(passes_only_problems(&one, &one, "a"), Vec::<String>::new());
        let list = FeatureList::parse(&one).unwrap();
        assert!(list.features[0].pretty_json().starts_with("{\"id\""));
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
