"""The lift benchmark's own tests: the tasks, the counting, the modes against
a fake server on 127.0.0.1. Run with `python3 benches/lift/lift.py --self-test`."""

import contextlib
import io
import json
import os
import re
import subprocess
import tempfile
import threading
import time
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import lift
import probe
import textcalls

SOLUTIONS = lift.HERE / "solutions"


def solved(task, workdir):
    lift.fresh_copy(task, workdir)
    (Path(workdir) / task["file"]).write_text((SOLUTIONS / task["id"] / task["file"]).read_text())


class FakeServer:
    """llama-server as lift.py meets it, on 127.0.0.1:0: Chat Completions (and
    plain completions) answered from a list of messages or by a function of the
    request, several at once (like --parallel N); each answer with usage and
    `timings`; GET /props (total_slots) and /metrics (prompt tokens evaluated).
    Records every request and the most served at once."""

    PROMPT_N, CACHE_N = 40, 60  # of each request's 100 prompt tokens

    def __init__(self, answers, slots=1, delay=0.0):
        self.answers = answers if callable(answers) else list(answers)
        self.requests = []
        self.lock = threading.Lock()
        self.in_flight = self.most_in_flight = self.prompt_tokens_total = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path == "/props":
                    self.reply({"total_slots": slots})
                elif self.path == "/metrics":
                    self.reply(f"llamacpp:prompt_tokens_total {outer.prompt_tokens_total}\n", "text/plain")
                else:
                    self.send_error(404)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                message = outer.answer(body)
                time.sleep(delay)
                # A plain completion (probe.py) answers with text.
                choice = {"message": message} if "messages" in body else {"text": message["content"]}
                with outer.lock:
                    outer.in_flight -= 1
                    outer.prompt_tokens_total += FakeServer.PROMPT_N
                self.reply({"choices": [choice], "usage": {"prompt_tokens": 100, "completion_tokens": 10},
                            "timings": {"prompt_n": FakeServer.PROMPT_N, "cache_n": FakeServer.CACHE_N,
                                        "prompt_ms": 20.0, "predicted_n": 10, "predicted_ms": 30.0}})

            def reply(self, doc, kind="application/json"):
                data = (doc if isinstance(doc, str) else json.dumps(doc)).encode()
                self.send_response(200)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def answer(self, body):
        with self.lock:
            self.requests.append(body)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if callable(self.answers):
                return self.answers(body)
            return self.answers.pop(0) if self.answers else {"role": "assistant", "content": "done"}

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self):
        return f"http://127.0.0.1:{self.httpd.server_port}/v1"

    def client(self):
        return lift.Client(self.url(), "m", 0.0, 256)


def code_answer(task):
    code = (SOLUTIONS / task["id"] / task["file"]).read_text()
    return {"role": "assistant", "content": f"Here it is:\n```python\n{code}```\n"}


class TestTasks(unittest.TestCase):
    def test_every_solution_passes_every_test_and_every_stub_none(self):
        tasks = lift.load_tasks()
        self.assertGreaterEqual(len(tasks), 4)
        self.assertIn("parse_duration", [t["id"] for t in tasks])
        self.assertIn("javascript", [t["language"] for t in tasks])
        for task in tasks:
            with tempfile.TemporaryDirectory() as d:
                lift.fresh_copy(task, d)
                self.assertEqual(lift.run_tests(task, d)[0], 0, task["id"])
                solved(task, d)
                passing, out = lift.run_tests(task, d)
                self.assertEqual(passing, task["total"], f"{task['id']}: {out}")

    def test_parse_duration_has_thirteen_tests(self):
        (task,) = lift.load_tasks(["parse_duration"])
        self.assertEqual(task["total"], 13)
        self.assertEqual((task["dir"] / "test_duration.py").read_text().count("    def test_"), 13)


