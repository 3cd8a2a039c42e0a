//! The test framework a guided initializer writes acceptance tests for, and
//! what the harness writes around them: each feature's check, `init.sh`,
//! `.gitignore`, the scaffolding a test needs to import the code.
//!
//! Chosen from what the spec and the workspace show (`pytest`, `node`,
//! `Cargo.toml`, ...). Not here: asking the model (`guided.rs`).

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

/// A test framework the harness knows how to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framework {
    /// Python's unittest, run by `python3 -m unittest discover`.
    Unittest,
    /// pytest, where the spec or the project asks for it.
    Pytest,
    /// Node's built-in runner, `node --test`.
    NodeTest,
    /// Rust integration tests, `cargo test --test NAME`.
    CargoTest,
}

/// Where the code under test goes and how a test names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// The file, relative to the project root: `textstats.py`, `src/lib.rs`.
    pub file: String,
    /// What a test imports: `textstats`, `../textstats.js`, `app`.
    pub import: String,
}

impl Framework {
    /// The framework the spec asks for or the workspace already uses;
    /// unittest where nothing says.
    pub fn detect(spec: &str, workspace: &Path) -> Framework {
        let has = |f: &str| workspace.join(f).exists();
        if has("Cargo.toml") {
            return Framework::CargoTest;
        }
        if has("package.json") {
            return Framework::NodeTest;
        }
        let lower = spec.to_ascii_lowercase();
        let score = |words: &[&str]| {
            words
                .iter()
                .map(|w| lower.matches(w).count())
                .sum::<usize>()
        };
        let python = score(&["python", ".py", "unittest", "pytest", "def "]);
        let node = score(&[
            "javascript",
            "node",
            ".js",
            "npm",
            "require(",
            "module.exports",
        ]);
        let rust = score(&["rust", "cargo", ".rs", "fn ", "crate"]);
        if rust > python.max(node) {
            Framework::CargoTest
        } else if node > python {
            Framework::NodeTest
        } else if lower.contains("pytest") || has("conftest.py") {
            Framework::Pytest
        } else {
            Framework::Unittest
        }
    }

