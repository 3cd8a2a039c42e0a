//! Skills: `skills/*/SKILL.md` in the repo and in `~/.config/longrun/skills`.
//!
//! Names and one-line descriptions go in the system prompt; a body is loaded
//! only when the model calls `read_skill {name}`. A repo skill wins over a
//! user skill of the same name. The user's directory is outside the sandbox,
//! so the orchestrator reads it ([`load_user_skills`]) and passes it in
//! worker.json.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::model::ToolSpec;
use crate::skill_files::{parse, scan, SkillDoc};

#[derive(Debug, Clone, PartialEq)]
enum Body {
    /// Read from the workspace when asked, so the latest version is loaded.
    File(PathBuf),
    Inline(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Skill {
    pub name: String,
    pub description: String,
    body: Body,
}

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "read_skill".into(),
        description: "Load the instructions of a skill listed in the system prompt, by name."
            .into(),
        parameters: json!({
            "type": "object",
            "properties": {"name": {"type": "string"}},
            "required": ["name"]
        }),
    }
}

/// The skills a session has: the repo's, then the user's not shadowed by one.
pub fn discover(workspace: &Path, user: &[SkillDoc]) -> Vec<Skill> {
    let mut skills: Vec<Skill> = scan(&workspace.join("skills"))
        .into_iter()
        .filter_map(|(name, path)| {
            let text = std::fs::read_to_string(&path).ok()?;
            let (name, description, _) = parse(&name, &text);
            Some(Skill {
                name,
                description,
                body: Body::File(path),
            })
        })
        .collect();
    for doc in user {
        if !skills.iter().any(|s| s.name == doc.name) {
            skills.push(Skill {
                name: doc.name.clone(),
                description: doc.description.clone(),
                body: Body::Inline(doc.body.clone()),
            });
        }
    }
    skills
}

/// The system prompt's list of skills, or nothing when there are none.
pub fn prompt_section(skills: &[Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n\n## Skills\n\nLoad one with `read_skill {\"name\": ...}` when its description fits the task:\n");
    for s in skills {
        text.push_str(&format!("- `{}`: {}\n", s.name, s.description));
    }
    text
}

/// The body of the skill called `name`; the error lists the skills there are.
pub fn read(skills: &[Skill], name: &str) -> anyhow::Result<String> {
    let Some(skill) = skills.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        anyhow::bail!(
            "there is no skill `{name}`; the skills are: {}",
            if names.is_empty() {
                "(none)".to_string()
            } else {
                names.join(", ")
            }
        );
    };
    match &skill.body {
        Body::Inline(text) => Ok(text.clone()),
        Body::File(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
            Ok(parse(name, &text).2)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_name_and_description() {
        let (n, d, b) = parse(
            "dir",
            "---\nname: release\ndescription: \"How to cut a release\"\n---\n# Steps\n1. tag\n",
        );
        assert_eq!(
            (n.as_str(), d.as_str()),
            ("release", "How to cut a release")
        );
        assert_eq!(b, "# Steps\n1. tag\n");
    }

    #[test]
    fn without_front_matter_the_first_line_describes() {
        let (n, d, _) = parse("testing", "\n# Run the tests with make check\nmore\n");
        assert_eq!(
            (n.as_str(), d.as_str()),
            ("testing", "Run the tests with make check")
        );
    }

    #[test]
    fn repo_skills_shadow_user_skills_and_bodies_load_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("skills/db")).unwrap();
        std::fs::write(
            dir.path().join("skills/db/SKILL.md"),
            "---\nname: db\ndescription: repo db\n---\nrepo body",
        )
        .unwrap();
        let user = vec![
            SkillDoc {
                name: "db".into(),
                description: "user db".into(),
                body: "user body".into(),
            },
            SkillDoc {
                name: "style".into(),
                description: "house style".into(),
                body: "be terse".into(),
            },
        ];
        let skills = discover(dir.path(), &user);
        let section = prompt_section(&skills);
        assert!(
            section.contains("- `db`: repo db\n- `style`: house style\n"),
            "{section}"
        );
        assert_eq!(read(&skills, "db").unwrap(), "repo body");
        assert_eq!(read(&skills, "style").unwrap(), "be terse");
        assert!(read(&skills, "nope")
            .unwrap_err()
            .to_string()
            .contains("the skills are: db, style"));
    }
}
