import unittest

from config import get_bool, parse_config


class TestParse(unittest.TestCase):
    def test_sections_and_keys(self):
        text = "[server]\nhost = example.org\nport = 80\n[client]\nretries = 3\n"
        self.assertEqual(parse_config(text), {"server": {"host": "example.org", "port": "80"},
                                              "client": {"retries": "3"}})

    def test_keys_before_any_section(self):
        self.assertEqual(parse_config("name = x\n[a]\nk = v\n"), {"": {"name": "x"}, "a": {"k": "v"}})

    def test_comments_and_blank_lines_ignored(self):
        text = "# top\n\n[a]\n  ; note\nk = v\n   \n"
        self.assertEqual(parse_config(text), {"a": {"k": "v"}})

    def test_keys_lower_cased_and_stripped(self):
        self.assertEqual(parse_config("[a]\n  Name =  Bob Smith  \n"), {"a": {"name": "Bob Smith"}})

    def test_a_value_may_hold_equals_signs(self):
        self.assertEqual(parse_config("[a]\nurl = x?a=b\n"), {"a": {"url": "x?a=b"}})

    def test_quoted_values_kept_as_is(self):
        self.assertEqual(parse_config('[a]\nx = "  hi # there "\n'), {"a": {"x": "  hi # there "}})

    def test_inline_comments(self):
        text = "[a]\nport = 80 # web\nb = c;d\ne = f ; note\n"
        self.assertEqual(parse_config(text), {"a": {"port": "80", "b": "c;d", "e": "f"}})

    def test_a_section_seen_again_adds_to_it(self):
        self.assertEqual(parse_config("[a]\nx = 1\n[b]\ny = 2\n[a]\nz = 3\n"),
                         {"a": {"x": "1", "z": "3"}, "b": {"y": "2"}})

    def test_a_repeated_key_names_its_line(self):
        with self.assertRaises(ValueError) as caught:
            parse_config("[a]\nx = 1\n\nX = 2\n")
        self.assertIn("line 4", str(caught.exception))

    def test_a_malformed_line_names_its_line(self):
        for text, line in [("[a]\njunk\n", "line 2"), ("[]\n", "line 1"), ("[a\n", "line 1")]:
            with self.assertRaises(ValueError) as caught:
                parse_config(text)
            self.assertIn(line, str(caught.exception))


class TestGetBool(unittest.TestCase):
    def test_true_and_false_words(self):
        config = parse_config("[f]\na = yes\nb = TRUE\nc = on\nd = 1\ne = No\nf = false\ng = OFF\nh = 0\n")
        self.assertEqual([get_bool(config, "f", k) for k in "abcdefgh"], [True] * 4 + [False] * 4)

    def test_missing_gives_the_default_and_other_words_raise(self):
        config = parse_config("[f]\na = maybe\n")
        self.assertTrue(get_bool(config, "f", "zzz", default=True))
        self.assertFalse(get_bool(config, "nope", "a"))
        with self.assertRaises(ValueError):
            get_bool(config, "f", "a")


if __name__ == "__main__":
    unittest.main()