class TestCounting(unittest.TestCase):
    def test_each_test_runners_output(self):
        cases = [
            ("Ran 13 tests in 0.1s\n\nFAILED (failures=4, errors=2)\n", 13, 7),
            ("Ran 1 test in 0.0s\n\nFAILED (errors=1)\n", 13, 0),
            ("Ran 13 tests in 0.0s\n\nOK\n", 13, 13),
            ("# tests 9\n# pass 6\n# fail 3\n", 9, 6),
            ("ℹ tests 9\nℹ pass 9\n", 9, 9),
            ("SyntaxError: invalid syntax\n", 13, 0),
            # pytest, cargo test, go test -v
            ("..F.\n1 failed, 3 passed in 0.05s\n", 4, 3),
            ("==== 2 failed, 11 passed, 1 warning in 0.12s ====\n", 13, 11),
            ("==== 5 passed in 0.01s ====\n", 5, 5),
            ("==== 4 failed in 0.01s ====\n", 4, 0),
            ("test result: FAILED. 3 passed; 1 failed; 0 ignored\n"
             "test result: ok. 2 passed; 0 failed; 0 ignored\n", 6, 5),
            ("=== RUN   TestA\n--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\n"
             "    --- PASS: TestC/sub (0.00s)\nFAIL\n", 3, 2),
        ]
        for output, total, expected in cases:
            self.assertEqual(lift.count_passing(output, total), expected, output)

    def test_the_last_code_block_is_taken(self):
        text = "first\n```python\na = 1\n```\nthen\n```\nb = 2\n```\n"
        self.assertEqual(lift.last_code_block(text), "b = 2\n")
        self.assertIsNone(lift.last_code_block("no code"))


class TestModes(unittest.TestCase):
    def test_bare_takes_the_last_block_of_one_answer(self):
        (task,) = lift.load_tasks(["parse_duration"])
        with FakeServer([code_answer(task)]) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            self.assertEqual(lift.run_bare(task, client, d), 13)
            self.assertEqual((client.calls, client.tokens_in, client.tokens_out), (1, 100, 10))
            prompt = server.requests[0]["messages"][0]["content"]
            self.assertIn("def test_combined", prompt)
            self.assertEqual(server.requests[0]["temperature"], 0.0)

    def test_minimal_runs_tools_writes_blocks_and_notices_repeats(self):
        (task,) = lift.load_tasks(["roman"])
        read = {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"test_roman.py\"}"}}]}
        wrong = {"role": "assistant", "content": "```python\ndef to_roman(n):\n    return 'I'\n```"}
        answers = [read, wrong, wrong, code_answer(task)]
        with FakeServer(answers) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            self.assertEqual(lift.run_minimal(task, client, d), 10)
            self.assertEqual(client.calls, 4)
            second = server.requests[1]["messages"]
            self.assertEqual(second[-1]["role"], "tool")
            self.assertIn("def test_round_trip", second[-1]["content"])
            fourth = server.requests[3]["messages"]
            self.assertIn("same code as before", fourth[-1]["content"])
            self.assertIn("0 of 10 tests pass", server.requests[2]["messages"][-1]["content"])

    def test_minimal_stops_at_eight_calls(self):
        (task,) = lift.load_tasks(["wordfreq"])
        chat = {"role": "assistant", "content": "I think it works."}
        with FakeServer([chat] * 20) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            self.assertEqual(lift.run_minimal(task, client, d), 0)
            self.assertEqual(client.calls, lift.MINIMAL_CALLS)


# The binary under test: LONGRUN_LIFT_BIN (the cargo test that runs these
# sets it), else a debug build in the repository's target directory.
LONGRUN = Path(os.environ.get("LONGRUN_LIFT_BIN") or lift.HERE.parent.parent / "target" / "debug" / "longrun")


def json_block(name, arguments):
    return {"role": "assistant",
            "content": "```json\n" + json.dumps({"name": name, "arguments": arguments}) + "\n```"}


