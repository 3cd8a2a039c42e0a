"""The lift benchmark's whole path (`lift.py --path whole`): a spec as a user
writes it, through `longrun init` with the model and `longrun continue` for a
fixed wall time, scored by acceptance tests the model never sees.

Per spec (heldout/specs/ID: SPEC.md, spec.json, hidden/), in a scratch
directory: `longrun init SPEC.md` with the model, then `longrun continue
--until-done` until --spec-minutes have passed (no new session after that;
the session running then ends within its own wall time), then the hidden
tests are copied into a clone of the project's main and run there. Beside it,
the bare answer: one request with SPEC.md alone, its code block written as
the file the spec names, scored by the same hidden tests.

It reports, per spec: whether init was accepted (and why not, from `longrun
log --json`), the features planned and accepted on main, hidden tests
passing, model calls, tokens and wall time.
"""

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import lift

SPECS = lift.HELDOUT / "specs"

# spec.json: what each field holds (heldout/README.md).
SPEC_FIELDS = {
    "id": str,            # the spec's name in the table
    "language": str,      # python or javascript
    "files": list,        # the module files SPEC.md names, which the hidden tests import
    "hidden": list,       # the hidden test files, in hidden/
    "total": int,         # how many hidden tests there are
    "features": int,      # how many features SPEC.md lists
    "test_command": str,  # runs the hidden tests; its output is counted
}
# A killed run's last words and the slack given to a session that is running
# when the wall time is up.
KILL_GRACE_SECS = 30
SLACK_SECS = 300


# ---- specs ----

def read_spec(d):
    """One spec directory's spec.json, checked: a bad one names its file and field."""
    path = d / "spec.json"
    try:
        spec = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise SystemExit(f"{path}: not JSON ({e})")
    if not isinstance(spec, dict):
        raise SystemExit(f"{path}: must be an object with the fields {', '.join(SPEC_FIELDS)}")
    for field, kind in SPEC_FIELDS.items():
        if not isinstance(spec.get(field), kind) or isinstance(spec.get(field), bool):
            raise SystemExit(f"{path}: field {field!r} must be a {kind.__name__} (see heldout/README.md)")
    for name in [*spec["files"], *spec["hidden"]]:
        if not isinstance(name, str) or Path(name).name != name:
            raise SystemExit(f"{path}: {name!r} must be a plain file name (no directories)")
    for name in spec["hidden"]:
        if not (d / "hidden" / name).is_file():
            raise SystemExit(f"{path}: the hidden test {name!r} must be in {d / 'hidden'}")
    if not (d / "SPEC.md").is_file():
        raise SystemExit(f"{d}: no SPEC.md beside spec.json")
    spec["dir"] = d
    return spec


def load_specs(names=None, which="test", root=None):
    """The specs of the dev or test set (heldout/split.json), or of `root` (all)."""
    root = Path(root) if root else SPECS
    specs = [read_spec(d) for d in sorted(root.iterdir()) if (d / "spec.json").is_file()]
    if root == SPECS:
        if which not in ("dev", "test"):
            raise SystemExit(f"--path whole runs the dev or test set of specs, not {which!r}")
        ids = lift.load_split()["specs"][which]
        specs = [s for s in specs if s["id"] in ids]
    if names:
        missing = set(names) - {s["id"] for s in specs}
        if missing:
            raise SystemExit(f"spec(s) {', '.join(sorted(missing))} are not in the {which} set of {root}")
        specs = [s for s in specs if s["id"] in names]
    return specs


def score(spec, workdir):
    """(hidden tests passing, output), the hidden tests copied into `workdir`."""
    for name in spec["hidden"]:
        shutil.copy(spec["dir"] / "hidden" / name, Path(workdir) / name)
    return lift.run_tests(spec, workdir)


# ---- the bare answer from the spec alone ----

def bare_prompt(spec):
    text = (spec["dir"] / "SPEC.md").read_text()
    if len(spec["files"]) == 1:
        return f"{text}\n\nReply with the complete {spec['files'][0]} in one code block."
    return (f"{text}\n\nReply with the complete files {', '.join(spec['files'])}, each in its own code "
            "block with the file's name on the line above the block.")