    /// The word that opens a code block of a test file.
    pub fn language(self) -> &'static str {
        match self {
            Framework::Unittest | Framework::Pytest => "python",
            Framework::NodeTest => "javascript",
            Framework::CargoTest => "rust",
        }
    }

    /// The name people call it by, for the prompt and progress.md.
    pub fn name(self) -> &'static str {
        match self {
            Framework::Unittest => "Python unittest",
            Framework::Pytest => "pytest",
            Framework::NodeTest => "node --test (node:test and node:assert)",
            Framework::CargoTest => "Rust integration test (cargo test)",
        }
    }

    /// The module the spec names (the first source file it mentions in
    /// this framework's language that is not a test), else a default.
    pub fn module(self, spec: &str, workspace: &Path) -> Module {
        if self == Framework::CargoTest {
            let name = crate_name(workspace).unwrap_or_else(|| "app".to_string());
            return Module {
                file: "src/lib.rs".into(),
                import: name.replace('-', "_"),
            };
        }
        let named = source_files(spec)
            .into_iter()
            .find(|f| self.owns(f) && !crate::confined::test_imports::looks_like_test(f));
        let file = named.unwrap_or_else(|| self.default_file().to_string());
        let import = match self {
            Framework::NodeTest => format!("../{file}"),
            _ => file.trim_end_matches(".py").replace('/', "."),
        };
        Module { file, import }
    }

    fn owns(self, file: &str) -> bool {
        let ext = file.rsplit('.').next().unwrap_or("");
        match self {
            Framework::Unittest | Framework::Pytest => ext == "py",
            Framework::NodeTest => matches!(ext, "js" | "cjs"),
            Framework::CargoTest => ext == "rs",
        }
    }

    fn default_file(self) -> &'static str {
        match self {
            Framework::Unittest | Framework::Pytest => "app.py",
            Framework::NodeTest => "index.js",
            Framework::CargoTest => "src/lib.rs",
        }
    }

    /// The acceptance test file of the feature `id` (`F001`) about `slug`.
    pub fn test_path(self, id: &str, slug: &str) -> String {
        let stem = format!("{}_{slug}", id.to_ascii_lowercase());
        match self {
            Framework::Unittest | Framework::Pytest => format!("tests/test_{stem}.py"),
            Framework::NodeTest => format!("tests/{stem}.test.js"),
            Framework::CargoTest => format!("tests/{stem}.rs"),
        }
    }

    /// The check that runs one feature's test file alone. Python runs with
    /// `PYTHONSAFEPATH=1`: `discover -t .` puts the project root on the path.
    pub fn check(self, test_path: &str) -> String {
        let file = test_path.rsplit('/').next().unwrap_or(test_path);
        match self {
            Framework::Unittest => format!("python3 -m unittest discover -s tests -t . -p {file}"),
            Framework::Pytest => format!("python3 -m pytest -q -p no:cacheprovider {test_path}"),
            Framework::NodeTest => format!("node --test {test_path}"),
            Framework::CargoTest => {
                format!(
                    "cargo test --offline -q --test {}",
                    file.trim_end_matches(".rs")
                )
            }
        }
    }

    /// How the prompt tells the model to import the code under test.
    pub fn import_line(self, module: &Module) -> String {
        match self {
            Framework::Unittest | Framework::Pytest => {
                format!("from {} import ...", module.import)
            }
            Framework::NodeTest => format!(
                "const {{ ... }} = require('{}'); with test from 'node:test' and assert from 'node:assert'",
                module.import
            ),
            Framework::CargoTest => format!("use {}::...;", module.import),
        }
    }

    /// The shape of a test file, for the prompt: a small model fills in a
    /// form far more reliably than it recalls one. `imports` are what the
    /// test imports; `setup` makes the object a method is called on (empty
    /// for a function), `call` calls the first thing tested (`add`,
    /// `inventory.add`). Two tests, so that one is not grown without end.
    pub fn skeleton(
        self,
        module: &Module,
        imports: &[String],
        (setup, call): (&str, &str),
        id: &str,
    ) -> String {
        let list = match imports.is_empty() {
            true => "the_function".to_string(),
            false => imports.join(", "),
        };
        let line = |indent: &str| match setup.is_empty() {
            true => String::new(),
            false => format!("{indent}{setup}\n"),
        };
        let import = &module.import;
        match self {
            Framework::Unittest => format!(
                "import unittest\nfrom {import} import {list}\n\n\nclass Test{id}(unittest.TestCase):\n    def test_example(self):\n{}        self.assertEqual({call}(...), ...)\n\n    def test_another_case(self):\n        ...\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n",
                line("        ")
            ),
            Framework::Pytest => format!(
                "from {import} import {list}\n\n\ndef test_example():\n{}    assert {call}(...) == ...\n\n\ndef test_another_case():\n    ...\n",
                line("    ")
            ),
            Framework::NodeTest => format!(
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst {{ {list} }} = require('{import}');\n\ntest('example', () => {{\n{}  assert.deepStrictEqual({call}(...), ...);\n}});\n\ntest('another case', () => {{\n  // ...\n}});\n",
                line("  ")
            ),
            Framework::CargoTest => format!(
                "use {import}::*;\n\n#[test]\nfn example() {{\n{}    assert_eq!({call}(...), ...);\n}}\n\n#[test]\nfn another_case() {{\n    // ...\n}}\n",
                line("    ")
            ),
        }
    }

    /// A command that fails when the test file itself cannot be parsed.
    pub fn syntax_check(self, test_path: &str) -> Option<String> {
        match self {
            Framework::Unittest | Framework::Pytest => Some(format!(
                "python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' {test_path}"
            )),
            Framework::NodeTest => Some(format!("node --check {test_path}")),
            Framework::CargoTest => None,
        }
    }

    /// The run's output says that no test ran at all.
    pub fn ran_no_tests(self, output: &str) -> bool {
        let patterns: &[&str] = match self {
            Framework::Unittest => &["Ran 0 tests"],
            Framework::Pytest => &["no tests ran", "collected 0 items"],
            Framework::NodeTest => &["# tests 0"],
            Framework::CargoTest => &["running 0 tests"],
        };
        patterns.iter().any(|p| output.contains(p))
    }

    /// Files the harness writes so the tests can run: package markers, a
    /// manifest, Rust's empty library (`stub.rs` writes the other stubs).
    pub fn scaffold(self, module: &Module, workspace: &Path) -> Vec<(String, String)> {
        let mut files = Vec::new();
        match self {
            Framework::Unittest | Framework::Pytest => {
                files.push(("tests/__init__.py".into(), String::new()));
            }
            Framework::NodeTest => {}
            Framework::CargoTest => {
                if !workspace.join("Cargo.toml").exists() {
                    let manifest = format!(
                        "[package]\nname = \"{}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
                        module.import
                    );
                    files.push(("Cargo.toml".into(), manifest));
                }
                files.push((module.file.clone(), "//! See SPEC.md.\n".into()));
            }
        }
        files
            .into_iter()
            .filter(|(path, _)| !workspace.join(path).exists())
            .collect()
    }

    /// `init.sh`: checks the toolchain is there and, for Rust, builds.
    pub fn init_script(self) -> String {
        let body = match self {
            Framework::Unittest => "command -v python3 >/dev/null || { echo 'python3 is missing' >&2; exit 1; }\n",
            Framework::Pytest => "python3 -m pytest --version >/dev/null || { echo 'pytest is missing: pip install pytest' >&2; exit 1; }\n",
            Framework::NodeTest => "command -v node >/dev/null || { echo 'node is missing' >&2; exit 1; }\n",
            Framework::CargoTest => "cargo build --offline -q --all-targets 2>/dev/null || true\n",
        };
        format!("#!/usr/bin/env bash\n# Set up the project; idempotent. Written by the harness.\nset -u\n{body}exit 0\n")
    }

    /// `.gitignore` lines for build output.
    pub fn gitignore(self) -> &'static str {
        match self {
            Framework::Unittest | Framework::Pytest => "__pycache__/\n*.pyc\n.pytest_cache/\n",
            Framework::NodeTest => "node_modules/\n",
            Framework::CargoTest => "target/\n",
        }
    }
}

/// Source file names a spec mentions, in order, each once.
fn source_files(spec: &str) -> Vec<String> {
    static FILE: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r"(?:^|[\s`'(\x22])((?:[A-Za-z0-9_-]+/)*[A-Za-z_][A-Za-z0-9_-]*\.(?:py|js|cjs|rs))\b",
        )
        .ok()
    });
    let Some(re) = FILE.as_ref() else {
        return Vec::new();
    };
    // Names in code spans first; a bare `Node.js` or `Vue.js` in prose is a
    // product, not a file.
    let (mut spans, mut bare): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    for c in re.captures_iter(spec) {
        let name = c[1].to_string();
        let in_span = c.get(0).is_some_and(|m| m.as_str().starts_with('`'));
        let product = name.starts_with(|c: char| c.is_ascii_uppercase()) && name.ends_with(".js");
        match in_span {
            true => spans.push(name),
            false if !product => bare.push(name),
            false => {}
        }
    }
    let mut found: Vec<String> = Vec::new();
    for name in spans.into_iter().chain(bare) {
        if !found.contains(&name) {
            found.push(name);
        }
    }
    found
}

