//! The feature list a model writes when asked for one: a JSON array of
//! `{description, steps}` (in a fenced block or bare, or wrapped as
//! `{"features": [...]}`), else numbered or bulleted lines. Ids are the
//! harness's to give, so whatever ids the model wrote are ignored.
//!
//! A spec that lists its features already (a list under a heading that
//! says "feature", or a list each item of which names a function) is its
//! own plan: [`from_spec`] reads it, and the model is not asked.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// One feature as planned, before the harness gives it an id and a check.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    pub description: String,
    pub steps: Vec<String>,
}

/// The features in `answer`, or why none could be read (for the model).
pub fn parse(answer: &str) -> Result<Vec<Planned>, String> {
    let from_json = json_candidates(answer)
        .into_iter()
        .find_map(|text| serde_json::from_str::<Value>(&text).ok())
        .map(|v| from_value(&v));
    let planned = match from_json {
        Some(list) if !list.is_empty() => list,
        _ => match loose_objects(answer) {
            list if !list.is_empty() => list,
            _ => from_lines(answer),
        },
    };
    match planned.is_empty() {
        true => Err("no feature list was found: reply with a JSON array of objects, each with \"description\" and \"steps\"".into()),
        false => Ok(planned),
    }
}

/// Texts that may be the JSON: each fenced block, then the outermost
/// brackets of the whole answer.
fn json_candidates(answer: &str) -> Vec<String> {
    let mut found: Vec<String> = crate::confined::text_calls::fences(answer)
        .into_iter()
        .map(|f| f.body)
        .collect();
    for (open, close) in [('[', ']'), ('{', '}')] {
        if let (Some(a), Some(b)) = (answer.find(open), answer.rfind(close)) {
            if a < b {
                found.push(answer[a..=b].to_string());
            }
        }
    }
    found
}

fn from_value(value: &Value) -> Vec<Planned> {
    let items = match value {
        Value::Array(items) => items.as_slice(),
        Value::Object(map) => match map.get("features") {
            Some(Value::Array(items)) => items.as_slice(),
            _ => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    items.iter().filter_map(planned_from).collect()
}

fn planned_from(item: &Value) -> Option<Planned> {
    let text = |v: &Value| {
        v.as_str()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let description = match item {
        Value::String(s) => text(&Value::String(s.clone())),
        Value::Object(map) => ["description", "feature", "name", "title", "summary"]
            .iter()
            .find_map(|k| map.get(*k).and_then(text)),
        _ => None,
    }?;
    let steps = match item.get("steps") {
        Some(Value::Array(steps)) => steps.iter().filter_map(text).collect(),
        Some(Value::String(s)) if !s.trim().is_empty() => vec![s.trim().to_string()],
        _ => Vec::new(),
    };
    Some(Planned { description, steps })
}

/// Objects of an array that is almost JSON, as small models write it: a
/// description holding unescaped quotes (`` `f("")` is 0 ``) or a raw line
/// break. A value runs to the quote that the next key or the object's end
/// follows.
fn loose_objects(answer: &str) -> Vec<Planned> {
    static OBJECT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r#"(?s)"(?:description|feature|name|title)"\s*:\s*"(.*?)"\s*(?:,\s*"steps"\s*:\s*\[(.*?)\]\s*)?,?\s*\}"#).ok()
    });
    let Some(re) = OBJECT.as_ref() else {
        return Vec::new();
    };
    re.captures_iter(answer)
        .filter_map(|c| {
            let description = c[1].replace("\\\"", "\"").trim().to_string();
            let steps = c.get(2).map_or(Vec::new(), |s| loose_strings(s.as_str()));
            (!description.is_empty()).then_some(Planned { description, steps })
        })
        .collect()
}

/// `"a", "b"` as the strings, quotes inside them kept.
fn loose_strings(text: &str) -> Vec<String> {
    let text = text.trim();
    let inner = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text);
    static SEP: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r#""\s*,\s*""#).ok());
    match SEP.as_ref() {
        Some(re) => re
            .split(inner)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
        None => vec![inner.to_string()],
    }
}

/// The spec's own feature list: the top-level list under a heading that
/// says "feature", else the first list of at least two items each naming a
/// function (`` `name(`` ); None when there is none or it is longer than `max`.
pub fn from_spec(spec: &str, max: usize) -> Option<Vec<Planned>> {
    static CALL: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"`[A-Za-z_][A-Za-z0-9_.]*\(").ok());
    let names_code = |item: &String| CALL.as_ref().is_some_and(|re| re.is_match(item));
    let lists = spec_lists(spec);
    let chosen = lists
        .iter()
        .find(|(heading, _)| heading.to_lowercase().contains("feature"))
        .or_else(|| {
            lists
                .iter()
                .find(|(_, items)| items.len() >= 2 && items.iter().all(names_code))
        })?;
    let items = &chosen.1;
    (items.len() <= max).then(|| {
        items
            .iter()
            .map(|item| Planned {
                description: item.clone(),
                steps: Vec::new(),
            })
            .collect()
    })
}

/// The top-level lists of a markdown text outside code fences, each with
/// the heading above it; an item's indented lines are part of it.
fn spec_lists(spec: &str) -> Vec<(String, Vec<String>)> {
    let mut lists: Vec<(String, Vec<String>)> = Vec::new();
    let (mut heading, mut fenced, mut open) = (String::new(), false, false);
    for line in spec.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            open = false;
            continue;
        }
        if fenced || line.trim().is_empty() {
            continue;
        }
        let indented = line.starts_with(' ') || line.starts_with('\t');
        if let Some(text) = line.strip_prefix('#') {
            heading = text.trim_start_matches('#').trim().to_string();
            open = false;
        } else if let Some(item) = list_item(line) {
            if !open {
                lists.push((heading.clone(), Vec::new()));
                open = true;
            }
            if let Some((_, items)) = lists.last_mut() {
                items.push(item.trim().to_string());
            }
        } else if indented && open {
            if let Some(last) = lists.last_mut().and_then(|(_, items)| items.last_mut()) {
                last.push(' ');
                last.push_str(line.trim());
            }
        } else {
            open = false;
        }
    }
    lists
}

