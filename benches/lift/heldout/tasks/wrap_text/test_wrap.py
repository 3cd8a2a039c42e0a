import unittest

from wrap import wrap


class TestWrap(unittest.TestCase):
    def test_short_text_is_one_line(self):
        self.assertEqual(wrap("hello world", 20), ["hello world"])

    def test_lines_filled_greedily(self):
        self.assertEqual(wrap("the quick brown fox jumps", 10), ["the quick", "brown fox", "jumps"])

    def test_a_line_may_be_exactly_the_width(self):
        self.assertEqual(wrap("abcde fghij", 5), ["abcde", "fghij"])
        self.assertEqual(wrap("ab cd", 5), ["ab cd"])

    def test_whitespace_collapsed(self):
        self.assertEqual(wrap("  a\t\tb  c  ", 10), ["a b c"])

    def test_a_long_word_is_cut(self):
        self.assertEqual(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"])

    def test_a_long_words_last_piece_shares_its_line(self):
        self.assertEqual(wrap("xx abcdefg yy", 5), ["xx", "abcde", "fg yy"])

    def test_paragraphs_separated_by_an_empty_line(self):
        self.assertEqual(wrap("one two\n\nthree", 20), ["one two", "", "three"])

    def test_many_blank_lines_are_one_break(self):
        self.assertEqual(wrap("a\n \n\n\t\nb", 5), ["a", "", "b"])
        self.assertEqual(wrap("\n\na\n\n", 5), ["a"])

    def test_a_single_newline_is_a_space(self):
        self.assertEqual(wrap("a\nb", 5), ["a b"])

    def test_empty_text(self):
        self.assertEqual(wrap("", 5), [])
        self.assertEqual(wrap("  \n\n ", 5), [])

    def test_bad_width(self):
        for width in (0, -2):
            with self.assertRaises(ValueError):
                wrap("a", width)


if __name__ == "__main__":
    unittest.main()
