#!/usr/bin/env python3
"""The lift benchmark: does longrun lift a local model above what it does alone?

Each task in tasks/ (a stub, its tests, a description) is run three ways
against one OpenAI-compatible server (llama-server on 127.0.0.1):

  bare     one request with the stub and the tests; the last code block of
           the answer is the file.
  minimal  a minimal harness: read_file and run_tests tools, the last code
           block of an answer written to the file, the tests run by the
           harness after every edit, a notice when the same code comes back,
           at most 8 model calls.
  longrun  a longrun project whose initializer (scripted, no model) commits
           the stub, the tests and one feature per test whose check runs
           that test (--features one: a single feature whose check runs
           them all); then `longrun continue` with the model, for at most
           40 sessions or an hour. What counts is the file on main after
           the run.

For each it prints tests passing, model calls, tokens and wall time, as a
table (and as JSON with --json). Only the standard library; `--dry-run`
prints what would run without a server; `--self-test` checks the logic.

Usage:
  lift.py --base-url http://127.0.0.1:18080/v1 --model qwen2.5-coder-1.5b-instruct \
          [--tasks parse_duration,roman] [--modes bare,minimal,longrun] \
          [--longrun target/debug/longrun] [--temperature 0] [--json out.json]
"""

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

# The benchmark leaves nothing behind in the repository.
sys.dont_write_bytecode = True

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
MODES = ("bare", "minimal", "longrun")
MINIMAL_CALLS = 8
# longrun's budget per task: sessions, and steps and seconds per session
# (--sessions, --session-steps, --session-secs).
# A task's longrun run ends at `sessions` sessions or after `hours`,
# whichever comes first; sessions that fail in a row do not end it (a small
# model leaves some features stuck, and the run goes on to the next).
LONGRUN_BUDGET = {"sessions": 40, "steps": 40, "secs": 300, "hours": 1.0}
# How the longrun project's initializer splits the task into features:
# "one" feature whose check runs every test, or "per-test", one feature per
# test (its check runs that test alone), so what passes lands on main one
# verified step at a time (--features).
FEATURES = {"split": "per-test"}
TEST_TIMEOUT = 120


# ---- tasks ----

# task.json: what each field holds (benches/README.md, "lift").
TASK_FIELDS = {
    "id": str,            # the task's name in the table
    "language": str,      # python, javascript, or another (then one feature for all tests)
    "file": str,          # the file the model writes, as the stub
    "tests": list,        # the test files, shown to the model and protected
    "total": int,         # how many tests there are
    "test_command": str,  # runs every test; its output is counted
    "description": str,   # what to build, as a user would say it
}


def load_tasks(names=None, tasks_dir=None):
    """The tasks under `tasks_dir` (default tasks/), each a directory with a task.json."""
    root = Path(tasks_dir) if tasks_dir else TASKS
    if not root.is_dir():
        raise SystemExit(f"no tasks directory {root}: give --tasks-dir a directory of task directories")
    tasks = []
    for d in sorted(p for p in root.iterdir() if (p / "task.json").exists()):
        task = read_task(d)
        if names is None or task["id"] in names:
            tasks.append(task)
    if names:
        missing = set(names) - {t["id"] for t in tasks}
        if missing:
            raise SystemExit(f"unknown task(s): {', '.join(sorted(missing))}; see {root}")
    return tasks


def read_task(d):
    """One task directory's task.json, checked: a bad one names its file and field."""
    path = d / "task.json"
    try:
        task = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SystemExit(f"{path}: not JSON ({e})")
    if not isinstance(task, dict):
        raise SystemExit(f"{path}: must be an object with the fields {', '.join(TASK_FIELDS)}")
    for field, kind in TASK_FIELDS.items():
        if not isinstance(task.get(field), kind) or isinstance(task.get(field), bool):
            raise SystemExit(f"{path}: field {field!r} must be a {kind.__name__} (see benches/README.md, section lift)")
    for name in [task["file"], *task["tests"]]:
        if not isinstance(name, str) or Path(name).name != name:
            raise SystemExit(f"{path}: {name!r} must be a plain file name (no directories)")
    for name in task["tests"]:
        if not (d / name).is_file():
            raise SystemExit(f"{path}: the test file {name!r} must be beside task.json")
    task["dir"] = d
    return task


def task_files(task):
    """The files a task starts with: the stub (unless the model is to write it
    from nothing) and the tests."""
    stub = [task["file"]] if (task["dir"] / task["file"]).is_file() else []
    return [*stub, *task["tests"]]