def headed_blocks(text, names):
    """{file: code} from code blocks headed by a file's name (on the line above
    the block or on its opening line); with one file, its last block."""
    if len(names) == 1:
        code = lift.last_code_block(text)
        return {names[0]: code} if code is not None else {}
    found, text = {}, text or ""
    for m in re.finditer(r"^```([^\n`]*)\n(.*?)^```", text, re.S | re.M):
        above = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        head = f"{above} {m.group(1)}"
        for name in names:
            if re.search(rf"(^|[\s`*/]){re.escape(name)}\b", head):
                found[name] = m.group(2)
    return found


def run_bare(spec, client, workdir):
    message = client.chat([{"role": "user", "content": bare_prompt(spec)}])
    for name, code in headed_blocks(message.get("content"), spec["files"]).items():
        (Path(workdir) / name).write_text(code)
    return score(spec, workdir)[0]


# ---- longrun: init, continue, and what main holds after ----

def commands(spec_md, project, args):
    model = ["--model", f"openai:{args.model}", "--base-url", args.base_url]
    return [
        [args.longrun, "init", str(spec_md), "--dir", str(project), *model, "--quiet"],
        [args.longrun, "continue", "--dir", str(project), "--until-done", "--max-hours",
         f"{args.spec_minutes / 60:.4f}", "--max-consecutive-failures", "0", *model, "--quiet"],
    ]


def run_bounded(cmd, timeout, log):
    """Run `cmd` in its own process group, output to `log`; past `timeout`
    seconds the group is stopped (TERM, then KILL). Its exit code, or None
    when it was stopped."""
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            for sig, wait in ((signal.SIGTERM, KILL_GRACE_SECS), (signal.SIGKILL, None)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=wait)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue
            return None


def run_longrun(spec, args, workdir):
    """One spec through longrun: its row's fields."""
    work = Path(workdir)
    project, spec_md = work / "project", work / "SPEC.md"
    project.mkdir()
    shutil.copy(spec["dir"] / "SPEC.md", spec_md)
    (project / "longrun.toml").write_text(
        lift.longrun_toml(args.model, args.base_url, args.temperature, args.max_tokens))
    init, cont = commands(spec_md, project, args)
    started = time.monotonic()
    init_rc = run_bounded(init, args.session_secs + SLACK_SECS + 600, work / "init.log")
    init_secs = time.monotonic() - started
    run_bounded(cont, args.spec_minutes * 60 + args.session_secs + SLACK_SECS, work / "continue.log")
    seconds = time.monotonic() - started
    return {**main_report(spec, project, args.longrun, work / "init.log", init_rc),
            **lift.longrun_usage(project), "seconds": seconds, "init_seconds": round(init_secs)}


def longrun_log(project, longrun):
    out = subprocess.run([longrun, "log", "--dir", str(project), "--json"], capture_output=True, text=True)
    try:
        return json.loads(out.stdout) if out.returncode == 0 else []
    except json.JSONDecodeError:
        return []


def init_verdict(log, init_log, rc):
    """("accepted" | "rejected", why): from the initializer sessions on main, else
    from what `longrun init` said."""
    inits = [r for r in log if r.get("role") == "initializer"]
    if any(r.get("verdict") == "accepted" for r in inits):
        n = next(i for i, r in enumerate(inits, 1) if r.get("verdict") == "accepted")
        return "accepted", "" if n == 1 else f"at initializer session {n} (by continue)"
    if inits:
        return "rejected", "; ".join(inits[-1].get("reasons") or []) or "no reason recorded"
    said = Path(init_log).read_text(errors="replace").strip().splitlines() if Path(init_log).exists() else []
    stopped = "stopped at its time limit; " if rc is None else ""
    return "rejected", stopped + (said[-1] if said else "no initializer session recorded")


def main_features(project):
    shown = subprocess.run(["git", "-C", str(project), "show", "main:features.json"], capture_output=True, text=True)
    try:
        features = json.loads(shown.stdout).get("features", []) if shown.returncode == 0 else []
    except (json.JSONDecodeError, AttributeError):
        features = []
    features = [f for f in features if isinstance(f, dict)]
    return len(features), sum(1 for f in features if f.get("passes") is True)


