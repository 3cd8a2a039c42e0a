//! Parsing model strings such as `scripted:PATH` or `openai:gpt-4o`.

use std::path::Path;

use crate::error::bad_input;

/// Which wire format a model string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// A JSON file of scripted turns, for tests and the demo.
    Scripted,
}

impl ProviderKind {
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderKind::Scripted => "scripted",
        }
    }
}

/// A resolved model choice: the provider and the model name (for `scripted`, a file path).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub kind: ProviderKind,
    pub name: String,
}

const KNOWN: &str = "scripted:PATH";

impl ModelSpec {
    /// Parse `PROVIDER:NAME`. Relative scripted paths resolve against `base`.
    pub fn parse(text: &str, base: &Path) -> anyhow::Result<ModelSpec> {
        let (prefix, name) = text.split_once(':').ok_or_else(|| {
            bad_input(format!(
                "model `{text}` has no provider: write it as PROVIDER:NAME, one of {KNOWN}"
            ))
        })?;
        if name.is_empty() {
            return Err(bad_input(format!(
                "model `{text}` names no model after `{prefix}:`"
            )));
        }
        Self::from_parts(prefix, name, base)
    }

    /// Build from a provider name and a model name, as `[model]` in longrun.toml gives them.
    pub fn from_parts(provider: &str, name: &str, base: &Path) -> anyhow::Result<ModelSpec> {
        match provider {
            "scripted" => {
                let path = Path::new(name);
                let path = if path.is_absolute() {
                    path.to_path_buf()
                } else {
                    base.join(path)
                };
                Ok(ModelSpec {
                    kind: ProviderKind::Scripted,
                    name: path.display().to_string(),
                })
            }
            other => Err(bad_input(format!(
                "unknown model provider `{other}`: use one of {KNOWN}"
            ))),
        }
    }

    /// The model string, as recorded in trailers and written to longrun.toml.
    pub fn display(&self) -> String {
        format!("{}:{}", self.kind.prefix(), self.name)
    }
}
