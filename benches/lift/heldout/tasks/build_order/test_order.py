import unittest

from order import CycleError, build_order, layers


class TestBuildOrder(unittest.TestCase):
    def test_no_tasks(self):
        self.assertEqual(build_order({}), [])

    def test_a_chain(self):
        self.assertEqual(build_order({"c": ["b"], "b": ["a"]}), ["a", "b", "c"])

    def test_tasks_named_only_as_dependencies_are_included(self):
        self.assertEqual(build_order({"app": ["lib"]}), ["lib", "app"])

    def test_ready_tasks_go_alphabetically(self):
        self.assertEqual(build_order({"z": [], "a": [], "m": []}), ["a", "m", "z"])

    def test_a_task_ready_later_can_go_before_one_ready_earlier(self):
        deps = {"b": ["d"], "c": [], "d": [], "a": ["c"]}
        self.assertEqual(build_order(deps), ["c", "a", "d", "b"])

    def test_a_dependency_listed_twice_counts_once(self):
        self.assertEqual(build_order({"b": ["a", "a"]}), ["a", "b"])

    def test_a_cycle_raises_naming_its_tasks(self):
        with self.assertRaises(CycleError) as caught:
            build_order({"a": ["b"], "b": ["a"], "c": []})
        self.assertIsInstance(caught.exception, ValueError)
        self.assertEqual(caught.exception.tasks, ["a", "b"])

    def test_a_task_needing_itself_is_a_cycle(self):
        with self.assertRaises(CycleError) as caught:
            build_order({"a": ["a"], "b": []})
        self.assertEqual(caught.exception.tasks, ["a"])

    def test_tasks_needing_a_cycle_are_unordered_too(self):
        with self.assertRaises(CycleError) as caught:
            build_order({"a": ["b"], "b": ["a"], "d": ["a"], "e": []})
        self.assertEqual(caught.exception.tasks, ["a", "b", "d"])


class TestLayers(unittest.TestCase):
    def test_layers_by_deepest_dependency(self):
        deps = {"c": ["a", "b"], "b": ["a"], "d": []}
        self.assertEqual(layers(deps), [["a", "d"], ["b"], ["c"]])

    def test_layers_of_a_cycle_raise(self):
        with self.assertRaises(CycleError) as caught:
            layers({"x": ["y"], "y": ["x"], "w": []})
        self.assertEqual(caught.exception.tasks, ["x", "y"])


if __name__ == "__main__":
    unittest.main()
