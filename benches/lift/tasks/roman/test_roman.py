import unittest

from roman import from_roman, to_roman


class TestRoman(unittest.TestCase):
    def test_small(self):
        self.assertEqual([to_roman(n) for n in (1, 2, 3, 5, 10)], ["I", "II", "III", "V", "X"])

    def test_subtractive(self):
        self.assertEqual([to_roman(n) for n in (4, 9, 40, 90, 400, 900)],
                         ["IV", "IX", "XL", "XC", "CD", "CM"])

    def test_large(self):
        self.assertEqual(to_roman(1994), "MCMXCIV")
        self.assertEqual(to_roman(3999), "MMMCMXCIX")

    def test_to_roman_range(self):
        for n in (0, -1, 4000):
            with self.assertRaises(ValueError):
                to_roman(n)

    def test_parse_simple(self):
        self.assertEqual(from_roman("XIII"), 13)

    def test_parse_subtractive(self):
        self.assertEqual(from_roman("MCMXCIV"), 1994)

    def test_parse_lower_case(self):
        self.assertEqual(from_roman("xlii"), 42)

    def test_round_trip(self):
        for n in range(1, 4000):
            self.assertEqual(from_roman(to_roman(n)), n)

    def test_parse_non_canonical(self):
        for text in ["IIII", "VX", "IC", "MMMM"]:
            with self.assertRaises(ValueError):
                from_roman(text)

    def test_parse_garbage(self):
        for text in ["", "ABC", "12"]:
            with self.assertRaises(ValueError):
                from_roman(text)


if __name__ == "__main__":
    unittest.main()
