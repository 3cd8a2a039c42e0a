//! Checking a tool call's arguments against the tool's JSON schema, and
//! reading them typed.
//!
//! Models send missing, misspelled and wrongly typed arguments; every such
//! problem becomes an error that names the argument and the expected type, so
//! the model can fix the next call. `null` counts as absent, because some
//! providers send it for optional arguments.

use anyhow::{anyhow, bail};
use serde_json::{Map, Value};

/// A call's arguments, known to be a JSON object.
pub struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// The arguments of `tool` as an object, or an error saying what came instead.
    pub fn object(tool: &str, value: &'a Value) -> anyhow::Result<Args<'a>> {
        match value {
            Value::Object(map) => Ok(Args { map }),
            other => bail!(
                "the arguments of `{tool}` must be a JSON object, not {}",
                kind(other)
            ),
        }
    }

    fn present(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// A required string argument.
    pub fn string(&self, name: &str) -> anyhow::Result<&'a str> {
        self.opt_string(name)?
            .ok_or_else(|| anyhow!("missing required argument `{name}` (a string)"))
    }

    pub fn opt_string(&self, name: &str) -> anyhow::Result<Option<&'a str>> {
        match self.present(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(wrong_type(name, "a string", other)),
        }
    }

    pub fn opt_u64(&self, name: &str) -> anyhow::Result<Option<u64>> {
        match self.present(name) {
            None => Ok(None),
            Some(v) => v
                .as_u64()
                .map(Some)
                .ok_or_else(|| wrong_type(name, "a non-negative integer", v)),
        }
    }

    pub fn opt_bool(&self, name: &str) -> anyhow::Result<Option<bool>> {
        match self.present(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(wrong_type(name, "a boolean (true or false)", other)),
        }
    }
}

/// Check `value` against the `required` list and the property types of `schema`.
pub fn validate(tool: &str, schema: &Value, value: &Value) -> anyhow::Result<()> {
    let args = Args::object(tool, value)?;
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        if args.present(name).is_none() {
            let expected = schema_type(schema, name).unwrap_or("a value");
            bail!("missing required argument `{name}` ({expected})");
        }
    }
    for (name, v) in args.map.iter().filter(|(_, v)| !v.is_null()) {
        if let Some(expected) = schema_type(schema, name) {
            if !matches_type(expected, v) {
                return Err(wrong_type(name, expected, v));
            }
        }
    }
    Ok(())
}

/// The expected type of property `name`, in words.
fn schema_type(schema: &Value, name: &str) -> Option<&'static str> {
    let ty = schema.get("properties")?.get(name)?.get("type")?.as_str()?;
    Some(match ty {
        "string" => "a string",
        "integer" => "a non-negative integer",
        "number" => "a number",
        "boolean" => "a boolean (true or false)",
        "array" => "an array",
        "object" => "an object",
        _ => return None,
    })
}

fn matches_type(expected: &str, v: &Value) -> bool {
    match expected {
        "a string" => v.is_string(),
        "a non-negative integer" => v.is_u64(),
        "a number" => v.is_number(),
        "a boolean (true or false)" => v.is_boolean(),
        "an array" => v.is_array(),
        "an object" => v.is_object(),
        _ => true,
    }
}

fn wrong_type(name: &str, expected: &str, got: &Value) -> anyhow::Error {
    anyhow!("argument `{name}` must be {expected}, not {}", kind(got))
}

/// What a JSON value is, in words, with a short preview.
fn kind(v: &Value) -> String {
    let preview: String = v.to_string().chars().take(40).collect();
    let what = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    };
    format!("{what} ({preview})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object",
               "properties": {"path": {"type": "string"}, "limit": {"type": "integer"},
                              "all": {"type": "boolean"}},
               "required": ["path"]})
    }

    fn check(v: Value) -> String {
        match validate("read_file", &schema(), &v) {
            Ok(()) => "ok".into(),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn names_the_missing_argument_and_its_type() {
        assert_eq!(
            check(json!({})),
            "missing required argument `path` (a string)"
        );
        assert_eq!(
            check(json!({"path": null})),
            "missing required argument `path` (a string)"
        );
    }

    #[test]
    fn names_the_wrongly_typed_argument() {
        assert_eq!(
            check(json!({"path": 3})),
            "argument `path` must be a string, not a number (3)"
        );
        assert_eq!(
            check(json!({"path": "a", "limit": "10"})),
            "argument `limit` must be a non-negative integer, not a string (\"10\")"
        );
        assert_eq!(
            check(json!({"path": "a", "all": 1})),
            "argument `all` must be a boolean (true or false), not a number (1)"
        );
    }

    #[test]
    fn rejects_arguments_that_are_not_an_object() {
        assert_eq!(
            check(json!(["a"])),
            "the arguments of `read_file` must be a JSON object, not an array ([\"a\"])"
        );
    }

    #[test]
    fn accepts_nulls_for_optional_arguments_and_extra_keys() {
        assert_eq!(check(json!({"path": "a", "limit": null, "extra": 1})), "ok");
    }
}
