//! Which source files a feature's tests exercise, read from their imports,
//! for a feature that does not name the file to change (`pytest
//! tests/test_cart.py -k total`, `node --test cart.test.js`) or names one
//! that does not exist yet ("write `cart.py`"). A whole-file session needs
//! the files to write; a small model asked to find them itself seldom does.
//!
//! Only what a test says: Python `import`/`from ... import`, JavaScript and
//! TypeScript relative `require`/`import`, C and C++ `#include "..."`. Each
//! import gives the workspace paths it may resolve to, most likely first;
//! the caller keeps the ones that exist (or that the feature names).

use std::sync::LazyLock;

use regex::Regex;

/// One local import of a test: the workspace paths it may name, most likely
/// first. `created`: when none exists, the first is the file to write (a
/// relative JavaScript import names its file whatever the feature says;
/// a Python module name may be a library's, so only a named file counts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub candidates: Vec<String>,
    pub created: bool,
}

/// Whether `path` looks like a test file by its name or directory:
/// `test_x.py`, `x_test.py`, `x.test.js`, `x.spec.ts`, `tests/...`,
/// `x_test.go`, `test_x.c`.
pub fn looks_like_test(path: &str) -> bool {
    let in_tests = path
        .split('/')
        .rev()
        .skip(1)
        .any(|d| matches!(d, "test" | "tests" | "__tests__" | "spec"));
    let name = path.rsplit('/').next().unwrap_or(path);
    let stem = name.split('.').next().unwrap_or(name);
    in_tests
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem == "test"
        || stem == "tests"
        || name.contains(".test.")
        || name.contains(".spec.")
}

/// The local imports of the test at `test` (a workspace path) whose text is
/// `text`, in the order they appear.
pub fn imports(test: &str, text: &str) -> Vec<Import> {
    let dir = match test.rsplit_once('/') {
        Some((d, _)) => d,
        None => "",
    };
    let ext = test.rsplit_once('.').map_or("", |(_, e)| e);
    let found = match ext {
        "py" => python(dir, text),
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" => script(dir, ext, text),
        "c" | "h" | "cc" | "cpp" | "cxx" | "hpp" => c_family(dir, text),
        _ => Vec::new(),
    };
    let mut out: Vec<Import> = Vec::new();
    for mut import in found {
        import.candidates.retain(|c| !c.is_empty());
        let mut unique = Vec::new();
        for c in import.candidates.drain(..) {
            if !unique.contains(&c) {
                unique.push(c);
            }
        }
        import.candidates = unique;
        if !import.candidates.is_empty() && !out.contains(&import) {
            out.push(import);
        }
    }
    out
}

