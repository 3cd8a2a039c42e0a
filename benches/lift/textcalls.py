"""Tool calls a model wrote into its answer's text, read as longrun reads them
(src/confined/text_calls.rs): `<tool_call>` tags (Hermes, Qwen),
`<function=NAME>` tags (Llama 3.1), `[TOOL_CALLS]` (Mistral),
`<|python_tag|>` (Llama 3.1), a fenced JSON block holding a call
(Qwen2.5-Coder's habit), or a bare JSON object as the whole answer.

So the minimal harness, a baseline, is not beaten merely because it cannot
hear the calls of a model that writes them as text. Only the standard library.
"""

import json
import re

END_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|eom_id|>", "<|endoftext|>", "</s>", "<|end|>")
NAME_KEYS = ("name", "tool", "tool_name", "function")
ARGUMENT_KEYS = ("arguments", "parameters", "args", "input", "tool_input", "params")
JSON_FENCES = ("", "json", "json5", "jsonc", "tool_call", "tool_calls", "tool", "function")
NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def recover(text, tools):
    """(format, [(name, arguments JSON string)]) of the calls in `text`, all of one
    format, in the order the formats are tried; None when there are none."""
    for form, find in (("hermes", hermes), ("function-tag", function_tags), ("mistral", mistral),
                       ("python-tag", python_tag), ("fenced", fenced), ("bare", bare)):
        calls = find(text or "", tools)
        if calls:
            return form, calls
    return None


def tagged(text, open_, close):
    """The bodies between `open_` and `close` (or the next `open_`, or the end)."""
    bodies, start = [], 0
    while (i := text.find(open_, start)) >= 0:
        rest = text[i + len(open_):]
        ends = [e for e in (rest.find(close), rest.find(open_)) if e >= 0]
        end = min(ends) if ends else len(rest)
        bodies.append(rest[:end])
        start = i + len(open_) + end + (len(close) if rest[end:].startswith(close) else 0)
    return bodies


def hermes(text, _tools):
    return [c for body in tagged(text, "<tool_call>", "</tool_call>") for c in explicit(strip_fence(body))]


def function_tags(text, _tools):
    calls = []
    for body in tagged(text, "<function=", "</function>"):
        name, sep, args = body.partition(">")
        name = name.strip().strip('"')
        values = json_values(args)[0]
        if sep and values and isinstance(values[0], dict) and NAME.fullmatch(name):
            calls.append((name, json.dumps(values[0])))
    return calls


def mistral(text, _tools):
    calls = []
    for body in tagged(text, "[TOOL_CALLS]", "[/TOOL_CALLS]"):
        if body.lstrip()[:1] in ("[", "{"):
            calls += explicit(body)
            continue
        name, sep, args = body.partition("[ARGS]")
        name = name.split("[CALL_ID]")[0].strip()
        values = json_values(args)[0]
        if sep and values and isinstance(values[0], dict) and NAME.fullmatch(name):
            calls.append((name, json.dumps(values[0])))
    return calls


def python_tag(text, _tools):
    i = text.find("<|python_tag|>")
    return explicit(strip_end_tokens(text[i + len("<|python_tag|>"):])) if i >= 0 else []


def fenced(text, tools):
    calls = []
    for info, body, closed in fences(text):
        if not closed:
            continue
        lang = (info.split() or [""])[0].lower()
        if lang not in JSON_FENCES:
            continue
        body = body.strip()
        if body.startswith("<tool_call>"):
            body = body[len("<tool_call>"):].removesuffix("</tool_call>").strip()
        values, whole = json_values(body)
        if whole:
            calls += loose(values, tools)
    return calls


def bare(text, tools):
    body = strip_end_tokens(text).strip()
    # The closing fence of a block whose opening the model left out.
    if body.endswith("```") and "```" not in body[:-3]:
        body = body[:-3].rstrip()
    if not body.startswith(("{", "[")):
        return []
    values, whole = json_values(body)
    return loose(values, tools) if whole else []


def explicit(body):
    """Calls in an explicit wrapper: any name counts."""
    values = json_values(strip_end_tokens(body))[0]
    return [c for o in objects(values) if (c := as_call(o, None))]


