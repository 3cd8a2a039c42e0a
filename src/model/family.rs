//! Model families: sane defaults for the models people run locally, picked
//! by `[model] family` or recognised in the model's name.
//!
//! A family's profile fills in what longrun.toml leaves unset: the context
//! window the harness must fit, the output cap, the temperature, the edit
//! format and whether tool calls written in the text are recovered.
//! Whatever the file sets wins. Frontier models (OpenAI's, Anthropic's)
//! have no profile: the plain defaults suit them.

use std::sync::LazyLock;

use regex::Regex;

use crate::config::{EditFormat, HarnessSettings, ModelSection};

/// The defaults one family of models gets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Profile {
    pub family: &'static str,
    /// Tokens; the window local servers are usually started with, not the
    /// model's largest (set `[model] context_window` to the server's `-c`).
    pub context_window: u64,
    pub max_output_tokens: u32,
    pub temperature: f64,
    pub edit_format: EditFormat,
    pub text_calls: bool,
    /// The small-model rules (whole-file edits, the harness's commit, the
    /// retry temperature) were measured for this family at this size and
    /// paid; elsewhere they stay off and the plain defaults apply.
    pub measured: bool,
}

/// A family: its name, what its model names contain, its window and output
/// cap, and the largest size (billions of parameters) at which the
/// small-model rules were measured (0: never measured; they stay off).
struct Family {
    name: &'static str,
    markers: &'static [&'static str],
    context_window: u64,
    max_output_tokens: u32,
    temperature: f64,
    measured_up_to: f64,
}

/// Most specific first: `qwen2.5-coder` before `qwen2.5`.
const FAMILIES: &[Family] = &[
    Family {
        name: "qwen2.5-coder",
        markers: &[
            "qwen2.5-coder",
            "qwen2.5_coder",
            "qwen25-coder",
            "qwen2.5coder",
        ],
        context_window: 32_768,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 1.5,
    },
    Family {
        name: "qwen3-coder",
        markers: &["qwen3-coder", "qwen3_coder"],
        context_window: 65_536,
        max_output_tokens: 8192,
        temperature: 0.3,
        measured_up_to: 0.0,
    },
    Family {
        name: "qwen",
        markers: &["qwen"],
        context_window: 32_768,
        max_output_tokens: 4096,
        temperature: 0.3,
        measured_up_to: 0.0,
    },
    Family {
        name: "llama3",
        markers: &["llama-3", "llama3", "llama_3"],
        context_window: 32_768,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "codellama",
        markers: &["codellama", "code-llama"],
        context_window: 16_384,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "mistral",
        markers: &["devstral", "codestral", "mistral", "ministral", "mixtral"],
        context_window: 32_768,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "deepseek-coder",
        markers: &["deepseek-coder"],
        context_window: 16_384,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "gemma",
        markers: &["gemma"],
        context_window: 8_192,
        max_output_tokens: 2048,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "phi",
        markers: &["phi-3", "phi-4", "phi3", "phi4"],
        context_window: 16_384,
        max_output_tokens: 4096,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
    Family {
        name: "smollm",
        markers: &["smollm"],
        context_window: 8_192,
        max_output_tokens: 1024,
        temperature: 0.2,
        measured_up_to: 0.0,
    },
];

/// The family names `[model] family` accepts.
pub fn known() -> Vec<&'static str> {
    FAMILIES.iter().map(|f| f.name).collect()
}

/// The profile for `model` (a model string `PROVIDER:NAME` or a bare name):
/// the family `family` names, else the one the name shows. None for
/// scripted models and names no family matches.
pub fn profile(family: Option<&str>, model: &str) -> Option<Profile> {
    let name = match model.split_once(':') {
        Some(("scripted", _)) if family.is_none() => return None,
        Some(("openai" | "ollama" | "anthropic", rest)) => rest,
        _ => model,
    };
    let lower = name.to_ascii_lowercase();
    let found = match family {
        Some(f) => FAMILIES
            .iter()
            .find(|x| x.name.eq_ignore_ascii_case(f.trim()))?,
        None => FAMILIES
            .iter()
            .find(|x| x.markers.iter().any(|m| lower.contains(m)))?,
    };
    // Measured with the lift benchmark on Qwen2.5-Coder 0.5B and 1.5B only
    // (benches/lift/RESULTS.md). A family named in longrun.toml, on a name
    // without a size, counts as the size it was measured at.
    let measured = found.measured_up_to > 0.0
        && size_billions(&lower).map_or(family.is_some(), |b| b <= found.measured_up_to);
    Some(Profile {
        family: found.name,
        context_window: found.context_window,
        max_output_tokens: found.max_output_tokens,
        temperature: found.temperature,
        measured,
        edit_format: if measured {
            EditFormat::WholeFile
        } else {
            EditFormat::Tools
        },
        text_calls: true,
    })
}

/// The parameter count in a model name, in billions: `1.5b`, `7B`, `:0.5b`.
fn size_billions(name: &str) -> Option<f64> {
    static SIZE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"(?:^|[^0-9.a-z])(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)").ok());
    let re = SIZE.as_ref()?;
    re.captures(name)?.get(1)?.as_str().parse().ok()
}