/// `a` joined to `b` with `/`, either may be empty; `.` and `..` resolved.
/// None when it climbs out of the workspace.
fn join(a: &str, b: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in a.split('/').chain(b.split('/')) {
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

/// Python: `import a.b, c` and `from a.b import x`, `from .m import x`,
/// `from . import m` (relative to the test's directory). A module `a.b`
/// may be `a/b.py` or `a/b/__init__.py`, at the top, under `src/`, or
/// beside the test.
fn python(dir: &str, text: &str) -> Vec<Import> {
    static FROM: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?m)^\s*from\s+(\.*)([A-Za-z_][\w.]*)?\s+import[ \t]+\(?[ \t]*([\w \t,]*)")
            .ok()
    });
    static IMPORT: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(r"(?m)^\s*import\s+([A-Za-z_][\w.]*(?:\s+as\s+\w+)?(?:\s*,\s*[A-Za-z_][\w.]*(?:\s+as\s+\w+)?)*)")
            .ok()
    });
    let mut found: Vec<(usize, Import)> = Vec::new();
    let module = |base: &str, name: &str| {
        let path = name.replace('.', "/");
        let mut candidates = Vec::new();
        for root in [base.to_string(), join("src", base).unwrap_or_default()] {
            if let Some(p) = join(&root, &path) {
                candidates.push(format!("{p}.py"));
                candidates.push(format!("{p}/__init__.py"));
            }
        }
        if base.is_empty() && !dir.is_empty() {
            if let Some(p) = join(dir, &path) {
                candidates.push(format!("{p}.py"));
            }
        }
        Import {
            candidates,
            created: false,
        }
    };
    for c in FROM.iter().flat_map(|re| re.captures_iter(text)) {
        let at = c.get(0).map_or(0, |m| m.start());
        let dots = c.get(1).map_or(0, |m| m.as_str().len());
        let name = c.get(2).map(|m| m.as_str());
        // `from .m import x` and `from . import m`: beside the test (each
        // dot past the first one directory up).
        let base = match dots {
            0 => Some(String::new()),
            n => (1..n).try_fold(dir.to_string(), |d, _| join(&d, "..")),
        };
        let Some(base) = base else { continue };
        match name {
            Some(name) => found.push((at, module(&base, name))),
            None => {
                for m in c[3].split(',').map(str::trim).filter(|m| !m.is_empty()) {
                    let m = m.split_whitespace().next().unwrap_or(m);
                    found.push((at, module(&base, m)));
                }
            }
        }
    }
    for c in IMPORT.iter().flat_map(|re| re.captures_iter(text)) {
        let at = c.get(0).map_or(0, |m| m.start());
        for m in c[1].split(',') {
            let name = m.split_whitespace().next().unwrap_or("");
            if !name.is_empty() {
                found.push((at, module("", name)));
            }
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found.into_iter().map(|(_, i)| i).collect()
}

/// JavaScript and TypeScript: `require('./x')`, `import ... from './x'`,
/// `import './x'`, `import('./x')`; only relative ones (a package name is
/// not a file of the project). Without an extension, `x.js` (`x.ts` from a
/// TypeScript test) first, then the other extensions and `x/index.js`.
fn script(dir: &str, ext: &str, text: &str) -> Vec<Import> {
    static SPEC: LazyLock<Option<Regex>> = LazyLock::new(|| {
        Regex::new(
            r#"(?m)(?:require\s*\(\s*|import\s*\(\s*|\bfrom\s*|^\s*import\s*)['"](\.\.?/[^'"\s]+)['"]"#,
        )
        .ok()
    });
    let typescript = matches!(ext, "ts" | "mts" | "cts" | "tsx");
    let mut out = Vec::new();
    for c in SPEC.iter().flat_map(|re| re.captures_iter(text)) {
        let Some(path) = join(dir, &c[1]) else {
            continue;
        };
        let name = path.rsplit('/').next().unwrap_or(&path);
        let has_ext = name.rsplit_once('.').is_some_and(|(_, e)| {
            matches!(
                e,
                "js" | "mjs" | "cjs" | "jsx" | "ts" | "mts" | "cts" | "tsx" | "json"
            )
        });
        let candidates = if has_ext {
            vec![path]
        } else {
            let exts: &[&str] = match typescript {
                true => &["ts", "tsx", "js", "mjs", "cjs"],
                false => &["js", "mjs", "cjs", "ts", "jsx"],
            };
            let mut all: Vec<String> = exts.iter().map(|e| format!("{path}.{e}")).collect();
            all.push(format!("{path}/index.{}", exts[0]));
            all
        };
        out.push(Import {
            candidates,
            created: true,
        });
    }
    out
}

/// C and C++: `#include "x.h"` beside the test, at the top, under `src/`
/// or `include/`; and the source of the same name (`x.c`), which is
/// usually the file to change.
fn c_family(dir: &str, text: &str) -> Vec<Import> {
    static INCLUDE: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r#"(?m)^\s*#\s*include\s*"([^"]+)""#).ok());
    let mut out = Vec::new();
    for c in INCLUDE.iter().flat_map(|re| re.captures_iter(text)) {
        let header = &c[1];
        let headers: Vec<String> = [dir, "", "src", "include"]
            .iter()
            .filter_map(|root| join(root, header))
            .collect();
        let stem = header.rsplit_once('.').map_or(header, |(s, _)| s);
        let sources: Vec<String> = [dir, "", "src"]
            .iter()
            .filter_map(|root| join(root, stem))
            .flat_map(|p| ["c", "cc", "cpp"].map(|e| format!("{p}.{e}")))
            .collect();
        out.push(Import {
            candidates: headers,
            created: false,
        });
        out.push(Import {
            candidates: sources,
            created: false,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(test: &str, text: &str) -> Vec<Vec<String>> {
        imports(test, text)
            .into_iter()
            .map(|i| i.candidates)
            .collect()
    }

    #[test]
    fn python_imports_name_modules_at_the_top_under_src_and_beside_the_test() {
        let text = "import unittest\nfrom duration import parse_duration\n\
                    import shop.cart as c, os\nfrom .helpers import x\nfrom . import fixtures\n\
                    from ..lib.money import (\n    Money,\n)\n";
        let got = paths("tests/unit/test_cart.py", text);
        assert_eq!(
            got[0],
            [
                "unittest.py",
                "unittest/__init__.py",
                "src/unittest.py",
                "src/unittest/__init__.py",
                "tests/unit/unittest.py"
            ]
        );
        assert_eq!(got[1][0], "duration.py");
        assert_eq!(got[1][4], "tests/unit/duration.py");
        assert_eq!(
            got[2][..3],
            ["shop/cart.py", "shop/cart/__init__.py", "src/shop/cart.py"]
        );
        assert_eq!(got[3][0], "os.py");
        assert_eq!(got[4][0], "tests/unit/helpers.py");
        assert_eq!(got[5][0], "tests/unit/fixtures.py");
        assert_eq!(got[6][0], "tests/lib/money.py");
        assert!(imports("test_x.py", text).iter().all(|i| !i.created));
    }

    #[test]
    fn script_imports_are_relative_files_and_name_the_file_to_write() {
        let text = "'use strict';\nconst test = require('node:test');\n\
                    const { slugify } = require('./slugify.js');\nconst u = require(\"../lib/util\");\n\
                    import { a } from './a';\nimport './side-effect.mjs';\nconst late = await import('./late');\n";
        let got = imports("test/slug.test.js", text);
        assert_eq!(got[0].candidates, ["test/slugify.js"]);
        assert!(got[0].created);
        assert_eq!(got[1].candidates[0], "lib/util.js");
        assert_eq!(got[1].candidates.last().unwrap(), "lib/util/index.js");
        assert_eq!(got[2].candidates[0], "test/a.js");
        assert_eq!(got[3].candidates, ["test/side-effect.mjs"]);
        assert_eq!(got[4].candidates[0], "test/late.js");
        assert_eq!(got.len(), 5, "node:test is a package: {got:?}");
        assert_eq!(
            paths("cart.test.ts", "import { total } from './cart';\n")[0][0],
            "cart.ts"
        );
        assert!(paths("x.test.js", "require('../../../etc/passwd')").is_empty());
    }

    #[test]
    fn c_includes_name_the_header_and_the_source_beside_it() {
        let got = paths(
            "tests/test_stack.c",
            "#include <stdio.h>\n#include \"stack.h\"\n",
        );
        assert_eq!(
            got[0],
            ["tests/stack.h", "stack.h", "src/stack.h", "include/stack.h"]
        );
        assert_eq!(
            got[1][..4],
            [
                "tests/stack.c",
                "tests/stack.cc",
                "tests/stack.cpp",
                "stack.c"
            ]
        );
    }

    #[test]
    fn test_files_are_known_by_name_or_directory() {
        for t in [
            "test_duration.py",
            "duration_test.py",
            "slugify.test.js",
            "cart.spec.ts",
            "tests/helpers.py",
            "pkg/__tests__/x.js",
            "store_test.go",
            "test.sh",
        ] {
            assert!(looks_like_test(t), "{t}");
        }
        for f in [
            "duration.py",
            "contest.py",
            "src/testing_utils.rs",
            "latest.js",
            "tests.md.bak/x",
        ] {
            assert!(!looks_like_test(f), "{f}");
        }
    }
}
