"""Stock for a small shop."""

import copy


class InsufficientStock(ValueError):
    pass


class Inventory:
    def __init__(self):
        self.items = {}  # sku -> [name, qty, price_cents]

    def add(self, sku, name, qty, price_cents):
        if qty < 1 or price_cents < 0:
            raise ValueError("quantity must be at least 1 and the price not negative")
        item = self.items.get(sku)
        if item and item[0] != name:
            raise ValueError(f"{sku} is {item[0]!r}, not {name!r}")
        if item:
            item[1] += qty
            item[2] = price_cents
        else:
            self.items[sku] = [name, qty, price_cents]

    def quantity(self, sku):
        return self.items[sku][1] if sku in self.items else 0

    def remove(self, sku, qty):
        item = self.items[sku]
        if qty > item[1]:
            raise InsufficientStock(f"only {item[1]} of {sku}")
        item[1] -= qty

    def total_value(self):
        return sum(q * p for _, q, p in self.items.values())

    def low_stock(self, threshold):
        return sorted(s for s, (_, q, _) in self.items.items() if q < threshold)

    def apply_orders(self, text):
        saved = copy.deepcopy(self.items)
        try:
            for n, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    self._order(n, line.split())
        except ValueError:
            self.items = saved
            raise

    def _order(self, n, words):
        if len(words) != 3 or words[0] not in ("restock", "sell"):
            raise ValueError(f"line {n}: expected 'restock SKU QTY' or 'sell SKU QTY'")
        command, sku, qty = words
        if sku not in self.items:
            raise ValueError(f"line {n}: unknown SKU {sku}")
        if not qty.isdigit() or int(qty) < 1:
            raise ValueError(f"line {n}: {qty!r} is not a positive quantity")
        if command == "restock":
            self.items[sku][1] += int(qty)
        elif int(qty) > self.items[sku][1]:
            raise ValueError(f"line {n}: not enough {sku}")
        else:
            self.items[sku][1] -= int(qty)