class TestLongrunMode(unittest.TestCase):
    @unittest.skipUnless(LONGRUN.exists(), "needs target/debug/longrun (cargo build)")
    def test_longrun_mode_end_to_end_with_a_model_that_writes_calls_as_text(self):
        """The whole longrun mode against a fake server answering as Qwen2.5-Coder
        does: a whole file headed by its path, then a call in a ```json block.
        The harness runs the check after the edit, sees it pass, and marks the
        feature done and commits (the model does no bookkeeping)."""
        (task,) = lift.load_tasks(["wordfreq"])
        code = (SOLUTIONS / task["id"] / task["file"]).read_text()
        answers = [
            {"role": "assistant", "content": f"wordfreq.py\n```python\n{code}```\n"},
            json_block("bash", {"command": "git log --oneline -1"}),
            {"role": "assistant", "content": "Done."},
        ]
        with FakeServer(answers) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            client.model = "qwen2.5-coder-1.5b-instruct"
            passing = lift.run_longrun(task, client, d, str(LONGRUN))
            log = (Path(d) / "project" / ".longrun" / "longrun.log")
            self.assertEqual(passing, task["total"], log.read_text() if log.exists() else "")
            self.assertEqual(client.calls, 3)
            self.assertEqual(client.tokens_in, 300)
            told = "\n".join(str(m.get("content")) for m in server.requests[1]["messages"])
            # One feature per test (the default): the first session's file
            # passes its test; every later test already passes, and those
            # sessions are marked done by the harness with no model call.
            self.assertIn("it passes (1 of 1 tests)", told)
            self.assertIn("set F001's passes to true", told)
            shown = subprocess.run(["git", "-C", str(Path(d) / "project"), "show", "main:features.json"],
                                   capture_output=True, text=True, check=True)
            features = json.loads(shown.stdout)["features"]
            self.assertEqual(len(features), task["total"])
            self.assertTrue(all(f["passes"] for f in features), features)


class TestPerTestFeatures(unittest.TestCase):
    def test_each_tests_check_fails_on_the_stub_and_passes_on_the_solution(self):
        saved = lift.FEATURES["split"]
        lift.FEATURES["split"] = "per-test"
        try:
            for task in lift.load_tasks():
                features = lift.task_features(task)
                self.assertEqual(len(features), task["total"], task["id"])
                self.assertEqual(len({f["check"] for f in features}), task["total"], task["id"])
                for solve in (False, True):
                    with tempfile.TemporaryDirectory() as d:
                        (solved if solve else lift.fresh_copy)(task, d)
                        for f in features:
                            # As longrun runs checks: Python kept off the working directory.
                            env = dict(lift.test_env(), PYTHONSAFEPATH="1")
                            p = subprocess.run(f["check"], shell=True, cwd=d, capture_output=True,
                                               text=True, env=env)
                            self.assertEqual(p.returncode == 0, solve, (task["id"], f["check"], p.stdout + p.stderr))
        finally:
            lift.FEATURES["split"] = saved


class TestNodeTestNames(unittest.TestCase):
    def test_it_inside_describe_is_a_test_whose_check_runs_it_alone(self):
        with tempfile.TemporaryDirectory() as d:
            d = Path(d)
            (d / "add.test.js").write_text(
                "const { describe, it, test } = require('node:test');\n"
                "const assert = require('node:assert');\n"
                "describe('add', () => {\n"
                "  it('adds one', () => { assert.strictEqual(1 + 1, 2); });\n"
                "  it(\"fails (on purpose)\", () => { assert.strictEqual(1 + 1, 3); });\n"
                "});\n"
                "test('top level', () => {});\n")
            task = {"id": "add", "language": "javascript", "dir": d, "tests": ["add.test.js"]}
            names = lift.test_names(task)
            self.assertEqual([n for _, n in names], ["adds one", "fails (on purpose)", "top level"])
            for (test_file, test), passes in zip(names, (True, False, True)):
                p = subprocess.run(lift.test_check(task, test_file, test), shell=True, cwd=d,
                                   capture_output=True, text=True)
                self.assertEqual(p.returncode == 0, passes, (test, p.stdout))
                self.assertEqual(lift.count_passing(p.stdout, 3), int(passes), p.stdout)


def write_task(root, fields, files):
    d = Path(root) / fields.get("id", "t")
    d.mkdir(parents=True)
    (d / "task.json").write_text(json.dumps(fields))
    for name, text in files.items():
        (d / name).write_text(text)
    return d


SHELL_TASK = {"id": "greet_sh", "language": "shell", "file": "greet.sh", "tests": ["test.sh"], "total": 2,
              "test_command": "bash test.sh", "description": "greet.sh prints hello."}


