import unittest

from inventory import InsufficientStock, Inventory


def shop():
    inv = Inventory()
    inv.add("A1", "apple", 10, 50)
    inv.add("B2", "bread", 3, 250)
    return inv


class TestAdding(unittest.TestCase):
    def test_add_and_quantity(self):
        inv = shop()
        self.assertEqual((inv.quantity("A1"), inv.quantity("B2"), inv.quantity("ZZ")), (10, 3, 0))

    def test_adding_again_sums_and_sets_the_price(self):
        inv = shop()
        inv.add("A1", "apple", 5, 60)
        self.assertEqual(inv.quantity("A1"), 15)
        self.assertEqual(inv.total_value(), 15 * 60 + 3 * 250)

    def test_bad_additions(self):
        inv = shop()
        for args in [("A1", "pear", 1, 50), ("C3", "cake", 0, 10), ("C3", "cake", -2, 10), ("C3", "cake", 1, -1)]:
            with self.assertRaises(ValueError):
                inv.add(*args)
        self.assertEqual((inv.quantity("A1"), inv.quantity("C3")), (10, 0))


class TestRemoving(unittest.TestCase):
    def test_remove(self):
        inv = shop()
        inv.remove("A1", 4)
        self.assertEqual(inv.quantity("A1"), 6)

    def test_remove_too_much_changes_nothing(self):
        inv = shop()
        with self.assertRaises(InsufficientStock) as caught:
            inv.remove("B2", 4)
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(inv.quantity("B2"), 3)

    def test_remove_unknown_and_down_to_zero(self):
        inv = shop()
        with self.assertRaises(KeyError):
            inv.remove("ZZ", 1)
        inv.remove("B2", 3)
        self.assertEqual(inv.quantity("B2"), 0)
        self.assertEqual(inv.low_stock(1), ["B2"])


class TestReports(unittest.TestCase):
    def test_total_value(self):
        self.assertEqual(shop().total_value(), 10 * 50 + 3 * 250)
        self.assertEqual(Inventory().total_value(), 0)

    def test_low_stock_sorted(self):
        inv = shop()
        inv.add("0Z", "zest", 1, 5)
        self.assertEqual(inv.low_stock(5), ["0Z", "B2"])
        self.assertEqual(inv.low_stock(3), ["0Z"])
        self.assertEqual(inv.low_stock(11), ["0Z", "A1", "B2"])


class TestOrders(unittest.TestCase):
    def test_orders_apply(self):
        inv = shop()
        inv.apply_orders("sell A1 4\n\nrestock B2 2\nsell B2 5\n")
        self.assertEqual((inv.quantity("A1"), inv.quantity("B2")), (6, 0))

    def test_a_bad_line_changes_nothing_and_is_named(self):
        for text, line in [("sell A1 1\nsteal A1 1\n", "line 2"),
                           ("sell A1 1\n\nsell ZZ 1\n", "line 3"),
                           ("sell A1 x\n", "line 1"),
                           ("sell A1 0\n", "line 1")]:
            inv = shop()
            with self.assertRaises(ValueError) as caught:
                inv.apply_orders(text)
            self.assertIn(line, str(caught.exception))
            self.assertEqual((inv.quantity("A1"), inv.quantity("B2")), (10, 3))

    def test_orders_run_out_of_stock_part_way(self):
        inv = shop()
        with self.assertRaises(ValueError) as caught:
            inv.apply_orders("sell B2 2\nrestock A1 1\nsell B2 2\n")
        self.assertIn("line 3", str(caught.exception))
        self.assertEqual((inv.quantity("A1"), inv.quantity("B2")), (10, 3))

    def test_no_orders(self):
        inv = shop()
        inv.apply_orders("")
        self.assertEqual(inv.total_value(), 10 * 50 + 3 * 250)


if __name__ == "__main__":
    unittest.main()
