_VALUES = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
           (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]


def to_roman(n: int) -> str:
    if not 1 <= n <= 3999:
        raise ValueError(n)
    out = []
    for value, numeral in _VALUES:
        while n >= value:
            out.append(numeral)
            n -= value
    return "".join(out)


def from_roman(text: str) -> int:
    upper = text.upper()
    total, i = 0, 0
    for value, numeral in _VALUES:
        while upper.startswith(numeral, i):
            total += value
            i += len(numeral)
    if i != len(upper) or total == 0 or to_roman(total) != upper:
        raise ValueError(text)
    return total
