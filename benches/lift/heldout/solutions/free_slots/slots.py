"""Free time in a working day, around busy intervals."""

import re

TIME = re.compile(r"(\d{1,2}):(\d{2})")


def minutes(text):
    m = TIME.fullmatch(text)
    if not m or int(m.group(1)) > 23 or int(m.group(2)) > 59:
        raise ValueError(f"bad time {text!r}")
    return int(m.group(1)) * 60 + int(m.group(2))


def interval(text):
    parts = text.split("-")
    if len(parts) != 2:
        raise ValueError(f"bad interval {text!r}")
    start, end = minutes(parts[0]), minutes(parts[1])
    if end <= start:
        raise ValueError(f"interval {text!r} ends before it starts")
    return start, end


def clock(m):
    return f"{m // 60:02d}:{m % 60:02d}"


def free_slots(busy, day, min_minutes=0):
    start, end = interval(day)
    taken = sorted(interval(b) for b in busy)
    free, at = [], start
    for b_start, b_end in taken:
        b_start, b_end = max(b_start, start), min(b_end, end)
        if b_start >= b_end:
            continue
        if b_start > at:
            free.append((at, b_start))
        at = max(at, b_end)
    if at < end:
        free.append((at, end))
    return [f"{clock(a)}-{clock(b)}" for a, b in free if b - a >= max(min_minutes, 1)]
