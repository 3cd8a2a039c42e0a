//! The dependency closure of an acceptance check: the files of a tree the
//! check runs, imports or reads, found from the check's command and, file
//! by file, from what each one loads (Python imports with the package
//! `__init__.py` and pytest `conftest.py` files on their path, JavaScript
//! `require`/`import` of relative paths, C `#include "..."`, and any string
//! literal or shell word that names a file of the tree, such as a data file
//! opened by a literal path).
//!
//! What a worker may write of it is its feature's files to change (the
//! feature's `files` in features.json); everything else of it is frozen
//! with the tests. Without `files`, project code that is not test-side by
//! its name or directory is taken as the feature's to change, so that a
//! project that never said which files are whose loses nothing it had.
//!
//! This module only reads a tree; freezing is the orchestrator's
//! (`trusted/verify/acceptance.rs`). It is a static reading: a test that
//! computes the name of what it loads is not followed (see docs/security.md).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use git2::{ObjectType, Repository, Tree};

use crate::features::{Feature, FeatureList};

/// The most files one closure holds, and the most bytes read of one file.
const MAX_FILES: usize = 2000;
const MAX_READ: usize = 1 << 20;

/// Files no check's closure freezes: the worker records its work there.
const NEVER_FROZEN: &[&str] = &[crate::features::FILE_NAME, "progress.md"];

/// Extensions of code: such a file is a feature's to change unless it is test-side.
const CODE: &[&str] = &[
    "py", "js", "mjs", "cjs", "ts", "jsx", "tsx", "c", "h", "cc", "cpp", "hpp", "rs", "go", "rb",
    "sh", "bash", "pl", "php",
];

/// Every file of `tree` that `command` depends on, as far as a static
/// reading finds: what it names, and what those load, transitively; a
/// file of `to_change` (None: not declared, see [`frozen_part`]) is in it
/// but what it loads is the feature's own code, not followed.
pub fn of_command(
    repo: &Repository,
    tree: &Tree,
    command: &str,
    to_change: Option<&[String]>,
) -> BTreeSet<String> {
    closure_from(repo, tree, named_files(repo, tree, command), to_change)
}

/// The closure of `named`, files of `tree`: [`of_command`] from its seeds.
fn closure_from(
    repo: &Repository,
    tree: &Tree,
    named: Vec<String>,
    to_change: Option<&[String]>,
) -> BTreeSet<String> {
    let mut found: BTreeSet<String> = BTreeSet::new();
    let mut queue: VecDeque<String> = named.iter().cloned().collect();
    while let Some(path) = queue.pop_front() {
        if found.len() >= MAX_FILES || !found.insert(path.clone()) {
            continue;
        }
        // What the command names is the check's own, whatever it is.
        let own = named.contains(&path) && !declared(&path, to_change);
        if !own && !is_frozen(&path, to_change) {
            continue;
        }
        for next in loads(repo, tree, &path) {
            if !found.contains(&next) {
                queue.push_back(next);
            }
        }
    }
    found
}

/// The frozen part of a check's closure: all of it but `to_change`, the
/// feature's files to change (None: not declared), and the worker's files.
pub fn frozen_part(closure: &BTreeSet<String>, to_change: Option<&[String]>) -> Vec<String> {
    closure
        .iter()
        .filter(|p| is_frozen(p, to_change))
        .cloned()
        .collect()
}

fn declared(path: &str, to_change: Option<&[String]>) -> bool {
    to_change.is_some_and(|files| files.iter().any(|f| f == path))
}

fn is_frozen(path: &str, to_change: Option<&[String]>) -> bool {
    !NEVER_FROZEN.contains(&path)
        && match to_change {
            Some(files) => !files.iter().any(|f| f == path),
            None => is_test_side(path) || !is_code(path),
        }
}