def fresh_copy(task, into):
    for name in task_files(task):
        shutil.copy(task["dir"] / name, Path(into) / name)


# ---- counting tests ----

def count_passing(output, total):
    """Tests passing, from the output of unittest, node --test, pytest,
    cargo test or go test -v; at most `total`."""
    ran = re.findall(r"^Ran (\d+) tests? in", output, re.M)
    if ran:
        status = re.findall(r"^(?:OK|FAILED)(?: \((.*)\))?\s*$", output, re.M)
        fields = dict(kv.split("=", 1) for kv in (status[-1] if status else "").split(", ") if "=" in kv)
        # An import error is one "test" that errs: nothing passes then.
        not_passing = sum(int(fields.get(k, 0)) for k in ("failures", "errors", "skipped", "expected failures"))
        return max(0, min(total, int(ran[-1]) - not_passing))
    passed = re.findall(r"^(?:#|ℹ) pass (\d+)", output, re.M)
    if passed:
        return min(total, int(passed[-1]))
    # cargo test: one "test result" line per test binary.
    results = re.findall(r"^test result: \w+\. (\d+) passed", output, re.M)
    if results:
        return min(total, sum(map(int, results)))
    # pytest's last line: "2 failed, 11 passed in 0.05s" (in === with -v).
    summary = re.findall(r"^=*\s*(?:\d+ \w+, )*(\d+) passed\b[^\n]* in [\d.]+s", output, re.M)
    if summary:
        return min(total, int(summary[-1]))
    # go test -v: a line per test that passed.
    go = re.findall(r"^\s*--- PASS: ", output, re.M)
    return min(total, len(go))


def run_tests(task, workdir):
    """(tests passing, output) of the task's test command in `workdir`."""
    try:
        p = subprocess.run(task["test_command"], shell=True, cwd=workdir, capture_output=True,
                           text=True, timeout=TEST_TIMEOUT, env=test_env())
        out = p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        out = f"[timed out after {TEST_TIMEOUT} s]"
    return count_passing(out, task["total"]), out


def test_env():
    env = dict(os.environ)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


# ---- code blocks ----

FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.S)


def last_code_block(text):
    blocks = FENCE.findall(text or "")
    return blocks[-1] if blocks else None


# ---- the server ----

class Client:
    """Chat Completions over HTTP, counting calls and tokens."""

    def __init__(self, base_url, model, temperature, max_tokens, timeout=1800):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0

    def chat(self, messages, tools=None):
        body = {"model": self.model, "messages": messages, "temperature": self.temperature,
                "max_tokens": self.max_tokens}
        if tools:
            body["tools"] = tools
        return self.post("chat/completions", body)["message"]

    def post(self, path, body):
        """POST `body` to `path` under the base URL, counting the call and its
        tokens; the answer's first choice."""
        req = urllib.request.Request(f"{self.base_url}/{path}", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req, timeout=self.timeout) as r:
            answer = json.load(r)
        self.calls += 1
        usage = answer.get("usage") or {}
        self.tokens_in += usage.get("prompt_tokens", 0)
        self.tokens_out += usage.get("completion_tokens", 0)
        return answer["choices"][0]


# ---- the three modes ----

def bare_prompt(task, workdir):
    """The bare mode's one request: the description, the stub and the tests."""
    names = task_files(task)
    files = "\n\n".join(f"{name}:\n```\n{(Path(workdir) / name).read_text()}```" for name in names)
    if task["file"] not in names:
        files += f"\n\n{task['file']} does not exist yet."
    return (f"{task['description']}\n\n{files}\n\n"
            f"Reply with the complete new {task['file']} in one code block.")


def run_bare(task, client, workdir):
    fresh_copy(task, workdir)
    message = client.chat([{"role": "user", "content": bare_prompt(task, workdir)}])
    code = last_code_block(message.get("content"))
    if code is not None:
        (Path(workdir) / task["file"]).write_text(code)
    return run_tests(task, workdir)[0]


MINIMAL_TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the task.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "run_tests", "description": "Run the tests and see their output.",
        "parameters": {"type": "object", "properties": {}}}},
]


