//! The module under test as stubs: every function the spec or a test
//! names, each raising "not implemented". With it in place a test's
//! imports succeed, so judging a test sees its test functions run and
//! fail, not an import error that hides a test which asserts nothing; and
//! the worker later finds the file it is to fill in.

use std::sync::LazyLock;

use regex::Regex;

use super::framework::{Framework, Module};

/// The first line of a stub module the harness wrote (and may rewrite).
const MARK: &str = "stubs written by the harness";

/// Function names a spec gives in code spans: `` `word_count(text)` ``.
pub fn spec_names(spec: &str) -> Vec<String> {
    static CALL: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"`(?:[A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)\(").ok()
    });
    collect(CALL.as_ref(), spec)
}

/// Names a test imports from the module under test.
pub fn imported_names(test: &str, framework: Framework, module: &Module) -> Vec<String> {
    let pattern = match framework {
        Framework::Unittest | Framework::Pytest => {
            format!(
                r"from\s+{}\s+import\s+\(?([A-Za-z0-9_,\s]+)\)?",
                regex::escape(&module.import)
            )
        }
        Framework::NodeTest => {
            let file = module.import.trim_end_matches(".js");
            format!(
                r"\{{([A-Za-z0-9_,\s]+)\}}\s*=\s*require\(\s*['\x22]{}(?:\.js)?['\x22]",
                regex::escape(file)
            )
        }
        Framework::CargoTest => return Vec::new(),
    };
    let Ok(re) = Regex::new(&pattern) else {
        return Vec::new();
    };
    let mut names = Vec::new();
    for c in re.captures_iter(test) {
        for name in c[1]
            .split(',')
            .map(|n| n.split_whitespace().next().unwrap_or(""))
        {
            if is_name(name) && !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
    }
    names
}

fn collect(re: Option<&Regex>, text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for c in re.into_iter().flat_map(|re| re.captures_iter(text)) {
        let name = c[1].to_string();
        if !names.contains(&name) && !KEYWORDS.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names
}

/// Calls a spec writes in code spans that are not the project's functions.
const KEYWORDS: &[&str] = &[
    "print",
    "len",
    "int",
    "str",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "range",
    "sorted",
    "require",
    "assert",
    "console",
    "Error",
    "ValueError",
    "TypeError",
];

fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// Whether the module's current text may be replaced by a new stub: it is
/// absent, empty, or a stub the harness wrote.
pub fn replaceable(current: Option<&str>) -> bool {
    current.is_none_or(|t| t.trim().is_empty() || t.contains(MARK))
}

/// The stub module's text; None where the framework has no stub form.
pub fn render(framework: Framework, names: &[String]) -> Option<String> {
    match framework {
        Framework::Unittest | Framework::Pytest => Some(python(names)),
        Framework::NodeTest => Some(javascript(names)),
        Framework::CargoTest => None,
    }
}

fn python(names: &[String]) -> String {
    let mut text =
        format!("\"\"\"See SPEC.md. These are {MARK}: replace each with the real code.\"\"\"\n");
    for name in names {
        let capital = name.starts_with(|c: char| c.is_ascii_uppercase());
        text.push_str(&match capital {
            true => format!("\n\nclass {name}:\n    def __init__(self, *args, **kwargs):\n        raise NotImplementedError(\"{name}\")\n"),
            false => format!("\n\ndef {name}(*args, **kwargs):\n    raise NotImplementedError(\"{name}\")\n"),
        });
    }
    text
}

fn javascript(names: &[String]) -> String {
    let mut text = format!(
        "'use strict';\n// See SPEC.md. These are {MARK}: replace each with the real code.\n"
    );
    for name in names {
        text.push_str(&format!(
            "\nfunction {name}() {{\n  throw new Error('not implemented: {name}');\n}}\n"
        ));
    }
    text.push_str(&format!("\nmodule.exports = {{ {} }};\n", names.join(", ")));
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spec_and_the_tests_name_the_functions() {
        let spec = "- `word_count(text)`: ... `len(x)` ... `stats.mean(xs)` and `word_count(\"\")`";
        assert_eq!(spec_names(spec), vec!["word_count", "mean"]);
        let m = Module {
            file: "textstats.py".into(),
            import: "textstats".into(),
        };
        let test =
            "from textstats import (word_count,\n    char_freq)\nfrom textstats import Top as T\n";
        assert_eq!(
            imported_names(test, Framework::Unittest, &m),
            vec!["word_count", "char_freq", "Top"]
        );
        let js = Module {
            file: "slug.js".into(),
            import: "../slug.js".into(),
        };
        let t = "const { slugify, unslug } = require('../slug');";
        assert_eq!(
            imported_names(t, Framework::NodeTest, &js),
            vec!["slugify", "unslug"]
        );
    }

    #[test]
    fn a_python_stub_imports_and_raises() {
        let dir = tempfile::tempdir().unwrap();
        let text = render(Framework::Unittest, &["add".into(), "Stack".into()]).unwrap();
        std::fs::write(dir.path().join("m.py"), &text).unwrap();
        let run = |code: &str| {
            std::process::Command::new("python3")
                .args(["-c", code])
                .current_dir(dir.path())
                .output()
                .unwrap()
        };
        let out = run("from m import add, Stack\nadd(1)");
        assert!(String::from_utf8_lossy(&out.stderr).contains("NotImplementedError: add"));
        assert!(
            replaceable(Some(&text)) && replaceable(None) && !replaceable(Some("def add(): pass"))
        );
    }

    #[test]
    fn a_javascript_stub_exports_and_throws() {
        let dir = tempfile::tempdir().unwrap();
        let text = render(Framework::NodeTest, &["slugify".into()]).unwrap();
        std::fs::write(dir.path().join("s.js"), &text).unwrap();
        let out = std::process::Command::new("node")
            .args(["-e", "require('./s.js').slugify('a')"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("not implemented: slugify"));
    }
}