/// What is frozen per check at the commit `at`: each feature's check by its
/// id, and each `[checks] commands` entry and the suite by their command.
pub fn frozen_at(
    repo: &Repository,
    at: git2::Oid,
    list: &FeatureList,
    commands: &[String],
) -> anyhow::Result<BTreeMap<String, Vec<String>>> {
    let tree = repo.find_commit(at)?.tree()?;
    let mut out = BTreeMap::new();
    for f in &list.features {
        if let Some(check) = &f.check {
            out.insert(
                f.id.clone(),
                frozen_of(repo, &tree, check, f.files().as_deref()),
            );
        }
    }
    for command in commands {
        out.insert(command.clone(), frozen_of_global(repo, &tree, command));
    }
    Ok(out)
}

/// The frozen part of a global check's or the suite's closure: it belongs
/// to no feature, so only its own code is frozen: the scripts it runs
/// ([`run_scripts`]), the scripts they source and the test-side files they
/// load; the project's code and data it reads are the features'.
pub fn frozen_of_global(repo: &Repository, tree: &Tree, command: &str) -> Vec<String> {
    let scripts = run_scripts(tree, command);
    let closure = closure_from(repo, tree, scripts.clone(), None);
    let shell = |p: &str| p.ends_with(".sh") || p.ends_with(".bash");
    let all: BTreeSet<String> = closure
        .into_iter()
        .filter(|p| scripts.contains(p) || is_test_side(p) || shell(p))
        .filter(|p| !NEVER_FROZEN.contains(&p.as_str()))
        .collect();
    all.into_iter().collect()
}

/// Interpreters whose first plain argument is the script they run.
const INTERPRETERS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "python", "python3", "node", "ruby", "perl", "php", "deno", "bun",
];

/// The files of `tree` that `command` runs as programs: in each of its
/// `&&`, `||`, `;` and `|` parts, the program when it is a path, or the
/// script an interpreter is given (not with `-c` or `-m`).
pub fn run_scripts(tree: &Tree, command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in command.split(['&', '|', ';', '\n']) {
        let Some(words) = shlex::split(part) else {
            continue;
        };
        let mut words = words
            .into_iter()
            .skip_while(|w| w.contains('=') && !w.starts_with('-'));
        let Some(program) = words.next() else {
            continue;
        };
        let base = program.rsplit('/').next().unwrap_or(&program).to_string();
        let script = match INTERPRETERS.contains(&base.as_str()) {
            true => {
                let args: Vec<String> = words.collect();
                let inline = args.iter().any(|a| a == "-c" || a == "-m");
                args.into_iter()
                    .find(|a| !a.starts_with('-'))
                    .filter(|_| !inline)
            }
            false => program.contains('/').then_some(program),
        };
        if let Some(p) = script
            .and_then(|s| normalize("", &s))
            .filter(|p| is_file(tree, p))
        {
            out.push(p);
        }
    }
    out
}

/// The frozen part of `command`'s closure: [`frozen_part`], and what the
/// command names itself unless it is a declared file to change.
pub fn frozen_of(
    repo: &Repository,
    tree: &Tree,
    command: &str,
    to_change: Option<&[String]>,
) -> Vec<String> {
    let closure = of_command(repo, tree, command, to_change);
    let named = named_files(repo, tree, command)
        .into_iter()
        .filter(|p| !NEVER_FROZEN.contains(&p.as_str()) && !declared(p, to_change));
    let all: BTreeSet<String> = frozen_part(&closure, to_change)
        .into_iter()
        .chain(named)
        .collect();
    all.into_iter().collect()
}

impl Feature {
    /// The feature's files to change (`files` in features.json), when declared.
    pub fn files(&self) -> Option<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct Files {
            files: Option<Vec<String>>,
        }
        let parsed: Files = serde_json::from_str(self.raw_text()).ok()?;
        parsed.files.map(|f| {
            f.into_iter()
                .map(|p| p.trim_start_matches("./").to_string())
                .collect()
        })
    }
}