def run_minimal(task, client, workdir):
    fresh_copy(task, workdir)
    system = ("You are a coding agent. Tools: read_file(path) and run_tests(). To change the file, "
              f"reply with the complete new {task['file']} in one code block; the harness writes it "
              "and runs the tests.")
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": f"{task['description']}\nThe files: {', '.join(task_files(task))}."}]
    best, last_code = 0, None
    while client.calls < MINIMAL_CALLS:
        message = client.chat(messages, MINIMAL_TOOLS)
        calls = message.get("tool_calls") or []
        messages.append({"role": "assistant", "content": message.get("content") or "",
                         **({"tool_calls": calls} if calls else {})})
        for call in calls:
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                             "content": minimal_tool(task, workdir, call)})
        code = last_code_block(message.get("content"))
        if code is not None:
            if code == last_code:
                messages.append({"role": "user", "content": "That is the same code as before; the tests still fail the same way. Change the approach."})
                continue
            last_code = code
            (Path(workdir) / task["file"]).write_text(code)
            passing, out = run_tests(task, workdir)
            best = passing
            if passing == task["total"]:
                break
            messages.append({"role": "user", "content": f"{passing} of {task['total']} tests pass. The end of the output:\n{out[-2000:]}"})
        elif not calls:
            messages.append({"role": "user", "content": f"Reply with the complete new {task['file']} in one code block."})
    return run_tests(task, workdir)[0] if last_code is not None else best


def minimal_tool(task, workdir, call):
    fn = call.get("function", {})
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except json.JSONDecodeError:
        args = {}
    if fn.get("name") == "read_file":
        name = Path(str(args.get("path", ""))).name
        path = Path(workdir) / name
        return path.read_text() if name in task_files(task) and path.exists() else f"no such file: {name}"
    if fn.get("name") == "run_tests":
        return run_tests(task, workdir)[1][-3000:]
    return f"unknown tool {fn.get('name')}"


def longrun_toml(model, base_url, temperature, max_tokens):
    return f"""[model]
provider = "openai"
name = {json.dumps(model)}
base_url = {json.dumps(base_url)}
temperature = {temperature}
max_output_tokens = {max_tokens}
first_byte_timeout_secs = 1800
idle_timeout_secs = 600
max_tries = 2

[budget]
steps = {LONGRUN_BUDGET["steps"]}
wall_time_secs = {LONGRUN_BUDGET["secs"]}

[checks]
commands = []
timeout_secs = 120
{PICK if FEATURES["split"] == "per-test" else ""}"""


# With one feature per test the features are independent: each failing one
# gets a session before any gets another, so one the model cannot do yet
# does not hold back the rest.
PICK = """
[run]
pick = "least-failed"
"""


def uses_pytest(task):
    return task["language"] == "python" and "pytest" in task["test_command"]


def test_names(task):
    """The task's tests, in file order: unittest `Class.test_x` ids (with pytest as the
    test command, also top-level `test_x` functions), or node --test names (`test(...)`,
    and `it(...)` in a `describe(...)`). None for a language whose tests this benchmark
    cannot run one by one: such a task is one feature."""
    names = []
    for name in task["tests"]:
        text = (task["dir"] / name).read_text()
        if task["language"] == "python":
            cls = None
            for line in text.splitlines():
                m = re.match(r"class (\w+)\b", line)
                if m:
                    cls = m.group(1)
                elif re.match(r"[^\s#]", line):
                    cls = None
                m = re.match(r"(\s*)def (test\w*)\(", line)
                if m and cls and m.group(1):
                    names.append((name, f"{cls}.{m.group(2)}"))
                elif m and not m.group(1) and uses_pytest(task):
                    names.append((name, m.group(2)))
        elif task["language"] in ("javascript", "js", "node"):
            # test('name', ...), and it('name', ...) inside describe(): node
            # --test-name-pattern matches either by its own name.
            names += [(name, m.group(2)) for m in re.finditer(r"^\s*(?:test|it)\((['\"])(.+?)\1", text, re.M)]
        else:
            return None
    return names


def test_check(task, test_file, test):
    """The command that runs one test alone."""
    if uses_pytest(task):
        return f"python3 -m pytest -q {shlex.quote(test_file + '::' + test.replace('.', '::'))}"
    if task["language"] == "python":
        # discover, not a dotted id: checks run with PYTHONSAFEPATH=1, so
        # `-m unittest module.Class.test` cannot import the module from the
        # working directory; `-k '*.Class.test'` matches this test alone.
        return f"python3 -m unittest discover -v -p {test_file} -k {shlex.quote('*.' + test)}"
    pattern = "^" + re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", test) + "$"
    return f"node --test --test-name-pattern={shlex.quote(pattern)} {test_file}"


