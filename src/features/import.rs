//! `init --features FILE`: a feature list brought from elsewhere, turned into
//! longrun's own `features.json`.
//!
//! Three formats are read: longrun's `{"features": [...]}`, the top-level
//! array of Anthropic's autonomous-coding quickstart (`feature_list.json`,
//! ids F001, F002, ... by position) and ralph's `prd.json` (`userStories`,
//! ordered by `priority`). This module converts and validates; it does not
//! decide what an imported `passes: true` is worth (init checks that).

use serde_json::{json, Map, Value};

use super::{FeatureList, FILE_NAME};

/// Where an imported list came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Longrun,
    Anthropic,
    Ralph,
}

impl Format {
    /// How a user knows the format, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Longrun => "a longrun features.json",
            Format::Anthropic => "an Anthropic quickstart feature_list.json",
            Format::Ralph => "a ralph prd.json",
        }
    }
}

/// A converted list, ready to be committed as `features.json`.
#[derive(Debug, Clone)]
pub struct Imported {
    pub format: Format,
    pub list: FeatureList,
    /// The longrun `features.json` text.
    pub text: String,
}

impl Imported {
    /// The ids the file marked as passing, in order.
    pub fn passing(&self) -> Vec<String> {
        self.list
            .features
            .iter()
            .filter(|f| f.passes)
            .map(|f| f.id.clone())
            .collect()
    }
}

/// Convert the text of `source` (named in errors) into a longrun list.
pub fn import(text: &str, source: &str) -> Result<Imported, String> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("{source} is not valid JSON: {e}"))?;
    let (format, features) = match &value {
        Value::Array(items) => (Format::Anthropic, from_anthropic(items, source)?),
        Value::Object(map) if map.contains_key("userStories") => {
            (Format::Ralph, from_ralph(map, source)?)
        }
        Value::Object(map) if map.contains_key("features") => (Format::Longrun, value.clone()),
        _ => {
            return Err(format!(
                "{source} is none of the known formats: a longrun {FILE_NAME} ({{\"features\": [...]}}), \
                 an Anthropic feature_list.json (a top-level array) or a ralph prd.json ({{\"userStories\": [...]}})"
            ))
        }
    };
    let objects: Vec<Map<String, Value>> = match features.get("features") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_object()
                    .cloned()
                    .ok_or_else(|| format!("{source}: a feature is not an object"))
            })
            .collect::<Result<_, _>>()?,
        _ => return Err(format!("{source}: `features` must be an array")),
    };
    let text = super::render(&objects);
    let list = FeatureList::parse(&text).map_err(|e| format!("{source}: {e}"))?;
    let problems = list.shape_problems();
    if !problems.is_empty() {
        return Err(format!("{source}: {}", problems.join("; ")));
    }
    Ok(Imported { format, list, text })
}

/// The quickstart's array: ids by position, `category`, `description`, `steps` and `passes` kept.
fn from_anthropic(items: &[Value], source: &str) -> Result<Value, String> {
    let mut features = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let obj = item
            .as_object()
            .ok_or_else(|| format!("{source}: item #{} is not an object", i + 1))?;
        let mut f = Map::new();
        f.insert("id".into(), json!(format!("F{:03}", i + 1)));
        for key in ["category", "description", "steps", "check"] {
            if let Some(v) = obj.get(key) {
                f.insert(key.into(), v.clone());
            }
        }
        f.insert("passes".into(), passes(obj, source, i)?);
        features.push(Value::Object(f));
    }
    Ok(json!({ "features": features }))
}

