import unittest

from cache import Cache


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class TestCache(unittest.TestCase):
    def setUp(self):
        self.clock = Clock()

    def cache(self, capacity=2, ttl=10):
        return Cache(capacity, ttl, clock=self.clock)

    def test_put_then_get(self):
        c = self.cache()
        c.put("a", 1)
        self.assertEqual(c.get("a"), 1)

    def test_missing_key_gives_the_default(self):
        c = self.cache()
        self.assertIsNone(c.get("x"))
        self.assertEqual(c.get("x", 7), 7)

    def test_the_least_recently_used_is_evicted(self):
        c = self.cache()
        c.put("a", 1)
        c.put("b", 2)
        c.get("a")
        c.put("c", 3)
        self.assertEqual((c.get("a"), c.get("b"), c.get("c")), (1, None, 3))

    def test_putting_again_replaces_and_refreshes(self):
        c = self.cache()
        c.put("a", 1)
        c.put("b", 2)
        c.put("a", 10)
        c.put("c", 3)
        self.assertEqual((c.get("a"), c.get("b"), c.get("c")), (10, None, 3))

    def test_entries_expire_after_ttl(self):
        c = self.cache()
        c.put("a", 1)
        self.clock.now = 9.9
        self.assertEqual(c.get("a"), 1)
        self.clock.now = 10.0
        self.assertEqual(c.get("a", "gone"), "gone")

    def test_get_does_not_extend_the_life(self):
        c = self.cache()
        c.put("a", 1)
        self.clock.now = 5
        c.get("a")
        self.clock.now = 10
        self.assertIsNone(c.get("a"))

    def test_len_counts_unexpired_entries(self):
        c = self.cache(capacity=3)
        c.put("a", 1)
        self.clock.now = 4
        c.put("b", 2)
        self.assertEqual(len(c), 2)
        self.clock.now = 12
        self.assertEqual(len(c), 1)

    def test_in_does_not_make_an_entry_recent(self):
        c = self.cache()
        c.put("a", 1)
        c.put("b", 2)
        self.assertIn("a", c)
        c.put("c", 3)
        self.assertNotIn("a", c)
        self.assertIn("b", c)

    def test_expired_entries_go_before_anything_is_evicted(self):
        c = self.cache()
        c.put("a", 1)
        self.clock.now = 5
        c.put("b", 2)
        self.clock.now = 11
        c.put("c", 3)
        self.assertEqual((c.get("b"), c.get("c")), (2, 3))

    def test_bad_arguments(self):
        for capacity, ttl in [(0, 10), (2, 0), (2, -1)]:
            with self.assertRaises(ValueError):
                Cache(capacity, ttl, clock=self.clock)


if __name__ == "__main__":
    unittest.main()
