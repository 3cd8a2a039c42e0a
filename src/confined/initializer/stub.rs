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
        Regex::new(r"`(?:new\s+)?(?:[A-Za-z_][A-Za-z0-9_]*\.)?([A-Za-z_][A-Za-z0-9_]*)\(").ok()
    });
    collect(CALL.as_ref(), spec)
}

/// Which named functions are methods, and of which class: what the stub
/// and a test's skeleton are shaped by.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Api {
    /// (method, class), in the spec's order.
    methods: Vec<(String, String)>,
}

impl Api {
    /// A capitalized name is a class (an `...Error` or `...Exception` is
    /// not one to own methods); a lower-case name the spec first gives after
    /// a class is that class's method, unless a line that says "export"
    /// names it; the rest are the module's functions.
    pub fn of(spec: &str, names: &[String]) -> Api {
        let first = |name: &str| {
            ["(", "`", "."]
                .iter()
                .flat_map(|end| [format!("`{name}{end}"), format!("`new {name}{end}")])
                .filter_map(|p| spec.find(&p))
                .min()
        };
        let exported = |name: &str| {
            spec.lines()
                .any(|l| l.to_lowercase().contains("export") && l.contains(&format!("`{name}`")))
        };
        let classes: Vec<(usize, &String)> = names
            .iter()
            .filter(|n| n.starts_with(|c: char| c.is_ascii_uppercase()))
            .filter(|n| !n.ends_with("Error") && !n.ends_with("Exception"))
            .filter_map(|n| Some((first(n)?, n)))
            .collect();
        let mut methods = Vec::new();
        for name in names
            .iter()
            .filter(|n| n.starts_with(|c: char| c.is_ascii_lowercase()))
        {
            let (Some(at), false) = (first(name), exported(name)) else {
                continue;
            };
            let owner = classes
                .iter()
                .filter(|(c, _)| *c < at)
                .max_by_key(|(c, _)| *c);
            if let Some((_, class)) = owner {
                methods.push((name.clone(), (*class).clone()));
            }
        }
        Api { methods }
    }

    pub fn class_of(&self, name: &str) -> Option<&str> {
        self.methods
            .iter()
            .find(|(m, _)| m == name)
            .map(|(_, c)| c.as_str())
    }

    fn methods_of(&self, class: &str) -> Vec<&str> {
        self.methods
            .iter()
            .filter(|(_, c)| c == class)
            .map(|(m, _)| m.as_str())
            .collect()
    }

    /// What a test of `names` imports: each method's class instead of it.
    pub fn imports(&self, names: &[String]) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for name in names {
            let top = self.class_of(name).unwrap_or(name).to_string();
            if !out.contains(&top) {
                out.push(top);
            }
        }
        out
    }

    /// How a test calls `name`: the line making the object it is a method
    /// of (empty for a function), and the call: (``, `add`), (`inventory =
    /// Inventory()`, `inventory.add`), (`const s = new S();`, `s.top`).
    pub fn call(&self, framework: Framework, name: &str) -> (String, String) {
        let Some(class) = self.class_of(name) else {
            return (String::new(), name.to_string());
        };
        let var = class.to_lowercase();
        let setup = match framework {
            Framework::NodeTest => format!("const {var} = new {class}();"),
            _ => format!("{var} = {class}()"),
        };
        (setup, format!("{var}.{name}"))
    }
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
/// The stub module's text for the top-level `names` (a method named there
/// goes in its class); None where the framework has no stub form.
pub fn render(framework: Framework, names: &[String], api: &Api) -> Option<String> {
    let top = api.imports(names);
    match framework {
        Framework::Unittest | Framework::Pytest => Some(python(&top, api)),
        Framework::NodeTest => Some(javascript(&top, api)),
        Framework::CargoTest => None,
    }
}

