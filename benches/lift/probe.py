#!/usr/bin/env python3
"""Probe a model on one lift task: many samples of one request, each answer's
file run against every test of the task. For finding out what a small model
can do before building it into longrun; not part of the lift table.

Forms (--form):
  chat      the bare mode's request (description, stub and tests; the last
            code block of the answer is the file), sampled --samples times.
  complete  a plain completion (POST {base}/completions) in Qwen2.5-Coder's
            repository form: the tests as earlier files of the repository,
            then the file to write, cut before the stub's placeholder body;
            the model writes on from there. --samples times.
  search    local search by completion: a kept state is cut at one of its
            indented lines and the model writes on from there (or, one step
            in seven, from the cut stub); the result is kept unless a kept
            state passes every test it passes, and kept states that pass
            only a part of its tests are dropped. --steps completions, or
            until every test passes.

Prints each sample's tests passing, then how many samples passed each test.

Usage:
  probe.py --base-url http://127.0.0.1:18080/v1 --task parse_duration \\
           [--form chat|complete|search] [--samples 8] [--steps 60] \\
           [--temperature 0.8] [--seed 1] [--keep DIR]
"""

import argparse
import collections
import random
import re
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True

import lift  # noqa: E402 (after the bytecode switch: the benchmark leaves nothing behind)

# Qwen2.5-Coder's repository-level pretraining form.
REPO, FILE_SEP = "<|repo_name|>", "<|file_sep|>"
# The end of the file, a fence, or a Python main block (where a small model
# goes on to write demo code until its token cap).
COMPLETION_STOPS = [FILE_SEP, REPO, "<|endoftext|>", "<|im_end|>", "```", "\nif __name__ =="]
# A stub's placeholder body: the completion starts where it was.
PLACEHOLDER = re.compile(r"^[ \t]*(raise NotImplementedError\b.*|pass|\.\.\.|throw new Error\(.*\);?)[ \t]*$", re.M)
# One passing test per line: unittest -v, node --test (TAP), pytest -v.
PASSED = [re.compile(p, re.M) for p in (r"^(\w+) \([^)]*\) \.\.\. ok$", r"^ok \d+ - (.+)$", r"::(\S+) PASSED")]


def cut_stub(text):
    """The stub up to its first placeholder line; empty when it has none."""
    m = PLACEHOLDER.search(text or "")
    return text[:m.start()] if m else ""


def completion_prompt(task):
    tests = "".join(f"{FILE_SEP}{name}\n{(task['dir'] / name).read_text()}\n" for name in task["tests"])
    return f"{REPO}{task['id']}\n{tests}{FILE_SEP}{task['file']}\n"


def stub_of(task):
    path = task["dir"] / task["file"]
    return cut_stub(path.read_text()) if path.is_file() else ""


def passed_tests(output, count):
    """The names of the tests that passed; numbered when the runner's output
    does not name them."""
    for pattern in PASSED:
        names = pattern.findall(output)
        if names:
            return frozenset(names)
    return frozenset(f"#{i + 1}" for i in range(count))


def score(task, code):
    with tempfile.TemporaryDirectory() as d:
        lift.fresh_copy(task, d)
        (Path(d) / task["file"]).write_text(code)
        count, output = lift.run_tests(task, d)
    return passed_tests(output, count)


class Completions(lift.Client):
    """A lift client that also sends plain completions."""

    def complete(self, prompt, seed):
        body = {"model": self.model, "prompt": prompt, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "stop": COMPLETION_STOPS, "seed": seed}
        return self.post("completions", body)["text"]


def sample(task, client, form, seed):
    """One answer's file; `seed` for a completion (a chat request takes the server's)."""
    if form == "chat":
        with tempfile.TemporaryDirectory() as d:
            lift.fresh_copy(task, d)
            text = client.chat([{"role": "user", "content": lift.bare_prompt(task, d)}]).get("content")
        return lift.last_code_block(text) or ""
    prefix = stub_of(task)
    return prefix + client.complete(completion_prompt(task) + prefix, seed)


def search(task, client, steps, rnd, log):
    """Local search by completion (see the module's doc); the kept states."""
    kept = []  # (tests passed, code)
    head, stub = completion_prompt(task), stub_of(task)
    for step in range(steps):
        if not kept or rnd.random() < 1 / 7:
            prefix, where = stub, "stub"
        else:
            _, parent = rnd.choice(kept)
            lines = parent.splitlines(keepends=True)
            cuts = [i for i, line in enumerate(lines) if i > 0 and line[:1] in " \t"]
            cut = rnd.choice(cuts) if cuts else len(lines)
            prefix, where = "".join(lines[:cut]), f"line {cut + 1}"
        code = prefix + client.complete(head + prefix, rnd.randrange(1 << 30))
        passed = score(task, code)
        keep = not any(passed <= other for other, _ in kept)
        if keep:
            kept = [(other, c) for other, c in kept if not other < passed] + [(passed, code)]
        log(f"step {step + 1} from {where}: {len(passed)}/{task['total']}{' kept' if keep else ''}; "
            f"kept {sorted(len(p) for p, _ in kept)}")
        if len(passed) == task["total"]:
            break
    return kept


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base-url", default="http://127.0.0.1:18080/v1")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    ap.add_argument("--task", required=True)
    ap.add_argument("--tasks-dir")
    ap.add_argument("--form", choices=("chat", "complete", "search"), default="chat")
    ap.add_argument("--samples", type=int, default=8)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--temperature", type=float, default=0.8)
    ap.add_argument("--max-tokens", type=int, default=400)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", help="write each sample's file (search: each kept state) under this directory")
    args = ap.parse_args(argv)
    (task,) = lift.load_tasks([args.task], args.tasks_dir)
    client = Completions(args.base_url, args.model, args.temperature, args.max_tokens)
    rnd = random.Random(args.seed)
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    if args.form == "search":
        kept = search(task, client, args.steps, rnd, print)
        results = [p for p, _ in kept]
        codes = [c for _, c in kept]
    else:
        results, codes = [], []
        for i in range(args.samples):
            code = sample(task, client, args.form, rnd.randrange(1 << 30))
            results.append(score(task, code))
            codes.append(code)
            print(f"sample {i + 1}: {len(results[-1])}/{task['total']}", flush=True)
    if keep:
        for i, code in enumerate(codes):
            (keep / f"{args.form}-{i + 1}-{task['file']}").write_text(code)
    counts = [len(p) for p in results]
    by_test = collections.Counter(name for p in results for name in p)
    print(f"{args.task} {args.form} at {args.temperature}: {counts}, mean {sum(counts) / max(1, len(counts)):.2f}; "
          f"{client.calls} calls, {client.tokens_in}/{client.tokens_out} tokens")
    for name, n in sorted(by_test.items()):
        print(f"  {name}: {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