/// ralph's stories, in `priority` order (lower first; stories without one keep their place after).
fn from_ralph(map: &Map<String, Value>, source: &str) -> Result<Value, String> {
    let stories = match map.get("userStories") {
        Some(Value::Array(items)) => items,
        _ => return Err(format!("{source}: `userStories` must be an array")),
    };
    let mut ordered: Vec<(usize, &Value)> = stories.iter().enumerate().collect();
    ordered.sort_by(|(i, a), (j, b)| {
        let key = |v: &Value, at: usize| (v["priority"].as_f64().unwrap_or(f64::MAX), at);
        key(a, *i)
            .partial_cmp(&key(b, *j))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut features = Vec::new();
    for (i, story) in ordered {
        let obj = story
            .as_object()
            .ok_or_else(|| format!("{source}: story #{} is not an object", i + 1))?;
        let id = match obj.get("id") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => return Err(format!("{source}: story #{} has no `id`", i + 1)),
        };
        let text = |key: &str| obj.get(key).and_then(Value::as_str).unwrap_or("").trim();
        let description = match (text("title"), text("description")) {
            (t, "") => t.to_string(),
            ("", d) => d.to_string(),
            (t, d) => format!("{t}: {d}"),
        };
        let mut f = Map::new();
        f.insert("id".into(), json!(id));
        if let Some(c) = obj.get("category") {
            f.insert("category".into(), c.clone());
        }
        f.insert("description".into(), json!(description));
        f.insert(
            "steps".into(),
            obj.get("acceptanceCriteria").cloned().unwrap_or(json!([])),
        );
        if !text("notes").is_empty() {
            f.insert("notes".into(), json!(text("notes")));
        }
        f.insert("passes".into(), passes(obj, source, i)?);
        features.push(Value::Object(f));
    }
    Ok(json!({ "features": features }))
}

/// `passes`, false when absent (neither format requires it).
fn passes(obj: &Map<String, Value>, source: &str, i: usize) -> Result<Value, String> {
    match obj.get("passes") {
        None | Some(Value::Null) => Ok(json!(false)),
        Some(Value::Bool(b)) => Ok(json!(b)),
        Some(_) => Err(format!(
            "{source}: item #{}: `passes` must be true or false",
            i + 1
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(i: &Imported) -> Vec<&str> {
        i.list.features.iter().map(|f| f.id.as_str()).collect()
    }

    #[test]
    fn an_anthropic_array_gets_ids_in_order_and_keeps_its_fields() {
        let text = r#"[{"category": "functional", "description": "a", "steps": ["s"], "passes": false},
                       {"category": "style", "description": "b", "steps": [], "passes": true}]"#;
        let i = import(text, "feature_list.json").unwrap();
        assert_eq!(i.format, Format::Anthropic);
        assert_eq!(ids(&i), ["F001", "F002"]);
        assert_eq!(i.passing(), ["F002"]);
        let back: Value = serde_json::from_str(&i.text).unwrap();
        assert_eq!(back["features"][0]["steps"], json!(["s"]));
        assert_eq!(back["features"][1]["category"], "style");
    }

    #[test]
    fn ralph_stories_go_in_priority_order_with_criteria_as_steps() {
        let text = r#"{"project": "x", "userStories": [
            {"id": "US-002", "title": "Second", "description": "later", "acceptanceCriteria": ["b"], "priority": 2, "passes": false},
            {"id": "US-001", "title": "First", "description": "", "acceptanceCriteria": ["a"], "priority": 1, "passes": true},
            {"id": 7, "title": "Unranked", "acceptanceCriteria": []}]}"#;
        let i = import(text, "prd.json").unwrap();
        assert_eq!(i.format, Format::Ralph);
        assert_eq!(ids(&i), ["US-001", "US-002", "7"]);
        assert_eq!(i.list.features[0].description, "First");
        assert_eq!(i.list.features[1].description, "Second: later");
        assert_eq!(i.passing(), ["US-001"]);
        let back: Value = serde_json::from_str(&i.text).unwrap();
        assert_eq!(back["features"][1]["steps"], json!(["b"]));
    }

    #[test]
    fn duplicate_unsafe_and_empty_lists_are_refused_by_name() {
        let dup = r#"{"features": [{"id": "F1", "passes": false}, {"id": "F1", "passes": false}]}"#;
        let e = import(dup, "f.json").unwrap_err();
        assert!(e.contains("`F1` appears more than once"), "{e}");
        let bad = r#"{"userStories": [{"id": "US 1", "title": "t"}]}"#;
        let e = import(bad, "prd.json").unwrap_err();
        assert!(e.contains("`US 1`"), "{e}");
        let e = import("[]", "feature_list.json").unwrap_err();
        assert!(e.contains("no features"), "{e}");
        let e = import(r#"{"tasks": []}"#, "x.json").unwrap_err();
        assert!(e.contains("none of the known formats"), "{e}");
    }
}