def loose(values, tools):
    """Calls in a loose place: each object must look like a call, or none counts."""
    found = objects(values)
    calls = [c for o in found if (c := as_call(o, tools))]
    return calls if len(calls) == len(found) else []


def objects(values):
    out = []
    for v in values:
        if isinstance(v, list):
            out += objects(v)
        elif isinstance(v, dict):
            inner = v.get("tool_calls")
            out += objects(inner) if isinstance(inner, list) and len(v) == 1 else [v]
    return out


def as_call(o, tools):
    """(name, arguments JSON) when `o` is a call; with `tools` (a loose place) it
    must name its arguments or a known tool."""
    if isinstance(o.get("function"), dict):
        return as_call(o["function"], tools)
    key = next((k for k in NAME_KEYS if isinstance(o.get(k), str)), None)
    if key is None or not NAME.fullmatch(o[key].strip()):
        return None
    name = o[key].strip()
    known = tools is None or name in tools
    arg_key = next((k for k in ARGUMENT_KEYS if k in o), None)
    if arg_key is not None:
        args = o[arg_key]
        if isinstance(args, str):
            return name, args
        if isinstance(args, dict):
            return name, json.dumps(args)
        return (name, "{}") if args is None else None
    if known and key != "name":
        return name, json.dumps({k: v for k, v in o.items() if k != key})
    if known and len(o) == 1:
        return name, "{}"
    return None


def json_values(text):
    """The JSON values in `text` one after another, and whether they are all of it;
    raw newlines inside strings (small models write code so) repaired."""
    strict = values_in(text)
    if strict[1]:
        return strict
    repaired = values_in(repair(text))
    return repaired if len(repaired[0]) > len(strict[0]) or repaired[1] else strict


def values_in(text):
    decoder, values, i = json.JSONDecoder(), [], 0
    while True:
        while i < len(text) and (text[i].isspace() or text[i] in ",;"):
            i += 1
        if i == len(text):
            return values, True
        try:
            value, i = decoder.raw_decode(text, i)
        except ValueError:
            return values, False
        values.append(value)


def repair(text):
    out, in_string, escaped = [], False, False
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            elif c in "\n\r\t":
                c = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}[c]
            elif ord(c) < 0x20:
                c = " "
        elif c == '"':
            in_string = True
        elif c == "," and text[i + 1:].lstrip()[:1] in ("}", "]"):
            continue
        out.append(c)
    return "".join(out)


def strip_end_tokens(text):
    t = text.rstrip()
    while any(t.endswith(e) for e in END_TOKENS):
        t = next(t[:-len(e)] for e in END_TOKENS if t.endswith(e)).rstrip()
    return t


def strip_fence(body):
    t = body.strip()
    found = fences(t)
    return found[0][1] if found and t.startswith("```") else t


def fences(text):
    """(info, body, closed) of each fenced block: opened by ``` at a line's start
    (up to three spaces in), closed by the next ```; JSON may start on the
    opening line ("```json {...}```", which small models write)."""
    blocks, start = [], 0
    while (opening := fence_open(text, start)) is not None:
        after = opening + 3
        line_end = text.find("\n", after)
        line_end = len(text) if line_end < 0 else line_end
        first = text[after:line_end]
        brace = min((i for i in (first.find("{"), first.find("[")) if i >= 0), default=-1)
        if brace >= 0 and "=" not in first[:brace]:
            info, body_start = first[:brace], after + brace
        else:
            info, body_start = first, min(line_end + 1, len(text))
        close = text.find("```", body_start)
        body = text[body_start:close] if close >= 0 else text[body_start:]
        blocks.append((info.strip(), body.removesuffix("\n"), close >= 0))
        start = close + 3 if close >= 0 else len(text)
    return blocks


def fence_open(text, start):
    while (i := text.find("```", start)) >= 0:
        indent = text[text.rfind("\n", 0, i) + 1:i]
        if len(indent) <= 3 and set(indent) <= {" "}:
            return i
        start = i + 3
    return None