/// A class whose methods raise: constructing it works, so a test that
/// only constructs it is seen to assert nothing.
fn python(names: &[String], api: &Api) -> String {
    let mut text =
        format!("\"\"\"See SPEC.md. These are {MARK}: replace each with the real code.\"\"\"\n");
    for name in names {
        let capital = name.starts_with(|c: char| c.is_ascii_uppercase());
        if !capital {
            text.push_str(&format!(
                "\n\ndef {name}(*args, **kwargs):\n    raise NotImplementedError(\"{name}\")\n"
            ));
            continue;
        }
        text.push_str(&format!(
            "\n\nclass {name}:\n    def __init__(self, *args, **kwargs):\n        pass\n"
        ));
        for m in api.methods_of(name) {
            text.push_str(&format!("\n    def {m}(self, *args, **kwargs):\n        raise NotImplementedError(\"{name}.{m}\")\n"));
        }
    }
    text
}

fn javascript(names: &[String], api: &Api) -> String {
    let mut text = format!(
        "'use strict';\n// See SPEC.md. These are {MARK}: replace each with the real code.\n"
    );
    for name in names {
        let methods = api.methods_of(name);
        if methods.is_empty() && !name.starts_with(|c: char| c.is_ascii_uppercase()) {
            text.push_str(&format!(
                "\nfunction {name}() {{\n  throw new Error('not implemented: {name}');\n}}\n"
            ));
            continue;
        }
        text.push_str(&format!("\nclass {name} {{\n  constructor() {{}}\n"));
        for m in methods {
            text.push_str(&format!(
                "\n  {m}() {{\n    throw new Error('not implemented: {name}.{m}');\n  }}\n"
            ));
        }
        text.push_str("}\n");
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
        let text = render(
            Framework::Unittest,
            &["add".into(), "Stack".into()],
            &Api::default(),
        )
        .unwrap();
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
    fn names_given_after_a_class_are_its_methods_unless_exported() {
        let spec = "A module exporting `encode`, `decode` and `Shortener`.\n1. `encode(n)` and `decode(c)`.\n2. `new Shortener()` starts empty; `shorten(url)` returns a code and raises `ParseError(x)`.\n3. `resolve(code)`; `top(n)`.\n";
        let names = spec_names(spec);
        let api = Api::of(spec, &names);
        assert_eq!(api.class_of("encode"), None);
        assert_eq!(api.class_of("shorten"), Some("Shortener"));
        assert_eq!(
            api.class_of("top"),
            Some("Shortener"),
            "an Error owns no methods"
        );
        assert_eq!(
            api.imports(&["encode".into(), "resolve".into(), "top".into()]),
            vec!["encode", "Shortener"]
        );
        let (setup, call) = api.call(Framework::NodeTest, "top");
        assert_eq!(
            (setup.as_str(), call.as_str()),
            ("const shortener = new Shortener();", "shortener.top")
        );
        let (setup, call) = api.call(Framework::Unittest, "encode");
        assert_eq!((setup.as_str(), call.as_str()), ("", "encode"));
        let py = "`Inventory()` starts empty. `add(sku)` adds; `quantity(sku)` is 0.\n";
        let api = Api::of(py, &spec_names(py));
        let text = render(Framework::Unittest, &["add".into()], &api).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("inv.py"), &text).unwrap();
        let out = std::process::Command::new("python3")
            .args(["-c", "from inv import Inventory\nInventory().quantity('x')"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("NotImplementedError: Inventory.quantity"),
            "{text}\n{err}"
        );
    }

    #[test]
    fn a_javascript_class_stub_constructs_and_its_methods_throw() {
        let spec = "`new Shortener()` starts empty; `shorten(url)` gives a code.";
        let api = Api::of(spec, &spec_names(spec));
        let text = render(Framework::NodeTest, &["Shortener".into()], &api).unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.js"), &text).unwrap();
        let out = std::process::Command::new("node")
            .args([
                "-e",
                "const { Shortener } = require('./s.js'); new Shortener().shorten('a')",
            ])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("not implemented: Shortener.shorten"),
            "{text}\n{err}"
        );
    }

    #[test]
    fn a_javascript_stub_exports_and_throws() {
        let dir = tempfile::tempdir().unwrap();
        let text = render(Framework::NodeTest, &["slugify".into()], &Api::default()).unwrap();
        std::fs::write(dir.path().join("s.js"), &text).unwrap();
        let out = std::process::Command::new("node")
            .args(["-e", "require('./s.js').slugify('a')"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stderr).contains("not implemented: slugify"));
    }
}
