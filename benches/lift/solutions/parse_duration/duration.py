import math
import re

_PART = re.compile(r"(\d+(?:\.\d+)?)([dhms])", re.IGNORECASE)
_SECONDS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_ORDER = "dhms"


def parse_duration(text: str) -> int:
    pos, total, last = 0, 0.0, -1
    if not text:
        raise ValueError("empty duration")
    for m in _PART.finditer(text):
        if m.start() != pos:
            raise ValueError(f"cannot parse {text!r}")
        unit = m.group(2).lower()
        rank = _ORDER.index(unit)
        if rank <= last:
            raise ValueError(f"unit {unit!r} out of order or repeated in {text!r}")
        last = rank
        total += float(m.group(1)) * _SECONDS[unit]
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"cannot parse {text!r}")
    return math.floor(total)
