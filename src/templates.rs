//! Bundled text: prompts, the initial longrun.toml, and the demo.

pub const INITIALIZER_PROMPT: &str = include_str!("../templates/initializer.md");
pub const WORKER_PROMPT: &str = include_str!("../templates/worker.md");
pub const LONGRUN_TOML: &str = include_str!("../templates/longrun.toml");
pub const DEMO_SPEC: &str = include_str!("../templates/demo/SPEC.md");
pub const DEMO_MODEL: &str = include_str!("../templates/demo/model.json");
pub const DEMO_TOML: &str = include_str!("../templates/demo/longrun.toml");

/// Replace every `{{key}}` in `template` with its value.
pub fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (key, value) in values {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}
