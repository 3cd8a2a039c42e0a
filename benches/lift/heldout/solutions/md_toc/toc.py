"""A table of contents for a Markdown document."""

import re


def headings(markdown):
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = re.match(r"(#{1,6}) +(.*)$", line)
        if fenced or not m:
            continue
        text = re.sub(r"(^|\s+)#+\s*$", "", m.group(2)).strip()
        out.append((len(m.group(1)), text))
    return out


def slug(text):
    kept = "".join(c for c in text.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def anchors(texts):
    seen, out = {}, []
    for text in texts:
        s = slug(text)
        n = seen.get(s, 0)
        out.append(s if n == 0 else f"{s}-{n}")
        seen[s] = n + 1
    return out


def render_toc(markdown, max_level=3):
    found = headings(markdown)
    if not found:
        return ""
    top = min(level for level, _ in found)
    names = anchors([text for _, text in found])
    lines = [f"{'  ' * (level - top)}- [{text}](#{anchor})"
             for (level, text), anchor in zip(found, names) if level <= max_level]
    return "\n".join(lines)
