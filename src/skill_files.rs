//! Skill files: `skills/*/SKILL.md`, read and parsed. Both sides use it: the
//! worker reads the repo's skills, the orchestrator reads the user's
//! (`~/.config/longrun/skills`, outside the sandbox) and passes them in
//! worker.json.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A skill as passed to the worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkillDoc {
    pub name: String,
    pub description: String,
    pub body: String,
}

/// The user's skills directory: `$XDG_CONFIG_HOME/longrun/skills` or `~/.config/longrun/skills`.
pub fn user_skills_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config.join("longrun").join("skills"))
}

/// Every skill in the user's directory, bodies included (they are small and read once).
pub fn load_user_skills() -> Vec<SkillDoc> {
    let Some(dir) = user_skills_dir() else {
        return Vec::new();
    };
    scan(&dir)
        .into_iter()
        .filter_map(|(name, path)| {
            let text = std::fs::read_to_string(&path).ok()?;
            let (name, description, body) = parse(&name, &text);
            Some(SkillDoc {
                name,
                description,
                body,
            })
        })
        .collect()
}

/// `(directory name, SKILL.md path)` of every skill under `dir`, sorted by name.
pub fn scan(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                e.path().join("SKILL.md"),
            )
        })
        .filter(|(_, p)| p.is_file())
        .collect();
    found.sort();
    found
}

/// Name, description and body of a SKILL.md: YAML-style front matter
/// (`name:`, `description:`) when present, else the directory name and the
/// first line of text.
pub fn parse(dir_name: &str, text: &str) -> (String, String, String) {
    let mut name = dir_name.to_string();
    let mut description = String::new();
    let mut body = text;
    if let Some(rest) = text.strip_prefix("---\n") {
        if let Some(end) = rest.find("\n---") {
            for line in rest[..end].lines() {
                if let Some((k, v)) = line.split_once(':') {
                    let v = v.trim().trim_matches('"').to_string();
                    match k.trim() {
                        "name" if !v.is_empty() => name = v,
                        "description" => description = v,
                        _ => {}
                    }
                }
            }
            body = rest[end + 4..].trim_start_matches('-').trim_start();
        }
    }
    if description.is_empty() {
        description = body
            .lines()
            .map(|l| l.trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .unwrap_or("")
            .to_string();
    }
    (name, one_line(&description, 200), body.to_string())
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}
