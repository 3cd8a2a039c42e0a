#!/usr/bin/env python3
"""Writes model.json, the demo's scripted model: five sessions that build
tally.py. The initializer writes the acceptance tests, which longrun then
freezes; the workers implement against them, and one that weakens a test
instead is rejected. Run it after editing."""
import json
import os

HEADER = '''#!/usr/bin/env python3
"""tally: named counters kept in a JSON file."""
import json
import os
import sys


def path():
    return os.environ.get("TALLY_FILE", "tally.json")


def load():
    try:
        with open(path()) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}


def save(counts):
    with open(path(), "w") as f:
        json.dump(counts, f, indent=2, sort_keys=True)

'''

ADD = '''
def add(args):
    name, n = args[0], int(args[1]) if len(args) > 1 else 1
    counts = load()
    counts[name] = counts.get(name, 0) + n
    save(counts)
    print(counts[name])
    return 0

'''

SHOW_BUGGY = '''
def show(args):
    for name, value in load().items():
        print(f"{name}={value}")
    return 0

'''

SHOW = '''
def show(args):
    for name, value in sorted(load().items()):
        print(name, value)
    return 0

'''

RESET = '''
def reset(args):
    counts = load()
    name = args[0]
    if name not in counts:
        print(f"tally: no counter named {name}", file=sys.stderr)
        return 1
    counts[name] = 0
    save(counts)
    print(name, 0)
    return 0

'''


def main_block(commands):
    table = ", ".join(f'"{c}": {c}' for c in commands)
    return f'''
COMMANDS = {{{table}}}


def main(argv):
    if not argv or argv[0] not in COMMANDS:
        print("usage: tally.py {{{"|".join(commands) or "COMMAND"}}} ...", file=sys.stderr)
        return 2
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''


def tally(parts, commands):
    return HEADER + "".join(parts) + main_block(commands)


TEST_HELPER = '''import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TALLY = os.path.join(HERE, "..", "tally.py")


def run(*args, env_file):
    env = dict(os.environ, TALLY_FILE=env_file)
    return subprocess.run([sys.executable, TALLY, *args], capture_output=True, text=True, env=env)