def split_of(task):
    """How this task is split into features: FEATURES' choice, or "one" where its
    tests cannot be named one by one."""
    if FEATURES["split"] == "per-test" and not test_names(task):
        return "one"
    return FEATURES["split"]


def task_features(task):
    """The features.json entries of the task, as FEATURES says."""
    if split_of(task) == "one":
        return [{"id": "F001", "category": "functional", "description": task["description"],
                 "steps": [f"implement {task['file']}", "run the check"],
                 "check": task["test_command"], "passes": False}]
    return [{"id": f"F{i:03}", "category": "functional",
             "description": f"{task['description']} This feature: the test `{test}` in {test_file} passes "
                            f"(and every test that passes already still does).",
             "steps": [f"change {task['file']} so that `{test}` passes", "run the check"],
             "check": test_check(task, test_file, test), "passes": False}
            for i, (test_file, test) in enumerate(test_names(task), 1)]


def initializer_script(task):
    """A scripted initializer: the stub, the tests, and the features (one, or one per test)."""
    features = task_features(task)
    writes = [{"name": "write_file", "arguments": {"path": name, "content": (task["dir"] / name).read_text()}}
              for name in task_files(task)]
    writes += [
        {"name": "write_file", "arguments": {"path": "features.json",
                                             "content": json.dumps({"features": features}, indent=2) + "\n"}},
        {"name": "write_file", "arguments": {"path": "init.sh", "content": "#!/usr/bin/env bash\nexit 0\n"}},
        {"name": "write_file", "arguments": {"path": "progress.md",
                                             "content": f"# Progress\n\nTests: `{task['test_command']}`.\n"}},
        {"name": "write_file", "arguments": {"path": ".gitignore",
                                             "content": "__pycache__/\n*.pyc\nnode_modules/\n"}},
    ]
    commit = {"name": "bash", "arguments": {"command": "chmod +x init.sh && git add -A && git commit -qm 'The task: stub, tests, features'"}}
    return {"sessions": {"1": [{"tool_calls": writes}, {"tool_calls": [commit]}, {"text": "initialized"}]}}


def longrun_commands(task, longrun, project, spec, script, model, base_url):
    return [
        [longrun, "init", str(spec), "--dir", str(project), "--model", f"scripted:{script}", "--quiet"],
        [longrun, "continue", "--dir", str(project), "--sessions", str(LONGRUN_BUDGET["sessions"]),
         "--max-hours", str(LONGRUN_BUDGET["hours"]), "--max-consecutive-failures", "0",
         "--model", f"openai:{model}", "--base-url", base_url, "--quiet"],
    ]


def run_longrun(task, client, workdir, longrun):
    work = Path(workdir)
    project, spec, script = work / "project", work / "spec.md", work / "init.json"
    project.mkdir()
    (project / "longrun.toml").write_text(longrun_toml(client.model, client.base_url, client.temperature, client.max_tokens))
    spec.write_text(f"# {task['id']}\n\n{task['description']}\n")
    script.write_text(json.dumps(initializer_script(task)))
    init, cont = longrun_commands(task, longrun, project, spec, script, client.model, client.base_url)
    subprocess.run(init, check=True, capture_output=True)
    subprocess.run(cont, capture_output=True)
    client.calls, client.tokens_in, client.tokens_out = longrun_usage(project)
    # What counts is what is on main.
    judged = work / "judged"
    judged.mkdir()
    fresh_copy(task, judged)
    shown = subprocess.run(["git", "-C", str(project), "show", f"main:{task['file']}"], capture_output=True, text=True)
    if shown.returncode == 0:
        (judged / task["file"]).write_text(shown.stdout)
    return run_tests(task, judged)[0]


def longrun_usage(project):
    """Model requests and tokens of the worker sessions (the scripted initializer is session 1)."""
    calls = tokens_in = tokens_out = 0
    for t in sorted((project / ".longrun" / "sessions").glob("*/transcript.jsonl")):
        if t.parent.name == "0001":
            continue
        for line in t.read_text().splitlines():
            e = json.loads(line)
            if e.get("type") == "response":
                calls += 1
                usage = (e.get("response") or {}).get("usage") or {}
                tokens_in += usage.get("input_tokens", 0)
                tokens_out += usage.get("output_tokens", 0)
    return calls, tokens_in, tokens_out


@contextlib.contextmanager
def run_dir(keep, model, task, mode):
    """A scratch directory for one run: removed after it, or kept under `keep`."""
    if not keep:
        with tempfile.TemporaryDirectory(prefix=f"lift-{task}-{mode}-") as d:
            yield d
        return
    d = Path(keep) / f"{model}-{task}-{mode}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    yield str(d)


