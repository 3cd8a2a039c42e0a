import unittest

from duration import parse_duration


class TestParseDuration(unittest.TestCase):
    def test_seconds(self):
        self.assertEqual(parse_duration("45s"), 45)

    def test_minutes(self):
        self.assertEqual(parse_duration("2m"), 120)

    def test_hours(self):
        self.assertEqual(parse_duration("3h"), 10800)

    def test_days(self):
        self.assertEqual(parse_duration("1d"), 86400)

    def test_combined(self):
        self.assertEqual(parse_duration("1d2h3m4s"), 93784)

    def test_case_insensitive(self):
        self.assertEqual(parse_duration("1H30M"), 5400)

    def test_fraction(self):
        self.assertEqual(parse_duration("1.5h"), 5400)

    def test_fraction_floored(self):
        self.assertEqual(parse_duration("1.25s"), 1)
        self.assertEqual(parse_duration("0.5m1.7s"), 31)

    def test_zero(self):
        self.assertEqual(parse_duration("0s"), 0)

    def test_out_of_order(self):
        with self.assertRaises(ValueError):
            parse_duration("1m1h")

    def test_repeated_unit(self):
        with self.assertRaises(ValueError):
            parse_duration("1h1h")

    def test_missing_unit(self):
        with self.assertRaises(ValueError):
            parse_duration("10")

    def test_invalid(self):
        for text in ["", "abc", "1x", "h"]:
            with self.assertRaises(ValueError):
                parse_duration(text)


if __name__ == "__main__":
    unittest.main()