/// Test-side by where it lies or its name: a test, a test helper, a fixture.
pub fn is_test_side(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    crate::rules::is_test_file(path)
        || name == "conftest.py"
        || ["test", "fixture", "spec"]
            .iter()
            .any(|w| stem(&name).contains(w))
}

fn stem(name: &str) -> &str {
    name.split('.').next().unwrap_or(name)
}

fn is_code(path: &str) -> bool {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    ext.is_some_and(|e| CODE.contains(&e.as_str()))
}

/// The files of the tree a command names: a path to a file; a directory
/// with the file patterns it is given (`discover -s tests -p test_x.py`),
/// or its test files; with a pattern and no directory, the whole tree.
pub fn named_files(repo: &Repository, tree: &Tree, command: &str) -> Vec<String> {
    let tokens = crate::rules::named_paths(command);
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut patterns = Vec::new();
    for token in tokens {
        let token = normalize("", &token);
        match token.as_deref().map(|t| (t, kind(tree, t))) {
            Some((t, Some(ObjectType::Blob))) => files.push(t.to_string()),
            Some((t, Some(ObjectType::Tree))) if !t.is_empty() => dirs.push(t.to_string()),
            // A file pattern for a test runner's discovery (`-p test_x.py`).
            Some((t, _)) if !t.contains('/') && (t.contains('.') || t.contains('*')) => {
                patterns.push(t.to_string())
            }
            _ => {}
        }
    }
    let runner = ["unittest", "pytest", "discover"]
        .iter()
        .any(|w| command.contains(w));
    let globs = glob_set(&patterns).filter(|_| runner);
    if dirs.is_empty() && !patterns.is_empty() && command.contains("discover") {
        dirs.push(String::new());
    }
    for dir in dirs {
        for path in files_under(repo, tree, &dir) {
            let name = path.rsplit('/').next().unwrap_or(&path);
            let wanted = match &globs {
                Some(g) => g.is_match(name),
                None => crate::rules::is_test_file(&path),
            };
            if wanted {
                files.push(path);
            }
        }
    }
    files
}

fn glob_set(patterns: &[String]) -> Option<globset::GlobSet> {
    let mut builder = globset::GlobSetBuilder::new();
    let mut any = false;
    for p in patterns {
        let name = p.rsplit('/').next().unwrap_or(p);
        if let Ok(g) = globset::Glob::new(name) {
            builder.add(g);
            any = true;
        }
    }
    any.then(|| builder.build().ok()).flatten()
}

/// The files below `dir` (the whole tree for ""), at most [`MAX_FILES`].
fn files_under(repo: &Repository, tree: &Tree, dir: &str) -> Vec<String> {
    let sub = match dir {
        "" => Some(tree.clone()),
        d => tree
            .get_path(std::path::Path::new(d))
            .ok()
            .and_then(|e| e.to_object(repo).ok())
            .and_then(|o| o.into_tree().ok()),
    };
    let mut out = Vec::new();
    if let Some(sub) = sub {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{dir}/")
        };
        let _ = sub.walk(git2::TreeWalkMode::PreOrder, |at, entry| {
            if entry.kind() == Some(ObjectType::Blob) && out.len() < MAX_FILES {
                if let Some(name) = entry.name() {
                    out.push(format!("{prefix}{at}{name}"));
                }
            }
            git2::TreeWalkResult::Ok
        });
    }
    out
}

fn kind(tree: &Tree, path: &str) -> Option<ObjectType> {
    if path.is_empty() {
        return Some(ObjectType::Tree);
    }
    tree.get_path(std::path::Path::new(path)).ok()?.kind()
}

fn is_file(tree: &Tree, path: &str) -> bool {
    kind(tree, path) == Some(ObjectType::Blob)
}

/// `rel` joined to the directory `dir` of the tree, `.` and `..` resolved;
/// None when it leaves the tree or is absolute.
fn normalize(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') || rel.is_empty() {
        return None;
    }
    let mut parts: Vec<&str> = dir.split('/').filter(|p| !p.is_empty()).collect();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(d, _)| d)
}

