#!/usr/bin/env python3
"""The lift benchmark: does longrun lift a local model above what it does alone?

--path tasks (the default): each task (a stub, its tests, a description) is
run four ways against one OpenAI-compatible server (llama-server on 127.0.0.1):

  bare     one request with the stub and the tests at --temperature (0); the
           last code block of the answer is the file.
  bestof   best-of-N: that request sampled at 0.8, as many at once as the
           server has slots, until longrun's wall time on the task is spent
           or a sample passes every test; the sample passing most tests is
           the file (the tests as the oracle, as a ten-line script's). N is
           reported.
  minimal  a minimal harness: read_file, run_tests and write_file tools,
           called as structured calls or written in the text as longrun
           reads them (textcalls.py); the last code block of an answer that
           is not a call is the file; the tests run after every edit; a
           notice when the same code comes back; at most 8 model calls.
  longrun  a longrun project whose initializer (scripted, no model) commits
           the stub, the tests and one feature per test whose check runs
           that test (--features one: a single feature whose check runs
           them all); then `longrun continue` with the model, for at most
           40 sessions or an hour. What counts is the file on main after
           the run.

--path whole: each spec (heldout/specs: a SPEC.md, hidden acceptance tests)
through `longrun init` with the model and `longrun continue` for
--spec-minutes, scored by the hidden tests on a scratch copy of main, beside
the bare answer written from the spec alone (whole.py).

--set picks the work: the held-out test set (the default, the headline), the
dev set (the only one to tune on), or the tuned tasks in tasks/
(heldout/split.json). For each run it prints tests passing, model calls,
tokens (and the share served from llama-server's prompt cache), wall time,
and tokens and seconds per passing test, as a table; --json writes the run
with its date, commit, machine and command, and --results-md renders such
files as the tables of RESULTS.md (results.py). Only the standard library;
`--dry-run` prints what would run without a server; `--self-test` checks the
logic and the held-out work.

Usage:
  lift.py --base-url http://127.0.0.1:18080/v1 --model qwen2.5-coder-1.5b-instruct \
          [--set test|dev|tuned] [--tasks a,b] [--modes bare,bestof,minimal,longrun] \
          [--longrun target/debug/longrun] [--temperature 0] [--json out.json] \
          [--candidates N] [--repair-candidates M]
  lift.py --path whole [--set test|dev] [--specs a,b] [--spec-minutes 30] [--json out.json]
  lift.py --results-md run-1.5b.json run-0.5b.json > benches/lift/RESULTS.md
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
import threading
import time
import urllib.request
from pathlib import Path

# The benchmark leaves nothing behind in the repository.
sys.dont_write_bytecode = True

import textcalls  # noqa: E402 (after the line above: no __pycache__)

HERE = Path(__file__).resolve().parent
TASKS = HERE / "tasks"
# Held-out work, split into dev and test before any tuning (heldout/README.md).
HELDOUT = HERE / "heldout"
SETS = ("test", "dev", "tuned")
MODES = ("bare", "bestof", "minimal", "longrun")
# best-of-N: the bare request sampled at this temperature until longrun's wall
# time on the task is spent (or a sample passes every test), the sample
# passing most tests kept: the tests are the oracle, as a ten-line script's.
BESTOF = {"temperature": 0.8}
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
# longrun's search ([harness] candidates, repair_candidates): answers asked at
# once for the first attempt of a session and for each later one, each judged
# by the feature's check, the best kept (--candidates, --repair-candidates).
# 1 and 1: one answer per attempt, longrun's default. The server needs as many
# slots (llama-server --parallel, LLAMA_PARALLEL) to serve them at once.
SEARCH = {"candidates": 1, "repair_candidates": 1}
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
# Optional: files the tests need beside them (a Cargo.toml, a C header),
# shown to the model and protected like the tests.
OPTIONAL_FIELDS = {"support": list}


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


def load_split():
    """heldout/split.json: the ids of each kind (tasks, specs) in dev and test."""
    path = HELDOUT / "split.json"
    split = json.loads(path.read_text())
    for kind in ("tasks", "specs"):
        if sorted(split.get(kind, {})) != ["dev", "test"]:
            raise SystemExit(f"{path}: {kind!r} must hold the lists 'dev' and 'test'")
    return split


def select_tasks(names, tasks_dir, which):
    """The tasks to run: from --tasks-dir if given; else by --set (the held-out
    dev or test split, or the tuned tasks in tasks/); with --tasks and no --set,
    those ids from the tuned and held-out tasks alike."""
    if tasks_dir:
        return load_tasks(names, tasks_dir)
    if which is None and names:
        pool = [t for root in (TASKS, HELDOUT / "tasks") for t in load_tasks(None, root)]
        missing = set(names) - {t["id"] for t in pool}
        if missing:
            raise SystemExit(f"unknown task(s): {', '.join(sorted(missing))}; see {TASKS} and {HELDOUT / 'tasks'}")
        return [t for t in pool if t["id"] in names]
    which = which or "test"
    if which == "tuned":
        return load_tasks(names, TASKS)
    ids = load_split()["tasks"][which]
    tasks = [t for t in load_tasks(None, HELDOUT / "tasks") if t["id"] in ids]
    if names:
        outside = set(names) - {t["id"] for t in tasks}
        if outside:
            raise SystemExit(f"task(s) {', '.join(sorted(outside))} are not in the {which} set (heldout/split.json)")
        tasks = [t for t in tasks if t["id"] in names]
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
    for field, kind in OPTIONAL_FIELDS.items():
        if not isinstance(task.setdefault(field, kind()), kind):
            raise SystemExit(f"{path}: field {field!r} must be a {kind.__name__} (see benches/README.md, section lift)")
    for name in [task["file"], *task["support"], *task["tests"]]:
        if not isinstance(name, str) or Path(name).name != name:
            raise SystemExit(f"{path}: {name!r} must be a plain file name (no directories)")
    for name in [*task["support"], *task["tests"]]:
        if not (d / name).is_file():
            raise SystemExit(f"{path}: the test or support file {name!r} must be beside task.json")
    task["dir"] = d
    return task


def task_files(task):
    """The files a task starts with: the stub (unless the model is to write it
    from nothing), its support files and the tests."""
    stub = [task["file"]] if (task["dir"] / task["file"]).is_file() else []
    return [*stub, *task.get("support", []), *task["tests"]]


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
    """Chat Completions over HTTP, counting calls and tokens; safe to share
    between threads (best-of-N sends its samples at once to parallel slots)."""

    def __init__(self, base_url, model, temperature, max_tokens, timeout=1800):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.lock = threading.Lock()
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        # Of tokens_in, read from llama-server's prompt cache (its `timings`'
        # cache_n, or usage.prompt_tokens_details.cached_tokens).
        self.tokens_cached = 0
        # llama-server's timings, summed: prompt tokens processed and their ms.
        self.prompt_n = 0
        self.prompt_ms = 0.0

    def chat(self, messages, tools=None, temperature=None):
        body = {"model": self.model, "messages": messages,
                "temperature": self.temperature if temperature is None else temperature,
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
        self.count(answer.get("usage") or {}, answer.get("timings") or {})
        return answer["choices"][0]

    def count(self, usage, timings):
        cached = timings.get("cache_n")
        if cached is None:
            cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        with self.lock:
            self.calls += 1
            self.tokens_in += usage.get("prompt_tokens", 0)
            self.tokens_out += usage.get("completion_tokens", 0)
            self.tokens_cached += cached or 0
            self.prompt_n += timings.get("prompt_n", 0) or 0
            self.prompt_ms += timings.get("prompt_ms", 0.0) or 0.0

    def usage(self):
        return {"calls": self.calls, "tokens_in": self.tokens_in, "tokens_out": self.tokens_out,
                "tokens_cached": self.tokens_cached}

    def server_root(self):
        """llama-server's own endpoints (/props, /metrics) sit beside /v1."""
        return self.base_url[:-3] if self.base_url.endswith("/v1") else self.base_url

    def get(self, path):
        """GET a server endpoint: its text, or None where the server has none."""
        try:
            with urllib.request.urlopen(f"{self.server_root()}/{path}", timeout=10) as r:
                return r.read().decode()
        except (OSError, ValueError):
            return None

    def slots(self):
        """How many requests the server serves at once (llama-server's --parallel)."""
        try:
            return max(1, int(json.loads(self.get("props") or "{}").get("total_slots", 1)))
        except (ValueError, TypeError, AttributeError):
            return 1

    def prompt_tokens_processed(self):
        """llama-server's count of prompt tokens it evaluated (not served from its
        cache), from /metrics (served with --metrics); None without it."""
        m = re.search(r"^llamacpp:prompt_tokens_total ([\d.e+]+)", self.get("metrics") or "", re.M)
        return int(float(m.group(1))) if m else None


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


