import unittest

from money import format_cents, split_cents


class TestSplit(unittest.TestCase):
    def test_even_split(self):
        self.assertEqual(split_cents(300, [1, 1, 1]), [100, 100, 100])

    def test_leftover_cents_go_to_earlier_shares_on_ties(self):
        self.assertEqual(split_cents(100, [1, 1, 1]), [34, 33, 33])
        self.assertEqual(split_cents(101, [1, 1, 1]), [34, 34, 33])

    def test_in_proportion_to_weights(self):
        self.assertEqual(split_cents(1000, [1, 2, 3, 4]), [100, 200, 300, 400])

    def test_largest_remainder_first(self):
        self.assertEqual(split_cents(7, [2, 3, 5]), [1, 2, 4])
        self.assertEqual(split_cents(10, [1, 6]), [1, 9])

    def test_a_zero_weight_gets_nothing(self):
        self.assertEqual(split_cents(5, [0, 1, 1]), [0, 3, 2])

    def test_shares_always_sum_to_the_total(self):
        for total in range(0, 60):
            shares = split_cents(total, [3, 7, 11])
            self.assertEqual(sum(shares), total)
            self.assertTrue(all(s >= 0 for s in shares))

    def test_bad_arguments(self):
        for total, weights in [(10, []), (10, [0, 0]), (10, [-1, 2]), (-1, [1])]:
            with self.assertRaises(ValueError):
                split_cents(total, weights)


class TestFormat(unittest.TestCase):
    def test_small_amounts(self):
        self.assertEqual(format_cents(105), "$1.05")
        self.assertEqual(format_cents(0), "$0.00")
        self.assertEqual(format_cents(7), "$0.07")

    def test_thousands_separated(self):
        self.assertEqual(format_cents(123456789), "$1,234,567.89")
        self.assertEqual(format_cents(100000), "$1,000.00")
        self.assertEqual(format_cents(99999), "$999.99")

    def test_negative_amounts(self):
        self.assertEqual(format_cents(-50), "-$0.50")
        self.assertEqual(format_cents(-123456), "-$1,234.56")


if __name__ == "__main__":
    unittest.main()