/// The files of the tree that the file at `path` loads.
fn loads(repo: &Repository, tree: &Tree, path: &str) -> Vec<String> {
    let Some(text) = read(repo, tree, path) else {
        return Vec::new();
    };
    let dir = parent(path);
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    let mut out = match ext {
        "py" => python(tree, path, &text),
        "js" | "mjs" | "cjs" | "ts" | "jsx" | "tsx" => javascript(tree, dir, &text),
        "c" | "h" | "cc" | "cpp" | "hpp" => c_includes(tree, dir, &text),
        _ => Vec::new(),
    };
    out.extend(literal_paths(tree, dir, &text));
    out.retain(|p| p != path);
    out
}

fn read(repo: &Repository, tree: &Tree, path: &str) -> Option<String> {
    let entry = tree.get_path(std::path::Path::new(path)).ok()?;
    let blob = repo.find_blob(entry.id()).ok()?;
    let bytes = blob.content();
    let bytes = &bytes[..bytes.len().min(MAX_READ)];
    (!bytes.contains(&0)).then(|| String::from_utf8_lossy(bytes).into_owned())
}

/// Quoted strings and shell words that name a file of the tree, from the
/// file's directory or the tree's root.
fn literal_paths(tree: &Tree, dir: &str, text: &str) -> Vec<String> {
    static WORD: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"["'`]([^"'`\s]{1,200})["'`]|(?:^|[\s=(<>])([\w./-]+\.\w{1,8})\b"#).ok()
    });
    let Some(word) = WORD.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for cap in word.captures_iter(text) {
        let Some(m) = cap.get(1).or_else(|| cap.get(2)) else {
            continue;
        };
        let rel = m.as_str().trim_start_matches("./");
        for base in [dir, ""] {
            if let Some(p) = normalize(base, rel).filter(|p| is_file(tree, p)) {
                out.push(p);
                break;
            }
        }
    }
    out
}

/// The project files a Python file imports, with the `__init__.py` and
/// `conftest.py` files of the packages on the way.
fn python(tree: &Tree, path: &str, text: &str) -> Vec<String> {
    let dir = parent(path);
    let mut out = package_files(tree, dir);
    for module in python_imports(text) {
        let (dots, name) = module.split_at(module.len() - module.trim_start_matches('.').len());
        let bases: Vec<String> = match dots.len() {
            0 => ancestors(dir),
            n => ancestors(dir).into_iter().skip(n - 1).take(1).collect(),
        };
        let rel = name.replace('.', "/");
        for base in bases {
            for candidate in [format!("{rel}.py"), format!("{rel}/__init__.py")] {
                if let Some(p) = normalize(&base, &candidate).filter(|p| is_file(tree, p)) {
                    out.extend(package_files(tree, parent(&p)));
                    out.push(p);
                }
            }
        }
    }
    out
}

/// `dir` and each directory above it, the root last.
fn ancestors(dir: &str) -> Vec<String> {
    let mut out = vec![dir.to_string()];
    let mut at = dir;
    while !at.is_empty() {
        at = parent(at);
        out.push(at.to_string());
    }
    out
}

/// `__init__.py` and `conftest.py` of `dir` and the directories above it.
fn package_files(tree: &Tree, dir: &str) -> Vec<String> {
    ancestors(dir)
        .iter()
        .flat_map(|d| ["__init__.py", "conftest.py"].map(|f| normalize(d, f)))
        .flatten()
        .filter(|p| is_file(tree, p))
        .collect()
}

