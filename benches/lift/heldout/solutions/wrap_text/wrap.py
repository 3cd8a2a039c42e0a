"""Text wrapped to a width, paragraph by paragraph."""

import re


def wrap_paragraph(words, width):
    lines, line = [], ""
    for word in words:
        if len(word) > width:
            if line:
                lines.append(line)
            pieces = [word[i:i + width] for i in range(0, len(word), width)]
            lines.extend(pieces[:-1])
            line = pieces[-1]
        elif not line:
            line = word
        elif len(line) + 1 + len(word) <= width:
            line += " " + word
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def wrap(text, width):
    if width < 1:
        raise ValueError("width must be at least 1")
    out = []
    for paragraph in re.split(r"\n[ \t]*\n\s*", text):
        words = paragraph.split()
        if words:
            if out:
                out.append("")
            out.extend(wrap_paragraph(words, width))
    return out