def main_report(spec, project, longrun, init_log, init_rc):
    """Init's verdict, the features on main and the hidden tests passing on a clone of main."""
    log = longrun_log(project, longrun)
    init, why = init_verdict(log, init_log, init_rc)
    features, accepted = main_features(project)
    passing = 0
    with tempfile.TemporaryDirectory(prefix=f"lift-{spec['id']}-main-") as d:
        scratch = Path(d) / "main"
        cloned = subprocess.run(["git", "clone", "-q", "--branch", "main", str(project), str(scratch)],
                                capture_output=True)
        if cloned.returncode == 0:
            passing = score(spec, scratch)[0]
    return {"init": init, "init_why": why, "features": features, "features_accepted": accepted,
            "sessions": len(log), "passing": passing}


# ---- the table and the run ----

def run_row(spec, mode, args):
    client = lift.Client(args.base_url, args.model, args.temperature, args.max_tokens)
    before, fields = client.prompt_tokens_processed(), {}
    with lift.run_dir(args.keep, args.model, spec["id"], f"whole-{mode}") as workdir:
        started = time.monotonic()
        try:
            if mode == "bare":
                fields = {"passing": run_bare(spec, client, workdir), **client.usage()}
            else:
                fields = run_longrun(spec, args, workdir)
        except Exception as e:  # one failed run is a row with 0, not the end of the table
            print(f"{spec['id']} {mode}: {e}", file=sys.stderr)
            fields = {"passing": 0, **client.usage()}
        fields.setdefault("seconds", time.monotonic() - started)
    after = client.prompt_tokens_processed()
    row = {"model": args.model, "spec": spec["id"], "mode": mode, "total": spec["total"],
           "features_in_spec": spec["features"], **fields,
           "server_prompt_tokens": after - before if None not in (before, after) else None}
    print(f"{spec['id']} {mode}: {row['passing']}/{spec['total']} hidden tests in {row['seconds']:.0f} s",
          file=sys.stderr)
    return row


def table(rows):
    """One line per spec: longrun's figures beside the bare answer's."""
    head = ["model", "spec", "features in spec", "init", "features planned", "features accepted",
            "hidden tests, longrun", "hidden tests, bare from spec", "model calls", "tokens in/out",
            "cached in", "time", "tokens per passing test", "s per passing test"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    bare = {(r["model"], r["spec"]): r for r in rows if r["mode"] == "bare"}
    for r in rows:
        if r["mode"] == "bare" and any(o["mode"] == "longrun" and o["spec"] == r["spec"] for o in rows):
            continue
        lines.append(line(r, bare.get((r["model"], r["spec"]))))
    return "\n".join(lines)


def line(r, bare):
    total = r["total"]
    bare_cell = f"{bare['passing']}/{total} ({bare['seconds']:.0f} s)" if bare else "-"
    if r["mode"] == "bare":
        return (f"| {r['model']} | {r['spec']} | {r['features_in_spec']} | - | - | - | - | {bare_cell} | "
                f"{r['calls']} | {r['tokens_in']}/{r['tokens_out']} | {lift.cached_share(r)} | "
                f"{r['seconds']:.0f} s | - | - |")
    init = r["init"] + (f" ({r['init_why']})" if r.get("init_why") else "")
    tokens = r["tokens_in"] + r["tokens_out"]
    return (f"| {r['model']} | {r['spec']} | {r['features_in_spec']} | {init} | {r['features']} | "
            f"{r['features_accepted']} | {r['passing']}/{total} | {bare_cell} | {r['calls']} | "
            f"{r['tokens_in']}/{r['tokens_out']} | {lift.cached_share(r)} | {r['seconds']:.0f} s | "
            f"{lift.per_passing(tokens, r['passing'])} | {lift.per_passing(r['seconds'], r['passing'], 1)} |")


def main(args, argv, modes):
    specs = load_specs(args.specs.split(",") if args.specs else None, args.set or "test", args.specs_dir)
    if args.dry_run:
        for spec in specs:
            print(f"{args.model} {spec['id']}: {spec['features']} features, {spec['test_command']} "
                  f"({spec['total']} hidden tests)")
            for mode in modes:
                if mode == "bare":
                    print("    bare: one request with SPEC.md alone")
                else:
                    for cmd in commands("SPEC.md", "PROJECT", args):
                        print("    " + shlex.join(cmd))
        return 0
    rows = [run_row(spec, mode, args) for spec in specs for mode in modes]
    print(table(rows))
    if args.json:
        lift.write_json(args.json, args, argv, whole=rows)
    return 0