/// `[package] name` of the workspace's Cargo.toml.
fn crate_name(workspace: &Path) -> Option<String> {
    let text = std::fs::read_to_string(workspace.join("Cargo.toml")).ok()?;
    let value: toml::Value = toml::from_str(&text).ok()?;
    Some(value.get("package")?.get("name")?.as_str()?.to_string())
}

/// A feature's description as a short file-name word: `word_count`.
pub fn slug(description: &str) -> String {
    let words: Vec<String> = description
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .take(3)
        .map(|w| w.to_ascii_lowercase())
        .collect();
    match words.is_empty() {
        true => "feature".into(),
        false => words.join("_").chars().take(32).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_is_the_file_a_code_span_names_not_a_product_in_prose() {
        let spec =
            "A Node.js module `shortener.js` at the top (CommonJS). Tests use `node --test`.";
        let m = Framework::NodeTest.module(spec, Path::new("/nonexistent"));
        assert_eq!(m.file, "shortener.js");
        let bare = "A Node.js module shortener.js. Tests use node --test.";
        assert_eq!(
            Framework::NodeTest
                .module(bare, Path::new("/nonexistent"))
                .file,
            "shortener.js"
        );
    }

    #[test]
    fn the_spec_and_the_workspace_choose_the_framework() {
        let dir = tempfile::tempdir().unwrap();
        let cases = [
            (
                "A Python module `stats.py` with mean().",
                Framework::Unittest,
            ),
            ("A Python module, tested with pytest.", Framework::Pytest),
            (
                "A Node.js module `slug.js` (JavaScript, require it).",
                Framework::NodeTest,
            ),
            (
                "A Rust crate: `fn parse` in src/lib.rs, cargo test.",
                Framework::CargoTest,
            ),
            ("A small tool.", Framework::Unittest),
        ];
        for (spec, want) in cases {
            assert_eq!(Framework::detect(spec, dir.path()), want, "{spec}");
        }
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(Framework::detect("Python", dir.path()), Framework::NodeTest);
    }

    #[test]
    fn the_module_is_the_first_source_file_the_spec_names() {
        let dir = tempfile::tempdir().unwrap();
        let spec = "Tests go in `test_stats.py`; the code in `textstats.py`, then `cli.py`.";
        let m = Framework::Unittest.module(spec, dir.path());
        assert_eq!(
            (m.file.as_str(), m.import.as_str()),
            ("textstats.py", "textstats")
        );
        let js = Framework::NodeTest.module("Write `lib/slug.js`.", dir.path());
        assert_eq!(
            (js.file.as_str(), js.import.as_str()),
            ("lib/slug.js", "../lib/slug.js")
        );
        let none = Framework::Unittest.module("no file named", dir.path());
        assert_eq!(none.file, "app.py");
    }

    #[test]
    fn a_unittest_check_imports_the_module_from_the_project_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("tests")).unwrap();
        let m = Framework::Unittest.module("`calc.py`", root);
        for (path, text) in Framework::Unittest.scaffold(&m, root) {
            std::fs::write(root.join(path), text).unwrap();
        }
        let test = Framework::Unittest.test_path("F001", &slug("Add two numbers"));
        assert_eq!(test, "tests/test_f001_add_two_numbers.py");
        std::fs::write(
            root.join(&test),
            "import unittest\nfrom calc import add\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n",
        )
        .unwrap();
        let run = |_: ()| {
            std::process::Command::new("bash")
                .arg("-c")
                .arg(Framework::Unittest.check(&test))
                .current_dir(root)
                .env("PYTHONSAFEPATH", "1")
                .status()
                .unwrap()
                .success()
        };
        assert!(!run(()), "fails before the code exists");
        std::fs::write(root.join("calc.py"), "def add(a, b):\n    return a + b\n").unwrap();
        assert!(run(()), "passes once it does");
    }

    #[test]
    fn slugs_are_short_file_name_words() {
        assert_eq!(slug("Count the words: word_count(text)"), "count_the_words");
        assert_eq!(slug("!!!"), "feature");
    }
}
