import re
from collections import Counter

_WORD = re.compile(r"[a-z]+(?:'[a-z]+)*")


def top_words(text: str, n: int) -> list[tuple[str, int]]:
    if n <= 0:
        return []
    counts = Counter(_WORD.findall(text.lower()))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]