/// The modules a Python file imports: `a.b` for `import a.b`, and for
/// `from a import b` both `a` and `a.b` (b may be a module); relative
/// imports keep their leading dots.
fn python_imports(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("import ") {
            for part in rest.split(',') {
                if let Some(m) = part.split_whitespace().next() {
                    out.push(m.to_string());
                }
            }
        } else if let Some(rest) = line.strip_prefix("from ") {
            let Some((module, names)) = rest.split_once(" import ") else {
                continue;
            };
            let module = module.trim();
            out.push(module.to_string());
            let names = names.trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace());
            for name in names.split(',').filter_map(|n| n.split_whitespace().next()) {
                let sep = if module.ends_with('.') { "" } else { "." };
                out.push(format!("{module}{sep}{name}"));
            }
        }
    }
    out.retain(|m| {
        let name = m.trim_start_matches('.');
        !m.is_empty()
            && name
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
    });
    out
}

/// Relative `require`, `import` and `import()` of a JavaScript file.
fn javascript(tree: &Tree, dir: &str, text: &str) -> Vec<String> {
    static SPEC: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?:require\s*\(|import\s*\(|from|import)\s*["'](\.{1,2}/[^"']+)["']"#)
            .ok()
    });
    let Some(spec) = SPEC.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for cap in spec.captures_iter(text) {
        let Some(rel) = cap.get(1).map(|m| m.as_str()) else {
            continue;
        };
        let tries = [
            "",
            ".js",
            ".mjs",
            ".cjs",
            ".ts",
            ".json",
            "/index.js",
            "/index.ts",
        ];
        if let Some(p) = tries
            .iter()
            .filter_map(|ext| normalize(dir, &format!("{rel}{ext}")))
            .find(|p| is_file(tree, p))
        {
            out.push(p);
        }
    }
    out
}