def run_bestof(task, client, workdir, budget_secs, parallel):
    """Best-of-N: the bare request sampled at BESTOF's temperature, `parallel`
    requests at once (the server's slots), until `budget_secs` have passed or a
    sample passes every test; the sample passing most tests is the file.
    (tests passing, N samples)."""
    fresh_copy(task, workdir)
    prompt = [{"role": "user", "content": bare_prompt(task, workdir)}]
    started = time.monotonic()
    state = {"begun": 0, "samples": 0, "passing": -1, "code": None, "errors": []}
    lock = threading.Lock()

    def go_on():
        with lock:
            over = state["begun"] > 0 and time.monotonic() - started >= budget_secs
            if over or state["passing"] == task["total"] or state["errors"]:
                return False
            state["begun"] += 1
            return True

    def sample():
        while go_on():
            try:
                message = client.chat(prompt, temperature=BESTOF["temperature"])
            except Exception as e:  # a failed request ends the sampling, and is told
                with lock:
                    state["errors"].append(e)
                return
            code = last_code_block(message.get("content"))
            passing = score_code(task, code)
            with lock:
                state["samples"] += 1
                if code is not None and passing > state["passing"]:
                    state.update(passing=passing, code=code)

    threads = [threading.Thread(target=sample) for _ in range(max(1, parallel))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if state["samples"] == 0 and state["errors"]:
        raise state["errors"][0]
    if state["code"] is not None:
        (Path(workdir) / task["file"]).write_text(state["code"])
    return run_tests(task, workdir)[0], state["samples"]


def score_code(task, code):
    """Tests passing with `code` as the task's file, in a scratch directory."""
    if code is None:
        return 0
    with tempfile.TemporaryDirectory(prefix=f"lift-{task['id']}-sample-") as d:
        fresh_copy(task, d)
        (Path(d) / task["file"]).write_text(code)
        return run_tests(task, d)[0]


MINIMAL_TOOLS = [
    {"type": "function", "function": {
        "name": "read_file", "description": "Read a file of the task.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}},
    {"type": "function", "function": {
        "name": "run_tests", "description": "Run the tests and see their output.",
        "parameters": {"type": "object", "properties": {}}}},
    {"type": "function", "function": {
        "name": "write_file", "description": "Write the whole file; the harness then runs the tests.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                       "required": ["path", "content"]}}},
]
MINIMAL_NAMES = [t["function"]["name"] for t in MINIMAL_TOOLS]


def run_minimal(task, client, workdir):
    """A minimal harness: three tools, called as structured calls or written in
    the text as longrun reads them (textcalls.py); a code block that is not a
    call is the new file; the tests run after every edit."""
    fresh_copy(task, workdir)
    system = ("You are a coding agent. Tools: read_file(path), run_tests() and write_file(path, content). "
              f"To change the file, call write_file or reply with the complete new {task['file']} in one "
              "code block; the harness writes it and runs the tests.")
    messages = [{"role": "system", "content": system},
                {"role": "user", "content": f"{task['description']}\nThe files: {', '.join(task_files(task))}."}]
    seen = {"last_code": None, "done": False}
    while client.calls < MINIMAL_CALLS and not seen["done"]:
        message = client.chat(messages, MINIMAL_TOOLS)
        content = message.get("content") or ""
        calls = message.get("tool_calls") or []
        text_calls = [] if calls else (textcalls.recover(content, MINIMAL_NAMES) or (None, []))[1]
        messages.append({"role": "assistant", "content": content, **({"tool_calls": calls} if calls else {})})
        code = file_block(content)
        edited = minimal_edit(task, workdir, code, seen) if code is not None else None
        for call in calls:
            fn = call.get("function", {})
            messages.append({"role": "tool", "tool_call_id": call.get("id", ""),
                             "content": minimal_tool(task, workdir, fn.get("name"), fn.get("arguments"), seen)})
        told = [f"{name} returned:\n{minimal_tool(task, workdir, name, args, seen)}" for name, args in text_calls]
        if edited is not None:
            told.append(edited)
        if not told and not calls:
            told.append(f"Reply with the complete new {task['file']} in one code block.")
        if told:
            messages.append({"role": "user", "content": "\n\n".join(told)})
    return run_tests(task, workdir)[0]


def file_block(text):
    """The last closed code block of an answer that is not a tool call written as JSON."""
    blocks = [body for info, body, closed in textcalls.fences(text or "")
              if closed and not textcalls.fenced(f"```{info}\n{body}\n```", MINIMAL_NAMES)]
    return blocks[-1] + "\n" if blocks else None


def minimal_edit(task, workdir, code, seen):
    """Write `code` as the task's file and run the tests: what the model is told."""
    if code == seen["last_code"]:
        return "That is the same code as before; the tests still fail the same way. Change the approach."
    seen["last_code"] = code
    (Path(workdir) / task["file"]).write_text(code)
    passing, out = run_tests(task, workdir)
    seen["done"] = passing == task["total"]
    return f"{passing} of {task['total']} tests pass. The end of the output:\n{out[-2000:]}"


def minimal_tool(task, workdir, name, arguments, seen):
    try:
        args = json.loads(arguments or "{}") if isinstance(arguments, str) else dict(arguments or {})
    except (json.JSONDecodeError, TypeError, ValueError):
        args = {}
    path = Path(str(args.get("path", ""))).name
    if name == "read_file":
        found = Path(workdir) / path
        return found.read_text() if path in task_files(task) and found.exists() else f"no such file: {path}"
    if name == "run_tests":
        return run_tests(task, workdir)[1][-3000:]
    if name == "write_file":
        if path != task["file"]:
            return f"only {task['file']} may be written"
        return minimal_edit(task, workdir, str(args.get("content", "")), seen)
    return f"unknown tool {name}; the tools are {', '.join(MINIMAL_NAMES)}"


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
{PICK if FEATURES["split"] == "per-test" else ""}{search_toml()}"""


def search_toml():
    """[harness] candidates and repair_candidates, when either is not longrun's default."""
    if SEARCH == {"candidates": 1, "repair_candidates": 1}:
        return ""
    return (f"\n[harness]\ncandidates = {SEARCH['candidates']}\n"
            f"repair_candidates = {SEARCH['repair_candidates']}\n")


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
                                             "content": GITIGNORE}},
    ]
    commit = {"name": "bash", "arguments": {"command": "chmod +x init.sh && git add -A && git commit -qm 'The task: stub, tests, features'"}}
    return {"sessions": {"1": [{"tool_calls": writes}, {"tool_calls": [commit]}, {"text": "initialized"}]}}


# What the tests' runs leave behind: Python's caches, node's packages, cargo's
# build, a C test binary.
GITIGNORE = "__pycache__/\n*.pyc\nnode_modules/\ntarget/\nCargo.lock\n*.bin\n"


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
    used = longrun_usage(project, skip_first=True)
    client.calls, client.tokens_in, client.tokens_out, client.tokens_cached = (
        used["calls"], used["tokens_in"], used["tokens_out"], used["tokens_cached"])
    # What counts is what is on main.
    judged = work / "judged"
    judged.mkdir()
    fresh_copy(task, judged)
    shown = subprocess.run(["git", "-C", str(project), "show", f"main:{task['file']}"], capture_output=True, text=True)
    if shown.returncode == 0:
        (judged / task["file"]).write_text(shown.stdout)
    return run_tests(task, judged)[0]


def longrun_usage(project, skip_first=False):
    """Model requests and tokens of a longrun project's sessions, from their
    transcripts (`skip_first`: not session 1, a scripted initializer)."""
    used = {"calls": 0, "tokens_in": 0, "tokens_out": 0, "tokens_cached": 0}
    for t in sorted((Path(project) / ".longrun" / "sessions").glob("*/transcript.jsonl")):
        if skip_first and t.parent.name == "0001":
            continue
        for line in t.read_text().splitlines():
            try:
                e = json.loads(line)
            except json.JSONDecodeError:
                continue  # a transcript cut by a killed run
            if e.get("type") == "response":
                usage = (e.get("response") or {}).get("usage") or {}
                used["calls"] += 1
                used["tokens_in"] += usage.get("input_tokens", 0)
                used["tokens_out"] += usage.get("output_tokens", 0)
                used["tokens_cached"] += usage.get("cached_tokens", 0)
    return used


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

def per_passing(value, passing, digits=0):
    return f"{value / passing:,.{digits}f}" if passing else "-"


def table(rows):
    """The tasks' rows, and the sums per model and mode."""
    head = ["model", "task", "mode", "tests passing", "model calls", "tokens in/out", "cached in", "time",
            "tokens per passing test", "s per passing test"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        lines.append(row_line(r["model"], r["task"], mode_name(r), r, f"{r['passing']}/{r['total']}"))
    for (model, mode), r in sum_rows(rows).items():
        lines.append(row_line(model, "**all**", mode, r, f"**{r['passing']}/{r['total']}**"))
    return "\n".join(lines)


def mode_name(row):
    return f"bestof (N={row['samples']})" if row["mode"] == "bestof" and "samples" in row else row["mode"]


def row_line(model, task, mode, r, passing):
    tokens = r["tokens_in"] + r["tokens_out"]
    return (f"| {model} | {task} | {mode} | {passing} | {r['calls']} | {r['tokens_in']}/{r['tokens_out']} | "
            f"{cached_share(r)} | {r['seconds']:.0f} s | {per_passing(tokens, r['passing'])} | "
            f"{per_passing(r['seconds'], r['passing'], 1)} |")


def cached_share(r):
    """The share of prompt tokens served from llama-server's cache: from its
    /metrics where it was read (prompt tokens it evaluated), else as counted
    per request; "-" when the server told neither."""
    if not r.get("tokens_in"):
        return "-"
    if r.get("server_prompt_tokens") is not None:
        return f"{max(0.0, 1 - r['server_prompt_tokens'] / r['tokens_in']):.0%}"
    return f"{r['tokens_cached'] / r['tokens_in']:.0%}" if r.get("tokens_cached") else "-"


SUMMED = ("passing", "total", "calls", "tokens_in", "tokens_out", "tokens_cached", "seconds")


def sum_rows(rows):
    """Per (model, mode): the sums of SUMMED, and of server_prompt_tokens where every row has it."""
    sums = {}
    for r in rows:
        s = sums.setdefault((r["model"], r["mode"]), {k: 0 for k in SUMMED} | {"server_prompt_tokens": 0})
        for k in SUMMED:
            s[k] += r.get(k) or 0
        if s["server_prompt_tokens"] is not None and r.get("server_prompt_tokens") is not None:
            s["server_prompt_tokens"] += r["server_prompt_tokens"]
        else:
            s["server_prompt_tokens"] = None
    return sums


# ---- a run's record ----

def machine():
    cpu = ""
    with contextlib.suppress(OSError):
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        cpu = f", {found.group(1).strip()}" if found else ""
    return f"{os.uname().machine}, {os.cpu_count()} cores{cpu}"


def commit():
    """The repository's commit, with "+changes" when the work tree differs."""
    def git(*a):
        return subprocess.run(["git", "-C", str(HERE), *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "--short=12", "HEAD")
    return f"{head}+changes" if head and git("status", "--porcelain", "--untracked-files=no") else head


def meta(args, argv, client):
    """What a run's tables are of: when, which build, where, which model and set, and how."""
    return {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit(),
            "machine": machine(), "model": args.model, "base_url": args.base_url,
            "server_slots": client.slots() if not args.dry_run else None,
            "path": args.path, "set": set_label(args),
            "budget": {"sessions": args.sessions, "session_steps": args.session_steps,
                       "session_secs": args.session_secs, "task_hours": args.task_hours,
                       "spec_minutes": args.spec_minutes, "features": args.features,
                       "candidates": args.candidates, "repair_candidates": args.repair_candidates},
            "temperature": args.temperature, "bestof_temperature": BESTOF["temperature"],
            "command": shlex.join(["python3", "benches/lift/lift.py", *argv])}


def set_label(args):
    """Which work a run was of, as its tables name it."""
    own = args.tasks_dir if args.path == "tasks" else args.specs_dir
    if own:
        return f"own ({own})"
    if args.set:
        return args.set
    return "chosen by id" if args.path == "tasks" and args.tasks else "test"


def write_json(path, args, argv, tasks=(), whole=()):
    client = Client(args.base_url, args.model, args.temperature, args.max_tokens)
    doc = {"meta": meta(args, argv, client), "tasks": list(tasks), "whole": list(whole)}
    Path(path).write_text(json.dumps(doc, indent=2) + "\n")


# ---- running ----

def run_order(modes):
    """longrun runs before best-of-N on a task: its wall time is best-of's budget."""
    return [m for m in modes if m != "bestof"] + (["bestof"] if "bestof" in modes else [])


def bestof_budget(task, rows, args):
    """Seconds best-of-N may sample on `task`: longrun's wall time on it, else --bestof-secs."""
    done = [r for r in rows if r["task"] == task["id"] and r["model"] == args.model and r["mode"] == "longrun"]
    return done[-1]["seconds"] if done else args.bestof_secs


def run_row(task, mode, args, rows):
    """One task run one way: its row."""
    client = Client(args.base_url, args.model, args.temperature, args.max_tokens)
    before, extra = client.prompt_tokens_processed(), {}
    with run_dir(args.keep, args.model, task["id"], mode) as workdir:
        started = time.monotonic()
        try:
            if mode == "bare":
                passing = run_bare(task, client, workdir)
            elif mode == "bestof":
                budget = bestof_budget(task, rows, args)
                slots = args.parallel or client.slots()
                passing, n = run_bestof(task, client, workdir, budget, slots)
                extra = {"samples": n, "budget_secs": round(budget, 1), "parallel": slots}
            elif mode == "minimal":
                passing = run_minimal(task, client, workdir)
            else:
                passing = run_longrun(task, client, workdir, args.longrun)
        except Exception as e:  # one failed run is a row with 0, not the end of the table
            print(f"{task['id']} {mode}: {e}", file=sys.stderr)
            passing = 0
        seconds = time.monotonic() - started
    after = client.prompt_tokens_processed()
    row = {"model": args.model, "task": task["id"], "mode": mode, "passing": passing, "total": task["total"],
           **client.usage(), "prompt_n": client.prompt_n, "prompt_ms": round(client.prompt_ms),
           "server_prompt_tokens": after - before if None not in (before, after) else None,
           "seconds": seconds, **extra}
    print(f"{task['id']} {mode_name(row)}: {passing}/{task['total']} in {seconds:.0f} s", file=sys.stderr)
    return row


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:18080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--path", choices=("tasks", "whole"), default="tasks",
                    help="tasks: each task with its tests given (bare, bestof, minimal, longrun); whole: each "
                    "spec through `longrun init` and `continue`, scored by its hidden tests, beside the bare "
                    "answer from the spec alone")
    ap.add_argument("--set", choices=SETS, help="the held-out test set (the default: the headline), the dev "
                    "set (tune on this one only), or the tuned tasks in tasks/ (heldout/split.json)")
    ap.add_argument("--tasks", help="comma-separated task ids (default: all of the set)")
    ap.add_argument("--specs", help="comma-separated spec ids, with --path whole (default: all of the set)")
    ap.add_argument("--specs-dir", help="with --path whole: a directory of spec directories, each with a "
                    "spec.json, SPEC.md and hidden/ (instead of a set)")
    ap.add_argument("--tasks-dir", help=f"a directory of task directories, each with a task.json "
                    f"(instead of a set; e.g. {TASKS})")
    ap.add_argument("--modes", help=f"tasks: some of {', '.join(MODES)} (default: all); whole: bare and/or "
                    "longrun (default: both)")
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
    ap.add_argument("--spec-minutes", type=float, default=30,
                    help="--path whole: `longrun continue` starts no new session on a spec after this many minutes")
    ap.add_argument("--bestof-secs", type=float, help="best-of-N's budget per task when longrun is not run "
                    "on it (otherwise: longrun's wall time on the task)")
    ap.add_argument("--parallel", type=int, help="best-of-N's requests at once (default: the server's slots, "
                    "from /props)")
    ap.add_argument("--features", choices=("one", "per-test"), default=FEATURES["split"],
                    help="longrun mode: one feature for all the tests, or one feature per test")
    ap.add_argument("--candidates", type=int, default=SEARCH["candidates"],
                    help="longrun mode: answers asked at once for a session's first attempt, each judged by "
                    "the feature's check, the best kept ([harness] candidates; the server needs as many slots)")
    ap.add_argument("--repair-candidates", type=int, default=SEARCH["repair_candidates"],
                    help="longrun mode: the same for each later attempt, which repairs the best so far "
                    "([harness] repair_candidates)")
    ap.add_argument("--json", help="also write the run (its meta data and rows) as JSON to this file")
    ap.add_argument("--results-md", nargs="+", metavar="JSON", help="print the RESULTS.md tables of these "
                    "--json files and exit")
    ap.add_argument("--keep", help="keep each run's directory (files, longrun project and its "
                    "transcripts) under this directory instead of removing it")
    ap.add_argument("--dry-run", action="store_true", help="print what would run; no server needed")
    ap.add_argument("--self-test", action="store_true", help="run the benchmark's own unit tests")
    return ap.parse_args(argv)


def chosen_modes(args):
    allowed = ("bare", "longrun") if args.path == "whole" else MODES
    modes = [m for m in (args.modes or ",".join(allowed)).split(",") if m]
    bad = [m for m in modes if m not in allowed]
    if bad:
        raise SystemExit(f"unknown mode(s) {bad} for --path {args.path}; use {', '.join(allowed)}")
    if "bestof" in modes and "longrun" not in modes and args.bestof_secs is None:
        raise SystemExit("--modes bestof without longrun needs --bestof-secs (its budget per task)")
    return modes


def dry_run(tasks, modes, args):
    for task in tasks:
        for mode in run_order(modes):
            print(f"{args.model} {task['id']} {mode}: {task['test_command']} ({task['total']} tests)")
            if mode == "bestof":
                print(f"    sampled at {BESTOF['temperature']} for "
                      + ("longrun's wall time on the task" if "longrun" in modes else f"{args.bestof_secs} s"))
            if mode == "longrun":
                print(f"    features: {split_of(task)}")
                if search_toml():
                    print(f"    candidates: {SEARCH['candidates']}, then {SEARCH['repair_candidates']} per repair")
                for cmd in longrun_commands(task, args.longrun, "PROJECT", "SPEC.md", "INIT.json",
                                            args.model, args.base_url):
                    print("    " + " ".join(cmd))


# The benchmark's own tests: its logic against a fake server, and its held-out work.
SELF_TESTS = ["test_lift", "test_whole", "test_heldout"]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    # whole.py and results.py import this module by name: the same one, budgets included.
    sys.modules.setdefault("lift", sys.modules[__name__])
    args = parse_args(argv)
    if args.self_test:
        import unittest
        sys.path.insert(0, str(HERE))
        suite = unittest.defaultTestLoader.loadTestsFromNames(SELF_TESTS)
        return 0 if unittest.TextTestRunner(verbosity=1).run(suite).wasSuccessful() else 1
    if args.results_md:
        import results
        print(results.render([json.loads(Path(p).read_text()) for p in args.results_md]), end="")
        return 0
    LONGRUN_BUDGET.update(sessions=args.sessions, steps=args.session_steps, secs=args.session_secs,
                          hours=args.task_hours)
    FEATURES["split"] = args.features
    for name in ("candidates", "repair_candidates"):
        if not 1 <= getattr(args, name) <= 16:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(args, name)}: use a number from 1 to 16")
    SEARCH.update(candidates=args.candidates, repair_candidates=args.repair_candidates)
    modes = chosen_modes(args)
    if args.path == "whole":
        import whole
        return whole.main(args, argv, modes)
    tasks = select_tasks(args.tasks.split(",") if args.tasks else None, args.tasks_dir, args.set)
    if args.dry_run:
        dry_run(tasks, modes, args)
        return 0
    rows = []
    for task in tasks:
        for mode in run_order(modes):
            rows.append(run_row(task, mode, args, rows))
    print(table(rows))
    if args.json:
        write_json(args.json, args, argv, tasks=rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
