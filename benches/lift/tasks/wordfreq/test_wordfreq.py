import unittest

from wordfreq import top_words


class TestTopWords(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(top_words("a b a c a b", 2), [("a", 3), ("b", 2)])

    def test_case_folded(self):
        self.assertEqual(top_words("The the THE cat", 1), [("the", 3)])

    def test_punctuation_splits(self):
        self.assertEqual(top_words("cat, dog. cat!dog? cat", 2), [("cat", 3), ("dog", 2)])

    def test_apostrophes_inside_words(self):
        self.assertEqual(top_words("don't stop, don't 'quote'", 2), [("don't", 2), ("quote", 1)])

    def test_ties_alphabetical(self):
        self.assertEqual(top_words("pear apple fig", 3), [("apple", 1), ("fig", 1), ("pear", 1)])

    def test_digits_are_not_words(self):
        self.assertEqual(top_words("a1 22 b", 5), [("a", 1), ("b", 1)])

    def test_n_zero_or_negative(self):
        self.assertEqual(top_words("a b", 0), [])
        self.assertEqual(top_words("a b", -3), [])

    def test_empty_text(self):
        self.assertEqual(top_words("", 3), [])


if __name__ == "__main__":
    unittest.main()
