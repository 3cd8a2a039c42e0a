import unittest

from toc import anchors, headings, render_toc

DOC = """# Guide

Intro text.

## Install ##

```sh
# not a heading
```

## Use

### Options
#### Deep
## Use
"""


class TestHeadings(unittest.TestCase):
    def test_levels_and_text(self):
        self.assertEqual(headings("# A\n## B\n###### F\n"), [(1, "A"), (2, "B"), (6, "F")])

    def test_closing_hashes_removed_and_text_stripped(self):
        self.assertEqual(headings("## Setup ##\n#   Spaced   \n"), [(2, "Setup"), (1, "Spaced")])

    def test_not_headings(self):
        self.assertEqual(headings("#hashtag\n####### seven\ntext # here\n"), [])

    def test_code_fences_skipped(self):
        self.assertEqual(headings(DOC), [(1, "Guide"), (2, "Install"), (2, "Use"), (3, "Options"),
                                         (4, "Deep"), (2, "Use")])


class TestAnchors(unittest.TestCase):
    def test_slug(self):
        from toc import slug
        self.assertEqual(slug("Hello, World!"), "hello-world")
        self.assertEqual(slug("A  B"), "a--b")
        self.assertEqual(slug("snake_case and-dash 2.0"), "snake_case-and-dash-20")

    def test_repeated_slugs_numbered(self):
        self.assertEqual(anchors(["Use", "Use", "Other", "use"]), ["use", "use-1", "other", "use-2"])

    def test_no_texts(self):
        self.assertEqual(anchors([]), [])


class TestRender(unittest.TestCase):
    def test_the_table(self):
        self.assertEqual(render_toc(DOC), "- [Guide](#guide)\n"
                                          "  - [Install](#install)\n"
                                          "  - [Use](#use)\n"
                                          "    - [Options](#options)\n"
                                          "  - [Use](#use-1)")

    def test_max_level(self):
        self.assertEqual(render_toc(DOC, max_level=2), "- [Guide](#guide)\n"
                                                       "  - [Install](#install)\n"
                                                       "  - [Use](#use)\n"
                                                       "  - [Use](#use-1)")

    def test_deeper_headings_still_count_for_anchors(self):
        text = "## Notes\n#### Notes\n## Notes\n"
        self.assertEqual(render_toc(text), "- [Notes](#notes)\n- [Notes](#notes-2)")

    def test_indent_from_the_smallest_level(self):
        self.assertEqual(render_toc("### C\n## B\n### D\n"), "  - [C](#c)\n- [B](#b)\n  - [D](#d)")

    def test_no_headings(self):
        self.assertEqual(render_toc("just text\n"), "")


if __name__ == "__main__":
    unittest.main()