/// `#include "x.h"` of a C file, from its directory, the root or `include/`.
fn c_includes(tree: &Tree, dir: &str, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        let Some(rest) = line.strip_prefix('#').map(str::trim_start) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix("include") else {
            continue;
        };
        let Some(name) = rest
            .trim()
            .strip_prefix('"')
            .and_then(|r| r.split('"').next())
        else {
            continue;
        };
        if let Some(p) = [dir, "", "include"]
            .iter()
            .filter_map(|base| normalize(base, name))
            .find(|p| is_file(tree, p))
        {
            out.push(p);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose one commit holds `files`; returns it and the commit.
    fn repo_with(files: &[(&str, &str)]) -> (tempfile::TempDir, Repository, git2::Oid) {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let mut index = repo.index().unwrap();
        for (path, text) in files {
            let blob = repo.blob(text.as_bytes()).unwrap();
            index
                .add(&crate::git::index_entry(path.as_bytes(), blob, 0o100644))
                .unwrap();
        }
        let oid = {
            let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
            let sig = git2::Signature::now("t", "t@t").unwrap();
            repo.commit(None, &sig, &sig, "c", &tree, &[]).unwrap()
        };
        (dir, repo, oid)
    }

    fn closure(files: &[(&str, &str)], command: &str) -> Vec<String> {
        let (_d, repo, oid) = repo_with(files);
        let tree = repo.find_commit(oid).unwrap().tree().unwrap();
        of_command(&repo, &tree, command, None)
            .into_iter()
            .collect()
    }

    #[test]
    fn a_python_test_brings_its_helpers_packages_conftest_and_data() {
        let test = "import sys, os\nsys.path.append('..')\nimport testutil\nfrom calc import mul\nfrom .helpers import h\n\
                    DATA = open(os.path.join(os.path.dirname(__file__), 'cases.json')).read()\n";
        let files = [
            ("tests/test_mul.py", test),
            ("tests/__init__.py", ""),
            ("tests/helpers.py", "import json\n"),
            ("tests/cases.json", "[]"),
            ("conftest.py", ""),
            ("testutil.py", "import unittest\n"),
            ("calc.py", "def mul(a, b):\n    raise NotImplementedError\n"),
            ("other.py", ""),
        ];
        let got = closure(
            &files,
            "python3 -m unittest discover -s tests -p test_mul.py",
        );
        assert_eq!(
            got,
            [
                "calc.py",
                "conftest.py",
                "tests/__init__.py",
                "tests/cases.json",
                "tests/helpers.py",
                "tests/test_mul.py",
                "testutil.py"
            ]
        );
        let set: BTreeSet<String> = got.into_iter().collect();
        // Declared: everything but calc.py is frozen; undeclared: the test side.
        let declared = frozen_part(&set, Some(&["calc.py".to_string()]));
        assert!(
            declared.contains(&"testutil.py".to_string())
                && !declared.contains(&"calc.py".to_string())
        );
        let undeclared = frozen_part(&set, None);
        assert!(undeclared.contains(&"testutil.py".to_string()));
        assert!(!undeclared.contains(&"calc.py".to_string()));
    }

    #[test]
    fn javascript_c_and_shell_checks_bring_what_they_load() {
        let files = [
            (
                "test/mul.test.js",
                "const m = require('../src/mul');\nimport h from './helper.mjs';\n",
            ),
            ("test/helper.mjs", "export default 1;\n"),
            ("src/mul.js", "module.exports = 1;\n"),
            (
                "tests/t.c",
                "#include \"../src/calc.h\"\n#include <stdio.h>\n",
            ),
            ("src/calc.h", "int mul(int, int);\n"),
            (
                "scripts/check.sh",
                ". scripts/lib.sh\ngrep -q eval src/mul.js && exit 1\n",
            ),
            ("scripts/lib.sh", "true\n"),
        ];
        assert_eq!(
            closure(&files, "node --test test/mul.test.js"),
            ["src/mul.js", "test/helper.mjs", "test/mul.test.js"]
        );
        assert_eq!(
            closure(&files, "cc tests/t.c -o t && ./t"),
            ["src/calc.h", "tests/t.c"]
        );
        assert_eq!(
            closure(&files, "bash scripts/check.sh"),
            ["scripts/check.sh", "scripts/lib.sh", "src/mul.js"]
        );
    }

    #[test]
    fn a_global_check_freezes_the_scripts_it_runs_not_the_data_it_reads() {
        let files = [
            ("scripts/check.sh", ". scripts/lib.sh\ngrep -q ok data/d1\n"),
            ("scripts/lib.sh", "true\n"),
            ("data/d1", "ok\n"),
            ("tools/lint.py", "import sys\n"),
        ];
        let (_d, repo, oid) = repo_with(&files);
        let tree = repo.find_commit(oid).unwrap().tree().unwrap();
        let frozen = |c: &str| frozen_of_global(&repo, &tree, c);
        assert_eq!(
            frozen("bash scripts/check.sh"),
            ["scripts/check.sh", "scripts/lib.sh"]
        );
        assert_eq!(
            frozen("X=1 python3 tools/lint.py && ./scripts/check.sh"),
            ["scripts/check.sh", "scripts/lib.sh", "tools/lint.py"]
        );
        assert!(frozen("grep -qx ok data/d1 && test -x scripts/check.sh").is_empty());
        assert!(frozen("python3 -c 'import tools.lint'").is_empty());
        // A check about files the work moves freezes none of them.
        let files = [("lib/m.py", "x = 1\n")];
        assert!(closure(&files, "test -f pkg/m.py && test ! -e lib").is_empty());
    }

    #[test]
    fn the_worker_files_and_paths_out_of_the_tree_are_never_in_it() {
        let files = [
            (
                "t/test_a.py",
                "open('../../etc/passwd'); open('features.json'); open('/etc/x')\n",
            ),
            ("features.json", "{}"),
        ];
        let got = closure(&files, "python3 t/test_a.py");
        let set: BTreeSet<String> = got.iter().cloned().collect();
        assert_eq!(got, ["features.json", "t/test_a.py"]);
        assert_eq!(frozen_part(&set, None), ["t/test_a.py"]);
    }
}