class Case(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.file = os.path.join(self.dir.name, "t.json")

    def tearDown(self):
        self.dir.cleanup()

    def tally(self, *args):
        return run(*args, env_file=self.file)
'''

TEST_SMOKE = '''from helper import Case


class Smoke(Case):
    def test_no_command_prints_usage(self):
        r = self.tally()
        self.assertEqual(r.returncode, 2)
        self.assertIn("usage", r.stderr)
'''

TEST_ADD = '''from helper import Case


class Add(Case):
    def test_add_counts_up(self):
        self.assertEqual(self.tally("add", "cups").stdout, "1\\n")
        self.assertEqual(self.tally("add", "cups", "3").stdout, "4\\n")
'''

TEST_SHOW = '''from helper import Case


class Show(Case):
    def test_show_sorts_by_name(self):
        self.tally("add", "zebra")
        self.tally("add", "apple", "2")
        self.assertEqual(self.tally("show").stdout, "apple 2\\nzebra 1\\n")

    def test_show_empty(self):
        self.assertEqual(self.tally("show").stdout, "")
'''

TEST_RESET = '''from helper import Case


class Reset(Case):
    def test_reset_sets_zero(self):
        self.tally("add", "cups", "5")
        self.assertEqual(self.tally("reset", "cups").stdout, "cups 0\\n")
        self.assertEqual(self.tally("show").stdout, "cups 0\\n")

    def test_reset_unknown_fails(self):
        r = self.tally("reset", "nope")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no counter", r.stderr)
'''

FEATURES = [
    ("F001", "add", "`tally.py add NAME [N]` adds N (default 1) to NAME and prints the new value",
     ["run add cups", "expect 1", "run add cups 3", "expect 4"]),
    ("F002", "show", "`tally.py show` prints every counter as NAME VALUE, sorted by name",
     ["add two counters", "run show", "expect them sorted by name"]),
    ("F003", "reset", "`tally.py reset NAME` sets NAME to 0; an unknown NAME is an error with exit 1",
     ["add cups 5", "run reset cups", "expect cups 0", "reset an unknown name", "expect exit 1"]),
]


def features(passing):
    return json.dumps({"features": [
        {"id": fid, "category": "functional", "description": desc, "steps": steps,
         "check": f"python3 -m unittest discover -s tests -p 'test_{cmd}.py' -q",
         "passes": fid in passing}
        for fid, cmd, desc, steps in FEATURES
    ]}, indent=2) + "\n"


def call(name, **arguments):
    return {"name": name, "arguments": arguments}


def bash(command):
    return call("bash", command=command)


def turn(text, *calls, usage=None):
    t = {"text": text, "tool_calls": list(calls)}
    if usage:
        t["usage"] = usage
    return t


def note(text):
    return bash(f"cat >> progress.md <<'EOF'\n\n{text}\nEOF")


def worker(fid, cmd, source, passing, summary, extra_first=None):
    first = [bash("git log --oneline -5 && cat progress.md")]
    if extra_first:
        first.insert(0, extra_first)
    return [
        turn("Reading where the project stands.", *first),
        turn(f"Reading the acceptance test of {cmd}.", call("read_file", path=f"tests/test_{cmd}.py")),
        turn(f"Writing the {cmd} command.", call("write_file", path="tally.py", content=source)),
        turn("Running the check.", bash(f"python3 -m unittest discover -s tests -p 'test_{cmd}.py' -q")),
        turn(f"The check passes; marking {fid} done, leaving notes and committing.",
             call("write_file", path="features.json", content=features(passing)),
             note(f"## {fid} ({cmd})\n{summary}"),
             bash(f"git add -A && git commit -qm '{fid}: {cmd} command' && git log --oneline -1")),
        turn(f"{fid} is implemented against its acceptance test and committed."),
    ]


WEAKER_SHOW = TEST_SHOW.replace(
    'self.assertEqual(self.tally("show").stdout, "apple 2\\nzebra 1\\n")',
    'self.assertIn("apple", self.tally("show").stdout)')
assert WEAKER_SHOW != TEST_SHOW


CHECKS_FAIL = ("for t in add show reset; do "
               "if python3 -m unittest discover -s tests -p \"test_$t.py\" -q 2>/dev/null; "
               "then echo \"test_$t passes: vacuous\"; else echo \"test_$t fails, as it must\"; fi; done")

sessions = {
    "1": [
        turn("Reading the spec.", bash("cat SPEC.md && ls -la")),
        turn("Writing the feature list, init.sh, the skeleton, the acceptance tests and the notes.",
             call("write_file", path="features.json", content=features(set())),
             call("write_file", path="init.sh",
                  content="#!/usr/bin/env bash\n# Idempotent setup: the demo needs only python3.\nset -euo pipefail\npython3 --version\n"),
             call("write_file", path=".gitignore", content="__pycache__/\n*.pyc\ntally.json\n"),
             call("write_file", path="tally.py", content=tally([], [])),
             call("write_file", path="tests/helper.py", content=TEST_HELPER),
             call("write_file", path="tests/test_smoke.py", content=TEST_SMOKE),
             call("write_file", path="tests/test_add.py", content=TEST_ADD),
             call("write_file", path="tests/test_show.py", content=TEST_SHOW),
             call("write_file", path="tests/test_reset.py", content=TEST_RESET),
             call("write_file", path="progress.md", content=(
                 "# Progress\n\n`tally.py` is the tool. The acceptance tests live in `tests/` (unittest, one file\n"
                 "per command; each feature's check runs one of them). They are frozen: workers cannot\n"
                 "change them, and verification runs them as they are on main. `tests/helper.py` runs\n"
                 "the tool against a temp TALLY_FILE.\n\n## Session 1 (initializer)\n"
                 "Skeleton, feature list, setup and acceptance tests. Next: F001.\n"))),
        turn("Making init.sh executable, checking that the smoke test passes and every feature's test fails.",
             bash("chmod +x init.sh && ./init.sh && python3 -m unittest discover -s tests -p 'test_smoke.py' -q && " + CHECKS_FAIL)),
        turn("Committing.",
             bash("git add -A && git commit -qm 'Initialize tally: features, init.sh, skeleton, acceptance tests' && git log --oneline -1")),
        turn("The project is initialized: three features, each with an acceptance test that fails until it is built."),
    ],
    # A malformed call first: the harness answers with an error and the session goes on.
    # A malformed call first: the harness answers with an error and the session goes on.
    "2": worker("F001", "add", tally([ADD], ["add"]), {"F001"},
                "Added `add`. Counters are saved with sorted keys.",
                extra_first={"name": "bash", "arguments_raw": "{\"command\": \"ls"}),
    # Claims F002 with a bug (wrong output format) and weakens its acceptance
    # test to match: the test is frozen, and verification rejects the session.
    "3": [
        turn("Reading where the project stands.", bash("git log --oneline -5")),
        turn("Writing show, and loosening its test to what show prints.",
             call("write_file", path="tally.py", content=tally([ADD, SHOW_BUGGY], ["add", "show"])),
             call("write_file", path="tests/test_show.py", content=WEAKER_SHOW)),
        turn("Marking F002 done and committing without running the check.",
             call("write_file", path="features.json", content=features({"F001", "F002"})),
             note("## F002 (show)\nAdded `show`."),
             bash("git add -A && git commit -qm 'F002: show command'")),
        turn("F002 is done."),
    ],
    "4": worker("F002", "show", tally([ADD, SHOW], ["add", "show"]), {"F001", "F002"},
                "Added `show`, sorted by name. Session 3 printed NAME=VALUE and loosened the test; it was rejected."),
    "5": worker("F003", "reset", tally([ADD, SHOW, RESET], ["add", "show", "reset"]),
                {"F001", "F002", "F003"}, "Added `reset`; unknown names exit 1. Every feature is done."),
}

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "model.json")
with open(out, "w") as f:
    json.dump({"sessions": sessions}, f, indent=1)
    f.write("\n")
print(f"wrote {out}")
