//! The guided initializer, end to end through the binary with a scripted
//! model: the plan as (almost) JSON, each feature's test in a block, the
//! harness's checks, a vacuous test sent back once and then dropped.

use serde_json::{json, Value};

use crate::common::*;

/// No list of features: the model is asked for the plan.
const SPEC: &str = "# calc\n\nA Python module `calc.py` with three functions: `add(a, b)` gives the sum, `neg(x)` gives minus x and `half(x)` gives x / 2.\n\nTests use unittest.\n";
/// Its own numbered feature list: that list is the plan.
const LISTED: &str = "# calc\n\nA Python module `calc.py`. Tests use unittest.\n\n## Features\n\n1. **Sum.** `add(a, b)` gives\n   the sum.\n2. **Minus.** `neg(x)` gives minus x.\n";

fn block(path: &str, body: &str) -> Value {
    json!({ "text": format!("{path}\n```python\n{body}```\n") })
}

const ADD_TEST: &str = "import unittest\nfrom calc import add\n\n\nclass TestF001(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
const NEG_TEST: &str = "import unittest\nfrom calc import neg\n\n\nclass TestF002(unittest.TestCase):\n    def test_neg(self):\n        self.assertEqual(neg(4), -4)\n";
/// Asserts nothing the stub could fail: passes with nothing built.
const VACUOUS: &str = "import unittest\nimport calc\n\n\nclass TestF003(unittest.TestCase):\n    def test_exists(self):\n        self.assertTrue(hasattr(calc, 'half'))\n";

/// The descriptions of the features on main, in order.
fn descriptions_on_main(env: &Env) -> Vec<String> {
    let list: Value = serde_json::from_str(&env.on_main("features.json").unwrap()).unwrap();
    list["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["description"].as_str().unwrap().to_string())
        .collect()
}

/// A prepared longrun.toml with `[harness] initializer = "guided"` and `model`.
fn guided_project(env: &Env, model: &str) {
    let dir = env.project();
    std::fs::create_dir_all(&dir).unwrap();
    let (provider, name) = model.split_once(':').unwrap();
    let toml = format!("[model]\nprovider = {provider:?}\nname = {name:?}\n\n[harness]\ninitializer = \"guided\"\n");
    std::fs::write(dir.join("longrun.toml"), toml).unwrap();
}

#[test]
fn a_guided_initializer_plans_tests_and_drops_a_vacuous_feature() {
    let env = Env::new();
    // A description with unescaped quotes, as small models write them.
    let plan = "```json\n[{\"description\": \"`add(a, b)`: the sum, `add(\"1\", 2)` is not asked\", \"steps\": [\"add(2, 3) is 5\"]},\n {\"description\": \"`neg(x)`: minus x\", \"steps\": []},\n {\"description\": \"`half(x)`: x / 2\", \"steps\": []}]\n```";
    let model = env.model(json!({ "1": [
        { "text": plan },
        block("tests/test_f001_add.py", ADD_TEST),
        block("tests/test_f002_neg.py", NEG_TEST),
        block("tests/test_f003_half.py", VACUOUS),
        block("tests/test_f003_half.py", VACUOUS),
    ]}));
    guided_project(&env, &model);
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    let list: Value = serde_json::from_str(&env.on_main("features.json").unwrap()).unwrap();
    let features = list["features"].as_array().unwrap();
    let ids: Vec<&str> = features.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        vec!["F001", "F002"],
        "F003's test passed with nothing built"
    );
    assert_eq!(
        features[0]["check"],
        "python3 -m unittest discover -s tests -t . -p test_f001_add.py"
    );
    assert_eq!(
        features[0]["files"],
        serde_json::json!(["calc.py"]),
        "the module is the feature's file to change; the rest of its check's closure is frozen"
    );
    assert_eq!(
        env.on_main("tests/test_f001_add.py").as_deref(),
        Some(ADD_TEST)
    );
    assert_eq!(env.on_main("tests/test_f003_half.py"), None);
    let progress = env.on_main("progress.md").unwrap();
    assert!(
        progress.contains("F003 `") && progress.contains("passes with nothing implemented"),
        "{progress}"
    );
    let stub = env.on_main("calc.py").unwrap();
    assert!(
        stub.contains("def add(") && stub.contains("NotImplementedError"),
        "{stub}"
    );
    // The vacuous test went back once with what its run said.
    let requests = env.requests(1);
    assert_eq!(requests.len(), 5);
    let last = requests[4]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        last.starts_with("[harness] This test cannot be used: it passes with nothing implemented"),
        "{last}"
    );
}

#[test]
fn a_spec_that_lists_its_features_is_the_plan_and_the_model_writes_only_tests() {
    let env = Env::new();
    let model = env.model(json!({ "1": [
        block("tests/test_f001_add.py", ADD_TEST),
        block("tests/test_f002_neg.py", NEG_TEST),
    ]}));
    guided_project(&env, &model);
    let out = env.init(LISTED, &model);
    assert!(out.status.success(), "{}", text(&out));
    let first = env.requests(1)[0]["messages"].to_string();
    assert!(
        !first.contains("List the features"),
        "no plan was asked: {first}"
    );
    assert_eq!(
        descriptions_on_main(&env),
        vec![
            "**Sum.** `add(a, b)` gives the sum.",
            "**Minus.** `neg(x)` gives minus x."
        ]
    );
}

#[test]
fn a_plan_that_leaves_out_a_named_function_is_sent_back_then_completed() {
    let env = Env::new();
    let short = "[{\"description\": \"`add(a, b)`: the sum\"}]";
    let model = env.model(json!({ "1": [
        { "text": short },
        { "text": short },
        block("tests/test_f001_add.py", ADD_TEST),
        block("tests/test_f002_neg.py", NEG_TEST),
        { "text": "I cannot write that." },
        { "text": "Still no." },
    ]}));
    guided_project(&env, &model);
    let out = env.init(SPEC, &model);
    assert!(out.status.success(), "{}", text(&out));
    let requests = env.requests(1);
    let second = requests[1]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        second.contains("the plan leaves out `neg`, `half`"),
        "{second}"
    );
    assert_eq!(
        descriptions_on_main(&env),
        vec!["`add(a, b)`: the sum", "`neg`: as SPEC.md describes it"]
    );
}

#[test]
fn a_guided_initializer_without_any_usable_test_fails_and_says_why() {
    let env = Env::new();
    let model = env.model(json!({ "1": [
        { "text": "[{\"description\": \"`add(a, b)`: the sum\"}, {\"description\": \"`neg(x)`\"}, {\"description\": \"`half(x)`\"}]" },
    ]}));
    guided_project(&env, &model);
    let out = env.init(SPEC, &model);
    assert!(!out.status.success(), "{}", text(&out));
    let err = stderr(&out);
    assert!(
        err.contains("no feature got an acceptance test that fails before the work"),
        "{err}"
    );
}