impl Profile {
    /// The harness settings a session gets: what longrun.toml sets, with
    /// this profile filling in what it leaves unset. `[model] context_window`
    /// wins; a `[harness] context_window` other than the default counts as set.
    pub fn harness(
        profile: Option<&Profile>,
        model: &ModelSection,
        harness: &HarnessSettings,
    ) -> HarnessSettings {
        let default_window = HarnessSettings::default().context_window;
        let measured = profile.filter(|p| p.measured);
        let family_window = profile
            .map(|p| p.context_window)
            .filter(|_| harness.context_window == default_window);
        HarnessSettings {
            context_window: model
                .context_window
                .or(family_window)
                .unwrap_or(harness.context_window),
            edit_format: harness.edit_format.or(profile.map(|p| p.edit_format)),
            text_calls: harness.text_calls.or(profile.map(|p| p.text_calls)),
            commit_when_passing: harness.commit_when_passing.or(measured.map(|_| true)),
            retry_temperature: harness
                .retry_temperature
                .or(measured.map(|_| crate::config::DEFAULT_RETRY_TEMPERATURE)),
            ..harness.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_recognised_in_the_names_servers_use() {
        let cases = [
            (
                "openai:qwen2.5-coder-1.5b-instruct",
                Some(("qwen2.5-coder", EditFormat::WholeFile)),
            ),
            (
                "ollama:qwen2.5-coder:7b",
                Some(("qwen2.5-coder", EditFormat::Tools)),
            ),
            (
                "openai:Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf",
                Some(("qwen2.5-coder", EditFormat::WholeFile)),
            ),
            // Recognised, but the small-model rules were never measured on it.
            ("ollama:llama3.2:3b", Some(("llama3", EditFormat::Tools))),
            (
                "openai:meta-llama/Llama-3.1-8B-Instruct",
                Some(("llama3", EditFormat::Tools)),
            ),
            (
                "openai:mistralai/Devstral-Small-2505",
                Some(("mistral", EditFormat::Tools)),
            ),
            ("ollama:smollm2:135m", Some(("smollm", EditFormat::Tools))),
            ("openai:gpt-4o", None),
            ("anthropic:claude-sonnet-4-5", None),
            ("scripted:/tmp/qwen2.5-coder/model.json", None),
        ];
        for (model, expected) in cases {
            let got = profile(None, model).map(|p| (p.family, p.edit_format));
            assert_eq!(got, expected, "{model}");
        }
    }

    #[test]
    fn a_named_family_wins_over_the_name() {
        let p = profile(Some("qwen2.5-coder"), "openai:my-finetune").unwrap();
        assert_eq!((p.family, p.context_window), ("qwen2.5-coder", 32_768));
        assert_eq!(profile(Some("nope"), "openai:qwen2.5-coder"), None);
        let scripted = profile(Some("qwen2.5-coder"), "scripted:/tmp/m.json").unwrap();
        assert_eq!(scripted.edit_format, EditFormat::WholeFile);
        let unmeasured = profile(Some("smollm"), "scripted:/tmp/m.json").unwrap();
        assert_eq!(unmeasured.edit_format, EditFormat::Tools);
        let rules = Profile::harness(
            Some(&unmeasured),
            &ModelSection::default(),
            &HarnessSettings::default(),
        );
        assert_eq!(
            (rules.commit_when_passing, rules.retry_temperature),
            (None, None)
        );
        assert_eq!(
            rules.context_window, 8_192,
            "the window is a fact about the server, kept"
        );
    }

    #[test]
    fn what_longrun_toml_sets_wins_over_the_profile() {
        let p = profile(None, "openai:qwen2.5-coder-1.5b").unwrap();
        let unset = Profile::harness(
            Some(&p),
            &ModelSection::default(),
            &HarnessSettings::default(),
        );
        assert_eq!(unset.context_window, 32_768);
        assert_eq!(unset.edit_format, Some(EditFormat::WholeFile));
        assert_eq!(unset.text_calls, Some(true));
        assert_eq!(unset.retry_temperature, Some(0.8));
        let set = HarnessSettings {
            context_window: 16_000,
            edit_format: Some(EditFormat::Tools),
            retry_temperature: Some(0.5),
            ..HarnessSettings::default()
        };
        let model = ModelSection::default();
        let kept = Profile::harness(Some(&p), &model, &set);
        assert_eq!(
            (
                kept.context_window,
                kept.edit_format,
                kept.retry_temperature
            ),
            (16_000, Some(EditFormat::Tools), Some(0.5))
        );
        let model = ModelSection {
            context_window: Some(8_000),
            ..ModelSection::default()
        };
        assert_eq!(
            Profile::harness(Some(&p), &model, &set).context_window,
            8_000
        );
        let none = Profile::harness(None, &ModelSection::default(), &HarnessSettings::default());
        assert_eq!(none, HarnessSettings::default());
    }
}
