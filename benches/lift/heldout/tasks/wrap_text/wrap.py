"""Text wrapped to a width, paragraph by paragraph."""


def wrap(text: str, width: int) -> list[str]:
    raise NotImplementedError
