//! Parsing model strings such as `scripted:PATH`, `openai:gpt-4o`,
//! `ollama:llama3.2` or `anthropic:claude-sonnet-4-5`.

use std::path::Path;

use crate::error::bad_input;

/// Which provider a model string names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// A JSON file of scripted turns, for tests and the demo.
    Scripted,
    /// OpenAI-compatible Chat Completions (OpenAI, OpenRouter, vLLM, llama.cpp, LM Studio).
    Openai,
    /// Chat Completions at a local Ollama, with no key.
    Ollama,
    /// The Anthropic Messages API.
    Anthropic,
}

impl ProviderKind {
    pub fn prefix(self) -> &'static str {
        match self {
            ProviderKind::Scripted => "scripted",
            ProviderKind::Openai => "openai",
            ProviderKind::Ollama => "ollama",
            ProviderKind::Anthropic => "anthropic",
        }
    }

    fn from_prefix(prefix: &str) -> Option<ProviderKind> {
        [
            ProviderKind::Scripted,
            ProviderKind::Openai,
            ProviderKind::Ollama,
            ProviderKind::Anthropic,
        ]
        .into_iter()
        .find(|k| k.prefix() == prefix)
    }
}

/// A resolved model choice: the provider and the model name (for `scripted`, a file path).
#[derive(Debug, Clone, PartialEq)]
pub struct ModelSpec {
    pub kind: ProviderKind,
    pub name: String,
}

const KNOWN: &str = "openai:MODEL, anthropic:MODEL, ollama:MODEL, scripted:PATH";

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
                "model `{text}` names no model after `{prefix}:`; write it as PROVIDER:NAME, one of {KNOWN}"
            )));
        }
        Self::from_parts(prefix, name, base)
    }

    /// Build from a provider name and a model name, as `[model]` in longrun.toml gives them.
    pub fn from_parts(provider: &str, name: &str, base: &Path) -> anyhow::Result<ModelSpec> {
        let kind = ProviderKind::from_prefix(provider).ok_or_else(|| {
            bad_input(format!(
                "unknown model provider `{provider}`: use one of {KNOWN}"
            ))
        })?;
        let name = match kind {
            ProviderKind::Scripted => {
                let path = Path::new(name);
                if path.is_absolute() {
                    path.display().to_string()
                } else {
                    base.join(path).display().to_string()
                }
            }
            _ => name.to_string(),
        };
        Ok(ModelSpec { kind, name })
    }

    /// The model string, as recorded in trailers and written to longrun.toml.
    pub fn display(&self) -> String {
        format!("{}:{}", self.kind.prefix(), self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_provider_parses_and_keeps_colons_in_the_name() {
        let base = Path::new("/p");
        let spec = ModelSpec::parse("ollama:qwen2.5-coder:7b", base).unwrap();
        assert_eq!(spec.kind, ProviderKind::Ollama);
        assert_eq!(spec.name, "qwen2.5-coder:7b");
        let spec = ModelSpec::parse("anthropic:claude-sonnet-4-5", base).unwrap();
        assert_eq!(spec.display(), "anthropic:claude-sonnet-4-5");
        let spec = ModelSpec::parse("openai:openai/gpt-4o", base).unwrap();
        assert_eq!(
            (spec.kind, spec.name.as_str()),
            (ProviderKind::Openai, "openai/gpt-4o")
        );
        let spec = ModelSpec::parse("scripted:m.json", base).unwrap();
        assert_eq!(spec.name, "/p/m.json");
    }

    #[test]
    fn unknown_provider_lists_the_known_ones() {
        let err = ModelSpec::parse("gemini:x", Path::new("/")).unwrap_err();
        assert!(err.to_string().contains("anthropic:MODEL"), "{err}");
    }
}
