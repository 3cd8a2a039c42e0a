"""Amounts of money in whole cents: shared out, and written as dollars."""


def split_cents(total: int, weights: list[int]) -> list[int]:
    raise NotImplementedError


def format_cents(cents: int) -> str:
    raise NotImplementedError
