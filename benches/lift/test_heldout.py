"""The held-out work's own tests: every task's stub fails its tests and its
reference solution passes them all, as many as task.json says; every spec's
hidden tests fail on an empty project and pass on its solution; the split is
the one its seed makes. Run with `python3 benches/lift/lift.py --self-test`."""

import json
import random
import re
import shutil
import tempfile
import unittest
from pathlib import Path

import lift
from test_lift import LONGRUN, FakeServer

HELDOUT = lift.HELDOUT
SOLUTIONS = HELDOUT / "solutions"


def reported_total(output):
    """How many tests the runner says it ran (unittest, node --test and this C
    runner's TAP summary, cargo test's result lines), or None."""
    ran = re.findall(r"^Ran (\d+) tests? in", output, re.M)
    if ran:
        return int(ran[-1])
    tap = re.findall(r"^# tests (\d+)", output, re.M)
    if tap:
        return int(tap[-1])
    cargo = re.findall(r"^test result: \w+\. (\d+) passed; (\d+) failed", output, re.M)
    return sum(int(p) + int(f) for p, f in cargo) if cargo else None


def load_specs():
    specs = []
    for d in sorted((HELDOUT / "specs").iterdir()):
        spec = json.loads((d / "spec.json").read_text())
        spec["dir"] = d
        specs.append(spec)
    return specs


def hidden_run(spec, solved):
    """(tests passing, output) of a spec's hidden tests beside its solution or nothing."""
    with tempfile.TemporaryDirectory() as d:
        for name in spec["hidden"]:
            shutil.copy(spec["dir"] / "hidden" / name, Path(d) / name)
        if solved:
            for name in spec["files"]:
                shutil.copy(SOLUTIONS / spec["id"] / name, Path(d) / name)
        return lift.run_tests(spec, d)


def group(language):
    return language if language in ("python", "javascript") else "compiled"


class TestHeldOutTasks(unittest.TestCase):
    def test_twelve_or_more_tasks_in_python_javascript_and_a_compiled_language(self):
        tasks = lift.load_tasks(None, HELDOUT / "tasks")
        self.assertGreaterEqual(len(tasks), 12)
        languages = {t["language"] for t in tasks}
        self.assertLessEqual({"python", "javascript"}, languages)
        self.assertTrue(languages & {"rust", "c", "go"}, languages)
        self.assertFalse({t["id"] for t in tasks} & {t["id"] for t in lift.load_tasks()}, "new ids")

    def test_each_stub_fails_every_test_and_each_solution_passes_them_all(self):
        for task in lift.load_tasks(None, HELDOUT / "tasks"):
            with self.subTest(task=task["id"]), tempfile.TemporaryDirectory() as d:
                lift.fresh_copy(task, d)
                passing, out = lift.run_tests(task, d)
                self.assertEqual(passing, 0, out[-2000:])
                self.assertEqual(reported_total(out), task["total"], out[-2000:])
                shutil.copy(SOLUTIONS / task["id"] / task["file"], Path(d) / task["file"])
                passing, out = lift.run_tests(task, d)
                self.assertEqual(passing, task["total"], out[-2000:])
                self.assertEqual(reported_total(out), task["total"], out[-2000:])
                self.assertTrue(8 <= task["total"] <= 13, task["total"])


    def test_no_check_names_the_file_the_model_writes(self):
        # longrun freezes every file a check names, as an acceptance test: a
        # check compiling the model's file by name would forbid writing it.
        for task in lift.load_tasks(None, HELDOUT / "tasks"):
            for feature in lift.task_features(task):
                self.assertNotRegex(feature["check"], rf"(^|[\s/]){re.escape(task['file'])}(\s|$)", task["id"])

    @unittest.skipUnless(LONGRUN.exists(), "needs target/debug/longrun (cargo build)")
    def test_a_c_task_is_done_through_longrun_when_the_model_writes_its_file(self):
        (task,) = lift.load_tasks(["ipv4_c"], HELDOUT / "tasks")
        code = (SOLUTIONS / task["id"] / task["file"]).read_text()
        answers = [{"role": "assistant", "content": f"ipv4.c\n```c\n{code}```\n"},
                   {"role": "assistant", "content": "Done."}]
        with FakeServer(answers) as server, tempfile.TemporaryDirectory() as d:
            client = server.client()
            client.model = "qwen2.5-coder-1.5b-instruct"
            self.assertEqual(lift.run_longrun(task, client, d, str(LONGRUN)), task["total"])


