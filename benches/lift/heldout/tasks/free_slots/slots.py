"""Free time in a working day, around busy intervals."""


def free_slots(busy: list[str], day: str, min_minutes: int = 0) -> list[str]:
    """The free "HH:MM-HH:MM" intervals of `day` outside every `busy` interval."""
    raise NotImplementedError
