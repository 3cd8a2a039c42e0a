"""Durations such as "1h30m", in whole seconds."""


def parse_duration(text: str) -> int:
    """Parse `text` (for example "1d2h3m4s" or "1.5h") into whole seconds."""
    raise NotImplementedError