class TestHeldOutSpecs(unittest.TestCase):
    def test_six_or_more_specs_of_three_to_five_features_in_python_or_javascript(self):
        specs = load_specs()
        self.assertGreaterEqual(len(specs), 6)
        for spec in specs:
            text = (spec["dir"] / "SPEC.md").read_text()
            features = text.split("## Features", 1)[1]
            numbered = re.findall(r"^(\d+)\. \*\*", features, re.M)
            self.assertEqual(len(numbered), spec["features"], spec["id"])
            self.assertTrue(3 <= spec["features"] <= 5, spec["id"])
            self.assertIn(spec["language"], ("python", "javascript"))
            for name in spec["files"]:
                self.assertIn(f"`{name}`", text, f"{spec['id']}: SPEC.md names {name}")
            self.assertEqual(sorted(p.name for p in (spec["dir"] / "hidden").iterdir()), sorted(spec["hidden"]))

    def test_hidden_tests_fail_on_an_empty_project_and_pass_on_the_solution(self):
        for spec in load_specs():
            with self.subTest(spec=spec["id"]):
                passing, out = hidden_run(spec, solved=False)
                self.assertEqual(passing, 0, out[-2000:])
                passing, out = hidden_run(spec, solved=True)
                self.assertEqual(passing, spec["total"], out[-2000:])
                self.assertEqual(reported_total(out), spec["total"], out[-2000:])


class TestSplit(unittest.TestCase):
    def test_the_split_is_the_one_its_seed_makes(self):
        split = json.loads((HELDOUT / "split.json").read_text())
        kinds = {"tasks": [(t["id"], t["language"]) for t in lift.load_tasks(None, HELDOUT / "tasks")],
                 "specs": [(s["id"], s["language"]) for s in load_specs()]}
        for kind, items in kinds.items():
            rng = random.Random(split["seed"])  # one per kind, as split.json's method says
            groups = {}
            for ident, language in items:
                groups.setdefault(group(language), []).append(ident)
            order = []
            for g in sorted(groups):
                ids = sorted(groups[g])
                rng.shuffle(ids)
                order += ids
            self.assertEqual(split[kind], {"dev": sorted(order[1::2]), "test": sorted(order[0::2])}, kind)

    def test_each_set_has_every_language_group_and_the_sets_do_not_meet(self):
        split = lift.load_split()
        languages = {t["id"]: group(t["language"]) for t in lift.load_tasks(None, HELDOUT / "tasks")}
        for which in ("dev", "test"):
            self.assertEqual({languages[i] for i in split["tasks"][which]}, {"python", "javascript", "compiled"})
        self.assertFalse(set(split["tasks"]["dev"]) & set(split["tasks"]["test"]))
        self.assertEqual(len(split["specs"]["dev"]), 3)
        self.assertEqual(len(split["specs"]["test"]), 3)

    def test_sets_select_their_tasks(self):
        split = lift.load_split()
        self.assertEqual([t["id"] for t in lift.select_tasks(None, None, None)], split["tasks"]["test"])
        self.assertEqual([t["id"] for t in lift.select_tasks(None, None, "dev")], split["tasks"]["dev"])
        self.assertEqual([t["id"] for t in lift.select_tasks(["roman"], None, None)], ["roman"])
        self.assertEqual(len(lift.select_tasks(None, None, "tuned")), 4)
        with self.assertRaises(SystemExit) as caught:
            lift.select_tasks([split["tasks"]["dev"][0]], None, "test")
        self.assertIn("not in the test set", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