# ---- the table ----

def table(rows):
    head = ["model", "task", "mode", "tests passing", "model calls", "tokens in/out", "time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(f"| {r['model']} | {r['task']} | {r['mode']} | {r['passing']}/{r['total']} | {r['calls']} | "
                     f"{r['tokens_in']}/{r['tokens_out']} | {r['seconds']:.0f} s |")
    sums = {}
    for r in rows:
        key = (r["model"], r["mode"])
        p, t = sums.get(key, (0, 0))
        sums[key] = (p + r["passing"], t + r["total"])
    for (model, mode), (p, t) in sums.items():
        lines.append(f"| {model} | **all** | {mode} | **{p}/{t}** | | | |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:18080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--tasks", help="comma-separated task ids (default: all)")
    ap.add_argument("--tasks-dir", help=f"a directory of task directories, each with a task.json "
                    f"(default: {TASKS})")
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--longrun", default=str(HERE.parent.parent / "target" / "debug" / "longrun"))
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--max-tokens", type=int, default=2048)
    ap.add_argument("--sessions", type=int, default=LONGRUN_BUDGET["sessions"],
                    help="longrun sessions per task")
    ap.add_argument("--session-steps", type=int, default=LONGRUN_BUDGET["steps"],
                    help="model calls per longrun session")
    ap.add_argument("--session-secs", type=int, default=LONGRUN_BUDGET["secs"],
                    help="wall time per longrun session, in seconds")
    ap.add_argument("--task-hours", type=float, default=LONGRUN_BUDGET["hours"],
                    help="longrun starts no new session on a task after this many hours")
    ap.add_argument("--features", choices=("one", "per-test"), default=FEATURES["split"],
                    help="longrun mode: one feature for all the tests, or one feature per test")
    ap.add_argument("--json", help="also write the rows as JSON to this file")
    ap.add_argument("--keep", help="keep each run's directory (files, longrun project and its "
                    "transcripts) under this directory instead of removing it")
    ap.add_argument("--dry-run", action="store_true", help="print what would run; no server needed")
    ap.add_argument("--self-test", action="store_true", help="run the benchmark's own unit tests")
    args = ap.parse_args(argv)
    if args.self_test:
        import unittest
        sys.path.insert(0, str(HERE))
        suite = unittest.defaultTestLoader.loadTestsFromName("test_lift")
        return 0 if unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful() else 1
    LONGRUN_BUDGET.update(sessions=args.sessions, steps=args.session_steps, secs=args.session_secs,
                          hours=args.task_hours)
    FEATURES["split"] = args.features
    tasks = load_tasks(args.tasks.split(",") if args.tasks else None, args.tasks_dir)
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes if m not in MODES]
    if bad:
        raise SystemExit(f"unknown mode(s) {bad}; use {', '.join(MODES)}")
    if args.dry_run:
        for task in tasks:
            for mode in modes:
                print(f"{args.model} {task['id']} {mode}: {task['test_command']} ({task['total']} tests)")
                if mode == "longrun":
                    print(f"    features: {split_of(task)}")
                    for cmd in longrun_commands(task, args.longrun, "PROJECT", "SPEC.md", "INIT.json",
                                                args.model, args.base_url):
                        print("    " + " ".join(cmd))
        return 0
    rows = []
    for task in tasks:
        for mode in modes:
            client = Client(args.base_url, args.model, args.temperature, args.max_tokens)
            with run_dir(args.keep, args.model, task["id"], mode) as workdir:
                started = time.monotonic()
                try:
                    if mode == "bare":
                        passing = run_bare(task, client, workdir)
                    elif mode == "minimal":
                        passing = run_minimal(task, client, workdir)
                    else:
                        passing = run_longrun(task, client, workdir, args.longrun)
                except Exception as e:  # one failed run is a row with 0, not the end of the table
                    print(f"{task['id']} {mode}: {e}", file=sys.stderr)
                    passing = 0
                seconds = time.monotonic() - started
            row = {"model": args.model, "task": task["id"], "mode": mode, "passing": passing,
                   "total": task["total"], "calls": client.calls, "tokens_in": client.tokens_in,
                   "tokens_out": client.tokens_out, "seconds": seconds}
            rows.append(row)
            print(f"{task['id']} {mode}: {passing}/{task['total']} in {seconds:.0f} s", file=sys.stderr)
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
