"""The tables of benches/lift/RESULTS.md, rendered from `lift.py --json` files
(`lift.py --results-md run.json ...`): per run, what it was of (date, commit,
machine, model, set, server, the exact command), then the tasks with their
tests given (each mode side by side, and the cost of each mode), then the
whole path (each spec through init and continue, beside the bare answer
from the spec alone). Tables only."""

import lift
import whole

MODE_HEADS = {"bare": "bare, t=0", "bestof": "best-of-N, tests as oracle, at longrun's time",
              "longrun": "longrun", "minimal": "minimal harness"}


def render(docs):
    """Markdown for a list of --json documents (a bare list is a run's rows)."""
    return "".join(section(doc if isinstance(doc, dict) else {"meta": {}, "tasks": doc}) for doc in docs)


def section(doc):
    meta, tasks, specs = doc.get("meta") or {}, doc.get("tasks") or [], doc.get("whole") or []
    model = meta.get("model") or next((r["model"] for r in tasks + specs), "?")
    out = [f"## {model}, {meta.get('set', '?')} set, {meta.get('date', '?')}\n", meta_table(meta)]
    if tasks:
        out += ["### Tests given, per task\n", tasks_table(tasks), "### Tests given, each mode's cost\n",
                cost_table(tasks)]
    if specs:
        out += ["### Whole path, per spec\n", whole.table(specs)]
    return "\n".join(out) + "\n\n"


def meta_table(meta):
    slots = meta.get("server_slots")
    server = f"{meta.get('base_url', '?')}, {slots} slot(s)" if slots else meta.get("base_url", "?")
    temps = f"{meta.get('temperature', '?')} (best-of-N {meta.get('bestof_temperature', '?')})"
    cells = [meta.get("date", "?"), meta.get("commit", "?"), meta.get("machine", "?"), meta.get("model", "?"),
             meta.get("set", "?"), server, temps, budget(meta), f"`{meta.get('command', '?')}`"]
    return ("| date | commit | machine | model | set | server | temperature | longrun's budget | command |\n"
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n| " + " | ".join(map(str, cells)) + " |\n")


def budget(meta):
    b = meta.get("budget")
    if not b:
        return "?"
    sessions = f"sessions of {b['session_steps']} calls and {b['session_secs']} s"
    if meta.get("path") == "whole":
        return f"{sessions}, {b['spec_minutes']:g} min per spec"
    return f"{b['sessions']} {sessions}, {b['task_hours']:g} h per task, features {b['features']}"


def cell(r):
    """A task's figures in one mode: tests passing, then how it got there."""
    how = {"bestof": f"N={r.get('samples', r['calls'])}", "longrun": f"{r['calls']} calls",
           "minimal": f"{r['calls']} calls"}.get(r["mode"])
    return " · ".join(x for x in (str(r["passing"]), how, f"{r['seconds']:.0f} s") if x)


def tasks_table(rows):
    modes = [m for m in lift.MODES if any(r["mode"] == m for r in rows)]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    by = {(r["task"], r["mode"]): r for r in rows}
    lines = ["| task | tests | " + " | ".join(MODE_HEADS[m] for m in modes) + " |",
             "| --- | ---: |" + " --- |" * len(modes)]
    for task in tasks:
        total = next(r["total"] for r in rows if r["task"] == task)
        cells = [cell(by[(task, m)]) if (task, m) in by else "-" for m in modes]
        lines.append(f"| {task} | {total} | " + " | ".join(cells) + " |")
    sums = {mode: s for (_, mode), s in lift.sum_rows(rows).items()}
    total = sum(next(r["total"] for r in rows if r["task"] == t) for t in tasks)
    lines.append(f"| **sum** | {total} | " + " | ".join(
        f"**{sums[m]['passing']}** · {sums[m]['seconds']:.0f} s" for m in modes) + " |")
    return "\n".join(lines) + "\n"


def cost_table(rows):
    lines = ["| mode | tests passing | model calls | tokens in/out | cached in | wall time | "
             "tokens per passing test | s per passing test |", "| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for (_, mode), s in lift.sum_rows(rows).items():
        tokens = s["tokens_in"] + s["tokens_out"]
        lines.append(f"| {MODE_HEADS.get(mode, mode)} | {s['passing']}/{s['total']} | {s['calls']} | "
                     f"{s['tokens_in']}/{s['tokens_out']} | {lift.cached_share(s)} | {s['seconds']:.0f} s | "
                     f"{lift.per_passing(tokens, s['passing'])} | {lift.per_passing(s['seconds'], s['passing'], 1)} |")
    return "\n".join(lines) + "\n"