/// The text of a top-level list item: `- x`, `* x`, `+ x`, `1. x`, `1) x`.
fn list_item(line: &str) -> Option<&str> {
    line.strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .or_else(|| line.strip_prefix("+ "))
        .or_else(|| {
            let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let rest = line.get(digits..).filter(|_| digits > 0)?;
            rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "))
        })
}

/// `1. Parse ...`, `- Parse ...`, `F002: Parse ...`: one feature per line.
fn from_lines(answer: &str) -> Vec<Planned> {
    answer
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("- ")
                .or_else(|| line.strip_prefix("* "))
                .or_else(|| numbered(line))?;
            let rest = rest.trim().trim_matches('*').trim();
            (rest.len() > 3).then(|| Planned {
                description: rest.to_string(),
                steps: Vec::new(),
            })
        })
        .collect()
}

/// The rest of `12. text`, `3) text` or `F003: text`.
fn numbered(line: &str) -> Option<&str> {
    let body = line.strip_prefix('F').unwrap_or(line);
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let rest = &body[digits..];
    rest.strip_prefix(". ")
        .or_else(|| rest.strip_prefix(") "))
        .or_else(|| rest.strip_prefix(": "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_s_numbered_feature_list_is_its_plan_with_each_item_whole() {
        let spec = "# Shop\n\nA module `shop.py`.\n\n- uses unittest\n\n## Features\n\n1. **Adding.** `add(sku)` adds\n   one item; more text.\n\n2. **Removing.** `remove(sku)`\n   takes one.\n\n```\n3. not an item\n```\n\n## Notes\n\n- later\n";
        let got = from_spec(spec, 12).unwrap();
        let descriptions: Vec<&str> = got.iter().map(|p| p.description.as_str()).collect();
        assert_eq!(
            descriptions,
            vec![
                "**Adding.** `add(sku)` adds one item; more text.",
                "**Removing.** `remove(sku)` takes one."
            ]
        );
        assert_eq!(from_spec(spec, 1), None, "longer than the most features");
    }

    #[test]
    fn a_list_of_functions_is_a_plan_and_a_list_of_prose_is_not() {
        let functions = "# calc\n\nA module:\n\n- `add(a, b)`: the sum.\n- `neg(x)`: minus x.\n";
        assert_eq!(from_spec(functions, 12).map(|p| p.len()), Some(2));
        let prose = "# calc\n\n- fast\n- small\n\nIt has `add(a, b)` and `neg(x)`.\n";
        assert_eq!(from_spec(prose, 12), None);
        let one = "# calc\n\n- `add(a, b)`: the sum.\n";
        assert_eq!(
            from_spec(one, 12),
            None,
            "one function is no list of features"
        );
    }

    #[test]
    fn a_json_array_in_a_block_is_read_and_its_ids_ignored() {
        let answer = "Here is the plan:\n```json\n[\n  {\"id\": \"X1\", \"description\": \"word_count(text) counts words\", \"steps\": [\"call it\", \"compare\"]},\n  {\"name\": \"top_words(text, n)\", \"steps\": \"sorted by count\"}\n]\n```\n";
        let got = parse(answer).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].description, "word_count(text) counts words");
        assert_eq!(got[0].steps, vec!["call it", "compare"]);
        assert_eq!(got[1].description, "top_words(text, n)");
        assert_eq!(got[1].steps, vec!["sorted by count"]);
    }

    #[test]
    fn a_wrapped_list_bare_json_and_numbered_lines_are_read() {
        let wrapped = "{\"features\": [{\"description\": \"a\"}, {\"description\": \"b\"}]}";
        assert_eq!(parse(wrapped).unwrap().len(), 2);
        let bare = "Sure. [{\"description\": \"parse\"}] Done.";
        assert_eq!(parse(bare).unwrap()[0].description, "parse");
        let lines = "Features:\n1. Parse the input\n2) Print the total\nF003: Sort by name\n";
        let got: Vec<String> = parse(lines)
            .unwrap()
            .into_iter()
            .map(|p| p.description)
            .collect();
        assert_eq!(
            got,
            vec!["Parse the input", "Print the total", "Sort by name"]
        );
    }

    #[test]
    fn almost_json_with_unescaped_quotes_is_read() {
        let answer = "```json\n[\n  {\n    \"description\": \"`word_count(text)`: `word_count(\"\")` is 0, `word_count(\"a  b\nc\")` is 3.\",\n    \"steps\": [\"Check it returns 0 for an empty string\", \"Check 'a  b\nc'\"]\n  },\n  {\n    \"description\": \"`longest_word(text)`: raises `ValueError`.\",\n    \"steps\": [\"Check it raises\"]\n  }\n]\n```";
        let got = parse(answer).unwrap();
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(
            got[0]
                .description
                .starts_with("`word_count(text)`: `word_count(\"\")` is 0"),
            "{got:?}"
        );
        assert_eq!(got[0].steps.len(), 2, "{got:?}");
        assert_eq!(got[1].steps, vec!["Check it raises"]);
    }

    #[test]
    fn an_answer_without_a_list_says_what_to_send() {
        let err = parse("I cannot help with that.").unwrap_err();
        assert!(err.contains("JSON array"), "{err}");
    }
}