class TestOwnTasks(unittest.TestCase):
    def test_pytest_functions_and_classes_are_tests_run_one_by_one_with_pytest(self):
        with tempfile.TemporaryDirectory() as root:
            d = write_task(root, {"id": "p", "language": "python", "file": "m.py", "tests": ["test_m.py"],
                                  "total": 3, "test_command": "python3 -m pytest -q test_m.py",
                                  "description": "m"},
                           {"m.py": "", "test_m.py": "import m\n\ndef test_one():\n    pass\n\n"
                            "class TestTwo:\n    def test_a(self):\n        pass\n# a note\n"
                            "    def test_b(self):\n        pass\n\ndef helper():\n    pass\n"})
            (task,) = lift.load_tasks(None, root)
            self.assertEqual(task["dir"], d)
            names = [n for _, n in lift.test_names(task)]
            self.assertEqual(names, ["test_one", "TestTwo.test_a", "TestTwo.test_b"])
            self.assertEqual(lift.test_check(task, "test_m.py", "TestTwo.test_a"),
                             "python3 -m pytest -q test_m.py::TestTwo::test_a")

    def test_unittest_tests_after_a_top_level_function_are_not_methods(self):
        with tempfile.TemporaryDirectory() as root:
            write_task(root, {"id": "u", "language": "python", "file": "m.py", "tests": ["test_m.py"],
                              "total": 1, "test_command": "python3 -m unittest -v test_m",
                              "description": "m"},
                       {"m.py": "", "test_m.py": "import unittest\n\nclass T(unittest.TestCase):\n"
                        "    def test_a(self):\n        pass\n\ndef helper():\n    def test_inner():\n"
                        "        pass\n"})
            (task,) = lift.load_tasks(None, root)
            self.assertEqual([n for _, n in lift.test_names(task)], ["T.test_a"])

    def test_a_language_without_a_per_test_split_is_one_feature_running_the_test_command(self):
        with tempfile.TemporaryDirectory() as root:
            write_task(root, SHELL_TASK, {"greet.sh": "", "test.sh": "exit 1\n"})
            (task,) = lift.load_tasks(["greet_sh"], root)
            self.assertIsNone(lift.test_names(task))
            self.assertEqual(lift.FEATURES["split"], "per-test")
            features = lift.task_features(task)
            self.assertEqual([(f["id"], f["check"]) for f in features], [("F001", "bash test.sh")])
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = lift.main(["--dry-run", "--tasks-dir", root, "--modes", "longrun", "--longrun", "/bin/longrun"])
            self.assertEqual(rc, 0)
            self.assertIn("greet_sh longrun: bash test.sh (2 tests)", out.getvalue())
            self.assertIn("features: one", out.getvalue())

    def test_a_task_without_a_stub_asks_for_the_file_from_nothing(self):
        with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as work:
            write_task(root, SHELL_TASK, {"test.sh": "test -f greet.sh\n"})
            (task,) = lift.load_tasks(None, root)
            self.assertEqual(lift.task_files(task), ["test.sh"])
            with FakeServer([{"role": "assistant", "content": "```\necho hello\n```"}]) as server:
                lift.run_bare(task, server.client(), work)
            prompt = server.requests[0]["messages"][0]["content"]
            self.assertIn("greet.sh does not exist yet.", prompt)
            self.assertEqual((Path(work) / "greet.sh").read_text(), "echo hello\n")

    def test_a_bad_task_json_names_its_file_and_field(self):
        cases = [
            ({k: v for k, v in SHELL_TASK.items() if k != "total"}, {"greet.sh": "", "test.sh": ""}, "'total'"),
            (dict(SHELL_TASK, tests="test.sh"), {"greet.sh": "", "test.sh": ""}, "'tests' must be a list"),
            (dict(SHELL_TASK, total=True), {"greet.sh": "", "test.sh": ""}, "'total' must be a int"),
            (SHELL_TASK, {"greet.sh": ""}, "the test or support file 'test.sh' must be beside task.json"),
            (dict(SHELL_TASK, file="../x.sh"), {"test.sh": ""}, "'../x.sh' must be a plain file name"),
        ]
        for fields, files, said in cases:
            with tempfile.TemporaryDirectory() as root:
                write_task(root, fields, files)
                with self.assertRaises(SystemExit) as caught:
                    lift.load_tasks(None, root)
                self.assertIn("task.json: ", str(caught.exception))
                self.assertIn(said, str(caught.exception))
        with self.assertRaises(SystemExit) as caught:
            lift.load_tasks(None, "/nonexistent/tasks")
        self.assertIn("--tasks-dir", str(caught.exception))


