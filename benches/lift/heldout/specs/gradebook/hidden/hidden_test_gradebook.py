import unittest

from gradebook import Gradebook


def book():
    g = Gradebook()
    g.add_score("bob", "hw1", 80)
    g.add_score("bob", "hw2", 95)
    g.add_score("amy", "hw1", 90)
    g.add_score("amy", "quiz", 87.5)
    return g


class TestRecording(unittest.TestCase):
    def test_students_sorted(self):
        self.assertEqual(book().students(), ["amy", "bob"])
        self.assertEqual(Gradebook().students(), [])

    def test_bad_scores_rejected(self):
        g = Gradebook()
        for score in (-1, 100.5, 101):
            with self.assertRaises(ValueError):
                g.add_score("a", "x", score)
        g.add_score("a", "x", 0)
        g.add_score("a", "y", 100)
        self.assertEqual(g.students(), ["a"])

    def test_a_score_recorded_again_is_replaced(self):
        g = book()
        g.add_score("bob", "hw1", 100)
        self.assertEqual(g.average("bob"), 97.5)


class TestAverages(unittest.TestCase):
    def test_student_average(self):
        self.assertEqual(book().average("bob"), 87.5)
        self.assertEqual(book().average("amy"), 88.75)

    def test_average_rounded(self):
        g = Gradebook()
        for i, s in enumerate((70, 80, 81)):
            g.add_score("c", f"t{i}", s)
        self.assertEqual(g.average("c"), 77.0)
        g.add_score("c", "t3", 90)
        self.assertEqual(g.average("c"), 80.25)
        g.add_score("c", "t4", 1)
        self.assertEqual(g.average("c"), 64.4)

    def test_assignment_average_and_unknowns(self):
        g = book()
        self.assertEqual(g.assignment_average("hw1"), 85.0)
        self.assertEqual(g.assignment_average("quiz"), 87.5)
        with self.assertRaises(KeyError):
            g.average("zed")
        with self.assertRaises(KeyError):
            g.assignment_average("final")


class TestLetters(unittest.TestCase):
    def test_letters_at_the_boundaries(self):
        g = Gradebook()
        for name, score in [("a", 90), ("b", 89.99), ("c", 70), ("d", 60), ("f", 59.5), ("b2", 80)]:
            g.add_score(name, "t", score)
        self.assertEqual([g.letter(n) for n in ("a", "b", "c", "d", "f", "b2")], ["A", "B", "C", "D", "F", "B"])

    def test_letter_from_the_average(self):
        self.assertEqual(book().letter("amy"), "B")
        g = book()
        g.add_score("bob", "hw1", 100)
        self.assertEqual(g.letter("bob"), "A")


class TestRankingAndExport(unittest.TestCase):
    def test_ranking_highest_first(self):
        self.assertEqual(book().ranking(), [("amy", 88.75), ("bob", 87.5)])

    def test_ranking_ties_by_name(self):
        g = Gradebook()
        for name in ("zoe", "al", "mo"):
            g.add_score(name, "t", 75)
        g.add_score("top", "t", 99)
        self.assertEqual([n for n, _ in g.ranking()], ["top", "al", "mo", "zoe"])

    def test_csv_export(self):
        self.assertEqual(book().to_csv(),
                         "student,hw1,hw2,quiz,average\n"
                         "amy,90,,87.5,88.75\n"
                         "bob,80,95,,87.50\n")

    def test_csv_of_an_empty_book(self):
        self.assertEqual(Gradebook().to_csv(), "student,average\n")


if __name__ == "__main__":
    unittest.main()
