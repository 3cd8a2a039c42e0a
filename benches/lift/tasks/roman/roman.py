"""Roman numerals from 1 to 3999."""


def to_roman(n: int) -> str:
    raise NotImplementedError


def from_roman(text: str) -> int:
    raise NotImplementedError