class TestLongrunSetUp(unittest.TestCase):
    def test_the_scripted_initializer_commits_the_task_and_one_checked_feature(self):
        (task,) = lift.load_tasks(["slugify_js"])
        saved = lift.FEATURES["split"]
        lift.FEATURES["split"] = "one"
        try:
            script = lift.initializer_script(task)
        finally:
            lift.FEATURES["split"] = saved
        turns = script["sessions"]["1"]
        writes = {c["arguments"]["path"]: c["arguments"]["content"] for c in turns[0]["tool_calls"]}
        self.assertEqual(writes["slugify.test.js"], (task["dir"] / "slugify.test.js").read_text())
        features = json.loads(writes["features.json"])["features"]
        self.assertEqual([(f["id"], f["check"], f["passes"]) for f in features],
                         [("F001", "node --test slugify.test.js", False)])
        self.assertIn("__pycache__/", writes[".gitignore"])
        self.assertIn("git commit", turns[1]["tool_calls"][0]["arguments"]["command"])

    def test_longrun_toml_names_the_local_server_and_no_key(self):
        toml = lift.longrun_toml("qwen2.5-coder-1.5b-instruct", "http://127.0.0.1:18080/v1", 0.0, 2048)
        self.assertIn('base_url = "http://127.0.0.1:18080/v1"', toml)
        self.assertIn("temperature = 0.0", toml)
        self.assertNotIn("api_key", toml)

    def test_one_feature_per_test_gives_each_failing_test_a_session_in_turn(self):
        saved = lift.FEATURES["split"]
        try:
            lift.FEATURES["split"] = "per-test"
            per_test = lift.longrun_toml("m", "http://127.0.0.1:18080/v1", 0.0, 2048)
            lift.FEATURES["split"] = "one"
            one = lift.longrun_toml("m", "http://127.0.0.1:18080/v1", 0.0, 2048)
        finally:
            lift.FEATURES["split"] = saved
        self.assertIn('[run]\npick = "least-failed"', per_test)
        self.assertNotIn("pick", one)

    def test_candidates_are_written_into_longrun_toml_only_when_set(self):
        saved = dict(lift.SEARCH)
        try:
            plain = lift.longrun_toml("m", "http://127.0.0.1:18080/v1", 0.0, 2048)
            lift.SEARCH.update(candidates=8, repair_candidates=2)
            search = lift.longrun_toml("m", "http://127.0.0.1:18080/v1", 0.0, 2048)
        finally:
            lift.SEARCH.update(saved)
        self.assertNotIn("[harness]", plain)
        self.assertNotIn("candidates", plain)
        self.assertIn("[harness]\ncandidates = 8\nrepair_candidates = 2\n", search)
        try:
            import tomllib
        except ImportError:  # Python before 3.11: the text is checked above
            return
        harness = tomllib.loads(search)["harness"]
        self.assertEqual(harness, {"candidates": 8, "repair_candidates": 2})

    def test_candidates_out_of_range_are_refused(self):
        with self.assertRaises(SystemExit) as e:
            lift.main(["--dry-run", "--tasks", "parse_duration", "--candidates", "0"])
        self.assertIn("--candidates 0: use a number from 1 to 16", str(e.exception))

    def test_dry_run_prints_each_run_and_the_longrun_commands(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = lift.main(["--dry-run", "--tasks", "parse_duration", "--longrun", "/bin/longrun"])
        self.assertEqual(rc, 0)
        text = out.getvalue()
        for mode in lift.MODES:
            self.assertIn(f"parse_duration {mode}:", text)
        self.assertIn("features: per-test", text)
        self.assertIn("/bin/longrun continue --dir PROJECT --sessions 40 --max-hours 1.0 "
                      "--max-consecutive-failures 0 --model openai:qwen2.5-coder-1.5b-instruct", text)

    def test_the_table_sums_each_mode(self):
        rows = [{"model": "m", "task": t, "mode": "bare", "passing": p, "total": 10, "calls": 1,
                 "tokens_in": 5, "tokens_out": 1, "seconds": 2.0} for t, p in (("a", 3), ("b", 4))]
        text = lift.table(rows)
        self.assertIn("| m | a | bare | 3/10 | 1 | 5/1 | - | 2 s | 2 | 0.7 |", text)
        self.assertIn("| m | **all** | bare | **7/20** | 2 | 10/2 | - | 4 s | 2 | 0.6 |", text)


def add_task(root):
    """A two-test task in `root`: add(a, b), its stub and its unittest tests."""
    d = Path(root) / "add"
    d.mkdir()
    (d / "task.json").write_text(json.dumps({
        "id": "add", "language": "python", "file": "add.py", "tests": ["test_add.py"], "total": 2,
        "test_command": "python3 -m unittest -v test_add.py", "description": "Add two numbers."}))
    (d / "add.py").write_text('def add(a, b):\n    """The sum."""\n    raise NotImplementedError\n')
    (d / "test_add.py").write_text(
        "import unittest\nfrom add import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_small(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_negative(self):\n        self.assertEqual(add(-1, -2), -3)\n")
    return lift.read_task(d)


class TestProbe(unittest.TestCase):
    def test_the_completion_prompt_holds_the_tests_then_the_stub_cut_before_its_placeholder(self):
        (task,) = lift.load_tasks(["parse_duration"])
        prompt = probe.completion_prompt(task) + probe.stub_of(task)
        self.assertTrue(prompt.startswith("<|repo_name|>parse_duration\n<|file_sep|>test_duration.py\n"))
        self.assertLess(prompt.index("def test_combined"), prompt.index("<|file_sep|>duration.py\n"))
        self.assertTrue(prompt.endswith('into whole seconds."""\n'))
        self.assertNotIn("NotImplementedError", prompt)
        self.assertEqual(probe.cut_stub("x = 1\n"), "")
        self.assertEqual(probe.cut_stub("function f() {\n  throw new Error('todo');\n}\n"), "function f() {\n")

    def test_passing_tests_are_named_from_each_runners_output(self):
        self.assertEqual(probe.passed_tests("test_a (m.T.test_a) ... ok\ntest_b (m.T.test_b) ... FAIL\n", 1),
                         {"test_a"})
        self.assertEqual(probe.passed_tests("ok 1 - slug\nnot ok 2 - other\n", 1), {"slug"})
        self.assertEqual(probe.passed_tests("t.py::test_x PASSED\nt.py::test_y FAILED\n", 1), {"test_x"})
        self.assertEqual(probe.passed_tests("test result: ok. 2 passed", 2), {"#1", "#2"})

    def test_search_keeps_what_no_kept_state_covers_and_stops_when_every_test_passes(self):
        with tempfile.TemporaryDirectory() as root:
            task = add_task(root)
            answers = [
                "    return 3\n",          # test_small only: kept
                "    return 0\n",          # nothing: not kept
                "    return a + b\n",      # both: kept, and test_small's state dropped
            ]
            with FakeServer([{"role": "assistant", "content": a} for a in answers]) as server:
                client = probe.Completions(server.url(), "m", 0.8, 64)
                lines = []
                kept = probe.search(task, client, 10, probe.random.Random(3), lines.append)
            self.assertEqual(len(lines), 3, lines)
            self.assertEqual([sorted(p) for p, _ in kept], [["test_negative", "test_small"]])
            # The last step wrote on from a cut of the kept state (or the stub).
            self.assertTrue(kept[0][1].startswith("def add(a, b):\n"), kept)
            self.assertTrue(kept[0][1].endswith("    return a + b\n"), kept)
            self.assertTrue(all(r["prompt"].startswith("<|repo_name|>add\n<|file_sep|>test_add.py\n")
                                for r in server.requests))
            first = server.requests[0]
            self.assertTrue(first["prompt"].endswith('<|file_sep|>add.py\ndef add(a, b):\n    """The sum."""\n'))
            self.assertIn("<|file_sep|>", first["stop"])
            self.assertEqual(first["temperature"], 0.8)
            self.assertEqual(client.calls, 3)


RUST_TEXT_CALLS = lift.HERE.parent.parent / "src" / "confined" / "text_calls.rs"
RUST_TOKEN = re.compile(r'r#"(.*?)"#|"((?:[^"\\]|\\.)*)"|Some\(Format::(\w+)\)|\bNone\b|&\[|\]|\(|\)', re.S)
FORMATS = {"Hermes": "hermes", "FunctionTag": "function-tag", "Mistral": "mistral", "PythonTag": "python-tag",
           "Fenced": "fenced", "Bare": "bare"}


def rust_cases():
    """The table of answers in src/confined/text_calls.rs's tests: (what, answer,
    format or None, [(name, arguments JSON)])."""
    source = RUST_TEXT_CALLS.read_text()
    body = source[source.index("const CASES"):]
    body = body[body.index("= &[") + 4:body.index("\n    ];")]
    cases, stack = [], []
    for m in RUST_TOKEN.finditer(body):
        token = m.group(0)
        if token in ("(", "&["):
            stack.append([])
        elif token in (")", "]"):
            done = stack.pop()
            (stack[-1] if stack else cases).append(done)
        elif m.group(1) is not None:
            stack[-1].append(m.group(1))
        elif m.group(2) is not None:
            escapes = {"n": "\n", "t": "\t", "r": "\r"}
            stack[-1].append(re.sub(r"\\(.)", lambda e: escapes.get(e.group(1), e.group(1)), m.group(2)))
        else:
            stack[-1].append(m.group(3))
    return cases


class TestTextCalls(unittest.TestCase):
    def test_every_answer_of_longruns_own_table_is_read_as_longrun_reads_it(self):
        cases = rust_cases()
        self.assertGreaterEqual(len(cases), 20)
        tools = ["bash", "read_file", "write_file", "edit_file", "list_files", "grep"]
        for what, answer, form, expected in cases:
            found = textcalls.recover(answer, tools)
            got = (found[0], [(n, json.loads(a)) for n, a in found[1]]) if found else (None, [])
            self.assertEqual(got, (FORMATS.get(form), [(n, json.loads(a)) for n, a in expected]), what)

    def test_a_file_block_is_the_last_block_that_is_not_a_call(self):
        text = ("wrap.py\n```python\ndef wrap():\n    pass\n```\n"
                '```json\n{"name": "run_tests", "arguments": {}}\n```\n')
        self.assertEqual(lift.file_block(text), "def wrap():\n    pass\n")
        self.assertIsNone(lift.file_block('```json\n{"name": "read_file", "arguments": {"path": "a"}}\n```'))


def sample_answers(task, wrong_first):
    """Answers to best-of-N's requests: `wrong_first` wrong files, then the solution."""
    code = (SOLUTIONS / task["id"] / task["file"]).read_text()
    count = {"n": 0}

    def answer(body):
        count["n"] += 1
        text = "def top_words(text, n):\n    return []\n" if count["n"] <= wrong_first else code
        return {"role": "assistant", "content": f"```python\n{text}```"}
    return answer


class TestBestOf(unittest.TestCase):
    def test_samples_go_to_every_slot_until_one_passes_every_test(self):
        (task,) = lift.load_tasks(["wordfreq"])
        with FakeServer(sample_answers(task, 5), slots=2, delay=0.3) as server, \
                tempfile.TemporaryDirectory() as d:
            client = server.client()
            self.assertEqual(client.slots(), 2)
            passing, n = lift.run_bestof(task, client, d, 600, client.slots())
        self.assertEqual(passing, task["total"])
        self.assertIn(n, (6, 7), "stops once a sample passes (the other slot's sample may be in flight)")
        self.assertEqual(client.calls, n)
        self.assertEqual(server.most_in_flight, 2)
        self.assertTrue(all(r["temperature"] == lift.BESTOF["temperature"] for r in server.requests))
        self.assertEqual(server.requests[0]["messages"][0]["content"], lift.bare_prompt(task, task["dir"]))

    def test_the_best_sample_is_kept_and_a_sample_passing_everything_ends_the_sampling(self):
        # Not timed: the budget is far beyond what the samples take, so the
        # outcome does not depend on the machine's load.
        (task,) = lift.load_tasks(["wordfreq"])
        partial = "import re\ndef top_words(text, n):\n    return [] if n <= 0 or not text else [('a', 3)]\n"
        whole = (SOLUTIONS / task["id"] / task["file"]).read_text()
        answers = [{"role": "assistant", "content": f"```python\n{c}```"}
                   for c in ("x = 1\n", partial, "x = 2\n", whole, "x = 3\n")]
        with FakeServer(answers) as server, tempfile.TemporaryDirectory() as d:
            passing, n = lift.run_bestof(task, server.client(), d, 600, 1)
            self.assertEqual((Path(d) / "wordfreq.py").read_text(), whole)
        self.assertEqual((passing, n), (task["total"], 4))

    def test_a_zero_budget_still_takes_one_sample(self):
        (task,) = lift.load_tasks(["roman"])
        with FakeServer([]) as server, tempfile.TemporaryDirectory() as d:
            self.assertEqual(lift.run_bestof(task, server.client(), d, 0, 3), (0, 1))

    def test_best_of_runs_after_longrun_on_its_wall_time(self):
        self.assertEqual(lift.run_order(["bestof", "bare", "longrun"]), ["bare", "longrun", "bestof"])
        args = lift.parse_args(["--bestof-secs", "7"])
        rows = [{"task": "t", "model": args.model, "mode": "longrun", "seconds": 93.5}]
        self.assertEqual(lift.bestof_budget({"id": "t"}, rows, args), 93.5)
        self.assertEqual(lift.bestof_budget({"id": "u"}, rows, args), 7)
        with self.assertRaises(SystemExit) as caught:
            lift.chosen_modes(lift.parse_args(["--modes", "bare,bestof"]))
        self.assertIn("--bestof-secs", str(caught.exception))


class TestMinimalTextCalls(unittest.TestCase):
    def test_calls_written_as_text_are_run_and_a_written_file_is_tested(self):
        (task,) = lift.load_tasks(["wordfreq"])
        code = (SOLUTIONS / task["id"] / task["file"]).read_text()
        answers = [
            {"role": "assistant", "content": '<tool_call>\n{"name": "read_file", "arguments": '
                                             '{"path": "test_wordfreq.py"}}\n</tool_call>'},
            json_block("write_file", {"path": "test_wordfreq.py", "content": "x"}),
            json_block("write_file", {"path": "wordfreq.py", "content": code}),
        ]
        with FakeServer(answers) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            self.assertEqual(lift.run_minimal(task, client, d), task["total"])
            self.assertEqual((Path(d) / "test_wordfreq.py").read_text(),
                             (task["dir"] / "test_wordfreq.py").read_text(), "the tests are protected")
        self.assertEqual(client.calls, 3, "it stops once every test passes")
        told = [r["messages"][-1] for r in server.requests[1:]]
        self.assertEqual(told[0]["role"], "user")
        self.assertIn("read_file returned:\ndef", told[0]["content"].replace("import unittest", "def"))
        self.assertIn("only wordfreq.py may be written", told[1]["content"])
        self.assertEqual([t["function"]["name"] for t in server.requests[0]["tools"]], lift.MINIMAL_NAMES)

    def test_a_file_then_a_call_in_one_answer_writes_the_file_first(self):
        (task,) = lift.load_tasks(["roman"])
        code = (SOLUTIONS / task["id"] / task["file"]).read_text()
        answer = {"role": "assistant", "content": f"roman.py\n```python\n{code}```\n"
                                                  + json_block("run_tests", {})["content"]}
        with FakeServer([answer]) as server, tempfile.TemporaryDirectory() as d:
            self.assertEqual(lift.run_minimal(task, server.client(), d), task["total"])
        self.assertEqual(len(server.requests), 1)


class TestServerCounts(unittest.TestCase):
    def test_each_rows_cache_share_comes_from_the_servers_timings_and_metrics(self):
        (task,) = lift.load_tasks(["roman"])
        with FakeServer([code_answer(task)]) as server:
            args = lift.parse_args(["--base-url", server.url(), "--model", "m"])
            with contextlib.redirect_stderr(io.StringIO()):
                row = lift.run_row(task, "bare", args, [])
        self.assertEqual((row["passing"], row["calls"], row["tokens_in"]), (task["total"], 1, 100))
        self.assertEqual((row["tokens_cached"], row["prompt_n"], row["prompt_ms"]),
                         (FakeServer.CACHE_N, FakeServer.PROMPT_N, 20))
        self.assertEqual(row["server_prompt_tokens"], FakeServer.PROMPT_N)
        self.assertEqual(lift.cached_share(row), "60%")
        self.assertIn("| 60% |", lift.table([row]))

    def test_without_metrics_the_share_is_what_the_requests_told(self):
        row = {"tokens_in": 200, "tokens_cached": 50, "server_prompt_tokens": None}
        self.assertEqual(lift.cached_share(row), "25%")
        self.assertEqual(lift.cached_share(dict(row, tokens_cached=0)), "-")


if __name__ == "__main__":
    unittest.main()
